"""Size and coverage by simulation for issue 24 (own numpy generator, not ``workbench synth``).

Three measurements, all seeded, printed as tables (no timing; not a test):

* ``offset``: the judge-offset test (paired mean of within-item differences, clustered by
  scenario) under a true null, when missing rates vary by scenario: CR1 with G - 1 df (before)
  against CR2 with Bell-McCaffrey df (after) and a t test on per-scenario means (G - 1 df).
* ``contrast``: the unpaired two-variant contrast under a null, the same three.
* ``passk``: coverage of the pass^k interval at 3, 5, 9, 20 scenarios.

    PYTHONPATH=. python benchmarks/small_sample_size.py [offset|contrast|passk] [--sets N]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy import stats as sps

from workbench import stats

SEED = 20261203
#: (logit sd of the per-scenario missing rate, sd of the per-scenario judge offset)
MISS_OFFSET = ((1.0, 0.5), (1.5, 0.8), (2.5, 1.0), (3.0, 1.5))
ALPHA = 0.05


def _scores(latent: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(latent), 1, 10)


def offset_set(rng: np.random.Generator, g: int, variants: int, trials: int, miss_sd: float,
               offset_sd: float, base_miss: float = 0.15) -> tuple[np.ndarray, np.ndarray]:
    """Within-item differences judge 1 - judge 2 and their scenario labels, on the items both
    judges scored. Scenario ICC of scores about 0.47 (scenario sd 1.0, item sd 0.6, noise 0.7);
    the judges' offset varies by scenario around a true mean of 0 (``offset_sd``); the missing
    rate of every row varies by scenario on the logit scale (``miss_sd``) around ``base_miss``."""
    scen = rng.normal(0.0, 1.0, g)
    off = rng.normal(0.0, offset_sd, g)
    rate = 1.0 / (1.0 + np.exp(-(math.log(base_miss / (1 - base_miss)) + rng.normal(0.0, miss_sd, g))))
    shape = (g, variants, trials)
    item = 6.0 + scen[:, None, None] + rng.normal(0.0, 0.6, shape)
    s1 = _scores(item + off[:, None, None] / 2 + rng.normal(0.0, 0.7, shape))
    s2 = _scores(item - off[:, None, None] / 2 + rng.normal(0.0, 0.7, shape))
    keep = (rng.random(shape) >= rate[:, None, None]) & (rng.random(shape) >= rate[:, None, None])
    gi = np.broadcast_to(np.arange(g)[:, None, None], shape)
    return (s1 - s2)[keep], gi[keep]


def _t_reject(est: float, se: float | None, df: float) -> bool | None:
    if se is None or se == 0.0:
        return None
    return bool(2 * sps.t.sf(abs(est / se), df) < ALPHA)


def tests_on(d: np.ndarray, dg: np.ndarray) -> dict[str, bool | None]:
    out: dict[str, bool | None] = {}
    gs = np.unique(dg)
    if d.size < 2 or gs.size < 2:
        return {"cr1": None, "cr2_bm": None, "cluster_means_t": None}
    out["cr1"] = _t_reject(float(d.mean()), stats.clustered_se(d, dg), gs.size - 1)
    r = stats.cluster_mean_cr2(d, dg)
    out["cr2_bm"] = None if r.p_value is None else bool(r.p_value < ALPHA)
    means = np.array([d[dg == k].mean() for k in gs])
    sd = float(np.std(means, ddof=1))
    out["cluster_means_t"] = _t_reject(float(means.mean()), sd / math.sqrt(gs.size) if sd > 0 else None,
                                       gs.size - 1)
    return out


def _rate_text(h: list[bool]) -> str:
    if not h:
        return "   --   "
    p = float(np.mean(h))
    return f"{100 * p:5.1f} +- {100 * math.sqrt(p * (1 - p) / len(h)):.1f}"


def run_offset(sets: int, miss_sd: float, offset_sd: float, variants: int = 4) -> None:
    print(f"\njudge offset test under the null, {sets} sets per point; missing logit sd {miss_sd}, "
          f"scenario offset sd {offset_sd}, {variants} variants x 3 trials, 15% base missing per row")
    print(f"{'G':>3} | {'CR1 t(G-1)':>12} | {'CR2 + BM':>12} | {'means t(G-1)':>12} | mean BM df")
    for g in (3, 5, 9, 20):
        rng = np.random.default_rng(stats.derive_seed(SEED, "offset", g, miss_sd, offset_sd) % 2**32)
        hits: dict[str, list[bool]] = {"cr1": [], "cr2_bm": [], "cluster_means_t": []}
        dfs = []
        for _ in range(sets):
            d, dg = offset_set(rng, g, variants, 3, miss_sd, offset_sd)
            for k, v in tests_on(d, dg).items():
                if v is not None:
                    hits[k].append(v)
            if np.unique(dg).size >= 2:
                r = stats.cluster_mean_cr2(d, dg)
                if r.df is not None:
                    dfs.append(r.df)
        print(f"{g:>3} | {_rate_text(hits['cr1']):>12} | {_rate_text(hits['cr2_bm']):>12} | "
              f"{_rate_text(hits['cluster_means_t']):>12} | {np.mean(dfs):.2f}")


def run_contrast(sets: int, miss_sd: float, effect_sd: float) -> None:
    print(f"\nunpaired contrast a - b under the null, {sets} sets per point; missing logit sd {miss_sd} "
          f"(per scenario x variant), variant x scenario sd {effect_sd}, 3 trials, 2 judges")
    print(f"{'G':>3} | {'CR1 t(G-1)':>12} | {'CR2 + BM':>12}")
    for g in (3, 5, 9, 20):
        rng = np.random.default_rng(stats.derive_seed(SEED, "contrast", g, miss_sd, effect_sd) % 2**32)
        h1, h2 = [], []
        for _ in range(sets):
            scen = rng.normal(0.0, 1.0, g)
            sides = []
            for _v in range(2):
                shape = (g, 3, 2)
                ve = rng.normal(0.0, effect_sd, g)
                rate = 1 / (1 + np.exp(-(math.log(0.15 / 0.85) + rng.normal(0.0, miss_sd, g))))
                x = _scores(6.0 + scen[:, None, None] + ve[:, None, None] + rng.normal(0.0, 0.6, shape[:2])[..., None]
                            + rng.normal(0.0, 0.7, shape))
                keep = rng.random(shape) >= rate[:, None, None]
                gi = np.broadcast_to(np.arange(g)[:, None, None], shape)
                sides.append((x[keep], gi[keep]))
            (xa, ca), (xb, cb) = sides
            if xa.size == 0 or xb.size == 0:
                continue
            ds = stats.diff_clustered(xa, ca, xb, cb)
            if ds.p_value is not None:
                h1.append(ds.p_value < ALPHA)
            r = stats.diff_cr2(xa, ca, xb, cb)
            if r.p_value is not None:
                h2.append(r.p_value < ALPHA)
        print(f"{g:>3} | {_rate_text(h1):>12} | {_rate_text(h2):>12}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", nargs="?", default="offset", choices=["offset", "contrast", "passk"])
    ap.add_argument("--sets", type=int, default=2000)
    args = ap.parse_args()
    if args.what == "offset":
        for miss_sd, off_sd in MISS_OFFSET:
            run_offset(args.sets, miss_sd, off_sd)
    elif args.what == "contrast":
        for miss_sd, eff_sd in ((1.0, 0.3), (1.5, 0.5)):
            run_contrast(args.sets, miss_sd, eff_sd)
    else:
        run_passk(args.sets)



# --------------------------------------------------------------------------- pass^k


def passk_truth(mu: float, sd: float, k: int) -> float:
    """E[p^k] for p = expit(mu + z), z ~ N(0, sd^2): Gauss-Hermite quadrature (80 nodes)."""
    x, w = np.polynomial.hermite_e.hermegauss(80)
    p = 1.0 / (1.0 + np.exp(-(mu + sd * x)))
    return float(np.sum(w * p ** k) / np.sum(w))


def passk_set(rng: np.random.Generator, g: int, judges: int, trials: int, mu: float, sd_s: float, sd_j: float,
              miss: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per (scenario, judge) item: passes c, outcomes n (rows missing at rate ``miss`` are
    neither), scenario label. Pass probability expit(mu + u_s + v_sj)."""
    u = rng.normal(0.0, sd_s, (g, 1))
    v = rng.normal(0.0, sd_j, (g, judges))
    p = 1.0 / (1.0 + np.exp(-(mu + u + v)))
    out = rng.random((g, judges, trials)) < p[..., None]
    seen = rng.random((g, judges, trials)) >= miss
    c = (out & seen).sum(axis=2).ravel()
    n = seen.sum(axis=2).ravel()
    sc = np.repeat(np.arange(g), judges)
    return c, n, sc


#: (logit mu, scenario sd, judge-within sd): the settings the default was chosen on ...
PASSK_SETTINGS = ((0.6, 1.5, 0.5), (1.8, 1.5, 0.5), (-0.6, 1.5, 0.5), (0.6, 2.5, 0.5), (0.6, 0.5, 0.3),
                  (2.5, 1.0, 0.5))
#: ... and held-out ones, run at other designs (judges, trials, missing rate)
PASSK_HELDOUT = ((0.0, 1.0, 0.8), (1.2, 2.0, 0.3), (-1.5, 1.0, 1.0), (3.0, 1.5, 0.5))
PASSK_HELDOUT_DESIGNS = ((1, 5, 0.30), (3, 2, 0.05))


def run_passk(sets: int, k: int = 2) -> None:
    runs = [(s, 2, 3, 0.15, "chosen on") for s in PASSK_SETTINGS]
    runs += [(s, j, t, m, "held out") for j, t, m in PASSK_HELDOUT_DESIGNS for s in PASSK_HELDOUT]
    for setting, judges, trials, miss, role in runs:
        _run_passk_setting(sets, k, setting, judges, trials, miss, role)


def _run_passk_setting(sets: int, k: int, setting: tuple[float, float, float], judges: int, trials: int,
                       miss: float, role: str) -> None:
    methods = ("old", *stats.PASS_K_METHODS)
    mu, sd_s, sd_j = setting
    truth = passk_truth(mu, math.hypot(sd_s, sd_j), k)
    print(f"\npass^{k} coverage (nominal 95%), {sets} sets per point ({role}); logit mu {mu}, scenario sd "
          f"{sd_s}, judge-within sd {sd_j}: true pass^{k} = {truth:.3f}; {judges} judges x {trials} trials, "
          f"{100 * miss:.0f}% missing")
    widths = [max(len(m), 19) for m in methods]
    print(f"{'G':>3} | " + " | ".join(m.rjust(w) for m, w in zip(methods, widths, strict=True)))
    for g in (3, 5, 9, 20):
        rng = np.random.default_rng(stats.derive_seed(SEED, "passk", g, mu, sd_s, sd_j, judges, trials, miss)
                                    % 2**32)
        hits: dict[str, list[bool]] = {m: [] for m in methods}
        width: dict[str, list[float]] = {m: [] for m in methods}
        for _ in range(sets):
            c, n, sc = passk_set(rng, g, judges, trials, mu, sd_s, sd_j, miss)
            keep = n >= k
            if not keep.any():
                continue
            for m in methods:
                r = stats.pass_k_interval(c[keep], n[keep], sc[keep], k, 0.95,
                                          method="cluster_t_clipped" if m == "old" else m)
                if r.ci_low is not None:
                    hits[m].append(r.ci_low <= truth <= r.ci_high)
                    width[m].append(r.ci_high - r.ci_low)
        print(f"{g:>3} | " + " | ".join(f"{_rate_text(hits[m])} w{np.mean(width[m]):.2f}".rjust(w)
                                        for m, w in zip(methods, widths, strict=True)))


if __name__ == "__main__":
    main()
