"""Variance components of a contrast: between and within scenarios, per side and combined.

Part of :mod:`workbench.stats` (import from there); a pure move out of the former
``stats.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from workbench.stats.base import _codes, _values

# ---------------------------------------------------------------------------
# Variance components of a contrast (between and within scenarios)
# ---------------------------------------------------------------------------


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
