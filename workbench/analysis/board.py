"""The board: who is ahead, by how much, and can we tell (results.json ``board``).

One board per headline field: a row per variant, sorted by the valid-row figure (measured
cells first, high to low), with the figure at the decimals its interval supports, its valid n
and rows, the interval and its method, the rank interval, the missing share and absent
judgments, the evidence status and, where the preset has a harness rule, the harness's own
figure beside it (with whether it differs from the valid-row figure and why, where the two
are on one scale). Pairwise presets add the position-swap disagreement rate; where the rows carry
both answers' text (AlpacaEval) the length-controlled win rate (``lc_*``:
:mod:`workbench.analysis.length`). Built from the results document's own records
(:func:`build`), in :func:`workbench.document.build.build`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["build", "decimals", "HARNESS_FIGURE", "is_lead", "SAME_SCALE", "columns", "rank_text", "missing_text",
           "harness_text"]

#: the figure each harness rule leads with (its leaderboard column)
HARNESS_FIGURE = {"fastchat_single": "average", "fastchat_pairwise": "win_rate_adjusted",
                  "alpaca_eval": "win_rate", "wildbench": "score", "arena_hard": "score",
                  "inspect": "accuracy"}
#: rules whose lead figure is a mean of the headline's own values (so it can be compared with the
#: valid-row figure); the others are on the harness's scale (a percentage, a fitted score)
SAME_SCALE = frozenset({"fastchat_single", "wildbench", "alpaca_eval"})


def decimals(lo: float | None, hi: float | None, default: int = 2) -> int:
    """The decimals an interval supports: two significant digits of its half-width (0 to 6)."""
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return default
    half = (hi - lo) / 2.0
    if half <= 0:
        return default
    return int(min(6, max(0, math.floor(-math.log10(half)) + 2)))


def is_lead(f: Mapping[str, Any], figure: str | None) -> bool:
    """The record leads its line: marked ``lead`` (Inspect: the log's first metric, named as
    the log names it), else the rule's figure (:data:`HARNESS_FIGURE`)."""
    return bool(f.get("lead")) if "lead" in f else f.get("figure") == figure


def lead_figure(h: Mapping[str, Any] | None) -> str | None:
    """The harness's lead figure's name: the log's own (``mean``, ``accuracy``) where the records
    say which leads, names joined by ``/`` when logs differ, else :data:`HARNESS_FIGURE`."""
    if not h:
        return None
    leads = list(dict.fromkeys(str(f["figure"]) for f in h.get("figures") or [] if f.get("lead")))
    return "/".join(leads) if leads else HARNESS_FIGURE.get(str(h.get("rule")))


def _one(records: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    return records[0] if len(records) == 1 else None


def _harness(doc: Mapping[str, Any], variant: str, valid_mean: float | None, nd: int) -> dict[str, Any]:
    h = doc.get("harness")
    if not h:
        return {}
    rule = h.get("rule")
    figure = lead_figure(h)
    recs = [f for f in h.get("figures") or [] if f.get("variant") == variant and is_lead(f, figure)]
    out: dict[str, Any] = {"harness_figure": figure, "harness_value": None, "harness_n": None,
                           "harness_differs": None, "harness_why": None}
    if not recs:
        out["harness_why"] = "the harness prints no such line for this variant"
        return out
    if len(recs) > 1:
        out["harness_why"] = f"one figure per judge ({len(recs)}): see the harness table"
        return out
    rec = recs[0]
    out["harness_value"], out["harness_n"] = rec.get("value"), rec.get("n")
    if rec.get("value") is None:
        out["harness_why"] = rec.get("note") or "the harness prints no figure"
        return out
    if rule in SAME_SCALE and valid_mean is not None:
        differs = round(float(rec["value"]), nd) != round(valid_mean, nd)
        out["harness_differs"] = differs
        if differs:
            out["harness_why"] = rec.get("note") or (
                f"the harness's figure rests on {rec.get('n')} rows, the valid-row figure on the valid rows only")
    else:
        out["harness_why"] = rec.get("note") or "on the harness's own scale, not compared"
    return out


def _swap(doc: Mapping[str, Any], variant: str) -> dict[str, Any]:
    recs = [p for p in (doc.get("harness") or {}).get("position_swap") or [] if p.get("variant") == variant]
    p = _one(recs)
    if p is None:
        return {}
    return {"position_swap_disagreement": p.get("disagreement_rate"), "position_swap_ci_low": p.get("ci_low"),
            "position_swap_ci_high": p.get("ci_high"), "position_swap_items": p.get("both_usable")}


def _lc(doc: Mapping[str, Any], variant: str) -> dict[str, Any]:
    """The length-controlled win rate of the variant (results.json ``length``, AlpacaEval)."""
    recs = [r for r in (doc.get("length") or {}).get("lc") or [] if r.get("variant") == variant]
    r = _one(recs) or {}
    return {"lc_win_rate": r.get("lc_win_rate"), "lc_ci_low": r.get("ci_low"), "lc_ci_high": r.get("ci_high"),
            "lc_ci_method": r.get("ci_method"), "lc_published": r.get("published_lc"),
            "lc_difference": r.get("difference"), "lc_difficulty": r.get("difficulty"),
            "lc_why": None if r else (f"one LC per judge ({len(recs)}): see results.json length" if recs
                                      else "no LC for this variant (no answer text)")}


def build(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The board of the document's headline field (a list: one board per headline field)."""
    field = (doc.get("config") or {}).get("headline")
    cells = [c for c in doc.get("scorecard") or []
             if c.get("judge") is None and c.get("subset") is None and c.get("field") == field]
    ranks = {str(c["variant"]): c for c in (doc.get("ranks") or {}).get("cells", [])}
    margins = {str(m["variant"]): m for m in doc.get("census_margins") or []
               if m.get("judge") is None and m.get("variant") is not None}
    pairwise = bool((doc.get("harness") or {}).get("position_swap"))

    def order(c: Mapping[str, Any]) -> tuple[int, float, str]:
        mean = c.get("mean")
        return (0 if c.get("status") == "measured" else 1,
                -mean if mean is not None else math.inf, str(c["variant"]))

    rows = []
    for c in sorted(cells, key=order):
        v = str(c["variant"])
        nd = decimals(c.get("ci_low"), c.get("ci_high"))
        r, m = ranks.get(v, {}), margins.get(v, {})
        row: dict[str, Any] = {
            "variant": v, "mean": c.get("mean"), "decimals": nd, "valid_n": c.get("valid_n"),
            "rows": c.get("rows"), "ci_low": c.get("ci_low"), "ci_high": c.get("ci_high"),
            "ci_method": c.get("ci_method"), "clusters": c.get("clusters"),
            "rank_low": r.get("rank_low"), "rank_high": r.get("rank_high"),
            "rank_distinguishable": r.get("rank_distinguishable"),
            "missing": m.get("missing"), "judgments": m.get("judgments"), "missing_rate": m.get("missing_rate"),
            "missing_rate_ci_low": m.get("missing_rate_ci_low"), "missing_rate_ci_high": m.get("missing_rate_ci_high"),
            "absent": m.get("missing_planned"), "status": c.get("status"),
            "zero_filled_mean": c.get("zero_filled_mean"),
        }
        row.update(_harness(doc, v, c.get("mean"), nd))
        if (doc.get("length") or {}).get("lc"):  # AlpacaEval's; a length slope alone adds no column
            row.update(_lc(doc, v))
        if pairwise:
            row.update(_swap(doc, v) or {"position_swap_disagreement": None, "position_swap_ci_low": None,
                                         "position_swap_ci_high": None, "position_swap_items": None})
        rows.append(row)
    harness = doc.get("harness") or {}
    return [{"field": field, "sorted_by": "valid-row mean, measured cells first, high to low",
             "harness_rule": harness.get("rule"), "harness_figure": lead_figure(harness)
             if harness else None, "rows": rows}]


# --------------------------------------------------------------------------- text both views show


def columns(b: Mapping[str, Any], confidence: float, valid_rows: str = "valid/rows") -> list[str]:
    """The board's column headings (the terminal's and the report's), its optional columns
    (harness, LC, position swap) only where a row carries them."""
    rows = b.get("rows") or []
    head = ["rank", "variant", f"{b['field']} [{100 * confidence:g}% CI]", valid_rows, "missing", "status"]
    if b.get("harness_figure"):
        head.append(f"harness: {b['harness_figure']}")
    if any(x.get("lc_win_rate") is not None for x in rows):
        head.append("LC win rate [CI] (published)")
    if any("position_swap_disagreement" in x for x in rows):
        head.append("position swap disagrees")
    return head


def rank_text(row: Mapping[str, Any], dash: str = "-") -> str:
    """``1`` or ``1-4`` (the rank interval), ``-`` for a cell without one."""
    lo, hi = row.get("rank_low"), row.get("rank_high")
    if lo is None or hi is None:
        return "-"
    return str(lo) if lo == hi else f"{lo}{dash}{hi}"


def missing_text(row: Mapping[str, Any]) -> str:
    """``8.8% (14/160)``, with ``, 3 absent`` when planned judgments have no row."""
    if not row.get("judgments"):
        return "-"
    text = f"{100 * row['missing_rate']:.1f}% ({row['missing']}/{row['judgments']})"
    if row.get("absent"):
        text += f", {row['absent']} absent"
    return text


def harness_text(row: Mapping[str, Any]) -> str:
    """The harness's figure at the row's decimals (at least 2), ``-`` when it prints none."""
    hv = row.get("harness_value")
    if hv is None:
        return "-"
    return str(hv) if isinstance(hv, int) else f"{hv:.{max(int(row.get('decimals') or 2), 2)}f}"
