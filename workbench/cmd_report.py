"""``workbench report``: analyze, then render the papermill report into ``--out``.

Writes ``results.json``, ``rows.parquet`` and ``run.json`` exactly as ``analyze`` does (the same
:func:`workbench.cliargs.write_outputs`), then executes the report notebook into ``report.ipynb``;
its last cell writes ``report.html`` (code hidden, offline; the same page a bare papermill run
writes) and its figure cells ``figures/``. The exit code
is ``analyze``'s: the gate fails a report run too, but only after the report is written, so the
reader can see why.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from . import cliargs, outdir, report, terminal
from .text import count, gate_summary


def command_line(args: argparse.Namespace) -> str:
    """The command as typed when this process is ``workbench report``; else the equivalent one."""
    argv = getattr(args, "argv", None)
    if argv:
        return shlex.join(argv)
    return report.command_for(parameters(args))


def parameters(args: argparse.Namespace) -> dict[str, Any]:
    """The notebook's parameters for these arguments (see the notebook's ``parameters`` cell)."""
    return {
        "inputs": list(args.inputs),
        "config": args.config,
        "preset": args.preset,
        "plan": args.plan,
        "published": args.published,
        "claims": args.claims,
        "params": [list(p) for p in args.param],
        "min_valid_n": args.min_valid_n,
        "min_clusters": args.min_clusters,
        "confidence": None,
        "resamples": args.resamples,
        "seed": args.seed,
        "subsets": None,
        "engine": getattr(args, "engine", None) or "local",
        "jobs": getattr(args, "jobs", None),
        "scheduler": getattr(args, "scheduler", None),
        "out": args.out,
        "write_outputs": False,
    }


def _say(quiet: bool, text: str) -> None:
    if not quiet:
        print(f"workbench: {terminal.safe(text)}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    """Analyze, write outputs, render the report; return the gate's exit code."""
    from . import pipeline

    execution = cliargs.execution_from_args(args)
    cfg = cliargs.config_from_args(args)
    cliargs.check_input_files(args)
    out = Path(args.out)
    t0 = time.monotonic()
    progress = terminal.progress_bar("ingest", enabled=not args.quiet)
    stage = terminal.stage_printer(not args.quiet)
    _say(args.quiet, f"analysing {count(cliargs.count_inputs(args), 'input')}")
    analysis = pipeline.run(
        args.inputs,
        cfg,
        plan=args.plan,
        published=args.published,
        claims=args.claims,
        progress=progress,
        on_stage=stage,
        execution=execution,
    )
    progress(None)
    stage("writing results.json and rows.parquet")
    cliargs.write_outputs(analysis, out, argv=getattr(args, "argv", sys.argv))
    _say(
        args.quiet, f"analysis done in {time.monotonic() - t0:.1f}s; rendering the report notebook"
    )
    # The notebook's kernel computes the analysis again (its provenance section compares it
    # with the results.json just written): keep only what is needed after rendering, so the
    # row table is not held here while the kernel holds its own (two copies at once).
    code = cliargs.gate_exit(analysis, args.no_gate)
    gate = analysis.doc["gate"]
    del analysis
    import gc

    gc.collect()
    params = parameters(args)
    params["command_line"] = command_line(args)
    show_bar = not args.quiet and sys.stderr.isatty()
    paths = report.render(out, params, progress=show_bar)
    outdir.add_files(out, [*outdir.REPORT_FILES, *outdir.figure_files(out)])
    _say(args.quiet, f"report done in {time.monotonic() - t0:.1f}s")
    print(terminal.safe(paths["html"]))
    if code != cliargs.EXIT_OK:
        why = gate_summary(gate)
        failed = terminal.colour("gate failed", "bad", sys.stderr)
        print(f"workbench: {failed}: {terminal.safe(why)}; the report shows why", file=sys.stderr)
    return code
