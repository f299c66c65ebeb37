"""The joint cluster bootstrap alone, on columns of a run's shape, at any number of scenarios.

No file and no ingest: ``G`` scenarios, 180 scorecard columns (non-negative integer sums, the
exact float32 path), 11 judge-offset and 45 paired-contrast columns (non-integer differences,
float64), in the 3 passes a run makes. Prints wall and CPU seconds of ``JointBootstrap.run``.

    .venv/bin/python benchmarks/bench_bootstrap.py --scenarios 83292 --resamples 10000
    .venv/bin/python benchmarks/bench_bootstrap.py --scenarios 16659 --resamples 3001
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import workbench as wb
from workbench.reduce import sufficient as reduce


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenarios", type=int, default=83_292)
    ap.add_argument("--resamples", type=int, default=10_000)
    args = ap.parse_args()
    g, b = args.scenarios, args.resamples
    cfg = wb.load_config(overrides={"bootstrap": {"resamples": b, "seed": 1, "budget": None}})
    jb = reduce.JointBootstrap.for_scenarios([f"s{i:07d}" for i in range(g)], cfg)
    rng = np.random.default_rng(0)
    cols = []
    for _ in range(180):
        n = rng.integers(0, 7, g).astype(float)
        cols.append(jb.add_sums(np.arange(g), n, n * rng.integers(1, 11, g)))
    for _ in range(56):
        n = rng.integers(0, 3, g).astype(float)
        cols.append(jb.add_sums(np.arange(g), n, n * rng.normal(0, 1, g)))
    w0, c0 = time.perf_counter(), time.process_time()
    for part in (cols[:180], cols[180:191], cols[191:]):
        for c in part:
            jb.request({}, c)
        jb.run()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    print(f"joint bootstrap: {b:,} resamples x {g:,} scenarios x {len(cols)} columns in 3 passes: "
          f"{wall:.1f} s wall, {cpu:.1f} s CPU ({1e3 * cpu / b:.2f} ms CPU per resample)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
