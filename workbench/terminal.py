"""Terminal output: the compact census and scorecard tables, and progress bars."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from tqdm import tqdm


def progress_bar(label: str, enabled: bool = True, total: int | None = None) -> Callable[[int | None], None]:
    """A callback ``f(n)`` advancing a stderr progress bar by n; ``f(None)`` closes it.

    Silent when stderr is not a terminal (batch jobs, CI), so logs stay clean.
    """
    if not enabled or not sys.stderr.isatty():
        return lambda n: None
    bar = tqdm(total=total, desc=label, unit=" lines", unit_scale=True, leave=False, file=sys.stderr)

    def update(n: int | None) -> None:
        if n is None:
            bar.close()
        else:
            bar.update(n)

    return update


_SGR = {"good": "32", "warn": "33", "bad": "31", "muted": "2", "bold": "1"}


def use_colour(stream: Any = None) -> bool:
    """Colour only on a terminal, never with ``NO_COLOR`` set (https://no-color.org) or
    ``TERM=dumb``; ``FORCE_COLOR`` turns it on anywhere."""
    import os

    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    stream = sys.stdout if stream is None else stream
    return bool(getattr(stream, "isatty", lambda: False)()) and os.environ.get("TERM") != "dumb"


def colour(text: str, kind: str, stream: Any = None) -> str:
    """``text`` in the colour of ``kind`` (good, warn, bad, muted, bold) where colour is on."""
    code = _SGR.get(kind)
    return f"\033[{code}m{text}\033[0m" if code and use_colour(stream) else text


VERDICT_KIND = {"holds": "good", "shrinks": "warn", "tie": "bad", "reverses": "bad", "insufficient": "muted"}


def stage_printer(enabled: bool = True) -> Callable[[str], None]:
    """A callback printing ``workbench: <stage> (t s)`` to stderr as each stage starts.

    Silent unless stderr is a terminal, like :func:`progress_bar`.
    """
    if not enabled or not sys.stderr.isatty():
        return lambda text: None
    import time

    start = time.perf_counter()

    def say(text: str) -> None:
        print(f"workbench: {text} ({time.perf_counter() - start:.1f} s)", file=sys.stderr, flush=True)

    return say


def _fmt(x: Any, nd: int = 2) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)


def table(headers: list[str], rows: list[list[str]], right: set[int]) -> str:
    """A plain-text table: a header, a rule, the rows; columns in ``right`` right-aligned."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def ledger_text(doc: dict[str, Any]) -> str:
    led = doc["ledger"]
    # missing_planned is beside the ledger, not in it: the sum must equal the lines read.
    parts = [f"{k} {v}" for k, v in led.items() if k not in ("lines", "missing_planned") and v]
    notes = doc.get("ledger_notes", {})
    extra = [f"{k} {v}" for k, v in notes.items() if v]
    text = f"ledger: {led['lines']} lines = " + " + ".join(parts)
    if led.get("missing_planned"):
        text += f"   (+{led['missing_planned']} planned judgments with no row)"
    if extra:
        text += "\n        beside the ledger: " + ", ".join(extra)
    return text


def census_text(doc: dict[str, Any]) -> str:
    rows = []
    for c in doc["census"]:
        rate = c["missing_rate"]
        ci = (f"{_fmt(rate * 100, 0)}% [{_fmt(c['missing_rate_ci_low'] * 100, 0)}, "
              f"{_fmt(c['missing_rate_ci_high'] * 100, 0)}]") if rate is not None else "-"
        rows.append([str(c["judge"]), str(c["variant"]), str(c["judgments"]), str(c["valid"]),
                     str(c["partial"]), str(c["empty"]), str(c["missing_planned"]),
                     str(c["non_numeric"] + c["out_of_range"] + c["invalid_number"] + c["conflict_keys"]), ci])
    head = ["judge", "variant", "judgments", "valid", "partial", "empty", "no row", "other", "missing [95% CI]"]
    out = ["null census (headline score) per judge x variant", table(head, rows, {2, 3, 4, 5, 6, 7})]
    for t in doc.get("missingness_tests", []):
        p = t["p_value"]
        out.append(f"missing rate depends on {t['factor']}? {t['method']} p = "
                   f"{'-' if p is None else f'{p:.3g}'}")
    for s in doc.get("scale_checks", []):
        if s.get("scale_mismatch"):
            out.append("SCALE MISMATCH: " + s["message"])
    return "\n".join(out)


def malformed_text(doc: dict[str, Any], limit: int = 5) -> str | None:
    bad = doc.get("malformed_lines", [])
    if not bad:
        return None
    lines = [f"  {m['file']}:{m['line']}: {m['reason']}" for m in bad[:limit]]
    if len(bad) > limit:
        lines.append(f"  ... and {len(bad) - limit} more (rows.parquet has every one)")
    return "malformed lines:\n" + "\n".join(lines)


def cell_text(c: dict[str, Any], nd: int = 2) -> str:
    """``8.07 (42/50) [7.71, 8.40]``: mean, valid/rows and the interval; ``-`` when undefined."""
    if c["mean"] is None:
        return f"- (0/{c['rows']})"
    ci = f" [{c['ci_low']:.{nd}f}, {c['ci_high']:.{nd}f}]" if c["ci_low"] is not None else " [no interval]"
    return f"{c['mean']:.{nd}f} ({c['valid_n']}/{c['rows']}){ci}"


def scorecard_text(doc: dict[str, Any]) -> str | None:
    card = doc.get("scorecard")
    if not card:
        return None
    hl = doc["config"]["headline"]
    pooled = [c for c in card if c["judge"] is None and c["subset"] is None and c["field"] == hl]
    measured = sorted((c for c in pooled if c["status"] == "measured"), key=lambda c: -c["mean"])
    others = sorted((c for c in pooled if c["status"] != "measured"), key=lambda c: str(c["variant"]))
    rows = []
    for c in measured + others:
        mark = "" if c["status"] == "measured" else f"  <- {c['status'].upper().replace('_', ' ')}"
        zf = "-" if c["zero_filled_mean"] is None else f"{c['zero_filled_mean']:.2f}"
        bounds = ("-" if c["lower_bound"] is None else f"[{c['lower_bound']:.2f}, {c['upper_bound']:.2f}]")
        rows.append([str(c["variant"]), cell_text(c), zf, bounds, str(c["clusters"]) + mark])
    unit = doc.get("value_unit", "rubric points")
    conf = doc["config"].get("confidence", 0.95)
    head = ["variant", f"{hl}: mean (valid/rows) [{100 * conf:g}% CI]", "zero-filled", "if missing were min..max",
            "scenarios"]
    lines = [f"scorecard: {hl} ({unit}), judges pooled, valid rows only; measured cells ranked, others listed "
             "after and never ranked", table(head, rows, {2})]
    gate = doc.get("gate")
    if gate is not None:
        if gate["passed"]:
            lines.append(f"gate: passed (every pooled cell has >= {gate['min_valid_n']} valid and "
                         f">= {gate['min_clusters']} scenarios)")
        else:
            why = [f"{f['variant']}: {f['why']}" for f in gate["failing"]]
            why += [f"{f['variant']}: {f['why']}" for f in gate.get("pass_failing", [])]
            lines.append("gate: FAILED: " + "; ".join(why))
    return "\n".join(lines)


def print_analysis(analysis: Any, file: Any = None) -> None:
    """Print ledger, census and (when present) the pooled headline scorecard."""
    f = file or sys.stdout
    doc = analysis.doc
    warn = doc.get("config_warnings") or []
    blocks = [ledger_text(doc), malformed_text(doc),
              "\n".join(f"warning: {w}" for w in warn) if warn else None,
              census_text(doc), scorecard_text(doc)]
    if doc.get("claims") is not None or doc.get("published_check") is not None:
        from .cmd_check import claims_text, published_text

        if doc.get("claims") is not None:
            blocks.append(claims_text(doc["claims"], analysis.config.confidence))
        if doc.get("published_check") is not None:
            blocks.append(published_text(doc["published_check"], doc["published_summary"]))
    print("\n\n".join(b for b in blocks if b), file=f)
