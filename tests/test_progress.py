"""The ingest progress line on a real pseudo-terminal: it ends cleanly and counts the ledger's lines.

``workbench analyze`` runs with stderr on a pty (so the progress bar is on); what it wrote is
replayed through a minimal terminal model (carriage return, newline, erase-line, cursor-up)
and the screen is compared with what a user sees.
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

pty = pytest.importorskip("pty")
fcntl = pytest.importorskip("fcntl")
termios = pytest.importorskip("termios")

CSI = re.compile(r"\x1b\[(\d*)([A-Za-z])")


def screen(raw: bytes) -> list[str]:
    """The lines a terminal shows after ``raw``: CR returns to column 0, LF moves down,
    ``ESC[K`` erases to the end of the line, ``ESC[nA`` moves up; other CSI codes ignored."""
    text = raw.decode("utf-8", "replace")
    lines: list[list[str]] = [[]]
    row = col = 0
    i = 0
    while i < len(text):
        m = CSI.match(text, i)
        if m:
            n, op = int(m.group(1) or 1), m.group(2)
            if op == "K":
                del lines[row][col:]
            elif op == "A":
                row = max(0, row - n)
            i = m.end()
            continue
        ch = text[i]
        i += 1
        if ch == "\r":
            col = 0
        elif ch == "\n":
            row, col = row + 1, 0
            while len(lines) <= row:
                lines.append([])
        else:
            cur = lines[row]
            cur.extend(" " * (col - len(cur)))
            if col < len(cur):
                cur[col] = ch
            else:
                cur.append(ch)
            col += 1
    return ["".join(ln).rstrip() for ln in lines]


def test_screen_model_by_hand() -> None:
    assert screen(b"abc\rx\n") == ["xbc", ""]
    assert screen(b"long line\r\x1b[K\rok\n") == ["ok", ""]


def _run_on_pty(args: list[str], cwd: Path) -> tuple[int, bytes]:
    master, slave = pty.openpty()
    # a real terminal has a size; on a 0 x 0 pty the bar library draws nothing
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    env = {**os.environ, "COLUMNS": "100", "TERM": "xterm", "NO_COLOR": "1"}
    env.pop("CI", None)
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from workbench.cli.main import main; "
                             "sys.exit(main(sys.argv[1:]))", *args],
                            # stdout is not read here: a pipe would fill (a scorecard of 1,400
                            # cells) and block the child while this loop waits on the pty
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave, cwd=cwd, env=env)
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + 300
    while True:
        try:
            b = os.read(master, 65536)
        except OSError:  # EIO: the child closed the pty
            break
        if not b:
            break
        chunks.append(b)
        if time.monotonic() > deadline:
            proc.kill()
            break
    proc.communicate()
    os.close(master)
    return proc.returncode, b"".join(chunks)


def test_progress_line_ends_cleanly_and_counts_the_ledger_lines(tmp_path: Path) -> None:
    # 3 variants x 40 scenarios = 120 rows, plus 7 blank lines, 2 malformed lines and one
    # duplicate: 130 lines for the ledger (blank and malformed lines count).
    lines = []
    for v in ("a", "b", "c"):
        for s in range(40):
            lines.append(json.dumps({"scenario": f"s{s}", "variant": v, "trial": 1, "judge": "j",
                                     "overall": 1 + (s * 7 + len(v)) % 10}))
            if s % 18 == 5:
                lines.append("")
    lines += ["", "{not json", "[1, 2", lines[0]]
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert len(lines) == 130
    code, raw = _run_on_pty(["analyze", str(path), "--out", str(tmp_path / "out"), "--resamples",
                             "200"], tmp_path)
    assert code == 0, raw.decode("utf-8", "replace")
    led = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))["ledger"]
    assert led["lines"] == 130 and led["blank"] == 7 and led["malformed"] == 2
    assert raw.endswith(b"\n"), raw[-80:]
    shown = [ln for ln in screen(raw) if ln]
    assert re.fullmatch(r"ingest: 130 lines read in \d+\.\d s", shown[0]), shown
    # every other line is a stage message starting at column 0: no bar text left on the screen
    assert all(ln.startswith("workbench: ") for ln in shown[1:]), shown
    assert not any("lines/s" in ln or "%|" in ln or " lines [" in ln for ln in shown), shown
    assert b" lines [" in raw  # the bar was drawn (and then blanked)


def test_quiet_or_piped_writes_no_progress(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(json.dumps({"scenario": f"s{s}", "variant": "a", "trial": 1, "judge": "j",
                                          "overall": 4 + s % 3}) for s in range(12)) + "\n", encoding="utf-8")
    code, raw = _run_on_pty(["analyze", str(path), "--out", str(tmp_path / "out"), "--quiet"], tmp_path)
    assert code == 0 and raw == b"", raw


def test_a_long_bootstrap_pass_and_the_writing_stage_show_on_a_terminal(tmp_path: Path) -> None:
    """Issue 28 (5,000 variants printed nothing for most of a minute): a scorecard bootstrap of
    thousands of cells draws its own bar (columns drawn, then intervals read), blanked when it
    ends, and writing the outputs is a stage line of its own."""
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(json.dumps({"scenario": f"s{s}", "variant": f"v{v:03d}", "trial": 1, "judge": j,
                                          "overall": 1 + (v * 3 + s + len(j)) % 10})
                              for v in range(700) for s in range(2) for j in ("j1", "j2")) + "\n",
                    encoding="utf-8")
    code, raw = _run_on_pty(["analyze", str(path), "--out", str(tmp_path / "out"), "--resamples", "200"], tmp_path)
    assert code in (0, 1), raw.decode("utf-8", "replace")
    assert b"bootstrap intervals" in raw and b" steps" in raw, raw[-400:]
    shown = [ln for ln in screen(raw) if ln]
    assert not any("bootstrap intervals" in ln for ln in shown), shown  # blanked, not left behind
    assert any(re.fullmatch(r"workbench: writing results\.json and rows\.parquet \(\d+\.\d s\)", ln)
               for ln in shown), shown
