"""Text that reaches a terminal or a message: control characters made visible, rates as
percentages, CSV fields a spreadsheet cannot run. The lowest layer (imports nothing of the
workbench), so that an error message (:mod:`workbench.common.errors`), a stage's note and the
terminal tables share one rule; :mod:`workbench.cli.terminal` re-exports ``safe`` and ``pct``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

# C0 and C1 control characters, DEL, line/paragraph separators and the bidirectional
# controls (which can reorder what a terminal shows): never written to a terminal raw.
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_VISIBLE = {**{i: f"\\x{i:02x}" for i in [*range(0x20), *range(0x7f, 0xa0)]},
            0x09: "\\t", 0x0a: "\\n", 0x0d: "\\r",
            0x2028: "\\u2028", 0x2029: "\\u2029", **{ord(c): f"\\u{ord(c):04x}" for c in _BIDI}}


def safe(text: Any) -> str:
    """``text`` with every control character shown visibly (``\\x1b``, ``\\n``): input and
    config strings pass through here before reaching a terminal, so a name cannot colour,
    erase, retitle the terminal or forge a line. Lone surrogates (a file name that is not
    UTF-8) are shown as the byte they stand for (``\\xff``). Idempotent on its own output."""
    text = str(text)
    if text.isascii() and text.isprintable():
        return text
    text = text.translate(_VISIBLE)
    if any("\ud800" <= ch <= "\udfff" for ch in text):
        text = "".join(f"\\x{ord(ch) - 0xdc00:02x}" if "\udc80" <= ch <= "\udcff"
                       else f"\\u{ord(ch):04x}" if "\ud800" <= ch <= "\udfff" else ch
                       for ch in text)
    return text


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``1 input``, ``3 inputs``, ``0 inputs``: a count with its noun in the right number."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def gate_reasons(gate: Any) -> list[str]:
    """One line per cell that failed the preregistered gate (a ``results.json`` ``gate``): the
    pooled headline cell and its counts (``cell rag (overall, all judges): 21 valid < 30
    preregistered``), then each variant whose pass rate failed ``pass.gate``."""
    if not isinstance(gate, dict):
        return []
    field = gate.get("field") or "headline"
    out = [f"cell {f.get('variant')} ({field}, all judges): {f.get('why') or f.get('status')}"
           for f in gate.get("failing") or []]
    out += [f"pass rate of {f.get('variant')}: {f.get('why')}" for f in gate.get("pass_failing") or []]
    return out


def gate_summary(gate: Any, limit: int = 3) -> str:
    """The first ``limit`` :func:`gate_reasons` joined by ``; ``, then how many more there are."""
    reasons = gate_reasons(gate)
    text = "; ".join(reasons[:limit])
    if len(reasons) > limit:
        text += f"; and {len(reasons) - limit} more"
    return text


def pct(x: float | None, n: int | None = None) -> str:
    """A rate as a percentage with the precision its denominator needs (the one copy; the
    report's ``formats.pct`` is this function).

    Whole percents up to ``n`` = 999, one decimal from 1,000, two from 10,000 (so one count
    always shows); and whatever ``n``, a rate that is not 0 never prints as ``0%`` nor one that
    is not 1 as ``100%`` (3 of 1024 is ``0.3%``; 1 of 5000 is ``0.02%``).
    """
    if x is None:
        return "-"
    d = 0 if not n or n < 1000 or x in (0, 1) else min(len(str(int(n))) - 3, 3)
    while d < 3 and ((0 < x and round(100 * x, d) == 0) or (x < 1 and round(100 * x, d) == 100)):
        d += 1
    return f"{100 * x:.{d}f}%"


# CSV injection (OWASP): a spreadsheet opening a CSV reads a field that begins with one of these
# as a formula (=HYPERLINK(..), =cmd|..). The report's CSV buttons (assets/tables.js, csvField)
# apply the same rule to the cell text they export.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?%?")


def csv_cell(value: Any) -> Any:
    """``value`` as a CSV field no spreadsheet runs as a formula: a string that begins (after
    leading spaces) with ``=``, ``+``, ``-`` or ``@``, or with TAB or CR, gets a leading ``'``;
    numbers as printed (``-0.12``, ``+1.50``, ``-1.5e-3``, ``12%``) and the lone ``-`` that
    stands for no value stay as they are, as does anything that is not a string (the csv
    module writes it). Quoting is the csv writer's job, after this."""
    if not isinstance(value, str) or not value:
        return value
    head = value.lstrip(" ")
    if value[0] in "\t\r" or (head.startswith(_FORMULA_START) and head != "-"
                                 and not _NUMBER.fullmatch(head)):
        return "'" + value
    return value


def composite_key(parts: Sequence[str]) -> str:
    """One key value from the parts of a composite key, unambiguously.

    Parts are joined with ``:`` when none contains ``:`` or ``[`` (``81:1``, readable and
    unambiguous: splitting on ``:`` gives the parts back); otherwise the key is the parts as
    a JSON array (``["x:1","2"]``), which always starts with ``[`` and so cannot equal a
    plain join. ``("x:1", "2")`` and ``("x", "1:2")`` are therefore different keys.
    """
    if not any(":" in x or "[" in x for x in parts):
        return ":".join(parts)
    return json.dumps(list(parts), ensure_ascii=False, separators=(",", ":"))


def cell_text(c: dict[str, Any], nd: int = 2, value_range: Any = None) -> str:
    """``8.07 (42/50) [7.71, 8.40]``: mean, valid/rows and the interval; ``-`` when undefined.
    Rows include planned-but-absent judgments (``, 3 absent``). With ``value_range``, a bound past
    the scale prints as the scale's end marked ``*`` (truncated), never as an impossible value."""
    absent = f", {c['absent']} absent" if c.get("absent") else ""
    if c["mean"] is None:
        return f"- (0/{c['rows']}{absent})"
    if c["ci_low"] is None or c["ci_high"] is None:
        ci = " [no interval]"
    else:
        lo, hi = c["ci_low"], c["ci_high"]
        a, b = f"{lo:.{nd}f}", f"{hi:.{nd}f}"
        if value_range is not None:
            rlo, rhi = value_range
            a = f"{rlo:.{nd}f}*" if lo < rlo else a
            b = f"{rhi:.{nd}f}*" if hi > rhi else b
        ci = f" [{a}, {b}]"
    return f"{c['mean']:.{nd}f} ({c['valid_n']}/{c['rows']}{absent}){ci}"
