"""Size and coverage of the self-preference estimate (issue 27), by simulation.

Planted truth (:mod:`workbench.sim.synth`): two judges of different families (``anthropic/j``,
``openai/j``), four variants, two written by each family, 3 trials, a judge severity offset of
0.4 that also varies by scenario (sd 0.3), scenario sd 1, item sd 0.6, noise sd 0.8, 10 % of
rows missing at random, variant effects 0, 0.3, -0.2, 0.1. Each data set goes through
:func:`workbench.analysis.selfpref.self_preference` itself (the estimator results.json reports: the
per-scenario difference-in-differences, CR2 t interval over scenarios, 95 %).

* ``null``: no self-preference planted: the share of sets whose p < 0.05 (false positives at
  nominal 5 %) and the share whose interval covers the true DiD (truth.json ``did``: +0.0003,
  not exactly 0: rounding and clipping of a judge offset that differs by variant mean);
* ``planted``: judge ``anthropic/j`` +0.5, the other 0: coverage of the true score-scale DiD
  (``did`` +0.4987) and the power at 5 % (``reject``).

Measured (seed 20270127; Monte-Carlo SE of a 5 % rate 1.3 points at 300 sets, 0.5 at 2000; of a
95 % coverage the same)::

    scenarios  truth     sets   reject (fpr / power)  coverage  mean estimate
    9          null       300   4.0 %                 96.0 %    -0.020
    20         null       300   4.7 %                 95.3 %    +0.007
    9          planted    300   34.0 %                97.0 %    +0.493
    20         planted    300   72.0 %                95.0 %    +0.494
    9          null      2000   4.6 %                 95.4 %    -0.000
    20         null      2000   5.0 %                 95.0 %    -0.000
    9          planted   2000   37.0 %                94.7 %    +0.497
    20         planted   2000   75.6 %                94.5 %    +0.507

(9 s for 300 sets per row, 65 s for 2000, on a shared core. One value per scenario, so the CR2
is the t interval on G - 1 df; the discrete, clipped scores keep it at nominal size.)

Run:

    .venv/bin/python benchmarks/self_preference_size.py [--sets 300]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import polars as pl

from workbench import load_config
from workbench.analysis import selfpref
from workbench.sim import synth

JA, JB = "anthropic/j", "openai/j"
VARIANTS = ("c1", "g1", "c2", "g2")
WRITERS = {"c1": "anthropic", "g1": "openai", "c2": "anthropic", "g2": "openai"}
SEED = 20270127


def model(scenarios: int, bonus: float) -> synth.Model:
    return synth.Model(scenarios=scenarios, variants=VARIANTS, variant_effects=(0.0, 0.3, -0.2, 0.1),
                       judges=(JA, JB), judge_offsets=(0.4, 0.0), judge_offset_sd=0.3, trials=3, mu=5.5,
                       writers=WRITERS, self_preference={JA: bonus, JB: 0.0}, missing_rates=0.1)


def frames(m: synth.Model, sets: int, seed: int) -> list[pl.DataFrame]:
    """``sets`` data sets of ``m`` as row tables (valid rows only, as the stage reads them)."""
    d = synth.draw(m, np.random.default_rng(seed), sets)
    score, valid = d["score"], d["valid"]
    r, g, v, t, j = score.shape
    idx = np.indices((g, v, t, j)).reshape(4, -1)
    names = np.array(m.scenario_names, dtype=object)
    base = {"scenario": names[idx[0]], "variant": np.array(VARIANTS, dtype=object)[idx[1]],
            "trial": (idx[2] + 1).astype(str), "judge": np.array(m.judges, dtype=object)[idx[3]]}
    out = []
    for k in range(r):
        keep = valid[k].reshape(-1)
        out.append(pl.DataFrame({"bucket": "valid", **{c: a[keep].tolist() for c, a in base.items()},
                                 "overall": score[k].reshape(-1)[keep].astype(float)}))
    return out


def run(sets: int, seed: int = SEED) -> list[dict[str, object]]:
    cfg = load_config(overrides={"scores": {"overall": "overall"}, "writer": WRITERS,
                                 "families": {JA: "anthropic", JB: "openai"}})
    rows = []
    for gi, g in enumerate((9, 20)):
        for bi, (label, bonus) in enumerate((("null", 0.0), ("planted", 0.5))):
            m = model(g, bonus)
            (tr,) = synth.truth(m)["self_preference"]
            est, rej, cov = [], 0, 0
            for df in frames(m, sets, seed + 10 * gi + bi):
                (p,) = selfpref.self_preference(df, cfg)["pairs"]
                est.append(p["estimate"])
                rej += p["p"] is not None and p["p"] < 0.05
                cov += p["ci_low"] is not None and p["ci_low"] <= tr["did"] <= p["ci_high"]
            rows.append({"scenarios": g, "truth": label, "did": tr["did"], "sets": sets,
                         "reject": rej / sets, "coverage": cov / sets, "mean_estimate": float(np.mean(est))})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", type=int, default=300)
    ap.add_argument("--seed", type=int, default=SEED)
    a = ap.parse_args()
    t0 = time.perf_counter()
    print(f"{'scenarios':>9}  {'truth':8} {'did':>7} {'sets':>5}  {'reject':>7}  {'coverage':>8}  mean estimate")
    for r in run(a.sets, a.seed):
        print(f"{r['scenarios']:>9}  {r['truth']:8} {r['did']:+.4f} {r['sets']:>5}  {100 * r['reject']:6.1f}%  "
              f"{100 * r['coverage']:7.1f}%  {r['mean_estimate']:+.3f}")
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
