"""Integer codes of row labels, for stages that group rows with numpy instead of string keys.

A stage that loops over cells (the scorecard) or builds per-scenario tables (the census's
rate intervals, the missingness tests) prepares its rows once: each label column becomes
integer codes whose order is the order the stage needs, so sorting or grouping the codes
gives the same groups, in the same order, as sorting the strings. Every
:mod:`workbench.stats` function codes cluster labels with ``np.unique``; codes monotone in
the label order give it the same codes, hence the same numbers, at a fraction of the cost.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
import polars as pl

from workbench.common import vocab
from workbench.common.config import KEY_FIELDS, Config
from workbench.ingest import selection


def label_codes(col: pl.Series, nulls: str = "as_text") -> tuple[np.ndarray, list[Any]]:
    """(code per row, labels): each code is its value's position in ``labels``, the distinct
    values of ``col`` in sorted order (strings by code point, as Python and polars sort them).

    ``nulls``: where a null sorts. ``"as_text"``: by its ``str`` (``"None"``, beside the string
    ``"None"``): the order of ``sorted(keys, key=str)``, the scorecard's order of cells;
    ``"first"``: before every value, as polars sorts.
    """
    values = col.unique().to_list()
    if nulls == "first":
        levels = ([None] if None in values else []) + sorted(str(v) for v in values if v is not None)
    elif nulls == "as_text":
        levels = sorted(values, key=lambda v: (str(v), v is None))
    else:
        raise ValueError(f"nulls must be 'as_text' or 'first', got {nulls!r}")
    present = [str(v) for v in levels if v is not None]
    pos = np.array([i for i, v in enumerate(levels) if v is not None], dtype=np.int64)
    phys = col.cast(pl.String).cast(pl.Enum(present)).to_physical()
    codes = np.full(col.len(), levels.index(None) if None in levels else 0, dtype=np.int64)
    known = phys.is_not_null().to_numpy()
    if pos.size:
        codes[known] = pos[phys.drop_nulls().to_numpy().astype(np.int64)]
    return codes, levels


def coded_keys(rows: pl.DataFrame, where: pl.Expr, cols: Sequence[str], extra: Sequence[pl.Expr] = (),
               narrow: Collection[str] = ()
               ) -> tuple[dict[str, np.ndarray], dict[str, list[Any]], pl.DataFrame]:
    """The rows where ``where`` holds (null: not), as integer codes of the text columns ``cols``:
    (code per selected row, int32, per column; labels per column: the distinct values of the
    selected rows in polars' sort order, nulls first, i.e. :func:`label_codes` with
    ``nulls="first"``; the ``extra`` expressions on the selected rows). The columns in
    ``narrow`` with at most 65,536 labels are coded in their narrowest unsigned type
    (:func:`narrowest_unsigned`: a byte a row for up to 256 labels) instead.

    Every expression is evaluated on whole columns and only its small result (int32 codes,
    the ``extra`` columns) is filtered: a filter before the select would copy the text columns
    it reads (16 bytes a row each: 0.3 GB at 5M rows for the four keys alone). One column at a
    time (the selection as a mask first), so at most one column's whole-length codes and its
    filtered copy are alive at once besides the results (all of them together and their filtered
    copies were 0.2 GB at 5M rows)."""
    # unique before drop_nulls: a null-free copy of each whole column first (16-byte views a
    # row) took the 5M-row file's four keys to 284 MB of peak anonymous memory, against 137 MB
    uniq = rows.select([pl.col(c).unique().drop_nulls().implode() for c in cols])
    cats = {c: sorted(uniq[c][0].to_list()) for c in cols}
    del uniq
    mask = rows.select(where.fill_null(False).alias("__where")).to_series()
    levels: dict[str, list[Any]] = {}
    codes: dict[str, np.ndarray] = {}
    for c in cols:
        # each value's position among all the column's distinct values (null: one past them)
        raw = (rows.select(pl.col(c).cast(pl.Enum(cats[c])).to_physical().cast(pl.Int32)
                           .fill_null(len(cats[c])))
               .to_series().filter(mask).to_numpy())
        codes[c], levels[c] = _selected_levels(raw, cats[c])
        del raw
        if c in narrow and len(levels[c]) <= 2**16:
            codes[c] = codes[c].astype(narrowest_unsigned(max(len(levels[c]) - 1, 0)))
    kept = (rows.select(list(extra)).filter(mask) if extra  # no columns: only the height
            else pl.DataFrame({"__n": np.zeros(int(mask.sum()), dtype=np.int8)}).drop("__n"))
    return codes, levels, kept


def _selected_levels(raw: np.ndarray, cats: list[Any]) -> tuple[np.ndarray, list[Any]]:
    """Codes of the selected rows among their own distinct values (:func:`coded_keys`), from
    their codes among all the column's (``len(cats)``: null): (codes, int32; labels, nulls
    first; a value seen on other rows alone is none)."""
    k = len(cats)
    seen = np.bincount(raw, minlength=k + 1) > 0
    lead = int(seen[k])
    remap = np.empty(k + 1, dtype=np.int32)
    remap[:k] = np.cumsum(seen[:k], dtype=np.int32) - 1 + lead
    remap[k] = 0
    return remap[raw], [None] * lead + [v for v, s in zip(cats, seen[:k].tolist(), strict=True) if s]


def scenario_codes(col: pl.Series, scenarios: Sequence[str]) -> np.ndarray:
    """Each row's position in the run's sorted scenario index (``reduce.scenario_index``):
    monotone in the names. Raises ValueError for a null or a scenario not in the index."""
    if col.null_count():
        raise ValueError("a scenario of a cell row is null")
    try:
        return col.cast(pl.String).cast(pl.Enum(list(scenarios))).to_physical().to_numpy().astype(np.int64)
    except pl.exceptions.PolarsError as exc:
        raise ValueError("a scenario of the reduction is not in the run's scenario index") from exc


def group_ids(*codes: np.ndarray, key_dtype: type = np.int64, inv_dtype: type = np.int64
              ) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct combinations as rows of codes, group of each row) for code columns
    (the first most significant): the groups of a lexicographic sort of the labels.
    ``key_dtype``: of the combinations' codes (int32 halves a table of one row per judgment,
    0.16 GB at 5M rows, when the codes fit); ``inv_dtype``: of the groups (int32 halves the
    row-sized array a cached grouping keeps). The mixed-radix identifiers are int32 when the
    combinations fit (the same values: half the bytes of the largest transient)."""
    n = codes[0].size if codes else 0
    if not codes or n == 0:
        return np.zeros((0, len(codes)), dtype=key_dtype), np.zeros(n, dtype=inv_dtype)
    widths = [int(c.max()) + 1 for c in codes]
    width = float(np.prod([float(w) for w in widths]))
    if width < 2.0**62:
        ident = np.zeros(n, dtype=index_dtype(width))
        for c, w in zip(codes, widths, strict=True):
            ident *= w
            ident += c
        if width <= 4 * n + 1024:  # a table over the identifiers: np.unique's result without a sort
            present = np.zeros(int(width), dtype=bool)
            present[ident] = True
            uniq = np.flatnonzero(present)
            rank = np.cumsum(present, dtype=np.int32 if (width < 2.0**31 and inv_dtype == np.int32) else np.int64)
            del present
            rank -= 1
            inv = rank[ident]
            del rank, ident
        else:
            uniq, inv = np.unique(ident, return_inverse=True)
        keys = np.empty((uniq.size, len(codes)), dtype=key_dtype)
        rest = uniq.astype(np.int64, copy=False)
        for j in range(len(codes) - 1, -1, -1):
            rest, keys[:, j] = np.divmod(rest, widths[j])
        return keys, inv.reshape(-1).astype(inv_dtype, copy=False)
    stacked = np.stack(codes, axis=1)
    keys, inv = np.unique(stacked, axis=0, return_inverse=True)
    return keys.astype(key_dtype), inv.reshape(-1).astype(inv_dtype)


BLOCK_ROWS = 1 << 20
"""Rows a stage codes, selects or counts at a time when it walks arrays of the rows' length
(:func:`count_where`, the census's judgment table): a block's temporaries, not the rows'."""


NARROW_KEYS = ("variant", "trial", "judge")
"""The key columns coded in their narrowest unsigned type (:func:`coded_keys`' ``narrow``) by
every stage that codes the rows' keys: few labels each, so a byte a row up to 256."""


def index_dtype(size: float) -> type:
    """int32 when every integer below ``size`` fits in it (``size < 2**31``), else int64: the
    positions, codes and mixed-radix identifiers of row-sized arrays, in half the bytes."""
    return np.int32 if size < 2**31 else np.int64


def narrowest_unsigned(top: float) -> type:
    """The narrowest unsigned integer type holding 0..``top`` (int64 above uint32's range)."""
    for dt in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dt).max:
            return dt
    return np.int64


def count_where(groups: np.ndarray, mask: np.ndarray | None, g: int) -> np.ndarray:
    """``np.bincount(groups[mask], minlength=g)`` (int64; ``mask`` None: every row), a block of
    rows at a time: no copy of the selected groups nor bincount's intp conversion of them as
    long as the rows (blocks of at least :data:`BLOCK_ROWS` rows, and of ``g``: each block's
    bincount is ``g`` long)."""
    out = np.zeros(g, dtype=np.int64)
    step = max(BLOCK_ROWS, g)
    for lo in range(0, groups.size, step):
        sel = groups[lo:lo + step] if mask is None else groups[lo:lo + step][mask[lo:lo + step]]
        if sel.size:
            out += np.bincount(sel, minlength=g)
    return out


_BUCKET_NAMES: tuple[str, ...] = (*vocab.names(vocab.Bucket), vocab.MISSING_PLANNED)
"""Every value ``bucket`` can hold; :class:`KeyedCodes` codes them by position (-1: other)."""


def bucket_code(name: str) -> int:
    """The code :class:`KeyedCodes` gives the bucket ``name``."""
    return _BUCKET_NAMES.index(name)


class KeyedCodes:
    """The keyed rows (:func:`workbench.ingest.selection.keyed`) of a row table as integer codes,
    built once and shared by the stages that group them (census, its margins, the
    missingness tests, the name check, the scorecard, the flag rates).

    One pass of the row table (:func:`coded_keys`: whole columns, only the small results
    filtered) gives, per keyed row (in the row table's order): the four key columns as codes
    in polars' sort order, nulls first (``levels[c]``: the labels, the codes of
    :func:`label_codes` with ``nulls="first"``), the bucket as a small code
    (:func:`bucket_code`), and the census's per-row predicates as booleans. Nothing
    row-sized of text is made or kept: the codes are int32, the flags one byte a row. Parts are
    built when first asked for, so the cost falls in the first stage that needs them.

    ``usable`` is False when a key column is not text or a column it reads is absent (a table
    that did not go through :data:`workbench.common.schemas.ROWS`): the stages then take their own
    (slower) paths.
    """

    def __init__(self, rows: pl.DataFrame, cfg: Config) -> None:
        self.rows, self.cfg = rows, cfg
        need = ["bucket", f"{cfg.headline}__from_string", *[f"{n}__status" for n in (cfg.headline, *cfg.score_names)]]
        self.usable = (all(c in rows.columns and rows.schema[c] == pl.String for c in KEY_FIELDS)
                       and all(c in rows.columns for c in need))
        # clusters of their own (config cluster:) are coded beside the keys; by default the
        # cluster is the scenario and its codes are the scenario's
        self.own_clusters = (cfg.cluster is not None and "cluster" in rows.columns
                             and rows.schema["cluster"] == pl.String)
        self._parts: dict[str, Any] = {}

    def _base(self) -> dict[str, Any]:
        if "base" in self._parts:
            return self._parts["base"]  # type: ignore[no-any-return]
        extra = [
            # the bucket's position among _BUCKET_NAMES (-1: another value or null) by an Enum
            # cast (unknown values null), not replace_strict: on the 5M generated file its peak
            # was 196 MB of anonymous memory (about 40 bytes a row) against 10 MB, the same codes
            pl.col("bucket").cast(pl.Enum(list(_BUCKET_NAMES)), strict=False).to_physical().cast(pl.Int8)
            .fill_null(-1).alias("__bucket"),
            *self._flag_exprs(),
        ]
        cols = (*KEY_FIELDS, "cluster") if self.own_clusters else KEY_FIELDS
        # the variant, trial and judge codes in a byte a row (up to 256 labels; 16 bits up to
        # 65,536): 9 bytes a keyed row less than int32, 0.18 GB at 20M generated rows, held
        # from the census to the scorecard. Every use widens them (in-place sums into a wider
        # identifier, bincount, gathers) or compares them; none multiplies them as they are
        codes, levels, df = coded_keys(self.rows, selection.keyed(), cols, extra, narrow=NARROW_KEYS)
        base = {"levels": levels, "height": df.height,
                "codes": codes,
                "bucket": df["__bucket"].to_numpy()}
        # the flags apart from the base: the census reads them once, then the run forgets them
        # (one byte a row each: 8 of them, 0.16 GB at 20M rows, were alive through the scorecard)
        self._parts["flags"] = self._flag_arrays(df)
        del df
        self._parts["base"] = base
        return base

    def _flag_exprs(self) -> list[pl.Expr]:
        """The census's flags (:func:`workbench.ingest.selection.census_flags`: sentinel,
        from_string, nulls__{field}), null as False, as ``__flag{i}`` columns."""
        return [e.fill_null(False).alias(f"__flag{i}")
                for i, e in enumerate(selection.census_flags(self.cfg.headline, self.cfg.score_names))]

    def _flag_arrays(self, df: pl.DataFrame) -> dict[str, np.ndarray]:
        """The ``__flag{i}`` columns of ``df`` by their count names."""
        names = [e.meta.output_name() for e in selection.census_flags(self.cfg.headline, self.cfg.score_names)]
        return {n: df[f"__flag{i}"].to_numpy() for i, n in enumerate(names)}

    def _flags_again(self) -> dict[str, np.ndarray]:
        """The flags of :meth:`_base`, read again (after ``forget("flags")``): the same arrays."""
        return self._flag_arrays(self.rows.lazy().filter(selection.keyed()).select(self._flag_exprs()).collect())

    @property
    def height(self) -> int:
        """Keyed rows."""
        return int(self._base()["height"])

    def levels(self, c: str) -> list[Any]:
        """Labels of key column ``c`` in polars' sort order (nulls first); ``cluster``: the
        rows' clusters (the scenarios' when the config names none)."""
        if c == "cluster" and not self.own_clusters:
            c = "scenario"
        return self._base()["levels"][c]  # type: ignore[no-any-return]

    def codes(self, c: str) -> np.ndarray:
        """Code of key column ``c`` per keyed row (positions in :meth:`levels`), int32, the
        variant, trial and judge in their narrowest unsigned type up to 16 bits
        (:func:`coded_keys`; ``cluster`` as in :meth:`levels`). Widen before multiplying."""
        if c == "cluster" and not self.own_clusters:
            c = "scenario"
        return self._base()["codes"][c]  # type: ignore[no-any-return]

    def is_bucket(self, *names: str) -> np.ndarray:
        """Keyed rows whose bucket is one of ``names``."""
        b = self._base()["bucket"]
        out = b == bucket_code(names[0])
        for n in names[1:]:
            out |= b == bucket_code(n)
        return out  # type: ignore[no-any-return]

    def bucket_codes(self) -> np.ndarray:
        """Each keyed row's bucket as its :func:`bucket_code` (int8; -1: another value)."""
        return self._base()["bucket"]  # type: ignore[no-any-return]

    def cell_levels(self, c: str) -> list[Any]:
        """The distinct non-null labels of key column ``c`` in the cell rows
        (:func:`workbench.ingest.selection.in_cells`: keyed rows but the exact repeats and the
        planned-but-absent ones), sorted: :func:`workbench.ingest.selection.cell_values` from the
        codes, counted in blocks of rows (:func:`count_where`: no row-sized copy)."""
        def build() -> list[Any]:
            levels = self.levels(c)
            cells = ~self.is_bucket(*selection.CELL_ROW_EXCLUDE)  # one byte a row, as the flags
            used = count_where(self.codes(c), cells, len(levels)) > 0
            return [v for v, u in zip(levels, used.tolist(), strict=True) if u and v is not None]
        return self.cached(f"cell_levels:{c}", build)  # type: ignore[no-any-return]

    def flags(self) -> dict[str, np.ndarray]:
        """The census's per-row flags (:func:`workbench.ingest.selection.census_flags`, null as
        False) per keyed row, by their count names: ``sentinel``, ``from_string``,
        ``nulls__{field}``. Built with the codes; after ``forget("flags")`` read again."""
        self._base()
        return self.cached("flags", self._flags_again)  # type: ignore[no-any-return]

    def groups(self, *cols: str) -> tuple[np.ndarray, np.ndarray]:
        """:func:`group_ids` of key columns (cached): sorted combinations and each keyed row's
        group (int32 below 2**31 keyed rows)."""
        key = "groups:" + "/".join(cols)
        if key not in self._parts:  # each keyed row's group as int32 (kept: half of int64)
            self._parts[key] = group_ids(*[self.codes(c) for c in cols],
                                         inv_dtype=index_dtype(self.height))
        return self._parts[key]  # type: ignore[no-any-return]

    def conflict_keys(self) -> pl.DataFrame:
        """The key columns of the keyed conflicting rows, in row order (few rows)."""
        if "conflict" not in self._parts:
            self._parts["conflict"] = (self.rows.lazy().filter(selection.keyed())
                                       .filter(pl.col("bucket") == vocab.Bucket.CONFLICT.value)
                                       .select(KEY_FIELDS).collect())
        return self._parts["conflict"]  # type: ignore[no-any-return]

    def subset_mask(self, name: str) -> np.ndarray:
        """Keyed rows in the config's subset ``name`` (:func:`workbench.ingest.selection.subset_filter`,
        null as not), cached."""
        def build() -> np.ndarray:
            return (self.rows.lazy().filter(selection.keyed())
                    .select(selection.subset_filter(self.cfg, name).fill_null(False).alias("s"))
                    .collect()["s"].to_numpy())
        return self.cached(f"subset:{name}", build)  # type: ignore[no-any-return]

    def forget(self, *prefixes: str) -> None:
        """Drop the cached parts whose keys start with one of ``prefixes`` (``"groups:"``,
        ``"census:"``: row-sized group numbers no later stage reads; ``"flags"``: the census's
        per-row flags); asked for again, a part is built again, the same."""
        for key in [k for k in self._parts if k.startswith(prefixes)]:
            del self._parts[key]

    def cached(self, key: str, build: Any) -> Any:
        """A stage's own derived part, built once per view (``build()`` on first call)."""
        if key not in self._parts:
            self._parts[key] = build()
        return self._parts[key]
