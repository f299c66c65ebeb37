"""Size of the large-sample block permutation test, and its agreement with the exact one.

    nice -n 19 .venv/bin/python benchmarks/permutation_asymptotic.py [SETS] [EXACT_SETS] [G:V,...]

Null data sets with the census's design (G scenarios x V variants x 3 trials x 2 judges):
whole items fail with a scenario-specific rate (Beta(1, 9), mean 0.1) and single judgments
with another (Beta(1, 19)), independently of variant and judge. For each design both
missingness tests (variant: items permuted within scenarios; judge: judges permuted within
items) run in the large-sample form (:func:`workbench.stats.block_permutation_asymptotic`);
at G = 200 the exact Monte-Carlo test (2,000 permutations) runs too, on the same data sets
(all EXACT_SETS at V = 2, a quarter of them at V = 10). The optional third argument picks
points (e.g. ``200:2,1000:10``; default: G in 200, 1000, 5000 x V in 2, 10).
Prints, per point: false-positive rate at alpha 0.05 (with its binomial 95% interval) and,
where both ran, the max and mean |p_exact - p_asymptotic| (and the max where either p < 0.1).
"""
from __future__ import annotations

import sys
import time

import numpy as np

from workbench import stats

ALPHA = 0.05
B = 2000


def data_set(rng: np.random.Generator, g: int, v: int, t: int = 3, j: int = 2) -> np.ndarray:
    r_item = rng.beta(1, 9, g)[:, None, None, None]
    r_one = rng.beta(1, 19, g)[:, None, None, None]
    whole = rng.random((g, v, t, 1)) < r_item
    return whole | (rng.random((g, v, t, j)) < r_one)  # missing, shape (g, v, t, j)


def designs(miss: np.ndarray):
    g, v, t, j = miss.shape
    gi, vi, ti, ji = np.meshgrid(*(np.arange(n) for n in miss.shape), indexing="ij")
    yield "variant", (miss.sum(axis=3).ravel().astype(float), np.full(g * v * t, float(j)),
                      vi[..., 0].ravel(), gi[..., 0].ravel())
    yield "judge", (miss.ravel().astype(float), np.ones(miss.size), ji.ravel(),
                    ((gi * v + vi) * t + ti).ravel())


def wilson(k: int, n: int) -> tuple[float, float]:
    z = 1.96
    c = (k + z * z / 2) / (n + z * z)
    h = z * np.sqrt(k * (n - k) / n + z * z / 4) / (n + z * z)
    return c - h, c + h


def main() -> None:
    sets = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    exact_sets = int(sys.argv[2]) if len(sys.argv) > 2 else sets
    points = ([tuple(map(int, x.split(":"))) for x in sys.argv[3].split(",")] if len(sys.argv) > 3
              else [(g, v) for g in (200, 1000, 5000) for v in (2, 10)])
    print("G  V  factor  sets  FPR_asymptotic [95%]  | exact: sets FPR max|dp| mean|dp| (max|dp| where p<0.1)  seconds")
    for g, v in points:
        if True:
            rng = np.random.default_rng(1000 * g + v)
            res: dict[str, dict[str, list[float]]] = {f: {"a": [], "e": []} for f in ("variant", "judge")}
            t0 = time.perf_counter()
            for s in range(sets):
                miss = data_set(rng, g, v)
                for factor, d in designs(miss):
                    a = stats.block_permutation_test(*d, B, s, exact_budget=0)
                    assert a.method in ("block_permutation_asymptotic", "undefined"), a.method
                    if a.p_value is not None:
                        res[factor]["a"].append(a.p_value)
                    if g == 200 and s < (exact_sets if v == 2 else exact_sets // 4):
                        e = stats.block_permutation_test(*d, B, s, exact_budget=None)
                        res[factor]["e"].append(np.nan if e.p_value is None else e.p_value)
            sec = time.perf_counter() - t0
            for factor, r in res.items():
                pa = np.array(r["a"])
                k = int(np.sum(pa < ALPHA))
                lo, hi = wilson(k, pa.size)
                line = f"{g:<5}{v:<3}{factor:<8}{pa.size:<6}{k / pa.size:.3f} [{lo:.3f}, {hi:.3f}]"
                if r["e"]:
                    pe = np.array(r["e"])
                    dp = np.abs(pe - pa[: pe.size])
                    ke = int(np.sum(pe < ALPHA))
                    tail = np.minimum(pe, pa[: pe.size]) < 0.1
                    line += (f"  | {pe.size} {ke / pe.size:.3f} {np.nanmax(dp):.4f} {np.nanmean(dp):.4f}"
                             f" (p<0.1: {np.nanmax(dp[tail], initial=0):.4f})")
                print(line + f"  {sec:.0f}s", flush=True)


if __name__ == "__main__":
    main()
