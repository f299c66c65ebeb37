"""``workbench check``: the reviewer command. One screen, one exit code.

Each claim as one line (:func:`workbench.analysis.check.claim_line`) with its notes, then the published
scorecard forensics (summary sentence and a compact table). Exit 0 when every claim
``holds``, 1 otherwise, 2 on bad input (raised as :class:`WorkbenchError`; ``cli.main`` prints
one line). ``--out DIR`` also writes ``results.json`` and ``rows.parquet``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from workbench.analysis import check
from workbench.cli import terminal
from workbench.cli.terminal import claims_text, published_text  # noqa: F401  (re-exported; they live in terminal)
from workbench.common.errors import WorkbenchError
from workbench.document import cliargs, pipeline


def screen(analysis: Any) -> str:
    """The whole ``check`` screen for a finished :class:`~workbench.document.pipeline.Analysis`."""
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
    execution = cliargs.execution_from_args(args)
    cfg = cliargs.config_from_args(args)
    cliargs.check_input_files(args)
    # Read both files before the rows: a typo in a claim fails in a second, not after ingest.
    if args.claims is not None:
        check.read_claims(args.claims)
    if args.published is not None:
        check.read_published(args.published, cfg)
    progress = terminal.progress_bar("ingest", enabled=not args.quiet)
    with cliargs.RowsParquet() as rows_file:  # with --out, rows.parquet written while the stages run
        analysis = pipeline.run(args.inputs, cfg, plan=args.plan, published=args.published,
                                claims=args.claims, progress=progress,
                                on_stage=terminal.stage_printer(not args.quiet), execution=execution,
                                on_rows=rows_file if getattr(args, "out", None) else None)
        progress(None)
        if not args.quiet:
            print(screen(analysis))
        if getattr(args, "out", None):
            paths = cliargs.write_outputs(analysis, Path(args.out), argv=getattr(args, "argv", sys.argv),
                                          rows_file=rows_file)
            print(terminal.safe(f"wrote {paths['results']} and {paths['rows']}"))
    return exit_code(analysis.doc)


def exit_code(doc: dict[str, Any]) -> int:
    """0 when every claim holds (or claims no difference and is ``equivalent``), else 1; with
    ``--published`` alone (no claims), 0 when every
    published cell is reproduced by the valid mean, else 1."""
    claims = doc.get("claims")
    if claims is not None:
        return cliargs.EXIT_OK if all(check.claim_supported(c) for c in claims) else cliargs.EXIT_GATE
    published = doc.get("published_check") or []
    reproduced = all("valid_mean" in (p.get("reproduced_by") or []) for p in published)
    return cliargs.EXIT_OK if reproduced else cliargs.EXIT_GATE
