"""``workbench report``: analyze, then render the papermill report into ``--out``.

Writes ``results.json``, ``rows.parquet`` and ``run.json`` exactly as ``analyze`` does (the same
:func:`workbench.document.cliargs.write_outputs`), then executes the report notebook into ``report.ipynb``;
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

from workbench import report
from workbench.cli import terminal
from workbench.common import outdir
from workbench.common.errors import WorkbenchError
from workbench.common.text import count, gate_summary
from workbench.document import cliargs


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


def _kept_failure(out: Path, message: str) -> str:
    """The error of a report that did not render, for a folder about to be put back as it was:
    a failed notebook (its traceback in it) is moved out of ``out`` into a new temporary folder
    and the message points there."""
    import shutil
    import tempfile

    nb = out / "report.ipynb"
    where = ""
    if nb.is_file() and not nb.is_symlink():
        try:
            keep = Path(tempfile.mkdtemp(prefix="workbench-failed-report-")) / "report.ipynb"
            shutil.move(str(nb), keep)
            where = f"; the failed notebook, with its traceback, is {keep}"
            message = message.replace(f"(see {nb})", "").rstrip()
        except OSError:
            pass
    return f"{message}; {out} was left as it was before this run{where}"


def run(args: argparse.Namespace) -> int:
    """Analyze, write outputs, render the report; return the gate's exit code."""
    from workbench.document import pipeline

    execution = cliargs.execution_from_args(args)
    cfg = cliargs.config_from_args(args)
    cliargs.check_input_files(args)
    out = Path(args.out)
    t0 = time.monotonic()
    progress = terminal.progress_bar("ingest", enabled=not args.quiet)
    stage = terminal.stage_printer(not args.quiet)
    _say(args.quiet, f"analysing {count(cliargs.count_inputs(args), 'input')}")
    # rows.parquet written while the stages run; its temporary file removed on any failure
    with cliargs.RowsParquet() as rows_file:
        analysis = pipeline.run(
            args.inputs,
            cfg,
            plan=args.plan,
            published=args.published,
            claims=args.claims,
            progress=progress,
            on_stage=stage,
            execution=execution,
            on_rows=rows_file,
        )
        progress(None)
        # one unit: a full disk, a failing cell or a signal while writing or rendering leaves the
        # folder exactly as before the run (outdir.Staged), never new results beside no report
        with outdir.staged(out, (*outdir.ANALYSIS_FILES, *outdir.REPORT_FILES, outdir.FIGURES)):
            stage("writing results.json and rows.parquet")
            cliargs.write_outputs(analysis, out, argv=getattr(args, "argv", sys.argv), rows_file=rows_file)
            rows_file.discard()
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
            try:
                paths = report.render(out, params, progress=show_bar)
                outdir.add_files(out, [*outdir.REPORT_FILES, *outdir.figure_files(out)])
            except OSError as exc:  # the manifest could not be updated (a full disk)
                raise WorkbenchError(f"{out}: cannot write outputs: {exc.strerror or exc}; "
                                     f"{out} was left as it was before this run") from exc
            except WorkbenchError as exc:
                raise WorkbenchError(_kept_failure(out, str(exc))) from exc
    _say(args.quiet, f"report done in {time.monotonic() - t0:.1f}s")
    print(terminal.safe(paths["html"]))
    if code != cliargs.EXIT_OK:
        why = gate_summary(gate)
        failed = terminal.colour("gate failed", "bad", sys.stderr)
        print(f"workbench: {failed}: {terminal.safe(why)}; the report shows why", file=sys.stderr)
    return code
