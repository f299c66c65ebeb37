"""Helpers for the hardening and fuzz tests: run the CLI in-process and check the promises.

:func:`run_cli` runs ``workbench`` in this process (fast: no interpreter start per case),
captures stdout/stderr, and turns an escaping exception into a recorded traceback instead
of a test error, so a fuzz run reports every broken case. :func:`check_outcome` asserts the
promises every run keeps: exit code 0, 1 or 2; no traceback; exactly one stderr line on exit
2; no raw control character on the terminal; the ledger adds up to the lines read; nothing
outside ``--out`` changed; a time bound.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.cli import main as cli

TIME_BOUND = 90.0
"""Seconds one small case may take (generous: the CI machine is shared)."""

# what may appear on a terminal: printable text, newlines; no ESC, no other C0/C1, no bidi
_FORBIDDEN = {chr(c) for c in [*range(0x20), *range(0x7F, 0xA0)]} - {"\n"}
_FORBIDDEN |= set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


@dataclass
class Outcome:
    code: int
    out: str
    err: str
    seconds: float
    traceback: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def run_cli(argv: list[str]) -> Outcome:
    """Run ``workbench ARGV`` in-process; never raises (a traceback is recorded instead)."""
    out, err = io.StringIO(), io.StringIO()
    t0 = time.monotonic()
    tb = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
        except BaseException:  # noqa: BLE001 - the point is to record it
            tb = traceback.format_exc()
            code = -1
    return Outcome(code, out.getvalue(), err.getvalue(), time.monotonic() - t0, tb)


def snapshot(root: Path, skip: Path | None = None) -> dict[str, str]:
    """sha256 (or link target) of every file under ``root`` except under ``skip``."""
    found: dict[str, str] = {}
    skip_s = os.path.realpath(skip) if skip is not None else None
    for dirpath, dirs, files in os.walk(root):
        if skip_s is not None and os.path.realpath(dirpath).startswith(skip_s):
            dirs[:] = []
            continue
        for name in files:
            p = os.path.join(dirpath, name)
            if os.path.islink(p):
                found[p] = "link:" + os.readlink(p)
                continue
            if not os.path.isfile(p):  # regular files only: opening a FIFO would block
                found[p] = "special"
                continue
            try:
                with open(p, "rb") as fh:
                    found[p] = hashlib.sha256(fh.read()).hexdigest()
            except OSError:
                found[p] = "unreadable"
    return found


def physical_lines(path: str) -> int:
    data = Path(path).read_bytes()
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def check_outcome(o: Outcome, out_dir: Path | None = None, before: dict[str, str] | None = None,
                  root: Path | None = None, jsonl_inputs: list[str] | None = None) -> list[str]:
    """Every broken promise of one run, as text (empty when the run kept them all)."""
    problems = []
    if o.traceback is not None or "Traceback" in o.err:
        problems.append(f"traceback: {(o.traceback or o.err)[-600:]}")
    if o.code not in (0, 1, 2):
        problems.append(f"exit code {o.code}")
    if o.code == 2 and o.err.count("\n") != 1:
        problems.append(f"exit 2 with {o.err.count(chr(10))} stderr lines: {o.err[:300]!r}")
    bad = sorted({c for c in o.out + o.err if c in _FORBIDDEN})
    if bad:
        problems.append(f"raw control characters on the terminal: {bad}")
    if o.seconds > TIME_BOUND:
        problems.append(f"took {o.seconds:.0f} s")
    if before is not None and root is not None:
        after = snapshot(root, out_dir)
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        if changed:
            problems.append(f"changed outside --out: {changed[:5]}")
    if out_dir is not None and o.code in (0, 1) and (out_dir / "results.json").is_file():
        doc = json.loads((out_dir / "results.json").read_text(encoding="utf-8"))
        led = doc["ledger"]
        total = sum(v for k, v in led.items() if k not in ("lines", "missing_planned") and v)
        if total != led["lines"] or led["lines"] != sum(i["lines"] for i in doc["inputs"]):
            problems.append(f"ledger does not add up: {led}")
        if jsonl_inputs is not None:
            physical = sum(physical_lines(p) for p in jsonl_inputs)
            if physical != led["lines"]:
                problems.append(f"ledger {led['lines']} lines, files have {physical}")
    return problems
