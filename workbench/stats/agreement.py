"""Agreement between two raters on paired ordinal scores: exact and within-one agreement,
quadratic-weighted kappa, Krippendorff's alpha and Spearman's rho.

Part of :mod:`workbench.stats` (import from there); a pure move out of the former
``stats.py``.
"""

from __future__ import annotations

from typing import Any

import krippendorff as _krippendorff
import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as _sps

from workbench.stats.base import _f, _pair, _values

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
