"""Sufficient statistics of a run, and the joint cluster bootstrap that works on them.

One reduction of the row table (:func:`cell_reduction`) gives, per (field, variant, judge,
subset, scenario), the number of valid values ``n``, their ``sum`` and ``sumsq``; judges
pooled have ``judge`` null and all scenarios ``subset`` null. Built once, vectorised
(polars sort + numpy segment sums in a canonical order, so the float sums do not depend
on the order of input lines), small: cells x scenarios rows, whatever the number of trials.

The cluster bootstrap of every scorecard cell, judge offset and variant contrast runs on
per-scenario sums (:class:`JointBootstrap`): scenario weights are drawn once per run over
the run's sorted scenario index (:func:`scenario_index`), from the run seed, and applied to
every cell's per-scenario sums (weighted mean = sum_g w_g S_g / sum_g w_g n_g). All cells
and contrasts are thereby resampled jointly: a contrast's bootstrap is coherent with its two
cells' (the same resamples), and the cost is resamples x scenarios x cells, not rows.

What is still computed from the valid values and not from this reduction, and why:
the scorecard's mean, naive, CR1 and CR2 clustered SE (with its Bell-McCaffrey df), ICC and
design effect (:func:`workbench.stats.cell_summary`) are algebraically functions of (n_g, S_g,
SS_g) (mean = sum S / sum n; CR1 and CR2 from S_g - n_g * mean and n_g; ICC from SS_g,
S_g^2 / n_g), but the
sufficient-statistic forms round differently in the last bits, and the published golden
results must not change; the per-cell value arrays are cheap (valid n floats). Paired
judge offsets need the within-item pairs (agreement statistics, Wilcoxon, kappa) and the
contrasts' power inputs need the values; those stay on rows, and only their bootstraps use
per-scenario sums of within-item differences.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from workbench import stats
from workbench.common.config import Config
from workbench.ingest import spill as ingest_spill
from workbench.ingest.selection import cell_rows, subset_filter
from workbench.reduce.codes import index_dtype, narrowest_unsigned

KEYED_EXCLUDE = ("blank", "malformed")
"""Buckets of lines with no usable key: they are no scenario of the run."""

WEIGHTS = ("multinomial: each resample draws G clusters with replacement from the run's sorted "
           "cluster index (G = all clusters with a keyed row; the cluster is the scenario unless the "
           "config's cluster: names another unit); a cluster's weight is how often it was drawn, and "
           "every scenario in it carries that weight; the same weights for every cell, offset and contrast")

# bytes of dense per-scenario columns ([sums | counts], float64) held at once
_GROUP_BYTES = 128 * 2**20
# Where the uint8 weight table (resamples x clusters bytes) is kept across passes
# (JointBootstrap._weight_table). In memory up to _CACHE_WEIGHTS: a small run keeps it off the
# disk. Past it, in a mapped file of the spill folder up to _DISK_WEIGHTS (at 5M generated rows,
# 83 MB: the judge offsets' peak anonymous memory 0.85-0.87 -> 0.74-0.75 GB in two runs each).
# Without the file (WORKBENCH_SPILL=never, a folder that cannot take it), in memory up to
# _MEMORY_WEIGHTS. Past every cap no table: each group of columns draws every resample again
# (before the file, at 20M generated rows: 333,334 scenarios x 1,000 resamples, 2.4 s of
# drawing per group, the scorecard 61.5 s against 33.5 s with the file).
_CACHE_WEIGHTS = 16 * 2**20
_DISK_WEIGHTS = 8 * 2**30
_MEMORY_WEIGHTS = 128 * 2**20


def scenario_index(rows: pl.DataFrame) -> list[str]:
    """The run's canonical scenario index: sorted distinct scenarios of keyed rows."""
    if rows.height == 0:
        return []
    sc = (rows.lazy().filter(~pl.col("bucket").is_in(KEYED_EXCLUDE) & pl.col("scenario").is_not_null())
          .select(pl.col("scenario").cast(pl.String).unique()).collect())
    return sorted(sc["scenario"].to_list())


def cluster_index(rows: pl.DataFrame) -> list[str]:
    """The run's canonical cluster index: sorted distinct clusters of keyed rows (the
    ``cluster`` column, :mod:`workbench.ingest.clusters`; a table without it: the scenarios)."""
    from workbench.ingest.clusters import column

    if rows.height == 0:
        return []
    col = column(rows)
    sc = (rows.lazy().filter(~pl.col("bucket").is_in(KEYED_EXCLUDE) & pl.col(col).is_not_null())
          .select(pl.col(col).cast(pl.String).unique()).collect())
    return sorted(sc[col].to_list())


def bootstrap_resamples(cfg: Config, scenarios: int) -> int:
    """Resamples the joint bootstrap uses: ``bootstrap.resamples``, unless resamples x
    scenarios would pass ``bootstrap.budget``; then floor(budget / scenarios), at least
    ``bootstrap.min_resamples`` (never more than requested)."""
    want = int(cfg.resamples)
    budget = cfg.bootstrap_budget
    if budget is None or scenarios <= 0 or want * scenarios <= budget:
        return want
    return max(min(want, cfg.bootstrap_min_resamples), int(budget // scenarios))


@dataclass
class _Column:
    """One registered statistic: its per-scenario counts and sums until its draws are
    computed (then ``codes``/``n``/``s`` are released: the draws are all later requests
    need), and the scenarios it has values in, as a bit set (``clusters``)."""

    codes: np.ndarray | None  # scenario codes with at least one value (sorted, unique)
    n: np.ndarray | None
    s: np.ndarray | None
    present: np.ndarray  # np.packbits of the scenarios with a value (uint8, G/8 bytes)
    size: int  # number of such scenarios

    def release(self) -> None:
        self.codes = self.n = self.s = None


def _unsigned(a: np.ndarray, top: float) -> np.ndarray | None:
    """``a`` in the narrowest unsigned integer type when every value is a non-negative integer
    of at most ``top`` (no -0.0: an integer type has no negative zero), else None: the same
    values either way."""
    if a.size == 0:
        return None
    lo, hi = float(a.min()), float(a.max())
    if not (lo >= 0 and hi <= top and np.all(a == np.floor(a)) and not np.signbit(a).any()):
        return None
    return a.astype(narrowest_unsigned(hi))


def _compact_counts(n: np.ndarray) -> np.ndarray:
    """Per-scenario counts in the narrowest unsigned integer type that holds them exactly
    (as they are when they are not all non-negative integers up to uint32's range): the same
    values, a quarter to an eighth of the bytes while the column waits for its draws."""
    out = _unsigned(n, np.iinfo(np.uint32).max)
    return n if out is None else out


def _compact_sums(s: np.ndarray) -> np.ndarray:
    """Per-scenario sums in the narrowest type that holds every one exactly: an unsigned
    integer type up to 16 bits when they are non-negative integers (a byte for sums of a few
    integer scores: a quarter of float32's bytes, 0.18 GB less at 20M generated rows while the
    scorecard's 180 cells wait for the bootstrap), float32 when every one is exactly a float32
    (integer sums below 2**24, halves...), else float64: the same values either way."""
    if s.size == 0:
        return s
    out = _unsigned(s, np.iinfo(np.uint16).max)
    if out is not None:
        return out
    s32 = s.astype(np.float32)
    with np.errstate(invalid="ignore"):
        exact = bool(np.array_equal(s32.astype(np.float64), s))
    return s32 if exact else s


@dataclass
class _Request:
    target: dict[str, Any]
    a: int
    b: int | None
    keys: tuple[str, str]
    where: str


#: a bootstrap pass of at least this many intervals gets a progress line (on a terminal)
PROGRESS_MIN_REQUESTS = 5000
PROGRESS_STEP = 1000


@dataclass
class JointBootstrap:
    """Collects per-cluster sums of many statistics and bootstraps them on shared weights.

    ``scenarios`` is the index of the units the weights are drawn over: the run's clusters
    (:func:`cluster_index`; the scenarios themselves unless the config names a ``cluster:``).
    Every caller registers sums by cluster code (a position in it); ``n_scenarios`` and
    ``unit`` are only recorded.

    ``add_values``/``add_sums`` register a column (one cell's per-scenario count and sum);
    ``request`` asks for the percentile interval of a column's mean, or of the difference
    of two columns' means, to be written into ``target[keys]``; ``run`` computes every
    pending request (one pass over the resamples) and clears them. Weights are a function of
    (run seed, scenario index, resample number) only, so a statistic gets the same interval
    whichever other statistics share its pass, and separate passes (scorecard, offsets,
    contrasts, claims) use the same resamples.
    """

    scenarios: list[str]
    seed: int
    resamples: int
    resamples_requested: int
    confidence: float
    budget: int | None = None
    n_scenarios: int | None = None
    unit: str = "scenario"
    columns: list[_Column] = field(default_factory=list)
    pending: list[_Request] = field(default_factory=list)
    undefined: list[dict[str, Any]] = field(default_factory=list)
    computed: dict[str, int] = field(default_factory=dict)
    _sorted: np.ndarray | None = None
    _cache: np.ndarray | None = None
    #: ``f(label, total)`` -> a progress callback or None (the pipeline's bar factory); None: silent
    progress_bar: Any = None
    tick: Any = None
    _uncacheable: bool = False
    _known: dict[bytes, int] = field(default_factory=dict)
    _draws: dict[int, np.ndarray] = field(default_factory=dict)
    _every: np.ndarray | None = None

    @classmethod
    def for_rows(cls, rows: pl.DataFrame, cfg: Config) -> JointBootstrap:
        """The run's bootstrap: cluster index of ``rows``, seed and resamples of ``cfg``."""
        index = cluster_index(rows)
        own = cfg.cluster is not None and "cluster" in rows.columns
        return cls.for_scenarios(index, cfg, n_scenarios=len(scenario_index(rows)) if own else len(index))

    @classmethod
    def for_scenarios(cls, scenarios: Sequence[str], cfg: Config, n_scenarios: int | None = None) -> JointBootstrap:
        """A bootstrap over the given cluster labels (the scenarios, when clusters are
        scenarios); ``n_scenarios``: how many scenarios they hold (recorded only)."""
        sc = sorted(str(s) for s in scenarios)
        return cls(scenarios=sc, seed=stats.derive_seed(cfg.seed, "joint_bootstrap"),
                   resamples=bootstrap_resamples(cfg, len(sc)), resamples_requested=int(cfg.resamples),
                   confidence=cfg.confidence, budget=cfg.bootstrap_budget,
                   n_scenarios=len(sc) if n_scenarios is None else int(n_scenarios), unit=cfg.cluster_name)

    # ------------------------------------------------------------------ columns

    def codes_of(self, labels: np.ndarray) -> np.ndarray:
        """Scenario codes (positions in the index) of scenario labels; all must be in it."""
        if len(labels) == 0:
            return np.zeros(0, dtype=np.intp)
        if not self.scenarios:
            raise ValueError("a scenario is not in the run's scenario index (it is empty)")
        if self._sorted is None:
            self._sorted = np.array(self.scenarios, dtype=str)
        lab = np.asarray(labels).astype(str)
        pos = np.minimum(np.searchsorted(self._sorted, lab), len(self.scenarios) - 1)
        if np.any(self._sorted[pos] != lab):
            raise ValueError("a scenario is not in the run's scenario index")
        return pos.astype(np.intp)

    def add_sums(self, codes: np.ndarray, n: np.ndarray, s: np.ndarray) -> int:
        """Register a column from per-scenario counts and sums (codes unique); a column
        equal to one already registered is that column (its draws are computed once)."""
        order = np.argsort(codes, kind="stable")
        cc = np.asarray(codes, dtype=np.intp)[order]
        nn = np.asarray(n, dtype=np.float64)[order]
        ss = np.asarray(s, dtype=np.float64)[order]
        # a column is known by a digest of its bytes (what the bytes themselves did, without
        # keeping a second copy of every column for the life of the run); SHA-256 has CPU
        # instructions on current x86 and ARM (2.5x blake2b's speed here)
        h = hashlib.sha256()
        for a in (cc, nn, ss):
            h.update(a.tobytes())
        key = h.digest()
        known = self._known.get(key)
        if known is not None:
            return known
        mask = np.zeros(len(self.scenarios), dtype=bool)
        mask[cc] = True
        present = np.packbits(mask)
        del mask
        cc, nn, ss = self._compact_codes(cc), _compact_counts(nn), _compact_sums(ss)
        self.columns.append(_Column(cc, nn, ss, present, int(cc.size)))
        self._known[key] = len(self.columns) - 1
        return len(self.columns) - 1

    def _compact_codes(self, cc: np.ndarray) -> np.ndarray:
        """A column's scenario codes as held until its draws: the one shared ``arange`` when
        it has every scenario (the scorecard's cells mostly do), else int32."""
        g = len(self.scenarios)
        if cc.size == g and g:
            if self._every is None:
                self._every = np.arange(g, dtype=index_dtype(g))
            if np.array_equal(cc, self._every):
                return self._every
        return cc.astype(np.int32) if g < 2**31 else cc

    def add_values(self, labels: np.ndarray, values: np.ndarray) -> int:
        """Register a column from values with their scenario labels (summed in canonical
        order: by scenario, then value, so the sums do not depend on the order of rows)."""
        return self.add_coded(self.codes_of(labels), values)

    def add_coded(self, codes: np.ndarray, values: np.ndarray) -> int:
        """:meth:`add_values` with the values' scenario codes (positions in the index,
        :meth:`codes_of`) instead of their labels."""
        x = np.asarray(values, dtype=np.float64)
        codes = np.asarray(codes, dtype=np.intp)
        if x.size == 0:
            return self.add_sums(np.zeros(0, dtype=np.intp), np.zeros(0), np.zeros(0))
        if _exact_integers(x):
            # every partial sum is an integer below 2**53, so each scenario's sum is the same
            # double in any order: counted and summed by bincount, without the sort (zero
            # sums are +0.0 both ways: no -0.0 among the values)
            cnt = np.bincount(codes, minlength=len(self.scenarios))
            sums = np.bincount(codes, weights=x, minlength=len(self.scenarios))
            present = np.flatnonzero(cnt)
            return self.add_sums(present, cnt[present].astype(np.float64), sums[present])
        order = np.lexsort((x, codes))
        codes, x = codes[order], x[order]
        starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
        n = np.diff(np.r_[starts, codes.size]).astype(np.float64)
        s = np.add.reduceat(x, starts)
        return self.add_sums(codes[starts], n, s)

    def clusters(self, col: int, other: int | None = None) -> int:
        if other is None:
            return self.columns[col].size
        both = np.bitwise_or(self.columns[col].present, self.columns[other].present)
        return int(np.unpackbits(both).sum())  # (np.bitwise_count needs numpy 2)

    def request(self, target: dict[str, Any], a: int, b: int | None = None,
                keys: tuple[str, str] = ("boot_low", "boot_high"), where: str = "") -> None:
        """Ask for the interval of mean(a) (or mean(a) - mean(b)) in ``target[keys]``."""
        self.pending.append(_Request(target, a, b, keys, where))

    # ------------------------------------------------------------------ the pass

    def _weights(self, start: int, stop: int, dtype: type = np.float64,
                 buffer: np.ndarray | None = None) -> np.ndarray:
        """Weights of resamples ``start..stop-1`` as ``dtype`` (small integers: exact in
        float32 and float64 alike), written into ``buffer``'s first rows when given (one
        buffer for every block of a pass: no fresh pages per block)."""
        g = len(self.scenarios)
        table = self._kept_weights()
        if table is not None:
            if buffer is not None and buffer.dtype == dtype and buffer.shape[0] >= stop - start:
                out = buffer[:stop - start]
                np.copyto(out, table[start:stop], casting="unsafe")
                return out
            return table[start:stop].astype(dtype)
        return stats.joint_bootstrap_weights(g, start, stop, self.seed).astype(dtype, copy=False)

    def _kept_weights(self) -> np.ndarray | None:
        """The weight table kept for every pass (:meth:`_weight_table`, made on first call), or
        None when it cannot be kept."""
        if self._cache is None and not self._uncacheable:
            self._cache = self._weight_table()
            self._uncacheable = self._cache is None
        return self._cache

    def _weight_table(self) -> np.ndarray | None:
        """Every resample's weights as uint8, kept for every pass, or None (each pass draws
        its own, the same numbers): in memory up to :data:`_CACHE_WEIGHTS` bytes; past that in a
        mapped file (:meth:`_mapped_weights`) up to :data:`_DISK_WEIGHTS`, unless
        ``WORKBENCH_SPILL=never`` (read by :func:`workbench.ingest.spill.mode`: an unknown value
        is its one-line error) or the folder cannot take it; then in memory up to
        :data:`_MEMORY_WEIGHTS`. None also when a scenario is drawn 256+ times in one resample
        (found once, by the first table tried)."""
        cells = self.resamples * len(self.scenarios)
        try:
            if _CACHE_WEIGHTS < cells <= _DISK_WEIGHTS and ingest_spill.mode() != "never":
                mapped = self._mapped_weights()
                if mapped is not None:
                    return mapped
            return self._cached_weights() if cells <= _MEMORY_WEIGHTS else None
        except OverflowError:  # a scenario drawn 256+ times in one resample
            return None

    def _mapped_weights(self) -> np.ndarray | None:
        """The weight table in a file of the spill folder (:func:`workbench.ingest.spill.folder`),
        memory-mapped read-only: the kernel's page cache, not this process's anonymous memory,
        holds it (333 MB at 20M generated rows). The file has no name (``TemporaryFile``), so
        nothing is left behind even when the run is killed; the mapping keeps it until the
        bootstrap is dropped. Written with ordinary writes, a generator block at a time (no
        resample drawn twice; one block of draws in memory), so a full disk is an ``OSError``
        here, never a signal while pages of a mapping are written. None when the folder cannot
        take it (no space, no rights); OverflowError as :func:`workbench.stats.joint_bootstrap_weights`."""
        g, b = len(self.scenarios), self.resamples
        step = stats.JOINT_SEED_BLOCK
        block = np.empty((min(step, b), g), dtype=np.uint8)
        try:
            with tempfile.TemporaryFile(prefix="workbench-weights-", suffix=".u8", dir=ingest_spill.folder()) as fh:
                for start in range(0, b, step):
                    stop = min(b, start + step)
                    fh.write(stats.joint_bootstrap_weights(g, start, stop, self.seed,
                                                           out=block[:stop - start]).data)
                fh.flush()
                return np.memmap(fh, dtype=np.uint8, mode="r", shape=(b, g))
        except OSError:  # no space or no rights in the folder
            return None

    def _cached_weights(self) -> np.ndarray:
        """The weight table in memory, written straight into it: never a float64 table of all
        resamples (resamples x scenarios x 8 bytes, 0.4 GB at 1M rows) nor of a block.
        OverflowError when a scenario is drawn 256+ times in one resample."""
        g, b = len(self.scenarios), self.resamples
        return stats.joint_bootstrap_weights(g, 0, b, self.seed, out=np.empty((b, g), dtype=np.uint8))

    def _exact32(self, both: np.ndarray) -> bool:
        """True when float32 products are exact: non-negative integers (scores on an integer
        rubric and counts). Sums of non-negative integers are exact as long as the total
        stays below 2**24, which :meth:`draws` checks on the result."""
        if both.dtype.kind == "u":  # counts held as unsigned integers (_compact_counts)
            return bool(both.size)
        return bool(both.size) and float(both.min()) >= 0 and bool(np.all(both == np.floor(both)))

    def draws(self, cols: Sequence[int]) -> np.ndarray:
        """Resampled means of the given columns: (resamples, len(cols)), NaN where undefined.

        Cost: resamples x scenarios x columns multiply-adds (BLAS), in groups of columns
        (at most ~128 MB of dense per-scenario sums) and blocks of resamples (~32 MB of
        weights). A group of non-negative integer columns is multiplied in float32, which is
        exact (integer products and sums below 2**24, checked; else float64 again), so the
        result is the same as the float64 product, bit for bit, at twice the speed.
        """
        # One BLAS thread: the products are many small blocks, and on a shared machine
        # OpenBLAS threads spin-wait (measured: 0.26 s of CPU single-threaded against 7.4 s
        # with 2 threads under load, for the same 11 blocks); and one thread makes every
        # sum's order, so every bit, independent of the number of cores.
        with stats.one_blas_thread():
            return self._draws_blocks(cols)

    def _draws_blocks(self, cols: Sequence[int]) -> np.ndarray:
        g = len(self.scenarios)
        b = self.resamples
        # column-major: a column's draws are contiguous, so each statistic's percentile and its
        # count of undefined resamples read one block of memory (at 90,000 cells, 4x faster
        # than strided reads of a row-major matrix); the values are the same
        out = np.empty((len(cols), b), dtype=np.float64).T  # every entry is written below
        if g == 0 or not cols:
            out[...] = np.nan
            return out
        width = max(1, _GROUP_BYTES // (16 * g))
        per = max(1, stats._JOINT_BLOCK_CELLS // g)
        if per >= stats.JOINT_SEED_BLOCK:  # whole generator blocks: none drawn twice
            per -= per % stats.JOINT_SEED_BLOCK
        # integer columns together, so their groups can take the exact float32 path
        kinds = [not (np.all(self.columns[c].s >= 0) and np.all(self.columns[c].s == np.floor(self.columns[c].s)))
                 for c in cols]
        order = sorted(range(len(cols)), key=lambda j: (kinds[j], j))
        buffers: dict[Any, np.ndarray] = {}
        # every column of integers, and the weight table kept: by blocks of scenarios. Each
        # product and sum is an exact integer (checked), so the order of the sums changes no bit,
        # and the weights are converted once for all the columns instead of once per group.
        # (Only when all are: a float64 column's last bit could depend on its group's width.)
        if not any(kinds) and all(self._exact32(self.columns[c].n) or self.columns[c].n.size == 0 for c in cols):
            table = self._kept_weights()
            if table is not None:
                self._draws_by_scenarios(cols, table, out)
                return out

        def weights(start: int, stop: int, dtype: type) -> np.ndarray:
            if dtype not in buffers:
                buffers[dtype] = np.empty((min(per, b), g), dtype=dtype)
            return self._weights(start, stop, dtype, buffers[dtype])

        for c0 in range(0, len(order), width):
            group = order[c0:c0 + width]
            k = len(group)
            # exact when every sum and count is a non-negative integer: _exact32 of the
            # dense matrix, from the columns themselves (the matrix's other entries are 0)
            integer = not any(kinds[pos] for pos in group) and all(
                self._exact32(self.columns[cols[pos]].n) or self.columns[cols[pos]].n.size == 0 for pos in group)
            # In an integer group every product and sum is exact (checked below), so a count
            # column equal to another one (the cells of several fields valid on the same
            # rows) is multiplied once: the same numbers, fewer multiply-adds.
            members = [cols[pos] for pos in group]
            ncol = self._distinct_counts(members) if integer else list(range(k))
            u = max(ncol) + 1 if ncol else 0
            # the previous group's dense matrix freed before this one is made: both at once
            # were 2 x 127 MB at 20M generated rows (333,334 scenarios, groups of 25 columns)
            both = both32 = None
            both32 = self._dense(members, ncol, np.float32) if integer and g * (k + u) else None
            if both32 is None:
                both = self._dense(members, ncol, np.float64)
            for start in range(0, b, per):
                stop = min(b, start + per)
                t = None
                if both32 is not None:
                    t32 = weights(start, stop, np.float32) @ both32
                    if float(t32.max(initial=0.0)) < 2.0**24:
                        t = t32.astype(np.float64)
                    del t32
                if t is None:
                    if both32 is not None:  # from the columns: a sum of 2**24 or more is not a float32
                        both, both32 = self._dense(members, ncol, np.float64), None
                    t = weights(start, stop, np.float64) @ both
                ts, tn = t[:, :k], t[:, k:][:, ncol]
                # a resample that drew none of a column's scenarios (weighted count 0) is
                # undefined: NaN; the quotient elsewhere
                with np.errstate(invalid="ignore", divide="ignore"):
                    if group == list(range(group[0], group[0] + k)):  # written in place
                        view = out[start:stop, group[0]:group[0] + k]
                        np.divide(ts, tn, out=view)
                        np.copyto(view, np.nan, where=tn <= 0)
                    else:
                        out[start:stop, group] = np.where(tn > 0, ts / tn, np.nan)
                if self.tick is not None:  # the group's k columns, in proportion to the resamples done
                    self.tick(k * stop // b - k * start // b)
        return out

    def _dense(self, cols: Sequence[int], ncol: list[int], dtype: type) -> np.ndarray:
        """Columns ``cols`` as a dense (scenarios, k + distinct counts) matrix [sums | counts],
        count column ``ncol[j]`` for column j, filled from the columns (float32 rounds as
        ``astype`` does)."""
        k = len(cols)
        both = np.zeros((len(self.scenarios), k + (max(ncol) + 1 if ncol else 0)), dtype=dtype)
        for j, c in enumerate(cols):
            col = self.columns[c]
            both[col.codes, j] = col.s
            both[col.codes, k + ncol[j]] = col.n
        return both

    def _draws_by_scenarios(self, cols: Sequence[int], cache: np.ndarray, out: np.ndarray) -> None:
        """:meth:`_draws_blocks` for columns whose counts and sums are all non-negative
        integers, from the kept weight table, by blocks of scenarios: each block's weights
        (every resample of up to ``_JOINT_BLOCK_CELLS / resamples`` scenarios, as float32) are
        multiplied with the block's rows of every column's dense [sums | distinct counts] at
        once and added up. Integer products and sums below 2**24 are exact in float32 whatever
        their order (checked on the totals, else the block sums again in float64, exact below
        2**53), so the draws are bit for bit those of the groups of columns (the same quotient
        of the same two integers), with the weights converted once instead of once per group
        (at 20M generated rows, 333,334 scenarios, a group held 25 columns)."""
        g, b = len(self.scenarios), self.resamples
        tick = self.tick
        # columns at a time: their totals (resamples x columns, float32) bounded by
        # _GROUP_BYTES, and no wider than the groups' width unless that is below 512 columns
        # (the count columns are matched within a part, pair by pair among equal sums: with
        # 20,000 columns over 2,000 scenarios a part of 16,777 took 23 s against the groups' 9 s)
        width = max(1, min(_GROUP_BYTES // (8 * b), max(_GROUP_BYTES // (16 * g), 512), len(cols)))
        for c0 in range(0, len(cols), width):
            part = list(range(c0, min(len(cols), c0 + width)))
            k = len(part)
            columns = [self.columns[cols[pos]] for pos in part]
            ncol = self._distinct_counts([cols[pos] for pos in part])
            u = max(ncol) + 1
            rows_per = max(1, min(g, stats._JOINT_BLOCK_CELLS // b, _GROUP_BYTES // (4 * (k + u))))
            # each column's slice of scenarios per block: its codes are sorted and unique
            bounds = [np.searchsorted(col.codes, np.arange(0, g + rows_per, rows_per)) for col in columns]
            for dtype in (np.float32, np.float64):
                total = np.zeros((b, k + u), dtype=dtype)
                dense = np.zeros((rows_per, k + u), dtype=dtype)
                w = np.empty((b, rows_per), dtype=dtype)
                for i, s0 in enumerate(range(0, g, rows_per)):
                    s1 = min(g, s0 + rows_per)
                    m = s1 - s0
                    block = dense[:m]
                    block[...] = 0
                    for j, col in enumerate(columns):
                        lo, hi = bounds[j][i], bounds[j][i + 1]
                        if hi > lo:
                            at = col.codes[lo:hi] - s0
                            block[at, j] = col.s[lo:hi]
                            block[at, k + ncol[j]] = col.n[lo:hi]
                    np.copyto(w[:, :m], cache[:, s0:s1], casting="unsafe")
                    total += w[:, :m] @ block
                    if tick is not None and dtype is np.float32:  # in proportion to the scenarios done
                        tick(k * s1 // g - k * s0 // g)
                del dense, w
                if dtype is np.float64 or float(total.max(initial=0.0)) < 2.0**24:
                    break
            t = total.astype(np.float64, copy=False)
            del total
            ts, tn = t[:, :k], t[:, k:][:, ncol]
            with np.errstate(invalid="ignore", divide="ignore"):
                out[:, part] = np.where(tn > 0, ts / tn, np.nan)

    def _distinct_counts(self, cols: Sequence[int]) -> list[int]:
        """For each column, the index of its count column among the distinct ones (columns
        whose scenario codes and counts are equal share one), in order of first appearance."""
        out: list[int] = []
        seen: dict[tuple[int, float], list[tuple[int, int]]] = {}
        distinct = 0
        for c in cols:
            col = self.columns[c]
            key = (int(col.codes.size), float(col.n.sum()))
            for other, idx in seen.get(key, []):
                o = self.columns[other]
                if np.array_equal(o.codes, col.codes) and np.array_equal(o.n, col.n):
                    out.append(idx)
                    break
            else:
                seen.setdefault(key, []).append((c, distinct))
                out.append(distinct)
                distinct += 1
        return out

    def run(self) -> None:
        """Compute every pending interval (one pass over the resamples), then clear them.
        Draws of a column are kept, so a later request on it (a contrast on two scorecard
        cells) reuses them."""
        if not self.pending:
            return
        need = sorted({i for r in self.pending for i in (r.a, r.b) if i is not None} - set(self._draws))
        # a progress line over the columns drawn and the intervals read off them, when the
        # caller gave a bar factory (the CLI on a terminal) and the pass is long
        bar = (self.progress_bar("bootstrap intervals", len(need) + len(self.pending))
               if self.progress_bar is not None and len(self.pending) >= PROGRESS_MIN_REQUESTS else None)
        self.tick = bar
        try:
            self._run(need, bar)
        finally:
            self.tick = None
            if bar is not None:
                bar(None)

    def _run(self, need: list[int], bar: Any) -> None:
        if need:
            d = self.draws(need)
            for j, c in enumerate(need):
                self._draws[c] = d[:, j]
                self.columns[c].release()
        self.tick = None
        for i, r in enumerate(self.pending):
            if bar is not None and i % PROGRESS_STEP == PROGRESS_STEP - 1:
                bar(PROGRESS_STEP)
            x = self._draws[r.a] if r.b is None else self._draws[r.a] - self._draws[r.b]
            lo, hi, undefined = stats.joint_percentile(x, self.clusters(r.a, r.b), self.confidence)
            r.target[r.keys[0]], r.target[r.keys[1]] = lo, hi
            kind = r.where.split(":", 1)[0] if r.where else "other"
            self.computed[kind] = self.computed.get(kind, 0) + 1
            if undefined:
                self.undefined.append({"where": r.where, "undefined": undefined,
                                       "interval": lo is not None})
        self.pending = []

    def record(self) -> dict[str, Any]:
        """What results.json records about the intervals this bootstrap computed."""
        return {
            "method": stats.JOINT_BOOTSTRAP_METHOD,
            "weights": WEIGHTS,
            "scenarios": len(self.scenarios) if self.n_scenarios is None else self.n_scenarios,
            "cluster": self.unit,
            "clusters": len(self.scenarios),
            "resamples_requested": self.resamples_requested,
            "resamples": self.resamples,
            "budget": self.budget,
            "seed": self.seed,
            "seed_from": "derive_seed(bootstrap.seed, 'joint_bootstrap')",
            "interval": "percentile",
            "confidence": self.confidence,
            "computed": dict(sorted(self.computed.items())),
            "undefined": self.undefined,
            "undefined_note": ("resamples in which a statistic's weighted count was 0 (none of its "
                               "scenarios drawn) are undefined, left out of its percentiles; with more "
                               "than half undefined the interval is null"),
        }


# ---------------------------------------------------------------------------- the reduction


def _exact_integers(x: np.ndarray) -> bool:
    """True when ``x`` holds finite integers, no -0.0, with ``size * max|x| < 2**53``: every
    sum of any of them, in any order, is then exact (the same double)."""
    if not x.size:
        return False
    top = float(np.abs(x).max())
    return (top * x.size < 2.0**53 and bool(np.all(x == np.floor(x)))
            and not bool(np.any(np.signbit(x) & (x == 0))))


def _segments(frame: pl.DataFrame, keys: list[str], value: str) -> pl.DataFrame:
    """Per distinct ``keys``: n, sum, sumsq of ``value``, summed in canonical order."""
    f = frame.sort([*keys, value])
    if f.height == 0:
        return f.select(keys).with_columns(pl.lit(0, pl.Int64).alias("n"), pl.lit(0.0).alias("sum"),
                                           pl.lit(0.0).alias("sumsq"))
    change = pl.any_horizontal([pl.col(k).ne_missing(pl.col(k).shift(1)) for k in keys])
    starts = np.flatnonzero(f.select(change.fill_null(True).alias("c"))["c"].to_numpy())
    x = f[value].to_numpy().astype(np.float64)
    n = np.diff(np.r_[starts, x.size])
    head = f.select(keys)[starts.tolist()] if starts.size else f.select(keys).clear()
    return head.with_columns(pl.Series("n", n, pl.Int64), pl.Series("sum", np.add.reduceat(x, starts)),
                             pl.Series("sumsq", np.add.reduceat(x * x, starts)))


def cell_reduction(rows: pl.DataFrame, cfg: Config, scenarios: Sequence[str] | None = None) -> pl.DataFrame:
    """Per (field, variant, judge, subset, scenario) of the scorecard's cells: n, sum, sumsq.

    Rows are those of scorecard cells (:data:`workbench.analysis.scorecard.CELL_ROW_EXCLUDE`) with a
    valid value of the field; ``judge`` null = judges pooled (the all-scenario and subset
    cells), ``subset`` null = all scenarios. ``code``: the scenario's position in
    ``scenarios`` (the run's index, :func:`scenario_index` of ``rows`` when not given).
    """
    base = cell_rows(rows)
    parts = []
    for fld in cfg.score_names:
        v = (base.filter(pl.col(fld).is_not_null())
             .select(pl.lit(fld).alias("field"), "variant", "judge",
                     pl.col("scenario").cast(pl.String), pl.col(fld).cast(pl.Float64).alias("value")))
        per_judge = _segments(v, ["field", "variant", "judge", "scenario"], "value")
        pooled = _segments(v.drop("judge"), ["field", "variant", "scenario"], "value")
        parts += [per_judge.with_columns(pl.lit(None, pl.String).alias("subset")),
                  pooled.with_columns(pl.lit(None, pl.String).alias("judge"), pl.lit(None, pl.String).alias("subset"))]
        for name in cfg.subsets:
            vs = (base.filter(pl.col(fld).is_not_null() & subset_filter(cfg, name))
                  .select(pl.lit(fld).alias("field"), "variant", pl.col("scenario").cast(pl.String),
                          pl.col(fld).cast(pl.Float64).alias("value")))
            parts.append(_segments(vs, ["field", "variant", "scenario"], "value")
                         .with_columns(pl.lit(None, pl.String).alias("judge"), pl.lit(name).alias("subset")))
    cols = ["field", "variant", "judge", "subset", "scenario", "n", "sum", "sumsq"]
    schema = {"field": pl.String, "variant": pl.String, "judge": pl.String, "subset": pl.String,
              "scenario": pl.String, "n": pl.Int64, "sum": pl.Float64, "sumsq": pl.Float64}
    index = pl.DataFrame({"scenario": list(scenario_index(rows) if scenarios is None else scenarios)},
                         schema={"scenario": pl.String}).with_row_index("code")
    if not parts:
        return pl.DataFrame(schema=schema).join(index, on="scenario", how="left")
    red = pl.concat([p.select(cols).cast(schema) for p in parts])
    out = red.join(index, on="scenario", how="left", maintain_order="left")
    if out["code"].null_count():
        raise ValueError("a scenario of the reduction is not in the run's scenario index")
    return out
