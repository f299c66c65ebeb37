"""How often a family of true-null claims gets a false ``holds``: unadjusted vs Holm intervals.

Planted truth: m + 1 variants with equal true means (no claim is true), each claim
``V_i - V_0 = +0.5`` (the claimed value; any positive claim gives the same false-holds event
up to the ``shrinks`` split). Data per the independent audit of issue 24: scenario effects
with ICC 0.47, 3 trials, 2 judges, 15 % of rows missing at random, G scenarios. Each claim's
difference is the CR2 Bell-McCaffrey t of :func:`workbench.stats.diff_cr2_sides` (what
``check_claims`` computes through ``paired.contrast_record``), and its verdict is
``workbench.analysis.check._verdict`` on

* ``before``: the unadjusted 95 % interval (the verdicts up to issue 24), and
* ``after``: the Holm step-down interval of :func:`workbench.stats.holm_stepdown_levels`
  (``verdict_ci_method`` ``holm_stepdown_cr2_bm``).

The figure is the family's false-sign rate: the share of data sets where at least one of
the m claims is called ``holds`` or ``shrinks`` (either needs the interval above 0, the
claim's sign; which of the two depends on the claimed value against the interval's width,
so ``holds`` alone understates the error at many scenarios, where a narrow interval lies
below the claimed 0.5); the target is at most 2.5 %, one side of 5 %. Also the per-claim
rate. Run:

    .venv/bin/python benchmarks/claim_verdict_size.py [--reps 2000]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from workbench import stats
from workbench.analysis.check import _verdict

ICC, TRIALS, JUDGES, MISSING, CLAIMED, ALPHA = 0.47, 3, 2, 0.15, 0.5, 0.05
SIGNED = ("holds", "shrinks")  # verdicts that assert the claim's sign


def one(rng: np.random.Generator, g: int, m: int) -> tuple[list[str], list[str]]:
    sd_s, sd_e = math.sqrt(ICC), math.sqrt(1 - ICC)
    level = rng.normal(0, sd_s, g)
    sides = []
    for _ in range(m + 1):
        scen = np.repeat(np.arange(g), TRIALS * JUDGES)
        y = 6 + level[scen] + rng.normal(0, sd_e, scen.size)
        keep = rng.random(scen.size) >= MISSING
        sides.append(stats.cluster_side(y[keep], scen[keep], g))
    recs = [stats.diff_cr2_sides(sides[i], sides[0], 0.95) for i in range(1, m + 1)]
    levels = stats.holm_stepdown_levels([r.p_value for r in recs], ALPHA)
    before, after = [], []
    for r, lev in zip(recs, levels, strict=True):
        before.append(_verdict(CLAIMED, r.ci_low, r.ci_high, "measured", "measured", [])[0])
        lo, hi = (None, None) if lev is None else stats.t_interval(r.estimate, r.se, r.df, lev)
        after.append(_verdict(CLAIMED, lo, hi, "measured", "measured", [])[0])
    return before, after


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=20261204)
    args = ap.parse_args()
    print(f"{'m':>2} {'G':>3}  family holds|shrinks before -> after   per claim before -> after   (reps {args.reps})")
    for m in (3, 5, 9):
        for g in (3, 5, 9, 20):
            rng = np.random.default_rng([args.seed, m, g])
            fb = fa = cb = ca = 0
            for _ in range(args.reps):
                b, a = one(rng, g, m)
                fb += any(v in SIGNED for v in b)
                fa += any(v in SIGNED for v in a)
                cb += sum(v in SIGNED for v in b)
                ca += sum(v in SIGNED for v in a)
            n = args.reps
            mc = 100 * math.sqrt(0.025 * 0.975 / n)
            print(f"{m:>2} {g:>3}  {100 * fb / n:6.2f} % -> {100 * fa / n:5.2f} % (MC se {mc:.2f})"
                  f"        {100 * cb / (n * m):5.2f} % -> {100 * ca / (n * m):5.2f} %")


if __name__ == "__main__":
    main()
