"""Paired differences: the summary of per-item differences (clustered, with the Wilcoxon p
and the counts per rounded difference).

Part of :mod:`workbench.stats` (import from there); a pure move out of the former
``stats.py``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as _sps

from workbench.stats.base import PairedStats, _check_confidence, _codes, _f, _values
from workbench.stats.cr2 import cluster_mean_cr2
from workbench.stats.means import cluster_bootstrap_mean, clustered_se, mean_se, t_interval

# ---------------------------------------------------------------------------
# Paired differences
# ---------------------------------------------------------------------------




def diff_counts(diffs: ArrayLike) -> dict[str, int]:
    """Return counts per integer difference, keyed by the integer as a string.

    Each difference is rounded to the nearest integer with halves rounded away
    from zero (0.5 -> 1, -0.5 -> -1, 1.5 -> 2); non-integer differences (e.g.
    from averaged scores) are therefore binned to their nearest integer.  Keys
    are like ``"-2"``, ``"0"``, ``"1"``, in increasing numeric order; only
    observed differences appear.

    Parameters
    ----------
    diffs : array_like
        1-D valid differences.

    Returns
    -------
    dict of str to int
        Counts (number of pairs); empty for empty input.
    """
    d = _values(diffs, "diffs")
    r = np.sign(d) * np.floor(np.abs(d) + 0.5)
    keys, counts = np.unique(r, return_counts=True)
    return {str(int(k)): int(v) for k, v in zip(keys, counts, strict=True)}


_WILCOXON_ENUMERATE = 13
"""scipy's ``wilcoxon(method='auto')`` enumerates all 2**n sign flips when the differences
have ties or zeros and n <= 13 (2**13 < 9999, its default resamples): a deterministic exact
permutation test."""


def wilcoxon_p(diffs: ArrayLike) -> float | None:
    """Two-sided Wilcoxon (1945) signed-rank p-value, ``zero_method='wilcox'`` (zero
    differences are discarded): exactly ``scipy.stats.wilcoxon(d, zero_method='wilcox').pvalue``.

    For ties or zeros at n <= 13, scipy's ``method='auto'`` runs an exact permutation test
    over the 2**n sign flips, evaluating the statistic once per flip in Python (about 1 ms
    each: seconds per test, most of a small run's time). The same test is computed here in
    one vectorised step: the ranks of ``|d|`` do not change when signs flip, so the null
    statistic of each flip is a sum of ranks (half-integers: exact in floating point). Only
    the 2**m flips of the m non-zero differences are enumerated: a zero's two signs give the
    same statistic, so every count and the number of flips scale by the same power of two and
    each p-value (a correctly rounded quotient) is the same double. The counts use scipy's
    comparison tolerance (``100 * eps * |observed|``) and its two-sided rule (twice the
    smaller tail, clipped to 1). Every other case is scipy's own computation. None when the
    p-value is not finite.
    """
    d = _values(diffs, "diffs")
    n = int(d.size)
    if n == 0:
        return None
    nonzero = d[d != 0.0]
    m = int(nonzero.size)
    absd = np.abs(nonzero)
    # scipy enumerates exactly when n <= 13 and there are zeros (m < n) or ties
    if m == 0 or n > _WILCOXON_ENUMERATE or not (m < n or np.unique(absd).size < m):
        return _f(_sps.wilcoxon(d, zero_method="wilcox").pvalue)
    ranks = _sps.rankdata(absd, method="average").astype(np.float64)
    observed = float(np.sum((nonzero > 0.0).astype(np.float64) * ranks))
    flips = (np.arange(2 ** m, dtype=np.int64)[:, None] >> np.arange(m, dtype=np.int64)) & 1
    null = flips.astype(np.float64) @ ranks  # the statistic with the signs where the bit is 1 positive
    gamma = abs(np.finfo(np.float64).eps * 100 * observed)
    total = float(2 ** m)
    p_less = np.count_nonzero(null <= observed + gamma) / total
    p_greater = np.count_nonzero(null >= observed - gamma) / total
    return _f(min(max(min(p_less, p_greater) * 2.0, 0.0), 1.0))


def paired_summary(
    diffs: ArrayLike,
    clusters: ArrayLike,
    confidence: float = 0.95,
    resamples: int = 10000,
    seed: int = 0,
    bootstrap: bool = True,
) -> PairedStats:
    """Return :class:`PairedStats` for paired differences (mean offset with error bars).

    Paired t interval (Student 1908: se = sd/sqrt(n), df = n - 1), clustered t
    interval (CR1 :func:`clustered_se`, df = G - 1, its p ``p_clustered``), the CR2
    interval and test with Bell-McCaffrey df (:func:`cluster_mean_cr2`, ``*_cr2``), cluster bootstrap
    percentile interval (:func:`cluster_bootstrap_mean`), Wilcoxon (1945)
    signed-rank two-sided p-value (``scipy.stats.wilcoxon``,
    ``zero_method='wilcox'``: zero differences are discarded) and
    :func:`diff_counts`.

    Parameters
    ----------
    diffs : array_like
        1-D valid paired differences (e.g. score_a - score_b per row).
    clusters : array_like
        Cluster label per pair.
    confidence : float
        Two-sided confidence level.
    resamples : int
        Bootstrap resamples.
    seed : int
        Bootstrap seed.
    bootstrap : bool
        False: leave ``boot_low``/``boot_high`` None (computed jointly by the caller).

    Returns
    -------
    PairedStats
        Fields in value units; undefined fields are None.
    """
    c = _check_confidence(confidence)
    d = _values(diffs, "diffs")
    codes, g = _codes(clusters, d.size)
    n = int(d.size)
    mean, se = mean_se(d)
    df = n - 1 if n >= 2 else None
    low, high = t_interval(mean, se, df, c)
    se_cl = clustered_se(d, codes)
    df_cl = g - 1 if g >= 2 else None
    low_cl, high_cl = t_interval(mean, se_cl, df_cl, c)
    boot_low, boot_high = cluster_bootstrap_mean(d, codes, resamples, seed, c) if bootstrap else (None, None)
    wp: float | None = None
    if n >= 1 and np.any(d != 0.0):
        wp = wilcoxon_p(d)
    p_cl = (float(2.0 * _sps.t.sf(abs(mean / se_cl), df_cl))
            if mean is not None and se_cl is not None and se_cl > 0 and df_cl is not None else None)
    cr2 = cluster_mean_cr2(d, codes, c)
    return PairedStats(
        mean=mean,
        n=n,
        clusters=int(g),
        se=se,
        df=df,
        ci_low=low,
        ci_high=high,
        se_clustered=se_cl,
        df_clustered=df_cl,
        ci_low_clustered=low_cl,
        ci_high_clustered=high_cl,
        boot_low=boot_low,
        boot_high=boot_high,
        wilcoxon_p=wp,
        diff_counts=diff_counts(d),
        p_clustered=p_cl,
        se_cr2=cr2.se,
        df_cr2=cr2.df,
        ci_low_cr2=cr2.ci_low,
        ci_high_cr2=cr2.ci_high,
        p_cr2=cr2.p_value,
    )
