"""Ingest of one generated input split into files, by `--jobs 1`, `--jobs 2` and `--engine dask`.

    nice -n 5 .venv/bin/python benchmarks/bench_jobs.py --rows 1000000 --parts 4

The figures docs/scale.md quotes. The generator's file (benchmarks/generate.py, cached) is
split into ``--parts`` files of equal line counts (the appended re-runs at its end copy rows
of the earlier parts, so duplicates and conflicts are found across files). Each mode runs in
its own child process (interpreter start, imports, ``execute.read_rows`` + ``count_ledger``:
what the options change; the stages after ingest are the same code on the same row table),
one after the other; wall, CPU (this process and reaped children), peak RSS of the largest
process and of the tree (bench_scale.measure), and the ledger, which must be the same in
every mode. ``--engine dask`` starts a LocalCluster of 2 single-threaded worker processes
(needs the `dask` extra: requirements-dev.lock pins it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import gb, measure  # noqa: E402
from generate import CACHE, cache_path, generate  # noqa: E402

CHILD = """
import json, sys, time
t0 = time.perf_counter()
from workbench import execute, ledger
from workbench.common.config import load_config
mode, files = sys.argv[1], sys.argv[2:]
ex = {"jobs1": execute.Execution(jobs=1), "jobs2": execute.Execution(jobs=2),
      "dask": execute.Execution(engine="dask")}[mode]
rows, sources = execute.read_rows(files, load_config(), ex)
led = ledger.count_ledger(rows, planned=False)
print(json.dumps({"ledger": led, "seconds": time.perf_counter() - t0}))
"""


def split(path: Path, parts: int) -> list[Path]:
    lines = path.read_bytes().splitlines(keepends=True)
    size = -(-len(lines) // parts)
    out = []
    for k in range(parts):
        p = CACHE / f"{path.stem}_part{k + 1}of{parts}.jsonl"
        if not p.exists():
            p.write_bytes(b"".join(lines[k * size:(k + 1) * size]))
        out.append(p)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--modes", default="jobs1,jobs2,dask")
    ap.add_argument("--timeout", type=float, default=3600.0)
    args = ap.parse_args(argv)
    path = cache_path(args.rows)
    if not path.exists():
        generate(args.rows)
    files = [str(p) for p in split(path, args.parts)]
    ledgers = {}
    for mode in args.modes.split(","):
        m = measure([sys.executable, "-c", CHILD, mode, *files], args.timeout)
        res = m["result"]
        ledgers[mode] = res.get("ledger")
        print(f"{mode:6s} wall {m['wall']:7.1f} s  CPU {m['cpu']:6.1f} s  peak RSS {gb(m['rss_max'])} "
              f"(tree {gb(m['rss_tree'])})  load {m['load_at_start']:.1f}  rc {m['rc']}  "
              f"ledger {json.dumps(res.get('ledger'), sort_keys=True)}")
        if m["rc"] != 0:
            print("\n".join(m["stderr_tail"]), file=sys.stderr)
    same = len({json.dumps(v, sort_keys=True) for v in ledgers.values()}) == 1
    print(f"{args.rows:,} rows in {args.parts} files; the same ledger in every mode: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
