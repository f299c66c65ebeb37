"""Inputs of many lines and little bytes (issue 29): a line limit counted before a row is read,
and running out of memory as one line.

Before: a 1 MB gzip of 1 GiB of line feeds (a billion blank lines, within every byte limit) was
read line by line into the row table, about 90 bytes of memory per line, and ended under
``ulimit -v 3000000`` in a traceback (``numpy._core._exceptions._ArrayMemoryError``, or an
ImportError "failed to map segment" when a lazy import found no address space) after 1.4 GB.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fuzz_support import run_cli

from workbench.common import files

FAST = ["--resamples", "100", "-q"]
ROW = b'{"scenario": "s%d", "variant": "v", "trial": 1, "judge": "j", "overall": 5}\n'


def naive_lines(data: bytes) -> int:
    """Lines as a reader sees them: split on line feeds, a last line without one counted."""
    return len(data.split(b"\n")) - (1 if data.endswith(b"\n") or not data else 0)


@pytest.mark.parametrize("data", [b"", b"\n", b"a", b"a\n", b"a\nb", b"\n\n\n", b"x" * 70 + b"\n" * 3 + b"y",
                                  b"\n" * 200 + b"tail"])
@pytest.mark.parametrize("gz", [False, True])
def test_line_count_equals_a_naive_split(tmp_path: Path, data: bytes, gz: bool) -> None:
    p = tmp_path / ("f.jsonl.gz" if gz else "f.jsonl")
    p.write_bytes(gzip.compress(data) if gz else data)
    got = files.count_lines(str(p), 1 << 30, line_limit=5)
    want = naive_lines(data)
    if gz:  # the gzip count is feeds + 1 for any content: exact or one over, never under
        assert got in (want, want + 1) and got >= want
    elif len(data) <= 5:  # short enough to hold no more than the limit: its size, an upper bound
        assert got == len(data) >= want
    elif want <= 5:
        assert got == want
    else:
        assert got > 5


def test_a_file_at_the_limit_is_read_and_one_line_more_is_refused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("WORKBENCH_MAX_INPUT_LINES", "100")
    at = tmp_path / "at.jsonl"
    at.write_bytes(b"".join(ROW % (i % 20) for i in range(100)))
    o = run_cli(["analyze", str(at), "--out", str(tmp_path / "o1"), "--no-gate", *FAST])
    assert o.code == 0, o.err
    over = tmp_path / "over.jsonl"
    over.write_bytes(at.read_bytes() + b"\n")  # one blank line more: 101 lines
    o = run_cli(["analyze", str(over), "--out", str(tmp_path / "o2"), "--no-gate", *FAST])
    assert o.code == 2 and o.traceback is None, o.err
    assert o.err.count("\n") == 1 and f"{over}: more than 100 lines, over the limit of 100 lines" in o.err
    assert "WORKBENCH_MAX_INPUT_LINES" in o.err and not (tmp_path / "o2" / "results.json").exists()


@pytest.mark.parametrize(("name", "preset"), [("many.csv", None), ("many.tsv.gz", None), ("many.jsonl.gz", None),
                                              ("many.jsonl.gz", "arena-hard"), ("many.jsonl", "mt-bench-pair"),
                                              ("many.jsonl", "mt-bench")])
def test_every_line_reader_counts_lines_first(tmp_path: Path, monkeypatch, name: str, preset: str | None) -> None:
    monkeypatch.setenv("WORKBENCH_MAX_INPUT_LINES", "1000")
    head = b"scenario,variant,trial,judge,overall\n" if ".csv" in name else (
        b"scenario\tvariant\ttrial\tjudge\toverall\n" if ".tsv" in name else b"")
    body = head + b"\n" * 5000
    p = tmp_path / name
    p.write_bytes(gzip.compress(body) if name.endswith(".gz") else body)
    o = run_cli(["analyze", str(p), "--out", str(tmp_path / "o"), *(["--preset", preset] if preset else []), *FAST])
    assert o.code == 2 and o.traceback is None, o.err
    assert "more than 1000 lines" in o.err and name in o.err, o.err


def test_a_bad_line_limit_setting_is_one_line(tmp_path: Path, monkeypatch) -> None:
    p = tmp_path / "r.jsonl"
    p.write_bytes(ROW % 1)
    monkeypatch.setenv("WORKBENCH_MAX_INPUT_LINES", "many")
    o = run_cli(["analyze", str(p), "--out", str(tmp_path / "o"), *FAST])
    assert o.code == 2 and o.traceback is None and "WORKBENCH_MAX_INPUT_LINES='many'" in o.err, o.err


@pytest.mark.slow
def test_a_billion_blank_lines_are_refused_under_a_3_gb_address_space(tmp_path: Path) -> None:
    """The issue's case: 1 GiB of line feeds in 1 MB (16 gzip members), under ulimit -v 3000000."""
    import resource

    p = tmp_path / "billion.jsonl.gz"
    one = gzip.compress(b"\n" * (64 << 20), compresslevel=9)
    p.write_bytes(one * 16)
    assert p.stat().st_size < 2 << 20

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3_000_000 * 1024, 3_000_000 * 1024))

    r = subprocess.run([sys.executable, "-c", "import sys; from workbench.cli.main import main; sys.exit(main())",
                        "analyze", str(p), "--out", str(tmp_path / "o"), *FAST], capture_output=True, text=True,
                       timeout=300, preexec_fn=limit,
                       env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert r.returncode == 2, r.stderr[-800:]
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr[-800:]
    assert "more than 50000000 lines after decompression" in r.stderr


@pytest.mark.parametrize("exc", [MemoryError("Unable to allocate 128. MiB for an array"),
                                 ImportError("x.so: failed to map segment from shared object"),
                                 OSError(12, "Cannot allocate memory")])
def test_running_out_of_memory_is_one_line(tmp_path: Path, monkeypatch, exc: BaseException) -> None:
    from workbench.document import pipeline

    def run(*_a, **_k):
        raise exc

    monkeypatch.setattr(pipeline, "run", run)
    p = tmp_path / "r.jsonl"
    p.write_bytes(ROW % 1)
    o = run_cli(["analyze", str(p), "--out", str(tmp_path / "o"), *FAST])
    assert o.code == 2 and o.traceback is None, o.traceback
    assert o.err.count("\n") == 1 and o.err.startswith("workbench: error: out of memory ("), o.err
    assert "split the input or run with more memory" in o.err


def test_other_import_errors_are_not_called_memory(tmp_path: Path, monkeypatch) -> None:
    from workbench.document import pipeline

    def run(*_a, **_k):
        raise ImportError("No module named 'nothing_here'")

    monkeypatch.setattr(pipeline, "run", run)
    p = tmp_path / "r.jsonl"
    p.write_bytes(ROW % 1)
    o = run_cli(["analyze", str(p), "--out", str(tmp_path / "o"), *FAST])
    assert o.traceback is not None and "nothing_here" in o.traceback
