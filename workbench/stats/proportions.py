"""Clustered proportions and design effects (the census's missing rates).

Part of :mod:`workbench.stats` (import from there); a pure move out of the former
``stats.py``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as _sps

from workbench.stats.base import _check_confidence, _norm_ppf, _t_ppf, _values

# ---------------------------------------------------------------------------
# Clustered proportions and design effects
# ---------------------------------------------------------------------------


def clustered_proportion(
    successes: ArrayLike, totals: ArrayLike, confidence: float = 0.95,
    design_effect_fallback: float | None = None,
) -> tuple[float | None, float | None, float | None]:
    """Return (low, high, effective n) for a proportion whose trials come in clusters.

    Korn & Graubard (1998), "Confidence intervals for proportions with small expected number
    of positive counts estimated from survey data", Survey Methodology 24:193-201: the Wilson
    score interval (:func:`wilson_interval`, continuous n) on the effective sample size
    ``n_eff = n / deff`` with ``deff = v_CR1 / (p(1 - p) / n)``, ``v_CR1`` the CR1
    cluster-robust variance of the proportion (:func:`clustered_se` of the 0/1 outcomes,
    computed here from the per-cluster counts; floored at 1/m, m = n/G, and not truncated at
    1, which the calibration showed over-covers), and the degrees-of-freedom correction
    ``n_eff * (z / t_{G-1})^2``.  With p = 0 or 1 the cell's rows carry no information on its
    design effect: ``design_effect_fallback`` (the pooled design effect of comparable cells,
    :func:`pooled_design_effect`) is used, capped at its largest possible value
    ``sum(n_g^2) / n`` (every cluster all-or-none); None: 1, only the df correction applies.
    Without the fallback a cell none of whose clusters failed gets the interval of
    independent rows, which cannot cover when failures hit whole clusters (calibration:
    89 % at 9 scenarios under whole-block failures).

    Parameters
    ----------
    successes, totals : array_like
        Per-cluster counts (one entry per scenario), 0 <= successes <= totals.
    confidence : float
        Two-sided confidence level in (0, 1).
    design_effect_fallback : float, optional
        The design effect to assume when p is 0 or 1 (>= 1 is used as given up to the cap;
        below 1 is read as 1).

    Returns
    -------
    tuple
        (low, high) in [0, 1] and the effective n; all None when there are no trials; the
        plain Wilson interval (n_eff = n) when there is a single cluster (no df left: the
        caller should treat the interval as unsupported; see ``min_clusters``).
    """
    r = clustered_proportion_detail(successes, totals, confidence, design_effect_fallback)
    return r.ci_low, r.ci_high, r.n_eff


@dataclass(frozen=True)
class ClusteredProportion:
    """:func:`clustered_proportion_detail`'s result: the interval, its effective n, the design
    effect it used and where that came from (``cell``, ``pooled`` or ``none``: 1)."""

    ci_low: float | None
    ci_high: float | None
    n_eff: float | None
    design_effect: float | None
    design_effect_from: str | None


def _cluster_counts(successes: ArrayLike, totals: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Per-cluster (successes, totals), checked (0 <= successes <= totals, same length), the
    clusters with no trials left out."""
    s = _values(successes, "successes")
    t = _values(totals, "totals")
    if s.shape != t.shape or np.any(s < 0) or np.any(s > t):
        raise ValueError("need 0 <= successes <= totals per cluster, same length")
    keep = t > 0
    return s[keep], t[keep]


def clustered_proportion_detail(
    successes: ArrayLike, totals: ArrayLike, confidence: float = 0.95,
    design_effect_fallback: float | None = None,
) -> ClusteredProportion:
    """:func:`clustered_proportion` with the design effect it used and its source."""
    c = _check_confidence(confidence)
    s, t = _cluster_counts(successes, totals)
    n = float(t.sum())
    g = int(s.size)
    if n == 0:
        return ClusteredProportion(None, None, None, None, None)
    x = float(s.sum())
    p = x / n
    if g < 2:
        lo, hi = _wilson_real(x, n, c)
        return ClusteredProportion(lo, hi, n, 1.0, "none")
    z = _norm_ppf(1.0 - (1.0 - c) / 2.0)
    tq = _t_ppf(1.0 - (1.0 - c) / 2.0, g - 1)
    # not truncated at 1 (truncation over-covered: 99-100 % at 3-5 scenarios in the
    # calibration); floored at 1/m, m the mean cluster size (ICC >= -1/(m - 1))
    own = proportion_design_effect(s, t)
    deff, src = 1.0, "none"
    if own is not None:
        deff, src = own, "cell"
    elif design_effect_fallback is not None and math.isfinite(design_effect_fallback):
        deff = min(max(1.0, float(design_effect_fallback)), float(np.sum(t * t)) / n)
        src = "pooled" if deff > 1.0 else "none"
    n_eff = n / deff * (z / tq) ** 2
    lo, hi = _wilson_real(p * n_eff, n_eff, c)
    return ClusteredProportion(lo, hi, float(n_eff), float(deff), src)


def proportion_design_effect(successes: ArrayLike, totals: ArrayLike) -> float | None:
    """The design effect :func:`clustered_proportion` reads from per-cluster counts.

    ``v_CR1 / (p(1 - p) / n)``, floored at G/n; None when p is 0 or 1, fewer than two
    clusters hold trials, or there are no trials (the rows carry no information on it).
    """
    s, t = _cluster_counts(successes, totals)
    n = float(t.sum())
    g = int(s.size)
    if n == 0 or g < 2:
        return None
    p = float(s.sum()) / n
    if not 0.0 < p < 1.0:
        return None
    resid = s - p * t
    var_cr1 = g / (g - 1) * float(np.sum(resid * resid)) / (n * n)
    return max(g / n, var_cr1 / (p * (1.0 - p) / n))


def pooled_design_effect(cells: Iterable[tuple[ArrayLike, ArrayLike]]) -> float | None:
    """The judgment-weighted mean design effect of the cells that show one.

    ``cells``: (successes, totals) per-cluster counts per cell. Each cell with 0 < p < 1 and
    at least two clusters gives :func:`proportion_design_effect`; the mean weighs it by the
    cell's trials. None when no cell shows one. It is what :func:`clustered_proportion`
    assumes for a cell whose rate is 0 or 1: the clustering its neighbours show.
    """
    num = den = 0.0
    for s, t in cells:
        d = proportion_design_effect(s, t)
        if d is None:
            continue
        w = float(np.sum(_values(t, "totals")))
        num += w * d
        den += w
    return num / den if den > 0 else None


def _wilson_real(x: float, n: float, c: float) -> tuple[float, float]:
    """Wilson interval for a (possibly non-integer) count x of n."""
    p = x / n
    z = float(_sps.norm.ppf(1.0 - (1.0 - c) / 2.0))
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denom
    half = z / denom * math.sqrt(max(p * (1.0 - p) / n + z2 / (4.0 * n * n), 0.0))
    low = 0.0 if p <= 0.0 else max(0.0, centre - half)
    high = 1.0 if p >= 1.0 else min(1.0, centre + half)
    return float(low), float(high)
