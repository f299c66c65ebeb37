"""``--engine dask``: per-file read and classify as Dask tasks, repeats across files by a shuffle.

The cluster is a 2-worker LocalCluster of *threads* (``processes=False``): worker processes
take tens of seconds to start and import polars on this shared 2-core machine, and the code
under test is the same (tasks, the p2p shuffle on the key, gathering to the client). The
LocalCluster the CLI starts itself (processes, one per CPU) is checked for its sizing with a
stand-in. Every comparison is against the local engine, whose ledger of these files is
counted by hand in :mod:`multifile_support`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from fuzz_support import run_cli
from multifile_support import EXPECTED, write_inputs, write_tricky
from polars.testing import assert_frame_equal

from workbench import count_ledger, load_config
from workbench.ingest import execute
from workbench.ingest import reader as ingest

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def cluster() -> Iterator[object]:
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as c:
        yield c


def _analyze(files: list[str], out: Path, *extra: str) -> bytes:
    res = run_cli(["analyze", *files, "--out", str(out), "--no-gate", "-q", "--resamples", "200", *extra])
    assert res.code == 0 and res.traceback is None, res.err + (res.traceback or "")
    return (out / "results.json").read_bytes()


def test_dask_results_byte_identical_to_local(tmp_path: Path, cluster: object) -> None:
    files = write_inputs(tmp_path / "in")
    local = _analyze(files, tmp_path / "local")
    dask = _analyze(files, tmp_path / "dask", "--engine", "dask", "--scheduler", cluster.scheduler_address)
    assert dask == local
    led = json.loads(dask)["ledger"]
    assert {k: led[k] for k in EXPECTED} == EXPECTED  # the hand count
    assert_frame_equal(pl.read_parquet(tmp_path / "local" / "rows.parquet"),
                       pl.read_parquet(tmp_path / "dask" / "rows.parquet"))
    run = json.loads((tmp_path / "dask" / "run.json").read_text(encoding="utf-8"))
    assert run["execution"] == {"engine": "dask", "scheduler": cluster.scheduler_address, "files": 4}


def test_dask_exact_repeats_and_order(tmp_path: Path, cluster: object) -> None:
    cfg = load_config()
    for files in (write_tricky(tmp_path / "tricky"), write_inputs(tmp_path / "plain")[::-1]):
        local, src_l = ingest.read_rows(files, cfg)
        dask, src_d = execute.read_rows(files, cfg, execute.Execution(engine="dask",
                                                                       scheduler=cluster.scheduler_address))
        assert_frame_equal(local, dask)
        assert src_l == src_d


def test_dask_marks_different_answers_as_the_local_engine(tmp_path: Path, cluster: object) -> None:
    # a model judged twice on two answer sets (answer: answer_id), the two runs in two files,
    # 60 keys whose judgments agree: 120 different_answer conflicts on either engine
    recs = [{"scenario": f"s{s}", "variant": "m", "trial": "1", "judge": "j", "overall": 5 + s % 3,
             "answer_id": f"{run}-{s}"} for run in ("a1", "a2") for s in range(60)]
    recs += [{"scenario": f"s{s}", "variant": "b", "trial": "1", "judge": "j", "overall": 6, "answer_id": "b"}
             for s in range(10)]
    files = []
    for name, part in (("a", recs[:60] + recs[120:125]), ("b", recs[60:120] + recs[125:])):
        p = tmp_path / f"{name}.jsonl"
        p.write_text("".join(json.dumps(r) + "\n" for r in part), "utf-8")
        files.append(str(p))
    cfg = load_config(overrides={"scores": {"overall": "overall"}, "answer": "answer_id"})
    local, _ = ingest.read_rows(files, cfg)
    dask, _ = execute.read_rows(files, cfg, execute.Execution(engine="dask", scheduler=cluster.scheduler_address))
    assert_frame_equal(local, dask)
    assert dask["bucket"].to_list() == ["conflict"] * 60 + ["valid"] * 5 + ["conflict"] * 60 + ["valid"] * 5
    assert dask.filter(pl.col("bucket") == "conflict")["reason"].str.starts_with(
        ingest.DIFFERENT_ANSWER_REASON).all()


def test_dask_shuffle_marks_equal_the_local_marks(tmp_path: Path) -> None:
    # the partition function alone on one partition holding every key: the same buckets
    cfg = load_config()
    files = write_tricky(tmp_path / "in")
    parts = [ingest.read_classified(p, cfg, i) for i, p in enumerate(files)]
    import pandas as pd

    keys = pd.concat([execute.repeat_keys(p, cfg) for p in parts], ignore_index=True)
    marks = execute.mark_partition(keys)
    shift = 1 << execute.ORDER_SHIFT
    got = {(int(o) // shift, int(o) % shift + 1): r for o, r in zip(marks["__order"], marks["__repeat"], strict=True)}
    rows, _ = ingest.read_rows(files, cfg)
    want = {(files.index(f), ln): b for f, ln, b in rows.select("file", "line", "bucket").iter_rows()
            if b in ("duplicate", "conflict")}
    assert got == want and len(want) == 8  # k1, k4, k5 duplicate; k2 x3, k3 x2 conflict


def test_scheduler_from_the_environment(tmp_path: Path, cluster: object, monkeypatch: pytest.MonkeyPatch) -> None:
    files = write_inputs(tmp_path / "in")
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster.scheduler_address)
    counter = _ReadCounter()
    cluster.scheduler.add_plugin(counter, name="wb-read-counter")
    try:
        _analyze(files, tmp_path / "o", "--engine", "dask")
    finally:
        cluster.scheduler.remove_plugin(name="wb-read-counter")
    assert counter.n == 4  # one read task per file ran on that cluster
    run = json.loads((tmp_path / "o" / "run.json").read_text(encoding="utf-8"))
    assert run["execution"]["scheduler"] == cluster.scheduler_address


class _ReadCounter(distributed.diagnostics.plugin.SchedulerPlugin):
    """Counts the per-file read tasks that finished on the scheduler it is added to."""

    def __init__(self) -> None:
        self.n = 0

    def transition(self, key: object, start: str, finish: str, *args: object, **kw: object) -> None:
        if finish == "memory" and str(key).startswith("_dask_read-"):
            self.n += 1


def test_without_a_scheduler_a_local_cluster_sized_to_the_machine(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    files = write_inputs(tmp_path / "in")
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    seen: dict[str, object] = {}
    real = distributed.LocalCluster

    def stand_in(**kw: object) -> object:  # the asked-for size, on threads to start fast
        seen.update(kw)
        return real(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0")

    monkeypatch.setattr(distributed, "LocalCluster", stand_in)
    rows, _ = execute.read_rows(files, load_config(), execute.Execution(engine="dask"))
    assert seen["n_workers"] == execute.usable_cpus() and seen["processes"] is True
    assert seen["threads_per_worker"] == 1
    assert count_ledger(rows, planned=False)["duplicate"] == EXPECTED["duplicate"]


def test_memory_urls_read_through_fsspec(tmp_path: Path, cluster: object) -> None:
    import fsspec

    files = write_inputs(tmp_path / "in")
    fs = fsspec.filesystem("memory")
    urls = []
    for p in files:
        url = f"memory://wb-test/{Path(p).name}"
        with fs.open(url, "wb") as fh:
            fh.write(Path(p).read_bytes())
        urls.append(url)
    try:
        cfg = load_config()
        local, src_l = ingest.read_rows(files, cfg)
        ex = execute.Execution(engine="dask", scheduler=cluster.scheduler_address)
        got, src_u = execute.read_rows(["memory://wb-test/*.jsonl"], cfg, ex)
        assert [s.path for s in src_u] == urls
        assert [(s.sha256, s.lines) for s in src_u] == [(s.sha256, s.lines) for s in src_l]
        renamed = local.with_columns(pl.col("file").replace(dict(zip(files, urls, strict=True))))
        assert_frame_equal(renamed, got)
        # a missing object: one line naming it, exit 2
        res = run_cli(["analyze", "memory://wb-test/nope.jsonl", "--out", str(tmp_path / "o"), "-q",
                       "--engine", "dask", "--scheduler", cluster.scheduler_address])
        assert res.code == 2 and res.traceback is None
        assert res.err.strip().splitlines() == [
            "workbench: error: memory://wb-test/nope.jsonl: no such object (or it is a directory)"]
        # an unusable object among good ones: named by its URL, as a local file would be
        with fs.open("memory://wb-test/empty.jsonl", "wb") as fh:
            fh.write(b"")
        res = run_cli(["analyze", *urls, "memory://wb-test/empty.jsonl", "--out", str(tmp_path / "o"), "-q",
                       "--engine", "dask", "--scheduler", cluster.scheduler_address])
        assert res.code == 2 and res.traceback is None, res.traceback
        assert res.err.strip().splitlines() == ["workbench: error: memory://wb-test/empty.jsonl: file is empty"]
    finally:
        fs.rm("memory://wb-test", recursive=True)


def test_unreachable_scheduler_is_one_line(tmp_path: Path) -> None:
    import socket

    import dask

    files = write_inputs(tmp_path / "in")
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):
        res = run_cli(["analyze", *files, "--out", str(tmp_path / "o"), "-q", "--engine", "dask",
                       "--scheduler", f"tcp://127.0.0.1:{port}"])
    assert res.code == 2 and res.traceback is None, res.traceback
    lines = res.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"workbench: error: cannot reach the Dask scheduler at tcp://127.0.0.1:{port} (--scheduler): "), lines
    assert not (tmp_path / "o" / "results.json").exists()


def test_dask_not_installed_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = write_inputs(tmp_path / "in")
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    res = run_cli(["analyze", *files, "--out", str(tmp_path / "o"), "-q", "--engine", "dask"])
    assert res.code == 2 and res.traceback is None
    lines = res.err.strip().splitlines()
    assert len(lines) == 1 and "--engine dask needs dask and distributed" in lines[0]
    assert "pip install 'workbench[dask]'" in lines[0]
