"""Null census: per judge x variant, how many judgments carry a usable headline score.

A failure rate that differs by judge or variant is a finding in itself: it confounds every
comparison built on those cells (the post-mortem's 24% vs 11% judges). The census counts,
never imputes.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import polars as pl

from . import clusters, reduce_codes, schemas, selection, stats
from .config import KEY_FIELDS, Config
from .ingest import BUCKETS
from .vocab import MISSING_PLANNED

CELL_BUCKETS: tuple[str, ...] = tuple(b for b in BUCKETS if b not in ("blank", "malformed")) + (
    "missing_planned",
)


def _keyed(rows: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """Keyed rows (:func:`workbench.selection.keyed`), only the columns the census reads."""
    hl = cfg.headline
    cols = dict.fromkeys(["bucket", *KEY_FIELDS, f"{hl}__status", f"{hl}__from_string",
                          *[f"{n}__status" for n in cfg.score_names]])
    # the rows' cluster beside the keys (the rates' clustered intervals group by it)
    return (rows.lazy().filter(selection.keyed())
            .select([*cols, pl.col(clusters.column(rows)).alias("cluster")]).collect())


def _raw_counts(keyed: pl.DataFrame, by: list[str], cfg: Config) -> pl.DataFrame:
    """Per ``by`` (sorted by it): the counts that add up over cells (all but the derived
    ``judgments`` and ``missing``), from keyed rows (:func:`_keyed`)."""
    is_conflict = pl.col("bucket") == "conflict"
    # every count but conflict_keys is the number of rows meeting a predicate
    preds = [
        (pl.col("bucket") != "missing_planned").alias("rows"),
        *[(pl.col("bucket") == b).alias(b) for b in CELL_BUCKETS],
        *selection.census_flags(cfg.headline, cfg.score_names),
    ]
    # A key judged twice with different content is one judgment with no usable score,
    # not one per row (a run appended twice must not inflate the judgments): conflict_keys.
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
    flags = keyed.select([e.fill_null(False) for e in preds])
    cols = [pl.Series(b, lv, dtype=pl.String).gather(keys[:, j])
            for j, (b, (_, lv)) in enumerate(zip(by, labels, strict=True))]
    conflict = np.flatnonzero((keyed["bucket"] == "conflict").to_numpy())
    return _group_counts(cols, inv, keys.shape[0], [(c, flags[c].to_numpy()) for c in flags.columns],
                         inv[conflict], keyed[conflict].select(KEY_FIELDS))


def _group_counts(cols: list[pl.Series], inv: np.ndarray, g: int, masks: list[tuple[str, np.ndarray]],
                  conflict_groups: np.ndarray, conflict_rows: pl.DataFrame) -> pl.DataFrame:
    """The raw count table of ``g`` groups (``cols``: their key columns; ``inv``: each row's
    group): one count column per named row mask, then ``conflict_keys``, the distinct keys of
    the conflicting rows (``conflict_rows``, in group ``conflict_groups``) per group."""
    cols = [*cols, *[pl.Series(name, np.bincount(inv[m], minlength=g)) for name, m in masks]]
    ck = np.zeros(g, dtype=np.int64)
    if conflict_groups.size:
        conflict_keys = pl.concat_str(list(KEY_FIELDS), separator="\x1f").n_unique().alias("conflict_keys")
        per = (conflict_rows.with_columns(pl.Series("__g", conflict_groups))
               .group_by("__g").agg(conflict_keys))
        ck[per["__g"].to_numpy()] = per["conflict_keys"].to_numpy()
    cols.append(pl.Series("conflict_keys", ck))
    return pl.DataFrame(cols)


def _cell_counts(view: reduce_codes.KeyedCodes, cfg: Config) -> pl.DataFrame:
    """:func:`_raw_counts` per (judge, variant) from the run's coded keyed rows: the same
    predicates (booleans computed once) counted per group of the same codes."""
    def build() -> pl.DataFrame:
        by = ["judge", "variant"]
        keys, inv = view.groups(*by)
        cols = [pl.Series(b, view.levels(b), dtype=pl.String).gather(keys[:, j]) for j, b in enumerate(by)]
        masks = [("rows", ~view.is_bucket(MISSING_PLANNED)), *[(b, view.is_bucket(b)) for b in CELL_BUCKETS],
                 *view.flags().items()]
        conflict = np.flatnonzero(view.is_bucket("conflict"))
        return _group_counts(cols, inv, keys.shape[0], masks, inv[conflict], view.conflict_keys())
    return view.cached("census:cells", build)  # type: ignore[no-any-return]


def _cells_and_scenarios(rows: pl.DataFrame, cfg: Config, view: reduce_codes.KeyedCodes | None
                         ) -> tuple[pl.DataFrame, _ScenarioJudgments]:
    """The (judge, variant) counts and the per-scenario judgments, from ``view`` when it can
    code the rows (built once for census, margins and the missingness tests), else from rows."""
    if view is None:
        view = reduce_codes.KeyedCodes(rows, cfg)
    if view.usable:
        return (_cell_counts(view, cfg),
                view.cached("census:per_scenario", lambda: _ScenarioJudgments.from_view(view)))
    keyed = _keyed(rows, cfg)
    return _raw_counts(keyed, ["judge", "variant"], cfg), _ScenarioJudgments(keyed)


def _cells(rows: pl.DataFrame, cfg: Config, view: reduce_codes.KeyedCodes) -> pl.DataFrame:
    """The (judge, variant) counts of :func:`_cells_and_scenarios` alone (a stage that reads
    no per-scenario judgments need not keep or build them)."""
    if view.usable:
        return _cell_counts(view, cfg)
    return _raw_counts(_keyed(rows, cfg), ["judge", "variant"], cfg)


def _sum_to(raw: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """:func:`_raw_counts` per ``by`` from a finer table of them (every count adds up: a
    conflicting key belongs to one judge, variant and scenario)."""
    sums = [pl.col(c).sum() for c in raw.columns if c not in ("judge", "variant", "scenario", "cluster")]
    return raw.group_by(by).agg(sums).sort(by) if by else raw.select(sums)


def _derive(raw: pl.DataFrame) -> pl.DataFrame:
    return raw.with_columns(
        (pl.col("rows") - pl.col("duplicate") - pl.col("conflict") + pl.col("conflict_keys")
         + pl.col("missing_planned")).alias("judgments")
    ).with_columns((pl.col("judgments") - pl.col("valid")).alias("missing"))


def _counts(rows: pl.DataFrame, by: list[str], cfg: Config) -> pl.DataFrame:
    """Census counts per ``by`` (sorted by it), with ``judgments`` and ``missing``."""
    return _derive(_raw_counts(_keyed(rows, cfg), by, cfg))


_PER = ("judge", "variant", "cluster")
"""The groups of :class:`_ScenarioJudgments`: per cluster (the config's ``cluster:``, by default
the scenario), the unit the rates' clustered intervals treat as independent."""


class _ScenarioJudgments:
    """Judgments and missing judgments per (judge, variant, cluster), from integer codes
    (the cluster is the scenario unless the config's ``cluster:`` names another unit).

    ``judgments`` = keyed rows that are neither duplicates nor conflicting + conflicting keys
    (the census's rows - duplicate - conflict + conflict_keys + missing_planned); ``missing``
    = judgments - valid. Scenarios are coded in polars' sort order (nulls first), so a cell's
    per-scenario arrays come in the order of a sort by scenario.
    """

    def __init__(self, keyed: pl.DataFrame) -> None:
        labels = {c: reduce_codes.label_codes(keyed[c], nulls="first") for c in _PER}
        bucket = keyed["bucket"]
        keys, inv = reduce_codes.group_ids(*[labels[c][0] for c in _PER])
        self._set(labels, keys, inv, ~bucket.is_in(["duplicate", "conflict"]).to_numpy(),
                  (bucket == "valid").to_numpy(), np.flatnonzero((bucket == "conflict").to_numpy()),
                  keyed)

    @classmethod
    def from_view(cls, view: reduce_codes.KeyedCodes) -> _ScenarioJudgments:
        """The same from the run's coded keyed rows (the same codes and groups)."""
        self = cls.__new__(cls)
        cols = _PER
        keys, inv = view.groups(*cols)
        self._set({c: (view.codes(c), view.levels(c)) for c in cols}, keys, inv,
                  ~view.is_bucket("duplicate", "conflict"), view.is_bucket("valid"),
                  np.flatnonzero(view.is_bucket("conflict")), None, view.conflict_keys())
        return self

    def _set(self, labels: dict[str, tuple[np.ndarray, list[Any]]], keys: np.ndarray, inv: np.ndarray,
             counted: np.ndarray, valid_rows: np.ndarray, conflict: np.ndarray, keyed: pl.DataFrame | None,
             conflict_rows: pl.DataFrame | None = None) -> None:
        self.labels, self.keys = labels, keys
        g = self.keys.shape[0]
        judg = np.bincount(inv[counted], minlength=g)
        valid = np.bincount(inv[valid_rows], minlength=g)
        if conflict.size:
            frame = keyed[conflict].select(KEY_FIELDS) if conflict_rows is None else conflict_rows
            ck = (frame.with_columns(pl.Series("__g", inv[conflict]))
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


def census(rows: pl.DataFrame, cfg: Config, view: reduce_codes.KeyedCodes | None = None) -> pl.DataFrame:
    """One row per judge x variant: rows, bucket counts, missing rate with a Wilson interval.

    ``rows`` counts lines attributed to the cell (malformed lines are not attributed: their
    keys cannot be trusted; they are in the ledger). ``judgments`` = rows - duplicate -
    conflict + conflicting keys + missing_planned (a key with conflicting rows is one
    judgment without a usable score; ``conflict_keys`` counts them); ``missing`` = judgments -
    valid; ``missing_rate`` = missing /
    judgments (null when there are no judgments). ``sentinel`` counts headline sentinels
    (they are inside ``partial``/``empty``); ``nulls__FIELD`` counts absent, null or
    sentinel values per rubric field.

    ``view``: the run's coded keyed rows (:class:`workbench.reduce_codes.KeyedCodes`), shared
    with :func:`census_margins` and :func:`missingness_tests`; None: built here.
    """
    cells, per = _cells_and_scenarios(rows, cfg, view)
    return _with_rates(_derive(cells), per, ["judge", "variant"], cfg)


def census_margins(rows: pl.DataFrame, cfg: Config, view: reduce_codes.KeyedCodes | None = None) -> pl.DataFrame:
    """The census margins: per judge (variant null), per variant (judge null), and the total."""
    cells, per = _cells_and_scenarios(rows, cfg, view)
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
    coded = _unit_codes(rows)
    if coded is not None:
        keys, levels, missing = coded
        return pl.DataFrame([pl.Series(k, levels[k], dtype=pl.String).gather(keys[:, j])
                             for j, k in enumerate(KEY_FIELDS)]).with_columns(pl.Series("missing", missing))
    keyed = rows.lazy().filter(selection.keyed_once()).select(*KEY_FIELDS, "bucket").collect()
    return keyed.group_by(list(KEY_FIELDS)).agg(
        (~(pl.col("bucket") == "valid").all() | (pl.len() > 1)).cast(pl.Float64).alias("missing")
    ).sort(list(KEY_FIELDS))


def _unit_codes(rows: pl.DataFrame) -> tuple[np.ndarray, dict[str, list[Any]], np.ndarray] | None:
    """:func:`judgment_units` as integer codes: (the units' four key codes, int32, sorted by
    the key; the labels per key column in the sort's order, nulls first; ``missing`` per
    unit), or None when the keys are not all text or no row is keyed.

    One grouping of int64 identifiers instead of a group_by and a sort on four strings; the
    codes come from whole columns (reduce_codes.coded_keys: no filtered copy of the text)."""
    if not (rows.height and all(rows.schema.get(k) == pl.String for k in KEY_FIELDS)):
        return None
    codes, levels, df = reduce_codes.coded_keys(rows, selection.keyed_once(), KEY_FIELDS,
                                                [(pl.col("bucket") == "valid").fill_null(False).alias("v")])
    if not df.height:
        return None
    is_valid = df["v"].to_numpy()
    del df
    keys, inv = reduce_codes.group_ids(*[codes[k] for k in KEY_FIELDS], key_dtype=np.int32)
    del codes
    n = np.bincount(inv, minlength=keys.shape[0])
    valid = np.bincount(inv[is_valid], minlength=keys.shape[0])
    del inv, is_valid
    return keys, levels, ((valid < n) | (n > 1)).astype(np.float64)


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
            # (label_codes' codes without a null: positions in the sorted distinct values, as
            # the Enum's uint32 physical codes, 4 bytes a unit)
            levels = {c: sorted(units[c].unique().to_list()) for c in cols}
            keys, inv = reduce_codes.group_ids(*[units[c].cast(pl.Enum(levels[c])).to_physical().to_numpy()
                                                 for c in cols])
            self.m = np.bincount(inv, weights=units["missing"].to_numpy(), minlength=keys.shape[0])
            self.n = np.bincount(inv, minlength=keys.shape[0]).astype(float)
            del inv
            # codes monotone in the names: the labels' own codes in the test
            self.labels, self.blocks = keys[:, 1], keys[:, 0]
            self._code = {v: i for i, v in enumerate(levels["variant"])}
            return
        items = units.group_by(*cols).agg(pl.col("missing").sum().alias("m"), pl.len().alias("n")).sort(cols)
        self.m = items["m"].to_numpy()
        self.n = items["n"].to_numpy().astype(float)
        self.labels, self.blocks = items["variant"].to_numpy(), items["scenario"].to_numpy()
        self._code = None

    @classmethod
    def of_rows(cls, rows: pl.DataFrame, cfg: Config) -> VariantItems:
        """``VariantItems(judgment_units(rows, cfg))``, from the units' codes when they allow
        (:func:`_unit_codes`, no null scenario, variant or trial): the same items in the same
        order, labels and blocks (codes in the labels' sort order), without the units' key
        texts (four string columns of one row per judgment, 0.3 GB at 5M rows) nor their
        recoding."""
        coded = _unit_codes(rows)
        if coded is None or any(None in coded[1][c] for c in ("scenario", "variant", "trial")):
            return cls(judgment_units(rows, cfg))
        keys, levels, missing = coded
        # units come sorted by (scenario, variant, trial, judge): an item is a run of equal
        # (scenario, variant, trial), numbered in order (the items' sorted order)
        change = np.r_[True, np.any(keys[1:, :3] != keys[:-1, :3], axis=1)]
        first = np.flatnonzero(change)
        item = np.cumsum(change, dtype=np.int64) - 1
        del change
        self = cls.__new__(cls)
        self.m = np.bincount(item, weights=missing, minlength=first.size)
        self.n = np.bincount(item, minlength=first.size).astype(float)
        self.labels, self.blocks = keys[first, 1].astype(np.int64), keys[first, 0].astype(np.int64)
        self._code = {v: i for i, v in enumerate(levels["variant"])}
        return self

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


def design_missingness_test(units: pl.DataFrame | CodedUnits, factor: str, seed: int) -> stats.TestResult:
    """The design-respecting test for one factor on judgment units (see :func:`missingness_tests`):
    a :func:`judgment_units` table, or the same units as codes (:class:`CodedUnits`)."""
    if isinstance(units, CodedUnits):
        return _coded_missingness_test(units, factor, seed)
    if factor == "variant":
        return VariantItems(units).test(seed)
    item = pl.concat_str(["scenario", "variant", pl.col("trial").cast(pl.String)], separator="\x1f")
    u = units.with_columns(item.alias("__item"))
    labels, blocks = _dense(u[factor]), _dense(u["__item"])
    return stats.block_permutation_test(u["missing"].to_numpy(), np.ones(u.height),
                                        u[factor].to_numpy() if labels is None else labels,
                                        u["__item"].to_numpy() if blocks is None else blocks,
                                        PERMUTATIONS, seed)


class CodedUnits(NamedTuple):
    """Judgment units as codes (:func:`_coded_units`): of the units' four key codes only what
    the two tests read (a table of all four was 80 MB at 5M rows, alive through both)."""

    judge: np.ndarray  # per unit (sorted by scenario, variant, trial, judge), its judge code
    missing: np.ndarray  # per unit, 1.0 when the judgment has no usable score
    item: np.ndarray  # per unit, its item (scenario x variant x trial), numbered in order
    item_keys: np.ndarray  # per item, its (scenario, variant) codes


def _coded_units(view: reduce_codes.KeyedCodes) -> CodedUnits | None:
    """Judgment units (:func:`judgment_units`) as codes: (unit keys as rows of the four key
    codes in the key's sort order, ``missing`` per unit, each unit's item), or None when the
    rows need :func:`judgment_units` itself (a key column not text or with a null, or a
    scenario or variant holding a character at or below U+001F, where the judge test's item
    text would sort differently from the codes)."""
    if not view.usable or any(None in view.levels(k) for k in KEY_FIELDS):
        return None
    if any(min(v, default=" ") <= "\x1f" for k in ("scenario", "variant") for v in view.levels(k)):
        return None
    once = ~view.is_bucket("duplicate")
    keys, inv = reduce_codes.group_ids(*[view.codes(k)[once] for k in KEY_FIELDS], key_dtype=np.int32)
    if keys.shape[0] == 0:
        return None
    n = np.bincount(inv, minlength=keys.shape[0])
    valid = np.bincount(inv[view.is_bucket("valid")[once]], minlength=keys.shape[0])
    del inv
    missing = ((valid < n) | (n > 1)).astype(np.float64)
    # units come sorted by (scenario, variant, trial, judge): an item is a run of equal
    # (scenario, variant, trial)
    change = np.r_[True, np.any(keys[1:, :3] != keys[:-1, :3], axis=1)]
    item = np.cumsum(change, dtype=np.int64) - 1
    item_keys = keys[np.flatnonzero(change), :2]
    del change
    return CodedUnits(keys[:, 3].copy(), missing, item, item_keys)


def _coded_missingness_test(coded: CodedUnits, factor: str, seed: int) -> stats.TestResult:
    """:func:`design_missingness_test` on :func:`_coded_units`: the same units, items, codes
    (monotone in the labels) and order, hence the same numbers."""
    judge, missing, item, item_keys = coded
    if factor == "variant":  # VariantItems: per item, missing and total judgments
        m = np.bincount(item, weights=missing)
        n = np.bincount(item).astype(float)
        return stats.block_permutation_test(m, n, item_keys[:, 1], item_keys[:, 0], PERMUTATIONS, seed)
    return stats.block_permutation_test(missing, np.ones(missing.size), judge, item, PERMUTATIONS, seed)


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


def missingness_tests(rows: pl.DataFrame, cfg: Config,
                      view: reduce_codes.KeyedCodes | None = None) -> pl.DataFrame:
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
    if view is None:
        view = reduce_codes.KeyedCodes(rows, cfg)
    coded = _coded_units(view)
    units: pl.DataFrame | CodedUnits = judgment_units(rows, cfg) if coded is None else coded
    cells = _cells(rows, cfg, view)
    for factor in ("judge", "variant"):
        c = _derive(_sum_to(cells, [factor]))
        table = np.array([[m, n - m] for m, n in c.select("missing", "judgments").iter_rows()], dtype=float)
        classic = stats.contingency_test(table, seed=cfg.seed)
        seed = stats.derive_seed(cfg.seed, "missingness", factor)
        res = design_missingness_test(units, factor, seed)
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
