"""Judge versus human: agreement with human labels and the prediction-powered mean.

A human label is another judge: the rows of the judge named ``human_judge`` (config,
default ``human``) and the rows of a ``human_labels`` file (read with the run's config, so
keyed like the rows; every row's judge is set to ``human_judge``). The human usually labels
a subset of the items i = (scenario, variant, trial); a judge's or the human's repeated valid
rows on one item are averaged first.

Per judge (every judge but the human): the agreement statistics of the judge offsets
(:mod:`workbench.analysis.paired`: exact agreement, within one, quadratic kappa, Krippendorff's alpha,
Spearman) on the items both scored (``agreement``), pooled over variants and per variant.

Per judge x variant (``method`` :data:`METHOD`), with f_i the judge's score on its N scored
items and y_i the human's on the n of them the human labelled::

    ppi_mean   = mean_N(f) + mean_n(y - f)        (the judge mean plus the rectifier)
    judge_mean = mean_N(f),   human_mean = mean_n(y)

(Angelopoulos et al. 2023, prediction-powered inference, with the labelled items a subset of
the N). The interval: :func:`workbench.stats.ppi_mean_cr2`, the CR2 sandwich of the stacked
[f; y - f] clustered by the run's cluster (the scenario by default), so the covariance of the
two terms, which share items, is estimated from the cluster sums instead of assumed away,
with Bell-McCaffrey df; ``judge_*`` and ``human_*`` are :func:`workbench.stats.cluster_mean_cr2`.
The PPI mean targets the human's mean whatever the judge's bias, provided the labelled items
are a random subset of the judge's (labelling that depends on the scores biases it); with a
judge that predicts the human well its interval is narrower than the human-only one. Not
done: the power-tuned PPI++ (a weight lambda on the judge term), kept at lambda = 1.

Where there is nothing to estimate the record carries ``identified: false`` and ``why`` (a
name from :data:`REASONS`) with a sentence.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from workbench import stats
from workbench.analysis.paired import _kappa_labels
from workbench.common.config import Config
from workbench.ingest import clusters
from workbench.ingest import reader as ingest
from workbench.ingest.selection import in_cells

METHOD = stats.PPI_METHOD

REASONS: dict[str, str] = {
    "no_human_labels": "no human labels: no rows of the human judge and no human_labels file",
    "no_judge": "no judge other than the human scored these rows",
    "no_labelled_items": "the human labelled none of the items this judge scored",
    "judge_scored_no_items": "the judge scored no item of this variant",
}
"""Why a judge-versus-human record has no estimate (``why``), by name."""

_ITEM = ["scenario", "variant", "trial"]
_AGREEMENT = ("exact_agreement", "within_one", "kappa_quadratic", "krippendorff_alpha", "spearman")


def read_labels(cfg: Config) -> pl.DataFrame | None:
    """The rows of the ``human_labels`` file (None without one), read with the run's config,
    every row's judge set to ``human_judge``."""
    if cfg.human_labels is None:
        return None
    rows, _ = ingest.read_rows([cfg.human_labels], cfg)
    rows = rows.with_columns(pl.lit(cfg.human_judge).cast(rows.schema["judge"]).alias("judge"))
    return clusters.assign(rows, cfg)


def _items(rows: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """Valid headline scores averaged per (item, judge), with the item's cluster."""
    fld = cfg.headline
    ccol = clusters.column(rows)
    # one lazy filter and select: only these columns of the valid rows are copied
    valid = (rows.lazy().filter(in_cells() & pl.col(fld).is_not_null())
             .select(*[pl.col(k).cast(pl.String) for k in (*_ITEM, "judge")],
                     pl.col(ccol).cast(pl.String).alias("_cluster"), pl.col(fld).cast(pl.Float64).alias("x"))
             .collect())
    return valid.group_by(*_ITEM, "judge").agg(pl.col("x").mean(), pl.col("_cluster").first())


def _agreement(f: np.ndarray, y: np.ndarray, cfg: Config) -> dict[str, Any]:
    n = int(f.size)
    return {
        "exact_agreement": stats.exact_agreement(f, y) if n else None,
        "within_one": stats.within_one(f, y) if n else None,
        "kappa_quadratic": stats.kappa_quadratic(f, y, _kappa_labels(f, y, cfg)) if n else None,
        "krippendorff_alpha": stats.krippendorff_alpha(f, y) if n else None,
        "spearman": stats.spearman(f, y) if n else None,
    }


def human_section(rows: pl.DataFrame, cfg: Config, labels: pl.DataFrame | None = None) -> dict[str, Any]:
    """results.json ``human``: per judge its agreement with the human, per judge x variant
    the prediction-powered mean beside the judge-only and human-only means."""
    sec: dict[str, Any] = {
        "field": cfg.headline, "human_judge": cfg.human_judge, "human_labels": cfg.human_labels,
        "method": None, "confidence": cfg.confidence, "cluster": cfg.cluster_name,
        "human_items": 0, "judges": [], "agreement": [], "records": [],
        "identified": False, "why": None, "explanation": None,
    }

    def stop(why: str) -> dict[str, Any]:
        sec["why"], sec["explanation"] = why, REASONS[why]
        return sec

    if labels is None and "judge" in rows.columns and not rows.lazy().select(
            (pl.col("judge").cast(pl.String) == cfg.human_judge).any()).collect().item():
        # no human label anywhere: nothing to build (the item table of a 1M-row run is ~0.1 GB);
        # the judges with a valid score, as the item table would list them
        fld = cfg.headline
        sec["judges"] = sorted(str(j) for j in rows.lazy().filter(in_cells() & pl.col(fld).is_not_null())
                               .select(pl.col("judge").cast(pl.String).unique()).collect()["judge"]
                               .drop_nulls().to_list())
        return stop("no_human_labels")
    items = _items(rows, cfg)
    if labels is not None:
        items = pl.concat([items, _items(labels, cfg)]).group_by(*_ITEM, "judge").agg(
            pl.col("x").mean(), pl.col("_cluster").first())
    human = items.filter(pl.col("judge") == cfg.human_judge).select(*_ITEM, pl.col("x").alias("y"))
    judges = sorted(j for j in items["judge"].unique().to_list() if j != cfg.human_judge)
    sec["human_items"], sec["judges"] = int(human.height), judges
    if human.height == 0:
        return stop("no_human_labels")
    if not judges:
        return stop("no_judge")
    variants = sorted(items.filter(pl.col("judge") != cfg.human_judge)["variant"].unique().to_list())
    for judge in judges:
        mine = items.filter(pl.col("judge") == judge).select(*_ITEM, "_cluster", pl.col("x").alias("f"))
        both = mine.join(human, on=_ITEM, how="inner").sort(_ITEM)
        f, y = both["f"].to_numpy(), both["y"].to_numpy()
        agr = {"judge": judge, "variant": None, "items": int(both.height),
               "clusters": int(both["_cluster"].n_unique()), "mean_diff": float((f - y).mean()) if f.size else None,
               **_agreement(f, y, cfg)}
        sec["agreement"].append(agr)
        for variant in variants:
            sec["records"].append(_record(mine.filter(pl.col("variant") == variant),
                                          both.filter(pl.col("variant") == variant), cfg, judge, variant))
    sec["identified"] = any(r["identified"] for r in sec["records"])
    sec["method"] = METHOD if any(r["method"] for r in sec["records"]) else None
    if not sec["identified"]:
        whys = sorted({r["why"] for r in sec["records"]})
        sec["why"] = whys[0] if len(whys) == 1 else "not_identified_for_any_judge"
        sec["explanation"] = REASONS.get(sec["why"], "; ".join(sorted({r["explanation"] for r in sec["records"]})))
    return sec


def _ci(prefix: str, ci: stats.ClusterInference | None) -> dict[str, Any]:
    return {f"{prefix}_mean": None if ci is None else ci.estimate,
            f"{prefix}_ci_low": None if ci is None else ci.ci_low,
            f"{prefix}_ci_high": None if ci is None else ci.ci_high}


def _record(mine: pl.DataFrame, both: pl.DataFrame, cfg: Config, judge: str, variant: str) -> dict[str, Any]:
    """One judge x variant: ``mine`` the judge's scored items, ``both`` those the human labelled."""
    f_all = mine["f"].to_numpy()
    c_all = np.asarray(mine["_cluster"].to_list(), dtype=object)
    f, y = both["f"].to_numpy(), both["y"].to_numpy()
    c_lab = np.asarray(both["_cluster"].to_list(), dtype=object)
    judge_ci = stats.cluster_mean_cr2(f_all, c_all, cfg.confidence) if f_all.size else None
    rec: dict[str, Any] = {
        "judge": judge, "variant": variant, "field": cfg.headline, "identified": False, "why": None,
        "explanation": None, "ppi_mean": None, "ppi_ci_low": None, "ppi_ci_high": None, "ppi_se": None,
        "ppi_df": None, "method": None, "rectifier": None,
        **_ci("judge", judge_ci), **_ci("human", None),
        "n_all": int(f_all.size), "n_labelled": int(f.size),
        "clusters": int(len(set(c_all.tolist()))), "clusters_labelled": int(len(set(c_lab.tolist()))),
        "cluster": cfg.cluster_name, "confidence": cfg.confidence,
        "items": int(f.size), **_agreement(f, y, cfg),
    }
    if f_all.size == 0:
        rec["why"], rec["explanation"] = "judge_scored_no_items", f"{judge} scored no {variant} item"
        return rec
    if f.size == 0:
        rec["why"], rec["explanation"] = "no_labelled_items", (
            f"the human labelled none of the {f_all.size} {variant} items {judge} scored")
        return rec
    ppi = stats.ppi_mean_cr2(f_all, c_all, y - f, c_lab, cfg.confidence)
    rec.update({
        "identified": True, "ppi_mean": ppi.estimate, "ppi_ci_low": ppi.ci_low, "ppi_ci_high": ppi.ci_high,
        "ppi_se": ppi.se, "ppi_df": ppi.df, "method": METHOD if ppi.ci_low is not None else None,
        "rectifier": float((y - f).mean()),
        **_ci("human", stats.cluster_mean_cr2(y, c_lab, cfg.confidence)),
        "explanation": (f"{judge}'s mean over its {f_all.size} {variant} items plus the mean human-minus-"
                        f"{judge} difference on the {f.size} the human labelled"
                        + ("" if ppi.ci_low is not None else
                           "; no interval: the labelled items lie in fewer than two clusters")),
    })
    return rec
