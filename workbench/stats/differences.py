"""Unpaired differences between two cells: clustered sides, the clustered difference, its
leave-one-cluster-out sides and the cluster bootstrap of a difference.

Part of :mod:`workbench.stats` (import from there); a pure move out of the former
``stats.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as _sps

from workbench.stats.base import (
    DiffStats,
    _check_confidence,
    _check_resamples,
    _chunks,
    _codes,
    _flush,
    _labels,
    _percentile_interval,
    _values,
)
from workbench.stats.means import t_interval

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
