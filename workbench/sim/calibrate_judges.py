"""Calibration of the judge diagnostics (issue 27): self-preference, length slope, PPI.

The grid of :mod:`workbench.sim.calibrate` (failure patterns x a judge offset constant or varying by
scenario) at 5, 9 and 20 scenarios, on a three-judge design: ``anthropic/judge`` and
``openai/judge`` whose families wrote two variants each, and ``google/judge``, whose family wrote
none (the neutral reference of the per-judge figures); 3 trials; a human labels 30 % of the items.
Two models per grid point:

* ``planted``: ``anthropic/judge`` prefers its own family's outputs (+0.5 latent points), is
  lenient against the human's truth (+0.8) and rewards length (0.8 latent points per unit of log
  length); ``openai/judge`` has none of the three;
* ``null``: no self-preference for either judge (the pair's difference-in-differences is 0).

Each data set goes through the estimators' own numerical cores: the per-scenario
difference-in-differences of :mod:`workbench.analysis.selfpref` (trials averaged per (scenario,
variant), variants per (scenario, side), :func:`workbench.stats.cluster_mean_cr2` of the
contrasts), :func:`workbench.analysis.length.within_slope` (scenario and variant fixed effects, clustered
by scenario) and :func:`workbench.stats.ppi_mean_cr2` beside the judge-only and human-only
:func:`workbench.stats.cluster_mean_cr2`. ``tests/test_calibration.py`` checks that these
vectorised paths give the same numbers as the pipeline's functions on a drawn set.

Rows (the calibration table's schema; the truths are :func:`workbench.sim.synth.truth`'s, on the
score scale): coverage and false-positive rate with their bands; ``power`` rows (the planted
effect's rejection rate at 5 %) carry no band.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from workbench import stats
from workbench.analysis.length import within_slope
from workbench.sim.calibrate_grid import GRID_MISSING, GRID_OFFSET, apply_pattern, band_row
from workbench.sim.synth import Model, draw, draw_human, truth

JA, JB, JR = "anthropic/judge", "openai/judge", "google/judge"
VARIANTS = ("claude_v", "gpt_v", "claude_v2", "gpt_v2")
WRITERS = {"claude_v": "anthropic", "gpt_v": "openai", "claude_v2": "anthropic", "gpt_v2": "openai"}
#: planted effects (latent points): own-family preference, leniency, length slope of JA
PLANTED_BONUS = 0.5
PLANTED_LENIENCY = 0.8
PLANTED_SLOPE = 0.8
HUMAN_RATE = 0.3
GRID_SCENARIOS = (5, 9, 20)
#: the points the CI test runs (the whole 30-point grid runs with ``workbench calibrate``)
CI_POINTS: tuple[tuple[int, str, str], ...] = ((5, "block", "varying"), (9, "item", "varying"),
                                               (9, "row", "constant"), (20, "scenario", "constant"),
                                               (20, "unequal", "varying"))

METHODS: dict[str, dict[str, Any]] = {
    "selfpref_pair_cr2_bm": {"kind": "coverage", "what": "self-preference of a judge pair (DiD, CR2 t)",
                             "status": "after", "headline": True},
    "selfpref_pair_cr2_bm_p": {"kind": "fpr", "what": "self-preference of a judge pair: test (no preference)",
                               "status": "after", "headline": True},
    "selfpref_pair_power": {"kind": "power", "what": "self-preference of a judge pair: power at +0.5",
                            "status": "after", "headline": False},
    "selfpref_judge_cr2_bm": {"kind": "coverage", "what": "own-family preference of one judge against a "
                              "neutral reference (DiD, CR2 t)", "status": "after", "headline": True},
    "selfpref_judge_cr2_bm_p": {"kind": "fpr", "what": "own-family preference of one judge: test (an unbiased "
                                "judge beside a biased one)", "status": "after", "headline": True},
    "selfpref_judge_power": {"kind": "power", "what": "own-family preference of one judge: power at +0.5",
                             "status": "after", "headline": False},
    "length_slope_fe_cluster_t": {"kind": "coverage", "what": "length slope of a judge (scenario + variant "
                                  "fixed effects, CR1 t(G - 1))", "status": "after", "headline": True},
    "length_slope_fe_cluster_t_p": {"kind": "fpr", "what": "length slope of a judge: test (no length effect)",
                                    "status": "after", "headline": True},
    "length_slope_power": {"kind": "power", "what": "length slope of a judge: power at 0.8 latent per log unit",
                           "status": "after", "headline": False},
    "ppi_cr2_bm": {"kind": "coverage", "what": "prediction-powered mean vs the human truth (CR2 t)",
                   "status": "after", "headline": True},
    "ppi_judge_only": {"kind": "coverage", "what": "judge-only mean vs the human truth (a lenient judge; beside)",
                       "status": "before", "headline": False},
    "ppi_human_only": {"kind": "coverage", "what": "human-only mean on the labelled items (beside)",
                       "status": "after", "headline": False},
}
"""The judge diagnostics' rows of the calibration table."""

#: intervals conservative at few scenarios, with their documented band 92.5-100 % up to this many
#: scenarios: the DiD's t on G - 1 df at 5; the PPI mean's Bell-McCaffrey df at 5 and 9 (30 %
#: labelled: about 4.5 and 8 labelled items per variant, many scenarios with none or one)
SMALL_G_CONSERVATIVE: dict[str, tuple[int, str]] = {
    "selfpref_pair_cr2_bm": (5, ""), "selfpref_judge_cr2_bm": (5, ""),
    "ppi_cr2_bm": (9, " (30% labelled: Bell-McCaffrey df on few labelled items per scenario)")}
#: data sets per grid point, as a multiple of the calibration's: these estimators are cheap (about
#: 2.5 ms a set for all of them), so their rates are measured with half the Monte-Carlo SE (the
#: CI subset with 1/sqrt(2) of it)
SETS_FACTOR = 4
QUICK_SETS_FACTOR = 2


def sets_for(sets: int, quick: bool = False) -> int:
    """Data sets per model at each grid point for a calibration of ``sets`` per point."""
    return (QUICK_SETS_FACTOR if quick else SETS_FACTOR) * sets


def judge_model(scenarios: int, missing: str, offset: str, planted: bool = True) -> Model:
    """The generating model of one grid point (the failure pattern and offset of
    :func:`workbench.sim.calibrate_grid.apply_pattern`)."""
    base = Model(scenarios=scenarios, variants=VARIANTS, variant_effects=(0.0, 0.3, -0.2, 0.1),
                 judges=(JA, JB, JR), judge_offsets=(PLANTED_LENIENCY, 0.0, -0.2), trials=3, mu=5.5,
                 scenario_sd=0.9, item_sd=0.6, noise_sd=0.7, missing_scenario_sd=0.8, writers=WRITERS,
                 self_preference={JA: PLANTED_BONUS if planted else 0.0},
                 length_slopes={JA: PLANTED_SLOPE if planted else 0.0}, human_rate=HUMAN_RATE)
    return apply_pattern(base, missing, offset)


def _cell_means(tr: dict[str, Any]) -> dict[tuple[str, str], float]:
    return {(c["variant"], c["judge"]): c["mean"] for c in tr["cells"]}


def own_family_truth(model: Model, tr: dict[str, Any], judge: str, reference: str) -> float:
    """The estimand of ``self_preference.judges`` on the score scale: the mean over the judge's
    family's variants of the true judge - reference offset minus the same over the others'."""
    cells = _cell_means(tr)
    fam = model.judge_family(judge)
    d = {v: cells[(v, judge)] - cells[(v, reference)] for v in model.variants if model.writers.get(v)}
    own = [x for v, x in d.items() if model.writers[v] == fam]
    other = [x for v, x in d.items() if model.writers[v] != fam]
    return float(np.mean(own) - np.mean(other))


def did(score: np.ndarray, valid: np.ndarray, ja: int, jb: int, own: np.ndarray,
        confidence: float = 0.95) -> stats.ClusterInference | None:
    """:mod:`workbench.analysis.selfpref`'s difference-in-differences on one data set (shape G, V, T, J):
    d = score_ja - score_jb on items both scored; trials averaged per (scenario, variant);
    variants averaged per (scenario, side) with ``own`` (V,) marking side ``a``; the contrast
    a - b in scenarios holding both; :func:`~workbench.stats.cluster_mean_cr2` over scenarios."""
    both = valid[..., ja] & valid[..., jb]
    d = np.where(both, score[..., ja] - score[..., jb], 0).astype(float)
    n = both.sum(axis=2)  # (G, V)
    with np.errstate(invalid="ignore", divide="ignore"):
        dbar = d.sum(axis=2) / n
    has = n > 0

    def side(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k = (has & mask[None, :]).sum(axis=1)
        s = np.where(has & mask[None, :], dbar, 0.0).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return s / k, k > 0

    a, ha = side(own)
    b, hb = side(~own)
    keep = ha & hb
    if not keep.any():
        return None
    return stats.cluster_mean_cr2((a - b)[keep], np.flatnonzero(keep), confidence)


def length_slope(score: np.ndarray, valid: np.ndarray, log_len: np.ndarray, j: int,
                 confidence: float = 0.95) -> tuple[float, float, float, int] | None:
    """:func:`workbench.analysis.length.answer_slope_records`' pooled fit for judge ``j`` on one data set:
    :func:`~workbench.analysis.length.within_slope` with scenario and variant fixed effects, clustered by
    scenario."""
    g_n, v_n, t_n = log_len.shape
    gi, vi = np.meshgrid(np.arange(g_n), np.arange(v_n), indexing="ij")
    sel = valid[..., j]
    if sel.sum() < 3:
        return None
    y = score[..., j][sel].astype(float)
    x = log_len[sel]
    sc = np.broadcast_to(gi[..., None], sel.shape)[sel]
    vc = np.broadcast_to(vi[..., None], sel.shape)[sel]
    sc = np.unique(sc, return_inverse=True)[1].astype(np.intp)
    vc = np.unique(vc, return_inverse=True)[1].astype(np.intp)
    return within_slope(y, x, [sc, vc], sc, confidence)


def ppi(score: np.ndarray, valid: np.ndarray, hscore: np.ndarray, labelled: np.ndarray, j: int, v: int,
        confidence: float = 0.95) -> tuple[stats.ClusterInference, stats.ClusterInference,
                                           stats.ClusterInference | None]:
    """:mod:`workbench.analysis.human`'s record for judge ``j`` x variant ``v`` on one data set: the PPI
    mean, the judge-only mean and the human-only mean on the labelled items the judge scored."""
    f_sel = valid[:, v, :, j]
    g = np.broadcast_to(np.arange(f_sel.shape[0])[:, None], f_sel.shape)
    f_all = score[:, v, :, j][f_sel].astype(float)
    c_all = g[f_sel]
    lab = f_sel & labelled[:, v]
    y = hscore[:, v][lab].astype(float)
    f = score[:, v, :, j][lab].astype(float)
    c_lab = g[lab]
    pp = stats.ppi_mean_cr2(f_all, c_all, y - f, c_lab, confidence)
    jo = stats.cluster_mean_cr2(f_all, c_all, confidence)
    ho = stats.cluster_mean_cr2(y, c_lab, confidence) if y.size else None
    return pp, jo, ho


def _covers(lo: float | None, hi: float | None, t: float) -> bool | None:
    return None if lo is None or hi is None else bool(lo <= t <= hi)


def _rejects(p: float | None, alpha: float) -> bool | None:
    return None if p is None else bool(p < alpha)


def run_point(scenarios: int, missing: str, offset: str, sets: int, seed: int, confidence: float = 0.95,
              alpha: float = 0.05) -> list[dict[str, Any]]:
    """Every judge diagnostic at one grid point on ``sets`` seeded data sets of each model."""
    planted = judge_model(scenarios, missing, offset, True)
    null = judge_model(scenarios, missing, offset, False)
    tr_p, tr_n = truth(planted), truth(null)
    own_a = np.array([WRITERS[v] == "anthropic" for v in VARIANTS])
    own_b = ~own_a
    ia, ib, ir = planted.judges.index(JA), planted.judges.index(JB), planted.judges.index(JR)
    pair_p = next(t["did"] for t in tr_p["self_preference"] if {t["judge_a"], t["judge_b"]} == {JA, JB})
    pair_n = next(t["did"] for t in tr_n["self_preference"] if {t["judge_a"], t["judge_b"]} == {JA, JB})
    judge_a = own_family_truth(planted, tr_p, JA, JR)
    judge_b = own_family_truth(planted, tr_p, JB, JR)
    slope_a = next(t["slope"] for t in tr_p["length"] if t["judge"] == JA)
    slope_b = next(t["slope"] for t in tr_p["length"] if t["judge"] == JB)
    human = next(t["human_mean"] for t in tr_p["human"] if t["judge"] == JA and t["variant"] == VARIANTS[0])
    truths = {"selfpref_pair_cr2_bm": pair_p, "selfpref_pair_cr2_bm_p": pair_n, "selfpref_pair_power": pair_p,
              "selfpref_judge_cr2_bm": judge_a, "selfpref_judge_cr2_bm_p": judge_b,
              "selfpref_judge_power": judge_a, "length_slope_fe_cluster_t": slope_a,
              "length_slope_fe_cluster_t_p": slope_b, "length_slope_power": slope_a,
              "ppi_cr2_bm": human, "ppi_judge_only": human, "ppi_human_only": human}
    point_seed = stats.derive_seed(seed, "judges", scenarios, missing, offset) % (2**32)
    rng = np.random.default_rng(point_seed)
    dp = draw(planted, rng, sets)
    hp = draw_human(planted, dp, rng)
    dn = draw(null, rng, sets)
    hits: dict[str, list[bool]] = {k: [] for k in METHODS}
    undefined = {k: 0 for k in METHODS}

    def put(k: str, v: bool | None) -> None:
        if v is None:
            undefined[k] += 1
        else:
            hits[k].append(v)

    for i in range(sets):
        s, ok = dp["score"][i], dp["valid"][i]
        r = did(s, ok, ia, ib, own_a, confidence)
        put("selfpref_pair_cr2_bm", None if r is None else _covers(r.ci_low, r.ci_high, pair_p))
        put("selfpref_pair_power", None if r is None else _rejects(r.p_value, alpha))
        r = did(dn["score"][i], dn["valid"][i], ia, ib, own_a, confidence)
        put("selfpref_pair_cr2_bm_p", None if r is None else _rejects(r.p_value, alpha))
        r = did(s, ok, ia, ir, own_a, confidence)
        put("selfpref_judge_cr2_bm", None if r is None else _covers(r.ci_low, r.ci_high, judge_a))
        put("selfpref_judge_power", None if r is None else _rejects(r.p_value, alpha))
        r = did(s, ok, ib, ir, own_b, confidence)
        put("selfpref_judge_cr2_bm_p", None if r is None else _rejects(r.p_value, alpha))
        fit = length_slope(s, ok, dp["log_length"][i], ia, confidence)
        if fit is None:
            put("length_slope_fe_cluster_t", None)
            put("length_slope_power", None)
        else:
            b, se, q, _ = fit
            put("length_slope_fe_cluster_t", _covers(b - q * se, b + q * se, slope_a))
            put("length_slope_power", not (b - q * se <= 0.0 <= b + q * se))
        fit = length_slope(s, ok, dp["log_length"][i], ib, confidence)
        put("length_slope_fe_cluster_t_p", None if fit is None else
            not (fit[0] - fit[2] * fit[1] <= slope_b <= fit[0] + fit[2] * fit[1]))
        pp, jo, ho = ppi(s, ok, hp["score"][i], hp["labelled"][i], ia, 0, confidence)
        put("ppi_cr2_bm", _covers(pp.ci_low, pp.ci_high, human))
        put("ppi_judge_only", _covers(jo.ci_low, jo.ci_high, human))
        put("ppi_human_only", None if ho is None else _covers(ho.ci_low, ho.ci_high, human))
    rows = []
    for k, meta in METHODS.items():
        h = hits[k]
        rate = float(np.mean(h)) if h else None
        mcse = math.sqrt(rate * (1 - rate) / len(h)) if rate is not None else None
        note = f"truth {truths[k]:+.4f}"
        if meta["kind"] == "power":
            note += ("; power at the planted effect (latent +0.5)" if k.startswith("selfpref")
                     else f"; power at the planted effect (latent {PLANTED_SLOPE} per log unit)")
        if undefined[k]:
            note += (f"; {undefined[k]} of {sets} data sets define no interval (fewer than 2 scenarios hold "
                     "labelled items)" if k.startswith("ppi") else f"; {undefined[k]} of {sets} undefined")
        up_to, why = SMALL_G_CONSERVATIVE.get(k, (0, ""))
        row = band_row(scenarios, missing, offset, k, meta, len(h), undefined[k], rate, mcse, note,
                       conservative_up_to=up_to, why_conservative=why)
        rows.append(row)
    return rows


def run(sets: int, seed: int, quick: bool = False, confidence: float = 0.95,
        grid_missing: tuple[str, ...] = (), grid_offset: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Every grid point (or :data:`CI_POINTS` with ``quick``): the judge diagnostics' rows, each
    on :func:`sets_for` data sets per model."""
    miss = grid_missing or GRID_MISSING
    offs = grid_offset or GRID_OFFSET
    points = CI_POINTS if quick else [(g, m, o) for g in GRID_SCENARIOS for m in miss for o in offs]
    rows: list[dict[str, Any]] = []
    for g, m, o in points:
        rows.extend(run_point(g, m, o, sets_for(sets, quick), seed, confidence))
    return rows


__all__ = ["CI_POINTS", "GRID_SCENARIOS", "METHODS", "SETS_FACTOR", "SMALL_G_CONSERVATIVE", "did", "judge_model",
           "length_slope", "own_family_truth", "ppi", "run", "run_point", "sets_for"]
