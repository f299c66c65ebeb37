"""Many variants (issue 28): wall time, peak RSS and results.json size of ``workbench analyze``.

    nice -n 19 .venv/bin/python benchmarks/many_variants.py [--variants 5000] [--scenarios 5]

Writes a seeded file of VARIANTS x SCENARIOS x 2 judges (one trial) under
``benchmarks/.cache/`` and runs ``workbench analyze FILE --out DIR -q`` as a child process
(the gate fails on degenerate cells: exit 1 is expected). Not a test: timings belong here.

Measured 2026-12-04, 5,000 variants x 5 scenarios x 2 judges (50,000 rows), shared 2-core
machine: before (main 957907d) 121.5 s wall, results.json 1.04 GB (``ranks`` tied_with /
not_compared: N**2 names), stage peak RSS 10.7 GB; after (ranks lists null past
``ranks.LIST_LIMIT``) 43.2 s wall, peak RSS 4.1 GB, results.json 95 MB. What remains: the
scorecard's bootstrap of 90,000 cells x 10,000 resamples (~35 s CPU of which
``joint_percentile`` per cell ~18 s) and the pure-Python indented JSON encoder (~15 s).

Measured 2026-12-06, same machine, anchor and change run alternately in one session (load
0.4-1.0): column-major draws and in-place division in ``reduce.JointBootstrap`` take
``joint_percentile`` from 21.8 s to 3.5 s of CPU in the profile, but wall time moves only
from 28.7 / 27.6 s (anchor bcfa79a) to 27.0 / 25.7 s (about 6%); peak RSS 3.07 GB both,
results.json 95.2 MB both. The main value of that change is the progress line
("bootstrap intervals", shown on a terminal past 5,000 requests) and the "writing
results.json" stage, so a long run no longer sits silent.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def write(path: Path, variants: int, scenarios: int) -> None:
    rnd = random.Random(1)
    with path.open("w", encoding="utf-8") as f:
        for v in range(variants):
            eff = rnd.gauss(0, 1)
            for s in range(scenarios):
                for j in ("j1", "j2"):
                    score = max(1, min(10, round(5 + eff + rnd.gauss(0, 1.5))))
                    f.write(json.dumps({"scenario": f"s{s}", "variant": f"v{v:04d}", "trial": 1,
                                        "judge": j, "overall": score}) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variants", type=int, default=5000)
    ap.add_argument("--scenarios", type=int, default=5)
    a = ap.parse_args()
    cache = HERE / ".cache"
    cache.mkdir(exist_ok=True)
    path = cache / f"variants_{a.variants}x{a.scenarios}.jsonl"
    if not path.exists():
        write(path, a.variants, a.scenarios)
    out = cache / f"variants_{a.variants}x{a.scenarios}.out"
    t0 = time.perf_counter()
    code = subprocess.call([sys.executable, "-m", "workbench.cli.main", "analyze", str(path), "--out", str(out),
                            "-q", "--overwrite"], stdout=subprocess.DEVNULL,
                           env={**os.environ, "PYTHONPATH": str(HERE.parent)})
    wall = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
    size = (out / "results.json").stat().st_size / 1e6 if (out / "results.json").exists() else float("nan")
    print(f"{a.variants} variants x {a.scenarios} scenarios x 2 judges: exit {code}, wall {wall:.1f} s, "
          f"peak RSS {rss:.2f} GB, results.json {size:.1f} MB, load {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
