"""Ingest benchmark: ``workbench.read_rows`` + ledger on a 1M-row judge-row file.

Generates (seeded, cached in ``benchmarks/.cache/``, which git ignores) a JSONL file in the
default format with ~0.1% truncated lines and a few % partial rows, then times, best of
``--repeat`` runs:

* ``workbench.read_rows`` + ``ledger.count_ledger`` (the real thing: full ledger; JSONL is
  streamed through the DuckDB engine, ``workbench/ingest/engine.py``, on DuckDB's threads);
* a naive per-line ``json.loads`` loop that only counts parse failures (no buckets);
* ``polars.scan_ndjson`` on the same file (fails on the first malformed line; reported), and
  on a clean copy of the same rows (no truncated lines), with ``workbench`` on that copy too.

Usage::

    make bench                                   # 1M rows, best of 3
    .venv/bin/python benchmarks/bench_ingest.py --rows 200000 --repeat 1
    .venv/bin/python benchmarks/bench_ingest.py --profile   # cProfile of one ingest run
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import platform
import pstats
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

import workbench
from workbench.ingest.ledger import count_ledger

CACHE = Path(__file__).resolve().parent / ".cache"
SUBS = ("correctness", "completeness", "depth", "citations", "honesty")
FLAGS = ("invented_citation", "wrong_article", "made_up_number", "fake_standard")
VERDICTS = (
    "Solid gap analysis; cites the right controls.",
    "Misses two Annex A controls and invents a clause number.",
    "Adequate but shallow; no evidence for the risk ratings.",
    "Refused to classify; asks for more context.",
)


def generate(
    path: Path, rows: int, seed: int, truncated: float = 0.001, partial: float = 0.03
) -> dict[str, int]:
    """Write ``rows`` judge rows to ``path``; return how many lines were damaged on purpose."""
    rng = random.Random(seed)
    scenarios = [f"scenario_{i:04d}" for i in range(max(1, rows // 120))]
    variants = ["baseline", "rag", "rag_rerank", "cot", "cot_rag"]
    judges = ["gpt-4o-2024-08-06", "claude-3-5-sonnet"]
    counts = {"truncated": 0, "partial": 0}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        buf: list[str] = []
        for i in range(rows):
            row: dict[str, Any] = {
                "scenario": scenarios[i % len(scenarios)],
                "variant": variants[(i // len(scenarios)) % len(variants)],
                "trial": i // (len(scenarios) * len(variants) * len(judges)) + 1,
                "judge": judges[(i // (len(scenarios) * len(variants))) % len(judges)],
            }
            is_partial = rng.random() < partial
            for s in SUBS:
                row[s] = rng.randint(1, 10)
            if not is_partial:
                row["overall"] = rng.randint(1, 10)
            else:
                counts["partial"] += 1
            row["fabrication_flags"] = [f for f in FLAGS if rng.random() < 0.08]
            row["verdict"] = VERDICTS[rng.randrange(len(VERDICTS))]
            row["latency_ms"] = rng.randint(300, 9000)
            text = json.dumps(row, separators=(", ", ": "))
            if rng.random() < truncated:
                text = text[: rng.randrange(5, len(text) - 2)]
                counts["truncated"] += 1
            buf.append(text)
            if len(buf) >= 10000:
                fh.write("\n".join(buf) + "\n")
                buf.clear()
        if buf:
            fh.write("\n".join(buf) + "\n")
    os.replace(tmp, path)
    path.with_suffix(".meta.json").write_text(json.dumps(counts) + "\n", encoding="utf-8")
    return counts


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Best wall time of ``repeat`` calls, and the last result."""
    best = float("inf")
    out = None
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def run_workbench(path: str, cfg: workbench.Config) -> dict[str, int | None]:
    rows, _ = workbench.read_rows([path], cfg)
    return count_ledger(rows, planned=False)


def run_naive(path: str) -> dict[str, int]:
    ok = bad = 0
    with open(path, "rb") as fh:
        for line in fh:
            try:
                obj = json.loads(line)
            except ValueError:
                bad += 1
                continue
            if isinstance(obj, dict):
                ok += 1
            else:
                bad += 1
    return {"objects": ok, "not_json": bad}


def run_polars(path: str, ignore_errors: bool) -> str:
    cols = ["scenario", "variant", "trial", "judge", "overall", *SUBS]
    try:
        df = pl.scan_ndjson(path, ignore_errors=ignore_errors).select(cols).collect()
    except Exception as exc:  # noqa: BLE001 - we report whatever polars raises
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return f"FAILED ({type(exc).__name__}: {first[:90]})"
    return f"ok, {df.height} rows (no ledger: malformed lines are not counted)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=20260819)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-naive", action="store_true")
    ap.add_argument(
        "--profile", action="store_true", help="cProfile one ingest run and print the top 25"
    )
    args = ap.parse_args(argv)

    path = CACHE / f"judge_rows_{args.rows}_{args.seed}.jsonl"
    CACHE.mkdir(parents=True, exist_ok=True)
    (CACHE / ".gitignore").write_text("*\n", encoding="utf-8")
    if not path.exists():
        t0 = time.perf_counter()
        counts = generate(path, args.rows, args.seed)
        print(f"generated {path} in {time.perf_counter() - t0:.1f} s: {counts}")
    meta = json.loads(path.with_suffix(".meta.json").read_text(encoding="utf-8"))
    size = path.stat().st_size
    mb = size / 1e6
    n = args.rows
    print(
        f"file: {path.name}  {n:,} lines  {mb:.1f} MB  (truncated {meta['truncated']}, "
        f"partial {meta['partial']})"
    )
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, "
        f"polars {pl.__version__}"
    )

    cfg = workbench.load_config()
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        run_workbench(str(path), cfg)
        prof.disable()
        pstats.Stats(prof, stream=sys.stdout).sort_stats("cumulative").print_stats(25)
        return 0

    def report(label: str, secs: float, extra: str = "") -> None:
        print(
            f"{label:<34} {secs:7.2f} s  {n / secs / 1e6:6.2f} M rows/s  {mb / secs:7.1f} MB/s"
            f"  {secs / n * 1e6:6.2f} us/row  {extra}"
        )

    secs, led = best_of(lambda: run_workbench(str(path), cfg), args.repeat)
    assert led["lines"] == n, led
    assert led["malformed"] == meta["truncated"], (led, meta)
    report(
        "workbench read_rows + ledger",
        secs,
        f"valid {led['valid']:,} partial {led['partial']:,} malformed {led['malformed']:,} "
        f"duplicate {led['duplicate']:,} conflict {led['conflict']:,}",
    )
    if not args.skip_naive:
        secs, res = best_of(lambda: run_naive(str(path)), args.repeat)
        report(
            "naive json.loads per line",
            secs,
            f"objects {res['objects']:,} not JSON {res['not_json']:,}",
        )
    for ignore in (False, True):
        msg = run_polars(str(path), ignore)
        print(f"{'polars.scan_ndjson(ignore_errors=' + str(ignore) + ')':<34} {msg}")
    # the same rows without the truncated lines, for what a parser that may fail can do
    clean = CACHE / f"judge_rows_{args.rows}_{args.seed}_clean.jsonl"
    if not clean.exists():
        generate(clean, args.rows, args.seed, truncated=0.0)
    secs, msg = best_of(lambda: run_polars(str(clean), False), args.repeat)
    report("polars.scan_ndjson, clean copy", secs, msg.split(" (")[0])
    secs, led = best_of(lambda: run_workbench(str(clean), cfg), args.repeat)
    report("workbench, clean copy", secs, f"valid {led['valid']:,} malformed {led['malformed']:,}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
