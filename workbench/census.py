"""Null census: per judge x variant, how many judgments carry a usable headline score.

A failure rate that differs by judge or variant is a finding in itself: it confounds every
comparison built on those cells (the post-mortem's 24% vs 11% judges). The census counts,
never imputes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from . import selection, stats
from .config import KEY_FIELDS, Config
from .ingest import BUCKETS

CELL_BUCKETS: tuple[str, ...] = tuple(b for b in BUCKETS if b not in ("blank", "malformed")) + (
    "missing_planned",
)


def _counts(rows: pl.DataFrame, by: list[str], cfg: Config) -> pl.DataFrame:
    hl = cfg.headline
    in_cells = rows.filter(selection.keyed())
    not_dup = ~pl.col("bucket").is_in(["duplicate", "missing_planned"])
    aggs = [
        (pl.col("bucket") != "missing_planned").sum().alias("rows"),
        *[(pl.col("bucket") == b).sum().alias(b) for b in CELL_BUCKETS],
        ((pl.col(f"{hl}__status") == "sentinel") & not_dup).sum().alias("sentinel"),
        ((pl.col(f"{hl}__from_string")) & (pl.col("bucket") == "valid")).sum().alias("from_string"),
        *[
            (selection.no_score(n) & not_dup).sum().alias(f"nulls__{n}")
            for n in cfg.score_names
        ],
        # A key judged twice with different content is one judgment with no usable score,
        # not one per row (a run appended twice must not inflate the judgments).
        pl.concat_str(list(KEY_FIELDS), separator="\x1f").filter(pl.col("bucket") == "conflict")
        .n_unique().alias("conflict_keys"),
    ]
    if by:
        out = in_cells.group_by(by).agg(aggs).sort(by)
    else:
        out = in_cells.select(aggs)
    return out.with_columns(
        (pl.col("rows") - pl.col("duplicate") - pl.col("conflict") + pl.col("conflict_keys")
         + pl.col("missing_planned")).alias("judgments")
    ).with_columns((pl.col("judgments") - pl.col("valid")).alias("missing"))


def _with_rates(df: pl.DataFrame, rows: pl.DataFrame, by: list[str], cfg: Config) -> pl.DataFrame:
    """Missing rate with an interval that accounts for scenario clustering.

    Per cell, judgments and missing counts per scenario go to
    :func:`workbench.stats.clustered_proportion` (Wilson on the design-effect-adjusted n with a
    t(G-1) correction: rates that vary by scenario are not binomial over rows); the interval
    follows ``confidence``. ``missing_rate_ci_method`` names it.
    """
    per = _counts(rows, [*by, "scenario"], cfg).select(*by, "scenario", "missing", "judgments")
    groups = per.partition_by(by, as_dict=True) if by else {(): per}
    lows, highs, rates, neff = [], [], [], []
    for rec in df.select(*by, "missing", "judgments").iter_rows(named=True):
        key = tuple(rec[b] for b in by)
        g = groups.get(key)
        n = rec["judgments"]
        if g is None or not n:
            lo = hi = ne = None
        else:
            lo, hi, ne = stats.clustered_proportion(g["missing"].to_numpy(), g["judgments"].to_numpy(),
                                                    cfg.confidence)
        lows.append(lo)
        highs.append(hi)
        neff.append(ne)
        rates.append(rec["missing"] / n if n else None)
    return df.with_columns(
        pl.Series("missing_rate", rates, dtype=pl.Float64),
        pl.Series("missing_rate_ci_low", lows, dtype=pl.Float64),
        pl.Series("missing_rate_ci_high", highs, dtype=pl.Float64),
        pl.Series("missing_rate_n_eff", neff, dtype=pl.Float64),
        pl.lit("wilson_design_effect_t").alias("missing_rate_ci_method"),
    )


def census(rows: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """One row per judge x variant: rows, bucket counts, missing rate with a Wilson interval.

    ``rows`` counts lines attributed to the cell (malformed lines are not attributed: their
    keys cannot be trusted; they are in the ledger). ``judgments`` = rows - duplicate -
    conflict + conflicting keys + missing_planned (a key with conflicting rows is one
    judgment without a usable score; ``conflict_keys`` counts them); ``missing`` = judgments -
    valid; ``missing_rate`` = missing /
    judgments (null when there are no judgments). ``sentinel`` counts headline sentinels
    (they are inside ``partial``/``empty``); ``nulls__FIELD`` counts absent, null or
    sentinel values per rubric field.
    """
    return _with_rates(_counts(rows, ["judge", "variant"], cfg), rows, ["judge", "variant"], cfg)


def census_margins(rows: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """The census margins: per judge (variant null), per variant (judge null), and the total."""
    per_judge = _with_rates(_counts(rows, ["judge"], cfg), rows, ["judge"], cfg).with_columns(
        pl.lit(None, dtype=pl.String).alias("variant"))
    per_variant = _with_rates(_counts(rows, ["variant"], cfg), rows, ["variant"], cfg).with_columns(
        pl.lit(None, dtype=pl.String).alias("judge"))
    total = _with_rates(_counts(rows, [], cfg), rows, [], cfg).with_columns(
        pl.lit(None, dtype=pl.String).alias("judge"), pl.lit(None, dtype=pl.String).alias("variant"))
    cols = ["judge", "variant", *[c for c in per_judge.columns if c not in ("judge", "variant")]]
    return pl.concat([per_judge.select(cols), per_variant.select(cols), total.select(cols)], how="vertical_relaxed")


PERMUTATIONS = 2000
"""Permutations of the missingness tests (p resolution 1/2001; fixed so that a million-row
input stays fast whatever ``bootstrap.resamples`` is)."""


def judgment_units(rows: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """One row per judgment (scenario, variant, trial, judge) with ``missing`` (0/1).

    A judgment is a key: duplicates are counted once, a conflicting key is one judgment with
    no usable score, a planned-but-absent judgment is missing (as in the census).
    """
    keyed = rows.filter(selection.keyed_once())
    return keyed.group_by(list(KEY_FIELDS)).agg(
        (~(pl.col("bucket") == "valid").all() | (pl.len() > 1)).cast(pl.Float64).alias("missing")
    ).sort(list(KEY_FIELDS))


def design_missingness_test(units: pl.DataFrame, factor: str, seed: int) -> stats.TestResult:
    """The design-respecting test for one factor on judgment units (see :func:`missingness_tests`)."""
    if factor == "variant":
        items = units.group_by("scenario", "variant", "trial").agg(
            pl.col("missing").sum().alias("m"), pl.len().alias("n")).sort("scenario", "variant", "trial")
        return stats.block_permutation_test(items["m"].to_numpy(), items["n"].to_numpy().astype(float),
                                            items["variant"].to_numpy(), items["scenario"].to_numpy(),
                                            PERMUTATIONS, seed)
    item = pl.concat_str(["scenario", "variant", pl.col("trial").cast(pl.String)], separator="\x1f")
    u = units.with_columns(item.alias("__item"))
    return stats.block_permutation_test(u["missing"].to_numpy(), np.ones(u.height), u[factor].to_numpy(),
                                        u["__item"].to_numpy(), PERMUTATIONS, seed)


METHODS = {
    "variant": "item_permutation_within_scenario",
    "judge": "judge_permutation_within_item",
}
#: the same tests in their large-sample form (designs above
#: :data:`workbench.stats.PERMUTATION_EXACT_BUDGET` units x permutations)
ASYMPTOTIC_METHODS = {
    "variant": "item_permutation_within_scenario_asymptotic",
    "judge": "judge_permutation_within_item_asymptotic",
}


def method_name(factor: str, res: stats.TestResult) -> str:
    """The recorded ``method`` of a design-respecting test's result (exact or large-sample)."""
    if res.method == "undefined":
        return "undefined"
    return (ASYMPTOTIC_METHODS if res.method == "block_permutation_asymptotic" else METHODS)[factor]


def missingness_tests(rows: pl.DataFrame, cfg: Config) -> list[dict[str, Any]]:
    """Does the missing-score rate depend on the judge? on the variant? (design-respecting tests).

    Judgments of one item move together (a failed render drops every judge's score), so
    neither factor is tested on rows as if they were independent. Both tests use Pearson's
    chi-square of the factor x [missing, scored] table of judgments as the statistic, with
    the null distribution of :func:`workbench.stats.block_permutation_test`:

    * ``variant``: whole items (every judgment of one scenario x variant x trial) keep their
      judgments and their variant labels are permuted among the items of the same scenario
      (``method``: ``item_permutation_within_scenario``);
    * ``judge``: within each item the judges' labels are permuted (an exact within-item
      test; with two judges it is McNemar's exact test on the items where only one judge
      lost its score), ``method``: ``judge_permutation_within_item``.

    Above :data:`workbench.stats.PERMUTATION_EXACT_BUDGET` units x permutations (large
    designs) each test uses the large-sample form of the same permutation distribution
    (:func:`workbench.stats.block_permutation_asymptotic`; its ``statistic`` is the
    quadratic form Q) and ``method`` gains the suffix ``_asymptotic``.

    ``classic_p`` is the rows-as-independent test (:func:`workbench.stats.contingency_test`),
    kept beside it for comparison only: it ignores the design (the calibration measured it
    rejecting 10-35 % of MCAR data sets with item-level failures) and is never the finding.
    """
    out = []
    units = judgment_units(rows, cfg)
    for factor in ("judge", "variant"):
        c = _counts(rows, [factor], cfg)
        table = np.array([[m, n - m] for m, n in c.select("missing", "judgments").iter_rows()], dtype=float)
        classic = stats.contingency_test(table, seed=cfg.seed)
        res = design_missingness_test(units, factor, stats.derive_seed(cfg.seed, "missingness", factor))
        rates = {
            str(level): (m / n if n else None)
            for level, m, n in c.select(factor, "missing", "judgments").iter_rows()
        }
        out.append({
            "factor": factor,
            "statistic": res.statistic,
            "p_value": res.p_value,
            "method": method_name(factor, res),
            "permutations": PERMUTATIONS,
            "classic_p": classic.p_value,
            "classic_method": classic.method,
            "levels": len(rates),
            "missing_rates": rates,
        })
    return out


def scale_checks(rows: pl.DataFrame, cfg: Config) -> list[dict[str, Any]]:
    """Per judge: how many numeric headline values fall outside the rubric.

    A judge with at least 5 numeric (non-sentinel) headline values of which more than half
    are outside ``[rubric.min, rubric.max]`` is flagged ``scale_mismatch``: it probably graded
    on another scale (0-100 against 1-10). Nothing is rescaled; those rows stay out_of_range.
    """
    hl = cfg.headline
    sub = rows.filter(
        pl.col(f"{hl}__status").is_in(["valid", "out_of_range"])
        & ~pl.col("bucket").is_in(["duplicate"])
    )
    agg = sub.group_by("judge").agg(
        pl.len().alias("numeric"),
        (pl.col(f"{hl}__status") == "out_of_range").sum().alias("outside"),
        pl.col(f"{hl}__raw").min().alias("min"),
        pl.col(f"{hl}__raw").max().alias("max"),
    ).sort("judge")
    out = []
    lo, hi = cfg.rubric_min, cfg.rubric_max
    for judge, numeric, outside, vmin, vmax in agg.iter_rows():
        share = outside / numeric if numeric else None
        mismatch = bool(numeric >= 5 and share is not None and share > 0.5)
        msg = None
        if mismatch:
            msg = (f"judge {judge}: {outside} of {numeric} numeric scores lie outside [{lo:g}, {hi:g}] "
                   f"(range {vmin:g} to {vmax:g}): a different scale? Not rescaled; these rows are out_of_range.")
        elif outside:
            msg = f"judge {judge}: {outside} of {numeric} numeric scores lie outside [{lo:g}, {hi:g}]"
        out.append({"judge": judge, "numeric": int(numeric), "outside": int(outside), "share_outside": share,
                    "min": vmin, "max": vmax, "scale_mismatch": mismatch, "message": msg})
    return out
