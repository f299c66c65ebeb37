"""Number formats: means, signed differences, percentages, p-values, intervals, plurals.
"""

from __future__ import annotations

from collections.abc import Sequence

from workbench.common.text import pct  # noqa: F401  (re-exported: the one rule for printing a rate)


def num(x: float | None, nd: int = 2) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def signed(x: float | None, nd: int = 2) -> str:
    return "-" if x is None else f"{x:+.{nd}f}"


def pval(p: float | None) -> str:
    if p is None:
        return "-"
    return "< 0.001" if p < 0.001 else f"{p:.2g}"


def p_is(p: float | None) -> str:
    """``p = 0.02`` or ``p < 0.001``."""
    text = pval(p)
    return f"p {text}" if text.startswith("<") else f"p = {text}"


def interval(lo: float | None, hi: float | None, nd: int = 2, sign: bool = False) -> str:
    if lo is None or hi is None:
        return "[no interval]"
    f = signed if sign else num
    return f"[{f(lo, nd)}, {f(hi, nd)}]"


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def _series(items: Sequence[str], limit: int = 4) -> str:
    items = list(items)
    if len(items) > limit:
        items = items[:limit] + [f"{len(items) - limit} more"]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]




def bounded_interval(lo: float | None, hi: float | None, value_range: tuple[float, float],
                     nd: int = 2) -> str:
    """``[lo, hi]`` kept inside the rubric: a bound past it prints as the rubric's end with
    ``*`` (truncated), never as an impossible score such as 10.08 on 1-10."""
    if lo is None or hi is None:
        return "[no interval]"
    rlo, rhi = value_range
    a = f"{num(rlo, nd)}*" if lo < rlo else num(lo, nd)
    b = f"{num(rhi, nd)}*" if hi > rhi else num(hi, nd)
    return f"[{a}, {b}]"


def truncated(lo: float | None, hi: float | None, value_range: tuple[float, float]) -> bool:
    return lo is not None and hi is not None and (lo < value_range[0] or hi > value_range[1])
