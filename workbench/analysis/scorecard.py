"""Scorecard: every mean with its valid n, rows, clusters, error bars and evidence status.

Beside each valid mean stand the explicitly named counterfactuals a reader needs to see
what the missing rows could have done: ``zero_filled_mean`` (what ``Number(x) || 0`` or
``fillna(0)`` prints: the silent-zero reducer), and ``lower_bound``/``upper_bound`` (every
non-valid row at the rubric minimum/maximum). They are computed from sums and counts;
no score is ever filled in. A cell is ``measured`` only when it reaches the preregistered
``min_valid_n`` and ``min_clusters``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import polars as pl

from workbench import stats
from workbench.common import schemas, vocab
from workbench.common.config import KEY_FIELDS, Config
from workbench.common.vocab import MISSING_PLANNED, CellStatus
from workbench.ingest import clusters, selection
from workbench.ingest.selection import CELL_ROW_EXCLUDE, cell_rows, subset_filter  # noqa: F401  (re-exported: row selections live there)
from workbench.reduce import codes as reduce_codes

if TYPE_CHECKING:
    from workbench.reduce.sufficient import JointBootstrap

# CELL_ROW_EXCLUDE and cell_rows are row selections (workbench.ingest.selection); re-exported here.

RATE_CI_METHOD = "wilson_design_effect_t"
#: the cells' CR1 t(G - 1) interval, kept beside the CR2 headline (``cr1_ci_*``)
CR1_METHOD = "cluster_t"

STATUS_MEASURED, STATUS_INSUFFICIENT, STATUS_NOT_MEASURED = vocab.names(CellStatus)


def cell_row_count(cell: pl.DataFrame) -> int:
    """Rows that exist for a cell, counting a conflicting key once (one judgment, no score)."""
    conflict = cell.filter(pl.col("bucket") == "conflict")
    keys = conflict.select(KEY_FIELDS).unique().height if conflict.height else 0
    return cell.height - conflict.height + keys


def evidence_status(valid_n: int, clusters: int, cfg: Config) -> str:
    """``measured`` / ``insufficient`` / ``not_measured`` against the preregistered minimums."""
    if valid_n == 0:
        return STATUS_NOT_MEASURED
    if valid_n >= cfg.min_valid_n and clusters >= cfg.min_clusters:
        return STATUS_MEASURED
    return STATUS_INSUFFICIENT


def summarize_cell(values: np.ndarray, clusters: np.ndarray, n_rows: int, cfg: Config,
                   key: tuple[Any, ...] = (), joint: JointBootstrap | None = None,
                   column: int | None = None) -> dict[str, Any]:
    """One cell's numbers from its valid values (with scenario labels) and its row count.

    ``boot_low``/``boot_high``: the joint cluster bootstrap (:class:`workbench.reduce.sufficient.JointBootstrap`).
    With ``joint`` (the run's), the interval is requested from it (on ``column``, the cell's
    per-scenario sums when already registered) and filled in when ``joint.run()`` is
    called; without, a bootstrap over this cell's own scenarios runs at once (the same
    weights a run over exactly these scenarios would draw). ``key`` names the cell in the
    bootstrap's record.

    ``zero_filled_mean`` = sum(valid) / rows; ``lower_bound``/``upper_bound`` = (sum(valid)
    + (rows - valid_n) * min|max) / rows. All null when ``rows`` is 0.

    Error bars (clusters: the config's cluster, by default the scenario): ``ci_low``/``ci_high``
    the CR2 t interval with the Bell-McCaffrey df ``df`` (``ci_method`` ``cluster_cr2_bm``,
    ``se_cr2`` its standard error; :func:`workbench.stats.cr2_mean_from_sums`, the closed forms
    of :func:`workbench.stats.cluster_mean_cr2` from the per-cluster counts and residual
    sums); beside it the CR1 t(G - 1) interval ``cr1_ci_low``/``cr1_ci_high`` (``cr1_method``
    ``cluster_t``, ``se_clustered`` its standard error; the headline before); ``se`` is the
    naive standard error sd / sqrt(valid_n), which ignores clustering (beside only). A
    zero-width interval (every cluster at the same mean) makes the cell ``insufficient``.
    """
    # canonical order (scenario, value): float sums do not depend on the order of input lines
    if values.size:
        order = np.lexsort((values, clusters.astype(str)))
        values, clusters = values[order], clusters[order]
    out = _cell_record(values, stats.cell_summary(values, clusters, cfg.confidence, bootstrap=False), n_rows, cfg)
    from workbench.reduce.sufficient import JointBootstrap

    jb = joint if joint is not None else JointBootstrap.for_scenarios(sorted(set(map(str, clusters.tolist()))), cfg)
    col = column if column is not None else jb.add_values(clusters, values)
    jb.request(out, col, where=_where(key))
    if joint is None:
        jb.run()
    return out


def _where(key: tuple[Any, ...]) -> str:
    return "scorecard:" + "/".join("" if k is None else str(k) for k in key)


def _cell_record(values: np.ndarray, cs: stats.CellStats, n_rows: int, cfg: Config) -> dict[str, Any]:
    """:func:`summarize_cell`'s record (bootstrap interval not yet filled in) from values in
    canonical (scenario, value) order and their :class:`~workbench.stats.CellStats`."""
    lo, hi = cfg.value_range
    n = int(values.size)
    total = float(values.sum()) if n else 0.0
    missing = n_rows - n
    zero = total / n_rows if n_rows else None
    return {
        "mean": cs.mean,
        "valid_n": n,
        "rows": int(n_rows),
        "clusters": cs.clusters,
        "cluster": cfg.cluster_name,
        "zero_filled_mean": zero,
        "zero_filled_diff": (zero - cs.mean) if (zero is not None and cs.mean is not None) else None,
        "lower_bound": (total + missing * lo) / n_rows if n_rows else None,
        "upper_bound": (total + missing * hi) / n_rows if n_rows else None,
        "se": cs.se,
        "se_clustered": cs.se_clustered,
        "se_cr2": cs.se_cr2,
        "df": cs.df_cr2,
        # headline: CR2 with Bell-McCaffrey df (CR1 t(G - 1) under-covered with unequal
        # clusters at 3-5 scenarios: 92.1-92.4 %); the CR1 interval beside it
        "ci_low": cs.ci_low_cr2,
        "ci_high": cs.ci_high_cr2,
        "ci_method": stats.CR2_METHOD if cs.ci_low_cr2 is not None else None,
        "cr1_ci_low": cs.ci_low,
        "cr1_ci_high": cs.ci_high,
        "cr1_method": CR1_METHOD if cs.ci_low is not None else None,
        "boot_low": cs.boot_low,
        "boot_high": cs.boot_high,
        "icc": cs.icc,
        "design_effect": cs.design_effect,
        "status": (STATUS_INSUFFICIENT if degenerate_interval(cs.ci_low, cs.ci_high)
                   else evidence_status(n, cs.clusters, cfg)),
    }


def degenerate_interval(low: float | None, high: float | None) -> bool:
    """A zero-width interval (every cluster shows the same mean: a degenerate design, e.g.
    every judgment the same score): it measures no uncertainty, so its cell is
    ``insufficient``, never ranked as measured, and the gate names it."""
    return low is not None and high is not None and low == high


def _stable_order(*keys: np.ndarray) -> np.ndarray:
    """Indices sorting by ``keys`` (the first most significant), ties in input order: one
    stable sort per key, least significant first, each on the narrowest unsigned type that
    holds it (numpy radix-sorts 16-bit keys). Each narrow key is made when its pass comes
    (not all of them first: at 5M rows each was 8 to 16 MB more at the scorecard's peak)."""
    n = keys[0].size if keys else 0
    order = None  # the identity (the first sort needs no gather)
    for k in reversed(keys):
        for kk in _radix_keys(k):
            order = np.argsort(kk, kind="stable") if order is None else order[np.argsort(kk[order], kind="stable")]
            del kk
    return np.arange(n) if order is None else order


def _radix_keys(k: np.ndarray) -> Iterator[np.ndarray]:
    """The keys of :func:`_stable_order`'s passes for one key, least significant first, one
    at a time: a key below 2**32 as two 16-bit keys, the low half first (a stable sort by the
    low half, then by the high half, is the stable sort by the key: two radix passes)."""
    top = int(k.max()) if k.size else 0
    if 0 <= int(k.min(initial=0)) and top < 2**32:
        if top < 2**16:
            yield k.astype(np.uint16)
        else:
            yield (k & 0xFFFF).astype(np.uint16)
            yield (k >> 16).astype(np.uint16)
    else:
        yield k.astype(np.int64)


def _value_rank(x: np.ndarray) -> np.ndarray:
    """Integers in the order of the values, equal for equal values (0.0 and -0.0 too): the
    offset from the minimum for integer scores on a narrow range, else the rank."""
    if x.size == 0:
        return np.zeros(0, dtype=np.int64)
    lo, hi = float(x.min()), float(x.max())
    if hi - lo < 2**16 and np.all(x == np.floor(x)):
        return (x - lo).astype(np.uint16)  # the narrowest type the sort takes (a radix pass)
    return np.unique(x, return_inverse=True)[1].reshape(-1)


class _CellValues:
    """The rows of every scorecard cell, prepared once.

    Keyed rows carry integer codes of their variant and judge (in the order the cells are
    listed) and their bucket flags; the rows of cells (:func:`workbench.ingest.selection.in_cells`)
    carry their scenario's position in the run's scenario index (monotone in the names: the
    same cluster codes as the names); per field, the valid values are stably sorted by
    (scenario, value) once, so that :meth:`slices` gives each cell's values as a contiguous
    slice in canonical order after one more stable sort by cell (integer scores: one sort by
    (cell, scenario, value) in :meth:`slices`, :class:`_IntegerValues`).
    """

    def __init__(self, rows: pl.DataFrame, cfg: Config, scenarios: list[str],
                 view: reduce_codes.KeyedCodes | None = None) -> None:
        # Only what the cells need is kept, per keyed row: bucket flags, variant and judge
        # codes, subset membership; per field, the valid values of cell rows with their
        # positions and scenario codes (int32); the keys of conflicting rows. Never a copy of
        # the row table's columns for the life of the stage. With ``view`` (the run's coded
        # keyed rows) the flags and codes come from it: the same rows, in the same order.
        self.cfg = cfg
        bucket = pl.col("bucket")
        subsets = list(cfg.subsets)
        coded = view is not None and view.usable
        if coded:
            assert view is not None
            self.height = view.height
            self.in_cells = ~view.is_bucket(vocab.Bucket.DUPLICATE.value, MISSING_PLANNED)
            self.conflict = view.is_bucket(vocab.Bucket.CONFLICT.value)
            self.planned = view.is_bucket(MISSING_PLANNED)
            self.subsets = {name: view.subset_mask(name) for name in subsets}
        else:
            flags = (rows.lazy().filter(selection.keyed())
                     .select(selection.in_cells().alias("in_cells"), (bucket == "conflict").alias("conflict"),
                             (bucket == MISSING_PLANNED).alias("planned"),
                             *[subset_filter(cfg, name).fill_null(False).alias(f"subset{i}")
                               for i, name in enumerate(subsets)])
                     .collect())
            self.height = flags.height
            self.in_cells = flags["in_cells"].to_numpy()
            self.conflict = flags["conflict"].to_numpy()
            self.planned = flags["planned"].to_numpy()
            self.subsets = {name: flags[f"subset{i}"].to_numpy() for i, name in enumerate(subsets)}
            del flags
        self.labels = {}
        for c in ("variant", "judge"):
            if coded:
                assert view is not None
                # label_codes(nulls="as_text") from the view's codes (nulls first): the same
                # levels, reordered
                first = view.levels(c)
                levels = sorted(first, key=lambda v: (str(v), v is None))
                where = {v: i for i, v in enumerate(levels)}
                perm = np.array([where[v] for v in first], dtype=reduce_codes.index_dtype(len(first)))
                if perm.size and np.array_equal(perm, np.arange(perm.size)):
                    codes = view.codes(c)  # the same order (no null label): the view's own array
                else:
                    codes = perm[view.codes(c)] if perm.size else np.zeros(view.height, dtype=np.int32)
            else:
                col = rows.lazy().filter(selection.keyed()).select(c).collect().to_series()
                codes, levels = reduce_codes.label_codes(col)
                del col
            # the view's narrow codes kept as they are (index() adds them into a wider identifier)
            self.labels[c] = (codes.astype(np.int32, copy=False) if codes.dtype.itemsize > 4 and len(levels) < 2**31
                              else codes, levels)
        self.conflict_pos = np.flatnonzero(self.conflict)  # conflicting rows among keyed rows
        self.conflict_keys = (view.conflict_keys() if coded and view is not None else
                              rows.lazy().filter(selection.keyed()).filter(bucket == "conflict")
                              .select(KEY_FIELDS).collect())
        self.base_pos = np.flatnonzero(self.in_cells)  # positions of the cell rows among keyed rows
        self.cell_rows = int(self.base_pos.size)
        if self.height < 2**31:
            self.base_pos = self.base_pos.astype(np.int32)
        cell_rows_ = rows.lazy().filter(selection.keyed()).filter(selection.in_cells())
        # each cell row's cluster (config cluster:, by default its scenario) as its position in
        # the run's cluster index (``scenarios``, the joint bootstrap's): every clustered
        # number of a cell (CR1, ICC, design effect, bootstrap sums) is by cluster
        if coded and view is not None and view.levels("cluster") == list(scenarios):
            code = view.codes("cluster")[self.base_pos]  # positions in the run's cluster index
        else:
            code = reduce_codes.scenario_codes(
                cell_rows_.select(clusters.column(rows)).collect().to_series(), scenarios)
        code = code.astype(np.int32, copy=False) if len(scenarios) < 2**31 else code
        self._code = code
        self._rows = rows
        # the cell rows' mask, evaluated once (not once per field)
        self._cell_mask = rows.select((selection.keyed() & selection.in_cells()).fill_null(False)
                                      .alias("m")).to_series()

    def drop_index_inputs(self) -> None:
        """Free what only :meth:`index` reads (the keyed rows' flags, codes and positions),
        once the indexes are built: :meth:`field` reads none of it, and it held about 0.1 GB
        at 5M rows while every field was sorted."""
        del self.in_cells, self.conflict, self.planned, self.subsets, self.labels, self.conflict_pos
        del self.conflict_keys, self.base_pos

    def field(self, fld: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The valid values of field ``fld`` on cell rows, stably sorted by (scenario, value):
        (their positions among the cell rows, the values, their scenario codes). Built per
        field when its cells are computed (one field's arrays at a time, not every field's
        for the life of the stage). Integer values on a narrow range (:func:`workbench.stats.small_integers`)
        are returned unsorted, in row order, as :class:`_IntegerValues`: :meth:`slices` then
        sorts them by (cell, scenario, value) in one sort of a packed key."""
        col = self._rows.get_column(fld).filter(self._cell_mask)
        idx = np.flatnonzero(col.is_not_null().to_numpy())
        x = col.drop_nulls().to_numpy().astype(np.float64, copy=False)  # the values at idx
        del col
        idx = idx.astype(np.int32) if self.cell_rows < 2**31 else idx
        c = self._code[idx]
        small = stats.small_integers(x)
        if small is not None:  # integer scores: sorted per list of cells, by one key (slices)
            lo, r, _ = small
            del x
            return idx, _IntegerValues(lo, r), c
        order = _stable_order(c, _value_rank(x))
        # gathered one at a time (each unsorted array freed as its sorted one is made)
        idx = idx[order]
        x = x[order]
        return idx, x, c[order]

    def index(self, by: list[str], subset: str | None) -> tuple[list[tuple[Any, ...]], dict[str, np.ndarray],
                                                                np.ndarray]:
        """Sorted cell keys; their counts (``present``, ``conflict``, ``conflict_keys``,
        ``absent``: arrays in key order); each cell row's cell (``len(keys)``: none)."""
        width = int(np.prod([len(self.labels[b][1]) for b in by]))
        narrow = np.int32 if width < 2**31 - 1 else np.int64  # half the bytes of every row-sized array
        ident = np.zeros(self.height, dtype=narrow)
        for b in by:
            codes, levels = self.labels[b]
            ident *= len(levels)
            ident += codes
        sel = np.ones(self.height, dtype=bool) if subset is None else self.subsets[subset]
        if width <= 4 * self.height + 1024:  # a lookup table no larger than the rows
            ids = np.flatnonzero(np.bincount(ident[sel], minlength=width))
            m = ids.size
            lut = np.full(width + 1, m, dtype=narrow)
            lut[ids] = np.arange(m)
            cell = lut[np.where(sel, ident, width)]
        else:  # many variants x judges, few of the combinations present
            ids = np.unique(ident[sel])
            m = ids.size
            cell = np.where(sel, np.searchsorted(ids, ident), m)
        keys = []
        for i in ids.tolist():
            key = []
            for b in reversed(by):
                levels = self.labels[b][1]
                i, j = divmod(i, len(levels))
                key.append(levels[j])
            keys.append(tuple(reversed(key)))
        counts = {"present": np.bincount(cell[self.in_cells], minlength=m + 1)[:m],
                  "conflict": np.bincount(cell[self.conflict], minlength=m + 1)[:m],
                  "absent": np.bincount(cell[self.planned], minlength=m + 1)[:m],
                  "conflict_keys": np.zeros(m, dtype=np.int64)}
        among = np.flatnonzero(sel[self.conflict_pos])  # selected conflicting rows
        if among.size:
            ck = (self.conflict_keys[among].with_columns(pl.Series("__cell", cell[self.conflict_pos[among]]))
                  .group_by("__cell").agg(pl.struct(list(KEY_FIELDS)).n_unique().alias("n")))
            counts["conflict_keys"][ck["__cell"].to_numpy()] = ck["n"].to_numpy()
        # each cell row's cell in the narrowest type that holds the m + 1 codes (a uint8 for
        # up to 255 cells): an array of the cell rows' length per list of cells, alive through
        # every field's slices (two int32 ones were 0.15 GB at 20M rows)
        return keys, counts, cell[self.base_pos].astype(reduce_codes.narrowest_unsigned(m), copy=False)

    @staticmethod
    def slices(base_cell: np.ndarray, m: int, arrays: tuple[np.ndarray, np.ndarray, np.ndarray]
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One field's (values, scenario codes, cell bounds) for the cells of an :meth:`index`
        (``m`` cells): cell i's values are ``values[bounds[i]:bounds[i + 1]]`` in canonical order."""
        idx, x, c = arrays
        cf = base_cell[idx]
        bounds = np.r_[0, np.cumsum(np.bincount(cf, minlength=m + 1))]
        if isinstance(x, _IntegerValues):
            sorted_ = x.sorted_by(cf, m, c)
            if sorted_ is not None:
                return (*sorted_, bounds)
            x, c, cf = x.in_canonical_order(c, cf)  # a key too wide to pack: the stable sorts
        order = _stable_order(cf)
        return x[order], c[order], bounds


class _IntegerValues:
    """One field's integer values as offsets from their minimum (``lo + r``, in row order),
    sorted with their scenario codes by a cell code in :meth:`sorted_by`.

    The arrays :meth:`sorted_by` gives are those of the stable sorts (by scenario and value
    in :meth:`_CellValues.field`, then by cell in :meth:`_CellValues.slices`), bit for bit:
    a sort of the packed key ``(cell, scenario, value)`` orders the rows as those sorts do up
    to ties, and tied rows hold equal values (``lo + r`` is the value itself: integers, and
    no -0.0, see :func:`workbench.stats.small_integers`), so the value and code arrays are the same. One
    ``np.sort`` of a uint32 key (numpy's vectorised quicksort: 0.02 s of CPU for 4.8M keys)
    replaces the four radix passes of ``np.argsort(kind="stable")`` (0.18 s each) and the
    random-access gathers between them (measured 2026-12-03 on the 5M-row benchmark file,
    ``benchmarks/stage_profile.py`` with 1000 resamples: the scorecard stage 7.7 -> 5.4 s of
    CPU)."""

    def __init__(self, lo: float, r: np.ndarray) -> None:
        self.lo, self.r = lo, r
        self.width = int(r.max()) + 1 if r.size else 1

    def sorted_by(self, cell: np.ndarray, m: int, c: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """(values, scenario codes) sorted by (``cell``, scenario code ``c``, value); None
        when the packed key needs more than 64 bits."""
        g = int(c.max()) + 1 if c.size else 1
        if float(m + 1) * g * self.width >= 2.0**63:
            return None
        kt = np.uint32 if (m + 1) * g * self.width < 2**32 else np.uint64
        key = cell.astype(kt)
        key *= kt(g)
        key += c.astype(kt, copy=False)
        key *= kt(self.width)
        key += self.r
        key.sort()  # unique order of the keys: no tie of different values
        r = key % kt(self.width)
        key //= kt(self.width)
        key %= kt(g)
        x = r.astype(np.float64)
        del r
        x += self.lo
        if key.dtype == np.uint32 and c.dtype == np.int32:  # codes below g < 2**31: the same bits
            return x, key.view(np.int32)
        return x, key.astype(c.dtype)

    def in_canonical_order(self, c: np.ndarray, cell: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(values, scenario codes, ``cell``) stably sorted by (scenario, value), as
        :meth:`_CellValues.field` sorts other values."""
        order = _stable_order(c, self.r)
        x = self.r[order].astype(np.float64)
        x += self.lo
        return x, c[order], cell[order]


def _per_scenario(values: np.ndarray, codes: np.ndarray, every: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A cell's per-scenario (scenario codes, counts, sums) from its values in canonical order
    (as workbench.reduce.sufficient.cell_reduction sums them), in the narrowest exact types while the
    cell waits for its registration (the bootstrap converts them back, the same values).
    ``every``: ``arange`` of the run's scenarios, shared as the codes of every cell with a value
    in each scenario (the codes are sorted, distinct positions in that index: then they are it);
    a copy per cell was 0.2 GB at 20M rows."""
    if not values.size:
        return np.zeros(0, np.intp), np.zeros(0), np.zeros(0)
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    n = np.diff(np.r_[starts, codes.size])
    from workbench.reduce.sufficient import _compact_counts, _compact_sums

    sums = _compact_sums(np.add.reduceat(values, starts))
    if every is not None and starts.size == every.size:
        present: np.ndarray | _Gaps = every
    elif every is not None and 2 * starts.size > every.size:  # most scenarios: keep the few others
        has = np.zeros(every.size, dtype=bool)
        has[codes[starts]] = True
        present = _Gaps(np.flatnonzero(~has).astype(every.dtype), every.size)
    else:
        present = codes[starts]
    return present, _compact_counts(n), sums


class _Gaps(NamedTuple):
    """The scenario codes of a cell that has values in most scenarios, as the few it lacks
    (``missing``, sorted) of ``g``: :meth:`codes` gives them back. Cells wait for their
    registration with the bootstrap field by field; their codes as int32 were 0.16 GB at 20M
    generated rows, where most (variant, judge) cells lack a handful of scenarios."""

    missing: np.ndarray
    g: int

    def codes(self) -> np.ndarray:
        keep = np.ones(self.g, dtype=bool)
        keep[self.missing] = False
        return np.flatnonzero(keep)


def _codes_of(present: np.ndarray | _Gaps) -> np.ndarray:
    """A waiting cell's scenario codes (:func:`_per_scenario`)."""
    return present.codes() if isinstance(present, _Gaps) else present


def scorecard(rows: pl.DataFrame, cfg: Config, joint: JointBootstrap | None = None,
              view: reduce_codes.KeyedCodes | None = None, release_view: bool = False) -> pl.DataFrame:
    """All scorecard cells: per variant (judges pooled), per variant x judge, per subset x variant.

    One row per (variant, judge, subset, field); ``judge`` is null when pooled and ``subset``
    null for all scenarios. Means are over valid values only; see :func:`summarize_cell`.
    The bootstrap intervals of all cells come from one joint pass over per-scenario sums
    (the sums of :func:`workbench.reduce.sufficient.cell_reduction`,
    :class:`workbench.reduce.sufficient.JointBootstrap`;
    ``joint``: the run's, shared with offsets and contrasts, else one for ``rows``).

    The rows are prepared once (:class:`_CellValues`: integer scenario codes; per field, one
    stable sort into (scenario, value) order and one more per list of cells, or, for integer
    scores, one ``np.sort`` of a packed (cell, scenario, value) key per list of cells: the
    same arrays, :class:`_IntegerValues`), so each cell is a contiguous slice of numpy
    arrays; the numbers are those of :func:`summarize_cell` on the cell's rows. ``view``:
    the run's coded keyed rows (:class:`workbench.reduce.codes.KeyedCodes`), when the census
    built them; ``release_view``: the caller reads the view no further, so every part of it is
    dropped once the cells are indexed (the pipeline's last use of its view).

    Memory: the fields are taken one at a time (each field's sorted arrays, about 16 bytes per
    valid value, exist for one field only), each cell keeping its record and its per-scenario
    sums; the cells are then registered with the bootstrap in the order of the records (cell
    by cell, field by field), so the bootstrap's columns and every number are those of a
    cell-by-cell pass.
    """
    from workbench.reduce import sufficient as reduce

    jb = joint if joint is not None else reduce.JointBootstrap.for_rows(rows, cfg)
    prep = _CellValues(rows, cfg, jb.scenarios, view)
    # Cells are every keyed combination, planned ones included: a variant (or judge) whose
    # planned judgments have no row at all still gets its cell (rows 0, not_measured), so
    # the gate cannot pass by the cell's absence.
    specs = [(["variant"], None), (["variant", "judge"], None), *[(["variant"], name) for name in cfg.subsets]]
    indexes = [prep.index(by, subset) for by, subset in specs]
    prep.drop_index_inputs()
    if release_view and view is not None:
        # the caller's view is read no further (release_view): its codes and masks go before
        # the fields are sorted and the bootstrap's pass (about 17 bytes a keyed row, 0.33 GB
        # at 20M rows); asked for again, a part is built again
        view.forget("")
    # Rows of a cell (cell_row_count): a conflicting key counts once (one judgment, no
    # score). Planned judgments with no row at all (a plan, --plan complete or a task list)
    # are rows of the cell without a score: they enter `rows`, the bounds and the
    # zero-filled mean.
    n_rows = [[int(p) - int(c) + int(k) + int(a) for p, c, k, a in
               zip(*(counts[n].tolist() for n in ("present", "conflict", "conflict_keys", "absent")), strict=True)]
              for _, counts, _ in indexes]
    # per spec, per field: each cell's (record, per-scenario sums), field by field
    done: list[dict[str, list[Any]]] = [{} for _ in specs]
    g = len(jb.scenarios)
    every = np.arange(g, dtype=reduce_codes.index_dtype(g))
    for fld in cfg.score_names:
        arrays = prep.field(fld)
        for j, (keys, _, base_cell) in enumerate(indexes):
            x, c, bounds = prep.slices(base_cell, len(keys), arrays)
            cells = []
            for i in range(len(keys)):
                values, codes = x[bounds[i]:bounds[i + 1]], c[bounds[i]:bounds[i + 1]]
                # codes are positions in the sorted scenario index: the clusters of the names
                rec = _cell_record(values, stats.cell_summary_sorted(values, codes, cfg.confidence),
                                   n_rows[j][i], cfg)
                cells.append((rec, _per_scenario(values, codes, every)))
            done[j][fld] = cells
            # the last cell's slices are views of x and c: dropped with them, so that the next
            # list of cells' arrays are not made while these are alive (0.2 GB at 20M rows)
            values = codes = None
            del x, c, bounds
        del arrays
    # the cell rows' arrays are no longer read: freed before the bootstrap's pass
    del prep
    indexes = [(keys, counts, None) for keys, counts, _ in indexes]
    records: list[dict[str, Any]] = []
    for (by, subset), (keys, counts, _), per_field in zip(specs, indexes, done, strict=True):
        absent = counts["absent"].tolist()
        for i, key in enumerate(keys):
            labels = dict(zip(by, key, strict=True))
            for fld in cfg.score_names:
                rec, (present, n, s) = per_field[fld][i]
                per_field[fld][i] = None  # registered below: its sums are the bootstrap's now
                # the record is the summary's own dict: the joint pass fills its boot_low/boot_high
                jb.request(rec, jb.add_sums(_codes_of(present), n, s),
                           where=_where((labels["variant"], labels.get("judge"), subset, fld)))
                rec.update({"variant": labels["variant"], "judge": labels.get("judge"), "subset": subset,
                            "field": fld, "absent": int(absent[i])})
                records.append(rec)
    jb.run()
    return pl.DataFrame(records, schema=_SCHEMA)


_SCHEMA = dict(schemas.SCORECARD.columns)  # defined once, in workbench.common.schemas


# --------------------------------------------------------------------------- binary rates


def flag_rates(rows: pl.DataFrame, cfg: Config, view: reduce_codes.KeyedCodes | None = None) -> pl.DataFrame:
    """Fabrication-flag rate per variant (and subset) with a scenario-clustered interval.

    ``ci_low``/``ci_high``: :func:`workbench.stats.clustered_proportion` over per-scenario
    counts (``ci_method`` ``wilson_design_effect_t``; a variant whose rate is 0 or 1 takes the
    pooled design effect of its subset's variants, as the census's missing rates do);
    ``wilson_low``/``wilson_high``: the plain Wilson interval, which treats rows as independent
    (ignores clustering; beside it, never headlined).

    A row is flagged when its flags list is non-empty; the denominator is rows where the
    flags field exists as a list (partial rows keep it; empty objects do not). ``view``: the
    run's coded keyed rows (:class:`workbench.reduce.codes.KeyedCodes`), when built.
    """
    out = _flag_rates_coded(view, cfg) if view is not None else None
    if out is None:
        out = _flag_rates_rows(rows, cfg)
    return pl.DataFrame(out, schema={"variant": pl.String, "subset": pl.String, "flagged": pl.Int64,
                                     "n": pl.Int64, "rate": pl.Float64, "ci_low": pl.Float64,
                                     "ci_high": pl.Float64, "ci_method": pl.String, "clusters": pl.Int64,
                                     "wilson_low": pl.Float64, "wilson_high": pl.Float64})


def _flag_records(parts: list[tuple[Any, str | None, np.ndarray, np.ndarray]], cfg: Config) -> list[dict[str, Any]]:
    """Flag-rate records from (variant, subset, per-cluster flagged, per-cluster rows); a variant
    at 0 or 1 takes the pooled design effect of its subset's variants (as the census does)."""
    pooled = {sub: stats.pooled_design_effect((f, n) for _, s2, f, n in parts if s2 == sub)
              for sub in {p[1] for p in parts}}
    return [_flag_record(v, sub, f, n, cfg, pooled[sub]) for v, sub, f, n in parts]


def _flag_record(variant: Any, subset: str | None, flagged_sc: np.ndarray, n_sc: np.ndarray,
                 cfg: Config, pooled: float | None = None) -> dict[str, Any]:
    """One flag-rate record from a variant's per-scenario flagged and row counts (scenario order)."""
    flagged, n = int(flagged_sc.sum()), int(n_sc.sum())
    lo, hi = stats.wilson_interval(flagged, n, cfg.confidence)
    clo, chi, _ = stats.clustered_proportion(flagged_sc, n_sc, cfg.confidence, design_effect_fallback=pooled)
    return {"variant": variant, "subset": subset, "flagged": flagged, "n": n,
            "rate": flagged / n if n else None, "ci_low": clo, "ci_high": chi,
            "ci_method": RATE_CI_METHOD, "clusters": int(n_sc.size),
            "wilson_low": lo, "wilson_high": hi}


def _flag_rates_coded(view: reduce_codes.KeyedCodes, cfg: Config) -> list[dict[str, Any]] | None:
    """:func:`flag_rates`' records from the run's coded keyed rows (None: not codable): the
    same rows, grouped by the same (variant, scenario) codes in the same sorted order."""
    if not view.usable or None in view.levels("variant"):
        return None
    rows = view.rows
    # the booleans on whole columns, then filtered (a filter first would copy the flags lists)
    flags = view.cached("flag_rates:flags", lambda: (
        rows.select(selection.keyed().fill_null(False).alias("keyed"),
                    pl.col("flags_present").fill_null(False).alias("present"),
                    (pl.col("flags").list.len() > 0).fill_null(False).alias("flagged"))
        .filter(pl.col("keyed"))))
    base = (~view.is_bucket(vocab.Bucket.DUPLICATE.value, MISSING_PLANNED, vocab.Bucket.CONFLICT.value)
            & flags["present"].to_numpy())
    flagged_rows = flags["flagged"].to_numpy()
    variants, levels = view.codes("variant"), view.levels("variant")
    scen = view.codes("cluster")  # per-cluster counts: the rate's clustered interval
    out = []
    for subset in [None, *cfg.subsets]:
        sel = base if subset is None else base & view.subset_mask(subset)
        keys, inv = reduce_codes.group_ids(variants[sel], scen[sel],
                                           inv_dtype=reduce_codes.index_dtype(sel.size))
        m = keys.shape[0]
        flagged = reduce_codes.count_where(inv, flagged_rows[sel], m)
        n = reduce_codes.count_where(inv, None, m)
        del inv
        bounds = np.flatnonzero(np.r_[True, keys[1:, 0] != keys[:-1, 0], True]) if m else np.zeros(1, np.int64)
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
            out.append((levels[int(keys[a, 0])], subset, flagged[a:b], n[a:b]))
    return _flag_records(out, cfg)


def _flag_rates_rows(rows: pl.DataFrame, cfg: Config) -> list[dict[str, Any]]:
    subset_cols = [f for spec in cfg.subsets.values() for f in spec]
    base = (rows.lazy().filter(selection.in_cells() & pl.col("flags_present") & ~pl.col("bucket").is_in(["conflict"]))
            .select(list(dict.fromkeys(["variant", "flags", *subset_cols])) + [pl.col(clusters.column(rows))
                                                                              .alias("__cluster")]).collect())
    out = []
    for subset in [None, *cfg.subsets]:
        sub = base.filter(subset_filter(cfg, subset))
        agg = sub.group_by("variant", "__cluster").agg(
            (pl.col("flags").list.len() > 0).sum().alias("flagged"), pl.len().alias("n")).sort("variant", "__cluster")
        for (variant,), g in sorted(agg.partition_by(["variant"], as_dict=True).items()):
            out.append((variant, subset, g["flagged"].to_numpy(), g["n"].to_numpy()))
    return _flag_records(out, cfg)


def _pass_column(rows: pl.DataFrame, cfg: Config) -> pl.Expr | None:
    if cfg.pass_field is not None:
        return pl.col("pass_value")
    if cfg.pass_threshold is not None:
        return pl.when(pl.col(cfg.headline).is_not_null()).then(pl.col(cfg.headline) >= cfg.pass_threshold)
    return None


def pass_rates(rows: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """Pass rate per variant (and subset) with a clustered interval, and pass^k.

    The outcome is a configured boolean field or ``headline >= pass.threshold``; rows with
    no outcome (no valid score) are not passes and not failures: they are out of ``n``.
    ``ci_low``/``ci_high``: :func:`workbench.stats.clustered_proportion` over per-scenario
    counts (rates vary by scenario; a variant at 0 or 1 takes the pooled design effect of its
    subset's variants; ``wilson_low``/``wilson_high`` treat rows as independent and are kept
    beside it only). ``gate_pass`` compares ``ci_low``, never the point estimate
    or pass^k, with ``pass.gate``.

    pass^k (``pass_hat_k``), with ``k`` = ``pass.k`` (null: not computed): an item is a
    (scenario, judge) pair; an item with c passes among n >= k outcomes contributes the
    unbiased C(c, k) / C(n, k) (:func:`workbench.stats.pass_hat_k`); ``pass_hat_k`` is their
    mean over ``units_with_k`` items, with the interval of :func:`workbench.stats.pass_k_interval`
    (``pass_hat_k_ci_low``/``_high``, ``pass_hat_k_ci_method`` ``wilson_design_effect_cr2_4bm``:
    Wilson on the effective number of outcomes from the CR2 variance, the t quantile at 4 x the
    Bell-McCaffrey df, clusters the cells' clusters); the CR1 clustered t interval clipped to [0, 1] beside it
    (``pass_hat_k_cr1_ci_low``/``_high``: it under-covered at 3-5 scenarios). Items with fewer than k outcomes are
    neither passes nor failures: ``units_short`` counts them and ``units_short_list`` names
    them (``scenario/judge``).
    """
    expr = _pass_column(rows, cfg)
    schema = {"variant": pl.String, "subset": pl.String, "passes": pl.Int64, "n": pl.Int64,
              "rate": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64, "ci_method": pl.String,
              "clusters": pl.Int64, "wilson_low": pl.Float64, "wilson_high": pl.Float64,
              "pass_hat_k": pl.Float64, "pass_hat_k_ci_low": pl.Float64, "pass_hat_k_ci_high": pl.Float64,
              "pass_hat_k_ci_method": pl.String, "pass_hat_k_cr1_ci_low": pl.Float64,
              "pass_hat_k_cr1_ci_high": pl.Float64,
              "k": pl.Int64, "units_with_k": pl.Int64, "units_short": pl.Int64,
              "units_short_list": pl.List(pl.String),
              "gate_threshold": pl.Float64, "gate_pass": pl.Boolean}
    if expr is None:
        return pl.DataFrame([], schema=schema)
    # Conflicting repeats are held out everywhere; a pass field, unlike a score, is not
    # nulled for them at ingest, so they are dropped here.
    subset_cols = [f for spec in cfg.subsets.values() for f in spec]
    base = (rows.lazy().filter(selection.in_cells() & (pl.col("bucket") != "conflict"))
            .with_columns(expr.alias("__pass")).filter(pl.col("__pass").is_not_null())
            .select(list(dict.fromkeys(["variant", "scenario", "judge", "__pass", *subset_cols]))
                    + [pl.col(clusters.column(rows)).alias("__cluster")]).collect())
    k = cfg.pass_k
    out = []
    for subset in [None, *cfg.subsets]:
        sub = base.filter(subset_filter(cfg, subset))
        groups = sorted(sub.partition_by(["variant"], as_dict=True).items())
        per_cluster = [g.group_by("__cluster").agg(pl.col("__pass").sum().alias("c"), pl.len().alias("n"))
                       .sort("__cluster") for _, g in groups]
        # a variant at 0 or 1 takes the pooled design effect of the subset's variants (as the census)
        pooled = stats.pooled_design_effect((p["c"].to_numpy(), p["n"].to_numpy()) for p in per_cluster)
        for ((variant,), g), per_sc in zip(groups, per_cluster, strict=True):
            passes, n = int(g["__pass"].sum()), g.height
            lo, hi = stats.wilson_interval(passes, n, cfg.confidence)
            clo, chi, _ = stats.clustered_proportion(per_sc["c"].to_numpy(), per_sc["n"].to_numpy(),
                                                     cfg.confidence, design_effect_fallback=pooled)
            phk = phk_lo = phk_hi = phk_cr1_lo = phk_cr1_hi = None
            phk_method: str | None = None
            with_k = short = 0
            short_list: list[str] = []
            if k is not None:
                per = g.group_by("scenario", "judge").agg(pl.col("__pass").sum().alias("c"),
                                                          pl.len().alias("n"),
                                                          pl.col("__cluster").first()).sort("scenario", "judge")
                full = per.filter(pl.col("n") >= k)
                lacking = per.filter(pl.col("n") < k)
                short = lacking.height
                short_list = [f"{s}/{j}" for s, j in lacking.select("scenario", "judge").iter_rows()]
                with_k = full.height
                if full.height:
                    c_, n_, sc = full["c"].to_numpy(), full["n"].to_numpy(), full["__cluster"].to_numpy()
                    # items clustered by their cluster; headline: Wilson on the CR2 effective n at 4 x the
                    # BM df (the CR1 t interval beside it under-covered at 3-5 scenarios: 82-92 %)
                    head = stats.pass_k_interval(c_, n_, sc, k, cfg.confidence)
                    before = stats.pass_k_interval(c_, n_, sc, k, cfg.confidence, method="cluster_t_clipped")
                    phk, phk_lo, phk_hi = head.estimate, head.ci_low, head.ci_high
                    phk_method = head.method if head.ci_low is not None else None
                    phk_cr1_lo, phk_cr1_hi = before.ci_low, before.ci_high
            gate = None if cfg.pass_gate is None or clo is None else bool(clo >= cfg.pass_gate)
            out.append({"variant": variant, "subset": subset, "passes": passes, "n": n,
                        "rate": passes / n if n else None, "ci_low": clo, "ci_high": chi,
                        "ci_method": RATE_CI_METHOD, "clusters": per_sc.height,
                        "wilson_low": lo, "wilson_high": hi,
                        "pass_hat_k": phk, "pass_hat_k_ci_low": phk_lo, "pass_hat_k_ci_high": phk_hi,
                        "pass_hat_k_ci_method": phk_method, "pass_hat_k_cr1_ci_low": phk_cr1_lo,
                        "pass_hat_k_cr1_ci_high": phk_cr1_hi,
                        "k": k, "units_with_k": with_k, "units_short": short, "units_short_list": short_list,
                        "gate_threshold": cfg.pass_gate, "gate_pass": gate})
    return pl.DataFrame(out, schema=schema)


# --------------------------------------------------------------------------- consistency


def consistency(rows: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """Rows whose numbers disagree with themselves, counted per judge x variant.

    ``overall_far_from_subscores``: valid headline more than ``consistency.overall_vs_subscores``
    points from the mean of the row's valid sub-scores (rows with no valid sub-score are not
    checked). ``honest_but_flagged``: valid ``honesty`` >= ``consistency.honesty_high`` with a
    non-empty flags list. ``checked`` is the number of rows each check could examine.
    """
    subs = list(cfg.subscores)
    hl = cfg.headline
    exprs: list[pl.Expr] = []
    if subs:
        sub_mean = pl.mean_horizontal([pl.col(s) for s in subs])
        checkable = pl.col(hl).is_not_null() & pl.any_horizontal([pl.col(s).is_not_null() for s in subs])
        exprs += [checkable.sum().alias("overall_checked"),
                  (checkable & ((pl.col(hl) - sub_mean).abs() > cfg.consistency_gap)).sum()
                  .alias("overall_far_from_subscores")]
    if "honesty" in cfg.score_names and cfg.flags is not None:
        chk = pl.col("honesty").is_not_null() & pl.col("flags_present")
        exprs += [chk.sum().alias("honesty_checked"),
                  (chk & (pl.col("honesty") >= cfg.honesty_high) & (pl.col("flags").list.len() > 0)).sum()
                  .alias("honest_but_flagged")]
    if not exprs:
        return pl.DataFrame()
    return (rows.lazy().filter(selection.in_cells() & (pl.col("bucket") != "conflict"))
            .group_by("judge", "variant").agg(exprs).sort("judge", "variant").collect())


# --------------------------------------------------------------------------- gate


OUT_OF_RANGE_GATE = 0.05
"""Most share of a cell's judgments whose headline is ``out_of_range`` the gate lets pass: more
means the rubric is not the scorer's scale (or the judge broke it), a gate failure."""


def gate(card: pl.DataFrame, cfg: Config, passes: pl.DataFrame | None = None,
         census: pl.DataFrame | None = None) -> dict[str, Any]:
    """The preregistered gate: every pooled headline cell over all scenarios is ``measured``,
    and, when ``pass.gate`` is configured, every variant's clustered lower bound (``ci_low``)
    reaches it.

    Returns ``{passed, field, min_valid_n, min_clusters, failing: [{variant, valid_n, rows,
    clusters, status, why}], pass_gate, pass_failing: [{variant, ci_low, rate, passes, n,
    why}]}``.
    """
    pooled = card.filter(pl.col("judge").is_null() & pl.col("subset").is_null()
                         & (pl.col("field") == cfg.headline))
    failing = []
    for r in pooled.filter(pl.col("status") != STATUS_MEASURED).iter_rows(named=True):
        why = []
        if r["valid_n"] < cfg.min_valid_n:
            why.append(f"{r['valid_n']} valid < {cfg.min_valid_n} preregistered")
        if r["clusters"] < cfg.min_clusters:
            unit = "scenarios" if cfg.cluster is None else f"clusters ({cfg.cluster_name})"
            why.append(f"{r['clusters']} {unit} < {cfg.min_clusters} preregistered")
        if degenerate_interval(r["ci_low"], r["ci_high"]):
            why.append("zero-width interval: every cluster shows the same mean (a degenerate design), "
                       "so it measures no uncertainty")
        failing.append({"variant": r["variant"], "valid_n": r["valid_n"], "rows": r["rows"],
                        "clusters": r["clusters"], "status": r["status"], "why": "; ".join(why)})
    # a cell (judge x variant, from the census) with more than OUT_OF_RANGE_GATE of its
    # judgments out of the rubric: its valid mean is over the values that happen to fit
    range_failing = []
    if census is not None and census.height and "out_of_range" in census.columns:
        for r in census.filter(pl.col("judgments") > 0).sort("variant", "judge").iter_rows(named=True):
            share = r["out_of_range"] / r["judgments"]
            if share > OUT_OF_RANGE_GATE:
                range_failing.append({
                    "variant": r["variant"], "judge": r["judge"], "out_of_range": r["out_of_range"],
                    "judgments": r["judgments"], "share": share,
                    "why": (f"judge {r['judge']}: {r['out_of_range']} of {r['judgments']} values out_of_range "
                            f"({100 * share:.0f}% > {100 * OUT_OF_RANGE_GATE:g}%) of the rubric "
                            f"{cfg.rubric_min:g}..{cfg.rubric_max:g}: is the rubric the scorer's scale?")})
    by_variant = {f["variant"]: f for f in failing}
    for f in range_failing:
        if f["variant"] in by_variant:
            cur = by_variant[f["variant"]]
            cur["why"] = "; ".join(x for x in (cur["why"], f["why"]) if x)
        else:
            c = pooled.filter(pl.col("variant") == f["variant"])
            r = c.row(0, named=True) if c.height else {}
            entry = {"variant": f["variant"], "valid_n": r.get("valid_n"), "rows": r.get("rows"),
                     "clusters": r.get("clusters"), "status": r.get("status"), "why": f["why"]}
            failing.append(entry)
            by_variant[f["variant"]] = entry
    pass_failing = []
    if passes is not None and cfg.pass_gate is not None and passes.height:
        for r in passes.filter(pl.col("subset").is_null() & (pl.col("gate_pass") != True)).iter_rows(  # noqa: E712
                named=True):
            pass_failing.append({
                "variant": r["variant"], "ci_low": r["ci_low"], "rate": r["rate"],
                "passes": r["passes"], "n": r["n"],
                "why": (f"pass rate lower bound {r['ci_low']:.3f} < {cfg.pass_gate:g} "
                        f"({r['passes']}/{r['n']} passed; "
                        f"{'scenario' if cfg.cluster is None else cfg.cluster_name}-clustered interval)"
                        if r["ci_low"] is not None else "no pass-rate interval")})
    return {"passed": not failing and not pass_failing, "min_valid_n": cfg.min_valid_n,
            "min_clusters": cfg.min_clusters, "field": cfg.headline, "failing": failing,
            "pass_gate": cfg.pass_gate, "pass_failing": pass_failing,
            "out_of_range_gate": OUT_OF_RANGE_GATE, "range_failing": range_failing}


# --------------------------------------------------------------------------- config vs rows


def check_names(rows: pl.DataFrame, cfg: Config) -> list[str]:
    """Check the names a config uses against the rows; return warnings, raise on nonsense.

    A subset that selects no row at all, or a configured contrast naming a variant with no
    row, is a :class:`~workbench.common.errors.ConfigError` (exit 2): its cells would silently be
    empty. A subset value that matches nothing while others do is a warning (a typo, or a
    scenario that produced no row): returned as text for results.json and the terminal.
    """
    from workbench.common.errors import ConfigError

    cols = list(dict.fromkeys(["variant", *[f for spec in cfg.subsets.values() for f in spec]]))
    keyed = rows.lazy().filter(selection.keyed()).select(cols).collect()
    warnings: list[str] = []
    for name, spec in cfg.subsets.items():
        if keyed.filter(subset_filter(cfg, name)).height == 0:
            raise ConfigError(f"config: subset {name!r} selects no row of the inputs "
                              f"({'; '.join(f'{k}: {list(v)}' for k, v in spec.items())})")
        for fld, values in spec.items():
            known = set(keyed[fld].drop_nulls().to_list())
            unknown = [v for v in values if v not in known]
            if unknown:
                warnings.append(f"subset {name!r}: {fld} value(s) {', '.join(unknown)} occur in no row")
    if cfg.contrasts is not None:
        variants = set(keyed["variant"].drop_nulls().to_list())
        for a, b in cfg.contrasts:
            missing = [v for v in (a, b) if v not in variants]
            if missing:
                raise ConfigError(f"config: contrast [{a}, {b}] names variant(s) with no row: "
                                  f"{', '.join(missing)} (variants: {', '.join(sorted(variants))})")
    return warnings
