"""Terminal output: the compact census and scorecard tables, and progress bars."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from workbench.common.text import cell_text, pct, safe  # noqa: F401  (re-exported: terminal.safe, .pct, .cell_text)


class ProgressLine:
    """The ingest progress line on stderr: ``f(n)`` advances it by n lines read.

    ``f.finish(total)`` (called by :func:`workbench.document.pipeline.load` once the inputs are read,
    with the ledger's ``lines``) replaces the bar by one final line ``ingest: N lines read in
    t s`` ending in a newline, so the stage messages that follow start on a clean line and
    the count is the ledger's, not a running estimate. ``f(None)`` closes it (idempotent).
    """

    def __init__(self, label: str, total: int | None = None, unit: str = " lines") -> None:
        import time

        from tqdm import tqdm  # here: importing the terminal module stays light

        self.label = label
        self.total = total
        self.start = time.perf_counter()
        self.bar: Any = tqdm(total=total, desc=label, unit=unit, leave=False, file=sys.stderr)

    def __call__(self, n: int | None) -> None:
        if n is None:
            self.close()
        elif self.bar is not None:
            self.bar.update(n)
            if self.total is not None and self.bar.n >= self.total:
                self.close()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()  # leave=False: the bar's line is blanked and the cursor at its start
            self.bar = None

    def finish(self, total: int) -> None:
        import time

        if self.bar is None:
            return
        self.close()
        print(f"{self.label}: {total} lines read in {time.perf_counter() - self.start:.1f} s",
              file=sys.stderr, flush=True)


def _silent(n: int | None) -> None:
    return None


def progress_bar(label: str, enabled: bool = True, total: int | None = None,
                 unit: str = " lines") -> Callable[[int | None], None]:
    """A callback ``f(n)`` advancing a stderr progress line by n; ``f(None)`` closes it (and
    reaching ``total`` does); see :class:`ProgressLine` for the ingest line's end.

    Silent when stderr is not a terminal (batch jobs, CI), so logs stay clean.
    """
    if not enabled or not sys.stderr.isatty():
        return _silent
    return ProgressLine(label, total, unit)


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


VERDICT_KIND = {"holds": "good", "shrinks": "warn", "reverses": "bad", "refuted": "bad", "inconclusive": "warn",
                "equivalent": "neutral", "insufficient": "muted"}


class StagePrinter:
    """``f(text)`` prints ``workbench: <stage> (t s)`` to stderr; ``f.bar(label, total)`` is a
    progress bar for a long pairwise stage (:func:`workbench.document.pipeline.run` asks for one through
    this object, so the pipeline never imports the terminal)."""

    def __init__(self) -> None:
        import time

        self.start = time.perf_counter()

    def __call__(self, text: str) -> None:
        import time

        print(f"workbench: {safe(text)} ({time.perf_counter() - self.start:.1f} s)", file=sys.stderr, flush=True)

    def bar(self, label: str, total: int, unit: str = " pairs") -> Callable[[int | None], None]:
        return progress_bar(label, total=total, unit=unit)


def stage_printer(enabled: bool = True) -> Callable[[str], None]:
    """A callback printing ``workbench: <stage> (t s)`` to stderr as each stage starts (a
    :class:`StagePrinter`, which also makes the pairwise stages' progress bars).

    Silent unless stderr is a terminal, like :func:`progress_bar`.
    """
    if not enabled or not sys.stderr.isatty():
        return lambda text: None
    return StagePrinter()


def _fmt(x: Any, nd: int = 2) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)


def table(headers: list[str], rows: list[list[str]], right: set[int]) -> str:
    """A plain-text table: a header, a rule, the rows; columns in ``right`` right-aligned."""
    headers = [safe(h) for h in headers]
    rows = [[safe(c) for c in r] for r in rows]
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
        rate, n = c["missing_rate"], c["judgments"]
        ci = (f"{pct(rate, n)} [{pct(c['missing_rate_ci_low'], n)}, {pct(c['missing_rate_ci_high'], n)}]"
              if rate is not None else "-")
        rows.append([str(c["judge"]), str(c["variant"]), str(c["judgments"]), str(c["valid"]),
                     str(c["partial"]), str(c["empty"]), str(c["missing_planned"]),
                     str(c["non_numeric"] + c["out_of_range"] + c["invalid_number"] + c["conflict_keys"]), ci])
    head = ["judge", "variant", "judgments", "valid", "partial", "empty", "no row", "other",
            "missing/judgments [95% CI]"]
    out = ["null census (headline score) per judge x variant; missing rate = (judgments - valid) / judgments, "
           "planned judgments with no row included", table(head, rows, {2, 3, 4, 5, 6, 7})]
    alpha = float((doc.get("config") or {}).get("alpha", 0.05))
    for t in doc.get("missingness_tests", []):
        p = t["p_value"]
        # a p-value that underflows (a large-sample test far in its tail) is not "p = 0"
        shown = "p = -" if p is None else "p < 1e-16" if p < 1e-16 else f"p = {p:.3g}"
        line = f"missing rate depends on {t['factor']}? {t['method']} {shown}"
        if t.get("cannot_reject"):
            # with few blocks no p can fall below alpha: say so, not "nothing found"
            line += (f" (cannot reject at {alpha:.0%} with {t['blocks']} blocks: smallest attainable "
                     f"p {t['min_p']:.2g})")
        out.append(line)
    for s in doc.get("scale_checks", []):
        if s.get("scale_mismatch"):
            out.append(safe("SCALE MISMATCH: " + s["message"]))
    return "\n".join(out)


def conflicts_text(doc: dict[str, Any], limit: int = 5) -> str | None:
    """The conflicts by kind, and for rows that judged different answers (a stale or
    overwritten run) what each run would give per cell; None when there is no conflict."""
    kinds = doc.get("conflict_kinds") or {}
    found = {k: v for k, v in kinds.items() if v.get("rows")}
    if not found:
        return None
    text = "conflicts (every copy held out): " + ", ".join(
        f"{k} {v['rows']} rows / {v['keys']} keys" for k, v in found.items())
    runs = doc.get("conflict_runs") or []
    if not runs:
        return text
    nd = _decimals(doc)

    def fig(x: dict[str, Any]) -> str:
        return f"{_fmt(x['mean'], nd)} (n={x['n']})"

    rows = [[safe(str(r["judge"])), safe(str(r["variant"])), str(r["keys"]), fig(r["first_answer"]),
             fig(r["other_answer"])] for r in runs[:limit]]
    lines = [text, "  different answers under one key (a stale or overwritten run), "
             f"{safe(runs[0]['field'])} per run:",
             table(["judge", "variant", "keys", "first-seen answer", "other answer"], rows, {2, 3, 4})]
    if len(runs) > limit:
        lines.append(f"  ... and {len(runs) - limit} more cells (results.json conflict_runs)")
    return "\n".join(lines)


def malformed_text(doc: dict[str, Any], limit: int = 5) -> str | None:
    bad = doc.get("malformed_lines", [])
    if not bad:
        return None
    lines = [safe(f"  {m['file']}:{m['line']}: {m['reason']}") for m in bad[:limit]]
    if len(bad) > limit:
        lines.append(f"  ... and {len(bad) - limit} more (rows.parquet has every one)")
    return "malformed lines:\n" + "\n".join(lines)


def _decimals(doc: dict[str, Any]) -> int:
    """The config's rendering decimals (:attr:`workbench.common.config.Config.decimals`), from the doc."""
    cfg = doc.get("config") or {}
    unit = cfg.get("unit") or {}
    if "decimals" in unit:
        return int(unit["decimals"])
    if cfg.get("preference") is not None or unit.get("name") == "percent":
        return 2
    rub = cfg.get("rubric") or {}
    span = float(rub.get("max", 10)) - float(rub.get("min", 1))
    return 2 if span >= 5 else 3 if span >= 0.5 else 4


def plan_text(doc: dict[str, Any]) -> str | None:
    plan = doc.get("plan") or {}
    if not plan.get("mode"):
        return None
    src = {"complete": "every observed scenario x variant x trial x judge",
           "file": "the plan file", "tasks": "the task list " + ", ".join(plan.get("task_files") or [])}
    absent = (doc.get("ledger") or {}).get("missing_planned")
    return (f"plan: {plan['planned']} planned judgments from {src.get(plan['mode'], plan['mode'])}; "
            f"{absent} have no row (missing_planned: counted in the scorecard's rows and bounds)")


def harness_text(doc: dict[str, Any]) -> str | None:
    h = doc.get("harness")
    if not h:
        return None
    lines = []
    figs = h.get("figures") or []
    if figs:
        lines.append(f"harness rule ({h['rule']}): the figures the harness itself prints, from every row as read")
        names = list(dict.fromkeys(str(f["figure"]) for f in figs))
        # one line per log when a variant x judge has figures from several files (Inspect logs)
        per_file = any(len({f.get("file") for f in figs if (f["variant"], f["judge"]) == k}) > 1
                       for k in {(f["variant"], f["judge"]) for f in figs})
        keys = list(dict.fromkeys((f["variant"], f["judge"], f.get("file") if per_file else None) for f in figs))
        by = {(f["variant"], f["judge"], f.get("file") if per_file else None, str(f["figure"])): f for f in figs}
        notes: list[str] = []
        rows = []
        for variant, judge, file in keys:
            row = [str(variant), str(judge)] + ([os.path.basename(str(file))] if per_file else [])
            for name in names:
                f = by.get((variant, judge, file, name))
                if f is None:
                    row.append("")
                    continue
                v = f["value"]
                val = "-" if v is None else (str(v) if isinstance(v, int) else f"{v:.10g}")
                if f.get("note"):
                    notes.append(f"{variant} {name}: {f['note']}")
                    val += f" [{len(notes)}]"
                if "printed" in f:
                    notes.append(f"{variant} {name}: printed in the log {f['printed']} "
                                 f"({'matches' if f.get('matches') else 'DIFFERS'})")
                    val += f" [{len(notes)}]"
                row.append(val)
            rows.append(row)
        lead = ["variant", "judge", *(["log"] if per_file else [])]
        lines.append(table([*lead, *names], rows, set(range(len(lead), len(lead) + len(names)))))
        lines.extend(safe(f"  [{i}] {n}") for i, n in enumerate(notes, 1))
    ps = h.get("position_swap") or []
    if ps:
        lines.append("position swap: the two games of one item (positions 1 and 2), per variant x judge")
        rows = []
        for p in ps:
            rate = "-" if p["disagreement_rate"] is None else (
                f"{100 * p['disagreement_rate']:.1f}% [{100 * p['ci_low']:.1f}, {100 * p['ci_high']:.1f}]")
            means = " / ".join("-" if m is None else f"{m:.2f}" for m in p["mean_by_position"].values())
            absent = "-" if p["absent_items"] is None else f"{p['absent_items']} of {p['planned_items']}"
            rows.append([str(p["variant"]), str(p["judge"]), str(p["items"]), str(p["both_usable"]),
                         f"{p['disagree']}", rate, means, str(p["one_missing"]), str(p["both_missing"]),
                         str(p.get("reruns", "-")), absent])
        lines.append(table(["variant", "judge", "items", "both games", "disagree", "rate [95% CI]",
                            "mean by position", "one game missing", "both missing", "judged again",
                            "absent items"],
                           rows, {2, 3, 4, 7, 8, 9}))
        lines.append("  an item is one key, however often judged: an identical re-judgment is the same game, "
                     "one with another verdict is held out (a conflict)")
    return "\n".join(lines) if lines else None


def provenance_text(doc: dict[str, Any]) -> str | None:
    found = [p for p in doc.get("provenance_checks") or [] if p.get("message")]
    if not found:
        checks = doc.get("provenance_checks") or []
        if checks:
            n = sum(p["agree"] for p in checks)
            return f"provenance: {n} row checks agree with their paths (fields vs folders/file names)"
        return None
    return "provenance findings:\n" + "\n".join(f"  {p['message']}" for p in found)


def scorecard_text(doc: dict[str, Any]) -> str | None:
    card = doc.get("scorecard")
    if not card:
        return None
    hl = doc["config"]["headline"]
    pooled = [c for c in card if c["judge"] is None and c["subset"] is None and c["field"] == hl]
    measured = sorted((c for c in pooled if c["status"] == "measured"), key=lambda c: -c["mean"])
    others = sorted((c for c in pooled if c["status"] != "measured"), key=lambda c: str(c["variant"]))
    nd = _decimals(doc)
    from workbench.analysis.ranks import basis_text, by_variant, rank_label

    rank_of = by_variant(doc.get("ranks"))
    rows = []
    cut = False
    for c in measured + others:
        mark = "" if c["status"] == "measured" else f"  <- {c['status'].upper().replace('_', ' ')}"
        zf = "-" if c["zero_filled_mean"] is None else f"{c['zero_filled_mean']:.{nd}f}"
        bounds = ("-" if c["lower_bound"] is None else f"[{c['lower_bound']:.{nd}f}, {c['upper_bound']:.{nd}f}]")
        rk = rank_of.get(str(c["variant"])) if c["status"] == "measured" else None
        text = cell_text(c, nd, doc.get("value_range"))
        cut = cut or text.endswith("*]") or "*," in text
        rows.append([rank_label(rk), str(c["variant"]), text, zf, bounds, str(c["clusters"]) + mark])
    unit = doc.get("value_unit", "rubric points")
    conf = doc["config"].get("confidence", 0.95)
    head = ["rank", "variant", f"{hl}: mean (valid/rows) [{100 * conf:g}% CI]",
            "zero-filled (over rows)",
            "if missing were min..max", "scenarios"]
    lines = [f"scorecard: {hl} ({unit}), judges pooled, valid rows only; measured cells by mean, others listed "
             "after and never ranked", table(head, rows, {0, 3})]
    if cut:
        lines.append("* a t-interval bound past the scale, shown at the scale's end (truncated); "
                     "results.json holds the computed bound and the cluster bootstrap interval")
    if rank_of:
        lines.append(f"rank: {basis_text(doc.get('ranks'))}; a range such as 1-3 = not distinguishable, "
                     "the data allow any of those ranks")
    gate = doc.get("gate")
    if gate is not None:
        if gate["passed"]:
            lines.append(f"gate: passed (every pooled cell has >= {gate['min_valid_n']} valid and "
                         f">= {gate['min_clusters']} scenarios)")
        else:
            why = [f"{f['variant']}: {f['why']}" for f in gate["failing"]]
            why += [f"{f['variant']}: {f['why']}" for f in gate.get("pass_failing", [])]
            lines.append(safe("gate: FAILED: " + "; ".join(why)))
    return "\n".join(lines)


def board_text(doc: dict[str, Any]) -> str | None:
    """The board (results.json ``board``): who is ahead, by how much, and can we tell."""
    from workbench.analysis import board as board_mod

    lines = []
    conf = doc["config"].get("confidence", 0.95)
    for b in doc.get("board") or []:
        rows_in = b.get("rows") or []
        if not rows_in:
            continue
        harness = b.get("harness_figure")
        swap = any("position_swap_disagreement" in x for x in rows_in)
        lc = any(x.get("lc_win_rate") is not None for x in rows_in)
        head = board_mod.columns(b, conf)
        rows = []
        for x in rows_in:
            nd = int(x.get("decimals") or 2)
            ci = ("" if x.get("ci_low") is None or x.get("ci_high") is None
                  else f" [{x['ci_low']:.{nd}f}, {x['ci_high']:.{nd}f}]")
            fig = "-" if x.get("mean") is None else f"{x['mean']:.{nd}f}{ci}"
            row = [board_mod.rank_text(x), str(x["variant"]), fig, f"{x.get('valid_n')}/{x.get('rows')}",
                   board_mod.missing_text(x),
                   str(x.get("status") or "-").upper() if x.get("status") != "measured" else "measured"]
            if harness:
                row.append(board_mod.harness_text(x) + (" (differs)" if x.get("harness_differs") else ""))
            if lc:
                v = x.get("lc_win_rate")
                pub = x.get("lc_published")
                row.append("-" if v is None else (
                    f"{v:.2f} [{x['lc_ci_low']:.2f}, {x['lc_ci_high']:.2f}]" if x.get("lc_ci_low") is not None
                    else f"{v:.2f}") + ("" if pub is None else f" ({pub:.2f})"))
            if swap:
                r = x.get("position_swap_disagreement")
                row.append("-" if r is None else f"{100 * r:.1f}%")
            rows.append(row)
        lines.append(f"board: {b['field']}, judges pooled, valid rows only; sorted by the valid-row figure "
                     "(measured first); rank = the ranks the Holm-adjusted contrasts allow")
        lines.append(table(head, rows, {0, 3}))
        for x in rows_in:
            if x.get("harness_differs"):
                lines.append(safe(f"  harness differs for {x['variant']}: {x.get('harness_why')}"))
        if lc:
            how = sorted({str(x.get("lc_difficulty")) for x in rows_in if x.get("lc_win_rate") is not None})
            lines.append(safe("  LC: AlpacaEval's length-controlled win rate by its GLM, instruction difficulty "
                              f"{' / '.join(how)}; (published): the leaderboard's figure"))
    # values outside the rubric are a first-screen finding (and a gate failure), not a footnote
    for f in (doc.get("gate") or {}).get("range_failing") or []:
        lines.append(safe(f"  OUT OF RANGE (gate fails): {f['variant']}, {f['why']}"))
    return "\n".join(lines) if lines else None


def length_text(doc: dict[str, Any]) -> str | None:
    """The slopes of the score on the answer's length (results.json ``length``), or None."""
    from workbench.analysis.length import slope_lines

    lines = [safe(x) for x in slope_lines(doc.get("length"), doc.get("value_unit"))]
    return "\n".join(lines) if lines else None


def judges_text(doc: dict[str, Any]) -> str | None:
    """Self-preference and judge-versus-human sentences (results.json ``self_preference`` and
    ``human``), the report's own words, or None when neither applies."""
    from workbench.report.prose import human_lines, self_preference_lines

    lines = [safe(x) for x in [*self_preference_lines(doc), *human_lines(doc)]]
    return "\n".join(lines) if lines else None


def print_analysis(analysis: Any, file: Any = None) -> None:
    """Print ledger, census and (when present) the pooled headline scorecard."""
    f = file or sys.stdout
    doc = analysis.doc
    from workbench.analysis.names import warning_text

    warn = [*(doc.get("config_warnings") or []), *map(warning_text, doc.get("name_warnings") or [])]
    blocks = [board_text(doc), ledger_text(doc), malformed_text(doc),
              "\n".join(safe(f"warning: {w}") for w in warn) if warn else None,
              plan_text(doc), census_text(doc), conflicts_text(doc), provenance_text(doc), scorecard_text(doc),
              harness_text(doc), length_text(doc), judges_text(doc)]
    if doc.get("claims") is not None:
        blocks.append(claims_text(doc["claims"], analysis.config.confidence))
    if doc.get("published_check") is not None:
        blocks.append(published_text(doc["published_check"], doc["published_summary"]))
    print("\n\n".join(b for b in blocks if b), file=f)


def claims_text(claims: list[dict[str, Any]], confidence: float = 0.95) -> str:
    """Each claim line, its notes indented beneath, and a tally of the verdicts (the claims
    block of ``workbench check`` and ``analyze --claims``)."""
    from collections import Counter

    from workbench.analysis import check

    family = max((c["verdict_family"] for c in claims if c.get("verdict_family") is not None),
                 default=1)
    out = [f"claims: a - b of valid means with its {100 * confidence:g}% clustered interval "
           "(valid/rows of a vs b)"
           + (f"; each verdict is read on its Holm step-down interval, a family of {family} claims"
              if family > 1 else "")]
    for c in claims:
        line = safe(check.claim_line(c))
        word = c["verdict"].upper()
        kind = VERDICT_KIND.get(c["verdict"], "bold")
        out.append(line.replace(f": {word}", f": {colour(word, kind)}", 1))
        out.extend(safe(f"    - {n}") for n in c["notes"][1:])
    tally = Counter(c["verdict"] for c in claims)
    held = sum(check.claim_supported(c) for c in claims)
    parts = [f"{tally[v]} {v}" for v in check.VERDICTS if tally.get(v)]
    confounded = sum(bool(c["confounded"]) for c in claims)
    tail = f"; {confounded} confounded by missingness" if confounded else ""
    out.append(f"{held} of {len(claims)} {'claim' if len(claims) == 1 else 'claims'} "
               f"supported by the rows ({', '.join(parts)}){tail}")
    return "\n".join(out)


def published_text(checks: list[dict[str, Any]], summary: str) -> str:
    """The forensics summary and a compact table of published vs recomputed values."""
    rows = []
    for r in checks:
        cell = r["variant"] + (f"/{r['judge']}" if r["judge"] else "") + (
            f" [{r['subset']}]" if r["subset"] else "")
        nd = r["decimals"]
        if r["reproduced_by"]:
            how = ", ".join(r["reproduced_by"])
            if set(r["reproduced_by"]) & {"harness", "harness_rescaled"} and r.get("harness_figure"):
                how += f" ({r['harness_figure'].split(' (')[0]})"
        elif r["nearest_rule"] is None:
            how = "none (no rows)"
        else:
            how = (f"none; nearest {r['nearest_rule']} {r['nearest_value']:.{nd + 2}f} "
                   f"(distance {r['distance']:.{nd + 2}f})")
        valid = "-" if r["valid_mean"] is None else f"{r['valid_mean']:.{max(nd, 2)}f}"
        rows.append([cell, r["field"], f"{r['published']:.{nd}f}", valid, how])
    head = ["published cell", "field", "published", "valid mean", "reproduced by"]
    return "\n".join([safe(f"published scorecard: {summary}"), table(head, rows, {2, 3})])
