"""Names that print alike but are not the same text, reported in ``name_warnings``.

The rule: key values (scenario, variant, trial, judge) are compared exactly as text, after
one conversion only: a JSON integer becomes its decimal text, so trial ``1`` and trial
``"1"`` are one key. Nothing else is normalised: ``"v0"`` and ``"v0 "``, or ``é`` written as
one code point (NFC) and as ``e`` plus a combining accent (NFD), stay separate keys, because
merging them would change what the rows say. Both cases are listed in ``results.json``
``name_warnings`` (and in the report and on the terminal) with every spelling seen and its
row count, so neither a merge nor a split is ever silent.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from typing import Any

import numpy as np
import polars as pl

from workbench.common.config import KEY_FIELDS
from workbench.ingest import selection
from workbench.reduce import codes as reduce_codes


def _folded(text: str) -> str:
    return unicodedata.normalize("NFC", text).strip()


def _why(spellings: list[str]) -> str:
    stripped = {s.strip() for s in spellings}
    if len(stripped) < len(spellings):
        return "surrounding whitespace"
    return "Unicode normalisation (the same characters, composed differently)"


def _value_counts(rows: pl.DataFrame, view: reduce_codes.KeyedCodes | None) -> Iterator[list[tuple[str, int]]]:
    """Per key field: (value, keyed rows) of its non-null values in sorted order."""
    if view is not None and view.usable:
        for k in KEY_FIELDS:
            levels = view.levels(k)
            counts = np.bincount(view.codes(k), minlength=len(levels)).tolist()
            yield [(v, n) for v, n in zip(levels, counts, strict=True) if v is not None and n]
        return
    keyed = rows.lazy().filter(selection.keyed()).select(KEY_FIELDS).collect()
    for k in KEY_FIELDS:
        yield list(keyed.filter(pl.col(k).is_not_null()).group_by(k).len().sort(k).iter_rows())


def lookalike_names(rows: pl.DataFrame, view: reduce_codes.KeyedCodes | None = None) -> list[dict[str, Any]]:
    """Key values that differ only by surrounding whitespace or Unicode normalisation.

    ``view``: the run's coded keyed rows (their labels and codes give the counts)."""
    out: list[dict[str, Any]] = []
    for k, counts in zip(KEY_FIELDS, _value_counts(rows, view), strict=True):
        groups: dict[str, list[tuple[str, int]]] = {}
        for value, n in counts:
            groups.setdefault(_folded(value), []).append((value, int(n)))
        for folded, members in sorted(groups.items()):
            if len(members) < 2:
                continue
            out.append({
                "field": k, "kind": "lookalike", "value": folded,
                "variants": [{"text": v, "codepoints": [f"U+{ord(c):04X}" for c in v]
                              if len(v) <= 40 else None, "rows": n} for v, n in members],
                "why": _why([v for v, _ in members]),
                "rule": "kept apart: key values are compared exactly as text",
            })
    return out


def name_warnings(rows: pl.DataFrame, key_types: list[dict[str, Any]] | None = None,
                  view: reduce_codes.KeyedCodes | None = None) -> list[dict[str, Any]]:
    """Every look-alike name and every number/string key merge, field by field."""
    return lookalike_names(rows, view) + list(key_types or [])


def warning_text(w: dict[str, Any]) -> str:
    """One line for a name warning (the caller escapes it for the terminal)."""
    if w["kind"] == "json_type":
        parts = ", ".join(f"{v['rows']} as a JSON {v['json_type']}" for v in w["variants"])
        return f"{w['field']} {w['value']!r} was read as a number and as a string ({parts}); one key"
    shown = ascii if w["why"].startswith("Unicode") else repr
    parts = ", ".join(f"{shown(v['text'])} ({v['rows']} rows)" for v in w["variants"])
    return f"{w['field']} names differ only by {w['why']}: {parts}; kept as separate keys"
