"""Means and proportions with their standard errors: Wilson, t, clustered (CR1 and the CR2
sums), the cluster bootstrap of a mean, the ICC and design effect, and the per-cell summary.

Part of :mod:`workbench.stats` (import from there); a pure move out of the former
``stats.py``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as _sps

from workbench.stats.base import (
    CellStats,
    _check_confidence,
    _check_resamples,
    _chunks,
    _codes,
    _flush,
    _percentile_interval,
    _t_ppf,
    _values,
)

# ---------------------------------------------------------------------------
# Proportions, means, standard errors
# ---------------------------------------------------------------------------




def wilson_interval(
    successes: int, n: int, confidence: float = 0.95
) -> tuple[float | None, float | None]:
    """Return the Wilson score interval (low, high) for a binomial proportion.

    Wilson (1927), "Probable inference, the law of succession, and statistical
    inference", JASA 22:209-212.  With p = successes/n and z the standard-normal
    quantile 1 - (1 - confidence)/2::

        centre = (p + z^2/(2n)) / (1 + z^2/n)
        half   = z / (1 + z^2/n) * sqrt(p(1-p)/n + z^2/(4n^2))

    Parameters
    ----------
    successes : int
        Number of successes, 0 <= successes <= n.
    n : int
        Number of trials.
    confidence : float
        Two-sided confidence level in (0, 1).

    Returns
    -------
    tuple of (float or None, float or None)
        Interval bounds as proportions in [0, 1]; (None, None) when n == 0.
    """
    c = _check_confidence(confidence)
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return None, None
    p = successes / n
    z = float(_sps.norm.ppf(1.0 - (1.0 - c) / 2.0))
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denom
    half = z / denom * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return float(low), float(high)


def mean_se(values: ArrayLike) -> tuple[float | None, float | None]:
    """Return (mean, naive standard error) of the values, in value units.

    The standard error is the sample standard deviation (ddof=1) divided by
    sqrt(n) -- the textbook i.i.d. standard error of the mean.

    Parameters
    ----------
    values : array_like
        1-D valid values (NaN raises ValueError).

    Returns
    -------
    tuple of (float or None, float or None)
        mean is None when n == 0; se is None when n < 2.
    """
    x = _values(values)
    n = x.size
    if n == 0:
        return None, None
    m = float(np.mean(x))
    if n < 2:
        return m, None
    return m, float(np.std(x, ddof=1) / math.sqrt(n))


def clustered_se(values: ArrayLike, clusters: ArrayLike) -> float | None:
    """Return the CR1 cluster-robust standard error of the mean, in value units.

    Liang & Zeger (1986) sandwich estimator for the intercept-only OLS model
    y = b0 + e, with the CR1 small-sample factor G/(G-1) * (N-1)/(N-K), K = 1 --
    identical to statsmodels ``OLS(y, ones).fit(cov_type='cluster')``::

        se^2 = G/(G-1) * (N-1)/(N-1) * sum_g (sum_{i in g} (y_i - ybar))^2 / N^2

    Parameters
    ----------
    values : array_like
        1-D valid values.
    clusters : array_like
        Cluster label per value (any hashable type).

    Returns
    -------
    float or None
        None when the number of clusters G < 2 or n < 2.
    """
    x = _values(values)
    codes, g = _codes(clusters, x.size)
    return _clustered_se_codes(x, codes, g)


def _clustered_se_codes(x: NDArray[np.float64], codes: NDArray[np.intp], g: int) -> float | None:
    """:func:`clustered_se` on checked values and cluster codes 0..g-1."""
    n = x.size
    if n < 2 or g < 2:
        return None
    return _cr1_from_sums(_resid_sums(x, codes, g), n, g, x)


def _resid_sums(x: NDArray[np.float64], codes: NDArray[np.intp], g: int) -> NDArray[np.float64]:
    """S_g: the per-cluster sums of the residuals x - mean (the sufficient statistic of the
    intercept-only model's CR1 and CR2 meat)."""
    return np.bincount(codes, weights=x - x.mean(), minlength=g)


def _cr1_from_sums(sums: NDArray[np.float64], n: int, g: int, x: NDArray[np.float64]) -> float:
    """CR1 se of the mean from the residual sums S_g (n >= 2, g >= 2)."""
    k = 1
    factor = g / (g - 1) * (n - 1) / (n - k)
    var = factor * float(np.sum(sums * sums)) / (n * n)
    return _flush(math.sqrt(max(var, 0.0)), x)


def cr2_mean_from_sums(counts: ArrayLike, sums: ArrayLike) -> tuple[float, float] | None:
    """CR2 variance and Bell-McCaffrey df of a mean from per-cluster counts and residual sums.

    Closed forms for the intercept-only model y = b0 + e (X = 1, H = J / n; Bell & McCaffrey
    2002, Pustejovsky & Tipton 2018 eq. 5 and Theorem 2 with Phi = I), in terms of the
    cluster shares pi_g = n_g / n and the residual sums S_g = sum_{i in g} (y_i - ybar):

    * H_gg = J_{n_g} / n has the eigenvalue pi_g on 1_g and 0 elsewhere, so
      A_g = (I - H_gg)^{-1/2} scales 1_g by 1 / sqrt(1 - pi_g) and
      X_g' A_g e_g = S_g / sqrt(1 - pi_g)::

          var = sum_g S_g^2 / (n^2 (1 - pi_g))

    * p_g = a_g 1_g with a_g = 1 / (n sqrt(1 - pi_g)), q_g = (I - J / n) p_g, so
      q_g'q_h = a_g a_h (delta_gh n_g - n_g n_h / n): sum_g q_g'q_g = 1 / n and, with
      w_g = pi_g^2 / (1 - pi_g), sum_{g,h} (q_g'q_h)^2 = (sum_g pi_g^2 + sum_{g != h} w_g w_h) / n^2::

          df = 1 / (sum_g pi_g^2 + (sum_g w_g)^2 - sum_g w_g^2)

      (G - 1 with equal clusters; it depends on the counts only, not on the residuals).

    O(G) from the sufficient statistics; ``counts`` are the n_g > 0 of the G clusters and
    ``sums`` their S_g. None when G < 2 (a cluster holding every value: 1 - pi_g = 0).
    """
    c = np.asarray(counts, dtype=np.float64)
    s = np.asarray(sums, dtype=np.float64)
    if c.size < 2:
        return None
    n = float(c.sum())
    pi = c / n
    one_minus = 1.0 - pi
    if np.any(one_minus <= 0.0):
        return None
    sn = s / n
    var = float(np.sum(sn * sn / one_minus))
    w = pi * pi / one_minus
    sw = float(w.sum())
    den = float(pi @ pi) + max(sw * sw - float(w @ w), 0.0)
    return var, 1.0 / den


def t_interval(
    estimate: float | None, se: float | None, df: float | None, confidence: float = 0.95
) -> tuple[float | None, float | None]:
    """Return the t confidence interval estimate -/+ t_{1-alpha/2, df} * se.

    Student (1908) t interval using ``scipy.stats.t.ppf`` for the critical value.

    Parameters
    ----------
    estimate : float or None
        Point estimate (value units).
    se : float or None
        Its standard error (value units).
    df : float or None
        Degrees of freedom.
    confidence : float
        Two-sided confidence level in (0, 1).

    Returns
    -------
    tuple of (float or None, float or None)
        (low, high) in value units; (None, None) when estimate or se is None,
        df is None or df < 1.
    """
    c = _check_confidence(confidence)
    if estimate is None or se is None or df is None or df < 1:
        return None, None
    if se < 0:
        raise ValueError(f"se must be >= 0, got {se}")
    tcrit = _t_ppf(1.0 - (1.0 - c) / 2.0, df)
    return float(estimate - tcrit * se), float(estimate + tcrit * se)

# ---------------------------------------------------------------------------
# Clustered summaries
# ---------------------------------------------------------------------------




def cluster_bootstrap_mean(
    values: ArrayLike,
    clusters: ArrayLike,
    resamples: int = 10000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float | None, float | None]:
    """Return the cluster bootstrap percentile interval (low, high) of the mean.

    Cluster (block) bootstrap, Field & Welsh (2007), "Bootstrapping clustered
    data", JRSS-B 69:369-390; percentile interval (Efron 1979).  Each resample
    draws G whole clusters with replacement (``rng.integers(G, size=(B, G))``)
    and the resampled mean is sum of drawn cluster sums / sum of drawn cluster
    counts.  Quantiles use numpy's default linear interpolation.

    Parameters
    ----------
    values : array_like
        1-D valid values.
    clusters : array_like
        Cluster label per value.
    resamples : int
        Number of bootstrap resamples B.
    seed : int
        Seed for ``numpy.random.default_rng``.
    confidence : float
        Two-sided confidence level in (0, 1).

    Returns
    -------
    tuple of (float or None, float or None)
        Bounds in value units; (None, None) when G < 2.
    """
    c = _check_confidence(confidence)
    b = _check_resamples(resamples)
    x = _values(values)
    codes, g = _codes(clusters, x.size)
    if g < 2:
        return None, None
    sums = np.bincount(codes, weights=x, minlength=g)
    counts = np.bincount(codes, minlength=g).astype(float)
    rng = np.random.default_rng(seed)
    out = np.empty(b, dtype=float)
    pos = 0
    for size in _chunks(b, g):
        idx = rng.integers(g, size=(size, g))
        out[pos : pos + size] = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
        pos += size
    return _percentile_interval(out, c)


def icc_oneway(values: ArrayLike, clusters: ArrayLike) -> float | None:
    """Return the one-way ANOVA intraclass correlation ICC(1) (dimensionless).

    ICC(1) = (MSB - MSW) / (MSB + (n0 - 1) * MSW) with the unbalanced group-size
    correction n0 = (N - sum_g n_g^2 / N) / (G - 1) (Donner 1986, "A review of
    inference procedures for the intraclass correlation coefficient in the
    one-way random effects model", Int. Stat. Rev. 54:67-82).
    MSB = sum_g n_g (ybar_g - ybar)^2 / (G - 1), MSW = sum (y - ybar_g)^2 / (N - G).

    Parameters
    ----------
    values : array_like
        1-D valid values.
    clusters : array_like
        Cluster label per value.

    Returns
    -------
    float or None
        The estimate, returned as is (it may be negative); None when G < 2,
        N <= G, or MSB and MSW are both 0.
    """
    x = _values(values)
    codes, g = _codes(clusters, x.size)
    return _icc_codes(x, codes, g)


def _icc_codes(x: NDArray[np.float64], codes: NDArray[np.intp], g: int) -> float | None:
    """:func:`icc_oneway` on checked values and cluster codes 0..g-1."""
    n = x.size
    if g < 2 or n <= g:
        return None
    counts = np.bincount(codes, minlength=g).astype(float)
    sums = np.bincount(codes, weights=x, minlength=g)
    gmeans = sums / counts
    grand = float(x.mean())
    ssb = float(np.sum(counts * (gmeans - grand) ** 2))
    ssw = float(np.sum((x - gmeans[codes]) ** 2))
    msb = ssb / (g - 1)
    msw = ssw / (n - g)
    if msb == 0.0 and msw == 0.0:
        return None
    n0 = (n - float(np.sum(counts * counts)) / n) / (g - 1)
    denom = msb + (n0 - 1.0) * msw
    if denom == 0.0:
        return None
    return float((msb - msw) / denom)


def design_effect(icc: float | None, cluster_sizes: ArrayLike) -> float | None:
    """Return the Kish design effect 1 + (m - 1) * icc (dimensionless variance ratio).

    Kish (1965), *Survey Sampling*; for unequal cluster sizes m is the
    size-weighted mean cluster size m = sum_g n_g^2 / N.

    Parameters
    ----------
    icc : float or None
        Intraclass correlation (e.g. from :func:`icc_oneway`).
    cluster_sizes : array_like
        Number of values per cluster n_g (positive integers).

    Returns
    -------
    float or None
        None when icc is None or there are no values (N == 0).
    """
    sizes = _values(cluster_sizes, "cluster_sizes")
    if np.any(sizes < 0):
        raise ValueError("cluster_sizes must be non-negative")
    if icc is None:
        return None
    n = float(sizes.sum())
    if n == 0.0:
        return None
    m = float(np.sum(sizes * sizes)) / n
    return float(1.0 + (m - 1.0) * icc)


def cell_summary(
    values: ArrayLike,
    clusters: ArrayLike,
    confidence: float = 0.95,
    resamples: int = 10000,
    seed: int = 0,
    bootstrap: bool = True,
) -> CellStats:
    """Return a :class:`CellStats` summary (mean, valid n, naive and clustered error bars).

    Combines :func:`mean_se`, :func:`clustered_se` (CR1, Liang & Zeger 1986),
    :func:`t_interval` with df = G - 1, the CR2 standard error with Bell-McCaffrey df
    (:func:`cr2_mean_from_sums` on the same residual sums: ``se_cr2``, ``df_cr2``,
    ``ci_low_cr2``/``ci_high_cr2``, the numbers of :func:`cluster_mean_cr2`),
    :func:`cluster_bootstrap_mean`, :func:`icc_oneway` (Donner 1986) and
    :func:`design_effect` (Kish 1965).

    Parameters
    ----------
    values : array_like
        1-D valid values.
    clusters : array_like
        Cluster label per value.
    confidence : float
        Two-sided confidence level for both intervals.
    resamples : int
        Bootstrap resamples.
    seed : int
        Bootstrap seed.
    bootstrap : bool
        False: leave ``boot_low``/``boot_high`` None (the caller computes them jointly with
        other cells, :func:`joint_bootstrap_means`).

    Returns
    -------
    CellStats
        Fields in value units; undefined fields are None (see CellStats).
    """
    c = _check_confidence(confidence)
    x = _values(values)
    codes, g = _codes(clusters, x.size)
    mean, se = mean_se(x)
    sizes = np.bincount(codes, minlength=g) if g > 0 else None
    se_cl, cr2 = _cell_clustered(x, codes, g, sizes, mean, c)
    ci_low, ci_high = t_interval(mean, se_cl, g - 1, c)
    boot_low, boot_high = cluster_bootstrap_mean(x, codes, resamples, seed, c) if bootstrap else (None, None)
    icc = icc_oneway(x, codes)
    deff = design_effect(icc, sizes) if sizes is not None else None
    return CellStats(
        mean=mean,
        n=int(x.size),
        clusters=int(g),
        se=se,
        se_clustered=se_cl,
        ci_low=ci_low,
        ci_high=ci_high,
        boot_low=boot_low,
        boot_high=boot_high,
        icc=icc,
        design_effect=deff,
        **cr2,
    )


_NO_CR2: dict[str, float | None] = {"se_cr2": None, "df_cr2": None, "ci_low_cr2": None, "ci_high_cr2": None}


def _cell_clustered(x: NDArray[np.float64], codes: NDArray[np.intp], g: int, sizes: NDArray[np.intp] | None,
                    mean: float | None, confidence: float) -> tuple[float | None, dict[str, float | None]]:
    """A cell's CR1 se and its CR2 fields (:class:`CellStats`) from one pass over the values:
    the residual sums S_g feed both (:func:`cr2_mean_from_sums`). The CR2 se is zero exactly
    when the CR1 se is (flushed as floating-point noise: the same degenerate designs)."""
    n = x.size
    if n < 2 or g < 2 or sizes is None or mean is None:
        return None, dict(_NO_CR2)
    sums = _resid_sums(x, codes, g)
    se_cl = _cr1_from_sums(sums, n, g, x)
    var_df = cr2_mean_from_sums(sizes, sums)
    if var_df is None:  # pragma: no cover - g >= 2 dense clusters each hold a value
        return se_cl, dict(_NO_CR2)
    var, df = var_df
    se2 = 0.0 if se_cl == 0.0 else math.sqrt(max(var, 0.0))
    df = max(df, 1.0)
    lo, hi = t_interval(mean, se2, df, confidence)
    return se_cl, {"se_cr2": se2, "df_cr2": df, "ci_low_cr2": lo, "ci_high_cr2": hi}


def cell_summary_sorted(values: ArrayLike, codes: ArrayLike, confidence: float = 0.95) -> CellStats:
    """:func:`cell_summary` (``bootstrap=False``) for values grouped by cluster: ``codes``
    are integer cluster codes in non-decreasing order (values sorted by cluster).

    The same numbers as ``cell_summary(values, codes, confidence, bootstrap=False)``, bit for
    bit (the same dense cluster codes, the same operations on the same arrays), without
    coding the labels three times: the scorecard calls it once per cell on a contiguous
    slice of its rows sorted by (cell, scenario code, value).
    """
    c = _check_confidence(confidence)
    x = _values(values)
    k = np.asarray(codes)
    if k.ndim != 1 or k.shape[0] != x.size or k.dtype.kind not in "iu":
        raise ValueError(f"codes must be 1-D integers of length {x.size}")
    if x.size and np.any(k[1:] < k[:-1]):
        raise ValueError("codes must be sorted (non-decreasing)")
    if x.size:
        dense = np.cumsum(np.r_[False, k[1:] != k[:-1]], dtype=np.intp)
        g = int(dense[-1]) + 1
    else:
        dense, g = np.zeros(0, dtype=np.intp), 0
    mean, se = mean_se(x)
    sizes = np.bincount(dense, minlength=g) if g > 0 else None
    se_cl, cr2 = _cell_clustered(x, dense, g, sizes, mean, c)
    ci_low, ci_high = t_interval(mean, se_cl, g - 1, c)
    icc = _icc_codes(x, dense, g)
    deff = design_effect(icc, sizes) if sizes is not None else None
    return CellStats(mean=mean, n=int(x.size), clusters=int(g), se=se, se_clustered=se_cl,
                     ci_low=ci_low, ci_high=ci_high, boot_low=None, boot_high=None, icc=icc,
                     design_effect=deff, **cr2)
