"""Selections on the results document: pooled cells, margins, headline contrasts.

Nothing here computes a statistic; each function picks records of ``Analysis.doc``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def pooled_cells(
    doc: Mapping[str, Any], fld: str | None = None, subset: str | None = None
) -> list[dict[str, Any]]:
    """Scorecard cells with judges pooled, for one field (the headline by default) and subset."""
    f = fld or doc["config"]["headline"]
    return [
        c
        for c in doc.get("scorecard", [])
        if c["judge"] is None and c["subset"] == subset and c["field"] == f
    ]


def _margin(
    doc: Mapping[str, Any], judge: Any = None, variant: Any = None, kind: str = "total"
) -> list[dict[str, Any]]:
    out = []
    for m in doc.get("census_margins", []):
        if kind == "total" and m["judge"] is None and m["variant"] is None:
            out.append(m)
        elif kind == "judge" and m["judge"] is not None and m["variant"] is None:
            out.append(m)
        elif kind == "variant" and m["variant"] is not None and m["judge"] is None:
            out.append(m)
    return out


def _cell_key(c: Mapping[str, Any]) -> tuple[Any, Any, Any, Any]:
    return (c["variant"], c.get("judge"), c.get("subset"), c["field"])


def _cell_label(c: Mapping[str, Any]) -> str:
    parts = [str(c["variant"])]
    if c.get("judge") is not None:
        parts.append(f"judge {c['judge']}")
    if c.get("subset") is not None:
        parts.append(f"{c['subset']} subset")
    return ", ".join(parts)


def headline_contrasts(doc: Mapping[str, Any], subset: str | None = None) -> list[dict[str, Any]]:
    hl = doc["config"]["headline"]
    return [
        c
        for c in doc.get("contrasts", [])
        if c["field"] == hl and c["subset"] == subset and c.get("judge") is None
    ]


def pooled_offsets(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [o for o in doc.get("judge_offsets", []) if o["variant"] is None and o["subset"] is None]


def contrast_verdict(c: Mapping[str, Any], alpha: float | None = None,
                     target: float | None = None) -> tuple[str, str]:
    """``(label, kind)`` for a contrast, from the judgment the analysis recorded
    (:func:`workbench.analysis.paired.contrast_call`: ``higher``, ``holm_significant``,
    ``underpowered``); ``alpha`` and ``target`` are accepted for compatibility and unused."""
    if c.get("ci_low") is None or c.get("ci_high") is None:
        return "no interval", "muted"
    if c.get("higher") is not None:
        if c.get("holm_significant"):
            return f"{c['higher']} higher", "good"
        return f"{c['higher']} higher before Holm only", "warn"
    if c.get("underpowered"):
        return "no clear difference (underpowered)", "neutral"
    return "no clear difference", "neutral"
