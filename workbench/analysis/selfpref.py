"""Self-preference: does a judge score outputs written by its own model family higher?

Config: ``writer`` names the model that wrote each judged output (a row field path, or a
mapping variant -> writer model) and ``families`` maps models (judges and writers) to
families; a model it does not list takes :func:`default_family` (the provider/name prefix),
and results.json ``self_preference.families`` prints every model's family and where it came
from, so a user can correct it.

Estimator (``method`` :data:`METHOD`). For two judges J1 (family F1) and J2 (family F2 != F1)
and items i = (scenario, variant, trial) that both scored validly (a judge's repeated valid
rows on one item averaged first), with writer family w(i):

    d_i = score_J1(i) - score_J2(i)
    u   = (scenario, variant, writer family): dbar_u = mean of d_i over its trials
    c_s = mean(dbar_u | u in s, w = F1) - mean(dbar_u | u in s, w = F2)

for each scenario s holding shared items of both writer families (others are dropped and
counted), and the estimate is the mean of c_s over those scenarios, each scenario weighted
equally; its interval and p are :func:`workbench.stats.cluster_mean_cr2` of the c_s clustered
by the run's cluster (the scenario by default: one value per cluster, the t interval on
G - 1 df; a ``cluster:`` of several scenarios is CR2 with Bell-McCaffrey df). Items written
by a third family enter neither side. Under the model score = item + severity_J
+ b_J [w = family(J)] + noise the within-item difference removes item difficulty and the
contrast between writer families removes severity (a constant offset between the judges):

    E[c_s] = (sev1 + b1 - sev2) - (sev1 - sev2 - b2) = b1 + b2

the two judges' combined own-family preference. With two judges b1 and b2 are not
separately identified (a judge that favours its family and one that disfavours the other's
look the same), so the record says ``estimand: combined_own_family_preference``. With three
or more judges every cross-family pair has its own record (each the pair's b_a + b_b);
single judges' b's are not reported: with three families they could be solved from the pair
sums, but the sums share judges, and their intervals would need the joint covariance.

Where the design cannot identify it, the record carries ``identified: false`` and ``why``
(a name from :data:`REASONS`) with a sentence instead of a number: no writer configured, one
judge, judges all of one family, the crosswise assignment (each judge scored only the other
family's writers: judge and writer family vary together, so self-preference and severity
are confounded), its mirror ``self_graded`` (each judge scored only its own family's writers,
vitals' default of a solver grading itself), no shared items, shared items of one writer
family only (judges not crossing writers), or the two families never within one scenario.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import numpy as np
import polars as pl

from workbench import stats
from workbench.common.config import WRITER_FIELD, Config
from workbench.ingest import clusters
from workbench.ingest.selection import in_cells

METHOD = "self_preference_did_cr2_bm"
ESTIMAND = "combined_own_family_preference"
JUDGE_METHOD = "self_preference_reference_did_cr2_bm"
JUDGE_ESTIMAND = "own_family_preference"

REASONS: dict[str, str] = {
    "no_writer": "no writer is configured (config writer: a field path or variant -> writer model)",
    "no_writer_values": "no judged item has a writer",
    "one_judge": "fewer than two judges scored these rows",
    "judges_one_family": "every judge is of one family",
    "crosswise": "each judge scored only the other family's writers: self-preference and judge "
                 "severity are confounded",
    "self_graded": "each judge scored only its own family's writers: self-preference, judge severity and "
                   "the writers' quality are confounded",
    "reference_pair": "one judge's family wrote none of the outputs: it is the neutral reference of the "
                      "per-judge figures (self_preference.judges), not one side of a pair",
    "no_shared_items": "the two judges scored no item of either family's writers in common",
    "judges_not_crossing_writers": "the items both judges scored were written by one of the two "
                                   "families only",
    "writer_families_not_within_scenario": "no scenario holds shared items of both writer families",
}
"""Why a self-preference is not identified (``why``), by name."""

JUDGE_REASONS: dict[str, str] = {
    "no_own_family_outputs": "no output of the judge's own family was scored",
    "no_neutral_reference": "no other judge is of a family that wrote none of the outputs: with only "
                            "the writing families' judges, one judge's preference for its own family and "
                            "the other's for theirs add up (the pair's combined figure) and cannot be told "
                            "apart; a judge of a third family that wrote nothing would separate them",
    "no_shared_items": "the judge and the reference judge scored no output in common",
    "one_side_only": "the outputs both scored were all of the judge's own family, or none was",
    "families_not_within_scenario": "no scenario holds shared outputs of both the judge's family and "
                                    "another family",
}
"""Why one judge's own-family preference is not identified (``judges[].why``), by name."""

_PREFIX = re.compile(r"[a-z]+")


def default_family(model: str) -> str:
    """The family of a model when ``families:`` does not list it: the provider, the part
    before the first ``/`` (``openai/gpt-4o`` -> ``openai``), else the leading letters of the
    name, lower-cased (``claude-3-opus`` -> ``claude``, ``gpt-4o`` -> ``gpt``); the whole
    name when it starts with no letter. A guess: results.json prints it to be corrected."""
    text = str(model).strip().lower()
    if "/" in text:
        return text.split("/", 1)[0] or text
    m = _PREFIX.match(text)
    return m.group(0) if m else text


def family_of(model: str, cfg: Config) -> tuple[str, str]:
    """(family, source): ``config`` when ``families:`` lists the model, else ``default``."""
    if model in cfg.families:
        return cfg.families[model], "config"
    return default_family(model), "default"


def _writer_rows(rows: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """Valid headline rows with ``writer`` (null when unknown), averaged per (item, judge)."""
    fld = cfg.headline
    ccol = clusters.column(rows)
    if cfg.writer_map is not None:
        writer = pl.col("variant").cast(pl.String).replace_strict(cfg.writer_map, default=None,
                                                                  return_dtype=pl.String)
    else:
        name = f"x_{WRITER_FIELD}"
        writer = (pl.col(name).cast(pl.String) if name in rows.columns else pl.lit(None, pl.String))
    # one lazy filter and select: only these columns of the valid rows are copied
    return (rows.lazy().filter(in_cells() & pl.col(fld).is_not_null())
            .select(pl.col("scenario").cast(pl.String), pl.col("variant").cast(pl.String),
                    pl.col("trial").cast(pl.String), pl.col("judge").cast(pl.String),
                    pl.col(ccol).cast(pl.String).alias("_cluster"), writer.alias("writer"),
                    pl.col(fld).cast(pl.Float64).alias("x")).collect())


def _families_record(judges: list[str], writers: list[str], cfg: Config) -> list[dict[str, Any]]:
    out = []
    for model in sorted(set(judges) | set(writers)):
        fam, src = family_of(model, cfg)
        role = "judge and writer" if model in judges and model in writers else (
            "judge" if model in judges else "writer")
        out.append({"model": model, "role": role, "family": fam, "source": src})
    return out


def families_note(section: dict[str, Any]) -> str | None:
    """One line naming the families guessed by :func:`default_family` (None when none was),
    for the run's warnings: the user can correct them with ``families:``."""
    guessed = [f for f in section.get("families") or [] if f["source"] == "default"]
    if not guessed:
        return None
    pairs = ", ".join(f"{f['model']} -> {f['family']}" for f in guessed[:12])
    more = f" and {len(guessed) - 12} more" if len(guessed) > 12 else ""
    return (f"self-preference: model families by the provider/name prefix: {pairs}{more}; "
            "set families: {model: family} in the config to correct them")


def self_preference(rows: pl.DataFrame, cfg: Config) -> dict[str, Any]:
    """results.json ``self_preference``: the families in force and one record per judge pair
    of different families (see the module text for the estimator and the reasons)."""
    fld = cfg.headline
    sec: dict[str, Any] = {
        "field": fld, "method": None, "estimand": ESTIMAND, "confidence": cfg.confidence,
        "cluster": cfg.cluster_name,
        "writer": (cfg.raw.get("writer") if cfg.writer_field is not None or cfg.writer_map is not None
                   else None),
        "families": [], "pairs": [], "judges": [], "identified": False, "why": None, "explanation": None,
    }

    def stop(why: str, text: str | None = None) -> dict[str, Any]:
        sec["why"] = why
        sec["explanation"] = text or REASONS[why]
        return sec

    if cfg.writer_field is None and cfg.writer_map is None:
        return stop("no_writer")
    v = _writer_rows(rows, cfg)
    judges = sorted(v["judge"].drop_nulls().unique().to_list())
    # the writer of an item: its rows' one writer; an item whose rows name two is left out
    per_item = v.filter(pl.col("writer").is_not_null()).group_by("scenario", "variant", "trial").agg(
        pl.col("writer").n_unique().alias("k"), pl.col("writer").first().alias("item_writer"))
    conflicts = int(per_item.filter(pl.col("k") > 1).height)
    per_item = per_item.filter(pl.col("k") == 1).drop("k")
    writers = sorted(per_item["item_writer"].unique().to_list())
    sec["families"] = _families_record(judges, writers, cfg)
    sec["items_writer_conflict"] = conflicts
    if len(judges) < 2:
        return stop("one_judge", f"{REASONS['one_judge']} ({judges[0] if judges else 'none'})")
    if per_item.height == 0:
        return stop("no_writer_values")
    fam_map = {f["model"]: f["family"] for f in sec["families"]}
    jf = {j: fam_map[j] for j in judges}
    if len(set(jf.values())) < 2:
        return stop("judges_one_family", f"every judge is of family {next(iter(jf.values()))}: "
                    "there is no judge of another family to compare against")
    scored = (v.drop("writer").join(per_item, on=["scenario", "variant", "trial"], how="inner")
              .with_columns(pl.col("item_writer").replace_strict(fam_map, return_dtype=pl.String)
                            .alias("wfam"))
              .group_by("scenario", "variant", "trial", "judge")
              .agg(pl.col("x").mean(), pl.col("wfam").first(), pl.col("_cluster").first()))
    writer_fams = set(scored["wfam"].drop_nulls().unique().to_list())
    for ja, jb in itertools.combinations(judges, 2):
        if jf[ja] != jf[jb]:
            sec["pairs"].append(_pair(scored, cfg, ja, jb, jf[ja], jf[jb], writer_fams))
    sec["judges"] = _judges(scored, cfg, judges, jf)
    sec["method"] = METHOD if any(p["identified"] for p in sec["pairs"]) else (
        JUDGE_METHOD if any(j["identified"] for j in sec["judges"]) else None)
    sec["identified"] = (any(p["identified"] for p in sec["pairs"])
                         or any(j["identified"] for j in sec["judges"]))
    if not sec["identified"]:
        told = [p for p in sec["pairs"] if p["why"] != "reference_pair"] or [
            j for j in sec["judges"] if j["why"] != "no_own_family_outputs"] or sec["pairs"]
        whys = sorted({p["why"] for p in told})
        sec["why"] = whys[0] if len(whys) == 1 else "not_identified_for_any_pair"
        sec["explanation"] = "; ".join(dict.fromkeys(p["explanation"] for p in told))
    return sec


def _pair(scored: pl.DataFrame, cfg: Config, ja: str, jb: str, fa: str, fb: str,
          writer_fams: set[str] | None = None) -> dict[str, Any]:
    """One pair's record: the DiD of ``ja - jb`` between writer families ``fa`` and ``fb``."""
    rec: dict[str, Any] = {
        "judge_a": ja, "judge_b": jb, "family_a": fa, "family_b": fb, "field": cfg.headline,
        "estimand": ESTIMAND, "identified": False, "why": None, "explanation": None,
        "estimate": None, "ci_low": None, "ci_high": None, "ci_method": None, "p": None, "p_method": None,
        "se": None, "df": None, "confidence": cfg.confidence,
        "offset_on_family_a": None, "offset_on_family_b": None,
        "items": 0, "items_family_a": 0, "items_family_b": 0, "items_other_family": 0,
        "units": 0, "scenarios": 0, "scenarios_one_family": 0, "clusters": 0, "cluster": cfg.cluster_name,
        "writer_families_a": [], "writer_families_b": [],
    }
    wa = sorted(scored.filter(pl.col("judge") == ja)["wfam"].unique().to_list())
    wb = sorted(scored.filter(pl.col("judge") == jb)["wfam"].unique().to_list())
    rec["writer_families_a"], rec["writer_families_b"] = wa, wb

    def no(why: str, text: str) -> dict[str, Any]:
        rec["why"], rec["explanation"] = why, text
        return rec

    if writer_fams is not None and (fa in writer_fams) != (fb in writer_fams):
        ref, fam = (jb, fb) if fa in writer_fams else (ja, fa)
        return no("reference_pair", (
            f"{ref}'s family ({fam}) wrote none of the outputs, so the pair has no combined preference to "
            f"measure: {ref} is instead the neutral reference of the per-judge figures"))
    if fa in wa and fb not in wa and fb in wb and fa not in wb:
        return no("self_graded", (
            f"{ja} ({fa}) scored only {fa}-family writers and {jb} ({fb}) only {fb}-family writers (each "
            "judge grading its own family's outputs, as a harness that lets each model grade itself does): "
            "no output was scored by both, so a judge's own-family preference, its severity and its "
            "writers' quality all move together and none can be told from the others; have both judges "
            "score the same outputs of both families"))
    if fa not in wa and fb in wa and fb not in wb and fa in wb:
        return no("crosswise", (
            f"{ja} ({fa}) scored only {fb}-family writers and {jb} ({fb}) only {fa}-family writers, so "
            "no output was scored by both: every difference between their scores is at once a "
            "difference of judge and of writer family, so self-preference and judge severity are "
            "confounded and neither can be told from the other; have both judges score the same "
            "outputs of both families"))
    a = scored.filter(pl.col("judge") == ja).select("scenario", "variant", "trial", "wfam", "_cluster", "x")
    b = scored.filter(pl.col("judge") == jb).select("scenario", "variant", "trial", pl.col("x").alias("xb"))
    both = a.join(b, on=["scenario", "variant", "trial"], how="inner").with_columns(
        (pl.col("x") - pl.col("xb")).alias("d"))
    rec["items_other_family"] = int(both.filter(~pl.col("wfam").is_in([fa, fb])).height)
    both = both.filter(pl.col("wfam").is_in([fa, fb]))
    if both.height == 0:
        return no("no_shared_items", f"{ja} and {jb} scored no output of a {fa} or {fb} writer in common")
    fams = set(both["wfam"].unique().to_list())
    if len(fams) < 2:
        (only,) = fams
        own = ja if only == fa else jb
        return no("judges_not_crossing_writers", (
            f"every output both {ja} and {jb} scored was written by a {only}-family model: their "
            f"offset there is judge severity plus {own}'s own-family preference, and without "
            f"outputs of the other family the two cannot be separated"))
    res = _did(both.rename({"wfam": "side"}), fa, fb, cfg.confidence)
    if res is None:
        rec["scenarios_one_family"] = int(both["scenario"].n_unique())
        return no("writer_families_not_within_scenario", (
            f"{ja} and {jb} share outputs of both {fa} and {fb} writers, but never within one "
            "scenario: a contrast between families would also be a contrast between scenarios"))
    ci = res["ci"]
    rec["scenarios_one_family"] = res["scenarios_one_side"]
    rec.update({
        "identified": True, "estimate": ci.estimate, "ci_low": ci.ci_low, "ci_high": ci.ci_high,
        "ci_method": METHOD if ci.ci_low is not None else None, "p": ci.p_value,
        "p_method": METHOD if ci.p_value is not None else None, "se": ci.se, "df": ci.df,
        "offset_on_family_a": res["offset_a"], "offset_on_family_b": res["offset_b"],
        "items": res["items"], "items_family_a": res["items_a"], "items_family_b": res["items_b"],
        "units": res["units"], "scenarios": res["scenarios"], "clusters": int(ci.clusters),
        "explanation": (f"{ja} and {jb}'s combined own-family preference ({ja} for {fa} writers plus "
                        f"{jb} for {fb} writers; with two judges the two are not separately identified)"),
    })
    return rec


def _did(both: pl.DataFrame, side_a: str, side_b: str, confidence: float) -> dict[str, Any] | None:
    """The per-scenario difference-in-differences of ``both`` (columns scenario, variant,
    ``side``, ``_cluster``, ``d``): trials averaged per (scenario, variant, side) unit, units
    averaged per (scenario, side), c_s = side_a - side_b in scenarios holding both, and
    :func:`workbench.stats.cluster_mean_cr2` of the c_s. None when no scenario holds both."""
    units = both.group_by("scenario", "variant", "side").agg(
        pl.col("d").mean().alias("dbar"), pl.len().alias("n"), pl.col("_cluster").first())
    per = units.group_by("scenario", "side").agg(pl.col("dbar").mean(), pl.col("n").sum(),
                                                 pl.col("_cluster").first())
    wide_a = per.filter(pl.col("side") == side_a).select("scenario", pl.col("dbar").alias("da"),
                                                         pl.col("n").alias("na"), "_cluster")
    wide_b = per.filter(pl.col("side") == side_b).select("scenario", pl.col("dbar").alias("db"),
                                                         pl.col("n").alias("nb"))
    sc = wide_a.join(wide_b, on="scenario", how="inner").sort("scenario")
    if sc.height == 0:
        return None
    da, db = sc["da"].to_numpy(), sc["db"].to_numpy()
    ci = stats.cluster_mean_cr2(da - db, np.asarray(sc["_cluster"].to_list(), dtype=object), confidence)
    kept = both.join(sc.select("scenario"), on="scenario", how="semi")
    return {"ci": ci, "offset_a": float(da.mean()), "offset_b": float(db.mean()), "items": int(kept.height),
            "items_a": int(sc["na"].sum()), "items_b": int(sc["nb"].sum()),
            "units": int(units.join(sc.select("scenario"), on="scenario", how="semi").height),
            "scenarios": int(sc.height), "scenarios_one_side": int(per["scenario"].n_unique()) - sc.height}


def _judges(scored: pl.DataFrame, cfg: Config, judges: list[str], jf: dict[str, str]) -> list[dict[str, Any]]:
    """results.json ``self_preference.judges``: per judge J (family F), its own-family
    preference b_J against each reference judge R whose family wrote none of the outputs
    (neutral): d = score_J - score_R on outputs both scored, contrasted between F-written and
    other-family-written outputs within scenario (the estimator of the pairs, with R's bias
    the same on both sides):

        E[c_s] = (sev_J + b_J - sev_R) - (sev_J - sev_R) = b_J

    One record per (judge, reference); a judge with no neutral reference gets one record
    saying why (``no_neutral_reference``: with only the writing families' judges, only the
    pairs' sums b_a + b_b are identified)."""
    writer_fams = set(scored["wfam"].drop_nulls().unique().to_list())
    out: list[dict[str, Any]] = []
    for j in judges:
        fj = jf[j]
        base: dict[str, Any] = {
            "judge": j, "family": fj, "reference": None, "reference_family": None, "field": cfg.headline,
            "estimand": JUDGE_ESTIMAND, "identified": False, "why": None, "explanation": None,
            "estimate": None, "ci_low": None, "ci_high": None, "ci_method": None, "p": None, "p_method": None,
            "se": None, "df": None, "confidence": cfg.confidence, "offset_on_own_family": None,
            "offset_on_other_families": None, "items": 0, "items_own_family": 0, "items_other_families": 0,
            "units": 0, "scenarios": 0, "scenarios_one_side": 0, "clusters": 0, "cluster": cfg.cluster_name,
        }
        if fj not in writer_fams:
            out.append({**base, "why": "no_own_family_outputs", "explanation": (
                f"no output written by a {fj}-family model was scored, so {j}'s preference for its own "
                "family has nothing to show on")})
            continue
        refs = [r for r in judges if r != j and jf[r] not in writer_fams]
        if not refs:
            out.append({**base, "why": "no_neutral_reference",
                        "explanation": f"{j}: {JUDGE_REASONS['no_neutral_reference']}"})
            continue
        for r in refs:
            out.append(_judge_record(scored, cfg, dict(base), j, r, fj, jf[r]))
    return out


def _judge_record(scored: pl.DataFrame, cfg: Config, rec: dict[str, Any], j: str, r: str, fj: str,
                  fr: str) -> dict[str, Any]:
    rec.update({"reference": r, "reference_family": fr})
    a = scored.filter(pl.col("judge") == j).select("scenario", "variant", "trial", "wfam", "_cluster", "x")
    b = scored.filter(pl.col("judge") == r).select("scenario", "variant", "trial", pl.col("x").alias("xr"))
    both = a.join(b, on=["scenario", "variant", "trial"], how="inner").with_columns(
        (pl.col("x") - pl.col("xr")).alias("d"),
        pl.when(pl.col("wfam") == fj).then(pl.lit("own")).otherwise(pl.lit("other")).alias("side"))
    if both.height == 0:
        rec.update(why="no_shared_items", explanation=f"{j} and the reference judge {r} scored no output in common")
        return rec
    if both["side"].n_unique() < 2:
        only = "its own family's" if both["side"][0] == "own" else "other families'"
        rec.update(why="one_side_only", explanation=(
            f"every output {j} and the reference {r} both scored was {only}: the contrast between its own "
            "family and the others needs both"))
        return rec
    res = _did(both, "own", "other", cfg.confidence)
    if res is None:
        rec.update(why="families_not_within_scenario", explanation=(
            f"{j} and {r} share outputs of {fj} writers and of other writers, but never within one scenario"))
        return rec
    ci = res["ci"]
    rec.update({
        "identified": True, "estimate": ci.estimate, "ci_low": ci.ci_low, "ci_high": ci.ci_high,
        "ci_method": JUDGE_METHOD if ci.ci_low is not None else None, "p": ci.p_value,
        "p_method": JUDGE_METHOD if ci.p_value is not None else None, "se": ci.se, "df": ci.df,
        "offset_on_own_family": res["offset_a"], "offset_on_other_families": res["offset_b"],
        "items": res["items"], "items_own_family": res["items_a"], "items_other_families": res["items_b"],
        "units": res["units"], "scenarios": res["scenarios"], "scenarios_one_side": res["scenarios_one_side"],
        "clusters": int(ci.clusters),
        "explanation": (f"{j}'s own preference for {fj}-written outputs, measured against {r} ({fr}), whose "
                        "family wrote none of them: severity and item difficulty removed, and the "
                        "reference's own preferences do not enter"),
    })
    return rec
