"""Size and power of the missingness tests by exchangeable unit (issue 24).

Its own numpy generator (not ``workbench synth``): V variants x S scenarios x 3 trials x 2
judges, missing judgments from one of three patterns, all independent of the variant and
the judge under the null:

* ``block``: each (scenario, variant) fails as a whole (every trial and judge) with
  probability 0.10, and each surviving judgment fails with probability 0.055 (about 15 %
  missing in all);
* ``trial``: each (scenario, variant, trial) item fails as a whole with probability 0.15;
* ``row``: each judgment fails on its own with probability 0.15.

Per data set: the variant test on all variants, the judge test, and the contrasts'
confounding flag (the variant test on variants v0 and v1 only), each with the unit ``block``
(the default since issue 24) and ``trial`` (the unit before), exactly as the pipeline runs
them (:func:`workbench.analysis.census.missingness_units`, :func:`workbench.analysis.census.unit_test`).
Power: the same ``block`` pattern with variant v1's block failure rate raised to 0.30 (a real
variant effect), and judge B's judgment failure rate raised to 0.15 (a real judge effect).

Run: ``python benchmarks/missingness_units.py [sets]`` (default 300; seeded, deterministic);
``python benchmarks/missingness_units.py SETS extra``: the row pattern at 20 scenarios again
(more sets), and power where the finer unit is valid (trials fail independently, variant
v1's item failure rate 0.30 against 0.15).
"""

from __future__ import annotations

import sys

import numpy as np

from workbench.analysis import census

TRIALS, JUDGES = 3, 2


def generate(rng: np.random.Generator, scenarios: int, variants: int, pattern: str,
             block_rate: tuple[float, ...] | None = None, judge_rate: tuple[float, ...] = (0.055, 0.055)
             ) -> tuple[np.ndarray, ...]:
    """Per-judgment (missing, scenario, variant, trial, judge) arrays of one data set."""
    s, v, t, j = (a.ravel() for a in np.meshgrid(np.arange(scenarios), np.arange(variants), np.arange(TRIALS),
                                                 np.arange(JUDGES), indexing="ij"))
    if pattern == "block":
        rates = block_rate or (0.10,) * variants
        dead = rng.random((scenarios, variants)) < np.array(rates)[None, :]
        miss = dead[s, v] | (rng.random(s.size) < np.array(judge_rate)[j])
    elif pattern == "trial":
        rates = block_rate or (0.15,) * variants
        dead = rng.random((scenarios, variants, TRIALS)) < np.array(rates)[None, :, None]
        miss = dead[s, v, t]
    else:
        miss = rng.random(s.size) < 0.15
    return miss.astype(float), s, v, t, j


def run(miss, s, v, t, j, unit: str, seed: int) -> dict[str, float | None]:
    out = {}
    for factor in ("variant", "judge"):
        out[factor] = census.unit_test(*census.missingness_units(miss, s, v, t, j, factor, unit), seed).p_value
    pair = v < 2
    units = census.missingness_units(miss[pair], s[pair], v[pair], t[pair], j[pair], "variant", unit)
    out["confound"] = census.unit_test(*units, seed).p_value
    return out


def rates(sets: int, scenarios: int, variants: int, pattern: str, seed: int, **kw) -> dict[str, dict[str, float]]:
    rng = np.random.default_rng(seed)
    hits = {u: {k: 0 for k in ("variant", "judge", "confound")} for u in ("block", "trial")}
    for i in range(sets):
        data = generate(rng, scenarios, variants, pattern, **kw)
        for unit in ("block", "trial"):
            for k, p in run(*data, unit, seed + i).items():
                hits[unit][k] += p is not None and p < 0.05
    return {u: {k: 100.0 * h / sets for k, h in d.items()} for u, d in hits.items()}


def extra(sets: int) -> None:
    r = rates(sets, 20, 3, "row", 4242)
    print(f"row pattern, 20 scenarios, {sets} sets: " + ", ".join(
        f"{u}: variant {r[u]['variant']:.1f} judge {r[u]['judge']:.1f} confound {r[u]['confound']:.1f}"
        for u in ("trial", "block")))
    for scen in (9, 20):
        r = rates(sets, scen, 3, "trial", 5000 + scen, block_rate=(0.15, 0.30, 0.15))
        print(f"trial pattern + effect, {scen} scenarios: " + ", ".join(
            f"{u}: variant {r[u]['variant']:.1f} confound {r[u]['confound']:.1f}" for u in ("trial", "block")))


def main() -> None:
    sets = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    if len(sys.argv) > 2 and sys.argv[2] == "extra":
        extra(sets)
        return
    print(f"rejection rate at alpha 0.05, % of {sets} data sets (MC se ~1.3 points at 5 %)")
    print("pattern  S   unit   variant  judge  confound")
    for pattern in ("block", "trial", "row"):
        for scen in (3, 5, 9, 20):
            r = rates(sets, scen, 3, pattern, 1000 * scen + len(pattern))
            for unit in ("trial", "block"):
                print(f"{pattern:7s} {scen:2d}  {unit:6s} {r[unit]['variant']:6.1f} {r[unit]['judge']:6.1f} "
                      f"{r[unit]['confound']:8.1f}")
    print("power: variant v1 block failure rate 0.30 (others 0.10); judge B judgment failure 0.15 (A 0.055)")
    for scen in (5, 9, 20):
        r = rates(sets, scen, 3, "block", 7000 + scen, block_rate=(0.10, 0.30, 0.10))
        q = rates(sets, scen, 3, "block", 9000 + scen, judge_rate=(0.055, 0.15))
        for unit in ("trial", "block"):
            print(f"effect  {scen:2d}  {unit:6s} {r[unit]['variant']:6.1f} {q[unit]['judge']:6.1f} "
                  f"{r[unit]['confound']:8.1f}")


if __name__ == "__main__":
    main()
