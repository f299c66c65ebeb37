"""``workbench check``: the reviewer command. One screen, one exit code.

Each claim as one line (:func:`workbench.check.claim_line`) with its notes, then the published
scorecard forensics (summary sentence and a compact table). Exit 0 when every claim
``holds``, 1 otherwise, 2 on bad input (raised as :class:`WorkbenchError`; ``cli.main`` prints
one line). ``--out DIR`` also writes ``results.json`` and ``rows.parquet``.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from . import check, cli, pipeline, terminal
from .errors import WorkbenchError


def claims_text(claims: list[dict[str, Any]], confidence: float = 0.95) -> str:
    """Each claim line, its notes indented beneath, and a tally of the verdicts."""
    out = [f"claims: a - b of valid means with its {100 * confidence:g}% clustered interval "
           "(valid/rows of a vs b)"]
    for c in claims:
        line = terminal.safe(check.claim_line(c))
        word = c["verdict"].upper()
        kind = terminal.VERDICT_KIND.get(c["verdict"], "bold")
        out.append(line.replace(f": {word}", f": {terminal.colour(word, kind)}", 1))
        out.extend(terminal.safe(f"    - {n}") for n in c["notes"][1:])
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
        elif r["nearest_rule"] is None:
            how = "none (no rows)"
        else:
            how = (f"none; nearest {r['nearest_rule']} {r['nearest_value']:.{nd + 2}f} "
                   f"(distance {r['distance']:.{nd + 2}f})")
        valid = "-" if r["valid_mean"] is None else f"{r['valid_mean']:.{max(nd, 2)}f}"
        rows.append([cell, r["field"], f"{r['published']:.{nd}f}", valid, how])
    head = ["published cell", "field", "published", "valid mean", "reproduced by"]
    return "\n".join([terminal.safe(f"published scorecard: {summary}"), terminal.table(head, rows, {2, 3})])


def screen(analysis: Any) -> str:
    """The whole ``check`` screen for a finished :class:`~workbench.pipeline.Analysis`."""
    doc = analysis.doc
    blocks = [terminal.ledger_text(doc)]
    if doc.get("claims") is not None:
        blocks.append(claims_text(doc["claims"], analysis.config.confidence))
    if doc.get("published_check") is not None:
        blocks.append(published_text(doc["published_check"], doc["published_summary"]))
    return "\n\n".join(blocks)


def run(args: argparse.Namespace) -> int:
    """Run ``workbench check``; returns the exit code (0 every claim holds, or claims no
    difference and is ``equivalent``; 1 otherwise)."""
    if getattr(args, "claims", None) is None and getattr(args, "published", None) is None:
        raise WorkbenchError("check needs --claims FILE (a YAML list of {name, field, subset, "
                             "judge, a, b, claimed}) and/or --published FILE (a scorecard CSV)")
    execution = cli.execution_from_args(args)
    cfg = cli.config_from_args(args)
    cli.check_input_files(args)
    # Read both files before the rows: a typo in a claim fails in a second, not after ingest.
    if args.claims is not None:
        check.read_claims(args.claims)
    if args.published is not None:
        check.read_published(args.published, cfg)
    progress = terminal.progress_bar("ingest", enabled=not args.quiet)
    analysis = pipeline.run(args.inputs, cfg, plan=args.plan, published=args.published,
                            claims=args.claims, progress=progress,
                            on_stage=terminal.stage_printer(not args.quiet), execution=execution)
    progress(None)
    if not args.quiet:
        print(screen(analysis))
    if getattr(args, "out", None):
        paths = cli.write_outputs(analysis, Path(args.out), argv=getattr(args, "argv", sys.argv))
        print(terminal.safe(f"wrote {paths['results']} and {paths['rows']}"))
    return exit_code(analysis.doc)


def exit_code(doc: dict[str, Any]) -> int:
    """0 when every claim holds (or claims no difference and is ``equivalent``), else 1; with
    ``--published`` alone (no claims), 0 when every
    published cell is reproduced by the valid mean, else 1."""
    claims = doc.get("claims")
    if claims is not None:
        return cli.EXIT_OK if all(check.claim_supported(c) for c in claims) else cli.EXIT_GATE
    published = doc.get("published_check") or []
    reproduced = all("valid_mean" in (p.get("reproduced_by") or []) for p in published)
    return cli.EXIT_OK if reproduced else cli.EXIT_GATE
