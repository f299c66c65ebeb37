"""pass^k: the chance that k trials of an item all pass, with its clustered Wilson interval.

Part of :mod:`workbench.stats` (import from there); a pure move out of the former
``stats.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from workbench.stats.base import _check_confidence, _codes, _flush, _norm_ppf, _t_ppf
from workbench.stats.cr2 import cluster_mean_cr2
from workbench.stats.means import _clustered_se_codes, t_interval
from workbench.stats.proportions import _wilson_real

# ---------------------------------------------------------------------------
# pass^k: the chance that k trials of an item all pass, with its interval
# ---------------------------------------------------------------------------


def pass_hat_k(passes: ArrayLike, outcomes: ArrayLike, k: int) -> NDArray[np.float64]:
    """Per-item unbiased pass^k: C(c, k) / C(n, k) for an item with c passes in n outcomes.

    The probability that k outcomes drawn without replacement from the item's n all pass
    (Chen et al. 2021, "Evaluating large language models trained on code", the unbiased
    pass@k estimator's complement form; Yao et al. 2024, tau-bench pass^k).  Items need
    n >= k (the caller excludes the others); returns one value in [0, 1] per item.
    """
    c = np.asarray(passes, dtype=np.int64)
    n = np.asarray(outcomes, dtype=np.int64)
    if k < 1 or np.any(n < k) or np.any(c < 0) or np.any(c > n):
        raise ValueError("need k >= 1 and 0 <= passes <= outcomes, outcomes >= k")
    num = np.array([math.comb(int(ci), k) for ci in c], dtype=float)
    den = np.array([math.comb(int(ni), k) for ni in n], dtype=float)
    return num / den if c.size else np.zeros(0)


@dataclass(frozen=True)
class PassKInterval:
    """pass^k over items with its interval (:func:`pass_k_interval`).

    Attributes
    ----------
    estimate : float or None
        Mean over items of the unbiased per-item pass^k (:func:`pass_hat_k`); None without items.
    ci_low, ci_high : float or None
        Interval in [0, 1]; None when undefined (fewer than 2 clusters).
    method : str
        The interval's name (one of :data:`PASS_K_METHODS` or ``cluster_t_clipped``).
    items, clusters : int
        Items (with at least k outcomes) and distinct clusters.
    """

    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    method: str
    items: int = 0
    clusters: int = 0


#: the interval headlined for pass^k (chosen by simulation: benchmarks/small_sample_size.py passk)
PASS_K_METHOD = "wilson_design_effect_cr2_4bm"
#: the multiple of the Bell-McCaffrey df at which ``wilson_design_effect_cr2_4bm`` takes its
#: quantile (chosen by simulation over 14 generating settings, benchmarks/README.md)
PASS_K_DF_MULTIPLE = 4.0
#: every interval :func:`pass_k_interval` computes; ``cluster_t_clipped`` is the one before issue 24
PASS_K_METHODS = ("wilson_design_effect_cr2_4bm", "wilson_design_effect_t", "wilson_design_effect_cr2_bm",
                  "cluster_cr2_bm_clipped", "scenario_means_t_clipped")


def pass_k_interval(passes: ArrayLike, outcomes: ArrayLike, clusters: ArrayLike, k: int,
                    confidence: float = 0.95, method: str = PASS_K_METHOD) -> PassKInterval:
    """Return pass^k over items (each with c passes in n >= k outcomes) and its interval.

    The estimate is the mean over items of C(c, k) / C(n, k) (:func:`pass_hat_k`). Intervals,
    clusters (e.g. scenarios) the unit of independence:

    * ``wilson_design_effect_cr2_4bm`` (the default): the Wilson score interval on the effective
      number of Bernoulli outcomes n_eff = p(1 - p) / v_CR2 (v_CR2 the CR2 variance of the mean,
      :func:`cluster_mean_cr2`), capped at the outcomes / k (no more information than the
      outcomes themselves hold; the cap is also n_eff when p is 0 or 1 or v_CR2 is 0), with the
      quantile of t at 4 x the Bell-McCaffrey df in place of z. Korn & Graubard's quantile at the
      design df itself (the two methods below) is conservative at few clusters (99.5-100 %
      coverage at 3 scenarios; Dean & Pagano 2015 report the same for clustered surveys), and z
      under-covers (84-89 %): the multiple 4 (:data:`PASS_K_DF_MULTIPLE`) was chosen by
      simulation and checked on held-out settings (benchmarks/README.md, "pass^k").
    * ``wilson_design_effect_t`` (the default before): the item values lie in [0, 1] with mean p, so
      p(1 - p) / m bounds their i.i.d. variance (m items); as :func:`clustered_proportion`
      (Korn & Graubard 1998), the Wilson interval on the effective number of items
      m_eff = m / deff * (z / t_{G-1})^2, deff = v_CR1 / (p(1 - p) / m) floored at G/m, and
      deff = 1 when p is 0 or 1. Unlike a t interval it does not collapse to a point when
      every cluster shows the same value (3 of 3 scenarios all passing).
    * ``wilson_design_effect_cr2_bm``: the same with the CR2 variance and Bell-McCaffrey df
      (:func:`cluster_mean_cr2`) in place of CR1 and G - 1.
    * ``cluster_cr2_bm_clipped``: the CR2 t interval, clipped to [0, 1].
    * ``scenario_means_t_clipped``: a t(G-1) interval on the clusters' mean item values,
      centred on their mean, clipped to [0, 1].
    * ``cluster_t_clipped``: the CR1 t(G-1) interval clipped to [0, 1] (before issue 24: it
      covered 84 % at 3 scenarios).

    Parameters
    ----------
    passes, outcomes : array_like
        Per item: passes c and outcomes n (0 <= c <= n, n >= k).
    clusters : array_like
        Cluster label per item.
    k : int
        k >= 1.
    confidence : float
        Two-sided confidence level.
    method : str
        One of :data:`PASS_K_METHODS` or ``cluster_t_clipped``.
    """
    c = _check_confidence(confidence)
    if method not in (*PASS_K_METHODS, "cluster_t_clipped"):
        raise ValueError(f"unknown pass^k interval method {method!r}")
    vals = pass_hat_k(passes, outcomes, k)
    codes, g = _codes(clusters, vals.size)
    m = int(vals.size)
    if m == 0:
        return PassKInterval(None, None, None, method, 0, 0)
    est = float(vals.mean())
    if g < 2:
        return PassKInterval(est, None, None, method, m, g)
    lo: float | None
    hi: float | None
    if method == "cluster_t_clipped":
        lo, hi = t_interval(est, _clustered_se_codes(vals, codes, g), g - 1, c)
    elif method == "cluster_cr2_bm_clipped":
        r = cluster_mean_cr2(vals, codes, c)
        lo, hi = r.ci_low, r.ci_high
    elif method == "scenario_means_t_clipped":
        means = np.bincount(codes, weights=vals, minlength=g) / np.bincount(codes, minlength=g)
        centre = float(means.mean())
        lo, hi = t_interval(centre, _flush(float(np.std(means, ddof=1)) / math.sqrt(g), means), g - 1, c)
    elif method == "wilson_design_effect_cr2_4bm":
        r = cluster_mean_cr2(vals, codes, c)
        if r.df is None:
            return PassKInterval(est, None, None, method, m, g)
        cap = float(np.asarray(outcomes, dtype=np.int64).sum()) / k
        v = 0.0 if r.se is None else r.se * r.se
        n_eff = cap if (est <= 0.0 or est >= 1.0 or v <= 0.0) else min(cap, est * (1.0 - est) / v)
        crit = _t_ppf(1.0 - (1.0 - c) / 2.0, PASS_K_DF_MULTIPLE * r.df)
        z = _norm_ppf(1.0 - (1.0 - c) / 2.0)
        # the Wilson interval at quantile crit on n_eff is the one at z on n_eff (z / crit)^2
        lo, hi = _wilson_real(est * n_eff * (z / crit) ** 2, n_eff * (z / crit) ** 2, c)
    else:
        z = _norm_ppf(1.0 - (1.0 - c) / 2.0)
        if method == "wilson_design_effect_t":
            var = _clustered_se_codes(vals, codes, g)
            df: float | None = g - 1
        else:
            r = cluster_mean_cr2(vals, codes, c)
            var, df = r.se, r.df
        if var is None or df is None:
            return PassKInterval(est, None, None, method, m, g)
        deff = 1.0
        if 0.0 < est < 1.0:
            deff = max(g / m, var * var / (est * (1.0 - est) / m))
        n_eff = m / deff * (z / _t_ppf(1.0 - (1.0 - c) / 2.0, df)) ** 2
        lo, hi = _wilson_real(est * n_eff, n_eff, c)
    if lo is None or hi is None:
        return PassKInterval(est, None, None, method, m, g)
    return PassKInterval(est, max(0.0, lo), min(1.0, hi), method, m, g)
