"""Null census: per judge x variant, how many judgments carry a usable headline score.

A failure rate that differs by judge or variant is a finding in itself: it confounds every
comparison built on those cells (the post-mortem's 24% vs 11% judges). The census counts,
never imputes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from . import stats
from .config import KEY_FIELDS, Config
from .ingest import BUCKETS

CELL_BUCKETS: tuple[str, ...] = tuple(b for b in BUCKETS if b not in ("blank", "malformed")) + (
    "missing_planned",
)


def _counts(rows: pl.DataFrame, by: list[str], cfg: Config) -> pl.DataFrame:
    hl = cfg.headline
    in_cells = rows.filter(~pl.col("bucket").is_in(["blank", "malformed"]))
    not_dup = ~pl.col("bucket").is_in(["duplicate", "missing_planned"])
    aggs = [
        (pl.col("bucket") != "missing_planned").sum().alias("rows"),
        *[(pl.col("bucket") == b).sum().alias(b) for b in CELL_BUCKETS],
        ((pl.col(f"{hl}__status") == "sentinel") & not_dup).sum().alias("sentinel"),
        ((pl.col(f"{hl}__from_string")) & (pl.col("bucket") == "valid")).sum().alias("from_string"),
        *[
            (pl.col(f"{n}__status").is_in(["absent", "null", "sentinel"]) & not_dup).sum().alias(f"nulls__{n}")
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


def _with_rates(df: pl.DataFrame, confidence: float) -> pl.DataFrame:
    lows, highs, rates = [], [], []
    for missing, n in df.select("missing", "judgments").iter_rows():
        lo, hi = stats.wilson_interval(int(missing), int(n), confidence)
        lows.append(lo)
        highs.append(hi)
        rates.append(missing / n if n else None)
    return df.with_columns(
        pl.Series("missing_rate", rates, dtype=pl.Float64),
        pl.Series("missing_rate_ci_low", lows, dtype=pl.Float64),
        pl.Series("missing_rate_ci_high", highs, dtype=pl.Float64),
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
    return _with_rates(_counts(rows, ["judge", "variant"], cfg), 0.95)


def census_margins(rows: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """The census margins: per judge (variant null), per variant (judge null), and the total."""
    per_judge = _counts(rows, ["judge"], cfg).with_columns(pl.lit(None, dtype=pl.String).alias("variant"))
    per_variant = _counts(rows, ["variant"], cfg).with_columns(pl.lit(None, dtype=pl.String).alias("judge"))
    total = _counts(rows, [], cfg).with_columns(
        pl.lit(None, dtype=pl.String).alias("judge"), pl.lit(None, dtype=pl.String).alias("variant"))
    cols = ["judge", "variant", *[c for c in per_judge.columns if c not in ("judge", "variant")]]
    out = pl.concat([per_judge.select(cols), per_variant.select(cols), total.select(cols)], how="vertical_relaxed")
    return _with_rates(out, 0.95)


def missingness_tests(rows: pl.DataFrame, cfg: Config) -> list[dict[str, Any]]:
    """Does the missing-score rate depend on the judge? on the variant? (independence tests).

    Each factor gets a levels x [missing, scored] table over judgments; the test is chosen
    by :func:`workbench.stats.contingency_test` (Fisher exact for a small 2x2, chi-square,
    or a seeded Monte Carlo chi-square when expected counts are small).
    """
    out = []
    for factor in ("judge", "variant"):
        c = _counts(rows, [factor], cfg)
        table = np.array([[m, n - m] for m, n in c.select("missing", "judgments").iter_rows()], dtype=float)
        res = stats.contingency_test(table, seed=cfg.seed)
        rates = {
            str(level): (m / n if n else None)
            for level, m, n in c.select(factor, "missing", "judgments").iter_rows()
        }
        out.append({
            "factor": factor,
            "statistic": res.statistic,
            "p_value": res.p_value,
            "method": res.method,
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
