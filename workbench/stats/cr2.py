"""Small-sample cluster-robust inference: CR2 with Bell-McCaffrey degrees of freedom, for a
clustered mean, a difference of two sides and the prediction-powered mean.

Part of :mod:`workbench.stats` (import from there); a pure move out of the former
``stats.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as _sps

from workbench.stats.base import _check_confidence, _codes, _flush, _values
from workbench.stats.differences import ClusterSide, _shared_codes, cluster_side
from workbench.stats.means import t_interval

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
