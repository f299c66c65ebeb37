"""Contingency tables: the chi-square test by Monte-Carlo, Fisher's exact 2x2 test, and the
leave-one-cluster-out difference.

Part of :mod:`workbench.stats` (import from there); a pure move out of the former
``stats.py``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as _sps

from workbench.stats.base import TestResult, _check_resamples, _chunks, _f
from workbench.stats.differences import _shared_codes

# ---------------------------------------------------------------------------
# Contingency tables
# ---------------------------------------------------------------------------




def _chi2_stat(obs: NDArray[np.float64], exp: NDArray[np.float64]) -> float:
    return float(np.sum((obs - exp) ** 2 / exp))


def contingency_test(table: ArrayLike, seed: int = 0, resamples: int = 10000) -> TestResult:
    """Return a :class:`TestResult` for independence in an r x c table of counts.

    Rows are levels of a factor, columns e.g. [missing, not missing].  All-zero
    rows and columns are dropped first.  Then:

    * fewer than 2 rows or 2 columns: method 'undefined' (statistic, p None);
    * 2 x 2 with any expected count < 5: Fisher's exact test (Fisher 1922;
      ``scipy.stats.fisher_exact``, two-sided), statistic = sample odds ratio
      (None if infinite or undefined), method 'fisher_exact';
    * any expected count < 5 otherwise: Pearson chi-square statistic with a Monte
      Carlo permutation p-value (Hope 1968; as R's ``chisq.test(simulate.p.value=
      TRUE)``): the column labels of the expanded observations are shuffled
      ``resamples`` times (margins fixed) and p = (1 + #{stat >= observed}) /
      (1 + B), with a relative tolerance of 1e-9 on the comparison; method
      'chi2_monte_carlo';
    * else Pearson's chi-square test without continuity correction
      (``scipy.stats.chi2_contingency(correction=False)``), method 'chi2'.

    Parameters
    ----------
    table : array_like
        2-D non-negative integer counts.
    seed : int
        Seed for the Monte Carlo branch.
    resamples : int
        Monte Carlo permutations B.

    Returns
    -------
    TestResult
        statistic (chi-square or odds ratio), p-value in [0, 1], method name.
    """
    t = np.asarray(table, dtype=float)
    if t.ndim != 2:
        raise ValueError(f"table must be 2-D, got shape {t.shape}")
    if t.size and (not np.all(np.isfinite(t)) or np.any(t < 0) or np.any(t != np.round(t))):
        raise ValueError("table must hold non-negative integer counts")
    t = t[t.sum(axis=1) > 0][:, t.sum(axis=0) > 0] if t.size else t
    if t.ndim != 2 or t.shape[0] < 2 or t.shape[1] < 2:
        return TestResult(None, None, "undefined")
    total = t.sum()
    exp = np.outer(t.sum(axis=1), t.sum(axis=0)) / total
    small = bool(np.any(exp < 5.0))
    if small and t.shape == (2, 2):
        res = _sps.fisher_exact(t.astype(np.int64), alternative="two-sided")
        return TestResult(_f(res.statistic), _f(res.pvalue), "fisher_exact")
    if small:
        b = _check_resamples(resamples)
        r, k = t.shape
        ti = t.astype(np.int64)
        rows = np.repeat(np.arange(r), ti.sum(axis=1))
        cols = np.concatenate([np.repeat(np.arange(k), ti[i]) for i in range(r)])
        nobs = rows.size
        obs_stat = _chi2_stat(t, exp)
        rng = np.random.default_rng(seed)
        exceed = 0
        tol = 1e-9 * max(1.0, obs_stat)
        for size in _chunks(b, nobs):
            perm = rng.permuted(np.broadcast_to(cols, (size, nobs)), axis=1)
            flat = (np.arange(size)[:, None] * (r * k) + rows[None, :] * k + perm).ravel()
            counts = np.bincount(flat, minlength=size * r * k).reshape(size, r, k)
            stat = np.sum((counts - exp[None]) ** 2 / exp[None], axis=(1, 2))
            exceed += int(np.sum(stat >= obs_stat - tol))
        p = (1.0 + exceed) / (1.0 + b)
        return TestResult(float(obs_stat), float(p), "chi2_monte_carlo")
    res = _sps.chi2_contingency(t, correction=False)
    return TestResult(_f(res.statistic), _f(res.pvalue), "chi2")


def fisher_exact_2x2(a_missing: int, a_n: int, b_missing: int, b_n: int) -> float | None:
    """Return the two-sided Fisher exact p-value comparing two missingness rates.

    Fisher (1922) exact test (``scipy.stats.fisher_exact``) on the table
    [[a_missing, a_n - a_missing], [b_missing, b_n - b_missing]].

    Parameters
    ----------
    a_missing, b_missing : int
        Missing counts in groups a and b.
    a_n, b_n : int
        Group totals (0 <= missing <= n).

    Returns
    -------
    float or None
        p-value in [0, 1]; None when a group is empty or nothing (or everything)
        is missing in both groups, i.e. a row or column of the table is zero.
    """
    for m, n in ((a_missing, a_n), (b_missing, b_n)):
        if n < 0 or m < 0 or m > n:
            raise ValueError(f"need 0 <= missing <= n, got missing={m}, n={n}")
    t = np.array([[a_missing, a_n - a_missing], [b_missing, b_n - b_missing]], dtype=np.int64)
    if np.any(t.sum(axis=0) == 0) or np.any(t.sum(axis=1) == 0):
        return None
    return _f(_sps.fisher_exact(t, alternative="two-sided").pvalue)


def leave_one_cluster_out_diff(
    values_a: ArrayLike, clusters_a: ArrayLike, values_b: ArrayLike, clusters_b: ArrayLike
) -> tuple[float | None, float | None]:
    """Return the (min, max) of mean_a - mean_b over leave-one-cluster-out data sets.

    For each cluster present in either group, drop it from both groups and recompute the
    difference of means (value units); clusters whose removal empties a group are skipped.
    Computed from per-cluster sums and counts in O(G), not by refitting G times.
    (None, None) when no cluster can be dropped.
    """
    a, b, codes_a, codes_b, g = _shared_codes(values_a, clusters_a, values_b, clusters_b)
    if g == 0 or a.size == 0 or b.size == 0:
        return None, None
    sa = np.bincount(codes_a, weights=a, minlength=g)
    na = np.bincount(codes_a, minlength=g)
    sb = np.bincount(codes_b, weights=b, minlength=g)
    nb = np.bincount(codes_b, minlength=g)
    ka, kb = a.size - na, b.size - nb
    ok = (ka > 0) & (kb > 0)
    if not ok.any():
        return None, None
    diffs = (a.sum() - sa[ok]) / ka[ok] - (b.sum() - sb[ok]) / kb[ok]
    return float(diffs.min()), float(diffs.max())
