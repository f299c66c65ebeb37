"""Selections: which rows a stage reads (the row predicates every stage shares) and which
pairwise comparisons a run computes.

**Rows.** Each predicate is a polars expression over the row table's ``bucket`` (names from
:mod:`workbench.common.vocab`), so "the rows with trusted keys" is spelled once:

* :func:`keyed`: every row but blank and malformed lines (whose keys cannot be trusted);
  planned-but-absent judgments included;
* :func:`keyed_read`: the same without the planned-but-absent rows (what the files hold);
* :func:`keyed_once`: every judgment once: keyed rows without exact repeats;
* :func:`in_cells` / :func:`cell_rows`: the rows that exist for a scorecard cell
  (:data:`CELL_ROW_EXCLUDE` left out);
* :func:`no_score`: a field given no score (absent, null or a sentinel);
* :func:`census_flags`: the census's per-row flags (sentinel, from text, no score).

**Pairs.** Which pairwise comparisons a run computes, so that many variants never mean hours.

Each variant contrast or per-variant judge offset costs a bootstrap (tenths of a second);
all pairs of k variants are k(k-1)/2 of them. The rule, recorded in results.json
``contrast_selection``:

* ``contrasts: [[a, b], ...]`` computes exactly those pairs (mode ``configured``);
* ``contrast_baseline: NAME`` computes every other variant minus that one (``baseline``);
* otherwise every pair (``all_pairs``);

and in every mode at most ``max_contrast_pairs`` pairs (default 300) are computed. Past the
cap none is (mode ``over_cap``) and a warning says how to choose: a silent partial set
would look like the whole family and bias the Holm adjustment. Per-variant judge offsets
(judge pairs x variants) follow the same cap; past it only the pooled offsets are computed.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Any

import polars as pl

from workbench.common.config import Config
from workbench.common.errors import ConfigError
from workbench.common.vocab import MISSING_PLANNED, NULL_STATUSES, Bucket, FieldStatus

#: Rows that exist for a cell: every keyed line except repeats counted once. Planned-but-absent
#: judgments are added to a scorecard cell's ``rows`` (and counted in ``absent``) by
#: :func:`workbench.analysis.scorecard.scorecard`; flag/pass rates and forensic rules see only rows read.
CELL_ROW_EXCLUDE: tuple[str, ...] = (Bucket.BLANK.value, Bucket.MALFORMED.value, Bucket.DUPLICATE.value,
                                     MISSING_PLANNED)

_UNKEYED = [Bucket.BLANK.value, Bucket.MALFORMED.value]


def keyed() -> pl.Expr:
    """Rows whose keys can be trusted: not a blank or malformed line (planned rows included)."""
    return ~pl.col("bucket").is_in(_UNKEYED)


def keyed_read() -> pl.Expr:
    """Keyed rows read from the inputs: :func:`keyed` without the planned-but-absent rows."""
    return ~pl.col("bucket").is_in([*_UNKEYED, MISSING_PLANNED])


def keyed_once() -> pl.Expr:
    """Every judgment once: :func:`keyed` without the exact repeats (``duplicate``)."""
    return ~pl.col("bucket").is_in([*_UNKEYED, Bucket.DUPLICATE.value])


def in_cells() -> pl.Expr:
    """The rows that exist for scorecard cells (see :data:`CELL_ROW_EXCLUDE`)."""
    return ~pl.col("bucket").is_in(CELL_ROW_EXCLUDE)


def cell_rows(rows: pl.DataFrame) -> pl.DataFrame:
    """The rows that exist for scorecard cells (see :data:`CELL_ROW_EXCLUDE`)."""
    return rows.filter(in_cells())


def no_score(field: str) -> pl.Expr:
    """``field`` was given no score: its status is absent, null or a sentinel."""
    return pl.col(f"{field}__status").is_in([s.value for s in NULL_STATUSES])


def census_flags(headline: str, fields: Sequence[str]) -> list[pl.Expr]:
    """The census's per-row flags, named as its count columns: ``sentinel`` (the headline is a
    sentinel; repeats and planned rows not counted), ``from_string`` (a valid headline read from
    text), ``nulls__{field}`` per field (no score; repeats and planned rows not counted). Null
    (a missing status) is not counted either way: callers sum them or fill null with False."""
    not_dup = ~pl.col("bucket").is_in([Bucket.DUPLICATE.value, MISSING_PLANNED])
    return [
        ((pl.col(f"{headline}__status") == FieldStatus.SENTINEL.value) & not_dup).alias("sentinel"),
        (pl.col(f"{headline}__from_string") & (pl.col("bucket") == Bucket.VALID.value)).alias("from_string"),
        *[(no_score(n) & not_dup).alias(f"nulls__{n}") for n in fields],
    ]


def count_where(rows: pl.DataFrame, pred: pl.Expr) -> int:
    """Rows where ``pred`` holds (null counts as not), as a sum of the predicate: no row copied."""
    return int(rows.select(pred.fill_null(False).sum()).item())


def cell_values(rows: pl.DataFrame, col: str) -> list[Any]:
    """The distinct non-null values of ``col`` in the cell rows, sorted (only the column read:
    a filter of the rows would copy every column)."""
    return sorted(rows.lazy().filter(in_cells()).select(pl.col(col).unique().drop_nulls())
                  .collect().to_series().to_list())


def columns_read(rows: pl.DataFrame, cfg: Config, cols: Sequence[str]) -> pl.DataFrame:
    """``cols`` and the config's subsets' fields, those the table has, once each: a select, so no
    column is copied, and the filters a stage runs on it copy only these columns (the row
    table's text columns, the file name and the verdict, are most of its bytes)."""
    want = [*cols, *(f for spec in cfg.subsets.values() for f in spec)]
    return rows.select([c for c in dict.fromkeys(want) if c in rows.columns])


def contrast_pairs(variants: Sequence[str], cfg: Config) -> tuple[list[tuple[str, str]], dict[str, Any]]:
    """The (a, b) variant pairs to compute (each is a - b) and what was chosen, and why.
    ``variants``: the cell rows' distinct variants, sorted (:func:`cell_values`, or
    :meth:`workbench.reduce.codes.KeyedCodes.cell_levels` from the coded view)."""
    variants = list(variants)
    cap = cfg.max_contrast_pairs
    if cfg.contrasts is not None:
        mode, pairs = "configured", list(cfg.contrasts)
    elif cfg.contrast_baseline is not None:
        base = cfg.contrast_baseline
        if base not in variants:
            raise ConfigError(f"config: contrast_baseline {base!r} is not a variant of the rows "
                              f"(variants: {', '.join(variants[:10])}{' ...' if len(variants) > 10 else ''})")
        mode, pairs = "baseline", [(v, base) for v in variants if v != base]
    else:  # counted before any is built: 5,000 variants are 12.5M pairs
        k = len(variants)
        mode = "all_pairs"
        pairs = list(combinations(variants, 2)) if k * (k - 1) // 2 <= cap else []
    n = len(pairs) if pairs or mode != "all_pairs" else len(variants) * (len(variants) - 1) // 2
    info: dict[str, Any] = {"mode": mode, "variants": len(variants), "pairs": n,
                            "computed": n, "max_contrast_pairs": cap,
                            "baseline": cfg.contrast_baseline, "note": None}
    if n > cap:
        info.update(mode="over_cap", requested_mode=mode, computed=0, note=(
            f"{len(variants)} variants give {n} contrasts ({mode.replace('_', ' ')}), over "
            f"max_contrast_pairs ({cap}): none computed; name the pairs (contrasts: [[a, b]]), "
            "compare against one variant (contrast_baseline: NAME), or raise max_contrast_pairs"))
        pairs = []
    return pairs, info


def offset_variants(variants: Sequence[str], cfg: Config, judge_pairs: int) -> tuple[list[str], dict[str, Any]]:
    """Variants that get their own judge offsets (besides the pooled one), within the cap
    (``variants`` as for :func:`contrast_pairs`)."""
    variants = list(variants)
    n = judge_pairs * len(variants)
    info: dict[str, Any] = {"judge_pairs": judge_pairs, "variants": len(variants),
                            "per_variant": n, "max_contrast_pairs": cfg.max_contrast_pairs,
                            "computed": n, "note": None}
    if n > cfg.max_contrast_pairs:
        info.update(computed=0, note=(
            f"{judge_pairs} judge pair(s) x {len(variants)} variants = {n} per-variant judge "
            f"offsets, over max_contrast_pairs ({cfg.max_contrast_pairs}): only the pooled "
            "offsets are computed"))
        return [], info
    return variants, info


def subset_filter(cfg: Config, subset: str | None) -> pl.Expr:
    """Polars predicate selecting a named subset's rows (all rows when ``subset`` is None)."""
    if subset is None:
        return pl.lit(True)
    if subset not in cfg.subsets:
        raise ConfigError(f"unknown subset {subset!r}; config defines {sorted(cfg.subsets) or 'none'}")
    expr = pl.lit(True)
    for fld, values in cfg.subsets[subset].items():
        expr = expr & pl.col(fld).is_in(list(values))
    return expr
