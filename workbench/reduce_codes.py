"""Integer codes of row labels, for stages that group rows with numpy instead of string keys.

A stage that loops over cells (the scorecard) or builds per-scenario tables (the census's
rate intervals, the missingness tests) prepares its rows once: each label column becomes
integer codes whose order is the order the stage needs, so sorting or grouping the codes
gives the same groups, in the same order, as sorting the strings. Every
:mod:`workbench.stats` function codes cluster labels with ``np.unique``; codes monotone in
the label order give it the same codes, hence the same numbers, at a fraction of the cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl


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


def scenario_codes(col: pl.Series, scenarios: Sequence[str]) -> np.ndarray:
    """Each row's position in the run's sorted scenario index (``reduce.scenario_index``):
    monotone in the names. Raises ValueError for a null or a scenario not in the index."""
    if col.null_count():
        raise ValueError("a scenario of a cell row is null")
    try:
        return col.cast(pl.String).cast(pl.Enum(list(scenarios))).to_physical().to_numpy().astype(np.int64)
    except pl.exceptions.PolarsError as exc:
        raise ValueError("a scenario of the reduction is not in the run's scenario index") from exc


def group_ids(*codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct combinations as rows of codes, group of each row) for code columns
    (the first most significant): the groups of a lexicographic sort of the labels."""
    n = codes[0].size if codes else 0
    if not codes or n == 0:
        return np.zeros((0, len(codes)), dtype=np.int64), np.zeros(n, dtype=np.int64)
    widths = [int(c.max()) + 1 for c in codes]
    if float(np.prod([float(w) for w in widths])) < 2.0**62:
        ident = np.zeros(n, dtype=np.int64)
        for c, w in zip(codes, widths, strict=True):
            ident = ident * w + c
        uniq, inv = np.unique(ident, return_inverse=True)
        keys = np.empty((uniq.size, len(codes)), dtype=np.int64)
        rest = uniq
        for j in range(len(codes) - 1, -1, -1):
            rest, keys[:, j] = np.divmod(rest, widths[j])
        return keys, inv.reshape(-1).astype(np.int64)
    stacked = np.stack(codes, axis=1)
    keys, inv = np.unique(stacked, axis=0, return_inverse=True)
    return keys.astype(np.int64), inv.reshape(-1).astype(np.int64)
