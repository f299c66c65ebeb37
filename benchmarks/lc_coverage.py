"""Coverage of the length-controlled win rate's interval (workbench.length) by simulation.

Planted sets from ``tests/length_support.simulate`` (a known GLM: per-instruction difficulty,
per-model quality and length effect; 200 instructions x 3 models), each estimated with the
difficulty fitted from the annotations and a percentile instruction-bootstrap-refit interval
(49 resamples). Prints each model's coverage of the planted no-length win rate.

Measured (2026-12-04, 200 sets): theta -2.0: 0.910, -1.0: 0.930, +0.3: 0.905 (nominal 0.95):
somewhat narrow; the CI test (tests/test_length.py) runs 40 sets and asserts >= 0.75.

    .venv/bin/python benchmarks/lc_coverage.py [SETS]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from length_support import THETA, planted_lc, simulate  # noqa: E402

from workbench import length  # noqa: E402


def coverage(sets: int, resamples: int = 49) -> np.ndarray:
    hits = np.zeros(len(THETA))
    truth = np.array([planted_lc(t) for t in THETA])
    for k in range(sets):
        g, _ = simulate(200, 1000 + k)
        _, fit, _ = length._estimate(g, None)
        boot = length.bootstrap_lc(g, None, resamples, k, fit)
        lo, hi = np.nanquantile(boot, [0.025, 0.975], axis=0)
        hits += (lo <= truth) & (truth <= hi)
    return hits / sets


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    cov = coverage(n)
    print(f"LC interval coverage over {n} planted sets (nominal 0.95): "
          + ", ".join(f"theta {t:+.1f}: {c:.3f}" for t, c in zip(THETA, cov, strict=True)))
