"""The scale benchmark's instruments (benchmarks/generate.py, benchmarks/bench_scale.py).

No timing is asserted here (speed goals live in benchmarks/): these tests check that the
generator plants exactly the hazards the issue specifies, counted independently line by line
with ``json``, that the workbench's ledger of a generated file is the planted one and adds up
to the file's physical line count, and that the benchmark's peak-RSS measurement sees memory
allocated by a child and by a grandchild.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from collections import Counter
from pathlib import Path

import pytest

import workbench
from workbench.ingest.ledger import count_ledger

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str):
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


gen = _load("generate")

ROWS = 12_000
KEY = ("scenario", "variant", "trial", "judge")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("bench")
    return {
        "damaged": gen.generate(ROWS, 7, path=d / "rows.jsonl"),
        "again": gen.generate(ROWS, 7, path=d / "again.jsonl"),
        "other_seed": gen.generate(ROWS, 8, path=d / "other.jsonl"),
        "clean": gen.generate(ROWS, 7, clean=True, path=d / "clean.jsonl"),
    }


def _census(path: Path) -> dict[str, object]:
    """Count every planted hazard by reading the file naively (json per line)."""
    c: Counter[str] = Counter()
    seen: dict[tuple, dict] = {}
    repeats: Counter[str] = Counter()
    designs: dict[str, set] = {k: set() for k in KEY}
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""
    lines = lines[:-1]
    for raw in lines:
        try:
            obj = json.loads(raw)
        except ValueError:
            c["truncated"] += 1
            continue
        if obj == {}:
            c["empty_object"] += 1
            continue
        for k in KEY:
            designs[k].add(obj[k])
        if "overall" not in obj:
            c["no_overall"] += 1
        elif isinstance(obj["overall"], str):
            c["string_score"] += 1
        elif not 1 <= obj["overall"] <= 10:
            c["out_of_range"] += 1
        key = tuple(obj[k] for k in KEY)
        if key in seen:
            repeats["identical" if seen[key] == obj else "conflicting"] += 1
        else:
            seen[key] = obj
    return {"lines": len(lines), "counts": c, "repeats": repeats, "designs": designs,
            "bytes": sum(len(x) + 1 for x in lines)}


def test_planted_hazards_are_the_issue_rates(files: dict[str, Path]) -> None:
    got = _census(files["damaged"])
    assert got["lines"] == ROWS
    c = got["counts"]
    # the issue's rates, as exact counts of the physical lines
    assert c["truncated"] == 12          # 0.1%
    assert c["empty_object"] == 360      # 3%
    assert c["no_overall"] == 2160       # 18%
    assert c["string_score"] == 24       # 0.2%
    assert c["out_of_range"] == 12       # 0.1%
    assert got["repeats"] == {"identical": 3, "conflicting": 3}  # 0.05% appended re-runs
    # distinct keys: N/60 scenarios x 10 variants x 3 trials x 2 judges
    d = got["designs"]
    assert len(d["variant"]) == 10 and d["trial"] == {1, 2, 3} and len(d["judge"]) == 2
    assert len(d["scenario"]) == math.ceil((ROWS - 6) / 60)
    assert 270 <= got["bytes"] / ROWS <= 330  # ~300 bytes a row
    # the rows without overall are not missing at random: one judge drops it more often
    per_judge: Counter[str] = Counter()
    for raw in files["damaged"].read_bytes().splitlines():
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if obj and "overall" not in obj:
            per_judge[obj["judge"]] += 1
    a, b = sorted(per_judge.values())
    assert 1.3 < b / a < 1.8


def test_generator_is_seeded(files: dict[str, Path]) -> None:
    assert files["damaged"].read_bytes() == files["again"].read_bytes()
    assert files["damaged"].read_bytes() != files["other_seed"].read_bytes()


def test_clean_copy_has_the_same_rows_written_whole(files: dict[str, Path]) -> None:
    got = _census(files["clean"])
    assert got["lines"] == ROWS and got["counts"]["truncated"] == 0
    damaged = files["damaged"].read_bytes().splitlines()
    clean = files["clean"].read_bytes().splitlines()
    differ = [(x, y) for x, y in zip(damaged, clean, strict=True) if x != y]
    assert len(differ) == 12 and all(y.startswith(x) for x, y in differ)


@pytest.mark.parametrize("name", ["damaged", "clean"])
def test_workbench_ledger_is_the_planted_one(files: dict[str, Path], name: str) -> None:
    path = files[name]
    rows, _ = workbench.read_rows([str(path)], workbench.load_config())
    led = count_ledger(rows, planned=False)
    physical = path.read_bytes().count(b"\n")
    buckets = {k: v for k, v in led.items() if k not in ("lines", "missing_planned")}
    assert sum(buckets.values()) == led["lines"] == physical == ROWS
    expected = gen.read_meta(path)["expected_ledger"]
    assert {k: led[k] for k in expected} == expected
    # buckets the generator does not plant (this workbench may have more than it knows) are empty
    assert all(v in (0, None) for k, v in led.items() if k not in expected), led
    assert led["malformed"] == (372 if name == "damaged" else 360)
    assert led["conflict"] == 6 and led["duplicate"] == 3


def test_peak_rss_sees_child_and_grandchild_memory() -> None:
    bench = _load("bench_scale")
    mb = 300
    alloc = f"b = b'x' * ({mb} * 2**20); import time; time.sleep(1.0)"
    own = bench.measure([sys.executable, "-c", alloc], timeout=60)
    assert own["rc"] == 0
    assert mb * 2**20 <= own["rss_max"] <= (mb + 150) * 2**20
    assert own["rss_tree"] >= mb * 2**20 * 0.9  # sampled at 10 Hz while it sleeps
    nested = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {alloc!r}], check=True)"
    grand = bench.measure([sys.executable, "-c", nested], timeout=60)
    assert grand["rc"] == 0
    assert mb * 2**20 <= grand["rss_max"] <= (mb + 150) * 2**20
    failing = bench.measure([sys.executable, "-c", "raise SystemExit(3)"], timeout=60)
    assert failing["rc"] == 3


def test_peak_anon_counts_the_heap_not_a_mapped_file(tmp_path: Path) -> None:
    # rss_max counts the pages of a file the process maps and reads; anon_max only its heap
    bench = _load("bench_scale")
    mb = 300
    data = tmp_path / "mapped.bin"
    with open(data, "wb") as fh:
        fh.write(b"y" * (mb * 2**20))
    mapped = (f"import mmap, time; f = open({str(data)!r}, 'rb'); m = mmap.mmap(f.fileno(), 0, "
              f"access=mmap.ACCESS_READ); n = sum(m[i] for i in range(0, len(m), 4096)); time.sleep(1.0)")
    rec = bench.measure([sys.executable, "-c", mapped], timeout=120)
    assert rec["rc"] == 0
    assert rec["rss_max"] >= mb * 2**20 * 0.9
    assert rec["anon_max"] < 100 * 2**20
    heap = bench.measure([sys.executable, "-c", f"b = b'x' * ({mb} * 2**20); import time; time.sleep(1.0)"],
                         timeout=60)
    assert heap["anon_max"] >= mb * 2**20 * 0.9


def test_floor_children_do_the_work_they_claim(files: dict[str, Path], tmp_path: Path) -> None:
    # the floor's parse sees every line that is a JSON object (json per line decides), and its
    # groups are the file's judge x variant pairs; the write writes the table it was given
    bench = _load("bench_scale")
    path = files["damaged"]
    objects = Counter()
    for raw in path.read_bytes().splitlines():
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if isinstance(obj, dict):
            objects[(obj.get("judge"), obj.get("variant"))] += 1
    parse = bench.child_floor_parse(str(path))
    assert parse["rows_seen"] == sum(objects.values()) == ROWS - _census(path)["counts"]["truncated"]
    assert parse["groups"] == len(objects)
    assert parse["paths"] == 12  # 4 keys, 6 rubric fields, the flags and the verdict
    rows, _ = workbench.read_rows([str(path)], workbench.load_config())
    table = tmp_path / "rows.parquet"
    rows.write_parquet(table)
    wrote = bench.child_floor_write(str(table), str(tmp_path / "again.parquet"))
    assert (wrote["rows"], wrote["columns"]) == rows.shape
    assert not (tmp_path / "again.parquet").exists()
    # the floor is the sum of its three parts, and needs all three
    recs = [{"kind": "floor", "rc": 0, "cmd": ["py", "--child", part], "wall": w, "cpu": 9.0,
             "result": {"seconds": s, "cpu_seconds": c}}
            for part, w, s, c in (("floor-imports", 1.0, 0.8, 0.0), ("floor-parse", 5.0, 2.0, 3.0),
                                  ("floor-write", 4.0, 0.5, 1.0))]
    f = bench.floor_of({"records": recs})
    assert f["imports"] == 1.0 and f["parse"] == 2.0 and f["write"] == 0.5
    assert f["serial"] == 3.5 and f["cpu"] == 9.0 + 3.0 + 1.0
    assert (f["imports_cpu"], f["parse_cpu"], f["write_cpu"]) == (9.0, 3.0, 1.0)  # whole child, then timed inside
    assert bench.floor_of({"records": recs[:2]}) is None
    # divided by the recording machine's cores, not by those of the machine showing the record
    assert bench.floor_of({"records": recs, "cores": 2})["cpu_2"] == 13.0 / 2
    assert bench.cores_of("AMD EPYC, 2 cores, 24 GB RAM, Linux") == 2 and bench.cores_of("?") is None


def test_print_floor_says_where_the_floor_is(capsys: pytest.CaptureFixture[str]) -> None:
    bench = _load("bench_scale")
    def rec(kind, part, wall, cpu, secs=None, secs_cpu=None):
        res = {} if secs is None else {"seconds": secs, "cpu_seconds": secs_cpu}
        return {"kind": kind, "rc": 0, "cmd": ["py", "--child", part], "wall": wall, "cpu": cpu, "result": res}
    records = [rec("duckdb", "duckdb", 2.0, 3.0), rec("duckdb", "duckdb", 1.6, 3.2),
               rec("floor", "floor-imports", 1.0, 1.2, 0.8, 0.0), rec("floor", "floor-parse", 4.0, 6.0, 3.0, 5.0),
               rec("floor", "floor-write", 3.0, 5.0, 2.0, 3.8)]
    bench.print_floor({"records": records, "cores": 2})
    out = capsys.readouterr().out
    # serial 1.0 + 3.0 + 2.0; CPU 1.2 + 5.0 + 3.8 = 10.0 over 2 cores = 5.00 s against 2.5 x 1.6 = 4.00 s
    assert "= 6.00 s serial" in out and "10.0 s CPU, 5.00 s if spread perfectly over 2 cores" in out
    assert "target 2.5x DuckDB = 4.00 s: the floor is ABOVE it" in out
    # the anchor as the parse: (1.2 + 3.0 + 3.8) / 2 = 4.00 s, not below 4.00 s
    assert "= 4.00 s on 2 cores" in out and "ABOVE the target" in out
    bench.print_floor({"records": records, "cores": 4})
    out = capsys.readouterr().out
    assert "2.50 s if spread perfectly over 4 cores" in out and "the floor is BELOW it" in out
