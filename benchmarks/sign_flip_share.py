"""Where the sign-flip test's large-sample form agrees with the Monte-Carlo test: by share.

    nice -n 19 .venv/bin/python benchmarks/sign_flip_share.py [SETS] [G,G,...]

The null data sets of :func:`workbench.sim.calibrate.sign_flip_check` (same seeds: equal,
unequal and dominant cluster sizes x normal, t3, skewed and integer-rubric differences;
default 1000 sets at 13, 20, 50, 100, 200, 500, 1000, 2000 clusters, about 5 CPU minutes),
pooled and binned by the largest cluster's share of sum_g S_g^2 (what the Lindeberg
condition bounds, and what ``stats.SIGN_FLIP_ASYMPTOTIC_SHARE`` tests). Per bin: data
sets, max and 99th percentile of |p_normal - p_monte_carlo| where either p < 0.1, how often
the two decide differently at 5% and 1%, and both rejection rates. The Monte-Carlo test
draws 1,000 patterns (the SD of its p at 0.05 is 0.007).
"""
from __future__ import annotations

import sys

import numpy as np
from scipy import stats as sps

from workbench import stats
from workbench.sim import calibrate

sets = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
gs = [int(x) for x in sys.argv[2].split(",")] if len(sys.argv) > 2 else [13, 20, 50, 100, 200, 500, 1000, 2000]
share, pn, pm = [], [], []
with stats.one_blas_thread():
    for design in calibrate.SIGN_FLIP_DESIGNS:
        for family in calibrate.SIGN_FLIP_FAMILIES:
            for g in gs:
                rng = np.random.default_rng(stats.derive_seed(calibrate.SEED, "sign_flip", design, family, g) % 2**32)
                sums = calibrate._sign_flip_sums(rng, sets, g, design, family)
                ss = (sums**2).sum(axis=1)
                sums, ss = sums[ss > 0], ss[ss > 0]
                share.append((sums**2).max(axis=1) / ss)
                pn.append(2 * sps.norm.sf(np.abs(sums.sum(axis=1)) / np.sqrt(ss)))
                pm.append([stats._sign_flip_monte_carlo(s, 1000, i) for i, s in enumerate(sums)])
sh, a, m = np.concatenate(share), np.concatenate(pn), np.concatenate(pm)
low, dp = (a < 0.1) | (m < 0.1), np.abs(a - m)
print("| largest share | sets | max abs dp (p<0.1) | 99th pct | differ at 5% | differ at 1% "
      "| normal 5% | Monte-Carlo 5% | normal 1% | Monte-Carlo 1% |")
print("|---|---|---|---|---|---|---|---|---|---|")
for lo, hi in [(0, .01), (.01, .02), (.02, .05), (.05, .1), (.1, .2), (.2, .4), (.4, 1.01)]:
    b = (sh >= lo) & (sh < hi)
    if not b.any():
        continue
    bl = b & low
    print(f"| {lo:.2f}-{min(hi, 1):.2f} | {b.sum()} | {dp[bl].max():.3f} | {np.quantile(dp[bl], .99):.3f} | "
          f"{100 * np.mean((a[b] < .05) != (m[b] < .05)):.2f}% | {100 * np.mean((a[b] < .01) != (m[b] < .01)):.2f}% | "
          f"{100 * np.mean(a[b] < .05):.2f}% | {100 * np.mean(m[b] < .05):.2f}% | "
          f"{100 * np.mean(a[b] < .01):.2f}% | {100 * np.mean(m[b] < .01):.2f}% |")
