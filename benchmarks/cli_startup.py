"""Whole-process start-up of the commands that do no analysis (issue 26).

    nice .venv/bin/python benchmarks/cli_startup.py            # median of 5 runs each
    nice .venv/bin/python benchmarks/cli_startup.py --runs 9 --budget 0.5

Runs ``workbench --help``, ``workbench --version`` and ``workbench preset list``, each in its
own child process (interpreter start, imports, argument parsing, output, exit) ``--runs``
times one after the other, and prints the median, fastest and slowest wall time of each
with a bare ``python -c pass`` as the floor. The goal is a median under ``--budget``
seconds (0.5 s): these commands must not import polars, numpy, scipy, duckdb, pandas or the
pipeline (``tests/test_cli.py`` checks that structurally; no timing is asserted in tests).
Exit 1 when a median is over the budget, so the script can gate a manual check; it is not
a pytest test.

The child imports the ``workbench`` next to this script (the repository's), whatever is
installed, so it measures this tree.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENTRY = "import sys; from workbench.cli.main import main; sys.exit(main())"
COMMANDS = {
    "workbench --help": ["--help"],
    "workbench --version": ["--version"],
    "workbench preset list": ["preset", "list"],
}


def wall(argv: list[str], env: dict[str, str]) -> float:
    """Seconds from starting ``argv`` to its exit (stdout and stderr discarded)."""
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.decode(errors='replace')}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="runs per command; the median is reported (default: 5)")
    ap.add_argument("--budget", type=float, default=0.5, help="seconds a median may take (default: 0.5)")
    ap.add_argument("--python", default=sys.executable, help="interpreter to run (default: this one)")
    args = ap.parse_args(argv)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "NO_COLOR": "1"}
    rows = [("python -c pass (floor)", [wall([args.python, "-c", "pass"], env) for _ in range(args.runs)])]
    for label, cmd in COMMANDS.items():
        rows.append((label, [wall([args.python, "-c", ENTRY, *cmd], env) for _ in range(args.runs)]))
    width = max(len(label) for label, _ in rows)
    print(f"{'command':<{width}}  median  fastest  slowest  (s, {args.runs} runs, whole process)")
    over = []
    for label, times in rows:
        med = statistics.median(times)
        flag = ""
        if label in COMMANDS and med > args.budget:
            over.append(label)
            flag = f"  over the {args.budget:g} s budget"
        print(f"{label:<{width}}  {med:6.3f}  {min(times):7.3f}  {max(times):7.3f}{flag}")
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
