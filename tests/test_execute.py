"""``--jobs N``: files read by a pool of processes give the same rows and results.json as one process.

The four files of :mod:`multifile_support` hold repeats across files (an identical re-run in
two other files, a conflicting one) and a damaged and a blank line; their ledger is counted
by hand there. The merge is in file order, so the files finishing in another order changes
nothing; the run manifest (run.json), not results.json, says how ingest ran.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from fuzz_support import run_cli
from multifile_support import EXPECTED, write_inputs, write_tricky
from polars.testing import assert_frame_equal

from workbench import count_ledger, load_config
from workbench.ingest import execute
from workbench.ingest import reader as ingest


def test_jobs_gives_the_rows_of_one_process(tmp_path: Path) -> None:
    cfg = load_config()
    files = write_inputs(tmp_path / "in")
    one, src1 = ingest.read_rows(files, cfg)
    led = count_ledger(one, planned=False)
    assert {k: led[k] for k in EXPECTED} == EXPECTED  # the hand count
    # which lines: the first of identical rows is kept, both sides of the conflict held out
    a = one.filter(pl.col("file") == files[0])
    assert a.filter(pl.col("line") == 1)["bucket"][0] == "valid"
    assert a.filter(pl.col("line") == 2)["bucket"][0] == "conflict"
    assert one.filter((pl.col("file") == files[1]) & (pl.col("line") == 11))["bucket"][0] == "duplicate"
    assert one.filter((pl.col("file") == files[3]) & (pl.col("line") == 6))["bucket"][0] == "duplicate"
    # the big first file finishes last: the order of the merge is still the files' order
    progress: list[int] = []
    two, src2 = execute.read_rows(files, cfg, execute.Execution(jobs=2), progress=progress.append)
    assert_frame_equal(one, two)
    assert src1 == src2
    assert sum(progress) == EXPECTED["lines"]  # the progress contract: the ledger's lines


def test_jobs_exact_repeats_across_files(tmp_path: Path) -> None:
    cfg = load_config()
    files = write_tricky(tmp_path / "in")
    one, _ = ingest.read_rows(files, cfg)
    by_key = {(r["file"].rsplit("/", 1)[-1], r["scenario"]): r["bucket"] for r in one.to_dicts()}
    assert by_key[("one.jsonl", "k1")] == "valid" and by_key[("two.jsonl", "k1")] == "duplicate"
    assert by_key[("one.jsonl", "k2")] == by_key[("two.jsonl", "k2")] == by_key[("three.jsonl", "k2")] == "conflict"
    assert by_key[("one.jsonl", "k3")] == by_key[("two.jsonl", "k3")] == "conflict"
    assert by_key[("two.jsonl", "k4")] == "duplicate" and by_key[("two.jsonl", "k5")] == "duplicate"
    two, _ = execute.read_rows(files, cfg, execute.Execution(jobs=3))
    assert_frame_equal(one, two)


def _keys(obj: object) -> set[str]:
    if isinstance(obj, dict):
        return set(obj) | {k for v in obj.values() for k in _keys(v)}
    if isinstance(obj, list):
        return {k for v in obj for k in _keys(v)}
    return set()


def _analyze(files: list[str], out: Path, *extra: str) -> tuple[int, bytes]:
    res = run_cli(["analyze", *files, "--out", str(out), "--no-gate", "-q", "--resamples", "200", *extra])
    assert res.code == 0 and res.traceback is None, res.err + (res.traceback or "")
    return res.code, (out / "results.json").read_bytes()


def test_cli_jobs_results_byte_identical_and_recorded_in_run_json_only(tmp_path: Path) -> None:
    files = write_inputs(tmp_path / "in")
    _, one = _analyze(files, tmp_path / "o1")
    _, two = _analyze(files, tmp_path / "o2", "--jobs", "2")
    assert one == two
    assert not _keys(json.loads(two)) & {"jobs", "engine", "scheduler", "execution"}
    run = json.loads((tmp_path / "o2" / "run.json").read_text(encoding="utf-8"))
    assert run["execution"] == {"engine": "local", "jobs": 2, "pool": "processes", "files": 4}
    run1 = json.loads((tmp_path / "o1" / "run.json").read_text(encoding="utf-8"))
    assert run1["execution"] == {"engine": "local", "jobs": 1, "pool": "this process", "files": 4}
    assert_frame_equal(pl.read_parquet(tmp_path / "o1" / "rows.parquet"),
                       pl.read_parquet(tmp_path / "o2" / "rows.parquet"))


def test_jobs_bad_inputs_same_one_line_error(tmp_path: Path) -> None:
    files = write_inputs(tmp_path / "in")
    empty = tmp_path / "in" / "empty.jsonl"
    empty.write_bytes(b"")
    junk = tmp_path / "in" / "junk.jsonl"
    junk.write_text("{not json\n[1,\n", encoding="utf-8")
    argv = [files[0], str(empty), files[1], str(junk)]
    outs = [run_cli(["analyze", *argv, "--out", str(tmp_path / f"o{j}"), "-q", *(["--jobs", str(j)] if j else [])])
            for j in (0, 2, 4)]
    for res in outs:
        assert res.code == 2 and res.traceback is None
        assert len(res.err.strip().splitlines()) == 1, res.err
    assert outs[0].err == outs[1].err == outs[2].err
    assert "2 of 4 inputs" in outs[0].err and "empty.jsonl: file is empty" in outs[0].err
    assert "junk.jsonl: no valid row at all (malformed 2)" in outs[0].err


@pytest.mark.parametrize("argv, text", [
    (["--jobs", "0"], "--jobs 0: expected a whole number"),
    (["--scheduler", "tcp://127.0.0.1:1"], "--scheduler is a Dask scheduler address: it needs --engine dask"),
    (["--engine", "dask", "--jobs", "2"], "--jobs is the local engine's"),
    (["--engine", "spark"], "invalid choice: 'spark'"),
])
def test_execution_usage_errors(tmp_path: Path, argv: list[str], text: str) -> None:
    files = write_inputs(tmp_path / "in")
    res = run_cli(["analyze", *files, "--out", str(tmp_path / "o"), "-q", *argv])
    assert res.code == 2 and res.traceback is None
    said = [ln for ln in res.err.splitlines() if ln.startswith("workbench")]
    assert len(said) == 1 and text in said[0], res.err  # one error line (argparse adds its usage)
    assert not (tmp_path / "o" / "results.json").exists()


def test_url_input_needs_the_dask_engine(tmp_path: Path) -> None:
    res = run_cli(["analyze", "memory://bucket/rows.jsonl", "--out", str(tmp_path / "o"), "-q"])
    assert res.code == 2 and res.traceback is None
    assert "memory://bucket/rows.jsonl: an fsspec URL is read by the Dask engine only" in res.err


def test_progress_with_jobs_on_a_terminal_counts_the_ledger_lines(tmp_path: Path) -> None:
    import re

    from test_progress import _run_on_pty, screen

    files = write_inputs(tmp_path / "in")
    code, raw = _run_on_pty(["analyze", *files, "--out", str(tmp_path / "o"), "--resamples", "200",
                             "--no-gate", "--jobs", "2"], tmp_path)
    assert code == 0, raw.decode("utf-8", "replace")
    shown = [ln for ln in screen(raw) if ln]
    assert re.fullmatch(r"ingest: 35 lines read in \d+\.\d s", shown[0]), shown
    assert all(ln.startswith("workbench: ") for ln in shown[1:]), shown
