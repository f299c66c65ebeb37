"""Paired analyses: judge offsets on shared items, variant contrasts, power, repetition.

A story about judge severity that was not computed from paired rows is a story: the
offset between two judges is the mean difference on the items both scored validly. Items
only one judge scored are counted per judge, because that is where a missing-data story
hides. Variant contrasts are reported unpaired (difference of valid means, the estimator a
scorecard implies) and paired on matched units (Miller 2024), each with a clustered
interval, a leave-one-scenario-out range, Holm-adjusted p-values and the minimum detectable
effect the data could ever have shown.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from workbench import stats
from workbench.analysis.scorecard import cell_rows, subset_filter
from workbench.common import schemas
from workbench.common.config import Config
from workbench.ingest import clusters, selection
from workbench.reduce import codes as reduce_codes
from workbench.reduce.sufficient import JointBootstrap

if TYPE_CHECKING:  # the census imports nothing of this module; only the annotation needs it
    from workbench.analysis import census as census_types

ITEM = ["scenario", "variant", "trial"]


def _valid(rows: pl.DataFrame, field: str, columns: list[str]) -> pl.DataFrame:
    """``columns`` of the cell rows with a valid ``field``: one lazy filter and select, so only
    those columns of the matching rows are copied (never every column of the row table)."""
    return rows.lazy().filter(selection.in_cells() & pl.col(field).is_not_null()).select(columns).collect()


def _narrow(rows: pl.DataFrame, cfg: Config, field: str) -> pl.DataFrame:
    """The cell rows, with only the columns the paired records read (keys, ``field``, the
    subsets' fields): the same rows in the same order, so every record is unchanged, but
    each of the records' filters and sorts copies a few columns instead of the whole table."""
    return cell_rows(selection.columns_read(rows, cfg, ["bucket", *ITEM, "judge", field]))


# --------------------------------------------------------------------------- prepared tables

KEYS = ("scenario", "variant", "trial", "judge")
_CODE = {"scenario": "_s", "variant": "_v", "trial": "_t", "judge": "_j"}


class _Coded:
    """The cell rows once, with integer key codes: what every paired record filters.

    ``names[k]``: the distinct values of key ``k`` in code point order (Python's string
    order, which is polars' sort order and ``np.unique``'s), and column ``_s``/``_v``/``_t``/``_j``
    the position of each row's key in it. A code is therefore monotone in the string order of
    its key: the ``workbench.stats`` functions, which code cluster labels with ``np.unique``,
    give the same codes (so the same numbers) for scenario codes as for scenario names, and a
    sort by codes is the sort by names. ``frame`` keeps the input order of the rows (polars
    group means, which sum in row order, are then those of the row table); it holds the codes,
    the score fields and the subsets' fields only. ``where``: only the cell rows where it holds.
    """

    def __init__(self, rows: pl.DataFrame, cfg: Config, fields: list[str], where: pl.Expr | None = None) -> None:
        subset_fields = [f for spec in cfg.subsets.values() for f in spec]
        keep = list(dict.fromkeys(c for c in [*KEYS, *fields, *subset_fields] if c in rows.columns))
        # clusters of their own (config cluster:) are coded beside the keys: every clustered
        # statistic of a record is by cluster, the pairing by scenario
        own = cfg.cluster is not None and "cluster" in rows.columns
        cols = (*KEYS, "cluster") if own else KEYS
        # the codes from whole columns, filtered to the cell rows afterwards (a filter first
        # would copy the four key texts: +0.4 GB at 5M rows); the levels are the cell rows'
        # distinct keys in code point order, as a sort of their unique values gives
        codes, levels, kept = reduce_codes.coded_keys(
            rows, selection.in_cells() if where is None else selection.in_cells() & where, cols,
            extra=[pl.col(c) for c in keep if c not in KEYS or c in subset_fields],
            narrow=reduce_codes.NARROW_KEYS)
        self.names: dict[str, list[str]] = {}
        for k in KEYS:
            if levels[k] and levels[k][0] is None:  # ingest makes a line without a key malformed
                raise ValueError(f"a cell row has no {k}")
            self.names[k] = levels[k]
        # each scenario's cluster code (positions in names["cluster"], monotone in the cluster
        # names); the identity when the cluster is the scenario
        if own:
            if levels["cluster"] and levels["cluster"][0] is None:
                raise ValueError("a cell row has no cluster")
            self.names["cluster"] = levels["cluster"]
            self.cluster_of = clusters.cluster_of(codes["scenario"], codes["cluster"], len(levels["scenario"]))
        else:
            self.names["cluster"] = self.names["scenario"]
            self.cluster_of = np.arange(len(levels["scenario"]), dtype=np.int64)
        # the key columns as codes only (their text is kept when a subset reads it): the
        # scenario's int32, the variant's, trial's and judge's a byte each up to 256 labels
        # (coded_keys' narrow): 15 bytes a cell row with the headline, not 24 (0.18 GB at 20M
        # generated rows, and as much again in the scope's filtered copy of it)
        self.frame: pl.DataFrame | None = kept.with_columns(
            [pl.Series(_CODE[k], codes[k]) for k in KEYS])
        self.own_clusters = own
        del codes
        self.size = {k: max(len(v), 1) for k, v in self.names.items()}
        self._joint: tuple[int, np.ndarray] | None = None

    def code(self, key: str, name: str | None) -> int | None:
        """The code of ``name`` in key ``key`` (None when no cell row has it)."""
        names = self.names[key]
        i = bisect.bisect_left(names, name) if name is not None else len(names)
        return i if i < len(names) and names[i] == name else None

    def joint_codes(self, boot: JointBootstrap, cluster_codes: np.ndarray) -> np.ndarray:
        """Positions in ``boot``'s cluster index of cluster codes (what ``add_values`` codes
        cluster names to; the clusters are the scenarios unless the config names a ``cluster:``)."""
        if self._joint is None or self._joint[0] != id(boot):
            self._joint = (id(boot), boot.codes_of(np.array(self.names["cluster"], dtype=object)))
        return self._joint[1][cluster_codes]

    def clusters_of(self, scenario_codes: np.ndarray) -> np.ndarray:
        """The cluster codes of scenario codes (the same array when clusters are scenarios)."""
        if not self.own_clusters:
            return scenario_codes
        return self.cluster_of[scenario_codes]


def _run_of(a: np.ndarray, code: int) -> slice:
    """The run of ``code`` in the ascending array ``a``: ``slice(searchsorted left, right)``.
    The code is given as ``a``'s own type: with a Python int (or an int64 against int32
    codes) numpy converts the whole array to the common type first, 7.5 ms of CPU per call
    on a 5M-row int32 array (measured 2026-12-03) instead of microseconds."""
    c = np.asarray(code, dtype=a.dtype) if a.dtype.kind in "iu" else code
    return slice(int(np.searchsorted(a, c, "left")), int(np.searchsorted(a, c, "right")))


def _radix(coded: _Coded, cols: list[tuple[str, np.ndarray]]) -> list[np.ndarray]:
    """Sort keys for ``np.lexsort`` (least significant first) equal in order to the code
    columns ``cols`` (most significant first): one mixed-radix key of them when it fits in
    int64 (int32 when it fits there), else the columns themselves."""
    widths = [coded.size[k] for k, _ in cols]
    width = float(np.prod([float(w) for w in widths]))
    if width >= 2.0**62:
        return [c for _, c in reversed(cols)]
    # int32 when every key fits: the same values, so the same stable order, in half the bytes
    # (the key and its sorted copy are row-sized: 0.12 GB less at 20M generated rows)
    key = np.zeros(cols[0][1].size, dtype=reduce_codes.index_dtype(width))
    for (_, c), w in zip(cols, widths, strict=True):
        key *= w
        key += c
    return [key]


def _lexsort(x: np.ndarray, keys: list[np.ndarray]) -> np.ndarray:
    """``np.lexsort((x, *keys))``: by ``keys`` (the last most significant), then ``x``, ties
    in position order. With one key, a stable sort of it, and ``x`` sorted only within the
    runs of equal keys (a judgment with several valid rows: few or none)."""
    if len(keys) != 1 or x.size < 2:
        return np.lexsort((x, *keys))
    key = keys[0]
    order = np.argsort(key, kind="stable")
    ks = key[order]
    tie = ks[1:] == ks[:-1]
    if tie.any():
        run = np.zeros(ks.size, dtype=bool)  # rows in a run of equal keys (contiguous)
        run[1:] |= tie
        run[:-1] |= tie
        sub = order[run]  # by key, then position
        order[run] = sub[np.lexsort((x[sub], ks[run]))]
    return order


class _Scope:
    """The valid values of one field in one scope (a subset, optionally one judge), coded.

    ``sc``/``vr``/``tr``/``jd``/``x``: scenario, variant, trial, judge codes and values in the
    canonical order the records use (``cl``: each row's cluster code, the unit of every
    clustered statistic; ``sc`` itself when clusters are scenarios), variant first (by variant, scenario, trial, judge,
    value): a variant's rows are the slice ``span(variant)``, in the order of the whole
    scope's sort by (scenario, variant, trial, judge, value) restricted to that variant.
    """

    def __init__(self, coded: _Coded, cfg: Config, fld: str, subset: str | None,
                 judge: str | None = None, release: bool = False) -> None:
        self.coded = coded
        pred = subset_filter(cfg, subset) & pl.col(fld).is_not_null()
        if judge is not None:
            jc = coded.code("judge", judge)
            pred = pred & (pl.col("_j") == jc) if jc is not None else pl.lit(False)
        self._pred, self._fld = pred, fld
        f = self.rows()
        if release:  # the last scope built from the coded frame: freed before the sorts
            coded.frame = None
        # the contrasts' unit means (the config's pairing) now, from these rows: the grouping
        # (0.2 GB at 5M rows inside polars) then comes before the sorted arrays exist, not on
        # top of them and the judge offsets' orders
        self._units: dict[bool, tuple[np.ndarray, ...]] = {
            cfg.trials_matched: self._unit_means(f, cfg.trials_matched)}
        sc, vr, tr, jd = (f[c].to_numpy() for c in ("_s", "_v", "_t", "_j"))
        x = f["x"].to_numpy().astype(np.float64, copy=False)
        del f
        # the sort by (variant, scenario, trial, judge, value): one mixed-radix key of the
        # four codes orders as they do, so a two-key stable sort gives the same permutation
        order = _lexsort(x, _radix(coded, [("variant", vr), ("scenario", sc), ("trial", tr), ("judge", jd)]))
        # the variant, trial and judge codes are the frame's, in their narrowest types
        # (reduce_codes.NARROW_KEYS: a byte each for up to 256 labels; every use widens them or
        # compares): 9 bytes a valid value less than int32, 0.13 GB at 20M generated rows
        self.sc, self.vr, self.tr, self.jd, self.x = sc[order], vr[order], tr[order], jd[order], x[order]
        self.cl = coded.clusters_of(self.sc)
        self._by_judge: np.ndarray | None = None
        self._judges_sorted: np.ndarray | None = None
        self._orders: dict[tuple[str, bool], tuple[np.ndarray, np.ndarray]] = {}
        self._columns: dict[tuple[int, str], int] = {}
        self._components: dict[str, stats.SideComponents] = {}
        self._sides: dict[str, stats.ClusterSide] = {}

    def rows(self) -> pl.DataFrame:
        """The scope's rows of the coded cell rows (codes and value ``x``), in input order (the
        group means of :meth:`units` sum each group in the row table's order). Made again
        when asked for, not kept: the sorted arrays hold the same values, and a kept copy
        was 0.16 GB at 5M rows."""
        if self.coded.frame is None:
            raise RuntimeError("the coded cell rows were released (PairedTables.prepare): "
                               "only the scopes prepared before can be read")
        return self.coded.frame.filter(self._pred).select("_s", "_v", "_t", "_j", pl.col(self._fld).alias("x"))

    def column(self, boot: JointBootstrap, variant: str) -> int:
        """The bootstrap column of a variant's values (registered once per bootstrap: every
        contrast of the variant registers the same column)."""
        key = (id(boot), variant)
        if key not in self._columns:
            sp = self.span(variant)
            self._columns[key] = boot.add_coded(self.coded.joint_codes(boot, self.cl[sp]), self.x[sp])
        return self._columns[key]

    def cluster_side(self, variant: str) -> stats.ClusterSide:
        """:func:`workbench.stats.cluster_side` of a variant's values by cluster code, once."""
        if variant not in self._sides:
            sp = self.span(variant)
            self._sides[variant] = stats.cluster_side(self.x[sp], self.cl[sp], self.coded.size["cluster"])
        return self._sides[variant]

    def components(self, variant: str) -> stats.SideComponents:
        """:func:`workbench.stats.side_variance_components` of a variant's values, with trial
        units (scenario, variant, trial) coded in the order of their names; once per variant."""
        if variant not in self._components:
            sp, size = self.span(variant), self.coded.size
            trial_unit = (self.sc[sp].astype(np.int64) * size["variant"] + self.vr[sp]) * size["trial"] + self.tr[sp]
            self._components[variant] = stats.side_variance_components(self.x[sp], self.sc[sp], trial_unit)
        return self._components[variant]

    def span(self, variant: str) -> slice:
        code = self.coded.code("variant", variant)
        if code is None:
            return slice(0, 0)
        return _run_of(self.vr, code)

    def units(self, trials_matched: bool) -> tuple[np.ndarray, ...]:
        """Per (variant, scenario[, trial], judge) unit: (variant, scenario, unit key, mean),
        sorted by variant then unit key (the unit's scenario[, trial], judge order). The means
        are polars group means of the rows in input order (the plain version's sums)."""
        if trials_matched not in self._units:
            self._units[trials_matched] = self._unit_means(self.rows(), trials_matched)
        return self._units[trials_matched]

    def _unit_means(self, rows: pl.DataFrame, trials_matched: bool) -> tuple[np.ndarray, ...]:
        """:meth:`units` from the scope's rows (:meth:`rows`)."""
        by = ["_v", "_s", "_t", "_j"] if trials_matched else ["_v", "_s", "_j"]
        size = self.coded.size
        widths = [size[k] for k in (("variant", "scenario", "trial", "judge") if trials_matched
                                    else ("variant", "scenario", "judge"))]
        if float(np.prod([float(w) for w in widths])) < 2.0**62:
            # one int64 key (mixed radix of the codes, in their order): the same groups,
            # each the mean of its rows in row order, sorted by a numpy sort of the keys
            k = pl.lit(0, dtype=pl.Int64)
            for c, w in zip(by, widths, strict=True):
                k = k * w + pl.col(c).cast(pl.Int64)
            g = rows.group_by(k.alias("k")).agg(pl.col("x").mean().alias("m"))
            kk = g["k"].to_numpy()
            order = np.argsort(kk, kind="stable")
            kk, m = kk[order], g["m"].to_numpy()[order]
            digits, rest = [], kk
            for w in reversed(widths):  # the codes back, least significant first
                rest, d = np.divmod(rest, w)
                digits.append(d)
            codes = digits[::-1]  # by's columns
            v, s, j = codes[0].astype(reduce_codes.narrowest_unsigned(size["variant"] - 1)), codes[1], codes[-1]
            key = (s * size["trial"] + codes[2] if trials_matched else s) * size["judge"] + j
            return v, s, key, m
        # int64 key columns, as the codes were before they were held as int32
        u = (rows.with_columns(pl.col(by).cast(pl.Int64))
             .group_by(by).agg(pl.col("x").mean().alias("m")).sort(by))
        v, s, j = u["_v"].to_numpy(), u["_s"].to_numpy(), u["_j"].to_numpy()
        key = s * size["trial"] + u["_t"].to_numpy() if trials_matched else s
        key = key * size["judge"] + j
        return v, s, key, u["m"].to_numpy()

    def unit_order(self, variant: str, trials_matched: bool) -> tuple[np.ndarray, np.ndarray]:
        """A variant's unit means (:meth:`units`, key order) and their stable argsort, once."""
        key = (variant, trials_matched)
        if key not in self._orders:
            v, _, _, mean = self.units(trials_matched)
            code = self.coded.code("variant", variant)
            sp = _run_of(v, code) if code is not None else slice(0, 0)
            self._orders[key] = (mean[sp], np.argsort(mean[sp], kind="stable"))
        return self._orders[key]

    def by_judge(self) -> np.ndarray:
        """Row order by judge, then scenario, variant, trial, value (positions in ``sc``...)."""
        if self._by_judge is None:
            order = _lexsort(self.x, _radix(self.coded, [
                ("judge", self.jd), ("scenario", self.sc), ("variant", self.vr), ("trial", self.tr)]))
            # kept through both stages: int32 positions when they fit (half of argsort's int64)
            self._by_judge = order.astype(np.int32) if order.size < 2**31 else order
        return self._by_judge

    def judges_sorted(self) -> np.ndarray:
        """The judge codes in :meth:`by_judge` order (ascending)."""
        if self._judges_sorted is None:
            self._judges_sorted = self.jd[self.by_judge()]
        return self._judges_sorted

    def item_codes(self, idx: np.ndarray) -> np.ndarray:
        """Item (scenario, variant, trial) codes of rows ``idx``, monotone in that order."""
        size = self.coded.size
        return (self.sc[idx].astype(np.int64) * size["variant"] + self.vr[idx]) * size["trial"] + self.tr[idx]


class PairedTables:
    """The headline's cell rows coded once (:class:`_Coded`) and their prepared scopes (one
    :class:`_Scope` per subset), for the paired stages of a run: :func:`judge_offsets`,
    :func:`contrasts` and :func:`repetition_consistency` given the same ``tables`` share them
    instead of each coding the rows again (the same records: each stage builds exactly these
    when given none). Parts are built when first asked for. They hold a few arrays of the
    cell rows' length: drop them as soon as the stages that share them are done (kept alive
    through ``contrast_confounding``, whose judgment units are large too, they raised the 1M
    run's peak RSS from 0.92-0.96 to 1.10 GB)."""

    def __init__(self, rows: pl.DataFrame, cfg: Config) -> None:
        self.rows, self.cfg = rows, cfg
        self._narrow: pl.DataFrame | None = None
        self._coded: _Coded | None = None
        self._scopes: dict[str | None, _Scope] = {}

    @classmethod
    def of(cls, rows: pl.DataFrame, cfg: Config, tables: PairedTables | None) -> PairedTables:
        """``tables`` when given (checked to be of these rows and config), else new ones."""
        if tables is None:
            return cls(rows, cfg)
        if tables.rows is not rows or tables.cfg is not cfg:
            raise ValueError("paired tables of other rows or another config")
        return tables

    def narrow(self) -> pl.DataFrame:
        """:func:`_narrow` of the rows on the headline."""
        if self._narrow is None:
            self._narrow = _narrow(self.rows, self.cfg, self.cfg.headline)
        return self._narrow

    def coded(self) -> _Coded:
        """The coded cell rows (headline and subset fields)."""
        if self._coded is None:
            self._coded = _Coded(self.rows, self.cfg, [self.cfg.headline])
        return self._coded

    def prepare(self) -> PairedTables:
        """Every scope :func:`judge_offsets` and :func:`contrasts` read (all scenarios and each
        subset) built now, then the coded cell rows' frame released: the scopes hold their
        sorted arrays and the unit means of the config's pairing, and neither stage reads the
        frame again. At 20M generated rows the frame (four int32 codes and the headline, about
        24 bytes a cell row) held 0.4 GB through both stages; the last scope releases it as soon
        as it has read its rows, before its sorts and unit means. A scope not built before cannot
        be built after (it raises)."""
        todo = [None, *self.cfg.subsets]
        for i, subset in enumerate(todo):
            if subset not in self._scopes:  # the last one releases the frame as soon as it is read
                self._scopes[subset] = _Scope(self.coded(), self.cfg, self.cfg.headline, subset,
                                              release=i == len(todo) - 1)
        self.coded().frame = None
        return self

    def forget_judge_orders(self) -> None:
        """Free the scopes' judge orders (:meth:`_Scope.by_judge`, :meth:`_Scope.judges_sorted`):
        only :func:`judge_offsets` reads them, and they are 5 bytes a valid value (75 MB at 20M
        generated rows) through the contrasts otherwise. Asked again, they are made again."""
        for scope in self._scopes.values():
            scope._by_judge = scope._judges_sorted = None

    def scope(self, subset: str | None) -> _Scope:
        """The headline's valid values in ``subset`` (all judges), prepared once."""
        if subset not in self._scopes:
            self._scopes[subset] = _Scope(self.coded(), self.cfg, self.cfg.headline, subset)
        return self._scopes[subset]


# --------------------------------------------------------------------------- judge offsets


def judge_pairs(rows: pl.DataFrame, cfg: Config, judge_a: str, judge_b: str,
                field: str | None = None) -> pl.DataFrame:
    """Items (scenario, variant, trial) both judges scored validly: columns a, b, diff (a - b).

    Sorted by item, then a, then b: an item with several rows of a judge (conflicting
    re-runs) gives every combination, in value order, so the order (hence the float sums of
    the records) does not depend on the order of input lines."""
    fld = field or cfg.headline
    v = _valid(rows, fld, [*ITEM, "judge", fld])
    a = v.filter(pl.col("judge") == judge_a).select(*ITEM, pl.col(fld).alias("a"))
    b = v.filter(pl.col("judge") == judge_b).select(*ITEM, pl.col(fld).alias("b"))
    return (a.join(b, on=ITEM, how="inner").with_columns((pl.col("a") - pl.col("b")).alias("diff"))
            .sort([*ITEM, "a", "b"]))


def _kappa_labels(a: np.ndarray, b: np.ndarray, cfg: Config) -> np.ndarray | None:
    """The category scale for weighted kappa: every integer of the value range.

    Quadratic weights are (i - j)^2 over category positions; with only the observed
    values as categories, a scale gap (judges using 3 and 7 but nothing between) would
    count as one step. When every value is an integer the whole integer range of the
    rubric is the scale, so the weight is the squared score difference; otherwise (half
    points, averaged scores) the observed values are the categories.
    """
    both = np.concatenate([a, b])
    if both.size == 0 or not np.all(both == np.round(both)):
        return None
    lo, hi = cfg.value_range
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi - lo > KAPPA_MAX_CATEGORIES:
        # a rubric far wider than any scale (e.g. max 1e308): the observed integer range; the
        # quadratic kappa is the same (categories nobody used add nothing to either sum)
        lo, hi = both.min(), both.max()
        if hi - lo > KAPPA_MAX_CATEGORIES:
            return None
    lo, hi = min(math.floor(lo), both.min()), max(math.ceil(hi), both.max())
    return np.arange(lo, hi + 1, dtype=float)


#: the widest integer scale weighted kappa enumerates (wider: the observed values are the categories)
KAPPA_MAX_CATEGORIES = 10_000


def _offset_record(rows: pl.DataFrame, cfg: Config, ja: str, jb: str, variant: str | None,
                   subset: str | None, seed_offset: int, joint: JointBootstrap | None = None) -> dict[str, Any]:
    """One judge offset ja - jb on ``rows`` (see :func:`judge_offsets`)."""
    coded = _Coded(rows, cfg, [cfg.headline])
    boot = joint if joint is not None else JointBootstrap.for_rows(rows, cfg)
    rec = _offset_from(_Scope(coded, cfg, cfg.headline, subset), cfg, ja, jb, variant, subset, boot)
    if joint is None:
        boot.run()
    return rec


def _judge_rows(scope: _Scope, judge: str, variant: str | None) -> np.ndarray:
    """Positions (in ``scope``'s arrays) of the judge's valid rows, by item then value."""
    coded = scope.coded
    jc = coded.code("judge", judge)
    vc = coded.code("variant", variant) if variant is not None else None
    if jc is None or (variant is not None and vc is None):
        return np.zeros(0, dtype=np.intp)
    order = scope.by_judge()
    if vc is not None:
        # the variant's rows are a slice of the canonical order (by scenario, trial, judge,
        # value within it): the judge's are by item then value, as in the judge order
        sp = scope.span(variant)  # type: ignore[arg-type]
        return np.flatnonzero(scope.jd[sp] == jc) + sp.start  # type: ignore[no-any-return]
    jd = scope.judges_sorted()
    return order[_run_of(jd, jc)]


def _distinct_sorted(k: np.ndarray) -> np.ndarray:
    """``np.unique`` of an ascending array (the same values), in one pass: numpy's unique
    hashes or sorts it again (2 s of the 1M offsets' 9 s went there)."""
    return k[np.r_[True, k[1:] != k[:-1]]] if k.size else k


def _offset_pairs(scope: _Scope, ja: str, jb: str, variant: str | None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """The pairs of :func:`judge_pairs` (the same arrays in the same order) by an integer
    join of the two judges' rows: (a, b, cluster codes, items only a has, items only b has).
    The join's index arrays are freed as soon as they are used: a judge's rows are half the
    cell rows, and the join's arrays together were 0.2 GB at 5M rows."""
    ia, ib = _judge_rows(scope, ja, variant), _judge_rows(scope, jb, variant)
    ka, kb = scope.item_codes(ia), scope.item_codes(ib)  # ascending; ties by value
    items_a, items_b = _distinct_sorted(ka), _distinct_sorted(kb)
    both = int(np.isin(items_a, items_b, assume_unique=True).sum())
    only_a, only_b = int(items_a.size) - both, int(items_b.size) - both
    del items_a, items_b
    # the inner join: every row of a with every row of b of its item, by (item, a, b)
    lo = np.searchsorted(kb, ka, "left")
    cnt = np.searchsorted(kb, ka, "right")
    cnt -= lo
    del ka, kb
    pa = np.repeat(np.arange(cnt.size), cnt)
    pb = np.arange(pa.size) + np.repeat(lo - np.cumsum(cnt) + cnt, cnt)
    del lo, cnt
    ia, ib = ia[pa], ib[pb]
    del pa, pb
    return scope.x[ia], scope.x[ib], scope.cl[ia], only_a, only_b


def _offset_from(scope: _Scope, cfg: Config, ja: str, jb: str, variant: str | None,
                 subset: str | None, boot: JointBootstrap) -> dict[str, Any]:
    """The offset record from a prepared scope, on the pairs of :func:`_offset_pairs`."""
    fld = cfg.headline
    a, b, sc, only_a, only_b = _offset_pairs(scope, ja, jb, variant)
    d = a - b
    ps = stats.paired_summary(d, sc, cfg.confidence, bootstrap=False)
    # all 2^G sign patterns when G <= 12; else the run's resample count of random ones
    # (bootstrap.resamples within bootstrap.budget, as the joint bootstrap), recorded; the
    # large-sample form above stats.SIGN_FLIP_ASYMPTOTIC_CLUSTERS balanced clusters
    flip = stats.sign_flip(d, sc, boot.resamples, stats.derive_seed(
        cfg.seed, "sign_flip", ja, jb, variant, subset, fld)) if ps.n else None
    flip_method = flip.method if flip is not None and flip.method != "undefined" else None
    rec = {
        "judge_a": ja, "judge_b": jb, "variant": variant, "subset": subset, "field": fld,
        "pairs": ps.n, "clusters": ps.clusters, "cluster": cfg.cluster_name, "only_a": only_a, "only_b": only_b,
        # headline: CR2 with Bell-McCaffrey df (its size holds with unequal clusters); CR1 beside
        "mean_diff": ps.mean, "ci_low": ps.ci_low_cr2, "ci_high": ps.ci_high_cr2,
        "ci_method": stats.CR2_METHOD if ps.ci_low_cr2 is not None else None,
        "p": ps.p_cr2, "p_method": stats.CR2_METHOD if ps.p_cr2 is not None else None,
        "se": ps.se_cr2, "df": ps.df_cr2,
        "cr1_se": ps.se_clustered, "cr1_df": ps.df_clustered,
        "cr1_ci_low": ps.ci_low_clustered, "cr1_ci_high": ps.ci_high_clustered, "cr1_p": ps.p_clustered,
        "cr1_method": "cluster_t" if ps.ci_low_clustered is not None else None,
        "p_sign_flip": flip.p_value if flip is not None else None,
        "sign_flip_method": flip_method,
        "sign_flip_resamples": boot.resamples if flip_method == "monte_carlo" else None,
        "boot_low": ps.boot_low, "boot_high": ps.boot_high,
        "t_ci_low": ps.ci_low, "t_ci_high": ps.ci_high,
        "clustered_ci_low": ps.ci_low_clustered, "clustered_ci_high": ps.ci_high_clustered,
        "ignores_clustering": ["t_ci_low", "t_ci_high", "wilcoxon_p"],
        "wilcoxon_p": ps.wilcoxon_p, "diff_counts": ps.diff_counts,
        "exact_agreement": stats.exact_agreement(a, b) if ps.n else None,
        "within_one": stats.within_one(a, b) if ps.n else None,
        "kappa_quadratic": stats.kappa_quadratic(a, b, _kappa_labels(a, b, cfg)) if ps.n else None,
        "krippendorff_alpha": stats.krippendorff_alpha(a, b) if ps.n else None,
        "spearman": stats.spearman(a, b) if ps.n else None,
    }
    # boot_low/boot_high: the joint bootstrap of the per-scenario sums of within-item
    # differences (weighted mean difference), on the run's scenario weights
    boot.request(rec, boot.add_coded(scope.coded.joint_codes(boot, sc), d),
                 where=f"judge_offset:{ja}-{jb}/{variant or ''}/{subset or ''}/{fld}")
    return rec


def judge_offsets(rows: pl.DataFrame, cfg: Config,
                  progress: Callable[[int | None], None] | None = None,
                  joint: JointBootstrap | None = None, tables: PairedTables | None = None,
                  judges: Sequence[str] | None = None, variants: Sequence[str] | None = None) -> pl.DataFrame:
    """Every judge pair (sorted by name, offset = first minus second), all variants then each:
    the :data:`workbench.common.schemas.JUDGE_OFFSETS` table, one row per record.

    ``ci_low``/``ci_high`` (the headline) is the CR2 clustered t interval with Bell-McCaffrey
    degrees of freedom ``df`` (``ci_method`` ``cluster_cr2_bm``, :func:`workbench.stats.cluster_mean_cr2`;
    ``se`` its standard error), ``p`` its two-sided p-value: its size holds when scenarios
    keep unequal numbers of pairs, where the CR1 with G - 1 df rejected too often. The CR1
    beside it: ``cr1_ci_*``, ``cr1_p``, ``cr1_se``, ``cr1_df`` = G - 1 (``cr1_method``
    ``cluster_t``; ``clustered_ci_*`` repeats ``cr1_ci_*``), and ``p_sign_flip`` the sign-flip
    randomization p over scenarios
    (:func:`workbench.stats.sign_flip`, ``sign_flip_method``: ``exact``, all 2^G patterns
    when G <= 12; ``monte_carlo``, ``sign_flip_resamples`` random ones, the run's resample
    count under ``bootstrap.budget``; ``asymptotic``, the normal form of the same
    distribution, above ``stats.SIGN_FLIP_ASYMPTOTIC_CLUSTERS`` clusters none of which holds
    more than ``stats.SIGN_FLIP_ASYMPTOTIC_SHARE`` of its variance);
    ``boot_low``/``boot_high`` the cluster bootstrap percentile interval, beside it (it
    under-covered: 74-90 % in the calibration).
    ``t_ci_*`` (paired t) and ``wilcoxon_p`` treat pairs as independent: they ignore
    clustering (listed in ``ignores_clustering``) and are never headlined.
    ``only_a``/``only_b``: items only that judge scored validly.
    """
    judge_pairs = list(itertools.combinations(selection.cell_values(rows, "judge") if judges is None else judges, 2))
    variants, _ = selection.offset_variants(selection.cell_values(rows, "variant") if variants is None else variants,
                                            cfg, len(judge_pairs))
    tables = PairedTables.of(rows, cfg, tables)
    out = []
    boot = joint if joint is not None else JointBootstrap.for_rows(tables.narrow(), cfg)
    # one coded table and one prepared scope per subset, shared by every judge pair
    for ja, jb in judge_pairs:
        for subset in [None, *cfg.subsets]:
            for variant in [None, *variants] if subset is None else [None]:
                out.append(_offset_from(tables.scope(subset), cfg, ja, jb, variant, subset, boot))
                if progress is not None:
                    progress(1)
    boot.run()  # fills every record's boot_low/boot_high: only now are the records complete
    return schemas.frame(out, schemas.JUDGE_OFFSETS)


# --------------------------------------------------------------------------- contrasts


def _mean_by_scenario(scenario: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per scenario (``scenario`` grouped, in its order): the mean of its values (numpy's sum
    of each group, so the same numbers whatever frame the groups come from)."""
    if scenario.size == 0:
        return scenario[:0], values[:0].astype(np.float64)
    starts = np.flatnonzero(np.r_[True, scenario[1:] != scenario[:-1]])
    n = np.diff(np.r_[starts, scenario.size])
    return scenario[starts], np.add.reduceat(values.astype(np.float64), starts) / n


UNIT_KEYS = {"row": ["scenario", "trial", "judge"], "scenario_judge": ["scenario", "judge"],
             "scenario_mean": ["scenario"]}


def _matched(scope: _Scope, a: str, b: str, trials_matched: bool
             ) -> tuple[pl.DataFrame, str, int, int, tuple[np.ndarray, np.ndarray] | None]:
    """Paired units for a contrast on a prepared scope: ``(frame with scenario (codes), a, b,
    diff; unit; units of a; units of b; positions of the matched units among each side's
    units, None for scenario means)`` (the unit means are computed once per scope, for
    every variant).

    A trial number is an arbitrary label across variants, so by default units are
    (scenario, judge) pairs both variants have valid values for, each side the mean of its
    valid trials (unit ``scenario_judge``). With ``trials_matched`` (the config declares that
    trial k of a and of b share something, e.g. a sampling seed) units are (scenario, trial,
    judge) rows (unit ``row``). When there are none, scenario-level means of the valid values
    (unit ``scenario_mean``). ``tests/reference_paired.py`` keeps the plain polars version;
    the records are equal to its, value for value.
    """
    v, s, key, mean = scope.units(trials_matched)
    spans = []
    for name in (a, b):
        code = scope.coded.code("variant", name)
        spans.append(_run_of(v, code) if code is not None else slice(0, 0))
    sa, sb = spans
    common, ia, ib = np.intersect1d(key[sa], key[sb], assume_unique=True, return_indices=True)
    if common.size:
        ma, mb = mean[sa][ia], mean[sb][ib]
        m = pl.DataFrame({"scenario": s[sa][ia], "a": ma, "b": mb, "diff": ma - mb})
        return m, "row" if trials_matched else "scenario_judge", int(key[sa].size), int(key[sb].size), (ia, ib)
    # no unit with a partner: each scenario's mean of its units' means (units in key order)
    (ga, ma), (gb, mb) = _mean_by_scenario(s[sa], mean[sa]), _mean_by_scenario(s[sb], mean[sb])
    _, ia, ib = np.intersect1d(ga, gb, assume_unique=True, return_indices=True)
    m = pl.DataFrame({"scenario": ga[ia], "a": ma[ia], "b": mb[ib], "diff": ma[ia] - mb[ib]},
                     schema={"scenario": pl.Int64, "a": pl.Float64, "b": pl.Float64, "diff": pl.Float64})
    return m, "scenario_mean", int(ga.size), int(gb.size), None


def _matched_ranks(scope: _Scope, a: str, b: str, m: pl.DataFrame, unit: str,
                   take: tuple[np.ndarray, np.ndarray] | None) -> tuple[np.ndarray, np.ndarray] | None:
    """``scipy.stats.rankdata`` of each side's matched unit means (columns a, b of ``m``, from
    :func:`_matched`, matched positions ``take``): from each side's sort of all its unit means, found once per
    scope (:func:`workbench.stats.average_ranks`), not a sort per contrast. None below 3 matched
    units (no rho) and for scenario means (ranked by Spearman itself)."""
    if m.height < 3 or take is None:
        return None
    trials_matched = unit == "row"
    return (stats.average_ranks(*scope.unit_order(a, trials_matched), take[0]),
            stats.average_ranks(*scope.unit_order(b, trials_matched), take[1]))


def _power_inputs(xa: np.ndarray, ca: np.ndarray, xb: np.ndarray, cb: np.ndarray,
                  m: pl.DataFrame, unit: str,
                  ranks: tuple[np.ndarray, np.ndarray] | None = None,
                  m_clusters: np.ndarray | None = None) -> dict[str, Any]:
    """What the sample-size formula needs: sd, pairing correlation, design effect.

    ``sd`` is the pooled within-variant SD of the valid values, sqrt((SS_a + SS_b) /
    (n_a + n_b - 2)). The plan is paired when matched rows exist and their Pearson
    correlation is positive: then ``rho`` is that correlation and ``deff`` the design
    effect of the matched differences within scenario (a scenario effect both variants
    share cancels in a difference; counting it again through the ICC of the values would
    inflate n). Otherwise the plan is unpaired: ``rho`` = 0 and ``deff`` the design effect of
    the values centred on their variant means (the variant effect is not clustering).
    """
    out: dict[str, Any] = {"sd": None, "rho": 0.0, "deff": None, "paired": False,
                           "rho_pearson": None, "rho_spearman": None}
    if xa.size == 0 or xb.size == 0:
        return out
    if xa.size + xb.size > 2:
        ss = float(np.sum((xa - xa.mean()) ** 2) + np.sum((xb - xb.mean()) ** 2))
        out["sd"] = math.sqrt(ss / (xa.size + xb.size - 2))
    ma, mb = m["a"].to_numpy(), m["b"].to_numpy()
    if m.height >= 3:
        # ranks: the matched means' average ranks, when the caller has them (the same rho)
        out["rho_spearman"] = (stats.spearman(ma, mb) if ranks is None
                               else stats.spearman_ranked(ma, mb, *ranks))
        if np.std(ma) > 0 and np.std(mb) > 0:
            out["rho_pearson"] = float(np.corrcoef(ma, mb)[0, 1])
    if unit != "scenario_mean" and out["rho_pearson"] is not None and out["rho_pearson"] > 0:
        values = m["diff"].to_numpy()
        clusters = m["scenario"].to_numpy() if m_clusters is None else m_clusters
        out["rho"], out["paired"] = out["rho_pearson"], True
    else:
        values = np.concatenate([xa - xa.mean(), xb - xb.mean()])
        clusters = np.concatenate([ca, cb])
    icc = stats.icc_oneway(values, clusters)
    if clusters.dtype.kind in "iu" and clusters.size and clusters.min() >= 0:
        # scenario codes: the counts np.unique gives, in the same (code) order
        sizes = np.bincount(clusters)
        sizes = sizes[sizes > 0]
    else:
        sizes = np.unique(clusters, return_counts=True)[1]
    out["deff"] = stats.design_effect(icc, sizes) if icc is not None else None
    return out


def contrast_record(rows: pl.DataFrame, cfg: Config, a: str, b: str, field: str | None = None,
                    subset: str | None = None, judge: str | None = None,
                    seed_offset: int = 0, joint: JointBootstrap | None = None,
                    where: pl.Expr | None = None) -> dict[str, Any]:
    """One contrast a - b on valid values: unpaired, paired, leave-one-out range and power.

    ``boot_low``/``boot_high``: joint cluster bootstrap of mean_a - mean_b, the difference
    of the two cells' resampled means on the same scenario weights (so it is coherent with
    the cells' own ``boot_*``); ``paired_boot_low``/``paired_boot_high``: the same weights on
    the per-scenario sums of matched-unit differences. From ``joint`` (the run's; filled in
    when it runs), else a bootstrap over ``rows``'s scenarios run at once. ``where``: only the
    rows where it holds are coded (a claim's two variants: every number of the record is of
    ``a`` and ``b``'s rows, and the other variants' are not coded).
    """
    fld = field or cfg.headline
    scope = _Scope(_Coded(rows, cfg, [fld], where), cfg, fld, subset, judge)
    boot = joint if joint is not None else JointBootstrap.for_rows(rows, cfg)
    rec = _contrast_from(scope, cfg, a, b, fld, subset, judge, boot)
    if joint is None:
        boot.run()
    return rec


def _contrast_from(scope: _Scope, cfg: Config, a: str, b: str, fld: str, subset: str | None,
                   judge: str | None, boot: JointBootstrap) -> dict[str, Any]:
    """The contrast record from a prepared scope (valid values of ``fld`` in the subset,
    for ``judge`` or all): each side's values in canonical row order (scenario, trial,
    judge, value: float sums do not depend on the order of input lines), scenario codes
    as cluster labels (the same codes ``np.unique`` gives the names, so the same numbers)."""
    coded = scope.coded
    spa, spb = scope.span(a), scope.span(b)
    xa, ca = scope.x[spa], scope.cl[spa]
    xb, cb = scope.x[spb], scope.cl[spb]
    # each side reduced per scenario once per scope: the numbers of stats.diff_clustered and
    # stats.leave_one_cluster_out_diff on (xa, ca, xb, cb)
    side_a, side_b = scope.cluster_side(a), scope.cluster_side(b)
    ds = stats.diff_clustered_sides(side_a, side_b, cfg.confidence)  # CR1, beside
    d2 = stats.diff_cr2_sides(side_a, side_b, cfg.confidence)  # CR2 + Bell-McCaffrey: the headline
    m, unit, units_a, units_b, take = _matched(scope, a, b, cfg.trials_matched)
    # the matched units' clusters (pairing is by scenario, independence by cluster)
    m_sc, m_diff = coded.clusters_of(m["scenario"].to_numpy()), m["diff"].to_numpy()
    ps = stats.paired_summary(m_diff, m_sc, cfg.confidence, bootstrap=False)
    loo_min, loo_max = stats.leave_one_cluster_out_sides(side_a, side_b) if xa.size and xb.size else (None, None)
    power = _power_inputs(xa, ca, xb, cb, m, unit, _matched_ranks(scope, a, b, m, unit, take), m_clusters=m_sc)
    n_need = (stats.n_needed(power["sd"], cfg.target_effect, cfg.alpha, cfg.power, rho=power["rho"],
                             design_effect=max(power["deff"] or 1.0, 1.0), paired=power["paired"])
              if power["sd"] is not None else None)
    if xa.size and xb.size:
        # each side's variance components once per scope (every contrast of a variant
        # shares them): the numbers of stats.contrast_variance_components on both sides
        if coded.own_clusters:  # scenarios nested in clusters: the plan's G is clusters
            bv, wv, g_plan, t0 = stats.combine_variance_components_clustered(
                scope.components(a), scope.components(b), coded.cluster_of)
        else:
            bv, wv, g_plan, t0 = stats.combine_variance_components(scope.components(a), scope.components(b))
    else:
        bv, wv, g_plan, t0 = None, None, 0, 0.0
    plan = stats.cluster_power_plan(bv, wv, g_plan, t0, cfg.target_effect, cfg.alpha, cfg.power,
                                    unit="scenarios" if cfg.cluster is None else f"{cfg.cluster_name} clusters")
    rec = {
        "a": a, "b": b, "field": fld, "subset": subset, "judge": judge,
        "mean_a": float(xa.mean()) if xa.size else None, "valid_n_a": int(xa.size),
        "mean_b": float(xb.mean()) if xb.size else None, "valid_n_b": int(xb.size),
        "diff": ds.diff, "se": d2.se, "df": d2.df, "ci_low": d2.ci_low, "ci_high": d2.ci_high, "p": d2.p_value,
        "ci_method": stats.CR2_METHOD if d2.ci_low is not None else None,
        "cr1_se": ds.se, "cr1_df": ds.df, "cr1_ci_low": ds.ci_low, "cr1_ci_high": ds.ci_high, "cr1_p": ds.p_value,
        "cr1_method": "cluster_t" if ds.ci_low is not None else None,
        "boot_low": None, "boot_high": None,
        "cluster": cfg.cluster_name, "clusters": ds.clusters, "paired_clusters": ps.clusters,
        "paired_unit": unit, "paired_diff": ps.mean,
        # the clustered interval or none: a t over matched units that ignores clustering is no
        # interval for this design (with fewer than 2 clusters nothing is)
        "paired_ci_low": ps.ci_low_cr2,
        "paired_ci_high": ps.ci_high_cr2,
        "paired_ci_method": stats.CR2_METHOD if ps.ci_low_cr2 is not None else None,
        "paired_df": ps.df_cr2 if ps.ci_low_cr2 is not None else None,
        "paired_cr1_ci_low": ps.ci_low_clustered, "paired_cr1_ci_high": ps.ci_high_clustered,
        "paired_boot_low": None, "paired_boot_high": None,
        "matched": ps.n,
        "unmatched_a": units_a - m.height,
        "unmatched_b": units_b - m.height,
        "loo_min": loo_min, "loo_max": loo_max,
        "pairing_correlation": power["rho_pearson"], "pairing_spearman": power["rho_spearman"],
        "design_effect": power["deff"], "sd": power["sd"], "n_needed_paired": power["paired"],
        # the SE and df behind the headline p (CR2, Bell-McCaffrey df)
        "mde": stats.mde(d2.se, d2.df, cfg.alpha, cfg.power) if d2.se is not None else None,
        # the same for the paired estimate: its clustered SE already carries the pairing
        # correlation and the clustering of matched units within scenarios
        "mde_paired": (stats.mde(ps.se_cr2, ps.df_cr2, cfg.alpha, cfg.power)
                       if ps.se_cr2 is not None else None),
        "target_effect": cfg.target_effect, "n_needed": n_need,
        "n_needed_assumes": ("valid n per side (pairs when n_needed_paired) with the extra values as "
                             "independent as new scenarios at the current design effect; more trials "
                             "on the same scenarios do not deliver it: see scenarios_needed"),
        "power_now": plan["power_now"], "scenarios_needed": plan["scenarios_needed"],
        "trials_per_scenario": t0 or None, "trials_needed": plan["trials_needed"],
        "trials_ceiling_power": plan["trials_ceiling_power"], "power_monotone": plan["power_monotone"],
        "power_statement": plan["statement"],
        "between_scenario_var": bv, "within_scenario_var": wv,
    }
    where = f"{a}-{b}/{fld}/{subset or ''}/{judge or ''}"
    if xa.size and xb.size:
        boot.request(rec, scope.column(boot, a), scope.column(boot, b), where="contrast:" + where)
    if ps.n:
        boot.request(rec, boot.add_coded(coded.joint_codes(boot, m_sc), m_diff),
                     keys=("paired_boot_low", "paired_boot_high"), where="contrast_paired:" + where)
    return rec


def contrasts(rows: pl.DataFrame, cfg: Config,
              progress: Callable[[int | None], None] | None = None,
              joint: JointBootstrap | None = None, tables: PairedTables | None = None,
              variants: Sequence[str] | None = None) -> pl.DataFrame:
    """All configured (or all) variant pairs on the headline, for all scenarios and per subset:
    the :data:`workbench.common.schemas.PAIRED_CONTRASTS` table, one row per contrast.

    ``se``/``df``/``ci_low``/``ci_high``/``p``: the unpaired CR2 standard error with
    Bell-McCaffrey df (``ci_method`` ``cluster_cr2_bm``, :func:`workbench.stats.diff_cr2`;
    None when one side's values all lie in one scenario); the CR1 with G - 1 df beside it in
    ``cr1_*``. ``paired_ci_*`` likewise CR2 (``paired_df``), the CR1 in ``paired_cr1_ci_*``.
    ``p_holm``: Holm adjustment of the unpaired clustered p-values within each family
    (one family per subset). ``mde``: the difference this design would detect with
    ``power`` at ``alpha`` given its observed clustered SE (the SE behind ``p``, unpaired);
    ``mde_paired`` the same for the paired estimate on matched units. ``n_needed``:
    valid n per side (pairs when ``n_needed_paired``) to detect ``target_effect`` (normal
    approximation with pairing correlation and design effect, see :func:`_power_inputs`).
    ``matched``/``unmatched_a``/``unmatched_b`` count units of ``paired_unit``: (scenario,
    judge) pairs with trials averaged (``scenario_judge``), (scenario, trial, judge) rows when
    the config declares ``trials_matched`` (``row``), or scenarios when no unit has a partner.
    Power in the unit that limits it (:func:`workbench.stats.cluster_power_plan` on the
    variance components of :func:`workbench.stats.contrast_variance_components`):
    ``scenarios_needed`` at the current trials per scenario, ``trials_ceiling_power`` (what
    more trials alone reach at the current scenarios), ``trials_needed`` (None when the
    ceiling is below ``power``) and ``power_statement`` saying which in one sentence.
    """
    pairs = selection.contrast_pairs(selection.cell_values(rows, "variant") if variants is None else variants, cfg)[0]
    tables = PairedTables.of(rows, cfg, tables)
    out = []
    boot = joint if joint is not None else JointBootstrap.for_rows(tables.narrow(), cfg)
    for subset in [None, *cfg.subsets]:
        fam = []
        # one prepared scope per subset, shared by every pair
        scope = tables.scope(subset) if pairs else None
        for a, b in pairs:
            fam.append(_contrast_from(scope, cfg, a, b, cfg.headline, subset, None, boot))  # type: ignore[arg-type]
            if progress is not None:
                progress(1)
        adj = stats.holm([r["p"] for r in fam])
        for r, p in zip(fam, adj, strict=True):
            r["p_holm"] = p
            r.update(contrast_call(r, cfg.alpha, cfg.target_effect))
        out.extend(fam)
    boot.run()  # fills the records' bootstrap intervals
    return schemas.frame(out, schemas.PAIRED_CONTRASTS)


def contrast_call(c: dict[str, Any], alpha: float, target: float | None) -> dict[str, Any]:
    """What a contrast shows, as data: ``higher`` (the side whose mean is higher when the
    clustered interval excludes 0, else None), ``holm_significant`` (``p_holm`` < alpha;
    None without an interval) and ``underpowered`` (``mde`` > the target effect: no clear
    difference that is not evidence of equality; None when undefined)."""
    lo, hi = c.get("ci_low"), c.get("ci_high")
    if lo is None or hi is None:
        return {"higher": None, "holm_significant": None, "underpowered": None}
    p = c.get("p_holm")
    mde = c.get("mde")
    return {
        "higher": c["a"] if lo > 0 else c["b"] if hi < 0 else None,
        "holm_significant": p is not None and p < alpha,
        "underpowered": None if target is None or mde is None else bool(mde > target),
    }


class _PairItems:
    """:meth:`workbench.analysis.census.VariantItems.test` on the units of a few variants, from each
    variant's unit positions found once: the same units in the same order (the union of the
    variants' positions, ascending, is the mask ``select`` builds), so the same test, without a
    pass over every unit per contrast. Units labelled by anything but the census's integer
    codes go through ``test`` itself."""

    def __init__(self, items: Any) -> None:
        self.items = items
        self._code: dict[Any, int] | None = getattr(items, "_code", None)
        self._pos: dict[int, np.ndarray] = {}
        if self._code is not None:
            labels = np.ascontiguousarray(items.labels)
            order = np.argsort(labels, kind="stable")  # each label's positions, ascending
            bounds = np.flatnonzero(np.r_[True, labels[order][1:] != labels[order][:-1], True])
            for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
                self._pos[int(labels[order[lo]])] = order[lo:hi]
            self.m, self.n = np.ascontiguousarray(items.m), np.ascontiguousarray(items.n)
            self.labels, self.blocks = labels, np.ascontiguousarray(items.blocks)

    def select(self, variants: list[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if self._code is None:
            return self.items.select(variants)  # type: ignore[no-any-return]
        codes = sorted({self._code[v] for v in variants if v in self._code})
        parts = [self._pos[c] for c in codes if c in self._pos]
        idx = np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.intp)
        return self.m[idx], self.n[idx], self.labels[idx], self.blocks[idx]

    def test(self, seed: int, variants: list[Any]) -> stats.TestResult:
        return self.design(seed, variants)[0]

    def design(self, seed: int, variants: list[Any]) -> tuple[stats.TestResult, dict[str, Any]]:
        """The test on ``variants``' units and what it could see (:func:`workbench.analysis.census.unit_design`)."""
        from workbench.analysis import census as census_mod

        units = self.select(variants)
        res = census_mod.unit_test(*units, seed)
        return res, census_mod.unit_design(*units, res)


def contrast_confounding(contrasts: pl.DataFrame, census: pl.DataFrame, margins: pl.DataFrame,
                         cfg: Config, rows: pl.DataFrame | None = None,
                         items: census_types.VariantItems | None = None) -> pl.DataFrame:
    """The contrasts table with, for each all-scenario contrast, whether its sides may not be
    comparable: :data:`workbench.common.schemas.CONTRASTS` (the columns below added to
    :data:`~workbench.common.schemas.PAIRED_CONTRASTS`, rows in the same order).

    ``census``/``margins``: the census and its margins tables (:func:`workbench.analysis.census.census`,
    :func:`~workbench.analysis.census.census_margins`).
    ``missing_rate_a``/``missing_rate_b`` (the variants' census margins: missing / judgments,
    planned judgments with no row included),
    ``missingness_p`` (with ``rows``: the design-respecting test of those two rates, the
    census's variant test on the two variants' units, by default whole (scenario, variant)
    blocks permuted within scenarios, :func:`workbench.analysis.census.missingness_units`;
    ``missingness_method`` names it; ``missingness_min_p`` is the smallest p it can reach
    on this design: above ``alpha`` (few scenarios) it cannot flag), ``fisher_p`` (Fisher
    exact test of the rates as if rows were independent: beside it only, ignores clustering), ``confounded_missing``
    (``missingness_p`` below ``alpha``; ``fisher_p`` when no rows are given),
    ``judges_a``/``judges_b`` (the judges with judgments of each side) and
    ``confounded_judges`` (the two sets differ, so judge severity is confounded with the
    variant); ``confounded`` is either. The census is not split by subset, so subset
    contrasts get null in all of them.

    ``items``: the variant test's units (:class:`workbench.analysis.census.VariantItems`,
    e.g. :meth:`~workbench.analysis.census.VariantItems.of_view` of the run's coded view), used
    instead of building them from ``rows``; with neither, no design test is made.
    """
    per_variant = {m["variant"]: m for m in margins.filter(
        pl.col("variant").is_not_null() & pl.col("judge").is_null()).select(
        "variant", "judgments", "missing", "missing_rate").iter_rows(named=True)}
    judges: dict[str, set[str]] = {}
    for variant, judge, judgments in census.select("variant", "judge", "judgments").iter_rows():
        if judgments:
            judges.setdefault(str(variant), set()).add(str(judge))
    keys = ("missing_rate_a", "missing_rate_b", "fisher_p", "missingness_p", "missingness_method",
            "missingness_min_p", "confounded_missing", "judges_a", "judges_b", "confounded_judges", "confounded")
    from workbench.analysis import census as census_mod

    # the items of the variant test built once; each contrast's test selects its two variants
    if items is None and rows is not None:
        items = census_mod.VariantItems.of_rows(rows, cfg)
    items = _PairItems(items) if items is not None else None
    added = []
    for a, b, subset, judge in contrasts.select("a", "b", "subset", "judge").iter_rows():
        c: dict[str, Any] = dict.fromkeys(keys)
        added.append(c)
        if subset is not None or judge is not None:
            continue
        ma, mb = per_variant.get(a), per_variant.get(b)
        p = None
        if ma and mb and ma["judgments"] and mb["judgments"]:
            p = stats.fisher_exact_2x2(int(ma["missing"]), int(ma["judgments"]), int(mb["missing"]),
                                       int(mb["judgments"]))
            c["missing_rate_a"], c["missing_rate_b"] = ma["missing_rate"], mb["missing_rate"]
        ja, jb = judges.get(str(a), set()), judges.get(str(b), set())
        c["fisher_p"] = p
        decide = p
        if items is not None:
            res, design = items.design(stats.derive_seed(cfg.seed, "contrast_confounding", a, b), [a, b])
            c["missingness_p"] = res.p_value
            c["missingness_method"] = census_mod.method_name("variant", res, cfg.missingness_unit)
            c["missingness_min_p"] = design["min_p"]
            decide = res.p_value
        c["confounded_missing"] = decide is not None and decide < cfg.alpha
        c["judges_a"], c["judges_b"] = sorted(ja), sorted(jb)
        c["confounded_judges"] = ja != jb
        c["confounded"] = c["confounded_missing"] or c["confounded_judges"]
    extra = pl.DataFrame({k: [c[k] for c in added] for k in keys},
                         schema={k: schemas.CONTRASTS.columns[k] for k in keys})
    return schemas.conform(pl.concat([contrasts, extra], how="horizontal"), schemas.CONTRASTS)


# --------------------------------------------------------------------------- repetitions


@dataclass(frozen=True)
class Repetition:
    """The repetition stage: ``per_variant`` (:data:`workbench.common.schemas.REPETITION`),
    ``slices`` (:data:`workbench.common.schemas.REPETITION_SLICES`), the ranking on all trials the
    slices are compared with (None without slices) and the order-statistic n for 95/95."""

    per_variant: pl.DataFrame
    slices: pl.DataFrame
    reference_ranking: list[str] | None
    order_statistic_n_95_95: int

    @property
    def inversions(self) -> int:
        """Slices whose ranking differs from the reference."""
        return int(self.slices["differs"].sum())


def _valid_cell_codes(rows: pl.DataFrame, cfg: Config, fld: str, tables: PairedTables | None
                      ) -> tuple[dict[str, np.ndarray], dict[str, list[str]], np.ndarray]:
    """The valid cell rows of ``fld`` in row order as key codes (:data:`KEYS`, each monotone in
    its names, as :class:`_Coded` gives them), the names per key, and the values.

    From the run's coded cell rows when ``tables`` are given (codes of every cell row's keys:
    the same order), else coded here (:func:`workbench.reduce.codes.coded_keys`; variant, trial and judge narrow):
    no frame of int64 codes nor of key texts, which held about 0.3 GB at 5M rows."""
    coded = tables.coded() if tables is not None else None
    if coded is not None and coded.frame is not None:  # not released (PairedTables.prepare)
        f = coded.frame.filter(pl.col(fld).is_not_null())
        return ({k: f[_CODE[k]].to_numpy() for k in KEYS}, coded.names,
                f[fld].to_numpy().astype(np.float64, copy=False))
    codes, levels, kept = reduce_codes.coded_keys(
        rows, selection.in_cells() & pl.col(fld).is_not_null(), KEYS, extra=[pl.col(fld)],
        narrow=reduce_codes.NARROW_KEYS)
    for k in KEYS:
        if levels[k] and levels[k][0] is None:  # ingest makes a line without a key malformed
            raise ValueError(f"a cell row has no {k}")
    return codes, levels, kept[fld].to_numpy().astype(np.float64, copy=False)


def _pair_clusters(sc: np.ndarray, jd: np.ndarray, names: dict[str, list[str]]) -> np.ndarray:
    """Each value's (scenario, judge) cluster as an integer code in the order of the labels
    "scenario\x1fjudge" (``np.unique`` codes them so: the same ICC as on the labels, without
    a million concatenated strings); int32, as only the distinct pairs are sorted by label."""
    pairs, inverse = reduce_codes.group_ids(sc, jd)
    sn, jn = names["scenario"], names["judge"]
    labels = [sn[s] + "\x1f" + jn[j] for s, j in pairs.tolist()]
    rank = np.empty(len(labels), dtype=np.int32)
    rank[sorted(range(len(labels)), key=labels.__getitem__)] = np.arange(len(labels), dtype=np.int32)
    return rank[inverse]


def _trial_iccs(rows: pl.DataFrame, cfg: Config, fld: str, tables: PairedTables | None
                ) -> tuple[list[dict[str, Any]], list[str]]:
    """The per-variant ICC records, and the trials with a valid value (sorted).

    One variant at a time: its rows (ascending positions) sorted by (cluster, trial, value),
    which is the whole table's sort by (variant, cluster, trial, value) restricted to it, so
    the same values in the same order, without a sorted copy of every array at once."""
    codes, names, x = _valid_cell_codes(rows, cfg, fld, tables)
    vcode, tcode = codes["variant"], codes["trial"]
    cluster = _pair_clusters(codes["scenario"], codes["judge"], names)
    del codes
    trial_ids = [names["trial"][t] for t in np.flatnonzero(np.bincount(tcode, minlength=1)).tolist()]
    by_variant = np.argsort(vcode, kind="stable")
    # each variant's run in that order (a searchsorted of int64 needles converted the narrow
    # codes to int64 first)
    bounds = np.r_[0, np.cumsum(np.bincount(vcode, minlength=len(names["variant"])))]
    out = []
    for code, variant in enumerate(names["variant"]):
        sub = by_variant[bounds[code]:bounds[code + 1]]
        if not sub.size:
            continue  # no valid value (a shared coding's variant)
        trials = int(np.unique(tcode[sub]).size)
        icc = None
        if trials > 1:
            order = np.lexsort((x[sub], tcode[sub], cluster[sub]))
            icc = stats.icc_oneway(x[sub][order], cluster[sub][order])
        out.append({"variant": variant, "trials": trials, "icc_trials": icc})
    return out, trial_ids


def repetition_consistency(rows: pl.DataFrame, cfg: Config, tables: PairedTables | None = None) -> Repetition:
    """Trials within scenario: ICC per variant, and how often single-trial rankings disagree.

    ``per_variant``: ICC(1) of valid headline values with the (scenario, judge) pair as the
    cluster, i.e. agreement of repeated trials of the same item. ``slices``: for each trial
    number, the variant ranking using only that trial; ``inversions`` counts slices whose
    ranking differs from the ranking on all trials (variants with a mean in every slice only).
    """
    fld = cfg.headline
    if tables is not None:
        PairedTables.of(rows, cfg, tables)  # checked to be of these rows and config
    # the ICCs first, from integer codes, and their arrays freed before the means' frame is
    # made: the two row-sized parts are never alive together
    per_variant, trial_ids = _trial_iccs(rows, cfg, fld, tables)
    slices = []
    if len(trial_ids) > 1:
        # the valid cell rows' variant, trial and value only (the columns the means read; a
        # filter of more would copy key texts: about +0.4 GB at 5M rows), in row order; the
        # means grouped by the texts themselves (a grouping by integer codes sums some groups
        # in another order at 4M rows: the same rankings are not guaranteed on ties)
        v = (rows.lazy().filter(selection.in_cells() & pl.col(fld).is_not_null())
             .select("variant", "trial", fld).collect())
        overall = v.group_by("variant").agg(pl.col(fld).mean().alias("m"))
        # each trial's variant means (one grouping; each group sums its rows in row order)
        means = v.group_by("trial", "variant").agg(pl.col(fld).mean())
        del v
        per_slice: dict[Any, dict[Any, float]] = {t: {} for t in trial_ids}
        for t, variant, mean in means.iter_rows():
            per_slice[t][variant] = mean
        common = sorted(set.intersection(*(set(d) for d in per_slice.values())))
        base = dict(overall.iter_rows())
        ref = sorted(common, key=lambda x: (-base[x], x))
        for t in trial_ids:
            order = sorted(common, key=lambda x: (-per_slice[t][x], x))
            slices.append({"trial": t, "ranking": order, "differs": order != ref})
    return Repetition(per_variant=schemas.frame(per_variant, schemas.REPETITION),
                      slices=schemas.frame(slices, schemas.REPETITION_SLICES),
                      reference_ranking=ref if slices else None,
                      order_statistic_n_95_95=stats.order_statistic_n(0.95, 0.95))
