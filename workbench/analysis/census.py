"""Null census: per judge x variant, how many judgments carry a usable headline score.

A failure rate that differs by judge or variant is a finding in itself: it confounds every
comparison built on those cells (the post-mortem's 24% vs 11% judges). The census counts,
never imputes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import polars as pl
from numpy.typing import ArrayLike

from workbench import stats
from workbench.common import schemas
from workbench.common.config import KEY_FIELDS, MISSINGNESS_UNITS, Config
from workbench.common.vocab import MISSING_PLANNED
from workbench.ingest import clusters, selection
from workbench.ingest.reader import BUCKETS
from workbench.reduce import codes as reduce_codes

CELL_BUCKETS: tuple[str, ...] = tuple(b for b in BUCKETS if b not in ("blank", "malformed")) + (
    "missing_planned",
)


def _keyed(rows: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """Keyed rows (:func:`workbench.ingest.selection.keyed`), only the columns the census reads."""
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


def _group_counts(cols: list[pl.Series], inv: np.ndarray, g: int,
                  masks: list[tuple[str, np.ndarray | Callable[[], np.ndarray]]],
                  conflict_groups: np.ndarray, conflict_rows: pl.DataFrame) -> pl.DataFrame:
    """The raw count table of ``g`` groups (``cols``: their key columns; ``inv``: each row's
    group): one count column per named row mask (an array, or a function making it: then
    one mask of the rows' length is alive at a time), then ``conflict_keys``, the distinct
    keys of the conflicting rows (``conflict_rows``, in group ``conflict_groups``) per group."""
    counts = []
    for name, m in masks:
        counts.append(pl.Series(name, reduce_codes.count_where(inv, m() if callable(m) else m, g)))
    cols = [*cols, *counts]
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
        masks: list[tuple[str, np.ndarray | Callable[[], np.ndarray]]] = [
            ("rows", lambda: ~view.is_bucket(MISSING_PLANNED)),
            *[(b, lambda b=b: view.is_bucket(b)) for b in CELL_BUCKETS], *view.flags().items()]
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
        judg = reduce_codes.count_where(inv, counted, g)
        valid = reduce_codes.count_where(inv, valid_rows, g)
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

    A cell whose rate is 0 or 1 shows nothing of its clustering: it takes the pooled design
    effect of the table's other cells (:func:`workbench.stats.pooled_design_effect`; whole
    (scenario, variant) blocks that fail together make it large, row failures leave it near
    1). ``missing_rate_design_effect`` is the design effect used and
    ``missing_rate_design_effect_from`` says where it came from: ``cell`` (the cell's own
    rows), ``pooled`` (the other cells', the cell at 0 or 1), ``none`` (1: no cell of the
    table shows clustering, or a single cluster).
    """
    groups = per.per_cell(by)
    pooled = stats.pooled_design_effect(groups.values())
    lows, highs, rates, neff, deffs, froms = [], [], [], [], [], []
    for rec in df.select(*by, "missing", "judgments").iter_rows(named=True):
        key = tuple(rec[b] for b in by)
        g = groups.get(key)
        n = rec["judgments"]
        lo = hi = ne = de = src = None
        if g is not None and n:
            r = stats.clustered_proportion_detail(g[0], g[1], cfg.confidence, design_effect_fallback=pooled)
            lo, hi, ne, de, src = r.ci_low, r.ci_high, r.n_eff, r.design_effect, r.design_effect_from
        lows.append(lo)
        highs.append(hi)
        neff.append(ne)
        deffs.append(de)
        froms.append(src)
        rates.append(rec["missing"] / n if n else None)
    return df.with_columns(
        pl.Series("missing_rate", rates, dtype=pl.Float64),
        pl.Series("missing_rate_ci_low", lows, dtype=pl.Float64),
        pl.Series("missing_rate_ci_high", highs, dtype=pl.Float64),
        pl.Series("missing_rate_n_eff", neff, dtype=pl.Float64),
        pl.lit("wilson_design_effect_t").alias("missing_rate_ci_method"),
        pl.Series("missing_rate_design_effect", deffs, dtype=pl.Float64),
        pl.Series("missing_rate_design_effect_from", froms, dtype=pl.String),
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

    ``view``: the run's coded keyed rows (:class:`workbench.reduce.codes.KeyedCodes`), shared
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
        units = pl.DataFrame([pl.Series(k, levels[k], dtype=pl.String).gather(keys[:, j])
                              for j, k in enumerate(KEY_FIELDS)]).with_columns(pl.Series("missing", missing))
    else:
        keyed = rows.lazy().filter(selection.keyed_once()).select(*KEY_FIELDS, "bucket").collect()
        units = keyed.group_by(list(KEY_FIELDS)).agg(
            (~(pl.col("bucket") == "valid").all() | (pl.len() > 1)).cast(pl.Float64).alias("missing")
        ).sort(list(KEY_FIELDS))
    return with_cluster_codes(units, rows)


def with_cluster_codes(units: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """``units`` (one row per judgment, a ``scenario`` column) with ``cluster_code``, its
    scenario's cluster (:func:`scenario_cluster_codes`), when the rows have clusters of several
    scenarios; else ``units`` as they are (the outer level is the scenario)."""
    scen = units["scenario"].unique(maintain_order=True)
    codes = scenario_cluster_codes(rows, scen.to_list())
    if codes is None:
        return units
    return units.with_columns(pl.col("scenario").replace_strict(
        scen, pl.Series(codes), return_dtype=pl.Int64).alias("cluster_code"))


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


def scenario_cluster_codes(rows: pl.DataFrame, scenarios: Any) -> np.ndarray | None:
    """Per scenario label in ``scenarios`` (labels, any order), the code of its cluster
    (positions in the sorted cluster labels), or None when the rows' cluster is their
    scenario (no ``cluster:`` of several scenarios: the tests' outer level is the scenario).

    Each scenario sits in one cluster (:func:`workbench.ingest.clusters.assign` checked it); a
    scenario no keyed row holds is a cluster of its own (after every named cluster)."""
    col = clusters.column(rows)
    if col == "scenario":
        return None
    pairs = (rows.lazy().filter(selection.keyed() | (pl.col("bucket") == MISSING_PLANNED))
             .select("scenario", pl.col(col).alias("__cl")).unique("scenario", keep="first").collect())
    if pairs.height and (pairs["__cl"] == pairs["scenario"]).all():
        return None
    levels = sorted(v for v in pairs["__cl"].unique().to_list() if v is not None)
    code = {v: i for i, v in enumerate(levels)}
    of = dict(zip(pairs["scenario"].to_list(), pairs["__cl"].to_list(), strict=True))
    own = len(levels)
    out = []
    for s in list(scenarios):
        c = of.get(s)
        if c is None:
            out.append(own)
            own += 1
        else:
            out.append(code[c])
    return np.asarray(out, dtype=np.int64)


#: ``missingness: {unit: ...}`` choices (:data:`workbench.common.config.MISSINGNESS_UNITS`)
UNITS = MISSINGNESS_UNITS
#: the exchangeable unit of each test, as ``results.json`` names it (``unit``)
UNIT_NAMES = {
    ("variant", "block"): "scenario_variant_block",
    ("variant", "trial"): "scenario_variant_trial",
    ("judge", "block"): "scenario_variant_judge_block",
    ("judge", "trial"): "judgment",
}


def _unit_codes_of(values: ArrayLike) -> np.ndarray:
    """Non-negative integer codes of one key array (the codes themselves when they are
    such; else positions in the sorted distinct values)."""
    arr = np.asarray(values)
    if arr.dtype.kind in "iu" and (arr.size == 0 or int(arr.min()) >= 0):
        return arr.astype(np.int64, copy=False)
    return np.unique(arr, return_inverse=True)[1].reshape(-1).astype(np.int64)


def missingness_units(missing: ArrayLike, scenario: ArrayLike, variant: ArrayLike, trial: ArrayLike,
                      judge: ArrayLike, factor: str, unit: str = "block", cluster: ArrayLike | None = None
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The exchangeable units of a missingness test, from per-judgment arrays: (missing,
    totals, labels, blocks) for :func:`workbench.stats.block_permutation_test`.

    ``missing`` (1.0 when the judgment has no usable score) and the key arrays hold one entry
    per judgment (a key: duplicates counted once, as :func:`judgment_units`); keys are integer
    codes (non-negative, any order-preserving coding) or labels. ``cluster``: the outer level
    (the unit of independence) per judgment; None: the scenario.

    ``unit="block"`` (the default, valid whether failures hit rows, trials or whole blocks):

    * ``factor="variant"``: a unit is every judgment of one (cluster, variant), over all
      trials and judges; its label is the variant; labels are exchanged within the cluster;
    * ``factor="judge"``: a unit is one judge's judgments of one (cluster, variant), over
      all trials; its label is the judge; exchanged within the (cluster, variant).

    ``unit="trial"`` (valid only when trials fail independently; the cluster is not used):

    * ``"variant"``: a unit is every judgment of one (scenario, variant, trial) item,
      exchanged within the scenario;
    * ``"judge"``: a unit is one judgment, its judge label exchanged within its item.

    Units come sorted by their key (blocks first); ``missing``/``totals`` are the unit's
    missing and total judgments (floats), ``labels`` the variant or judge codes as given
    (integer inputs) or their sorted positions, ``blocks`` the block of each unit (0..B-1 in
    sorted order).
    """
    if factor not in ("variant", "judge"):
        raise ValueError(f"factor must be 'variant' or 'judge', got {factor!r}")
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, got {unit!r}")
    miss = np.asarray(missing, dtype=np.float64)
    outer = scenario if cluster is None else cluster
    cols, width = {
        ("variant", "block"): ((outer, variant), 1),
        ("variant", "trial"): ((scenario, variant, trial), 1),
        ("judge", "block"): ((outer, variant, judge), 2),
        ("judge", "trial"): ((scenario, variant, trial, judge), 3),
    }[(factor, unit)]
    codes = [_unit_codes_of(c) for c in cols]
    if any(c.shape != miss.shape for c in codes):
        raise ValueError("missing and the key arrays need one entry per judgment")
    keys, inv = reduce_codes.group_ids(*codes)
    g = keys.shape[0]
    m = np.bincount(inv, weights=miss, minlength=g)
    t = np.bincount(inv, minlength=g).astype(np.float64)
    labels = keys[:, 1 if factor == "variant" else len(cols) - 1].astype(np.int64)
    _, blocks = reduce_codes.group_ids(*[keys[:, j] for j in range(width)])
    return m, t, labels, blocks.astype(np.int64)


def unit_test(m: np.ndarray, t: np.ndarray, labels: np.ndarray, blocks: np.ndarray, seed: int
              ) -> stats.TestResult:
    """The permutation test on units (:func:`missingness_units`): exact by full enumeration
    when the design has at most :data:`workbench.stats.PERMUTATION_ENUMERATION_LIMIT`
    arrangements (:func:`workbench.stats.block_permutation_enumerated`), else
    :func:`workbench.stats.block_permutation_test` with :data:`PERMUTATIONS` permutations."""
    exact = stats.block_permutation_enumerated(m, t, labels, blocks)
    if exact is not None:
        return exact
    return stats.block_permutation_test(m, t, labels, blocks, PERMUTATIONS, seed)


def unit_design(m: np.ndarray, t: np.ndarray, labels: np.ndarray, blocks: np.ndarray,
                res: stats.TestResult) -> dict[str, Any]:
    """What the test could see: ``blocks`` (exchangeable units), ``informative_blocks`` (units
    in a block of two labels or more whose units do not all carry the same missing and total
    judgments: only those can change the table under permutation) and ``min_p``, the smallest
    p this test can return on this design (:func:`workbench.stats.block_permutation_min_p`;
    not below 1 / (1 + permutations) for the Monte-Carlo test; null for an undefined test)."""
    n = int(m.size)
    informative = 0
    if n:
        blk, g = stats._codes(blocks, n, "blocks")  # np.unique's codes, by a table when they allow
        first_m = np.full(g, np.nan)
        first_t = np.full(g, np.nan)
        first_m[blk[::-1]] = m[::-1]
        first_t[blk[::-1]] = t[::-1]
        differs = np.bincount(blk, weights=((m != first_m[blk]) | (t != first_t[blk])).astype(float),
                              minlength=g) > 0
        lab, _ = stats._codes(labels, n, "labels")
        # the distinct (block, label) pairs (rows of codes, by a table): blocks with two labels or more
        pair_block = reduce_codes.group_ids(blk, lab)[0][:, 0]
        two = np.bincount(pair_block, minlength=g) > 1
        informative = int(np.bincount(blk, minlength=g)[differs & two].sum())
    min_p = None
    if res.method != "undefined":
        min_p = stats.block_permutation_min_p(labels, blocks)
        if res.method == "block_permutation" and min_p is not None:
            min_p = max(min_p, 1.0 / (1.0 + PERMUTATIONS))
    return {"blocks": n, "informative_blocks": informative, "min_p": min_p}


def _frame_units(units: pl.DataFrame, factor: str, unit: str
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`missingness_units` of a :func:`judgment_units` table (keys coded in their sort
    order, nulls first, as the coded path codes them)."""
    codes = [reduce_codes.label_codes(units[k], nulls="first")[0] for k in KEY_FIELDS]
    cl = units["cluster_code"].to_numpy() if "cluster_code" in units.columns else None
    return missingness_units(units["missing"].to_numpy(), *codes, factor, unit, cluster=cl)


class VariantItems:
    """The units of the variant test (:func:`missingness_units`, ``factor="variant"``: whole
    (scenario, variant) blocks by default, (scenario, variant, trial) items with
    ``unit="trial"``) built once from judgment units, so that the test on any set of
    variants is a selection of them: the same units, in the same order, as building the
    units of those variants alone."""

    def __init__(self, units: pl.DataFrame, unit: str = "block") -> None:
        levels = reduce_codes.label_codes(units["variant"], nulls="first")[1]
        self.m, self.n, self.labels, self.blocks = _frame_units(units, "variant", unit)
        self.unit = unit
        self._code = {v: i for i, v in enumerate(levels)}

    @classmethod
    def of_rows(cls, rows: pl.DataFrame, cfg: Config) -> VariantItems:
        """``VariantItems(judgment_units(rows, cfg), cfg.missingness_unit)``, from the units'
        codes when they allow (:func:`_unit_codes`): the same units in the same order, labels
        and blocks (codes in the labels' sort order, nulls first), without the units' key texts
        (four string columns of one row per judgment, 0.3 GB at 5M rows) nor their recoding."""
        coded = _unit_codes(rows)
        if coded is None:
            return cls(judgment_units(rows, cfg), cfg.missingness_unit)
        keys, levels, missing = coded
        per_scenario = scenario_cluster_codes(rows, levels["scenario"])
        self = cls.__new__(cls)
        self.m, self.n, self.labels, self.blocks = missingness_units(
            missing, *[keys[:, j] for j in range(4)], "variant", cfg.missingness_unit,
            cluster=None if per_scenario is None else per_scenario[keys[:, 0]])
        self.unit = cfg.missingness_unit
        self._code = {v: i for i, v in enumerate(levels["variant"])}
        return self

    @classmethod
    def of_view(cls, view: reduce_codes.KeyedCodes, cfg: Config) -> VariantItems | None:
        """:meth:`of_rows` from the run's coded view (the same units, labels and blocks): from
        its dense judgment table when the design allows (:func:`_view_arrays`, nothing of the
        rows' length), else from its judgments' codes (:func:`_coded_units`); None when the
        view cannot give them (a key not text or with a null: :meth:`of_rows` reads the rows)."""
        unit = cfg.missingness_unit
        arrays = _view_arrays(view, "variant", unit)
        if arrays is None:
            coded = _coded_units(view)
            if coded is None:
                return None
            arrays = _coded_arrays(coded, "variant", unit)
        self = cls.__new__(cls)
        self.m, self.n, self.labels, self.blocks = arrays
        self.unit = unit
        self._code = {v: i for i, v in enumerate(view.levels("variant"))}
        return self

    def select(self, variants: list[Any] | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The units of ``variants`` (all: None), in order."""
        if variants is None:
            return self.m, self.n, self.labels, self.blocks
        keep = np.zeros(self.labels.size, dtype=bool)
        for code in {self._code[v] for v in variants if v in self._code}:
            keep |= self.labels == code
        return self.m[keep], self.n[keep], self.labels[keep], self.blocks[keep]

    def test(self, seed: int, variants: list[Any] | None = None) -> stats.TestResult:
        """:func:`unit_test` on the units of ``variants`` (all: None)."""
        return unit_test(*self.select(variants), seed)


def design_missingness_test(units: pl.DataFrame | CodedUnits, factor: str, seed: int,
                            unit: str = "block") -> stats.TestResult:
    """The design-respecting test for one factor on judgment units (see :func:`missingness_tests`):
    a :func:`judgment_units` table, or the same units as codes (:class:`CodedUnits`)."""
    return design_missingness(units, factor, seed, unit)[0]


def design_missingness(units: pl.DataFrame | CodedUnits | reduce_codes.KeyedCodes, factor: str, seed: int,
                       unit: str = "block") -> tuple[stats.TestResult, dict[str, Any]]:
    """:func:`design_missingness_test` and what the test could see (:func:`unit_design`, with
    ``unit``: the exchangeable unit's name, :data:`UNIT_NAMES`). ``units``: a
    :func:`judgment_units` table, the same units as codes (:class:`CodedUnits`), or a coded
    view whose dense judgment table can be built (:func:`_view_arrays`)."""
    if isinstance(units, reduce_codes.KeyedCodes):
        dense = _view_arrays(units, factor, unit)
        if dense is None:
            raise ValueError("the view's judgments have no dense table (a sparse design): pass its units")
        arrays = dense
    elif isinstance(units, CodedUnits):
        arrays = _coded_arrays(units, factor, unit)
    else:
        arrays = _frame_units(units, factor, unit)
    res = unit_test(*arrays, seed)
    return res, {"unit": UNIT_NAMES[(factor, unit)], **unit_design(*arrays, res)}


class CodedUnits(NamedTuple):
    """Judgment units as codes (:func:`_coded_units`): of the units' four key codes only what
    the two tests read (a table of all four was 80 MB at 5M rows, alive through both)."""

    judge: np.ndarray  # per unit (sorted by scenario, variant, trial, judge), its judge code
    missing: np.ndarray  # per unit, 1.0 when the judgment has no usable score
    item: np.ndarray  # per unit, its item (scenario x variant x trial), numbered in order
    item_keys: np.ndarray  # per item, its (scenario, variant) codes
    item_cluster: np.ndarray | None = None  # per item, its cluster code (None: the scenario)


def _coded_units(view: reduce_codes.KeyedCodes) -> CodedUnits | None:
    """Judgment units (:func:`judgment_units`) as codes: (unit keys as rows of the four key
    codes in the key's sort order, ``missing`` per unit, each unit's item), or None when the
    rows need :func:`judgment_units` itself (a key column not text or with a null)."""
    if not view.usable or any(None in view.levels(k) for k in KEY_FIELDS):
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
    per_scenario = _scenario_clusters(view)
    item_cluster = None if per_scenario is None else per_scenario[item_keys[:, 0]]
    return CodedUnits(keys[:, 3].copy(), missing, item, item_keys, item_cluster)


#: the dense judgment table (:func:`_judgment_states`) is built when it has at most this many
#: entries per keyed row (plus 1024): a design where most scenario x variant x trial x judge
#: combinations are judged; a sparse one groups the judgments' codes (:func:`_coded_units`)
DENSE_JUDGMENTS_PER_ROW = 4


def _judgment_states(view: reduce_codes.KeyedCodes) -> np.ndarray | None:
    """Every possible judgment's state, as an array of shape (scenarios, variants, trials,
    judges) indexed by the view's codes (uint8): 0, no row; 1, exactly one row, valid (a scored
    judgment); 2, a judgment without a usable score (no valid row, or several rows of one key:
    a conflict), as :func:`judgment_units` decides ``missing`` (duplicates counted once).

    The keyed rows are counted a block of :data:`workbench.reduce.codes.BLOCK_ROWS` rows at a
    time into one table of the
    design's size: a valid row adds 1, any other row 2, so the total is 1 exactly when the
    judgment has one row and it is valid (``2 * rows - valid rows`` is 1 only for one valid
    row). Nothing of the rows' length is made. None when the view cannot be used (a key not
    text or with a null), no row is keyed, or the design is sparse
    (:data:`DENSE_JUDGMENTS_PER_ROW`)."""
    if not view.usable or any(None in view.levels(k) for k in KEY_FIELDS):
        return None
    shape = tuple(len(view.levels(k)) for k in KEY_FIELDS)
    height = view.height
    width = int(np.prod([float(w) for w in shape]))
    if height == 0 or height >= 2**31 or width > DENSE_JUDGMENTS_PER_ROW * height + 1024:
        return None
    codes = [view.codes(k) for k in KEY_FIELDS]
    bucket = view.bucket_codes()
    duplicate, valid = reduce_codes.bucket_code("duplicate"), reduce_codes.bucket_code("valid")
    total = np.zeros(width, dtype=np.uint32)  # at most 2 per keyed row: below 2**32
    step = reduce_codes.BLOCK_ROWS
    for lo in range(0, height, step):
        hi = min(lo + step, height)
        b = bucket[lo:hi]
        ident = codes[0][lo:hi].astype(np.int64)
        for c, w in zip(codes[1:], shape[1:], strict=True):
            ident *= w
            ident += c[lo:hi]
        once = b != duplicate
        np.add.at(total, ident[once], np.where(b[once] == valid, 1, 2).astype(np.uint32))
    state = np.minimum(total, 2).astype(np.uint8)
    del total
    return state.reshape(shape)


def _dense_arrays(state: np.ndarray, factor: str, unit: str, cluster_of: np.ndarray | None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`missingness_units` from :func:`_judgment_states`: the same units, in the same
    order (sorted by key: the table's row-major order), with the same missing and total
    judgments, labels (the view's variant or judge codes) and blocks. The block units are
    (cluster, variant[, judge]) sums, of the design's size; the judge test with ``unit="trial"``
    has one unit per judgment (as many as the keyed rows, as on every path). ``cluster_of``: each
    scenario code's cluster code (None: the scenario is the cluster); the trial units do not
    use it, as :func:`missingness_units` does not."""
    present, missing = state > 0, state == 2
    if unit == "trial" and factor == "judge":  # every judgment a unit, within its item
        idx = np.nonzero(present)
        m, t, label, prefix = missing[idx].astype(np.float64), np.ones(idx[0].size), idx[3], idx[:3]
    else:
        axes = {("variant", "block"): (2, 3), ("judge", "block"): (2,), ("variant", "trial"): (3,)}[(factor, unit)]
        t_tab = present.sum(axis=axes, dtype=np.int64)
        m_tab = missing.sum(axis=axes, dtype=np.int64)
        if unit == "block" and cluster_of is not None:  # the scenarios of a cluster are one block
            outer = int(cluster_of.max()) + 1 if cluster_of.size else 0
            t_c = np.zeros((outer, *t_tab.shape[1:]), dtype=np.int64)
            m_c = np.zeros_like(t_c)
            np.add.at(t_c, cluster_of, t_tab)
            np.add.at(m_c, cluster_of, m_tab)
            t_tab, m_tab = t_c, m_c
        idx = np.nonzero(t_tab)
        m, t = m_tab[idx].astype(np.float64), t_tab[idx].astype(np.float64)
        label = idx[1] if factor == "variant" else idx[-1]
        prefix = idx[:1] if (factor, unit) != ("judge", "block") else idx[:2]
    change = np.ones(m.size, dtype=bool)
    if m.size:
        change[1:] = False
        for p in prefix:
            change[1:] |= p[1:] != p[:-1]
    blocks = np.cumsum(change, dtype=np.int64) - 1
    return m, t, label.astype(np.int64), blocks


def _dense_state(view: reduce_codes.KeyedCodes) -> np.ndarray | None:
    """:func:`_judgment_states` of the view, cached on it (``census:judgments``)."""
    return view.cached("census:judgments", lambda: _judgment_states(view))  # type: ignore[no-any-return]


def _view_arrays(view: reduce_codes.KeyedCodes, factor: str, unit: str
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`missingness_units` of the view's judgments from the dense judgment table (cached
    on the view as ``census:judgments``), or None when it cannot be built."""
    state = _dense_state(view)
    if state is None:
        return None
    return _dense_arrays(state, factor, unit, _scenario_clusters(view))


def _scenario_clusters(view: reduce_codes.KeyedCodes) -> np.ndarray | None:
    """Each scenario code's cluster code (:func:`workbench.ingest.clusters.cluster_of` of the
    view's codes), once per view (``census:cluster_of``); None when the cluster is the scenario."""
    if not view.own_clusters:
        return None
    return view.cached("census:cluster_of", lambda: clusters.cluster_of(  # type: ignore[no-any-return]
        view.codes("scenario"), view.codes("cluster"), len(view.levels("scenario"))))


def _coded_arrays(coded: CodedUnits, factor: str, unit: str
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`missingness_units` on :func:`_coded_units`: the same units, codes (monotone in
    the labels) and order as :func:`_frame_units`, hence the same numbers (the item number
    stands for the trial: it orders the trials of a (scenario, variant) as their codes do)."""
    judge, missing, item, item_keys, item_cluster = coded
    keys = item_keys.astype(np.int64)
    return missingness_units(missing, keys[item, 0], keys[item, 1], item, judge, factor, unit,
                             cluster=None if item_cluster is None else item_cluster[item])


METHODS = {
    ("variant", "block"): "block_permutation_within_scenario",
    ("judge", "block"): "judge_block_permutation_within_scenario_variant",
    ("variant", "trial"): "item_permutation_within_scenario",
    ("judge", "trial"): "judge_permutation_within_item",
}
"""The recorded ``method`` of each design-respecting test (factor, unit); the exact form
(full enumeration) adds ``_exact``, the large-sample form (designs above
:data:`workbench.stats.PERMUTATION_EXACT_BUDGET` units x permutations) ``_asymptotic``."""
SUFFIXES = {"block_permutation": "", "block_permutation_exact": "_exact",
            "block_permutation_asymptotic": "_asymptotic"}


def method_name(factor: str, res: stats.TestResult, unit: str = "block") -> str:
    """The recorded ``method`` of a design-respecting test's result (exact, Monte-Carlo or
    large-sample; :data:`METHODS`)."""
    if res.method == "undefined":
        return "undefined"
    return METHODS[(factor, unit)] + SUFFIXES[res.method]


def cannot_reject(min_p: float | None, alpha: float) -> bool:
    """True when the design's smallest attainable p exceeds ``alpha``: the test cannot reject,
    whatever the data (too few blocks), which is not the same as finding nothing."""
    return min_p is not None and min_p > alpha


def missingness_tests(rows: pl.DataFrame, cfg: Config,
                      view: reduce_codes.KeyedCodes | None = None) -> pl.DataFrame:
    """Does the missing-score rate depend on the judge? on the variant? (design-respecting tests):
    the :data:`workbench.common.schemas.MISSINGNESS_TESTS` table, one row per factor.

    Judgments of one block move together (a variant that crashes on a scenario loses every
    trial and every judge there; a failed render drops every judge's score), so neither
    factor is tested on rows as if they were independent. Both tests use Pearson's
    chi-square of the factor x [missing, scored] table of judgments as the statistic, with
    the null distribution of a within-block permutation of the labels of whole units
    (:func:`missingness_units`; ``unit`` names the unit, ``missingness.unit`` in the config
    chooses it):

    * ``variant``: whole (scenario, variant) blocks (every trial and judge) keep their
      judgments and their variant labels are permuted among the blocks of the same scenario
      (``method``: ``block_permutation_within_scenario``); with ``missingness: {unit:
      trial}``, (scenario, variant, trial) items (``item_permutation_within_scenario``);
    * ``judge``: within each (scenario, variant) the judges' labels of their whole blocks
      (a judge's judgments over all trials) are permuted
      (``judge_block_permutation_within_scenario_variant``); with ``unit: trial``, the judges'
      labels within each item (``judge_permutation_within_item``; with two judges McNemar's
      exact test on the items where one judge lost its score).

    A design with at most :data:`workbench.stats.PERMUTATION_ENUMERATION_LIMIT` distinct
    arrangements gets the exact p by enumeration (``method`` suffix ``_exact``,
    ``permutations`` null); above :data:`workbench.stats.PERMUTATION_EXACT_BUDGET` units x
    permutations (large designs) the large-sample form of the same permutation distribution
    (:func:`workbench.stats.block_permutation_asymptotic`; its ``statistic`` is the quadratic
    form Q; suffix ``_asymptotic``); otherwise :data:`PERMUTATIONS` Monte-Carlo permutations.

    ``blocks``/``informative_blocks``/``min_p`` say what the test could see
    (:func:`unit_design`): with few blocks the smallest attainable p may exceed ``alpha``,
    and then ``cannot_reject`` is true: the test cannot find a dependence, whatever the data.

    ``classic_p`` is the rows-as-independent test (:func:`workbench.stats.contingency_test`),
    kept beside it for comparison only: it ignores the design (the calibration measured it
    rejecting 10-35 % of MCAR data sets with item-level failures) and is never the finding.
    """
    out = []
    if view is None:
        view = reduce_codes.KeyedCodes(rows, cfg)
    # the judgments as a dense table of the design (cells x scenarios x trials, nothing of the
    # rows' length) when the design allows; else their codes grouped; else the key texts
    units: pl.DataFrame | CodedUnits | reduce_codes.KeyedCodes = view
    if _dense_state(view) is None:
        coded = _coded_units(view)
        units = judgment_units(rows, cfg) if coded is None else coded
    cells = _cells(rows, cfg, view)
    unit = cfg.missingness_unit
    for factor in ("judge", "variant"):
        c = _derive(_sum_to(cells, [factor]))
        table = np.array([[m, n - m] for m, n in c.select("missing", "judgments").iter_rows()], dtype=float)
        classic = stats.contingency_test(table, seed=cfg.seed)
        seed = stats.derive_seed(cfg.seed, "missingness", factor)
        res, design = design_missingness(units, factor, seed, unit)
        rates = {
            str(level): (m / n if n else None)
            for level, m, n in c.select(factor, "missing", "judgments").iter_rows()
        }
        out.append({
            "factor": factor,
            "statistic": res.statistic,
            "p_value": res.p_value,
            "method": method_name(factor, res, unit),
            # the Monte-Carlo permutations drawn; null when none were (full enumeration, the
            # large-sample form, or an undefined test): results.json records what was used
            "permutations": PERMUTATIONS if res.method == "block_permutation" else None,
            **design,
            "cannot_reject": cannot_reject(design["min_p"], cfg.alpha),
            "classic_p": classic.p_value,
            "classic_method": classic.method,
            "levels": len(rates),
            "missing_rates": rates,
        })
    return schemas.frame(out, schemas.MISSINGNESS_TESTS)


def scale_checks(rows: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """Per judge: how many numeric headline values fall outside the rubric (the
    :data:`workbench.common.schemas.SCALE_CHECKS` table).

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
