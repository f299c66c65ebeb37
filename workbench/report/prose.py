"""Generated sentences: one lead per section and the limits list.

Every sentence is built from the results document; judgments (confounding, verdicts,
gates) are read from the analysis stages' fields, never decided here.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workbench.report.formats import _plural, _series, interval, num, p_is, pct, signed
from workbench.report.model import BUCKET_MEANING, ROWS_LISTED, Report
from workbench.report.provenance import results_sha256
from workbench.report.queries import (
    _cell_label,
    _margin,
    contrast_verdict,
    headline_contrasts,
    pooled_cells,
    pooled_offsets,
)


def leads(r: Report) -> dict[str, str]:
    """One generated sentence per section saying what it found."""
    return {
        "provenance": _lead_provenance(r),
        "ledger": _lead_ledger(r),
        "census": _lead_census(r),
        "scorecard": _lead_scorecard(r),
        "published": _lead_published(r),
        "offsets": _lead_offsets(r),
        "contrasts": _lead_contrasts(r),
        "claims": _lead_claims(r),
        "methods": _lead_methods(r),
        "limits": _lead_limits(r),
        "rows": _lead_rows(r),
    }


def _points(r: Report) -> str:
    return _points_doc(r.doc)


def _points_doc(doc: Mapping[str, object]) -> str:
    unit = str(doc.get("value_unit") or "rubric points")
    if unit == "percent":
        return "percentage points"
    return "points" if unit == "rubric points" else f"(in {unit})"


def _lead_provenance(r: Report) -> str:
    ins = r.doc["inputs"]
    lines = sum(i["lines"] for i in ins)
    first = ins[0]["sha256"][:12] if ins else "-"
    files = (
        f"{Path(ins[0]['path']).name} ({lines} lines, sha256 {first}...)"
        if len(ins) == 1
        else f"{len(ins)} input files ({lines} lines)"
    )
    extra = [
        name
        for name, flag in (
            ("a plan", "plan"),
            ("a published card", "published"),
            ("claims", "claims"),
        )
        if r.parameters.get(flag) is not None
    ]
    given = f" with {_series(extra)}" if extra else ""
    return (
        f"Computed by workbench {r.doc.get('workbench_version', '?')} from {files}{given}; "
        f"the command below reruns it; results.json has sha256 {results_sha256(r)[:12]}..."
    )


def _lead_ledger(r: Report) -> str:
    led = r.doc["ledger"]
    parts = [
        f"{led[b]} {b.replace('_', ' ')}"
        for b in BUCKET_MEANING
        if b != "missing_planned" and led.get(b)
    ]
    text = f"All {led['lines']} lines are accounted for: {', '.join(parts)}"
    if led.get("missing_planned") is None:
        text += "; no plan was given, so judgments that never produced a row cannot be counted"
    elif led["missing_planned"]:
        text += (
            f"; beside them, {_plural(led['missing_planned'], 'planned judgment')} "
            f"{'has' if led['missing_planned'] == 1 else 'have'} no row at all"
        )
    return text + "."


def _lead_census(r: Report) -> str:
    hl = r.headline
    total = _margin(r.doc)
    if not total or not total[0]["judgments"]:
        return "There are no judgments to count."
    t = total[0]
    rate = pct(t["missing_rate"], t["judgments"])
    text = f"{t['missing']} of {t['judgments']} judgments ({rate}) have no valid {hl}"
    if not t["missing"]:
        return f"All {t['judgments']} judgments have a valid {hl}: nothing is missing."
    tests = {m["factor"]: m for m in r.doc.get("missingness_tests", [])}
    alpha = r.cfg.alpha
    for kind in ("judge", "variant"):
        ms = sorted(
            (m for m in _margin(r.doc, kind=kind) if m["missing_rate"] is not None),
            key=lambda m: (m["missing_rate"], str(m[kind])),
        )
        if len(ms) < 2:
            continue
        lo, hi = ms[0], ms[-1]
        test = tests.get(kind)
        p = test["p_value"] if test else None
        ptxt = f" ({test['method'].replace('_', ' ')} {p_is(p)})" if test and p is not None else ""
        if kind == "judge" and len(ms) == 2:
            core = (
                f"judge {hi[kind]} misses {pct(hi['missing_rate'], hi['judgments'])} of its judgments "
                f"vs {pct(lo['missing_rate'], lo['judgments'])} for {lo[kind]}"
            )
        else:
            core = (
                f"by {kind} the missing share of judgments runs from "
                f"{pct(lo['missing_rate'], lo['judgments'])} ({lo[kind]}) to "
                f"{pct(hi['missing_rate'], hi['judgments'])} ({hi[kind]})"
            )
        if test and test.get("cannot_reject"):
            # too few blocks: no p could fall below alpha, so silence is not evidence
            core += (f"; the test cannot reject at {alpha:.0%} with {test['blocks']} blocks "
                     f"(smallest attainable p {test['min_p']:.2g}), so this is not evidence either way{ptxt}")
        elif p is not None and p >= alpha:
            core += f", a spread the test does not distinguish from chance{ptxt}"
        else:
            core += ptxt
        text += "; " + core
    return text + "."


def _lead_scorecard(r: Report) -> str:
    hl = r.headline
    cells = pooled_cells(r.doc)
    if not cells:
        return "No scorecard cells: no variant has rows."
    from workbench.report import plots  # matplotlib: not for the terminal's sentences

    order = plots.scorecard_order(cells)
    measured = [c for c in order if c["status"] == "measured"]
    if measured:
        top, bottom = measured[0], measured[-1]
        text = (
            f"On valid rows only, {hl} runs from {num(bottom['mean'])} ({bottom['variant']}, "
            f"{bottom['valid_n']}/{bottom['rows']} valid) to {num(top['mean'])} ({top['variant']}, "
            f"{top['valid_n']}/{top['rows']})"
        )
        if len(measured) == 1:
            text = f"On valid rows only, {hl} is {num(top['mean'])} for {top['variant']}"
    else:
        text = f"No pooled {hl} cell reaches the preregistered minimum"
    text += (
        f"; {len(measured)} of {len(cells)} pooled cells are measured (at least "
        f"{r.cfg.min_valid_n} valid "
        f"and {r.cfg.min_clusters} scenarios)"
    )
    others = [c for c in order if c["status"] != "measured"]
    if others:
        text += (
            "; "
            + _series([f"{c['variant']} ({c['valid_n']}/{c['rows']} valid)" for c in others])
            + (" is" if len(others) == 1 else " are")
            + " not ranked"
        )
    diffs = [c["zero_filled_diff"] for c in cells if c.get("zero_filled_diff") is not None]
    if diffs and max(abs(d) for d in diffs) > 0:
        text += (
            f". Averaging missing scores as 0 would lower the means by up to "
            f"{num(max(-d for d in diffs))} {_points(r)}"
        )
    return text + "."


def _lead_published(r: Report) -> str:
    checks = r.doc.get("published_check")
    if checks is None:
        return "No published scorecard was given (--published), so no published number was audited."
    if checks:
        from workbench.analysis.check import published_headline

        s = published_headline(list(checks))
        # the first screen's one line; each cell's rules, the nearest rule and the ambiguities
        # are in the section's table (results.json published_summary has the long sentence)
        return s[:1].upper() + s[1:] + "; each cell's rules are in the table below."
    return f"{_plural(len(checks), 'published cell')} checked against every aggregation rule."


def _lead_offsets(r: Report) -> str:
    pooled = pooled_offsets(r.doc)
    if not pooled:
        return "Only one judge scored these rows, so there is no judge offset to measure."
    o = max(pooled, key=lambda x: (x["pairs"], str(x["judge_a"]), str(x["judge_b"])))
    if not o["pairs"]:
        return (
            f"No item was scored validly by both {o['judge_a']} and {o['judge_b']}: "
            "their offset is unknown."
        )
    d = o["mean_diff"]
    direction = "lower" if d < 0 else "higher"
    text = (
        f"On {o['pairs']} items both judges scored validly, {o['judge_a']} scores {num(abs(d))} "
        f"{_points(r)} "
        f"{direction} than {o['judge_b']} {interval(o['ci_low'], o['ci_high'], sign=True)}"
    )
    if o.get("exact_agreement") is not None and (r.doc.get("value_unit") or "rubric points") == "rubric points":
        text += (
            f"; they agree exactly on {pct(o['exact_agreement'])} and within one point on "
            f"{pct(o['within_one'])} (quadratic kappa {num(o['kappa_quadratic'])})"
        )
    elif o.get("exact_agreement") is not None:  # "within one point" means nothing on 0-100
        text += f"; they agree exactly on {pct(o['exact_agreement'])}"
    if o["only_a"] or o["only_b"]:
        text += (
            f"; {o['only_a']} items only {o['judge_a']} scored and {o['only_b']} only "
            f"{o['judge_b']} "
            "are not in the offset"
        )
    if len(pooled) > 1:
        text += f" ({len(pooled)} judge pairs in the table)"
    return text + "."


def self_preference_sentences(r: Report) -> list[str]:
    return self_preference_lines(r.doc)


def self_preference_lines(doc: Mapping[str, Any]) -> list[str]:
    """One plain sentence per judge pair of different families on own-family preference
    (results.json ``self_preference``), then one per judge measured against a neutral reference
    judge, the families guessed from names first; nothing when no writer is configured (the
    report's and the terminal's)."""
    sec = doc.get("self_preference") or {}
    if sec.get("why") == "no_writer" or not sec:
        return []
    out = []
    guessed = [f for f in sec.get("families") or [] if f.get("source") == "default"]
    if guessed:
        out.append(
            "Model families were guessed from the provider/name prefix ("
            + _series([f"{f['model']} \u2192 {f['family']}" for f in guessed], limit=8)
            + "); set families: in the config to correct them."
        )
    if not sec.get("pairs"):
        out.append(f"Self-preference is not estimated ({sec.get('why')}): {sec.get('explanation')}.")
    level = sec.get("confidence")
    conf = f"{float(0.95 if level is None else level):.0%}"
    judges = sec.get("judges") or []
    separated = any(j["identified"] for j in judges)
    for p in sec.get("pairs") or []:
        a, b, fa, fb = p["judge_a"], p["judge_b"], p["family_a"], p["family_b"]
        if not p["identified"]:
            if p["why"] != "reference_pair":  # said by the per-judge sentences
                out.append(f"Self-preference of {a} and {b} cannot be estimated ({p['why']}): "
                           f"{p['explanation']}.")
            continue
        est = p["estimate"]
        out.append(
            f"On {p['items']} outputs both {a} ({fa}) and {b} ({fb}) scored, in {p['scenarios']} "
            f"{'scenario' if p['scenarios'] == 1 else 'scenarios'}, {a} scores {signed(p['offset_on_family_a'])} "
            f"{_points_doc(doc)} against {b} on {fa}-written outputs and {signed(p['offset_on_family_b'])} on "
            f"{fb}-written ones: a combined own-family preference of {signed(est)} "
            f"{interval(p['ci_low'], p['ci_high'], sign=True)} ({conf}, {p_is(p['p'])}), judge severity "
            f"removed; it is {a}'s preference for {fa} plus {b}'s for {fb}, "
            + ("separated per judge below." if separated else "which this design cannot separate.")
        )
    for j in judges:
        if j["identified"]:
            out.append(
                f"Against {j['reference']} ({j['reference_family']}), whose family wrote none of the outputs, "
                f"{j['judge']} ({j['family']}) has an own-family preference of {signed(j['estimate'])} "
                f"{_points_doc(doc)} {interval(j['ci_low'], j['ci_high'], sign=True)} ({conf}, {p_is(j['p'])}): "
                f"how much more it scores its own family's outputs than other families', beyond what the "
                f"reference does, on {j['items']} outputs in {j['scenarios']} "
                f"{'scenario' if j['scenarios'] == 1 else 'scenarios'}."
            )
        elif j["why"] not in ("no_own_family_outputs", "no_neutral_reference"):
            out.append(f"{j['judge']}'s own-family preference against {j['reference']} cannot be estimated "
                       f"({j['why']}): {j['explanation']}.")
    return out


def human_sentences(r: Report) -> list[str]:
    return human_lines(r.doc)


def human_lines(doc: Mapping[str, Any]) -> list[str]:
    """One plain sentence per judge on its agreement with the human and the prediction-powered
    means (results.json ``human``); nothing when there are no human labels (the report's and
    the terminal's)."""
    sec = doc.get("human") or {}
    if not sec or sec.get("why") == "no_human_labels":
        return []
    name = sec.get("human_judge") or "the human"
    if not sec.get("agreement"):
        return [f"Human labels ({name}) are given, but {sec.get('explanation')}."]
    level = sec.get("confidence")
    conf = f"{float(0.95 if level is None else level):.0%}"
    out = []
    for agr in sec["agreement"]:
        j = agr["judge"]
        recs = [x for x in sec.get("records") or [] if x["judge"] == j]
        if not agr["items"]:
            out.append(f"{name} labelled none of the outputs {j} scored, so {j} is not checked against "
                       f"{name}.")
            continue
        ppis = [f"{x['variant']} {num(x['ppi_mean'])} {interval(x['ppi_ci_low'], x['ppi_ci_high'])} "
                f"(judge-only {num(x['judge_mean'])}, {name}-only {num(x['human_mean'])}, "
                f"{x['n_labelled']} of {x['n_all']} labelled)" for x in recs if x["identified"]]
        text = (f"On the {agr['items']} outputs {name} also labelled, {j} gives the same score "
                f"{pct(agr['exact_agreement'])} of the time (within one point {pct(agr['within_one'])}, "
                f"quadratic kappa {num(agr['kappa_quadratic'])}) and scores {signed(agr['mean_diff'])} "
                f"{_points_doc(doc)} against {name} on average")
        if ppis:
            text += (f"; corrected by {name}'s labels (the prediction-powered mean: {j}'s mean plus the "
                     f"mean {name}-minus-{j} difference on the labelled outputs, {conf}) the variant means are "
                     + _series(ppis, limit=6))
        out.append(text + ".")
    return out


def _lead_contrasts(r: Report) -> str:
    cs = headline_contrasts(r.doc)
    if not cs:
        return "There is only one variant, so there is nothing to contrast."
    verdicts = [(c, *contrast_verdict(c, r.cfg.alpha, r.cfg.target_effect)) for c in cs]
    differ = [f"{c['a']} - {c['b']} = {signed(c['diff'])}" for c, _, k in verdicts if k == "good"]
    under = sum(1 for _, v, _ in verdicts if v == "no clear difference (underpowered)")
    hl = r.headline
    if differ:
        text = (
            f"{len(differ)} of {len(cs)} variant contrasts on {hl} differ after Holm adjustment "
            f"({_series(differ, 3)})"
        )
    else:
        text = f"None of the {len(cs)} variant contrasts on {hl} differs after Holm adjustment"
    mdes = [c["mde"] for c in cs if c.get("mde") is not None]
    if mdes:
        text += (
            f"; with this many valid rows the design could only detect differences of "
            f"{num(min(mdes))} to {num(max(mdes))} {_points(r)} (target {r.cfg.target_effect:g})"
        )
    if under:
        verb = "is" if under == 1 else "are"
        nulls = _plural(under, "contrast")
        text += (f", so {nulls} without a clear difference {verb} underpowered rather than evidence "
                 "of no effect")
    return text + "."


def _lead_claims(r: Report) -> str:
    claims = r.doc.get("claims")
    if claims is None:
        return "No claims file was given (--claims), so no headline claim was checked."
    if not claims:
        return "The claims file lists no claim."
    holds = [c for c in claims if c["verdict"] == "holds"]
    text = f"{len(holds)} of {len(claims)} headline claims hold on the valid rows"
    bad = [c for c in claims if c["verdict"] != "holds"]
    if bad:
        text += ": " + "; ".join(
            f"\u201c{c['name']}\u201d claimed {signed(c['claimed'])}, recomputed "
            f"{signed(c['recomputed'])} "
            f"{interval(c['ci_low'], c['ci_high'], sign=True)}"
            + (f" (Holm {c['verdict_confidence']:.2%}: "
               f"{interval(c['verdict_ci_low'], c['verdict_ci_high'], sign=True)})"
               if c.get("verdict_family") is not None and c["verdict_family"] > 1 else "")
            + f": {c['verdict'].upper()}"
            for c in bad[:3]
        )
        if len(bad) > 3:
            text += f"; and {len(bad) - 3} more"
    return text + "."


def _lead_methods(r: Report) -> str:
    rows = r.analysis.rows
    n = rows["scenario"].drop_nulls().n_unique() if "scenario" in rows.columns else 0
    if r.cfg.cluster is None or "cluster" not in rows.columns:
        return (
            f"Scenarios are the clusters ({n} in all): every interval and test below is computed on "
            f"them, at {r.cfg.confidence:.0%} with seed {r.cfg.seed}, so rerunning gives the same numbers."
        )
    k = rows["cluster"].drop_nulls().n_unique()
    return (
        f"The clustering unit is {r.cfg.cluster_name} ({k} clusters holding {n} scenarios; config "
        f"cluster:): every interval and test below treats clusters as independent, while items are "
        f"matched and deduplicated by scenario; at {r.cfg.confidence:.0%} with seed {r.cfg.seed}, so "
        "rerunning gives the same numbers."
    )


def _lead_limits(r: Report) -> str:
    items = limits(r)
    if not items:
        return "Nothing in the data limits these results beyond what each section states."
    return (
        f"{_plural(len(items), 'limit')} follow{'s' if len(items) == 1 else ''} from the data, "
        "most "
        f"importantly: {items[0]}"
    )


def _lead_rows(r: Report) -> str:
    n = r.analysis.rows.height
    shown = min(n, ROWS_LISTED)
    more = "" if shown == n else (f" ({shown} listed: an equal share of every judge x variant cell, "
                                  "its held-out rows first; rows.parquet has every one)")
    return (
        f"{n} rows: one per line read plus one per planned judgment with no row{more}, with their "
        "bucket, reason and verdict, exactly as read."
    )


# --------------------------------------------------------------------------- limits


def limits(r: Report) -> list[str]:
    """The caveats the data imposes, most important first, each one sentence."""
    doc, cfg = r.doc, r.cfg
    hl = r.headline
    out: list[str] = []
    gate = doc.get("gate") or {}
    if gate.get("failing"):
        out.append(
            "The preregistered gate fails: "
            + "; ".join(f"{f['variant']} ({f['why']})" for f in gate["failing"])
            + "."
        )
    for t in doc.get("missingness_tests", []):
        if t["p_value"] is not None and t["p_value"] < cfg.alpha:
            out.append(
                f"Missing scores depend on the {t['factor']} ({t['method'].replace('_', ' ')} "
                f"{p_is(t['p_value'])}): valid means of different {t['factor']}s rest on "
                "differently "
                "selected rows, and a missing-not-at-random pattern would bias them."
            )
    out += _confounded_contrasts(r)
    for c in doc.get("claims") or []:
        if c.get("confounded"):
            out.append(
                f"Claim \u201c{c['name']}\u201d is confounded: "
                + "; ".join(c.get("confounding_notes") or []).rstrip()
                + "."
            )
    below = [c for c in doc.get("scorecard", []) if c["status"] != "measured" and c["field"] == hl]
    if below:
        named = [
            f"{_cell_label(c)} ({c['valid_n']} valid, {c['clusters']} scenarios)" for c in below
        ]
        out.append(
            f"{_plural(len(below), 'scorecard cell')} on {hl} "
            f"{'is' if len(below) == 1 else 'are'} below "
            f"the preregistered minimum ({cfg.min_valid_n} valid, {cfg.min_clusters} scenarios) "
            "and "
            f"never ranked: {_series(named, 5)}."
        )
    few = [
        c
        for c in doc.get("scorecard", [])
        if c["field"] == hl and c.get("ci_low") is not None and c["clusters"] < 5
    ]
    if few:
        named = [f"{_cell_label(c)} ({c['clusters']})" for c in few]
        out.append(
            f"{_plural(len(few), 'interval')} on {hl} rest{'s' if len(few) == 1 else ''} on fewer "
            "than "
            f"5 scenarios, where cluster-robust intervals are unreliable: {_series(named, 4)}."
        )
    cs = headline_contrasts(doc)
    under = [c for c in cs if c.get("mde") is not None and c["mde"] > cfg.target_effect]
    if under:
        out.append(
            f"{len(under)} of {len(cs)} contrasts could not reliably detect the target effect of "
            f"{cfg.target_effect:g} (minimum detectable {num(min(c['mde'] for c in under))} to "
            f"{num(max(c['mde'] for c in under))}): finding no clear difference there is not evidence of equality."
        )
    for c in doc.get("claims") or []:
        if c["verdict"] == "insufficient":
            out.append(
                f"Claim \u201c{c['name']}\u201d cannot be judged: "
                f"{c['notes'][0] if c.get('notes') else 'a side is not measured'}."
            )
    for p in doc.get("published_check") or []:
        if not p.get("reproduced_by"):
            out.append(
                f"Published {p['field']} for {_cell_label(p)} ({p['published']}) is reproduced by "
                "no "
                f"aggregation rule; the nearest is {p.get('nearest_rule')} "
                f"({num(p.get('nearest_value'), 3)})."
            )
    rep = doc.get("repetition") or {}
    if rep.get("inversions"):
        out.append(
            "Rankings from a single trial differ from the all-trial ranking in "
            f"{rep['inversions']} of "
            f"{rep['n_slices']} trials: one run of this evaluation would not reproduce its order."
        )
    for o in pooled_offsets(doc):
        if o["only_a"] + o["only_b"] > 0.2 * max(o["pairs"], 1):
            out.append(
                f"{o['only_a'] + o['only_b']} items were scored validly by only one of "
                f"{o['judge_a']} and "
                f"{o['judge_b']} (vs {o['pairs']} shared): the offset describes the shared items "
                "only."
            )
    for s in doc.get("scale_checks", []):
        if s.get("scale_mismatch"):
            out.append(str(s["message"]))
    led = doc["ledger"]
    if led.get("malformed"):
        out.append(
            f"{_plural(led['malformed'], 'line')} could not be read (malformed); their keys are "
            "unknown, "
            "so they are in no cell."
        )
    if led.get("conflict"):
        out.append(
            f"{_plural(led['conflict'], 'row')} conflict with another row for the same key and "
            "are held "
            "out of every mean."
        )
    for run in doc.get("conflict_runs") or []:
        # a stale or overwritten run: what each run would give, so the reader sees how far apart
        out.append(
            f"{run['variant']} under {run['judge']}: {_plural(run['keys'], 'key')} judged different "
            f"answers (a stale or overwritten run), all held out; {run['field']} over the first-seen "
            f"answers {_run_figure(run['first_answer'])}, over the others {_run_figure(run['other_answer'])}."
        )
    if led.get("missing_planned") is None:
        out.append(
            "No plan was given: judgments that produced no row at all are invisible here (use "
            "--plan)."
        )
    notes = doc.get("ledger_notes") or {}
    if notes.get("unplanned"):
        out.append(
            f"{_plural(notes['unplanned'], 'row')} {'is' if notes['unplanned'] == 1 else 'are'} "
            "not in the plan."
        )
    if notes.get("from_string"):
        out.append(
            f"{notes['from_string']} valid scores were read from numeric strings "
            "(numeric_strings: accept)."
        )
    if cfg.resamples < 1000:
        out.append(
            f"The bootstrap used only {cfg.resamples} resamples: its interval ends carry Monte "
            "Carlo "
            "noise in the second decimal."
        )
    return out


def _run_figure(x: Mapping[str, object]) -> str:
    """One run's figure of a ``conflict_runs`` record: its mean with n."""
    mean = x["mean"]
    return "no valid value" if not isinstance(mean, (int, float)) else f"{mean:.4g} (n = {x['n']})"


def _unit_words(c: Mapping[str, object]) -> str:
    """The confounding test's unit in words, from its recorded method."""
    return "whole items" if str(c.get("missingness_method") or "").startswith("item_") else \
        "whole scenario x variant blocks"


def _confounded_contrasts(r: Report) -> list[str]:
    """Sentences for the contrasts the analysis marked confounded (``paired.contrast_confounding``)."""
    rate_flags, judge_flags = [], []
    for c in headline_contrasts(r.doc):
        if c.get("confounded_missing"):
            rate_flags.append(
                f"{c['a']} vs {c['b']} ({pct(c['missing_rate_a'])} vs "
                f"{pct(c['missing_rate_b'])} of judgments missing, {_unit_words(c)} permuted within scenarios "
                f"{p_is(c['missingness_p'] if c.get('missingness_p') is not None else c['fisher_p'])})"
            )
        if c.get("confounded_judges"):
            judge_flags.append(
                f"{c['a']} ({', '.join(c['judges_a'])}) vs {c['b']} ({', '.join(c['judges_b'])})"
            )
    out = []
    if rate_flags:
        out.append(
            f"{_plural(len(rate_flags), 'contrast')} compare{'s' if len(rate_flags) == 1 else ''} "
            "variants "
            "whose missing rates differ, so the valid rows may not be comparable: "
            f"{_series(rate_flags, 4)}."
        )
    if judge_flags:
        out.append(
            f"{_plural(len(judge_flags), 'contrast')} "
            f"compare{'s' if len(judge_flags) == 1 else ''} "
            "variants scored by different judges, so judge severity is confounded with the "
            "variant: "
            f"{_series(judge_flags, 3)}."
        )
    return out


