"""What every command does with its parsed arguments: the Config (flags, ``-p``, preset
detection), the early checks of side files and ``--out``, writing the outputs, exit codes.

Below the commands (:mod:`workbench.cli.main`, ``workbench.cmd_*``) and the notebook's
:mod:`workbench.report.build`, which all build a run the same way; :mod:`workbench.cli.main`
re-exports every name, so ``cli.write_outputs`` and ``cli.EXIT_GATE`` keep working.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench.common import config as config_mod
from workbench.common import outdir, results
from workbench.common.errors import WorkbenchError

EXIT_OK, EXIT_GATE, EXIT_INPUT = 0, 1, 2


def overrides_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """Config overrides from flags and ``-p NAME VALUE`` pairs (values parsed as YAML).

    Raises :class:`ConfigError` for a malformed name, a value that is not plain data, or a
    name that sets a section and also a key inside it (``-p bootstrap 5 --seed 3``).
    """
    from workbench.common.errors import ConfigError

    over: dict[str, Any] = {}

    def put(parts: list[str], value: Any, label: str) -> None:
        cur = over
        for i, part in enumerate(parts[:-1]):
            nxt = cur.setdefault(part, {})
            if not isinstance(nxt, dict):
                raise ConfigError(f"{label}: {'.'.join(parts[:i + 1])} is already set to "
                                  f"{nxt!r}, so {'.'.join(parts)} cannot be set inside it")
            cur = nxt
        if isinstance(cur.get(parts[-1]), dict) and not isinstance(value, dict):
            raise ConfigError(f"{label}: {'.'.join(parts)} is a section whose keys are also set; "
                              f"it cannot be set to {value!r}")
        cur[parts[-1]] = value

    for name, value in args.param:
        parts = name.split(".")
        if not all(parts):
            raise ConfigError(f"-p {name}: a key path is names joined by dots, e.g. bootstrap.seed")
        parsed = config_mod.safe_yaml(value, f"-p {name}", config_mod.NUMBER_KEYS)
        put(parts, parsed, f"-p {name}")
    if args.min_valid_n is not None:
        put(["min_valid_n"], args.min_valid_n, "--min-valid-n")
    if args.min_clusters is not None:
        put(["min_clusters"], args.min_clusters, "--min-clusters")
    if args.seed is not None:
        put(["bootstrap", "seed"], args.seed, "--seed")
    if args.resamples is not None:
        put(["bootstrap", "resamples"], args.resamples, "--resamples")
    if getattr(args, "lc_difficulty", None) is not None:
        put(["length", "difficulty"], args.lc_difficulty, "--lc-difficulty")
    if getattr(args, "allow_copies", False):
        put(["allow_copies"], True, "--allow-copies")
    return over


def resolve_preset(args: argparse.Namespace) -> None:
    """Replace ``--preset auto`` (or no --preset/--config with non-default rows) by the detected
    preset, saying on stderr which and why (not with ``--quiet``); exit 2 with the candidates
    when it cannot tell."""
    from workbench.ingest import detect
    from workbench.ingest.execute import is_url
    from workbench.ingest.reader import expand_inputs

    explicit = args.preset == config_mod.AUTO
    if not explicit and (args.preset is not None or args.config is not None):
        return
    if any(is_url(p) for p in args.inputs):
        if explicit:
            raise WorkbenchError("--preset auto looks at local files; with fsspec URL inputs name the "
                                 "format with --preset NAME or --config FILE")
        return  # URLs: the default format unless --preset/--config says otherwise
    files = expand_inputs(list(args.inputs), allow_copies=_allow_copies(args))
    if not explicit and (detect.default_fits(files)
                         or all(detect.classify(f)[0] in (None, "?") for f in files)):
        return  # default rows, or nothing recognisable: ingest says precisely what is wrong
    preset, why = detect.detect(files)
    args.preset = preset
    # a note on stderr, silenced by --quiet like every note (an error after it stays one line):
    # the guess is never lost, results.json's config_sources names the preset
    if not getattr(args, "quiet", False):
        print(f"workbench: preset auto -> {preset or 'default format'} ({why})", file=sys.stderr)


def _allow_copies(args: argparse.Namespace) -> bool:
    """``--allow-copies`` or ``-p allow_copies true`` (before the Config exists)."""
    return bool(getattr(args, "allow_copies", False)
                or any(name == "allow_copies" and value.strip().lower() in ("true", "yes", "on")
                       for name, value in getattr(args, "param", None) or []))


def note_skipped_copies(args: argparse.Namespace, cfg: config_mod.Config) -> list[tuple[str, str]]:
    """Say on stderr (``--quiet`` or not: a file left out must never go unnoticed) which files
    the input globs matched but skipped as copies of runs (:func:`workbench.common.files.copy_reason`),
    and return them. Bad patterns are left to ingest, which names them."""
    from workbench.ingest.execute import is_url
    from workbench.ingest.reader import expand_inputs

    skipped: list[tuple[str, str]] = []
    if cfg.allow_copies:
        return skipped
    local = [str(p) for p in getattr(args, "inputs", None) or [] if not is_url(str(p))]
    try:
        expand_inputs(local, skipped=skipped)
    except WorkbenchError:
        return skipped
    if skipped:
        shown = "; ".join(f"{p} ({why})" for p, why in skipped[:5])
        more = f"; and {len(skipped) - 5} more" if len(skipped) > 5 else ""
        n = len(skipped)
        print(f"workbench: skipped {n} file{'s' if n != 1 else ''} the input globs match, as "
              f"{'copies' if n != 1 else 'a copy'} of a run rather than the run: {shown}{more}; "
              f"--allow-copies reads {'them' if n != 1 else 'it'}", file=sys.stderr)
    return skipped


def config_from_args(args: argparse.Namespace) -> config_mod.Config:
    """The Config for parsed CLI arguments: defaults, preset, --config file, flags and -p."""
    resolve_preset(args)
    cfg = config_mod.load_config(args.config, args.preset, overrides_from_args(args) or None)
    note_skipped_copies(args, cfg)
    return cfg


def check_input_files(args: argparse.Namespace) -> None:
    """Fail early (exit 2), before any analysis: a --published, --claims or --plan file that
    is not a readable file, and an --out directory this run may not write (see
    :mod:`workbench.common.outdir`: an input among the outputs, files the workbench did not write
    without --overwrite, not writable)."""
    from workbench.common.files import check_regular_file

    for flag in ("published", "claims", "lc_difficulty"):
        path = getattr(args, flag, None)
        if path is not None:
            check_regular_file(path, f"--{flag.replace('_', '-')}")
    if args.plan not in (None, "complete"):
        check_regular_file(args.plan, "plan")
    out = getattr(args, "out", None)
    if out is not None:
        outdir.prepare(out, input_paths(args), overwrite=bool(getattr(args, "overwrite", False)))


def input_paths(args: argparse.Namespace) -> list[str]:
    """Every file this command reads (input globs expanded), for the output-collision check."""
    import glob

    found: list[str] = []
    for pat in getattr(args, "inputs", None) or []:
        found.extend(glob.glob(pat, recursive=True) if any(c in pat for c in "*?[") else [pat])
    for flag in ("config", "published", "claims", "plan", "lc_difficulty"):
        value = getattr(args, flag, None)
        if value is not None and value != "complete":
            found.append(value)
    return found


def count_inputs(args: argparse.Namespace) -> int:
    """How many input files the INPUT arguments name: a glob counts its matching files, a path
    or an fsspec URL one. Where a pattern is bad (a path that does not exist, a glob matching
    nothing) the arguments are counted as given and ingest reports the problem."""
    from workbench.ingest.execute import is_url
    from workbench.ingest.reader import expand_inputs

    patterns = [str(p) for p in getattr(args, "inputs", None) or []]
    local = [p for p in patterns if not is_url(p)]
    try:
        n_local = len(expand_inputs(local, allow_copies=_allow_copies(args))) if local else 0
        return len(patterns) - len(local) + n_local
    except WorkbenchError:
        return len(patterns)


def execution_from_args(args: argparse.Namespace) -> Any:
    """The :class:`workbench.ingest.execute.Execution` for ``--engine``, ``--jobs`` and ``--scheduler``
    (how ingest runs; never part of results.json)."""
    from workbench.ingest.execute import Execution

    return Execution(engine=getattr(args, "engine", None) or "local", jobs=getattr(args, "jobs", None),
                     scheduler=getattr(args, "scheduler", None))


class RowsParquet:
    """``rows.parquet``, written in a thread while the stages run (issue 29: the write overlaps
    the analysis instead of following it).

    Passed as :func:`workbench.document.pipeline.run`'s ``on_rows``, it is called once with the
    final row table and starts writing it to a private temporary file in the system's
    temporary folder (``TMPDIR``; never in ``--out`` before the outputs are staged);
    :func:`write_outputs` then moves that file into place. Polars writes without the GIL, so
    the write runs on the second core while the stages compute. The file's bytes are those of
    ``rows.write_parquet`` whenever it runs. When the thread failed (a full temporary folder)
    or was given another table, :func:`write_outputs` writes the file itself, as before, so a
    failure is reported against ``--out``. :meth:`discard` (in a ``finally``) waits for the
    thread and removes the file when the outputs were never written."""

    def __init__(self) -> None:
        self._rows: Any = None
        self._path: Path | None = None
        self._error: str | None = None  # the thread's failure, as text (a traceback would hold the rows)
        self._thread: Any = None

    def __call__(self, rows: Any) -> None:
        import tempfile
        import threading

        if self._thread is not None:
            return
        try:
            fd, name = tempfile.mkstemp(prefix="workbench-rows-", suffix=".parquet")
        except OSError as exc:  # no temporary folder: write_outputs writes the file itself
            self._error = str(exc)
            return
        import os

        self._path = Path(name)
        os.close(fd)
        # mkstemp makes the file 0600: give it the mode a file written in place gets (umask)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(name, 0o666 & ~umask)
        self._rows = rows

        def write() -> None:
            try:
                rows.write_parquet(name)
            except BaseException as exc:  # noqa: BLE001 - write_outputs writes the file itself
                self._error = f"{type(exc).__name__}: {exc}"

        self._thread = threading.Thread(target=write, name="workbench-rows-parquet", daemon=True)
        self._thread.start()

    def take(self, rows: Any, dst: Path) -> bool:
        """Move the written file to ``dst`` (True), or False when it cannot be used."""
        import os
        import shutil

        if self._thread is None or self._path is None:
            return False
        self._thread.join()
        if self._error is not None or rows is not self._rows:
            return False
        import errno

        try:
            os.replace(self._path, dst)
        except OSError as exc:
            if exc.errno != errno.EXDEV:  # not a move across file systems: written in place instead
                return False
            # another file system (a tmpfs TMPDIR): copied under a staged temporary name
            src = self._path
            outdir.write_atomic(dst, lambda tmp: shutil.copyfile(src, tmp))
            src.unlink(missing_ok=True)
        self._path = None
        return True

    def __enter__(self) -> RowsParquet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()

    def discard(self) -> None:
        """Wait for the thread and remove its file if it was not taken (idempotent)."""
        try:
            if self._thread is not None:
                self._thread.join()
        finally:  # a second Ctrl-C during the wait still removes the name (a write running goes on unnamed)
            if self._path is not None:
                self._path.unlink(missing_ok=True)
                self._path = None
            self._rows = self._error = None


def write_outputs(analysis: Any, out: Path, argv: Sequence[str] | None = None,
                  rows_file: RowsParquet | None = None) -> dict[str, Path]:
    """Write results.json, rows.parquet and run.json into ``out`` (each to a temporary name,
    then moved into place) as one :class:`workbench.common.outdir.Staged` unit: a failure midway (a
    full disk) leaves the folder as it was; on success the previous run's other own files
    there (a report of older results) are gone. ``rows_file``: rows.parquet as already written
    while the stages ran (:class:`RowsParquet`), moved into place instead of written here."""
    import platform
    import time

    try:
        with outdir.staged(out, outdir.ANALYSIS_FILES):
            res = outdir.write_atomic(out / "results.json", results.dumps(analysis.doc))
            rows = out / "rows.parquet"
            if rows_file is None or not rows_file.take(analysis.rows, rows):
                outdir.write_atomic(rows, analysis.rows.write_parquet)
            run = {"argv": list(argv or []), "host": platform.node(), "python": platform.python_version(),
                   "finished_unix": time.time()}
            execution = getattr(analysis, "execution", None)
            if execution is not None:  # how ingest ran: here, not in results.json (same results either way)
                run["execution"] = execution
            outdir.record(out, outdir.ANALYSIS_FILES, run)
    except OSError as exc:
        raise WorkbenchError(f"{out}: cannot write outputs: {exc.strerror or exc}") from exc
    return {"results": res, "rows": rows}


def gate_exit(analysis: Any, no_gate: bool) -> int:
    """Exit code for the preregistered gate: 1 when it failed (unless ``--no-gate``)."""
    gate = analysis.doc.get("gate")
    if gate is None or gate.get("passed", True) or no_gate:
        return EXIT_OK
    return EXIT_GATE
