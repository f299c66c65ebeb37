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


def contrast_verdict(c: Mapping[str, Any], alpha: float, target: float | None) -> tuple[str, str]:
    """``(label, kind)`` for a contrast: which side is higher, or no clear difference
    (underpowered or not).

    A side is called higher when the clustered interval excludes 0 and the Holm-adjusted p is
    below ``alpha``; an interval that excludes 0 without surviving Holm is said so.
    """
    lo, hi = c.get("ci_low"), c.get("ci_high")
    if lo is None or hi is None:
        return "no interval", "muted"
    if lo > 0 or hi < 0:
        winner = c["a"] if lo > 0 else c["b"]
        p = c.get("p_holm")
        if p is not None and p < alpha:
            return f"{winner} higher", "good"
        return f"{winner} higher before Holm only", "warn"
    mde = c.get("mde")
    if target is not None and mde is not None and mde > target:
        return "no clear difference (underpowered)", "neutral"
    return "no clear difference", "neutral"


