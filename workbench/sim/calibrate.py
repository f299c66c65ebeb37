"""Calibration by simulation: does every headlined interval cover, every test hold its size?

Data sets are drawn from the planted-truth simulator (:mod:`workbench.sim.synth`) over a grid
(3, 5, 9, 20 scenarios; row-level or whole-item missingness; a judge offset that is constant or
varies by scenario), all at once per grid point (vectorised), and each set is run through the
workbench's own estimators in :mod:`workbench.stats`. For each method the table gives its
coverage of the planted truth (intervals) or its rejection rate under a true null (tests), with
the Monte-Carlo standard error, beside the method it replaced ("before").

``workbench calibrate --out DIR`` writes ``calibration.csv``, ``calibration.json``,
``coverage.png`` and ``power.csv``; ``tests/test_calibration.py`` (marked ``slow``) asserts the
bands: coverage in [92.5, 97.5] %, false-positive rate within 5 +- 2.5 %, and a study sized by
``scenarios_needed`` reaching the promised 80 % +- 5 power. Where no method can reach a band
(a sign-flip test cannot reject at 5 % with 5 or fewer scenarios: its smallest p-value is
2/2^G), the table says so in ``note`` and the band does not apply.
"""

from __future__ import annotations

import csv
import json
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats as _sps

from workbench import stats
from workbench.common.text import csv_cell
from workbench.sim import calibrate_judges
from workbench.sim.calibrate_grid import (
    ALPHA,
    CONFIDENCE,
    COVERAGE_BAND,
    FPR_BAND,
    GRID_MISSING,
    GRID_OFFSET,
    POWER_BAND,
    apply_pattern,
)
from workbench.sim.synth import Model, draw, truth

GRID_SCENARIOS = (3, 5, 9, 20)
SETS_FULL = 1000
PERMUTATIONS = 400
BOOT = 1000
SEED = 20261201

#: what each method row is: kind (coverage or fpr), which estimand, and whether it is headlined
METHODS: dict[str, dict[str, Any]] = {
    "missing_variant_chi2": {"kind": "fpr", "what": "missing rate depends on variant?",
                             "status": "before", "headline": False},
    "missing_variant_item_permutation": {"kind": "fpr", "what": "missing rate depends on variant? "
                                         "((scenario, variant, trial) items exchanged)",
                                         "status": "before", "headline": False},
    "missing_variant_permutation": {"kind": "fpr", "what": "missing rate depends on variant? "
                                    "(whole (scenario, variant) blocks exchanged)",
                                    "status": "after", "headline": True},
    "missing_judge_chi2": {"kind": "fpr", "what": "missing rate depends on judge?", "status": "before",
                           "headline": False},
    "missing_judge_item_permutation": {"kind": "fpr", "what": "missing rate depends on judge? "
                                       "(judgments exchanged within items)",
                                       "status": "before", "headline": False},
    "missing_judge_permutation": {"kind": "fpr", "what": "missing rate depends on judge? "
                                  "(a judge's (scenario, variant) blocks exchanged)",
                                  "status": "after", "headline": True},
    "confound_fisher": {"kind": "fpr", "what": "claims: confounded by missingness?", "status": "before",
                        "headline": False},
    "confound_permutation": {"kind": "fpr", "what": "claims: confounded by missingness?",
                             "status": "after", "headline": True},
    "offset_bootstrap": {"kind": "coverage", "what": "judge offset interval", "status": "before",
                         "headline": False},
    "offset_cluster_t": {"kind": "coverage", "what": "judge offset interval (CR1, G - 1 df; beside)",
                         "status": "before", "headline": False},
    "offset_cr2_bm": {"kind": "coverage", "what": "judge offset interval (CR2, Bell-McCaffrey df)",
                      "status": "after", "headline": True},
    "offset_joint_bootstrap": {"kind": "coverage", "what": "judge offset interval (joint bootstrap, beside)",
                               "status": "after", "headline": False},
    "cell_bootstrap": {"kind": "coverage", "what": "scorecard mean interval (per-cell bootstrap)",
                       "status": "before", "headline": False},
    "cell_joint_bootstrap": {"kind": "coverage", "what": "scorecard mean interval (joint bootstrap, beside)",
                             "status": "after", "headline": False},
    "contrast_joint_bootstrap": {"kind": "coverage",
                                 "what": "variant contrast interval (joint bootstrap of the two cells, beside)",
                                 "status": "after", "headline": False},
    "offset_paired_t": {"kind": "coverage", "what": "judge offset interval (ignores clustering)",
                        "status": "before", "headline": False},
    "offset_wilcoxon": {"kind": "fpr", "what": "judge offset test", "status": "before", "headline": False},
    "offset_cluster_t_p": {"kind": "fpr", "what": "judge offset test (CR1, G - 1 df; beside)",
                           "status": "before", "headline": False},
    "offset_cr2_bm_p": {"kind": "fpr", "what": "judge offset test (CR2, Bell-McCaffrey df)", "status": "after",
                        "headline": True},
    "offset_sign_flip": {"kind": "fpr", "what": "judge offset test (exact, beside)", "status": "after",
                         "headline": False},
    "rate_wilson": {"kind": "coverage", "what": "missing-rate interval", "status": "before",
                    "headline": False},
    "rate_clustered": {"kind": "coverage", "what": "missing-rate interval", "status": "after",
                       "headline": True},
    "cell_cluster_t": {"kind": "coverage", "what": "scorecard mean interval (CR1, G - 1 df; beside)",
                       "status": "before", "headline": False},
    "cell_cr2_bm": {"kind": "coverage", "what": "scorecard mean interval (CR2, Bell-McCaffrey df)",
                    "status": "after", "headline": True},
    "contrast_cluster_t": {"kind": "coverage", "what": "variant contrast interval (CR1, G - 1 df; beside)",
                           "status": "before", "headline": False},
    "contrast_cr2_bm": {"kind": "coverage", "what": "variant contrast interval (CR2, Bell-McCaffrey df)",
                        "status": "after", "headline": True},
    "contrast_cr2_bm_p": {"kind": "fpr", "what": "variant contrast test (CR2, Bell-McCaffrey df)",
                          "status": "after", "headline": True},
    "passk_cluster_t": {"kind": "coverage", "what": "pass^2 interval (CR1 t, clipped)", "status": "before",
                        "headline": False},
    "passk_wilson_deff_t": {"kind": "coverage", "what": "pass^2 interval (Wilson, design effect, t(G - 1))",
                            "status": "before", "headline": False},
    "passk_wilson_cr2_4bm": {"kind": "coverage", "what": "pass^2 interval (Wilson on the CR2 effective n, "
                             "t at 4 x BM df)", "status": "after", "headline": True},
    "paired_by_trial": {"kind": "coverage", "what": "paired contrast (rows matched on trial)",
                        "status": "before", "headline": False},
    "paired_scenario_judge": {"kind": "coverage", "what": "paired contrast (scenario x judge, trials averaged)",
                              "status": "after", "headline": True},
}


#: the methods :func:`run_point` measures; :data:`METHODS` adds the judge diagnostics' rows
#: (:mod:`workbench.sim.calibrate_judges`, issue 27), measured on their own design
CORE_METHODS = dict(METHODS)
METHODS.update(calibrate_judges.METHODS)

#: intervals whose documented band at 3-5 scenarios is 92.5-100 % (conservative, never short)
SMALL_G_CONSERVATIVE = ("offset_cr2_bm", "contrast_cr2_bm", "cell_cr2_bm", "passk_wilson_cr2_4bm")
#: the missing-rate interval under whole-block failures at few scenarios: the documented band
#: (see :func:`run_point`): a cell none of whose blocks failed takes the pooled design effect of
#: the other cells, conservative there (97.7 % at 9 scenarios; 88.7 % without it)
BLOCK_RATE_LIMIT_G = 9
BLOCK_RATE_BAND_LOW = 0.925
#: pass^k of the calibration: k = 2 outcomes of a (scenario, judge) item, a pass a score >= 6
PASS_K = 2
PASS_THRESHOLD = 6


def grid_model(scenarios: int, missing: str, offset: str) -> Model:
    """The generating model of one grid point (ICC of scores about 0.45, 15 % missing)."""
    base = Model(scenarios=scenarios, variants=("a", "b"), variant_effects=(0.0, 0.0),
                 judges=("j1", "j2"), judge_offsets=(0.0, 0.0), trials=3, mu=6.0,
                 scenario_sd=0.9, item_sd=0.6, noise_sd=0.7, missing_scenario_sd=0.8)
    return apply_pattern(base, missing, offset)


def _labels(codes: np.ndarray) -> np.ndarray:
    return np.char.zfill(codes.astype(str), 5)


def _joint(g_n: int, seed: int) -> Any:
    """The workbench's joint bootstrap over a data set's scenarios (every scenario of the set)."""
    from workbench.reduce.sufficient import JointBootstrap

    return JointBootstrap(scenarios=sorted(_labels(np.arange(g_n)).tolist()), seed=seed, resamples=BOOT,
                          resamples_requested=BOOT, confidence=CONFIDENCE)


def pass_k_truth(model: Model, seed: int, scenarios: int = 100_000) -> float:
    """True pass^k of variant ``a`` (judges pooled): E over (scenario, judge) items of
    P(pass)^k, by the unbiased per-item C(c, k) / C(n, k) averaged over ``scenarios`` simulated
    scenarios with every trial scored (Monte-Carlo error about 0.002; missingness here does not
    depend on the score, so it does not move the estimand)."""
    big = replace(model, scenarios=scenarios, missing_rates=0.0, item_failure_rate=0.0,
                  block_failure_rate=0.0, missing_scenario_sd=0.0, trials_min=None)
    d = draw(big, np.random.default_rng(seed), 1)
    passes = (d["score"][0, :, 0] >= PASS_THRESHOLD).sum(axis=1).ravel()
    return float(np.mean(stats.pass_hat_k(passes, np.full(passes.size, big.trials), PASS_K)))


def _p_rejects(r: stats.TestResult) -> bool | None:
    return None if r.p_value is None else bool(r.p_value < ALPHA)


def _one_set(score: np.ndarray, valid: np.ndarray, tr: dict[str, Any], seed: int,
             present: np.ndarray | None = None, pass_truth: float | None = None) -> dict[str, Any]:
    """Every method's verdict on one data set: interval covers the truth? test rejects?

    ``present`` marks the rows in the design (unequal clusters: the trials a scenario did not
    run are neither judgments nor missing); None: every row."""
    from workbench.analysis import census

    g_n, v_n, t_n, j_n = score.shape
    gi, vi, ti, ji = np.meshgrid(np.arange(g_n), np.arange(v_n), np.arange(t_n), np.arange(j_n), indexing="ij")
    out: dict[str, Any] = {}
    if present is None:
        present = np.ones(score.shape, dtype=bool)
    miss = ~valid & present
    # --- missingness tests on judgments, by the pipeline's own units and test
    # (census.missingness_units + census.unit_test): whole blocks (the headline) and the finer
    # units before issue 24 (items for the variant test, judgments for the judge test)
    sel = present.ravel()
    m_r = miss.ravel()[sel].astype(float)
    keys = (gi.ravel()[sel], vi.ravel()[sel], ti.ravel()[sel], ji.ravel()[sel])
    vt = np.array([[miss[:, v].sum(), valid[:, v].sum()] for v in range(v_n)], dtype=float)
    jt = np.array([[miss[..., j].sum(), valid[..., j].sum()] for j in range(j_n)], dtype=float)
    r = stats.contingency_test(vt, seed=seed, resamples=PERMUTATIONS)
    out["missing_variant_chi2"] = _p_rejects(r)
    out["missing_variant_permutation"] = _p_rejects(
        census.unit_test(*census.missingness_units(m_r, *keys, "variant", "block"), seed))
    out["missing_variant_item_permutation"] = _p_rejects(
        census.unit_test(*census.missingness_units(m_r, *keys, "variant", "trial"), seed))
    r = stats.contingency_test(jt, seed=seed, resamples=PERMUTATIONS)
    out["missing_judge_chi2"] = _p_rejects(r)
    out["missing_judge_permutation"] = _p_rejects(
        census.unit_test(*census.missingness_units(m_r, *keys, "judge", "block"), seed + 1))
    out["missing_judge_item_permutation"] = _p_rejects(
        census.unit_test(*census.missingness_units(m_r, *keys, "judge", "trial"), seed + 1))
    # --- claims' confounding check (sides a and b): Fisher on rows vs the block permutation
    # (with two variants the claims' test is the variant test on their two sides)
    p = stats.fisher_exact_2x2(int(vt[0, 0]), int(vt[0].sum()), int(vt[1, 0]), int(vt[1].sum()))
    out["confound_fisher"] = None if p is None else p < ALPHA
    out["confound_permutation"] = out["missing_variant_permutation"]
    # --- judge offset j1 - j2 on items both scored (all variants)
    both = valid[..., 0] & valid[..., 1]
    d = (score[..., 0] - score[..., 1])[both].astype(float)
    dg = gi[..., 0][both]
    true_off = next(o["offset"] for o in tr["judge_offsets"] if o["variant"] is None)
    if d.size >= 2 and np.unique(dg).size >= 2:
        # the components of stats.paired_summary (its Wilcoxon p uses scipy's exact/permutation
        # branch, seconds per set with ties; here the normal approximation, same statistic)
        g_d = np.unique(dg).size
        mean_d, se_d = stats.mean_se(d)
        t_lo, t_hi = stats.t_interval(mean_d, se_d, d.size - 1, CONFIDENCE)
        c_lo, c_hi = stats.t_interval(mean_d, stats.clustered_se(d, dg), g_d - 1, CONFIDENCE)
        b_lo, b_hi = stats.cluster_bootstrap_mean(d, dg, BOOT, seed, CONFIDENCE)

        def cov(lo: float | None, hi: float | None) -> bool | None:
            return None if lo is None or hi is None else bool(lo <= true_off <= hi)

        out["offset_bootstrap"] = cov(b_lo, b_hi)
        # what the workbench computes now: the run's scenario weights on per-scenario sums
        jb = _joint(g_n, seed)
        rec: dict[str, Any] = {}
        jb.request(rec, jb.add_values(_labels(dg), d))
        jb.run()
        out["offset_joint_bootstrap"] = cov(rec["boot_low"], rec["boot_high"])
        out["offset_cluster_t"] = cov(c_lo, c_hi)
        r2 = stats.cluster_mean_cr2(d, dg, CONFIDENCE)
        out["offset_cr2_bm"] = cov(r2.ci_low, r2.ci_high)
        out["offset_paired_t"] = cov(t_lo, t_hi)
        if true_off == 0.0:
            wp = (None if not np.any(d != 0) else
                  float(_sps.wilcoxon(d, zero_method="wilcox", method="approx").pvalue))
            out["offset_wilcoxon"] = None if wp is None else wp < ALPHA
            out["offset_cluster_t_p"] = None if c_lo is None else not (c_lo <= 0.0 <= c_hi)
            out["offset_cr2_bm_p"] = None if r2.p_value is None else bool(r2.p_value < ALPHA)
            sp = stats.sign_flip_test(d, dg, 2000, seed)
            out["offset_sign_flip"] = None if sp is None else sp < ALPHA
    # --- missing rate of judge j1 in variant a
    true_rate = next(c["missing_rate"] for c in tr["cells"] if c["variant"] == "a" and c["judge"] == "j1")
    m_g = miss[:, 0, :, 0].sum(axis=1)
    n_g = present[:, 0, :, 0].sum(axis=1)
    lo, hi = stats.wilson_interval(int(m_g.sum()), int(n_g.sum()), CONFIDENCE)
    out["rate_wilson"] = bool(lo <= true_rate <= hi)
    # a cell at 0 or 1 takes the pooled design effect of the census's (judge, variant) cells,
    # as census._with_rates does
    pooled = stats.pooled_design_effect((miss[:, v, :, j].sum(axis=1), present[:, v, :, j].sum(axis=1))
                                        for v in range(v_n) for j in range(j_n))
    lo, hi, _ = stats.clustered_proportion(m_g, n_g, CONFIDENCE, design_effect_fallback=pooled)
    out["rate_clustered"] = bool(lo <= true_rate <= hi)
    # --- scorecard cell (variant a, judges pooled) and contrast a - b
    va, vb = valid[:, 0], valid[:, 1]
    xa, ca = score[:, 0][va].astype(float), gi[:, 0][va]
    xb, cb = score[:, 1][vb].astype(float), gi[:, 1][vb]
    true_a = next(c["mean"] for c in tr["pooled"] if c["variant"] == "a")
    if np.unique(ca).size >= 2:
        # the scorecard's cell (stats.cell_summary): CR2 with Bell-McCaffrey df headlined,
        # the CR1 t(G - 1) beside it (the headline before)
        cs = stats.cell_summary(xa, ca, CONFIDENCE, bootstrap=False)
        lo, hi = cs.ci_low, cs.ci_high
        out["cell_cluster_t"] = None if lo is None else bool(lo <= true_a <= hi)
        lo, hi = cs.ci_low_cr2, cs.ci_high_cr2
        out["cell_cr2_bm"] = None if lo is None else bool(lo <= true_a <= hi)
    true_diff = tr["contrasts"][0]["diff"]
    if np.unique(ca).size >= 2 and xb.size:
        b_lo, b_hi = stats.cluster_bootstrap_mean(xa, ca, BOOT, seed, CONFIDENCE)
        out["cell_bootstrap"] = bool(b_lo <= true_a <= b_hi)
        jb = _joint(g_n, seed)
        cell: dict[str, Any] = {}
        con: dict[str, Any] = {}
        col_a, col_b = jb.add_values(_labels(ca), xa), jb.add_values(_labels(cb), xb)
        jb.request(cell, col_a)
        jb.request(con, col_a, col_b)
        jb.run()
        out["cell_joint_bootstrap"] = None if cell["boot_low"] is None else bool(
            cell["boot_low"] <= true_a <= cell["boot_high"])
        out["contrast_joint_bootstrap"] = None if con["boot_low"] is None else bool(
            con["boot_low"] <= true_diff <= con["boot_high"])
    ds = stats.diff_clustered(xa, ca, xb, cb, CONFIDENCE)
    out["contrast_cluster_t"] = None if ds.ci_low is None else bool(ds.ci_low <= true_diff <= ds.ci_high)
    d2 = stats.diff_cr2(xa, ca, xb, cb, CONFIDENCE)
    out["contrast_cr2_bm"] = None if d2.ci_low is None else bool(d2.ci_low <= true_diff <= d2.ci_high)
    if true_diff == 0.0:
        out["contrast_cr2_bm_p"] = None if d2.p_value is None else bool(d2.p_value < ALPHA)
    # --- pass^2 of variant a: (scenario, judge) items with at least k scored trials
    if pass_truth is not None:
        c_sj = ((score[:, 0] >= PASS_THRESHOLD) & va).sum(axis=1).ravel()
        n_sj = va.sum(axis=1).ravel()
        s_sj = np.repeat(np.arange(g_n), j_n)
        keep = n_sj >= PASS_K
        if np.unique(s_sj[keep]).size >= 2:
            for name, method in (("passk_cluster_t", "cluster_t_clipped"),
                                 ("passk_wilson_deff_t", "wilson_design_effect_t"),
                                 ("passk_wilson_cr2_4bm", stats.PASS_K_METHOD)):
                pk = stats.pass_k_interval(c_sj[keep], n_sj[keep], s_sj[keep], PASS_K, CONFIDENCE, method=method)
                out[name] = None if pk.ci_low is None else bool(pk.ci_low <= pass_truth <= pk.ci_high)
    # paired contrast: rows matched on trial number (before) vs (scenario, judge) means (after)
    pair = valid[:, 0] & valid[:, 1]
    dd = (score[:, 0] - score[:, 1])[pair].astype(float)
    dgg = gi[:, 0][pair]
    if np.unique(dgg).size >= 2:
        lo, hi = stats.t_interval(dd.mean(), stats.clustered_se(dd, dgg), np.unique(dgg).size - 1, CONFIDENCE)
        out["paired_by_trial"] = None if lo is None else bool(lo <= true_diff <= hi)
    sa = np.where(va, score[:, 0], 0).sum(axis=1)
    na = va.sum(axis=1)
    sb = np.where(vb, score[:, 1], 0).sum(axis=1)
    nb = vb.sum(axis=1)
    ok = (na > 0) & (nb > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        du = (sa / np.where(na > 0, na, 1) - sb / np.where(nb > 0, nb, 1))[ok]
    du_g = np.broadcast_to(np.arange(g_n)[:, None], ok.shape)[ok]
    if np.unique(du_g).size >= 2:
        lo, hi = stats.t_interval(du.mean(), stats.clustered_se(du, du_g), np.unique(du_g).size - 1,
                                  CONFIDENCE)
        out["paired_scenario_judge"] = None if lo is None else bool(lo <= true_diff <= hi)
    return out


def run_point(scenarios: int, missing: str, offset: str, sets: int, seed: int = SEED) -> list[dict[str, Any]]:
    """Measure every method at one grid point on ``sets`` seeded data sets."""
    model = grid_model(scenarios, missing, offset)
    tr = truth(model)
    point_seed = stats.derive_seed(seed, scenarios, missing, offset) % (2**32)
    d = draw(model, np.random.default_rng(point_seed), sets)
    pk_truth = pass_k_truth(model, (point_seed + 7) % (2**32))
    hits: dict[str, list[bool]] = {k: [] for k in CORE_METHODS}
    undefined: dict[str, int] = {k: 0 for k in CORE_METHODS}
    for i in range(sets):
        res = _one_set(d["score"][i], d["valid"][i], tr, (point_seed + i) % (2**32), d["present"][i], pk_truth)
        for k in CORE_METHODS:
            if k not in res:
                continue
            if res[k] is None:
                undefined[k] += 1
            else:
                hits[k].append(bool(res[k]))
    rows = []
    for k, meta in CORE_METHODS.items():
        h = hits[k]
        n = len(h)
        rate = float(np.mean(h)) if n else None
        mcse = math.sqrt(rate * (1 - rate) / n) if n and rate is not None else None
        band = COVERAGE_BAND if meta["kind"] == "coverage" else FPR_BAND
        note = ""
        in_band = None
        if rate is not None and meta["kind"] == "coverage":
            in_band = bool(band[0] <= rate <= band[1])
            if k == "rate_clustered" and scenarios <= 5:
                # documented band: with 3-5 scenarios and 9-15 judgments per cell the t(G-1)
                # correction makes the interval conservative; the band's lower side applies
                band = (COVERAGE_BAND[0], 1.0)
                note = (f"conservative with {scenarios} scenarios (t_{scenarios - 1} correction on "
                        f"{3 * scenarios} judgments): documented band 92.5-100%")
                in_band = bool(band[0] <= rate <= band[1])
            elif k in SMALL_G_CONSERVATIVE and scenarios <= 5 and rate > band[1]:
                # documented band: Bell-McCaffrey df (and the pass^k Wilson's quantile) are
                # conservative with 3-5 scenarios; the band's lower side applies
                band = (COVERAGE_BAND[0], 1.0)
                note = f"conservative with {scenarios} scenarios: documented band 92.5-100%"
                in_band = bool(band[0] <= rate <= band[1])
            elif k == "rate_clustered" and missing == "block" and scenarios <= BLOCK_RATE_LIMIT_G:
                # documented band: a cell's missing rate when whole blocks fail at 15 %: in
                # 0.85^G of the data sets no block of the cell failed, and the cell takes the
                # pooled design effect of the census's other cells (every trial of a failed block
                # fails together: large), which makes it conservative there, never short
                clean = (1.0 - model.block_failure_rate) ** scenarios
                band = (BLOCK_RATE_BAND_LOW, 1.0)
                note = (f"whole-block failures with {scenarios} scenarios: in {100 * clean:.0f}% of data sets "
                        f"no block of the cell failed and it takes the pooled design effect (conservative); "
                        f"documented band {100 * band[0]:.1f}-100%")
                in_band = bool(band[0] <= rate <= band[1])
        elif rate is not None:
            # a false-positive rate must not exceed nominal + 2.5; below nominal - 2.5 an exact
            # test on discrete data (few discordant items, 2^G sign patterns) is conservative:
            # reported, not failed
            in_band = bool(rate <= band[1])
            if k == "offset_sign_flip" and scenarios <= 5:
                note = f"cannot reject at 5% with {scenarios} scenarios (smallest p = 2/2^{scenarios})"
            elif k in ("missing_variant_permutation", "confound_permutation") and scenarios <= 5:
                note = (f"conservative: {scenarios} scenarios x 2 variants hold only 2^{scenarios} "
                        f"arrangements of the labels (exact test; smallest p 2/2^{scenarios})")
            elif rate < band[0]:
                note = "conservative (exact test on discrete data)"
        rows.append({"scenarios": scenarios, "missing": missing, "offset": offset, "method": k,
                     "kind": meta["kind"], "what": meta["what"], "status": meta["status"],
                     "headline": meta["headline"], "sets": n, "undefined": undefined[k], "rate": rate,
                     "mcse": mcse, "band_low": band[0], "band_high": band[1], "in_band": in_band,
                     "note": note})
    return rows


# --------------------------------------------------------------------------- power


def power_check(sets: int = 400, seed: int = SEED, effect_latent: float = 0.6) -> list[dict[str, Any]]:
    """Does a study sized by ``scenarios_needed`` reach 80 % power? And ``n_needed``?

    A large pilot (200 scenarios, 3 trials) of the grid's varying-effects model estimates the
    variance components (:func:`workbench.stats.contrast_variance_components`); the plan
    (:func:`workbench.stats.cluster_power_plan`) gives the scenarios needed to detect the true
    contrast at 3 trials, and the power that more trials alone reach at 9 scenarios. Then
    ``sets`` studies are simulated at each design and the share in which the clustered test
    (:func:`workbench.stats.diff_clustered`) rejects is the achieved power. For comparison,
    ``n_needed`` (valid n per side) is turned into trials per scenario at the current 9
    scenarios, the way a user adding trials would read it.
    """
    base = replace(grid_model(9, "row", "varying"), variant_effects=(effect_latent, 0.0))
    tr = truth(base)
    effect = tr["contrasts"][0]["diff"]
    rng = np.random.default_rng(seed)
    pilot = replace(base, scenarios=200)
    d = draw(pilot, rng, 1)
    sc, v = d["score"][0], d["valid"][0]
    g_n, v_n, t_n, j_n = sc.shape
    gi, vi, ti, _ = np.meshgrid(np.arange(g_n), np.arange(v_n), np.arange(t_n), np.arange(j_n), indexing="ij")
    bv, wv, _, t0 = stats.contrast_variance_components(
        sc[v].astype(float), gi[v], vi[v] == 0, ((gi * v_n + vi) * t_n + ti)[v])
    plan = stats.cluster_power_plan(bv, wv, 9, t0, effect, ALPHA, 0.8)
    # n_needed as the workbench computed it before (unpaired, design effect of centred values)
    xa = sc[:, 0][v[:, 0]].astype(float)
    xb = sc[:, 1][v[:, 1]].astype(float)
    sd = math.sqrt((np.sum((xa - xa.mean()) ** 2) + np.sum((xb - xb.mean()) ** 2)) / (xa.size + xb.size - 2))
    vals = np.concatenate([xa - xa.mean(), xb - xb.mean()])
    cl = np.concatenate([gi[:, 0][v[:, 0]], gi[:, 1][v[:, 1]]])
    deff = stats.design_effect(stats.icc_oneway(vals, cl), np.unique(cl, return_counts=True)[1]) or 1.0
    n_need = stats.n_needed(sd, effect, ALPHA, 0.8, design_effect=max(deff, 1.0))
    valid_share = float(v.mean())
    trials_for_n = max(1, math.ceil(n_need / (9 * j_n * valid_share)))

    def achieved(model: Model) -> tuple[float, int]:
        dd = draw(model, rng, sets)
        rej = []
        for i in range(sets):
            s_i, v_i = dd["score"][i], dd["valid"][i]
            g_i = np.broadcast_to(np.arange(model.scenarios)[:, None, None], s_i[:, 0].shape)
            res = stats.diff_clustered(s_i[:, 0][v_i[:, 0]].astype(float), g_i[v_i[:, 0]],
                                       s_i[:, 1][v_i[:, 1]].astype(float), g_i[v_i[:, 1]], CONFIDENCE)
            if res.p_value is not None:
                rej.append(res.p_value < ALPHA)
        return float(np.mean(rej)), len(rej)

    rows = []
    g_need = plan["scenarios_needed"]
    p_g, n_g = achieved(replace(base, scenarios=g_need))
    rows.append({"design": f"scenarios_needed: {g_need} scenarios x 3 trials", "promised": 0.8,
                 "achieved": p_g, "sets": n_g, "method": "scenarios_needed", "status": "after"})
    p_t, n_t = achieved(replace(base, trials=trials_for_n))
    rows.append({"design": f"n_needed {n_need} per side as 9 scenarios x {trials_for_n} trials", "promised": 0.8,
                 "achieved": p_t, "sets": n_t, "method": "n_needed_as_trials", "status": "before"})
    if plan["trials_needed"] is not None:
        tn = plan["trials_needed"]
        p_n, n_n = achieved(replace(base, trials=tn))
        rows.append({"design": f"trials_needed: 9 scenarios x {tn} trials", "promised": 0.8,
                     "achieved": p_n, "sets": n_n, "method": "trials_needed", "status": "after"})
    p_c, n_c = achieved(replace(base, trials=30))
    v30 = bv + wv * t0 / 30
    rows.append({"design": "9 scenarios x 30 trials (toward the trials-only ceiling)",
                 "promised": stats.power_t(effect, math.sqrt(v30 / 9), 8, ALPHA), "achieved": p_c, "sets": n_c,
                 "method": "trials_30", "status": "after", "ceiling": plan["trials_ceiling_power"],
                 "statement": plan["statement"]})
    for r in rows:
        r["effect"] = effect
    return rows


def rate_check(sets: int = SETS_FULL, seed: int = SEED, trials: int = 15) -> list[dict[str, Any]]:
    """Missing-rate intervals when each scenario contributes many judgments.

    The grid's cells hold 3 judgments per scenario, too few for the scenario clustering of a
    rate to show; here one judge x variant cell has ``trials`` judgments per scenario and rates
    vary by scenario (logit sd 1.0). Coverage of the plain Wilson interval (before) and of
    :func:`workbench.stats.clustered_proportion` (after) over ``sets`` data sets.
    """
    out = []
    for g in (5, 9, 20):
        model = replace(grid_model(g, "row", "varying"), trials=trials, missing_scenario_sd=1.0)
        tr = truth(model)
        true = next(c["missing_rate"] for c in tr["cells"] if c["variant"] == "a" and c["judge"] == "j1")
        d = draw(model, np.random.default_rng(stats.derive_seed(seed, "rate", g) % 2**32), sets)
        hit_w = hit_c = 0
        for i in range(sets):
            m_g = (~d["valid"][i][:, 0, :, 0]).sum(axis=1)
            n_g = np.full(g, trials)
            lo, hi = stats.wilson_interval(int(m_g.sum()), int(n_g.sum()), CONFIDENCE)
            hit_w += lo <= true <= hi
            lo, hi, _ = stats.clustered_proportion(m_g, n_g, CONFIDENCE)
            hit_c += lo <= true <= hi
        for method, hits, status in (("rate_wilson", hit_w, "before"), ("rate_clustered", hit_c, "after")):
            rate = hits / sets
            out.append({"scenarios": g, "judgments_per_scenario": trials, "method": method, "status": status,
                        "rate": rate, "mcse": math.sqrt(rate * (1 - rate) / sets), "sets": sets,
                        "in_band": bool(COVERAGE_BAND[0] <= rate <= COVERAGE_BAND[1])})
    return out


# --------------------------------------------------------------------------- sign-flip forms

#: the sign-flip simulation's grid: cluster counts, cluster-size designs, difference families
SIGN_FLIP_CLUSTERS = (20, 50, 100, 200, 500, 1000)
SIGN_FLIP_DESIGNS = ("equal", "unequal", "dominant")
SIGN_FLIP_FAMILIES = ("normal", "heavy", "skewed", "rubric")
SIGN_FLIP_RESAMPLES = 1000
SIGN_FLIP_ALPHAS = (0.05, 0.01)
#: the cluster counts the CI test runs (one below the switch, one above)
SIGN_FLIP_CI_CLUSTERS = (50, 300)


def _sign_flip_sums(rng: np.random.Generator, sets: int, g: int, design: str, family: str) -> np.ndarray:
    """Per-cluster sums S_g of within-item judge differences, (sets, g), under a true null.

    Cluster sizes: ``equal`` (6 items: 2 variants x 3 trials), ``unequal`` (ceil of a
    lognormal, median 3.3, a long right tail) or ``dominant`` (three clusters of 240 items,
    the rest 6). The difference of an item is a scenario effect (the judges' offset varies by
    scenario, mean 0) plus item noise: ``normal``, ``heavy`` (t with 3 df), ``skewed``
    (centred exponentials: mean 0, not symmetric, which the sign flip assumes) or ``rubric``
    (two exchangeable judges' integer scores 1-10 around a shared item level).
    """
    if design == "equal":
        n = np.full((sets, g), 6)
    elif design == "unequal":
        n = np.maximum(1, np.ceil(np.exp(rng.normal(1.2, 1.0, (sets, g))))).astype(np.int64)
    else:
        n = np.full((sets, g), 6)
        n[:, :3] = 240
    cl = np.repeat(np.arange(sets * g), n.ravel())
    tot = cl.size
    if family == "normal":
        d = rng.normal(0, 0.5, sets * g)[cl] + rng.normal(0, 1, tot)
    elif family == "heavy":
        d = 0.5 * rng.standard_t(3, sets * g)[cl] + rng.standard_t(3, tot)
    elif family == "skewed":
        d = 0.5 * (rng.exponential(1, sets * g) - 1)[cl] + (rng.exponential(1, tot) - 1)
    else:
        level = 5.5 + rng.normal(0, 1.2, sets * g)[cl] + rng.normal(0, 0.8, tot)
        u = rng.normal(0, 0.5, sets * g)[cl]
        a = np.clip(np.round(level + u / 2 + rng.normal(0, 0.9, tot)), 1, 10)
        b = np.clip(np.round(level - u / 2 + rng.normal(0, 0.9, tot)), 1, 10)
        d = a - b
    return np.bincount(cl, weights=d, minlength=sets * g).reshape(sets, g)


def sign_flip_check(sets: int = SETS_FULL, seed: int = SEED, clusters: tuple[int, ...] = SIGN_FLIP_CLUSTERS,
                    resamples: int = SIGN_FLIP_RESAMPLES) -> list[dict[str, Any]]:
    """Size of the cluster sign-flip test's forms under a true null (mean offset 0).

    For each cluster count x size design x difference family (:func:`_sign_flip_sums`),
    ``sets`` data sets; on each, the Monte-Carlo test (``resamples`` patterns, the
    workbench's :func:`workbench.stats.sign_flip_test` loop), the large-sample form with a
    normal reference (:func:`workbench.stats.sign_flip_asymptotic`) and with a t(G-1)
    reference, and ``workbench``: what :func:`workbench.stats.sign_flip` does (the
    large-sample form above :data:`workbench.stats.SIGN_FLIP_ASYMPTOTIC_CLUSTERS` clusters
    when no cluster holds more than :data:`workbench.stats.SIGN_FLIP_ASYMPTOTIC_SHARE` of
    sum S_g^2, else Monte-Carlo). One row per method and alpha: the rejection rate with its
    Monte-Carlo SE; ``share_median``/``share_p90``: the largest cluster's share of
    sum S_g^2; ``asymptotic_used``: the share of sets on which the workbench used the
    large-sample form; ``max_abs_dp``: the largest |p_asymptotic - p_monte_carlo| where
    either is below 0.1.
    """
    out = []
    for design in SIGN_FLIP_DESIGNS:
        for family in SIGN_FLIP_FAMILIES:
            for g in clusters:
                rng = np.random.default_rng(stats.derive_seed(seed, "sign_flip", design, family, g) % 2**32)
                sums = _sign_flip_sums(rng, sets, g, design, family)
                sq = sums * sums
                ss = sq.sum(axis=1)
                ok = ss > 0
                sums, sq, ss = sums[ok], sq[ok], ss[ok]
                share = sq.max(axis=1) / ss
                z = np.abs(sums.sum(axis=1)) / np.sqrt(ss)
                p = {"asymptotic": np.minimum(1.0, 2.0 * _sps.norm.sf(z)),
                     "asymptotic_t": np.minimum(1.0, 2.0 * _sps.t.sf(z, g - 1)),
                     "monte_carlo": np.array([stats._sign_flip_monte_carlo(s, resamples, i)
                                              for i, s in enumerate(sums)])}
                use = (g > stats.SIGN_FLIP_ASYMPTOTIC_CLUSTERS) & (share <= stats.SIGN_FLIP_ASYMPTOTIC_SHARE)
                p["workbench"] = np.where(use, p["asymptotic"], p["monte_carlo"])
                low = (p["asymptotic"] < 0.1) | (p["monte_carlo"] < 0.1)
                dp = float(np.max(np.abs(p["asymptotic"] - p["monte_carlo"])[low])) if low.any() else None
                for method, pv in p.items():
                    for alpha in SIGN_FLIP_ALPHAS:
                        rate = float(np.mean(pv < alpha))
                        out.append({"design": design, "family": family, "clusters": g, "method": method,
                                    "alpha": alpha, "sets": int(pv.size), "rate": rate,
                                    "mcse": math.sqrt(rate * (1 - rate) / pv.size),
                                    "share_median": float(np.median(share)),
                                    "share_p90": float(np.quantile(share, 0.9)),
                                    "asymptotic_used": float(np.mean(use)), "max_abs_dp": dp})
    return out


# --------------------------------------------------------------------------- driver


#: the grid points the CI test runs (the full grid, 16 points, runs with ``workbench calibrate``)
CI_POINTS: tuple[tuple[int, str, str], ...] = ((3, "item", "varying"), (3, "block", "constant"),
                                               (5, "scenario", "varying"), (9, "item", "varying"),
                                               (9, "block", "varying"), (20, "unequal", "constant"),
                                               (20, "row", "varying"))


def run(sets: int | None = None, quick: bool = False, seed: int = SEED) -> dict[str, Any]:
    """The calibration table (every grid point, or :data:`CI_POINTS` with ``quick``) and the power check."""
    with stats.one_blas_thread():  # the same numbers on any number of cores
        return _run(sets, quick, seed)


def _run(sets: int | None, quick: bool, seed: int) -> dict[str, Any]:
    n = sets or SETS_FULL
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    points = CI_POINTS if quick else [(g, m, o) for g in GRID_SCENARIOS for m in GRID_MISSING for o in GRID_OFFSET]
    for g, miss, off in points:
        rows.extend(run_point(g, miss, off, n, seed))
    rows.extend(calibrate_judges.run(n, seed, quick=quick, confidence=CONFIDENCE))
    power = power_check(sets=n, seed=seed)
    rates = rate_check(sets=n, seed=seed)
    flips = sign_flip_check(sets=n, seed=seed, clusters=SIGN_FLIP_CI_CLUSTERS if quick else SIGN_FLIP_CLUSTERS)
    return {"rates_many_per_scenario": rates, "sets_per_point": n,
            "judge_sets_per_point": calibrate_judges.sets_for(n, quick), "confidence": CONFIDENCE, "alpha": ALPHA,
            "sign_flip": flips, "sign_flip_resamples": SIGN_FLIP_RESAMPLES,
            "seed": seed,
            "permutations": PERMUTATIONS, "bootstrap_resamples": BOOT, "coverage_band": list(COVERAGE_BAND),
            "fpr_band": list(FPR_BAND), "power_band": list(POWER_BAND), "rows": rows, "power": power,
            "seconds": round(time.perf_counter() - t0, 1)}


def _plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["rows"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    for ax, kind, band, title in ((axes[0], "coverage", COVERAGE_BAND, "coverage of the planted truth"),
                                  (axes[1], "fpr", FPR_BAND, "false-positive rate under a true null")):
        methods = [m for m, meta in METHODS.items() if meta["kind"] == kind]
        ax.axhspan(band[0] * 100, band[1] * 100, color="#d9ead3", zorder=0)
        for k, m in enumerate(methods):
            pts = [r for r in rows if r["method"] == m and r["rate"] is not None]
            xs = [GRID_SCENARIOS.index(r["scenarios"]) + (k - len(methods) / 2) * 0.04 for r in pts]
            style = "-" if METHODS[m]["status"] != "before" else ":"
            agg: dict[int, list[float]] = {}
            for r in pts:
                agg.setdefault(r["scenarios"], []).append(r["rate"] * 100)
            gx = [GRID_SCENARIOS.index(g) for g in sorted(agg)]
            ax.plot(gx, [np.mean(agg[g]) for g in sorted(agg)], style, marker="o", label=m, linewidth=1.4)
            ax.scatter(xs, [r["rate"] * 100 for r in pts], s=6, alpha=0.4)
        ax.set_xticks(range(len(GRID_SCENARIOS)), [str(g) for g in GRID_SCENARIOS])
        ax.set_xlabel("scenarios (clusters)")
        ax.set_ylabel("%")
        ax.set_title(title)
        ax.legend(fontsize=6.5, loc="best")
    fig.suptitle(f"workbench calibrate: {result['sets_per_point']} data sets per grid point "
                 "(dotted: the method it replaced; band shaded)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


_REQUIRED = object()


def write_csv(path: Path, cols: Sequence[str], rows: Iterable[Mapping[str, Any]],
              missing: Any = _REQUIRED) -> None:
    """``rows`` as CSV with a header of ``cols``: floats to 4 decimals, every text field through
    :func:`~workbench.common.text.csv_cell` (no field a spreadsheet runs as a formula). A column a row
    lacks is an error unless ``missing`` gives its value."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow([csv_cell(c) for c in cols])
        for r in rows:
            values = [r[k] if missing is _REQUIRED else r.get(k, missing) for k in cols]
            w.writerow([csv_cell(f"{v:.4f}" if isinstance(v, float) else v) for v in values])


def write(result: dict[str, Any], out: str | Path) -> dict[str, Path]:
    """Write calibration.json, calibration.csv, power.csv and coverage.png into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "calibration.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    cols = ["scenarios", "missing", "offset", "method", "kind", "what", "status", "headline", "sets",
            "undefined", "rate", "mcse", "band_low", "band_high", "in_band", "note"]
    write_csv(out / "calibration.csv", cols, result["rows"])
    pcols = ["method", "status", "design", "effect", "promised", "achieved", "sets", "statement"]
    write_csv(out / "power.csv", pcols, result["power"], missing="")
    _plot(result, out / "coverage.png")
    paths = {"json": out / "calibration.json", "csv": out / "calibration.csv", "power": out / "power.csv",
             "plot": out / "coverage.png"}
    if result.get("sign_flip"):
        paths.update(write_sign_flip(result["sign_flip"], out))
    return paths


def write_sign_flip(rows: list[dict[str, Any]], out: str | Path) -> dict[str, Path]:
    """Write :func:`sign_flip_check`'s rows as ``sign_flip.csv`` and ``sign_flip.png`` into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    fcols = ["design", "family", "clusters", "method", "alpha", "sets", "rate", "mcse", "share_median",
             "share_p90", "asymptotic_used", "max_abs_dp"]
    write_csv(out / "sign_flip.csv", fcols, rows)
    _plot_sign_flip(rows, out / "sign_flip.png")
    return {"sign_flip": out / "sign_flip.csv", "sign_flip_plot": out / "sign_flip.png"}


def _plot_sign_flip(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(SIGN_FLIP_DESIGNS), figsize=(13, 7), sharex=True)
    styles = {"monte_carlo": ("-", "o"), "asymptotic": ("--", "s"), "asymptotic_t": (":", "^"),
              "workbench": ("-", "x")}
    for i, alpha in enumerate(SIGN_FLIP_ALPHAS):
        for j, design in enumerate(SIGN_FLIP_DESIGNS):
            ax = axes[i, j]
            n = max((r["sets"] for r in rows), default=1)
            half = 1.96 * math.sqrt(alpha * (1 - alpha) / n) * 100
            ax.axhspan(alpha * 100 - half, alpha * 100 + half, color="#d9ead3", zorder=0)
            for family in SIGN_FLIP_FAMILIES:
                for method, (ls, mk) in styles.items():
                    pts = sorted((r["clusters"], r["rate"] * 100) for r in rows if r["design"] == design
                                 and r["family"] == family and r["method"] == method and r["alpha"] == alpha)
                    if pts:
                        ax.plot([p[0] for p in pts], [p[1] for p in pts], ls, marker=mk, markersize=3,
                                linewidth=1, label=f"{method} / {family}")
            ax.axvline(stats.SIGN_FLIP_ASYMPTOTIC_CLUSTERS, color="grey", linewidth=0.8)
            ax.set_xscale("log")
            ax.set_title(f"{design} cluster sizes, alpha {alpha}", fontsize=9)
            ax.set_xlabel("clusters (scenarios)")
            ax.set_ylabel("rejections under the null, %")
    axes[0, 0].legend(fontsize=5, ncol=2, loc="upper right")
    fig.suptitle("sign-flip test: Monte-Carlo vs large-sample forms (band: 95% range of an exact test's "
                 "rate; vertical line: stats.SIGN_FLIP_ASYMPTOTIC_CLUSTERS)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def summary_table(result: dict[str, Any]) -> str:
    """A Markdown table: each method's range over the grid, per scenario count."""
    lines = ["| method | status | " + " | ".join(f"G={g}" for g in GRID_SCENARIOS) + " |",
             "|---|---|" + "---|" * len(GRID_SCENARIOS)]
    for m, meta in METHODS.items():
        cells = []
        for g in GRID_SCENARIOS:
            rates = [r["rate"] for r in result["rows"] if r["method"] == m and r["scenarios"] == g
                     and r["rate"] is not None]
            if not rates:
                cells.append("-")
            elif min(rates) == max(rates):
                cells.append(f"{100 * rates[0]:.1f}")
            else:
                cells.append(f"{100 * min(rates):.1f}-{100 * max(rates):.1f}")
        label = f"{meta['what']}: `{m}`" + {"coverage": "", "fpr": " (false positives)",
                                             "power": " (power)"}[meta["kind"]]
        lines.append(f"| {label} | {meta['status']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(out: str, sets: int | None = None, quick: bool = False) -> int:
    """``workbench calibrate``: run, write, print the summary; exit 1 when a headline misses its band."""
    result = run(sets=sets, quick=quick)
    paths = write(result, out)
    print(summary_table(result))
    print()
    for r in result["power"]:
        print(f"power: {r['design']}: promised {r['promised']:.0%}, achieved {r['achieved']:.1%} "
              f"over {r['sets']} studies" + (f" ({r['statement']})" if r.get("statement") else ""))
    for r in result["rates_many_per_scenario"]:
        print(f"rate interval, {r['judgments_per_scenario']} judgments per scenario, G={r['scenarios']}: "
              f"{r['method']} ({r['status']}) covers {100 * r['rate']:.1f}%")
    for r in result.get("sign_flip", []):
        if r["method"] == "workbench" and r["asymptotic_used"] > 0:
            print(f"sign flip, {r['design']} cluster sizes, {r['family']} differences, G={r['clusters']}, "
                  f"alpha {r['alpha']}: the workbench's test (large-sample form on "
                  f"{100 * r['asymptotic_used']:.0f}% of sets) rejects {100 * r['rate']:.1f}% "
                  f"(MCSE {100 * r['mcse']:.1f})")
    misses = [r for r in result["rows"] if r["headline"] and r["in_band"] is False]
    misses += [r for r in result["rates_many_per_scenario"] if r["status"] == "after" and not r["in_band"]]
    power_miss = [r for r in result["power"] if r["method"] in ("scenarios_needed", "trials_needed")
                  and not POWER_BAND[0] <= r["achieved"] <= POWER_BAND[1]]
    for r in misses:
        print(f"MISS: {r['method']} at G={r['scenarios']} {r.get('missing', '')}/{r.get('offset', '')}: "
              f"{100 * r['rate']:.1f}%")
    for r in power_miss:
        print(f"MISS: power {r['design']}: {100 * r['achieved']:.1f}%")
    print(f"wrote {', '.join(str(p) for p in paths.values())} ({result['seconds']} s)")
    return 1 if misses or power_miss else 0
