"""Command line: ``workbench analyze | check | report | batch | synth | selftest | calibrate | preset``.

Exit codes: 0 done, 1 a gate failed or a claim did not hold (``check``), 2 bad input or
usage. Bad input is one line on stderr naming the file (and line and field where there is
one); never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench.cli import terminal
from workbench.common import config as config_mod
from workbench.common.errors import WorkbenchError
from workbench.document.cliargs import (  # noqa: F401  (re-exported: cli.write_outputs, cli.EXIT_OK... as before)
    EXIT_GATE,
    EXIT_INPUT,
    EXIT_OK,
    RowsParquet,
    check_input_files,
    config_from_args,
    execution_from_args,
    gate_exit,
    input_paths,
    overrides_from_args,
    resolve_preset,
    write_outputs,
)

#: ``workbench --help``: plain text (the module docstring above is for readers of the code).
DESCRIPTION = ("Reanalysis workbench for LLM-as-a-judge evaluations: every line accounted for,\n"
               "every mean with its valid n.")

EPILOG = """\
Exit codes: 0 done; 1 a gate failed, or a claim did not hold (check); 2 bad input or usage.

Input files: .jsonl, .jsonl.gz or .json (a JSON array of row objects) in the default format
or a shipped preset's, or Inspect AI logs (.eval zip or .json log). workbench preset list
names the presets; workbench preset show NAME prints one as a YAML config to copy and edit.
Run workbench COMMAND --help for a command's options.
"""

INPUT_HELP = ("judge-row files or globs: .jsonl, .jsonl.gz, .json (a JSON array of rows), .csv, .tsv (plain "
              "or .gz), .parquet, or Inspect AI logs (.eval zip or .json log); the format is detected when no "
              "--preset/--config says it")


class _Formatter(argparse.HelpFormatter):
    """Help that shows each option's default where there is one (not for flags and None)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        d = action.default
        if ("%(default)" not in text and d not in (None, False, [], argparse.SUPPRESS)
                and action.option_strings and action.nargs != 0):
            text += " (default: %(default)s)"
        return text


class _RawFormatter(argparse.RawDescriptionHelpFormatter, _Formatter):
    """Defaults shown, the description and epilog kept as written."""


def _option_strings(parser: argparse.ArgumentParser) -> list[str]:
    """Every option string of a parser and its subparsers."""
    out: list[str] = []
    for action in parser._actions:
        out += [o for o in action.option_strings if o.startswith("--")]
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out += _option_strings(sub)
    return sorted(set(out))


def did_you_mean(word: str, choices: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest choice, or ``""``."""
    import difflib

    near = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {near[0]!r}?)" if near else ""


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kw: Any) -> None:
        kw.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kw)

    def error(self, message: str) -> None:  # usage errors exit 2 with one line, like bad input
        import re

        m = re.match(r"unrecognized arguments: (.*)", message)
        if m:
            root = getattr(self, "_root", self)
            known = _option_strings(root)
            hints = [f"{a}{did_you_mean(a.split('=')[0], known)}" for a in m.group(1).split()]
            message = "unrecognized arguments: " + " ".join(hints)
        m = re.match(r"argument (.*): invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:
            choices = re.findall(r"'([^']*)'", m.group(3))
            message = f"argument {m.group(1)}: invalid choice: {m.group(2)!r}{did_you_mean(m.group(2), choices)}" \
                      f" (choose from {', '.join(choices)})"
        self.print_usage(sys.stderr)
        print(f"workbench: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_INPUT)


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("workbench")
    except metadata.PackageNotFoundError:  # running from a source tree
        return "0+unknown"


BATCH_HELP = """\
The manifest is YAML: a list of entries under "entries:", each one report:

  entries:
    - name: mt-bench-gpt4          # required: the report's folder under --out
      inputs: [judgments.jsonl]    # required: a path or a list (globs allowed)
      preset: mt-bench             # optional, as for workbench report
      config: config.yaml          # optional
      plan: plan.csv               # optional, or 'complete'
      published: card.csv          # optional
      claims: claims.yaml          # optional
      params: {resamples: 2000, min_valid_n: 20}   # optional config keys
      no_gate: true                # optional: show a failed gate without failing

Paths are relative to the manifest's folder. Each entry runs as its own workbench report;
DIR/index.html lists every entry with its status (ok, gate failed, gate failed (no_gate),
error) and headline numbers. Exit 1 when an entry errored or failed its gate, else 0.
"""


def _add_inputs(p: argparse.ArgumentParser, out_required: bool = True) -> None:
    p.add_argument("inputs", nargs="+", metavar="INPUT", help=INPUT_HELP)
    p.add_argument("--config", metavar="FILE",
                   help="YAML config file (workbench preset show NAME prints a complete one to start from)")
    p.add_argument("--preset", choices=(*config_mod.PRESETS, config_mod.AUTO),
                   help="a shipped config for a known harness, or 'auto' to detect it from the files "
                        "(the default when no --preset/--config is given and the rows are not in the "
                        "default format)")
    p.add_argument("--plan", metavar="FILE|complete",
                   help="CSV of planned judgments, or 'complete' for every observed combination")
    p.add_argument("--published", metavar="FILE", help="published scorecard CSV to audit")
    p.add_argument("--claims", metavar="FILE", help="YAML list of headline claims to check")
    p.add_argument("--lc-difficulty", metavar="FILE",
                   help="AlpacaEval instruction_difficulty table (CSV: instruction, instruction_difficulty) for "
                        "the length-controlled win rate; without it the difficulty is fitted from the annotations "
                        "(config length.difficulty)")
    d = config_mod.DEFAULTS
    p.add_argument("--min-valid-n", type=int, metavar="N",
                   help=f"preregistered minimum valid n per cell (default: the config's; built in {d['min_valid_n']})")
    p.add_argument("--min-clusters", type=int, metavar="N",
                   help=f"preregistered minimum scenarios per cell (default: the config's; built in "
                        f"{d['min_clusters']})")
    p.add_argument("--seed", type=int, help=f"bootstrap seed (default: the config's; built in "
                                            f"{d['bootstrap']['seed']})")
    p.add_argument("--resamples", type=int, help=f"bootstrap resamples (default: the config's; built in "
                                                 f"{d['bootstrap']['resamples']})")
    p.add_argument("-p", "--param", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                   help="set a config key (YAML value), e.g. -p confidence 0.9")
    p.add_argument("--no-gate", action="store_true", help="report non-measured cells without failing")
    p.add_argument("--allow-copies", action="store_true",
                   help="read notebook checkpoints (.ipynb_checkpoints/, *-checkpoint.*) and editor "
                   "backups (*~, *.bak, *.orig, *.swp) as inputs; without it globs skip them (with a note) "
                   "and a copy named explicitly is refused")
    p.add_argument("--quiet", "-q", action="store_true", help="print only where the output went")
    p.add_argument("--overwrite", action="store_true",
                   help="write into an --out directory that holds files the workbench did not write")
    p.add_argument("--jobs", type=int, metavar="N",
                   help="input files read at once by the local engine, in worker processes (default: 1; "
                        "the results do not depend on it)")
    p.add_argument("--engine", choices=("local", "dask"), default="local",
                   help="where ingest runs: this machine, or a Dask cluster (reads fsspec URLs such as "
                        "s3://; needs the workbench[dask] extra)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="Dask scheduler address for --engine dask (default: $DASK_SCHEDULER_ADDRESS, "
                        "else a local cluster sized to this machine)")
    if out_required:
        p.add_argument("--out", required=True, metavar="DIR", help="output directory")


def build_parser() -> argparse.ArgumentParser:
    """The ``workbench`` argument parser."""
    parser = _Parser(prog="workbench", description=DESCRIPTION, epilog=EPILOG, formatter_class=_RawFormatter)
    parser.add_argument("--version", action="version", version=f"workbench {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("analyze", help="ledger, census, scorecard, offsets, contrasts -> results.json")
    _add_inputs(p)

    p = sub.add_parser("check", help="check headline claims and/or a published card against the rows")
    _add_inputs(p, out_required=False)
    p.add_argument("--out", metavar="DIR", help="also write results.json and rows.parquet here")

    p = sub.add_parser("report", help="render the papermill report (HTML, notebook, figures)")
    _add_inputs(p)

    p = sub.add_parser("batch", help="one report per manifest entry", epilog=BATCH_HELP,
                       formatter_class=_RawFormatter)
    p.add_argument("manifest", metavar="MANIFEST.yaml", help="the entries to report (format below)")
    p.add_argument("--out", required=True, metavar="DIR", help="one folder per entry and index.html")
    p.add_argument("--jobs", type=int, default=2, metavar="N", help="reports rendered at once")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p.add_argument("--overwrite", action="store_true",
                   help="write into an --out directory that holds files the workbench did not write")

    p = sub.add_parser("synth", help="write planted-truth judge rows, plan, truth.json (the simulator)")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    p.add_argument("--seed", type=int, default=0, help="simulation seed (same seed, same bytes)")
    p.add_argument("--scenario", metavar="NAME",
                   help="a built-in scenario: clean, silent_zero, item_failures, judge_biases, crosswise")
    p.add_argument("--config", metavar="FILE", help="YAML of generating-model knobs")

    p = sub.add_parser("selftest", help="run the built-in known-good/known-bad scenarios; exit 1 on a miss")
    p.add_argument("--seed", type=int, default=None, help="simulation seed (default: the fixed self-test seed)")

    p = sub.add_parser("calibrate", help="coverage / false-positive / power by simulation -> table and plot")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory (e.g. reports/calibration)")
    p.add_argument("--sets", type=int, default=None, metavar="N", help="data sets per grid point")
    p.add_argument("--quick", action="store_true", help="the CI subset of the grid")

    p = sub.add_parser("preset", help="list or show the shipped presets")
    psub = p.add_subparsers(dest="preset_command", required=True, parser_class=_Parser)
    psub.add_parser("list", help="names of the shipped presets")
    ps = psub.add_parser("show", help="print a preset's YAML")
    ps.add_argument("name", choices=config_mod.PRESETS)
    _set_root(parser, parser)
    return parser


def _set_root(parser: argparse.ArgumentParser, root: argparse.ArgumentParser) -> None:
    """Let every subparser's error see all option strings (for 'did you mean')."""
    parser._root = root  # type: ignore[attr-defined]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _set_root(sub, root)


def cmd_analyze(args: argparse.Namespace) -> int:
    from workbench.document import pipeline

    execution = execution_from_args(args)
    cfg = config_from_args(args)
    check_input_files(args)
    progress = terminal.progress_bar("ingest", enabled=not args.quiet)
    stage = terminal.stage_printer(not args.quiet)
    with RowsParquet() as rows_file:  # rows.parquet written while the stages run
        analysis = pipeline.run(args.inputs, cfg, plan=args.plan, published=args.published,
                                claims=args.claims, progress=progress, on_stage=stage, execution=execution,
                                on_rows=rows_file)
        progress(None)
        out = Path(args.out)
        stage("writing results.json and rows.parquet")
        paths = write_outputs(analysis, out, argv=args.argv, rows_file=rows_file)
    if not args.quiet:
        terminal.print_analysis(analysis)
    print(terminal.safe(f"wrote {paths['results']} and {paths['rows']}"))
    return gate_exit(analysis, args.no_gate)


def cmd_synth(args: argparse.Namespace) -> int:
    from workbench.sim import synth

    model = synth.load_model(args.config, args.scenario)
    paths = synth.write(model, args.out, seed=args.seed)
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return EXIT_OK


def cmd_selftest(args: argparse.Namespace) -> int:
    from workbench.cli import selftest

    return selftest.main(seed=args.seed)


def cmd_calibrate(args: argparse.Namespace) -> int:
    from workbench.sim import calibrate

    return calibrate.main(args.out, sets=args.sets, quick=args.quick)


def cmd_preset(args: argparse.Namespace) -> int:
    if args.preset_command == "list":
        for name in config_mod.PRESETS:
            print(name)
        return EXIT_OK
    sys.stdout.write(config_mod.preset_text(args.name))
    return EXIT_OK


class Terminated(BaseException):
    """SIGTERM or SIGHUP, raised in the main thread so every ``with`` and ``finally`` on the
    way out runs (temporary folders removed, a partial notebook deleted), like Ctrl-C."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _quiet_libraries() -> None:
    """No library log line after the user stopped the run: the kernel's client (nbclient,
    asyncio) logs a "Kernel died" traceback when the notebook's kernel is shut down under it,
    sometimes while the stack unwinds and sometimes when its task is collected at exit, after
    the one line this command prints (seen under load in tests/test_hardening.py's SIGTERM test)."""
    import logging

    global _QUIETED
    if _QUIETED is None:
        _QUIETED = logging.root.manager.disable
    logging.disable(logging.CRITICAL)


_QUIETED: int | None = None  # the logging level that _quiet_libraries replaced (None: not quieted)


def _loud_again() -> None:
    """Undo :func:`_quiet_libraries` when :func:`main` was called in-process with its arguments
    (the tests; the console script passes none and exits, and the stopped kernel client's
    tasks may only be collected at interpreter exit), after collecting what is left of them."""
    import gc
    import logging

    global _QUIETED
    if _QUIETED is not None:
        gc.collect()
        logging.disable(_QUIETED)
        _QUIETED = None


def _terminate(signum: int, frame: Any) -> None:
    _quiet_libraries()
    raise Terminated(signum)


def _install_signals() -> dict[int, Any]:
    """SIGTERM and SIGHUP raise :class:`Terminated` (main thread only; else nothing)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}
    old = {}
    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is not None:
            old[sig] = signal.signal(sig, _terminate)
    return old


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``workbench`` console script."""
    import signal

    previous = _install_signals()
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        args.argv = ["workbench", *(sys.argv[1:] if argv is None else argv)]
        handlers = {"analyze": cmd_analyze, "preset": cmd_preset, "synth": cmd_synth,
                    "selftest": cmd_selftest, "calibrate": cmd_calibrate}
        for name in ("check", "report", "batch"):
            handlers[name] = _lazy(name)
        return handlers[args.command](args)
    except WorkbenchError as exc:
        # One line, always: a message that came with line breaks (YAML, polars) is folded.
        text = terminal.safe(" | ".join(ln.strip() for ln in str(exc).splitlines() if ln.strip()))
        print(f"workbench: {terminal.colour('error', 'bad', sys.stderr)}: {text}", file=sys.stderr)
        return EXIT_INPUT
    except (MemoryError, ImportError, OSError) as exc:  # numpy's _ArrayMemoryError too
        if not _out_of_memory(exc):
            raise
        import gc

        gc.collect()
        what = terminal.safe(" ".join(str(exc).split())[:200]) or "an allocation failed"
        print(f"workbench: {terminal.colour('error', 'bad', sys.stderr)}: out of memory ({what}); the row "
              "table holds every input line (about 0.1 GB per million rows, docs/scale.md#memory-guidance): "
              "split the input or run with more memory", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        _quiet_libraries()
        print("workbench: interrupted", file=sys.stderr)
        return 130
    except Terminated as exc:
        name = signal.Signals(exc.signum).name
        print(f"workbench: stopped by {name}; nothing partial was left as if current", file=sys.stderr)
        return 128 + exc.signum
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if argv is not None:
            _loud_again()
        from workbench.common import outdir

        outdir.release()


def _out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is the process running out of memory: a MemoryError, an OSError ENOMEM,
    or a library that could not be loaded for want of address space (a lazy import under
    ``ulimit -v``: "failed to map segment from shared object")."""
    import errno

    if isinstance(exc, MemoryError):
        return True
    if isinstance(exc, OSError):
        return exc.errno == errno.ENOMEM
    text = str(exc)
    return "failed to map segment" in text or "Cannot allocate memory" in text


def _lazy(name: str) -> Any:
    def handler(args: argparse.Namespace) -> int:
        import importlib

        mod = importlib.import_module(f"workbench.cli.{name}")
        return int(mod.run(args))

    return handler


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
