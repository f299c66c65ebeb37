"""Statistics for the workbench: the single home for every estimator.

Depends only on numpy, scipy, the ``krippendorff`` package and ``threadpoolctl`` (one BLAS
thread, so that no result depends on the number of cores: :func:`one_blas_thread`).

Conventions used throughout
---------------------------
* Inputs are 1-D arrays.  ``values`` are floats (bools/ints accepted and cast to
  float); a NaN or infinite entry raises ``ValueError`` -- callers pass only valid
  values, and nothing here ever fills a missing value with a number.
* ``clusters`` are labels of any hashable type (one per value), coded with
  ``np.unique(..., return_inverse=True)``.  A missing label (``None`` or NaN)
  raises ``ValueError``.
* Undefined results are Python ``None`` -- never 0 and never NaN.  Returned
  scalars are plain Python ``float``/``int``.
* Every random draw takes an ``int`` seed and uses ``numpy.random.default_rng``;
  the global RNG is never touched.  Results are deterministic for fixed inputs
  and seed.
* Units: estimates, standard errors and interval bounds are in the units of the
  input values (e.g. judge score points); p-values and proportions are in [0, 1].
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import krippendorff as _krippendorff
import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special as _sps_special
from scipy import stats as _sps

__all__ = [
    "CellStats",
    "DiffStats",
    "PairedStats",
    "TestResult",
    "wilson_interval",
    "mean_se",
    "clustered_se",
    "t_interval",
    "cell_summary",
    "cell_summary_sorted",
    "cluster_bootstrap_mean",
    "icc_oneway",
    "design_effect",
    "diff_clustered",
    "ClusterInference",
    "CR2_METHOD",
    "cluster_mean_cr2",
    "cr2_mean_from_sums",
    "diff_cr2",
    "diff_cr2_sides",
    "cluster_side",
    "ClusterSide",
    "diff_clustered_sides",
    "cluster_bootstrap_diff",
    "paired_summary",
    "diff_counts",
    "exact_agreement",
    "within_one",
    "kappa_quadratic",
    "krippendorff_alpha",
    "spearman",
    "holm",
    "holm_stepdown_levels",
    "mde",
    "n_needed",
    "order_statistic_n",
    "contingency_test",
    "fisher_exact_2x2",
    "leave_one_cluster_out_diff",
    "derive_seed",
    "clustered_proportion",
    "clustered_proportion_detail",
    "ClusteredProportion",
    "pooled_design_effect",
    "proportion_design_effect",
    "combine_variance_components_clustered",
    "block_permutation_test",
    "block_permutation_asymptotic",
    "PERMUTATION_EXACT_BUDGET",
    "PERMUTATION_MIN_BLOCKS",
    "PERMUTATION_ENUMERATION_LIMIT",
    "block_permutation_enumerated",
    "block_permutation_min_p",
    "sign_flip_test",
    "sign_flip",
    "sign_flip_asymptotic",
    "SIGN_FLIP_ASYMPTOTIC_CLUSTERS",
    "SIGN_FLIP_ASYMPTOTIC_SHARE",
    "power_t",
    "cluster_power_plan",
    "pass_hat_k",
    "pass_k_interval",
    "PassKInterval",
    "PASS_K_METHOD",
    "PASS_K_METHODS",
    "contrast_variance_components",
    "joint_bootstrap_weights",
    "joint_bootstrap_means",
    "joint_percentile",
]

# Upper bound on the number of integers drawn per bootstrap chunk (memory cap).
_CHUNK_CELLS = 2_000_000


# ---------------------------------------------------------------------------
# Result containers
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CellStats:
    """Summary of one scorecard cell (one mean with its valid n and error bars).

    Attributes
    ----------
    mean : float or None
        Sample mean in value units; None when n == 0.
    n : int
        Number of valid values.
    clusters : int
        Number of distinct clusters G.
    se : float or None
        Naive standard error (sd ddof=1 / sqrt(n)); None when n < 2.
    se_clustered : float or None
        CR1 cluster-robust standard error; None when G < 2 or n < 2.
    ci_low, ci_high : float or None
        Clustered t interval (df = G - 1); None when se_clustered is None.
    boot_low, boot_high : float or None
        Cluster bootstrap percentile interval; None when G < 2.
    icc : float or None
        One-way ANOVA ICC(1); may be negative; None when undefined.
    design_effect : float or None
        Kish design effect 1 + (m - 1) * icc; None when icc is None.
    se_cr2 : float or None
        CR2 cluster-robust standard error of the mean (:func:`cr2_mean_from_sums`); None
        when G < 2. Zero exactly when ``se_clustered`` is zero (the same degenerate design).
    df_cr2 : float or None
        Bell-McCaffrey degrees of freedom of the mean (G - 1 with equal clusters, fewer
        when they are unequal); None with ``se_cr2``.
    ci_low_cr2, ci_high_cr2 : float or None
        CR2 t interval with ``df_cr2`` degrees of freedom (the scorecard's headline since
        issue 24's follow-up; ``ci_low``/``ci_high`` stay the CR1 t(G - 1) interval).
    """

    mean: float | None
    n: int
    clusters: int
    se: float | None
    se_clustered: float | None
    ci_low: float | None
    ci_high: float | None
    boot_low: float | None
    boot_high: float | None
    icc: float | None
    design_effect: float | None
    se_cr2: float | None = None
    df_cr2: float | None = None
    ci_low_cr2: float | None = None
    ci_high_cr2: float | None = None


@dataclass(frozen=True)
class DiffStats:
    """Unpaired difference of means (a - b) with a cluster-robust error bar.

    Attributes
    ----------
    diff : float or None
        mean_a - mean_b in value units; None when either side is empty.
    se : float or None
        CR1 cluster-robust standard error of the difference; None when undefined.
    df : int or None
        Degrees of freedom G - 1 (G distinct clusters over both groups).
    ci_low, ci_high : float or None
        t interval with ``df`` degrees of freedom.
    p_value : float or None
        Two-sided t-test p-value of diff = 0; None when se is None or se == 0.
    n_a, n_b : int
        Valid n on each side.
    clusters : int
        Number of distinct clusters G over both groups.
    """

    diff: float | None
    se: float | None
    df: int | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    n_a: int = 0
    n_b: int = 0
    clusters: int = 0


@dataclass(frozen=True)
class PairedStats:
    """Summary of paired differences (e.g. judge A score - judge B score per row).

    Attributes
    ----------
    mean : float or None
        Mean difference in value units; None when n == 0.
    n : int
        Number of pairs.
    clusters : int
        Number of distinct clusters G.
    se : float or None
        Paired-t standard error sd / sqrt(n); None when n < 2.
    df : int or None
        Paired-t degrees of freedom n - 1; None when n < 2.
    ci_low, ci_high : float or None
        Paired t interval.
    se_clustered : float or None
        CR1 cluster-robust standard error of the mean difference.
    df_clustered : int or None
        G - 1; None when G < 2.
    ci_low_clustered, ci_high_clustered : float or None
        Clustered t interval.
    boot_low, boot_high : float or None
        Cluster bootstrap percentile interval.
    wilcoxon_p : float or None
        Wilcoxon signed-rank two-sided p-value; None when all diffs are 0 or n < 1.
    diff_counts : dict[str, int]
        Counts per rounded integer difference (see :func:`diff_counts`).
    p_clustered : float or None
        Two-sided t p-value of the CR1 clustered SE with df G - 1; None when se is None or 0.
    se_cr2, df_cr2, ci_low_cr2, ci_high_cr2, p_cr2 : float or None
        CR2 standard error, Bell-McCaffrey df, t interval and p-value
        (:func:`cluster_mean_cr2`): the small-sample form whose size holds with unequal
        clusters.
    """

    mean: float | None
    n: int
    clusters: int
    se: float | None
    df: int | None
    ci_low: float | None
    ci_high: float | None
    se_clustered: float | None
    df_clustered: int | None
    ci_low_clustered: float | None
    ci_high_clustered: float | None
    boot_low: float | None
    boot_high: float | None
    wilcoxon_p: float | None
    diff_counts: dict[str, int] = field(default_factory=dict, hash=False)
    p_clustered: float | None = None
    se_cr2: float | None = None
    df_cr2: float | None = None
    ci_low_cr2: float | None = None
    ci_high_cr2: float | None = None
    p_cr2: float | None = None


@dataclass(frozen=True)
class TestResult:
    """Result of an independence test.

    Attributes
    ----------
    statistic : float or None
        Test statistic (chi-square, or the odds ratio for Fisher's exact test);
        None when undefined.
    p_value : float or None
        p-value in [0, 1]; None when undefined.
    method : str
        One of 'chi2', 'chi2_monte_carlo', 'fisher_exact', 'undefined'.
    """

    __test__ = False  # not a pytest test class

    statistic: float | None
    p_value: float | None
    method: str


# ---------------------------------------------------------------------------
# Input validation helpers
# ---------------------------------------------------------------------------


def _values(x: ArrayLike, name: str = "values") -> NDArray[np.float64]:
    """Return ``x`` as a 1-D float array; raise ValueError on NaN/inf or wrong shape."""
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite entries; pass only valid values")
    return arr


def _is_missing_label(x: Any) -> bool:
    if x is None:
        return True
    try:
        return isinstance(x, float | np.floating) and math.isnan(x)
    except TypeError:  # pragma: no cover - defensive
        return False


def _any_missing_label(lab: NDArray[Any]) -> bool:
    """``any(_is_missing_label(v) for v in lab)`` for an object array, in C loops: None is
    the only object equal to None and a NaN the only one unequal to itself, so only the
    candidates those two comparisons find are checked one by one."""
    try:
        cand = np.asarray((lab == None) | (lab != lab), dtype=bool)  # noqa: E711
    except (TypeError, ValueError):  # an element whose comparison is not a truth value
        return any(_is_missing_label(v) for v in lab)
    if cand.shape != lab.shape:
        return any(_is_missing_label(v) for v in lab)
    return any(_is_missing_label(v) for v in lab[cand])


def _as_text(lab: NDArray[Any]) -> NDArray[Any]:
    """An object array of Python strings as a fixed-width text array (numpy sorts it in C,
    ~3x faster than comparing objects, in the same code point order), else ``lab`` itself:
    other objects, a string that does not survive the conversion (trailing NULs), or a
    conversion that would take more than 256 MB."""
    if lab.dtype != object or lab.size < 1024:
        return lab
    try:
        width = max(map(len, lab.tolist()))
    except TypeError:
        return lab
    if width * 4 * lab.size > 256 * 2**20:
        return lab
    try:
        text = lab.astype(str)
        same = bool(np.all(text == lab))
    except (TypeError, ValueError):
        return lab
    return text if same else lab


def _labels(clusters: ArrayLike, name: str = "clusters") -> NDArray[Any]:
    """Return cluster labels as a 1-D array (tuples and other hashables kept whole)."""
    lab = np.asarray(clusters)
    if lab.ndim == 1:
        return lab
    if lab.ndim > 1 and not isinstance(clusters, np.ndarray):
        items = list(clusters)  # type: ignore[call-overload]
        obj = np.empty(len(items), dtype=object)
        for i, v in enumerate(items):
            obj[i] = tuple(v) if isinstance(v, list) else v
        return obj
    raise ValueError(f"{name} must be 1-D, got shape {lab.shape}")


def _codes(clusters: ArrayLike, n: int, name: str = "clusters") -> tuple[NDArray[np.intp], int]:
    """Return (integer codes 0..G-1, G) for cluster labels of length ``n``."""
    lab = _labels(clusters, name)
    if lab.shape[0] != n:
        raise ValueError(f"{name} has length {lab.shape[0]}, expected {n}")
    if n == 0:
        return np.zeros(0, dtype=np.intp), 0
    if lab.dtype.kind in "iu":
        dense = _dense_int_codes(lab)
        if dense is not None:
            return dense
    if lab.dtype.kind == "f":
        if np.any(np.isnan(lab)):
            raise ValueError(f"{name} contains missing (NaN) labels")
    elif lab.dtype == object:
        if _any_missing_label(lab):
            raise ValueError(f"{name} contains missing (None/NaN) labels")
    try:
        _, inv = np.unique(_as_text(lab), return_inverse=True)
        inv = np.asarray(inv, dtype=np.intp).reshape(-1)
    except TypeError:
        # Mixed, non-orderable labels: code by first appearance.
        mapping: dict[Any, int] = {}
        inv = np.fromiter(
            (mapping.setdefault(v, len(mapping)) for v in lab.tolist()), dtype=np.intp, count=n
        )
    g = int(inv.max()) + 1
    return inv, g


def _dense_int_codes(lab: NDArray[Any]) -> tuple[NDArray[np.intp], int] | None:
    """``np.unique(lab, return_inverse=True)``'s codes for integer labels, in O(n): the rank
    of each label among the distinct labels (a table over the label range, when that range is
    at most a few times the number of labels; else None and np.unique sorts)."""
    lo, hi = int(lab.min()), int(lab.max())
    if hi - lo > 4 * lab.size + 1024:
        return None
    present = np.zeros(hi - lo + 1, dtype=bool)
    wide = np.uint64 if lab.dtype.kind == "u" else np.int64
    # offsets into the (small) range, made in place: one label-sized temporary, not three
    off = lab.astype(wide)
    off -= wide(lo)
    off = off.astype(np.intp, copy=False)
    present[off] = True
    rank = np.cumsum(present, dtype=np.intp) - 1
    return rank[off], int(rank[-1]) + 1


def _check_confidence(confidence: float) -> float:
    c = float(confidence)
    if not (0.0 < c < 1.0):
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return c


def _check_resamples(resamples: int) -> int:
    b = int(resamples)
    if b < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples!r}")
    return b


def _pair(a: ArrayLike, b: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    aa = _values(a, "a")
    bb = _values(b, "b")
    if aa.shape != bb.shape:
        raise ValueError(f"a and b must have the same length, got {aa.size} and {bb.size}")
    return aa, bb


@functools.lru_cache(maxsize=4096)
def _t_ppf(q: float, df: float) -> float:
    """``scipy.stats.t.ppf(q, df)`` as a float, remembered: the scorecard asks it once per cell
    (CR1: the same G - 1 mostly; CR2: a Bell-McCaffrey df per cell). Computed by
    ``scipy.special.stdtrit``, the function ``t.ppf`` evaluates (the same number, bit for bit;
    ``tests/test_stats_cr2.py``), without its argument handling: 1 us, not about 100 us, per
    distinct df."""
    return float(_sps_special.stdtrit(df, q))


@functools.lru_cache(maxsize=64)
def _norm_ppf(q: float) -> float:
    """``scipy.stats.norm.ppf(q)`` as a float, remembered."""
    return float(_sps.norm.ppf(q))


def _f(x: Any) -> float | None:
    """Plain float, or None if not finite."""
    if x is None:
        return None
    v = float(x)
    return v if math.isfinite(v) else None


def _flush(se: float, *arrays: NDArray[np.float64]) -> float:
    """Return ``se``, or 0.0 if it is floating-point noise (< 1e-12 x max |value|).

    Residuals of constant data are not always exactly 0 in floating point; without
    this a true zero standard error could surface as ~1e-17 and give p ~ 0.
    """
    scale = max((float(np.max(np.abs(arr))) for arr in arrays if arr.size), default=0.0)
    return 0.0 if se <= 1e-12 * scale else float(se)


def _percentile_interval(
    stats: NDArray[np.float64], confidence: float
) -> tuple[float | None, float | None]:
    alpha = 1.0 - confidence
    lo, hi = np.quantile(stats, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(lo), float(hi)


def _chunks(resamples: int, width: int) -> list[int]:
    per = max(1, _CHUNK_CELLS // max(1, width))
    sizes = [per] * (resamples // per)
    if resamples % per:
        sizes.append(resamples % per)
    return sizes


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


# ---------------------------------------------------------------------------
# Unpaired differences
# ---------------------------------------------------------------------------


def _shared_codes(
    values_a: ArrayLike, clusters_a: ArrayLike, values_b: ArrayLike, clusters_b: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.intp], NDArray[np.intp], int]:
    a = _values(values_a, "values_a")
    b = _values(values_b, "values_b")
    la = _labels(clusters_a, "clusters_a")
    lb = _labels(clusters_b, "clusters_b")
    if la.shape[0] != a.size:
        raise ValueError(f"clusters_a has length {la.shape[0]}, expected {a.size}")
    if lb.shape[0] != b.size:
        raise ValueError(f"clusters_b has length {lb.shape[0]}, expected {b.size}")
    same_kind = la.dtype == lb.dtype or (la.dtype.kind in "biuf" and lb.dtype.kind in "biuf")
    if same_kind and la.dtype != object:
        stacked = np.concatenate([la, lb])
    else:
        # Different label types (e.g. int vs str): keep Python objects, no coercion.
        stacked = np.empty(la.size + lb.size, dtype=object)
        for i, v in enumerate([*la.tolist(), *lb.tolist()]):
            stacked[i] = v
    codes, g = _codes(stacked, a.size + b.size, "clusters")
    return a, b, codes[: a.size], codes[a.size :], g


def diff_clustered(
    values_a: ArrayLike,
    clusters_a: ArrayLike,
    values_b: ArrayLike,
    clusters_b: ArrayLike,
    confidence: float = 0.95,
) -> DiffStats:
    """Return :class:`DiffStats` for mean_a - mean_b with a CR1 cluster-robust SE.

    OLS of the stacked values on [1, indicator(b)] with the Liang & Zeger (1986)
    sandwich covariance clustered on the labels shared by both groups (e.g.
    scenarios), CR1 factor G/(G-1) * (N-1)/(N-K) with K = 2 (statsmodels
    ``cov_type='cluster'`` default).  diff = -coefficient of the indicator;
    df = G - 1 with G the distinct clusters over both groups (Cameron & Miller
    2015, "A practitioner's guide to cluster-robust inference"); two-sided
    Student-t p-value.

    Parameters
    ----------
    values_a, values_b : array_like
        1-D valid values of each group.
    clusters_a, clusters_b : array_like
        Cluster labels (same label space for both groups).
    confidence : float
        Two-sided confidence level.

    Returns
    -------
    DiffStats
        diff in value units (None if a side is empty); se/df/interval None when
        G < 2 or N <= 2; p_value additionally None when se == 0 (t undefined; the
        interval then collapses to the point).
    """
    c = _check_confidence(confidence)
    a, b, ca, cb, g = _shared_codes(values_a, clusters_a, values_b, clusters_b)
    na, nb = int(a.size), int(b.size)
    if na == 0 or nb == 0:
        return DiffStats(None, None, None, None, None, None, na, nb, g)
    diff = float(a.mean() - b.mean())
    n = na + nb
    k = 2
    if g < 2 or n <= k:
        return DiffStats(diff, None, None, None, None, None, na, nb, g)
    # Row 2 of (X'X)^-1 X_g' e_g simplifies to B_g/n_b - A_g/n_a, with A_g, B_g the
    # sums of group-mean residuals of a and b in cluster g (closed form of the sandwich).
    infl = np.bincount(cb, weights=(b - b.mean()) / nb, minlength=g) - np.bincount(
        ca, weights=(a - a.mean()) / na, minlength=g
    )
    var = g / (g - 1) * (n - 1) / (n - k) * float(infl @ infl)
    se = _flush(math.sqrt(max(var, 0.0)), a, b)
    df = g - 1
    low, high = t_interval(diff, se, df, c)
    p = None if se == 0.0 else float(2.0 * _sps.t.sf(abs(diff / se), df))
    return DiffStats(diff, se, df, low, high, p, na, nb, g)


@dataclass(frozen=True)
class ClusterSide:
    """One side of an unpaired comparison, reduced once for every comparison it enters
    (:func:`cluster_side`; :func:`diff_clustered_sides`, :func:`leave_one_cluster_out_sides`):
    per cluster code 0..width-1 the sum, count and sum of (value - mean) / n of its values,
    and the side's n, mean, sum and largest |value|."""

    n: int
    mean: float
    total: float
    max_abs: float
    sums: NDArray[np.float64]
    counts: NDArray[np.intp]
    resid: NDArray[np.float64]


def cluster_side(values: ArrayLike, codes: ArrayLike, width: int) -> ClusterSide:
    """:class:`ClusterSide` of valid ``values`` in clusters ``codes`` (integers in [0, width),
    shared by every side compared, monotone in the cluster labels' order)."""
    x = _values(values)
    c = np.asarray(codes, dtype=np.intp)
    if c.shape != x.shape:
        raise ValueError(f"codes has length {c.size}, expected {x.size}")
    if x.size == 0:
        z = np.zeros(width)
        return ClusterSide(0, math.nan, 0.0, 0.0, z, np.zeros(width, dtype=np.intp), z)
    mean = x.mean()
    return ClusterSide(int(x.size), mean, x.sum(), float(np.max(np.abs(x))),
                       np.bincount(c, weights=x, minlength=width), np.bincount(c, minlength=width),
                       np.bincount(c, weights=(x - mean) / x.size, minlength=width))


def diff_clustered_sides(a: ClusterSide, b: ClusterSide, confidence: float = 0.95) -> DiffStats:
    """:func:`diff_clustered` from two :class:`ClusterSide` s (each reduced once for all its
    comparisons): the same numbers bit for bit. A cluster's sums are its values' sums in row
    order whatever other clusters exist, and the clusters either side has, in code order, are
    the codes :func:`diff_clustered` gives the labels."""
    c = _check_confidence(confidence)
    u = np.flatnonzero((a.counts > 0) | (b.counts > 0))
    g = int(u.size)
    na, nb = a.n, b.n
    if na == 0 or nb == 0:
        return DiffStats(None, None, None, None, None, None, na, nb, g)
    diff = float(a.mean - b.mean)
    n = na + nb
    k = 2
    if g < 2 or n <= k:
        return DiffStats(diff, None, None, None, None, None, na, nb, g)
    infl = b.resid[u] - a.resid[u]
    var = g / (g - 1) * (n - 1) / (n - k) * float(infl @ infl)
    se = math.sqrt(max(var, 0.0))
    se = 0.0 if se <= 1e-12 * max(a.max_abs, b.max_abs) else float(se)  # _flush
    df = g - 1
    low, high = t_interval(diff, se, df, c)
    p = None if se == 0.0 else float(2.0 * _sps.t.sf(abs(diff / se), df))
    return DiffStats(diff, se, df, low, high, p, na, nb, g)


def leave_one_cluster_out_sides(a: ClusterSide, b: ClusterSide) -> tuple[float | None, float | None]:
    """:func:`leave_one_cluster_out_diff` from two :class:`ClusterSide` s: the same numbers."""
    u = np.flatnonzero((a.counts > 0) | (b.counts > 0))
    if u.size == 0 or a.n == 0 or b.n == 0:
        return None, None
    ka, kb = a.n - a.counts[u], b.n - b.counts[u]
    ok = (ka > 0) & (kb > 0)
    if not ok.any():
        return None, None
    diffs = (a.total - a.sums[u][ok]) / ka[ok] - (b.total - b.sums[u][ok]) / kb[ok]
    return float(diffs.min()), float(diffs.max())


def cluster_bootstrap_diff(
    values_a: ArrayLike,
    clusters_a: ArrayLike,
    values_b: ArrayLike,
    clusters_b: ArrayLike,
    resamples: int = 10000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float | None, float | None]:
    """Return the cluster bootstrap percentile interval (low, high) of mean_a - mean_b.

    Cluster bootstrap (Field & Welsh 2007) over the union of clusters of both
    groups: each resample draws G clusters with replacement and computes
    mean_a - mean_b over the drawn clusters.  Resamples in which one side has no
    values are dropped; percentile interval over the kept resamples.

    Parameters
    ----------
    values_a, values_b : array_like
        1-D valid values of each group.
    clusters_a, clusters_b : array_like
        Cluster labels (shared label space).
    resamples : int
        Bootstrap resamples B.
    seed : int
        Seed for ``numpy.random.default_rng``.
    confidence : float
        Two-sided confidence level.

    Returns
    -------
    tuple of (float or None, float or None)
        Bounds in value units; (None, None) when G < 2, a side is empty, or more
        than half of the resamples were dropped.
    """
    c = _check_confidence(confidence)
    bres = _check_resamples(resamples)
    a, b, ca, cb, g = _shared_codes(values_a, clusters_a, values_b, clusters_b)
    if g < 2 or a.size == 0 or b.size == 0:
        return None, None
    sa = np.bincount(ca, weights=a, minlength=g)
    na = np.bincount(ca, minlength=g).astype(float)
    sb = np.bincount(cb, weights=b, minlength=g)
    nb = np.bincount(cb, minlength=g).astype(float)
    rng = np.random.default_rng(seed)
    out = np.empty(bres, dtype=float)
    keep = np.zeros(bres, dtype=bool)
    pos = 0
    for size in _chunks(bres, g):
        idx = rng.integers(g, size=(size, g))
        ta, tb = na[idx].sum(axis=1), nb[idx].sum(axis=1)
        ok = (ta > 0) & (tb > 0)
        d = np.zeros(size, dtype=float)
        d[ok] = sa[idx[ok]].sum(axis=1) / ta[ok] - sb[idx[ok]].sum(axis=1) / tb[ok]
        out[pos : pos + size] = d
        keep[pos : pos + size] = ok
        pos += size
    dropped = bres - int(keep.sum())
    if dropped * 2 > bres or not keep.any():
        return None, None
    return _percentile_interval(out[keep], c)


# ---------------------------------------------------------------------------
# Small-sample cluster-robust inference: CR2 with Bell-McCaffrey degrees of freedom
# ---------------------------------------------------------------------------

CR2_METHOD = "cluster_cr2_bm"
"""Name of the CR2 / Bell-McCaffrey interval and test in ``results.json`` (``ci_method``)."""


@dataclass(frozen=True)
class ClusterInference:
    """A clustered estimate with its small-sample error bar (:func:`cluster_mean_cr2`,
    :func:`diff_cr2`).

    Attributes
    ----------
    estimate : float or None
        Point estimate in value units; None when a side is empty.
    se : float or None
        CR2 cluster-robust standard error; None when undefined (G < 2, or a group's values
        all in one cluster: then I - H_gg is singular and its between-cluster variance is
        not estimable).
    df : float or None
        Bell-McCaffrey (Satterthwaite) degrees of freedom, >= 1 (at most G - 1 for a mean,
        G - 1 with equal clusters; a two-group difference can reach a little above G - 1);
        None with ``se``.
    ci_low, ci_high : float or None
        t interval estimate -/+ t_{1-alpha/2, df} * se.
    p_value : float or None
        Two-sided t-test p-value of estimate = 0 with ``df``; None when se is None or 0.
    clusters : int
        Number of distinct clusters G.
    method : str
        :data:`CR2_METHOD`.
    """

    estimate: float | None
    se: float | None
    df: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    clusters: int = 0
    method: str = CR2_METHOD


def _cr2_groups(counts: list[NDArray[np.float64]], scaled: list[NDArray[np.float64]], sizes: list[int]
                ) -> tuple[float, float] | None:
    """CR2 variance and Bell-McCaffrey df for a contrast c'beta of group means.

    The design is one indicator per group k (an intercept-only model is one group; the
    two-group design [1, indicator(b)] spans the same columns as [indicator(a),
    indicator(b)]), so the hat matrix H is block-diagonal J_k / n_k and, per cluster g,
    H_gg = diag(J_{c_kg} / n_k): its adjustment A_g = (I - H_gg)^{-1/2} (Bell & McCaffrey
    2002; Pustejovsky & Tipton 2018, JBES 36:672-683, eq. 5) scales each group's residual
    sum in g by 1 / sqrt(1 - c_kg / n_k). ``scaled[k][g]`` is s_k * S_kg / n_k with s_k the
    contrast's sign for group k and S_kg the sum of group-k residuals in cluster g, so
    var = sum_g (sum_k scaled[k][g] / sqrt(1 - c_kg / n_k))^2.

    Degrees of freedom (working model Omega = I, P&T Theorem 2 with Phi = I): with p_g the
    cluster-g part of c'(X'X)^{-1} X_g' A_g and q_g = (I - H) p_g, df = (sum_g q_g'q_g)^2 /
    sum_{g,h} (q_g'q_h)^2. Here q_g'q_h = delta_gh d_g - R_gh with R = sum_k u_k u_k' / n_k,
    u_kg = c_kg / (n_k sqrt(1 - c_kg / n_k)) and Q_gg = sum_k c_kg / n_k^2 exactly, so both
    sums are O(G). None when a group lies in a single cluster (1 - c_kg / n_k = 0).
    """
    var = None
    q_diag = None
    r_sq = 0.0  # ||R||_F^2
    r_diag = None
    us = []
    for c, s, n in zip(counts, scaled, sizes, strict=True):
        one_minus = 1.0 - c / n
        if np.any(one_minus <= 0.0):
            return None
        root = np.sqrt(one_minus)
        term = s / root
        var = term if var is None else var + term
        qd = c / (n * n)
        q_diag = qd if q_diag is None else q_diag + qd
        u = c / (n * root)
        us.append((u, n))
        rd = u * u / n
        r_diag = rd if r_diag is None else r_diag + rd
    assert var is not None and q_diag is not None and r_diag is not None
    for i, (ui, ni) in enumerate(us):
        for j in range(i, len(us)):
            uj, nj = us[j]
            w = float(ui @ uj) ** 2 / (ni * nj)
            r_sq += w if j == i else 2.0 * w
    off = max(r_sq - float(r_diag @ r_diag), 0.0)
    num = float(q_diag.sum()) ** 2
    den = float(q_diag @ q_diag) + off
    if den <= 0.0:
        return None
    return float(var @ var), num / den


def _cr2_result(estimate: float, var_df: tuple[float, float] | None, g: int, confidence: float,
                *arrays: NDArray[np.float64]) -> ClusterInference:
    if var_df is None:
        return ClusterInference(estimate, None, None, None, None, None, g)
    var, df = var_df
    se = _flush(math.sqrt(max(var, 0.0)), *arrays)
    # a ratio tr(W)^2 / tr(W^2) of a non-zero positive semi-definite W is >= 1 (rounding aside)
    df = max(df, 1.0)
    low, high = t_interval(estimate, se, df, confidence)
    p = None if se == 0.0 else float(2.0 * _sps.t.sf(abs(estimate / se), df))
    return ClusterInference(estimate, se, df, low, high, p, g)


def cluster_mean_cr2(values: ArrayLike, clusters: ArrayLike, confidence: float = 0.95) -> ClusterInference:
    """Return the mean with its CR2 standard error and Bell-McCaffrey t interval and test.

    Intercept-only OLS y = b0 + e clustered on ``clusters``: H = J / n, so A_g = (I -
    H_gg)^{-1/2} gives (Bell & McCaffrey 2002; Pustejovsky & Tipton 2018)::

        se^2 = sum_g S_g^2 / (n^2 (1 - n_g / n)),   S_g = sum of residuals y - ybar in g

    and the Bell-McCaffrey (Satterthwaite, working model Omega = I) degrees of freedom of
    :func:`_cr2_groups` (G - 1 with equal clusters, fewer when they are unequal: the t
    reference a CR1 with G - 1 df lacks, whose size drifts up when some clusters weigh
    more). With equal clusters the variance is G/(G-1) * sum_g S_g^2 / n^2, the CR1 of
    :func:`clustered_se` with K = 1.

    Returns
    -------
    ClusterInference
        estimate None when n == 0; se/df/interval/p None when G < 2; p None when se == 0.
    """
    c = _check_confidence(confidence)
    x = _values(values)
    codes, g = _codes(clusters, x.size)
    if x.size == 0:
        return ClusterInference(None, None, None, None, None, None, 0)
    mean = float(x.mean())
    if g < 2:
        return ClusterInference(mean, None, None, None, None, None, g)
    n = int(x.size)
    counts = np.bincount(codes, minlength=g).astype(float)
    scaled = np.bincount(codes, weights=x - mean, minlength=g) / n
    return _cr2_result(mean, _cr2_groups([counts], [scaled], [n]), g, c, x)


def diff_cr2(values_a: ArrayLike, clusters_a: ArrayLike, values_b: ArrayLike, clusters_b: ArrayLike,
             confidence: float = 0.95) -> ClusterInference:
    """Return mean_a - mean_b with its CR2 standard error and Bell-McCaffrey t interval and test.

    OLS of the stacked values on [1, indicator(b)] clustered on the labels shared by both
    groups: H is block-diagonal J_a / n_a, J_b / n_b, so per cluster g (a_g, b_g values of
    each group in g; A_g, B_g their sums of group-mean residuals)::

        infl_g = A_g / (n_a sqrt(1 - a_g / n_a)) - B_g / (n_b sqrt(1 - b_g / n_b))
        se^2 = sum_g infl_g^2

    (Pustejovsky & Tipton 2018), df the Bell-McCaffrey degrees of freedom of
    :func:`_cr2_groups`. The CR1 beside it is :func:`diff_clustered`.

    Returns
    -------
    ClusterInference
        estimate None if a side is empty; se/df/interval/p None when G < 2 or when one
        group's values all lie in a single cluster (its mean's between-cluster variance is
        not estimable: 1 - a_g / n_a = 0); p None when se == 0.
    """
    c = _check_confidence(confidence)
    a, b, ca, cb, g = _shared_codes(values_a, clusters_a, values_b, clusters_b)
    return diff_cr2_sides(cluster_side(a, ca, g), cluster_side(b, cb, g), c)


def diff_cr2_sides(a: ClusterSide, b: ClusterSide, confidence: float = 0.95) -> ClusterInference:
    """:func:`diff_cr2` from two :class:`ClusterSide` s (:func:`cluster_side`, shared
    cluster codes): the clusters either side has, as :func:`diff_clustered_sides`."""
    c = _check_confidence(confidence)
    u = np.flatnonzero((a.counts > 0) | (b.counts > 0))
    g = int(u.size)
    if a.n == 0 or b.n == 0:
        return ClusterInference(None, None, None, None, None, None, g)
    diff = float(a.mean - b.mean)
    if g < 2:
        return ClusterInference(diff, None, None, None, None, None, g)
    var_df = _cr2_groups([a.counts[u].astype(float), b.counts[u].astype(float)],
                         [a.resid[u], -b.resid[u]], [a.n, b.n])
    scale = np.array([a.max_abs, b.max_abs])
    return _cr2_result(diff, var_df, g, c, scale)


PPI_METHOD = "ppi_mean_cr2_bm"
"""Name of the prediction-powered mean's interval in ``results.json`` (:func:`ppi_mean_cr2`)."""


def ppi_mean_cr2(predictions: ArrayLike, clusters: ArrayLike, rectifiers: ArrayLike,
                 rectifier_clusters: ArrayLike, confidence: float = 0.95) -> ClusterInference:
    """The prediction-powered mean with its CR2 standard error and Bell-McCaffrey t interval.

    ``predictions`` f_i on all N items, ``rectifiers`` y_i - f_i on the n labelled ones (a
    subset of the N: each item in both lists is in the same cluster)::

        theta_PP = mean_N(f) + mean_n(y - f)

    (Angelopoulos, Bates, Fannjiang, Jordan & Zrnic 2023, Science 382:669-674, with the
    labelled items inside the N rather than beside them). Its variance: OLS of the stacked
    values [f; y - f] on one indicator per block, theta_PP = beta_f + beta_r, clustered so
    that an item's f and its rectifier share its cluster: the CR2 sandwich of
    :func:`_cr2_groups` is then sum_g (F_g / (N sqrt(1 - N_g / N)) + R_g / (n sqrt(1 - n_g /
    n)))^2 (F_g, R_g the cluster-g sums of residuals from each block's mean), whose cross
    term estimates Cov(mean_N(f), mean_n(y - f)) from the data instead of the independence
    of var(f)/N + var(y - f)/n (which holds only when the labelled items are disjoint from
    the N), and df the Bell-McCaffrey degrees of freedom of that contrast. Valid when the
    labelled items are a random subset of the items (labelling independent of the scores).

    Returns
    -------
    ClusterInference
        estimate None when either list is empty; se/df/interval/p None when G < 2 or when
        either block lies in one cluster; p tests theta_PP = 0 (of no use; kept for the shape).
    """
    r = _values(rectifiers, "rectifiers")
    # mean_N(f) - mean_n(-(y - f)): diff_cr2's contrast (+1, -1) on the blocks f and f - y is
    # (+1, +1) on f and y - f, with the same sandwich (a block's sign squares away per block,
    # and the cross term keeps the sign of the contrast)
    return diff_cr2(predictions, clusters, -r, rectifier_clusters, confidence)


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


# ---------------------------------------------------------------------------
# Agreement between two raters on paired ordinal scores
# ---------------------------------------------------------------------------


def exact_agreement(a: ArrayLike, b: ArrayLike) -> float | None:
    """Return the proportion of pairs with a == b (exact agreement, in [0, 1]).

    Simple percent agreement (e.g. Zheng et al. 2023, MT-Bench judge agreement).

    Parameters
    ----------
    a, b : array_like
        Paired scores of equal length.

    Returns
    -------
    float or None
        None when there are no pairs.
    """
    x, y = _pair(a, b)
    if x.size == 0:
        return None
    return float(np.mean(x == y))


def within_one(a: ArrayLike, b: ArrayLike) -> float | None:
    """Return the proportion of pairs with |a - b| <= 1 (adjacent agreement, in [0, 1]).

    "Within-one" / adjacent agreement as used for ordinal rating scales.

    Parameters
    ----------
    a, b : array_like
        Paired scores of equal length (score units).

    Returns
    -------
    float or None
        None when there are no pairs.
    """
    x, y = _pair(a, b)
    if x.size == 0:
        return None
    return float(np.mean(np.abs(x - y) <= 1.0))


def kappa_quadratic(
    a: ArrayLike, b: ArrayLike, labels: ArrayLike | None = None
) -> float | None:
    """Return quadratic-weighted Cohen's kappa (dimensionless, <= 1).

    Cohen (1968), "Weighted kappa", Psychol. Bull. 70:213-220.  Categories are
    the sorted ``labels`` if given, else the sorted union of observed values;
    the disagreement weight of categories at positions i, j is
    (i - j)^2 / (k - 1)^2 (position-based, as scikit-learn's
    ``cohen_kappa_score(weights='quadratic')``; pass the full scale as
    ``labels`` so unobserved levels keep their spacing)::

        kappa = 1 - sum(w * O) / sum(w * E),  E = outer(row marginals, col marginals)

    Parameters
    ----------
    a, b : array_like
        Paired ordinal scores.
    labels : array_like, optional
        Category set; must contain every observed value.

    Returns
    -------
    float or None
        None when undefined: no pairs, fewer than 2 categories, or zero expected
        disagreement (both raters constant).
    """
    x, y = _pair(a, b)
    if x.size == 0:
        return None
    if labels is None:
        cats = np.unique(np.concatenate([x, y]))
    else:
        cats = np.unique(_values(labels, "labels"))
        if not (np.all(np.isin(x, cats)) and np.all(np.isin(y, cats))):
            raise ValueError("labels must contain every observed value")
    k = cats.size
    if k < 2:
        return None
    ix = np.searchsorted(cats, x)
    iy = np.searchsorted(cats, y)
    obs = np.zeros((k, k), dtype=float)
    np.add.at(obs, (ix, iy), 1.0)
    obs /= x.size
    exp = np.outer(obs.sum(axis=1), obs.sum(axis=0))
    pos = np.arange(k, dtype=float)
    w = (pos[:, None] - pos[None, :]) ** 2 / (k - 1) ** 2
    de = float(np.sum(w * exp))
    if de == 0.0:
        return None
    return float(1.0 - float(np.sum(w * obs)) / de)


def krippendorff_alpha(a: ArrayLike, b: ArrayLike, level: str = "interval") -> float | None:
    """Return Krippendorff's alpha for two raters (dimensionless, <= 1).

    Krippendorff (2004/2011), "Computing Krippendorff's alpha-reliability",
    computed by the ``krippendorff`` package with
    ``reliability_data = np.vstack([a, b])``.

    Parameters
    ----------
    a, b : array_like
        Paired scores (no missing values).
    level : str
        Level of measurement: 'nominal', 'ordinal', 'interval' or 'ratio'.

    Returns
    -------
    float or None
        None when undefined: no pairs or fewer than 2 distinct values overall
        (zero expected disagreement).
    """
    if level not in ("nominal", "ordinal", "interval", "ratio"):
        raise ValueError(f"unknown level {level!r}")
    x, y = _pair(a, b)
    if x.size == 0:
        return None
    coded = _unique_inverse(np.concatenate([x, y]))  # (domain, inverse): once, for both steps
    if coded[0].size < 2:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        val = _krippendorff_two_raters(x, y, level, coded)
    return _f(val)


def small_integers(x: NDArray[np.float64]) -> tuple[float, NDArray[np.uint16], int] | None:
    """``(lo, v, width)`` with ``x == lo + v`` exactly (``v`` uint16 in ``[0, width)``) for
    finite integer values on a range narrower than 2**16 holding no -0.0 (whose sign
    ``lo + v`` would lose); else None. Their sorts are then counts or one packed key
    (:func:`_unique_inverse`, :func:`_average_ranks`, the scorecard's ``_IntegerValues``)."""
    if x.size == 0:
        return None
    lo, hi = float(x.min()), float(x.max())
    if not (hi - lo < 2**16 and np.all(x == np.floor(x))) or np.any(np.signbit(x) & (x == 0)):
        return None
    return lo, (x - lo).astype(np.uint16), int(hi - lo) + 1


def _unique_inverse(z: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """``np.unique(z, return_inverse=True)`` (the inverse flat, intp): for small integers
    (:func:`small_integers`) from counts, without the sort (the same values: equal values
    of such ``z`` are the same double)."""
    small = small_integers(z)
    if small is None:
        domain, inv = np.unique(z, return_inverse=True)
        return domain, np.asarray(inv, dtype=np.intp).reshape(-1)
    lo, v, width = small
    present = np.flatnonzero(np.bincount(v, minlength=width))
    lut = np.zeros(width, dtype=np.intp)
    lut[present] = np.arange(present.size)
    domain = present.astype(np.float64)
    domain += lo
    return domain, lut[v]


def _average_ranks(x: NDArray[np.float64]) -> NDArray[np.float64] | None:
    """``scipy.stats.rankdata(x)`` (average ranks) of small integers (:func:`small_integers`)
    from counts, without a sort; None for other values. Ranks are integers and halves, exact
    in floating point: the same numbers as :func:`average_ranks` and scipy's."""
    small = small_integers(x)
    if small is None:
        return None
    _, v, width = small
    counts = np.bincount(v, minlength=width)
    starts = np.cumsum(counts) - counts
    return ((starts + 1).astype(np.float64) + (counts - 1) / 2)[v]


def _krippendorff_two_raters(x: NDArray[np.float64], y: NDArray[np.float64], level: str,
                             coded: tuple[NDArray[np.float64], NDArray[np.intp]] | None = None) -> Any:
    """``krippendorff.alpha(reliability_data=np.vstack([x, y]), level_of_measurement=level)``
    for two raters who rated every unit, without its (units x values x values) array.

    The package sums, per unit, the outer product of the unit's value counts minus its
    diagonal over (pairable - 1); with two values per unit that is 1 for (a, b) and (b, a)
    (2 on the diagonal when a = b), so the coincidence matrix is C + C^T with C the
    (a, b) contingency counts: whole numbers, exact in float64, hence equal to the
    package's matrix bit for bit. The rest is the package's own code (random coincidences,
    distances, the ratio), so the value is the package's (a test compares them exactly).
    ``coded``: ``_unique_inverse`` of ``concatenate([x, y])``, when the caller has it.
    """
    _kd = _krippendorff.krippendorff  # the module: its private steps, pinned in requirements.lock
    domain, inv = coded if coded is not None else _unique_inverse(np.concatenate([x, y]))
    v = domain.size
    c = np.bincount(inv[: x.size] * v + inv[x.size :], minlength=v * v).reshape(v, v).astype(np.float64)
    o = c + c.T
    n_v = o.sum(axis=0)
    e = _kd._random_coincidences(n_v, dtype=np.float64)
    d = _kd._distances(domain, _kd._distance_metric(level), n_v, dtype=np.float64)
    return 1 - (o * d).sum() / (e * d).sum()


def spearman(a: ArrayLike, b: ArrayLike) -> float | None:
    """Return Spearman's rank correlation rho (dimensionless, in [-1, 1]).

    Spearman (1904); computed by ``scipy.stats.spearmanr`` (Pearson correlation
    of average ranks); for small integers (scores on a rubric) the average ranks come from
    counts (:func:`_average_ranks`, no sort) and the rest is spearmanr's own steps
    (:func:`spearman_ranked`): the same number, bit for bit.

    Parameters
    ----------
    a, b : array_like
        Paired scores.

    Returns
    -------
    float or None
        None when n < 2 or either input is constant.
    """
    x, y = _pair(a, b)
    if x.size < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return None
    rx = _average_ranks(x)
    ry = _average_ranks(y) if rx is not None else None
    if rx is not None and ry is not None:  # small integers: ranked from counts (no sort)
        return spearman_ranked(x, y, rx, ry)
    return _f(_sps.spearmanr(x, y).statistic)


def average_ranks(values: ArrayLike, order: ArrayLike, take: ArrayLike) -> NDArray[np.float64]:
    """``scipy.stats.rankdata(values[take])`` (ties get their average rank) for finite
    ``values``, from ``order``, a stable argsort of ``values`` computed once for many subsets
    ``take`` (distinct positions): the subset's sort is the full sort filtered, so there is no
    sort per subset. Ranks are integers and halves, exact in floating point: the same numbers."""
    v = np.asarray(values, dtype=np.float64)
    take = np.asarray(take, dtype=np.intp)
    where = np.full(v.size, -1, dtype=np.intp)
    where[take] = np.arange(take.size)
    sub = where[np.asarray(order, dtype=np.intp)]
    sub = sub[sub >= 0]  # positions in the subset, by value
    n = int(sub.size)
    out = np.empty(n, dtype=np.float64)
    if n == 0:
        return out
    y = v[take][sub]
    starts = np.flatnonzero(np.r_[True, y[1:] != y[:-1]])
    counts = np.diff(np.r_[starts, n])
    out[sub] = np.repeat((starts + 1).astype(np.float64) + (counts - 1) / 2, counts)
    return out


def spearman_ranked(a: ArrayLike, b: ArrayLike, rank_a: ArrayLike, rank_b: ArrayLike) -> float | None:
    """:func:`spearman` of ``a``, ``b`` given their average ranks (``scipy.stats.rankdata``
    of each), which a caller can compute once for many pairs. After the ranking these are
    ``scipy.stats.spearmanr``'s own steps: the ranked columns laid out as its
    ``apply_along_axis`` leaves them (a transposed 2 x n array), ``np.corrcoef`` with
    ``rowvar=0``, element [1, 0]: the same number, bit for bit. NaN or inf input raises
    ValueError, as in :func:`spearman`."""
    x, y = _pair(a, b)
    if x.size < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return None
    ranked = np.stack([np.asarray(rank_a, dtype=np.float64), np.asarray(rank_b, dtype=np.float64)]).T
    return _f(np.corrcoef(ranked, rowvar=0)[1, 0])  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# Multiplicity
# ---------------------------------------------------------------------------


def holm(pvalues: list[float | None]) -> list[float | None]:
    """Return Holm step-down adjusted p-values (same order; in [0, 1]).

    Holm (1979), "A simple sequentially rejective multiple test procedure",
    Scand. J. Stat. 6:65-70: with the m non-None p-values sorted ascending,
    adj_(i) = max_{j <= i} min(1, (m - j + 1) * p_(j)).

    Parameters
    ----------
    pvalues : list of float or None
        Raw p-values; None entries are passed through unchanged and excluded
        from the family (they do not count towards m).

    Returns
    -------
    list of float or None
        Adjusted p-values aligned with the input.
    """
    idx = [i for i, p in enumerate(pvalues) if p is not None]
    out: list[float | None] = [None] * len(pvalues)
    if not idx:
        return out
    p = np.array([float(pvalues[i]) for i in idx], dtype=float)  # type: ignore[arg-type]
    if np.any(np.isnan(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError("p-values must be in [0, 1] (use None for undefined)")
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adj_sorted = np.maximum.accumulate(scaled)
    adj = np.empty(m, dtype=float)
    adj[order] = adj_sorted
    for j, i in enumerate(idx):
        out[i] = float(adj[j])
    return out


def holm_stepdown_levels(pvalues: list[float | None], alpha: float = 0.05) -> list[float | None]:
    """Return the confidence level of each hypothesis's Holm-consistent interval.

    Holm's procedure tests the i-th smallest of m p-values at alpha / (m - i + 1) and stops
    at the first it cannot reject (p >= its level: the project calls a p significant when
    p < alpha). The interval that agrees with it (it excludes 0 exactly
    when the Holm-adjusted p is below ``alpha``; Strassburger & Bretz (2008), Stat. Med.
    27(24), in the two-sided form) has level 1 - alpha / (m - i + 1) for the hypothesis
    rejected at step i, and every hypothesis not rejected takes the level of the step where
    the procedure stopped, 1 - alpha / (m - j + 1). With m = 1 it is the 1 - alpha interval.
    These are the levels; the intervals are each estimate's t interval at its level.

    Parameters
    ----------
    pvalues : list of float or None
        Raw two-sided p-values; None entries are not in the family and get None.
    alpha : float
        The family's error rate.

    Returns
    -------
    list of float or None
        Confidence levels aligned with the input.
    """
    idx = [i for i, p in enumerate(pvalues) if p is not None]
    out: list[float | None] = [None] * len(pvalues)
    m = len(idx)
    order = sorted(idx, key=lambda i: float(pvalues[i]))  # type: ignore[arg-type]  # stable: ties keep input order
    level = 1.0 - alpha / m if m else None
    stopped = False
    for step, i in enumerate(order):
        if not stopped:
            level = 1.0 - alpha / (m - step)
            stopped = float(pvalues[i]) >= alpha / (m - step)  # type: ignore[arg-type]
        out[i] = level
    return out


# ---------------------------------------------------------------------------
# Power and sample size
# ---------------------------------------------------------------------------


def _check_alpha_power(alpha: float, power: float) -> None:
    if not (0.0 < alpha < 1.0):
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if not (0.0 < power < 1.0):
        raise ValueError(f"power must be in (0, 1), got {power!r}")


def mde(
    se: float | None, df: float | None = None, alpha: float = 0.05, power: float = 0.8
) -> float | None:
    """Return the minimum detectable effect (value units) for a two-sided test.

    MDE = (q_{1-alpha/2} + q_{power}) * se (Bloom 1995, "Minimum detectable
    effects", Evaluation Review 19:547-556), with q the Student-t quantile at
    ``df`` degrees of freedom, or the standard-normal quantile when df is None.

    Parameters
    ----------
    se : float or None
        Standard error of the estimate (value units).
    df : float, optional
        Degrees of freedom; None for the normal approximation.
    alpha : float
        Two-sided significance level.
    power : float
        Target power.

    Returns
    -------
    float or None
        None when se is None or df < 1.
    """
    _check_alpha_power(alpha, power)
    if se is None:
        return None
    if se < 0:
        raise ValueError(f"se must be >= 0, got {se}")
    if df is None:
        q = float(_sps.norm.ppf(1.0 - alpha / 2.0) + _sps.norm.ppf(power))
    else:
        if df < 1:
            return None
        q = float(_sps.t.ppf(1.0 - alpha / 2.0, df) + _sps.t.ppf(power, df))
    return float(q * se)


def n_needed(
    sd: float | None,
    effect: float | None,
    alpha: float = 0.05,
    power: float = 0.8,
    rho: float = 0.0,
    design_effect: float = 1.0,
    paired: bool = False,
) -> int | None:
    """Return the valid n per side needed to detect ``effect`` (count of values).

    Normal-approximation sample size for a two-sided two-sample comparison of
    means (e.g. Chow, Shao & Wang 2008, *Sample Size Calculations in Clinical
    Research*, sec. 3.2)::

        n = ceil(2 * (z_{1-alpha/2} + z_{power})^2 * sd^2 * (1 - rho) * deff / effect^2)

    where sd is the per-value standard deviation, rho the pairing correlation
    (Var(a - b) = 2 sd^2 (1 - rho); only allowed with ``paired=True``, then n is
    the number of pairs) and deff a design effect for clustering (Kish 1965).
    The result is floored at 2 (a variance needs two values per side).

    Parameters
    ----------
    sd : float or None
        Standard deviation of one value (value units).
    effect : float or None
        Difference in means to detect (value units), > 0.
    alpha : float
        Two-sided significance level.
    power : float
        Target power.
    rho : float
        Correlation between paired values, in [-1, 1]; must be 0 when unpaired.
    design_effect : float
        Variance inflation for clustering (>= 0; 1 for independent values).
    paired : bool
        Whether the comparison is paired (n = number of pairs).

    Returns
    -------
    int or None
        None when sd is None, effect is None or effect <= 0.
    """
    _check_alpha_power(alpha, power)
    if not (-1.0 <= rho <= 1.0):
        raise ValueError(f"rho must be in [-1, 1], got {rho!r}")
    if rho != 0.0 and not paired:
        raise ValueError("rho (pairing correlation) must be 0 for an unpaired comparison")
    if design_effect < 0:
        raise ValueError(f"design_effect must be >= 0, got {design_effect!r}")
    if sd is None or effect is None or effect <= 0:
        return None
    if sd < 0:
        raise ValueError(f"sd must be >= 0, got {sd!r}")
    z = float(_sps.norm.ppf(1.0 - alpha / 2.0) + _sps.norm.ppf(power))
    raw = 2.0 * z * z * sd * sd * (1.0 - rho) * design_effect / (effect * effect)
    # Guard against 62.99999999 vs 63 style float noise before ceil.
    n = math.ceil(raw - 1e-9 * max(1.0, raw))
    return int(max(n, 2))


def order_statistic_n(q: float, c: float) -> int:
    """Return the smallest n with q**n <= 1 - c (a sample count).

    Distribution-free order-statistic sample size (Wilks 1941, "Determination
    of sample sizes for setting tolerance limits", Ann. Math. Stat. 12:91-96):
    with n i.i.d. draws the maximum exceeds the q-quantile with probability
    1 - q**n >= c.  q = c = 0.95 gives 59.

    Parameters
    ----------
    q : float
        Quantile (coverage) in (0, 1).
    c : float
        Confidence in (0, 1).

    Returns
    -------
    int
        The minimal n (always defined for valid inputs).
    """
    if not (0.0 < q < 1.0) or not (0.0 < c < 1.0):
        raise ValueError(f"q and c must be in (0, 1), got q={q!r}, c={c!r}")
    target = 1.0 - c
    n = max(1, math.ceil(math.log(target) / math.log(q)))
    while n > 1 and q ** (n - 1) <= target:
        n -= 1
    while q**n > target:
        n += 1
    return int(n)


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


# ---------------------------------------------------------------------------
# Design-respecting methods (scenario clusters, items, seeds per cell)
# ---------------------------------------------------------------------------


def derive_seed(base: int, *key: Any) -> int:
    """Return a seed for one cell derived from a base seed and the cell's key (an int).

    SHA-256 of the base and the key parts (``repr`` of each, joined by a unit separator),
    first 8 bytes as an unsigned integer reduced below 2**63.  Two cells with different keys
    get unrelated bootstrap draws; the same key always gets the same seed.
    """
    import hashlib

    text = "\x1f".join([str(int(base)), *(repr(k) for k in key)])
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") % (2**63)


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


#: units x resamples above which :func:`block_permutation_test` uses the large-sample form of
#: its permutation distribution (:func:`block_permutation_asymptotic`) instead of resampling
PERMUTATION_EXACT_BUDGET = 10_000_000
#: ... provided at least this many blocks can change the table under permutation (units that
#: differ, two labels or more); with fewer the chi-square reference is too coarse (e.g. a
#: McNemar test on a handful of discordant items) and the Monte-Carlo test is kept
PERMUTATION_MIN_BLOCKS = 50


def _permutation_inputs(missing: ArrayLike, totals: ArrayLike, labels: ArrayLike, blocks: ArrayLike
                        ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.intp],
                                   NDArray[np.intp], int, float] | None:
    """Checked inputs of the block permutation tests: (missing, totals, label codes, block
    codes, labels, pooled missing rate), or None when the test is undefined (fewer than 2
    labels with judgments, or no judgment or every one missing)."""
    m = _values(missing, "missing")
    t = _values(totals, "totals")
    if m.shape != t.shape or np.any(m < 0) or np.any(m > t):
        raise ValueError("need 0 <= missing <= totals per unit, same length")
    lab, k = _codes(labels, m.size, "labels")
    blk, _ = _codes(blocks, m.size, "blocks")
    tot_m, tot_n = float(m.sum()), float(t.sum())
    per_label = np.bincount(lab, weights=t, minlength=k) if m.size else np.zeros(0)
    if m.size == 0 or int(np.sum(per_label > 0)) < 2 or tot_m == 0.0 or tot_m == tot_n:
        return None
    return m, t, lab, blk, k, tot_m / tot_n


def block_permutation_test(
    missing: ArrayLike,
    totals: ArrayLike,
    labels: ArrayLike,
    blocks: ArrayLike,
    resamples: int = 2000,
    seed: int = 0,
    exact_budget: int | None = PERMUTATION_EXACT_BUDGET,
) -> TestResult:
    """Permutation test of "the missing rate does not depend on the label", units kept whole.

    Each *unit* (e.g. an item: every judgment of one scenario x variant x trial; or one
    judge's judgment within an item) carries ``missing`` of ``totals`` judgments and one
    label (variant, or judge).  The statistic is Pearson's chi-square of the labels x
    [missing, scored] table of judgments.  Its null distribution permutes the labels among
    the units *within each block* (scenarios for the variant factor, items for the judge
    factor), ``resamples`` times: judgments of one unit move together, and a scenario's (or
    item's) own rate is held fixed, so a failure that hits a whole item, or a scenario that
    fails more than another, is not mistaken for a label effect (Good 2005, *Permutation,
    Parametric and Bootstrap Tests of Hypotheses*, ch. 3, restricted randomization).
    p = (1 + #{stat >= observed (rel. tol. 1e-9)}) / (1 + B).

    Large designs: the Monte-Carlo test costs ``units x resamples``. When that product exceeds
    ``exact_budget`` (default :data:`PERMUTATION_EXACT_BUDGET`, 10 million: 5,000 units at
    2,000 permutations, about 0.3 s; None: always exact) and at least
    :data:`PERMUTATION_MIN_BLOCKS` (50) blocks can change the table, the same within-block
    permutation distribution is used in its large-sample form, :func:`block_permutation_asymptotic`
    (exact permutation mean and covariance of the per-label missing-minus-expected counts,
    summed over blocks, and a chi-square with k - 1 df); its cost grows with the units once
    (no resampling) and ``seed`` is unused. Below the budget the result is unchanged.

    Returns
    -------
    TestResult
        statistic (chi-square), p-value, method ``'block_permutation'`` (or
        ``'block_permutation_asymptotic'`` above the budget, whose statistic is the quadratic
        form Q, not Pearson's); 'undefined' (None, None) when fewer than 2 labels have
        judgments or no judgment (or every one) is missing.
    """
    b = _check_resamples(resamples)
    inputs = _permutation_inputs(missing, totals, labels, blocks)
    if inputs is None:
        return TestResult(None, None, "undefined")
    m, t, lab, blk, k, p0 = inputs
    tot_n = float(t.sum())
    if exact_budget is not None and m.size * b > exact_budget:
        moments = _block_permutation_moments(m, t, lab, blk, k, p0)
        if moments[3] >= PERMUTATION_MIN_BLOCKS:
            return _block_permutation_asymptotic(m, t, lab, blk, k, p0, moments)

    def chi2(lab_codes: NDArray[np.intp], width: int) -> NDArray[np.float64]:
        # lab_codes: (S, U) label codes per unit; returns (S,) chi-square statistics
        s = lab_codes.shape[0]
        flat = (np.arange(s)[:, None] * k + lab_codes).ravel()
        mm = np.bincount(flat, weights=np.tile(m, s), minlength=s * k).reshape(s, k)
        nn = np.bincount(flat, weights=np.tile(t, s), minlength=s * k).reshape(s, k)
        em, es = nn * p0, nn * (1.0 - p0)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(nn > 0, (mm - em) ** 2 / em + ((nn - mm) - es) ** 2 / es, 0.0)
        return terms.sum(axis=1)

    obs = float(chi2(lab[None, :], m.size)[0])
    order = np.argsort(blk, kind="stable")
    blk_s, lab_s = blk[order], lab[order]
    m, t = m[order], t[order]
    rng = np.random.default_rng(seed)
    tol = 1e-9 * max(1.0, obs)
    sizes = np.bincount(blk)
    if _integral(m) and _integral(t) and tot_n < 2.0**24 and 2 * int(sizes[sizes > 8].sum()) < m.size:
        exceed = _block_exceed(m, t, lab_s, blk_s, k, p0, obs - tol, b, rng)
    else:  # non-integer counts, or mostly large blocks (where one sort of all units is as fast)
        exceed = 0
        for size in _chunks(b, m.size):
            keys = blk_s[None, :] + rng.random((size, m.size))
            perm = np.argsort(keys, axis=1, kind="stable")
            exceed += int(np.sum(chi2(lab_s[perm], m.size) >= obs - tol))
    return TestResult(obs, float((1.0 + exceed) / (1.0 + b)), "block_permutation")


def block_permutation_asymptotic(
    missing: ArrayLike,
    totals: ArrayLike,
    labels: ArrayLike,
    blocks: ArrayLike,
) -> TestResult:
    """Large-sample form of :func:`block_permutation_test`'s permutation distribution.

    Same null and same permutations (labels permuted among the units of each block, units
    kept whole), no resampling. Each unit i carries ``y_i = missing_i - p0 * totals_i``
    (p0: the pooled missing rate), and ``D_l`` is the sum of ``y`` over the units labelled l
    (missing minus expected judgments of label l; the numerator of Pearson's residual).
    Under the permutation, with a block b of ``N_b`` units, ``n_bl`` of them labelled l, mean
    ``ybar_b`` and variance ``s2_b = sum_i (y_i - ybar_b)^2 / (N_b - 1)`` (0 when N_b = 1), the
    per-block sums are a sample without replacement, so exactly::

        E[D_l]          = sum_b n_bl * ybar_b
        Cov[D_l, D_l']  = sum_b s2_b * (n_bl * [l == l'] - n_bl * n_bl' / N_b)

    (blocks are permuted independently: their moments add). The statistic is the quadratic
    form ``Q = (D - E)' V^+ (D - E)`` (V^+: Moore-Penrose inverse; V has rank <= k - 1, since
    every permutation keeps sum_l D_l), the generalized Cochran-Mantel-Haenszel statistic
    for a linear permutation statistic (Landis, Heyman & Koch 1978, *Int. Stat. Rev.* 46),
    referred to a chi-square with rank(V) df; with two labels it is the squared
    standardized normal deviate of one group's sum. A design that no permutation can change
    (V = 0) gives Q = 0, p = 1, as the exact test would.

    Returns
    -------
    TestResult
        statistic Q, p-value, method ``'block_permutation_asymptotic'``; 'undefined' as in
        :func:`block_permutation_test`.
    """
    inputs = _permutation_inputs(missing, totals, labels, blocks)
    if inputs is None:
        return TestResult(None, None, "undefined")
    return _block_permutation_asymptotic(*inputs)


def _block_permutation_moments(m: NDArray[np.float64], t: NDArray[np.float64], lab: NDArray[np.intp],
                               blk: NDArray[np.intp], k: int, p0: float
                               ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], int]:
    """(D observed, E[D], Cov[D], blocks that a permutation can change) under within-block permutation.

    The unit-sized arrays are made in place (the same operations on the same values): at
    most two alive at once besides the inputs (a judge test has one unit per judgment)."""
    y = p0 * t
    np.subtract(m, y, out=y)  # m - p0 * t
    g = int(blk.max()) + 1
    size = np.bincount(blk, minlength=g).astype(float)
    ybar = np.bincount(blk, weights=y, minlength=g) / np.maximum(size, 1.0)
    dev = ybar[blk]
    np.subtract(y, dev, out=dev)  # y - ybar[blk]
    np.multiply(dev, dev, out=dev)  # its square
    ss = np.bincount(blk, weights=dev, minlength=g)
    del dev
    s2 = np.where(size > 1, ss / np.maximum(size - 1.0, 1.0), 0.0)
    cell = blk * k
    cell += lab
    nbl = np.bincount(cell, minlength=g * k).reshape(g, k).astype(float)
    del cell
    d = np.bincount(lab, weights=y, minlength=k)
    e = nbl.T @ ybar
    cov = np.diag(nbl.T @ s2) - (nbl * (s2 / np.maximum(size, 1.0))[:, None]).T @ nbl
    # a block moves the table only if its units differ and it holds two labels or more
    varying = int(np.sum((s2 > 0) & (np.sum(nbl > 0, axis=1) > 1)))
    return d, e, (cov + cov.T) / 2.0, varying


def _block_permutation_asymptotic(m: NDArray[np.float64], t: NDArray[np.float64], lab: NDArray[np.intp],
                                  blk: NDArray[np.intp], k: int, p0: float,
                                  moments: tuple[Any, ...] | None = None) -> TestResult:
    d, e, cov, _ = moments if moments is not None else _block_permutation_moments(m, t, lab, blk, k, p0)
    w, vec = np.linalg.eigh(cov)
    top = float(w.max()) if w.size else 0.0
    keep = w > 1e-10 * top if top > 0 else np.zeros(w.size, dtype=bool)
    df = int(keep.sum())
    if df == 0:
        return TestResult(0.0, 1.0, "block_permutation_asymptotic")
    z = vec[:, keep].T @ (d - e)
    q = float(np.sum(z * z / w[keep]))
    return TestResult(q, float(_sps.chi2.sf(q, df)), "block_permutation_asymptotic")


#: within-block label arrangements (distinct per-label sums) up to which
#: :func:`block_permutation_enumerated` enumerates them all
PERMUTATION_ENUMERATION_LIMIT = 2000


def _pearson_rows(mm: NDArray[np.float64], nn: NDArray[np.float64], p0: float) -> NDArray[np.float64]:
    """Pearson's chi-square of each row's labels x [missing, scored] table (rows: per-label
    missing ``mm`` and totals ``nn``, pooled rate ``p0``): :func:`block_permutation_test`'s statistic."""
    em, es = nn * p0, nn * (1.0 - p0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(nn > 0, (mm - em) ** 2 / em + ((nn - mm) - es) ** 2 / es, 0.0)
    return np.asarray(terms.sum(axis=1), dtype=np.float64)


def _multiset_permutations(labels: list[int]) -> list[tuple[int, ...]]:
    """Every distinct ordering of ``labels`` (a multiset), each once."""
    counts: dict[int, int] = {}
    for v in labels:
        counts[v] = counts.get(v, 0) + 1
    out: list[tuple[int, ...]] = []
    seq: list[int] = []

    def rec() -> None:
        if len(seq) == len(labels):
            out.append(tuple(seq))
            return
        for v in sorted(counts):
            if counts[v]:
                counts[v] -= 1
                seq.append(v)
                rec()
                seq.pop()
                counts[v] += 1
    rec()
    return out


def block_permutation_enumerated(
    missing: ArrayLike,
    totals: ArrayLike,
    labels: ArrayLike,
    blocks: ArrayLike,
    limit: int = PERMUTATION_ENUMERATION_LIMIT,
) -> TestResult | None:
    """The exact p of :func:`block_permutation_test` by full enumeration, or None when the
    design has too many arrangements (then use the Monte-Carlo test).

    Every distinct assignment of the labels to the units of each block (the within-block
    permutations, each block independently, all equally likely) is enumerated; arrangements
    that give a block the same per-label (missing, total) sums are merged with their
    multiplicity, so p = P(chi-square >= observed (rel. tol. 1e-9)) exactly, without the
    Monte-Carlo +1. None when a block has more than ``limit`` distinct label orderings (or
    more than 64 units) or the product over blocks of their distinct sums exceeds ``limit``.

    Returns
    -------
    TestResult or None
        statistic (chi-square), exact p, method ``'block_permutation_exact'``; 'undefined'
        as in :func:`block_permutation_test`.
    """
    inputs = _permutation_inputs(missing, totals, labels, blocks)
    if inputs is None:
        return TestResult(None, None, "undefined")
    m, t, lab, blk, k, p0 = inputs
    obs_mm = np.bincount(lab, weights=m, minlength=k)
    obs_nn = np.bincount(lab, weights=t, minlength=k)
    obs = float(_pearson_rows(obs_mm[None, :], obs_nn[None, :], p0)[0])
    order = np.argsort(blk, kind="stable")
    lab_s, blk_s, m_s, t_s = lab[order], blk[order], m[order], t[order]
    starts = np.flatnonzero(np.r_[True, blk_s[1:] != blk_s[:-1]])
    ends = np.r_[starts[1:], lab_s.size]
    # a block of two labels or more whose units differ has at least two distinct sums (swap
    # two differing units of different labels): more such blocks than log2(limit), too many
    sizes = np.diff(np.r_[starts, lab_s.size])
    first = np.repeat(starts, sizes)
    differs = np.logical_or.reduceat((m_s != m_s[first]) | (t_s != t_s[first]), starts)
    mixed = np.logical_or.reduceat(lab_s != lab_s[first], starts)
    if int(np.sum(differs & mixed)) > math.log2(max(limit, 1)):
        return None
    vals = np.zeros((1, 2 * k))
    prob = np.ones(1)
    for lo, hi in zip(starts.tolist(), ends.tolist(), strict=True):
        bl, bm, bt = lab_s[lo:hi], m_s[lo:hi], t_s[lo:hi]
        if np.unique(bl).size < 2 or (np.all(bm == bm[0]) and np.all(bt == bt[0])):
            fixed = np.r_[np.bincount(bl, weights=bm, minlength=k), np.bincount(bl, weights=bt, minlength=k)]
            vals = vals + fixed[None, :]
            continue
        size = hi - lo
        counts = np.bincount(bl)
        log_n = math.lgamma(size + 1) - sum(math.lgamma(c + 1) for c in counts)
        if size > 64 or log_n > math.log(limit) + 1e-9:
            return None
        seqs = np.array(_multiset_permutations(bl.tolist()), dtype=np.intp)  # (c, size)
        c = seqs.shape[0]
        flat = (np.arange(c)[:, None] * k + seqs).ravel()
        sm = np.bincount(flat, weights=np.tile(bm, c), minlength=c * k).reshape(c, k)
        st = np.bincount(flat, weights=np.tile(bt, c), minlength=c * k).reshape(c, k)
        uniq, inv = np.unique(np.hstack([sm, st]), axis=0, return_inverse=True)
        w = np.bincount(inv.reshape(-1), minlength=uniq.shape[0]) / float(c)
        if vals.shape[0] * uniq.shape[0] > limit:
            return None
        vals = (vals[:, None, :] + uniq[None, :, :]).reshape(-1, 2 * k)
        prob = (prob[:, None] * w[None, :]).reshape(-1)
    stat = _pearson_rows(vals[:, :k], vals[:, k:], p0)
    tol = 1e-9 * max(1.0, obs)
    p = float(prob[stat >= obs - tol].sum() / prob.sum())
    return TestResult(obs, min(1.0, p), "block_permutation_exact")


def block_permutation_min_p(labels: ArrayLike, blocks: ArrayLike) -> float | None:
    """The smallest p-value a within-block permutation test can reach on this design.

    The design is the labels of the units in each block (the data aside). With ``N`` the
    number of distinct within-block label arrangements (prod over blocks of
    ``N_b! / prod_l n_bl!``) and ``G`` the relabelings that leave every block's label counts
    unchanged (labels with the same count in every block may be swapped: ``prod (class
    size)!``), a label-symmetric statistic (Pearson's chi-square, the quadratic form of
    :func:`block_permutation_asymptotic`) takes its observed value on at least ``|G|``
    equally likely arrangements, so p >= |G| / N, with equality when every unit differs.
    Example: 2 variants in each of 3 scenarios, one block each: N = 2^3, |G| = 2, min p =
    0.25, so the test cannot reject at 5 %. None for no units.
    """
    lab_arr = _labels(labels, "labels")
    n = int(lab_arr.shape[0])
    if n == 0:
        return None
    lab, k = _codes(labels, n, "labels")
    blk, g = _codes(blocks, n, "blocks")
    nbl = np.bincount(blk * k + lab, minlength=g * k).reshape(g, k)
    present = nbl[:, nbl.sum(axis=0) > 0]
    _, classes = np.unique(present.T, axis=0, return_counts=True)
    log_n = float(np.sum(_sps_special.gammaln(nbl.sum(axis=1) + 1.0)) - np.sum(_sps_special.gammaln(nbl + 1.0)))
    log_g = float(np.sum(_sps_special.gammaln(classes + 1.0)))
    if log_n > 690.0:  # beyond 1e300 arrangements: the float form (exact integers would be slow)
        return float(math.exp(log_g - log_n))
    arrangements = 1  # exact integers: the ratio is the correctly rounded float
    for row in nbl.tolist():
        left = sum(row)
        for c in row:
            arrangements *= math.comb(left, c)
            left -= c
    relabelings = math.prod(math.factorial(c) for c in classes.tolist())
    return float(min(1.0, relabelings / arrangements))


def _integral(x: NDArray[np.float64]) -> bool:
    return bool(np.all(x == np.floor(x)))


def _block_exceed(m: NDArray[np.float64], t: NDArray[np.float64], lab_s: NDArray[np.intp],
                  blk_s: NDArray[np.intp], k: int, p0: float, threshold: float, b: int,
                  rng: np.random.Generator) -> int:
    """How many of ``b`` within-block permutations reach ``threshold`` (units sorted by block).

    The same permutations as sorting ``blk_s + U(0, 1)`` keys over all units at once (the
    reference loop kept in :func:`block_permutation_test` for non-integer counts and for
    designs of mostly large blocks, where it is as fast), from the
    same random draws, but work only where a permutation can change the table: a block whose
    units all carry the same (missing, total) gives the same per-label sums under every
    permutation (added once; skipped when most blocks of its size are such), and the others
    are ordered within their block (a key is
    ``block + u`` with ``u`` in [0, 1), so no key leaves its block: the global stable sort is
    the concatenation of the per-block stable sorts, ties included). Blocks of up to 8 units
    are ranked by pairwise comparison instead of a sort. Counts are integers, so the per-label
    sums, and hence every statistic, are exactly the reference's, whatever the summation order.
    """
    u = m.size
    starts = np.flatnonzero(np.r_[True, blk_s[1:] != blk_s[:-1]])
    sizes = np.diff(np.r_[starts, u])
    first = np.repeat(starts, sizes)
    varies = np.logical_or.reduceat((m != m[first]) | (t != t[first]), starts)
    for kb in np.unique(sizes[varies]):
        # skipping the constant blocks of a size costs a gather: worth it when most are
        same = sizes == kb
        if 2 * int(np.sum(varies & same)) >= int(np.sum(same)):
            varies |= same
    fixed = np.repeat(~varies, sizes)
    base_m = np.bincount(lab_s[fixed], weights=m[fixed], minlength=k)
    base_t = np.bincount(lab_s[fixed], weights=t[fixed], minlength=k)
    # missing and total travel packed in one float, m * 2**24 + t, so one gather and one sum
    # carry both; exact while every sum stays below 2**53 (t < 2**24 per label)
    pack = float(2**24)
    packed = m * pack + t
    classes = []
    for kb in np.unique(sizes[varies]):
        kb = int(kb)
        idx = starts[varies & (sizes == kb)][:, None] + np.arange(kb)[None, :]  # (blocks, kb)
        # a block's totals all equal (every item judged by as many judges): the per-label
        # totals do not move, whatever the permutation
        t_fixed = bool(np.all(t[idx] == t[idx][:, :1]))
        if kb <= 8:  # unit-major layout (kb, blocks): contiguous slices per unit position
            idx = np.ascontiguousarray(idx.T)
        onehot = (lab_s[idx].reshape(-1)[:, None] == np.arange(k)[None, :]).astype(float)
        if t_fixed:
            base_t = base_t + onehot.T @ t[idx].reshape(-1)
        vals = m[idx] if t_fixed else packed[idx]
        classes.append((kb, idx.shape, idx.reshape(-1), blk_s[idx].astype(float), lab_s[idx], vals,
                        onehot, t_fixed))
    exceed = 0
    chunks = _chunks(b, u)
    rbuf = np.empty((max(chunks, default=0), u))  # reused: fresh pages per chunk cost a quarter
    for size in chunks:
        r = rbuf[:size]
        rng.random(out=r)  # the same draws, in the same order, as rng.random((size, u))
        mm = np.tile(base_m.astype(float), (size, 1))
        nn = np.tile(base_t.astype(float), (size, 1))
        for kb, shape, flat_idx, bk, lb, vals, onehot, t_fixed in classes:
            keys = np.take(r, flat_idx, axis=1).reshape(size, *shape)
            keys += bk[None]  # the reference's float keys, rounding ties included
            if kb <= 8:
                nb = shape[1]
                # rank of unit j in its block (stable order) = the position its label moves to
                rank = np.empty((size, kb, nb), dtype=np.int8)
                for j in range(kb):
                    rank[:, j] = kb - 1 - j
                for i in range(kb):
                    for j in range(i + 1, kb):
                        le = keys[:, i] <= keys[:, j]
                        rank[:, j] += le
                        rank[:, i] -= le
                # unit j's label lands on position rank_j: it takes that position's counts
                got = vals[rank, np.arange(nb)[None, None, :]].reshape(size, -1) @ onehot
            else:
                nb = shape[0]
                perm = np.argsort(keys, axis=2, kind="stable")
                lab_got = lb[np.arange(nb)[None, :, None], perm]  # label received by each position
                fl = (np.arange(size)[:, None, None] * k + lab_got).reshape(-1)
                got = np.bincount(fl, weights=np.broadcast_to(vals[None], lab_got.shape).reshape(-1),
                                  minlength=size * k).reshape(size, k)
            if t_fixed:
                mm += got
            else:
                got_m = np.floor(got / pack)
                mm += got_m
                nn += got - got_m * pack
        em, es = nn * p0, nn * (1.0 - p0)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(nn > 0, (mm - em) ** 2 / em + ((nn - mm) - es) ** 2 / es, 0.0)
        exceed += int(np.sum(terms.sum(axis=1) >= threshold))
    return exceed


def sign_flip_test(
    diffs: ArrayLike, clusters: ArrayLike, resamples: int = 10000, seed: int = 0
) -> float | None:
    """Two-sided randomization p-value of "mean difference = 0" flipping whole clusters.

    Under the null each scenario's differences are symmetric about 0, so the sign of every
    cluster's sum S_g may be flipped (Fisher 1935; cluster sign-flip / wild cluster
    randomization, Canay, Romano & Shaikh 2017, Econometrica 85:1013-1030).  Statistic
    |sum_g e_g S_g|; all 2^G sign patterns are enumerated when G <= 12 (exact), otherwise
    ``resamples`` random patterns plus the observed one.  Note the smallest attainable
    p-value is 2 / 2^G: with G <= 5 scenarios it cannot reach 0.05.

    Returns
    -------
    float or None
        p-value in (0, 1]; None when G < 2 or every difference is 0.
    """
    d = _values(diffs, "diffs")
    codes, g = _codes(clusters, d.size)
    if g < 2 or not np.any(d != 0.0):
        return None
    sums = np.bincount(codes, weights=d, minlength=g)
    obs = abs(float(sums.sum()))
    tol = 1e-9 * max(1.0, obs)
    if g <= 12:
        pats = ((np.arange(2**g)[:, None] >> np.arange(g)[None, :]) & 1) * 2.0 - 1.0
        stat = np.abs(pats @ sums)
        return float(np.mean(stat >= obs - tol))
    b = _check_resamples(resamples)
    with one_blas_thread():
        return _sign_flip_monte_carlo(sums, b, seed)


def _sign_flip_monte_carlo(sums: NDArray[np.float64], b: int, seed: int) -> float:
    """The Monte-Carlo sign-flip p from the cluster sums (BLAS threads set by the caller)."""
    g = sums.size
    obs = abs(float(sums.sum()))
    tol = 1e-9 * max(1.0, obs)
    bits = _CoinFlips(np.random.default_rng(seed))
    exceed = 0
    for size in _chunks(b, g):
        pats = bits.signs(size, g)
        exceed += int(np.sum(np.abs(pats @ sums) >= obs - tol))
    return float((1.0 + exceed) / (1.0 + b))


#: clusters above which :func:`sign_flip` uses the large-sample form of the sign-flip
#: distribution (:func:`sign_flip_asymptotic`) instead of random patterns ...
SIGN_FLIP_ASYMPTOTIC_CLUSTERS = 200
#: ... provided no cluster holds more than this share of sum_g S_g^2 (the variance of the
#: sign-flip distribution): one dominant cluster makes it bimodal, not normal. Chosen from
#: :func:`workbench.calibrate.sign_flip_check` (96,000 null data sets, ``docs/calibration/
#: sign_flip.csv``): with the largest share below 0.2 the normal form's p is within 0.04 of
#: the Monte-Carlo p (1,000 patterns) wherever either is below 0.1, and the two reject as
#: often at 5% and 1%; from 0.2 it turns conservative (0.4 and more: 1.6% against 5.0%).
#: Below 200 clusters the Monte-Carlo test costs milliseconds: nothing to gain there.
SIGN_FLIP_ASYMPTOTIC_SHARE = 0.1


def _cluster_sums(diffs: ArrayLike, clusters: ArrayLike) -> NDArray[np.float64] | None:
    """Per-cluster sums S_g of the differences (cluster codes in label order), or None when
    the test is undefined (fewer than 2 clusters, or every difference 0)."""
    d = _values(diffs, "diffs")
    codes, g = _codes(clusters, d.size)
    if g < 2 or not np.any(d != 0.0):
        return None
    return np.bincount(codes, weights=d, minlength=g)


def sign_flip_asymptotic(diffs: ArrayLike, clusters: ArrayLike) -> float | None:
    """Large-sample form of :func:`sign_flip_test`'s randomization distribution.

    Under the sign flips, T = sum_g e_g S_g (e_g = +-1 with probability 1/2 each,
    independently) has mean 0 and variance exactly sum_g S_g^2, and is approximately normal
    when no cluster dominates that variance (Lindeberg). Two-sided
    p = 2 * (1 - Phi(|sum_g S_g| / sqrt(sum_g S_g^2))); 1 when every S_g is 0 (no pattern
    moves T, as in the exact test). The t reference with G - 1 df was measured too and is
    only more conservative (``docs/calibration/sign_flip.csv``).

    Returns
    -------
    float or None
        p-value in [0, 1] (0 only when the normal tail underflows, z above about 38); None
        when G < 2 or every difference is 0.
    """
    sums = _cluster_sums(diffs, clusters)
    return None if sums is None else _sign_flip_normal_p(sums)


def _sign_flip_normal_p(sums: NDArray[np.float64]) -> float:
    ss = float(np.sum(sums * sums))
    if ss == 0.0:
        return 1.0
    return float(min(1.0, 2.0 * _sps.norm.sf(abs(float(sums.sum())) / math.sqrt(ss))))


def sign_flip(diffs: ArrayLike, clusters: ArrayLike, resamples: int = 10000, seed: int = 0) -> TestResult:
    """The sign-flip test of "mean difference = 0", in the form the design calls for.

    ``method`` ``'exact'`` (G <= 12: all 2^G patterns, :func:`sign_flip_test`),
    ``'monte_carlo'`` (``resamples`` random patterns, :func:`sign_flip_test`) or
    ``'asymptotic'`` (more than :data:`SIGN_FLIP_ASYMPTOTIC_CLUSTERS` clusters and none
    holding more than :data:`SIGN_FLIP_ASYMPTOTIC_SHARE` of sum_g S_g^2:
    :func:`sign_flip_asymptotic`, O(G) instead of resamples x G; ``seed`` unused), the
    thresholds chosen by the size simulation in :func:`workbench.calibrate.sign_flip_check`;
    ``'undefined'`` (None, None) when G < 2 or every difference is 0. ``statistic`` is
    |sum_g S_g|. Below the thresholds the p-value is :func:`sign_flip_test`'s, unchanged.
    """
    sums = _cluster_sums(diffs, clusters)
    if sums is None:
        return TestResult(None, None, "undefined")
    obs = abs(float(sums.sum()))
    g = sums.size
    if g <= 12:
        return TestResult(obs, sign_flip_test(diffs, clusters, resamples, seed), "exact")
    if g > SIGN_FLIP_ASYMPTOTIC_CLUSTERS:
        sq = sums * sums
        ss = float(sq.sum())
        if ss > 0.0 and float(sq.max()) <= SIGN_FLIP_ASYMPTOTIC_SHARE * ss:
            return TestResult(obs, _sign_flip_normal_p(sums), "asymptotic")
    b = _check_resamples(resamples)
    with one_blas_thread():
        return TestResult(obs, _sign_flip_monte_carlo(sums, b, seed), "monte_carlo")


class _CoinFlips:
    """The 0/1 draws of successive ``rng.integers(0, 2, size)`` calls, from the raw stream.

    numpy (2.x, PCG64) draws an int64 in [0, 2) as the top bit of one 32-bit draw (Lemire's
    method with range 2 never rejects), the 32-bit draws being the low then the high half of
    each 64-bit output, the pending high half kept between calls. Taking bits 31 and 63 of
    ``random_raw`` gives the same 0/1 sequence (``tests/test_stats.py`` checks it against
    ``rng.integers`` over several chunks, odd lengths included) at a fifth of the cost: the
    sign-flip test's patterns, and so its p-values, are unchanged.
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self._bitgen = rng.bit_generator
        self._pending: int | None = None

    def take(self, n: int) -> NDArray[np.uint8]:
        """The next ``n`` draws (0 or 1)."""
        head = [] if self._pending is None or not n else [self._pending]
        m = n - len(head)
        if head:
            self._pending = None
        raw = self._bitgen.random_raw((m + 1) // 2)
        # bits 31 and 63 are the top bits of bytes 3 and 7 (little-endian) of each output
        flat = (raw.view(np.uint8)[3::4] >> 7 if sys.byteorder == "little" else
                np.stack([(raw >> np.uint64(31)) & np.uint64(1), raw >> np.uint64(63)], axis=1)
                .astype(np.uint8).reshape(-1))
        if m % 2:
            self._pending = int(flat[m])
        return np.concatenate([np.array(head, dtype=np.uint8), flat[:m]]) if head else flat[:m]

    def signs(self, rows: int, cols: int) -> NDArray[np.float64]:
        """``rng.integers(0, 2, (rows, cols)) * 2.0 - 1.0``: the next sign patterns."""
        return _PLUS_MINUS[self.take(rows * cols).reshape(rows, cols)]


_PLUS_MINUS = np.array([-1.0, 1.0])


def one_blas_thread() -> Any:
    """A context in which BLAS uses one thread: the one home of that rule.

    A BLAS product's rounding depends on how it splits the work across threads (measured:
    with 1 against 2 threads, 17 of 30 large matrix-vector products and 20 of 30 dot
    products differed in the last bits), so without it a result could depend on the
    machine's core count. On a shared machine OpenBLAS threads also spin-wait (the sign-flip
    products cost about twice the CPU with 2 threads under load). :func:`workbench.pipeline.run`
    and the calibration run entirely inside it; the functions here that multiply with BLAS
    (:func:`sign_flip_test`, the joint bootstrap) enter it themselves for direct callers.
    """
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")

def power_t(effect: float, se: float, df: float, alpha: float = 0.05) -> float:
    """Power of a two-sided t test of size ``alpha`` when the true effect is ``effect``.

    Noncentral t (``scipy.stats.nct``) with noncentrality effect / se and ``df`` degrees of
    freedom: P(|T| > t_{1-alpha/2, df}) = sf(c; nc) + sf(c; -nc), the lower tail
    P(T < -c; nc) written as the upper tail of the mirrored distribution. The direct form
    ``nct.cdf(-c, df, nc)`` is NaN in scipy 1.17 for noncentralities above about 7.6 at every
    df (a third of a 0-40 grid): a NaN power compared as "below target", and the sample-size
    searches walked past the answer (``trials_needed`` 96 became 789). The mirrored form is
    finite and non-decreasing in nc on that grid (df 1 to 10^5), equal to the direct form to
    6e-16 where both exist; a non-finite value would fall back to the normal approximation.
    """
    if se <= 0:
        return 1.0 if effect != 0 else alpha
    crit = _t_ppf(1.0 - alpha / 2.0, df)  # float(t.ppf), remembered (the same number)
    nc = abs(effect) / se
    p = float(_sps.nct.sf(crit, df, nc) + _sps.nct.sf(crit, df, -nc))
    if not math.isfinite(p):
        z = _norm_ppf(1.0 - alpha / 2.0)
        p = float(_sps.norm.sf(z - nc) + _sps.norm.cdf(-z - nc))
    return min(max(p, 0.0), 1.0)


def cluster_power_plan(
    between_var: float | None,
    within_var: float | None,
    clusters: int,
    trials: float,
    effect: float | None,
    alpha: float = 0.05,
    power: float = 0.8,
    max_clusters: int = 100_000,
    unit: str = "scenarios",
) -> dict[str, Any]:
    """Power in the unit that limits it: scenarios (or the clusters ``unit`` names, e.g.
    ``question_id clusters``, in the statement), and what more trials can reach.

    Model for an estimate averaged over G scenario-level contrasts D_g with
    Var(D_g) = between_var + within_var * T0 / T (``between_var``: variance of the true
    per-scenario contrast, which no number of trials removes; ``within_var``: the part due
    to the current ``trials`` T0, which shrinks as 1/T), a two-sided t test with G - 1 df
    (:func:`power_t`).  Returns

    * ``power_now``: power at the current G and T0;
    * ``scenarios_needed``: smallest G reaching ``power`` at the current trials (None when
      even ``max_clusters`` would not);
    * ``trials_ceiling_power``: power as T -> infinity at the current G (the ceiling that
      adding trials alone can reach);
    * ``trials_needed``: trials per scenario x variant reaching ``power`` at the current G,
      or None when the ceiling is below ``power`` (then more trials cannot get there);
    * ``power_monotone``: whether the power the searches evaluated was non-decreasing in
      scenarios (at the current trials) and in trials (at the current scenarios); the
      searches (doubling, then bisection) find the smallest n only when it is. It is in
      theory; False names a numerical failure, and the statement says so;
    * ``statement``: one plain sentence saying which.
    """
    out: dict[str, Any] = {"power_now": None, "scenarios_needed": None, "trials_ceiling_power": None,
                           "trials_needed": None, "power_monotone": None, "statement": None}
    if (between_var is None or within_var is None or effect is None or effect <= 0
            or clusters < 2 or trials <= 0):
        return out
    bv, wv = max(0.0, float(between_var)), max(0.0, float(within_var))
    seen: dict[tuple[int, float], float] = {}  # the searches ask some (G, T) twice

    def pw(g: int, t: float) -> float:
        if (g, t) not in seen:
            v = bv + (wv * trials / t if math.isfinite(t) else 0.0)
            seen[(g, t)] = power_t(effect, math.sqrt(v / g), g - 1, alpha)
        return seen[(g, t)]

    out["power_now"] = pw(clusters, trials)
    lo, hi = 2, 2
    while pw(hi, trials) < power and hi < max_clusters:
        lo, hi = hi, min(hi * 2, max_clusters)
    if pw(hi, trials) >= power:
        while lo < hi:
            mid = (lo + hi) // 2
            if pw(mid, trials) >= power:
                hi = mid
            else:
                lo = mid + 1
        out["scenarios_needed"] = int(hi)
    ceiling = pw(clusters, math.inf)
    out["trials_ceiling_power"] = ceiling
    if out["power_now"] >= power:
        out["trials_needed"] = int(math.ceil(trials))
    elif ceiling >= power:
        t_lo, t_hi = int(math.ceil(trials)), int(math.ceil(trials))
        while pw(clusters, t_hi) < power and t_hi < 10**7:
            t_lo, t_hi = t_hi, t_hi * 2
        while t_lo < t_hi:
            mid = (t_lo + t_hi) // 2
            if pw(clusters, mid) >= power:
                t_hi = mid
            else:
                t_lo = mid + 1
        out["trials_needed"] = int(t_hi)
    out["power_monotone"] = _monotone_visits(seen, clusters, trials)
    g_text = (f"{out['scenarios_needed']} {unit}" if out["scenarios_needed"] is not None
              else f"more than {max_clusters} {unit}")
    if out["power_now"] >= power:
        out["statement"] = f"the current {clusters} {unit} already reach {power:.0%} power"
    elif out["trials_needed"] is not None:
        out["statement"] = (f"{power:.0%} power needs {g_text} at the current trials, or "
                            f"{out['trials_needed']} trials per scenario at the current {clusters}")
    else:
        out["statement"] = (f"more trials cannot get there: with {clusters} {unit} the ceiling is "
                            f"{ceiling:.0%} power; you need {g_text}")
    if not out["power_monotone"]:
        out["statement"] += " (power was not monotone where searched: these may not be the smallest)"
    return out


def _monotone_visits(seen: dict[tuple[int, float], float], clusters: int, trials: float) -> bool:
    """Whether the powers the plan's searches evaluated rise with scenarios at the current
    trials and with trials at the current scenarios (the condition for bisection)."""
    by_g = [seen[k] for k in sorted(k for k in seen if k[1] == trials)]
    by_t = [seen[k] for k in sorted((k for k in seen if k[0] == clusters), key=lambda k: k[1])]
    return all(b >= a - 1e-12 for seq in (by_g, by_t) for a, b in zip(seq, seq[1:], strict=False))


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


def contrast_variance_components(
    values: ArrayLike, scenario: ArrayLike, side_a: ArrayLike, trial_unit: ArrayLike
) -> tuple[float | None, float | None, int, float]:
    """Variance components of a scenario-level contrast a - b, for power planning.

    Values are first averaged per trial unit (one rendered output: scenario x variant x trial,
    judges averaged), then per scenario and side. With D_g = mean_a,g - mean_b,g, the part of
    Var(D_g) that trials average away is w_g = s2_a,g / T_a,g + s2_b,g / T_b,g (s2: variance of
    the trial means, ddof 1), and the rest, ``between = max(0, var(D_g) - mean(w_g))``, is the
    variance of the true per-scenario contrast (method of moments, as in one-way ANOVA).
    Returns (between, within, G, T0) with ``within = mean(w_g)`` at the current mean trials
    T0 per side; (None, None, G, T0) when fewer than 2 scenarios have both sides with 2 trials.
    """
    x = _values(values)
    sc, _ = _codes(scenario, x.size, "scenario")
    a = np.asarray(side_a, dtype=bool)
    tu, nt = _codes(trial_unit, x.size, "trial_unit")
    if x.size == 0:
        return None, None, 0, 0.0
    # per trial unit: mean, scenario, side
    s_u = np.bincount(tu, weights=x, minlength=nt)
    n_u = np.bincount(tu, minlength=nt)
    m_u = s_u / n_u
    sc_u = np.zeros(nt, dtype=np.intp)
    a_u = np.zeros(nt, dtype=bool)
    sc_u[tu] = sc
    a_u[tu] = a
    # per scenario and side, the trial means in trial-unit order (one sort, not one mask per
    # scenario); each group's mean and variance by numpy's own reduction on a row of equal
    # length groups, which is bit for bit the reduction of that group alone
    g_all = int(sc_u.max()) + 1
    grp = sc_u * 2 + a_u
    order = np.argsort(grp, kind="stable")
    size = np.bincount(grp, minlength=2 * g_all)
    start = np.r_[0, np.cumsum(size)[:-1]]
    vals = m_u[order]
    means = np.zeros(2 * g_all)
    varis = np.zeros(2 * g_all)
    na, nb = size[1::2], size[0::2]
    keep = np.flatnonzero((na >= 2) & (nb >= 2))  # scenarios in code order, as np.unique gave
    wanted = np.r_[2 * keep + 1, 2 * keep]
    for n in np.unique(size[wanted]):
        gid = wanted[size[wanted] == n]
        rows = vals[start[gid][:, None] + np.arange(n)[None, :]]
        means[gid] = rows.mean(axis=1)
        varis[gid] = rows.var(axis=1, ddof=1)
    ia, ib = 2 * keep + 1, 2 * keep
    return _between_within(means[ia], varis[ia], na[keep], means[ib], varis[ib], nb[keep])


def _between_within(mean_a: NDArray[np.float64], var_a: NDArray[np.float64], n_a: NDArray[np.intp],
                    mean_b: NDArray[np.float64], var_b: NDArray[np.float64], n_b: NDArray[np.intp]
                    ) -> tuple[float | None, float | None, int, float]:
    """(between, within, G, T0) of :func:`contrast_variance_components` from the scenarios'
    trial-mean means, variances and trial counts per side (aligned by scenario)."""
    d = mean_a - mean_b
    w = var_a / n_a + var_b / n_b
    trials = (n_a + n_b) / 2.0
    g_n = int(d.size)
    t0 = float(np.mean(trials)) if g_n else 0.0
    if g_n < 2:
        return None, None, g_n, t0
    within = float(np.mean(w))
    between = max(0.0, float(np.var(d, ddof=1)) - within)
    return between, within, g_n, t0


@dataclass(frozen=True)
class SideComponents:
    """One side's part of :func:`contrast_variance_components` (:func:`side_variance_components`):
    per scenario with at least 2 trial units, ascending by code, the number of trial units,
    their mean and variance (ddof 1)."""

    scenarios: NDArray[np.int64]
    trials: NDArray[np.intp]
    means: NDArray[np.float64]
    variances: NDArray[np.float64]


def side_variance_components(values: ArrayLike, scenario: ArrayLike, trial_unit: ArrayLike) -> SideComponents:
    """One side of :func:`contrast_variance_components`, computed once for every contrast of
    that side (:func:`combine_variance_components` pairs two of them).

    ``scenario`` and ``trial_unit``: non-negative integer codes shared by both sides, monotone
    in the labels' order (a trial unit in one scenario, trial-unit codes ordered by scenario
    first). The numbers are those of :func:`contrast_variance_components` on the two sides
    stacked, bit for bit: a trial unit's mean sums its rows in row order, a scenario's trial
    means are in trial-unit order, and each scenario's mean and variance is numpy's reduction
    of that group alone, whichever other groups share its batch.
    """
    x = _values(values)
    sc = np.asarray(scenario, dtype=np.int64)
    tu = np.asarray(trial_unit, dtype=np.int64)
    if sc.shape != x.shape or tu.shape != x.shape:
        raise ValueError("values, scenario and trial_unit must have the same length")
    if x.size == 0:
        return SideComponents(np.zeros(0, np.int64), np.zeros(0, np.intp), np.zeros(0), np.zeros(0))
    units, inv = np.unique(tu, return_inverse=True)  # trial units in code order
    inv = inv.reshape(-1)
    nt = int(units.size)
    m_u = np.bincount(inv, weights=x, minlength=nt) / np.bincount(inv, minlength=nt)
    sc_u = np.zeros(nt, dtype=np.int64)
    sc_u[inv] = sc
    # units sorted by code are sorted by scenario: each scenario's trial means are a run
    starts = np.flatnonzero(np.r_[True, sc_u[1:] != sc_u[:-1]])
    size = np.diff(np.r_[starts, nt])
    keep = np.flatnonzero(size >= 2)
    means = np.zeros(keep.size)
    varis = np.zeros(keep.size)
    for n in np.unique(size[keep]):
        sel = keep[size[keep] == n]
        rows = m_u[starts[sel][:, None] + np.arange(n)[None, :]]
        at = np.searchsorted(keep, sel)
        means[at] = rows.mean(axis=1)
        varis[at] = rows.var(axis=1, ddof=1)
    return SideComponents(sc_u[starts[keep]], size[keep].astype(np.intp), means, varis)


def combine_variance_components(a: SideComponents, b: SideComponents) -> tuple[float | None, float | None, int, float]:
    """:func:`contrast_variance_components` of a - b from the two sides' parts (the same
    numbers: see :func:`side_variance_components`)."""
    _, ia, ib = np.intersect1d(a.scenarios, b.scenarios, assume_unique=True, return_indices=True)
    return _between_within(a.means[ia], a.variances[ia], a.trials[ia], b.means[ib], b.variances[ib], b.trials[ib])


def combine_variance_components_clustered(a: SideComponents, b: SideComponents, cluster_of: ArrayLike
                                          ) -> tuple[float | None, float | None, int, float]:
    """:func:`combine_variance_components` with scenarios nested in clusters (the unit of
    independence): the per-scenario contrast D_s and its trial-noise part w_s (as there) are
    averaged per cluster over its scenarios with both sides' components, D_c = mean_s D_s and
    w_c = sum_s w_s / m_c^2 (the trial noise of a mean of m_c independent scenario contrasts);
    then between = max(0, var(D_c) - mean(w_c)), within = mean(w_c), G = clusters. With one
    scenario per cluster these are :func:`combine_variance_components`' numbers.
    ``cluster_of``: the cluster code of each scenario code."""
    _, ia, ib = np.intersect1d(a.scenarios, b.scenarios, assume_unique=True, return_indices=True)
    if ia.size == 0:
        return None, None, 0, 0.0
    cl = np.asarray(cluster_of, dtype=np.int64)[a.scenarios[ia]]
    d = a.means[ia] - b.means[ib]
    w = a.variances[ia] / a.trials[ia] + b.variances[ib] / b.trials[ib]
    trials = (a.trials[ia] + b.trials[ib]) / 2.0
    u, inv, m = np.unique(cl, return_inverse=True, return_counts=True)
    inv = inv.reshape(-1)
    d_c = np.bincount(inv, weights=d, minlength=u.size) / m
    w_c = np.bincount(inv, weights=w, minlength=u.size) / (m * m)
    g_n = int(u.size)
    t0 = float(np.mean(trials))
    if g_n < 2:
        return None, None, g_n, t0
    within = float(np.mean(w_c))
    between = max(0.0, float(np.var(d_c, ddof=1)) - within)
    return between, within, g_n, t0


# ---------------------------------------------------------------------------
# Joint cluster bootstrap on per-scenario sums (one set of weights per run)
# ---------------------------------------------------------------------------

JOINT_BOOTSTRAP_METHOD = "joint_cluster_bootstrap_multinomial"
"""Name recorded in results.json for :func:`joint_bootstrap_weights` + :func:`joint_bootstrap_means`."""

# Upper bound on the float64 weights held at once (a block of resamples x clusters): 32 MB.
_JOINT_BLOCK_CELLS = 4_000_000


JOINT_SEED_BLOCK = 64
"""Resamples drawn from one generator: resample r comes from ``default_rng([seed, r // 64])``."""


def joint_bootstrap_weights(n_clusters: int, start: int, stop: int, seed: int,
                            out: NDArray[Any] | None = None) -> NDArray[Any]:
    """Return the bootstrap weights of resamples ``start..stop-1``: shape (stop - start, G).

    The standard cluster bootstrap (Field & Welsh 2007) drawn once per run: resample r
    draws G clusters with replacement from the run's canonical cluster index, uniformly,
    and weight w_rg is how often cluster g was drawn, i.e. a Multinomial(G; 1/G, ..., 1/G)
    vector summing to G. The draws of resamples 64k..64k+63 come one after the other from
    ``default_rng([seed, k])`` (``integers(G, size=G)`` each), so a resample's weights do
    not depend on how resamples are blocked in memory, on the number of resamples
    requested, or on which cells use them.

    ``out``: an array of that shape to fill and return instead of a new float64 one (an
    integer dtype holds the counts without a float64 copy; a count above its range raises
    OverflowError).
    """
    g = int(n_clusters)
    if out is None:
        out = np.empty((max(0, stop - start), g), dtype=np.float64)
    elif out.shape != (max(0, stop - start), g):
        raise ValueError(f"out must have shape {(max(0, stop - start), g)}, got {out.shape}")
    if stop <= start:
        return out
    limit = None if out.dtype.kind == "f" else int(np.iinfo(out.dtype).max)
    k = JOINT_SEED_BLOCK
    for block in range(start // k, (stop - 1) // k + 1):
        rng = np.random.default_rng([int(seed), int(block)])
        for r in range(block * k, min(stop, (block + 1) * k)):
            draw = rng.integers(g, size=g)
            if r >= start:
                row = np.bincount(draw, minlength=g)
                if limit is not None and g and int(row.max()) > limit:
                    raise OverflowError(f"a cluster drawn {int(row.max())} times does not fit {out.dtype}")
                out[r - start] = row
    return out


def joint_bootstrap_means(
    sums: ArrayLike, counts: ArrayLike, resamples: int, seed: int
) -> NDArray[np.float64]:
    """Return the resampled means of every column: shape (resamples, C), NaN where undefined.

    ``sums`` and ``counts`` are (G, C): column c holds cell c's per-cluster sum of valid
    values S_gc and count n_gc over the run's canonical cluster index (0 where cell c has no
    value in cluster g). With the weights w_rg of :func:`joint_bootstrap_weights` (the same
    for every column, so all cells are resampled jointly), resample r's mean of column c is
    sum_g w_rg S_gc / sum_g w_rg n_gc. When the weighted count is 0 (none of the cell's
    clusters was drawn) the mean is undefined: NaN, never 0. Cost: resamples x G x C
    multiply-adds, in blocks of resamples holding at most ~4M weights.
    """
    s = np.asarray(sums, dtype=np.float64)
    n = np.asarray(counts, dtype=np.float64)
    if s.ndim != 2 or s.shape != n.shape:
        raise ValueError(f"sums and counts must be (G, C) of one shape, got {s.shape} and {n.shape}")
    if not (np.all(np.isfinite(s)) and np.all(np.isfinite(n))) or np.any(n < 0):
        raise ValueError("sums must be finite and counts finite and non-negative")
    b = _check_resamples(resamples)
    g, c = s.shape
    out = np.full((b, c), np.nan, dtype=np.float64)
    if g == 0 or c == 0:
        return out
    both = np.concatenate([s, n], axis=1)
    per = max(1, _JOINT_BLOCK_CELLS // g)
    for start in range(0, b, per):
        stop = min(b, start + per)
        w = joint_bootstrap_weights(g, start, stop, seed)
        t = w @ both
        ts, tn = t[:, :c], t[:, c:]
        ok = tn > 0
        block = out[start:stop]
        np.divide(ts, tn, out=block, where=ok)
    return out


def joint_percentile(
    draws: ArrayLike, clusters: int, confidence: float = 0.95
) -> tuple[float | None, float | None, int]:
    """Percentile interval of one column of joint bootstrap draws: (low, high, undefined).

    ``undefined`` counts resamples whose statistic is NaN (a side with weighted count 0);
    the interval is over the defined ones. (None, None) when the statistic has fewer than 2
    clusters, or more than half of the resamples are undefined (as
    :func:`cluster_bootstrap_diff` drops them).
    """
    c = _check_confidence(confidence)
    x = np.asarray(draws, dtype=np.float64)
    ok = np.isfinite(x)
    undefined = int(x.size - int(ok.sum()))
    if clusters < 2 or not ok.any() or undefined * 2 > x.size:
        return None, None, undefined
    lo, hi = _percentile_interval(x[ok], c)
    return lo, hi, undefined
