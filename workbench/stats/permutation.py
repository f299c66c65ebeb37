"""Permutation tests that respect the design: labels permuted within blocks (exact,
enumerated, Monte-Carlo, asymptotic) and sign flips across clusters.

Part of :mod:`workbench.stats` (import from there); a pure move out of the former
``stats.py``.
"""

from __future__ import annotations

import itertools
import math
import sys
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special as _sps_special
from scipy import stats as _sps

from workbench.stats.base import TestResult, _check_resamples, _chunks, _codes, _labels, _values, one_blas_thread

# ---------------------------------------------------------------------------
# Permutation tests within blocks and sign flips across clusters
# ---------------------------------------------------------------------------


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


def _identical_column_counts(table: NDArray[np.int64]) -> NDArray[np.intp]:
    """``np.unique(table.T, axis=0, return_counts=True)[1]``: how many columns are identical,
    per distinct column, in the columns' lexicographic order (first row most significant).

    Each column (a label's count per block) becomes one big-endian unsigned byte string, whose
    byte order is the column's lexicographic order, and the few columns are sorted as strings:
    np.unique's structured view has one dtype field per row (0.8 s a call at 166k blocks)."""
    k = table.shape[1]
    if k == 0:
        return np.zeros(0, dtype=np.intp)
    shifted = (table - table.min()).astype(">u8") if table.size else table.astype(">u8")
    keys = sorted(shifted[:, j].tobytes() for j in range(k))
    return np.asarray([len(list(run)) for _, run in itertools.groupby(keys)], dtype=np.intp)


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
    classes = _identical_column_counts(present)
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
#: :func:`workbench.sim.calibrate.sign_flip_check` (96,000 null data sets, ``docs/calibration/
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
    thresholds chosen by the size simulation in :func:`workbench.sim.calibrate.sign_flip_check`;
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
