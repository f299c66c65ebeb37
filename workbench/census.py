"""Null census: per judge x variant, how many judgments carry a usable headline score.

A failure rate that differs by judge or variant is a finding in itself: it confounds every
comparison built on those cells (the post-mortem's 24% vs 11% judges). The census counts,
never imputes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from . import reduce_codes, schemas, selection, stats
from .config import KEY_FIELDS, Config
from .ingest import BUCKETS

CELL_BUCKETS: tuple[str, ...] = tuple(b for b in BUCKETS if b not in ("blank", "malformed")) + (
    "missing_planned",
)


def _keyed(rows: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """Keyed rows (:func:`workbench.selection.keyed`), only the columns the census reads."""
    hl = cfg.headline
    cols = dict.fromkeys(["bucket", *KEY_FIELDS, f"{hl}__status", f"{hl}__from_string",
                          *[f"{n}__status" for n in cfg.score_names]])
    return rows.lazy().filter(selection.keyed()).select(list(cols)).collect()


def _raw_counts(keyed: pl.DataFrame, by: list[str], cfg: Config) -> pl.DataFrame:
    """Per ``by`` (sorted by it): the counts that add up over cells (all but the derived
    ``judgments`` and ``missing``), from keyed rows (:func:`_keyed`)."""
    hl = cfg.headline
    not_dup = ~pl.col("bucket").is_in(["duplicate", "missing_planned"])
    is_conflict = pl.col("bucket") == "conflict"
    # every count but conflict_keys is the number of rows meeting a predicate
    preds = [
        (pl.col("bucket") != "missing_planned").alias("rows"),
        *[(pl.col("bucket") == b).alias(b) for b in CELL_BUCKETS],
        ((pl.col(f"{hl}__status") == "sentinel") & not_dup).alias("sentinel"),
        ((pl.col(f"{hl}__from_string")) & (pl.col("bucket") == "valid")).alias("from_string"),
        *[(selection.no_score(n) & not_dup).alias(f"nulls__{n}") for n in cfg.score_names],
    ]
    # A key judged twice with different content is one judgment with no usable score,
    # not one per row (a run appended twice must not inflate the judgments).
    conflict_keys = pl.concat_str(list(KEY_FIELDS), separator="\x1f").n_unique().alias("conflict_keys")
    if not all(keyed.schema[b] == pl.String for b in by):
        aggs = [*[e.sum() for e in preds],
                pl.concat_str([pl.col(k).filter(is_conflict) for k in KEY_FIELDS], separator="\x1f")
                .n_unique().alias("conflict_keys")]
        return keyed.lazy().group_by(by).agg(aggs).sort(by).collect() if by else keyed.lazy().select(aggs).collect()
    # the same table from integer codes (label order = the sort's order, nulls first): one
    # bincount per predicate instead of a group_by on strings
    labels = [reduce_codes.label_codes(keyed[b], nulls="first") for b in by]
    if by:
        keys, inv = reduce_codes.group_ids(*[c for c, _ in labels])
    else:
        keys, inv = np.zeros((1, 0), dtype=np.int64), np.zeros(keyed.height, dtype=np.int64)
    g = keys.shape[0]
    flags = keyed.select([e.fill_null(False) for e in preds])
    cols = [pl.Series(b, lv, dtype=pl.String).gather(keys[:, j])
            for j, (b, (_, lv)) in enumerate(zip(by, labels, strict=True))]
    cols += [pl.Series(name, np.bincount(inv[flags[name].to_numpy()], minlength=g)) for name in flags.columns]
    ck = np.zeros(g, dtype=np.int64)
    conflict = np.flatnonzero((keyed["bucket"] == "conflict").to_numpy())
    if conflict.size:
        per = (keyed[conflict].select(KEY_FIELDS).with_columns(pl.Series("__g", inv[conflict]))
               .group_by("__g").agg(conflict_keys))
        ck[per["__g"].to_numpy()] = per["conflict_keys"].to_numpy()
    cols.append(pl.Series("conflict_keys", ck))
    return pl.DataFrame(cols)


def _sum_to(raw: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """:func:`_raw_counts` per ``by`` from a finer table of them (every count adds up: a
    conflicting key belongs to one judge, variant and scenario)."""
    sums = [pl.col(c).sum() for c in raw.columns if c not in ("judge", "variant", "scenario")]
    return raw.group_by(by).agg(sums).sort(by) if by else raw.select(sums)


def _derive(raw: pl.DataFrame) -> pl.DataFrame:
    return raw.with_columns(
        (pl.col("rows") - pl.col("duplicate") - pl.col("conflict") + pl.col("conflict_keys")
         + pl.col("missing_planned")).alias("judgments")
    ).with_columns((pl.col("judgments") - pl.col("valid")).alias("missing"))


def _counts(rows: pl.DataFrame, by: list[str], cfg: Config) -> pl.DataFrame:
    """Census counts per ``by`` (sorted by it), with ``judgments`` and ``missing``."""
    return _derive(_raw_counts(_keyed(rows, cfg), by, cfg))


class _ScenarioJudgments:
    """Judgments and missing judgments per (judge, variant, scenario), from integer codes.

    ``judgments`` = keyed rows that are neither duplicates nor conflicting + conflicting keys
    (the census's rows - duplicate - conflict + conflict_keys + missing_planned); ``missing``
    = judgments - valid. Scenarios are coded in polars' sort order (nulls first), so a cell's
    per-scenario arrays come in the order of a sort by scenario.
    """

    def __init__(self, keyed: pl.DataFrame) -> None:
        self.labels = {c: reduce_codes.label_codes(keyed[c], nulls="first") for c in ("judge", "variant", "scenario")}
        bucket = keyed["bucket"]
        codes = [self.labels[c][0] for c in ("judge", "variant", "scenario")]
        self.keys, inv = reduce_codes.group_ids(*codes)
        g = self.keys.shape[0]
        counted = ~bucket.is_in(["duplicate", "conflict"]).to_numpy()
        judg = np.bincount(inv[counted], minlength=g)
        valid = np.bincount(inv[(bucket == "valid").to_numpy()], minlength=g)
        conflict = np.flatnonzero((bucket == "conflict").to_numpy())
        if conflict.size:
            ck = (keyed[conflict].select(KEY_FIELDS).with_columns(pl.Series("__g", inv[conflict]))
                  .group_by("__g").agg(pl.concat_str(list(KEY_FIELDS), separator="\x1f").n_unique().alias("n")))
            judg[ck["__g"].to_numpy()] += ck["n"].to_numpy().astype(np.int64)
        self.judgments, self.missing = judg, judg - valid

    def per_cell(self, by: list[str]) -> dict[tuple[Any, ...], tuple[np.ndarray, np.ndarray]]:
        """Per ``by`` key (labels): (missing, judgments) per scenario, in scenario order."""
        cols = [("judge", "variant").index(b) for b in by]
        if not cols:
            return {(): self._per_scenario(np.zeros(self.keys.shape[0], dtype=np.int64), 1)[0]}
        cell_keys, cell = reduce_codes.group_ids(*[self.keys[:, j] for j in cols])
        parts = self._per_scenario(cell, cell_keys.shape[0])
        return {tuple(self.labels[b][1][k] for b, k in zip(by, key, strict=True)): part
                for key, part in zip(cell_keys.tolist(), parts, strict=True)}

    def _per_scenario(self, cell: np.ndarray, m: int) -> list[tuple[np.ndarray, np.ndarray]]:
        keys, inv = reduce_codes.group_ids(cell, self.keys[:, 2])
        g = keys.shape[0]
        miss = np.bincount(inv, weights=self.missing, minlength=g).astype(np.int64)
        judg = np.bincount(inv, weights=self.judgments, minlength=g).astype(np.int64)
        bounds = np.searchsorted(keys[:, 0], np.arange(m + 1))
        return [(miss[bounds[i]:bounds[i + 1]], judg[bounds[i]:bounds[i + 1]]) for i in range(m)]


def _with_rates(df: pl.DataFrame, per: _ScenarioJudgments, by: list[str], cfg: Config) -> pl.DataFrame:
    """Missing rate with an interval that accounts for scenario clustering.

    Per cell, judgments and missing counts per scenario go to
    :func:`workbench.stats.clustered_proportion` (Wilson on the design-effect-adjusted n with a
    t(G-1) correction: rates that vary by scenario are not binomial over rows); the interval
    follows ``confidence``. ``missing_rate_ci_method`` names it.
    """
    groups = per.per_cell(by)
    lows, highs, rates, neff = [], [], [], []
    for rec in df.select(*by, "missing", "judgments").iter_rows(named=True):
        key = tuple(rec[b] for b in by)
        g = groups.get(key)
        n = rec["judgments"]
        if g is None or not n:
            lo = hi = ne = None
        else:
            lo, hi, ne = stats.clustered_proportion(g[0], g[1], cfg.confidence)
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
    keyed = _keyed(rows, cfg)
    by = ["judge", "variant"]
    return _with_rates(_derive(_raw_counts(keyed, by, cfg)), _ScenarioJudgments(keyed), by, cfg)


def census_margins(rows: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """The census margins: per judge (variant null), per variant (judge null), and the total."""
    keyed = _keyed(rows, cfg)
    cells = _raw_counts(keyed, ["judge", "variant"], cfg)
    per = _ScenarioJudgments(keyed)
    per_judge = _with_rates(_derive(_sum_to(cells, ["judge"])), per, ["judge"], cfg).with_columns(
        pl.lit(None, dtype=pl.String).alias("variant"))
    per_variant = _with_rates(_derive(_sum_to(cells, ["variant"])), per, ["variant"], cfg).with_columns(
        pl.lit(None, dtype=pl.String).alias("judge"))
    total = _with_rates(_derive(_sum_to(cells, [])), per, [], cfg).with_columns(
        pl.lit(None, dtype=pl.String).alias("judge"), pl.lit(None, dtype=pl.String).alias("variant"))
    cols = ["judge", "variant", *[c for c in per_judge.columns if c not in ("judge", "variant")]]
    return pl.concat([per_judge.select(cols), per_variant.select(cols), total.select(cols)], how="vertical_relaxed")


PERMUTATIONS = 2000
"""Permutations of the missingness tests (p resolution 1/2001; fixed so that a million-row
input stays fast whatever ``bootstrap.resamples`` is)."""


def judgment_units(rows: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """One row per judgment (scenario, variant, trial, judge) with ``missing`` (0/1), sorted
    by the key.

    A judgment is a key: duplicates are counted once, a conflicting key is one judgment with
    no usable score, a planned-but-absent judgment is missing (as in the census).
    """
    keyed = rows.lazy().filter(selection.keyed_once()).select(*KEY_FIELDS, "bucket").collect()
    if keyed.height and all(keyed.schema[k] == pl.String for k in KEY_FIELDS):
        # the same table from integer codes (label order = the sort's order, nulls first):
        # one grouping of int64 identifiers instead of a group_by and a sort on four strings
        labels = [reduce_codes.label_codes(keyed[k], nulls="first") for k in KEY_FIELDS]
        keys, inv = reduce_codes.group_ids(*[c for c, _ in labels])
        n = np.bincount(inv, minlength=keys.shape[0])
        valid = np.bincount(inv[(keyed["bucket"] == "valid").to_numpy()], minlength=keys.shape[0])
        return pl.DataFrame([pl.Series(k, lv, dtype=pl.String).gather(keys[:, j])
                             for j, (k, (_, lv)) in enumerate(zip(KEY_FIELDS, labels, strict=True))]
                            ).with_columns(pl.Series("missing", ((valid < n) | (n > 1)).astype(np.float64)))
    return keyed.group_by(list(KEY_FIELDS)).agg(
        (~(pl.col("bucket") == "valid").all() | (pl.len() > 1)).cast(pl.Float64).alias("missing")
    ).sort(list(KEY_FIELDS))


def _dense(col: pl.Series) -> np.ndarray | None:
    """Integer codes of string labels in their sort order (the codes ``np.unique`` gives the
    strings, so a test gets the same codes, hence the same numbers); None for a null or a
    column that is not text (the caller passes the labels themselves)."""
    if col.dtype != pl.String or col.null_count():
        return None
    return (col.rank("dense") - 1).to_numpy().astype(np.int64)


class VariantItems:
    """The items of the variant test (every judgment of one scenario x variant x trial:
    missing and total judgments, sorted by scenario, variant, trial) built once from judgment
    units, so that the test on any set of variants is a selection of them: the same items,
    in the same order, as grouping the units of those variants alone."""

    def __init__(self, units: pl.DataFrame) -> None:
        cols = ("scenario", "variant", "trial")
        if all(units.schema[c] == pl.String and not units[c].null_count() for c in cols):
            # integer codes in the sort's order: grouping the codes gives the sorted items
            labels = {c: reduce_codes.label_codes(units[c], nulls="first") for c in cols}
            keys, inv = reduce_codes.group_ids(*[labels[c][0] for c in cols])
            self.m = np.bincount(inv, weights=units["missing"].to_numpy(), minlength=keys.shape[0])
            self.n = np.bincount(inv, minlength=keys.shape[0]).astype(float)
            # codes monotone in the names: the labels' own codes in the test
            self.labels, self.blocks = keys[:, 1], keys[:, 0]
            self._code = {v: i for i, v in enumerate(labels["variant"][1])}
            return
        items = units.group_by(*cols).agg(pl.col("missing").sum().alias("m"), pl.len().alias("n")).sort(cols)
        self.m = items["m"].to_numpy()
        self.n = items["n"].to_numpy().astype(float)
        self.labels, self.blocks = items["variant"].to_numpy(), items["scenario"].to_numpy()
        self._code = None

    def test(self, seed: int, variants: list[Any] | None = None) -> stats.TestResult:
        """:func:`workbench.stats.block_permutation_test` on the items of ``variants`` (all: None)."""
        if variants is None:
            return stats.block_permutation_test(self.m, self.n, self.labels, self.blocks, PERMUTATIONS, seed)
        if self._code is not None:
            keep = np.zeros(self.labels.size, dtype=bool)
            for code in {self._code[v] for v in variants if v in self._code}:
                keep |= self.labels == code
        else:
            keep = np.isin(self.labels, np.array(list(variants), dtype=object))
        return stats.block_permutation_test(self.m[keep], self.n[keep], self.labels[keep], self.blocks[keep],
                                            PERMUTATIONS, seed)


def design_missingness_test(units: pl.DataFrame, factor: str, seed: int) -> stats.TestResult:
    """The design-respecting test for one factor on judgment units (see :func:`missingness_tests`)."""
    if factor == "variant":
        return VariantItems(units).test(seed)
    item = pl.concat_str(["scenario", "variant", pl.col("trial").cast(pl.String)], separator="\x1f")
    u = units.with_columns(item.alias("__item"))
    labels, blocks = _dense(u[factor]), _dense(u["__item"])
    return stats.block_permutation_test(u["missing"].to_numpy(), np.ones(u.height),
                                        u[factor].to_numpy() if labels is None else labels,
                                        u["__item"].to_numpy() if blocks is None else blocks,
                                        PERMUTATIONS, seed)


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


def missingness_tests(rows: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """Does the missing-score rate depend on the judge? on the variant? (design-respecting tests):
    the :data:`workbench.schemas.MISSINGNESS_TESTS` table, one row per factor.

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
    cells = _raw_counts(_keyed(rows, cfg), ["judge", "variant"], cfg)
    for factor in ("judge", "variant"):
        c = _derive(_sum_to(cells, [factor]))
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
            # the Monte-Carlo permutations drawn; null when none were (the large-sample form,
            # or an undefined test): results.json records the parameters that were used
            "permutations": PERMUTATIONS if res.method not in ("block_permutation_asymptotic", "undefined") else None,
            "classic_p": classic.p_value,
            "classic_method": classic.method,
            "levels": len(rates),
            "missing_rates": rates,
        })
    return schemas.frame(out, schemas.MISSINGNESS_TESTS)


def scale_checks(rows: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """Per judge: how many numeric headline values fall outside the rubric (the
    :data:`workbench.schemas.SCALE_CHECKS` table).

    A judge with at least 5 numeric (non-sentinel) headline values of which more than half
    are outside ``[rubric.min, rubric.max]`` is flagged ``scale_mismatch``: it probably graded
    on another scale (0-100 against 1-10). Nothing is rescaled; those rows stay out_of_range.
    """
    hl = cfg.headline
    sub = rows.lazy().filter(
        pl.col(f"{hl}__status").is_in(["valid", "out_of_range"])
        & ~pl.col("bucket").is_in(["duplicate"])
    )
    agg = sub.group_by("judge").agg(
        pl.len().alias("numeric"),
        (pl.col(f"{hl}__status") == "out_of_range").sum().alias("outside"),
        pl.col(f"{hl}__raw").min().alias("min"),
        pl.col(f"{hl}__raw").max().alias("max"),
    ).sort("judge").collect()
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
    return schemas.frame(out, schemas.SCALE_CHECKS)
