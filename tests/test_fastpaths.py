"""The fast paths of issue 12 give exactly what the straightforward code gave.

Each reference below is the code that was replaced, kept here verbatim in spirit (the same
random draws, the same order of operations), and the fast path must reproduce its results
bit for bit on designs chosen to hit every branch: constant blocks, blocks of unequal
sizes, small (pairwise-ranked) and large (sorted) blocks, several labels, ties.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from workbench import stats


def _reference_block_permutation(missing, totals, labels, blocks, resamples, seed):
    """The pre-issue-12 loop: sort ``block + U(0,1)`` keys over all units per permutation."""
    m = np.asarray(missing, dtype=float)
    t = np.asarray(totals, dtype=float)
    lab, k = stats._codes(labels, m.size, "labels")
    blk, _ = stats._codes(blocks, m.size, "blocks")
    tot_m, tot_n = float(m.sum()), float(t.sum())
    per_label = np.bincount(lab, weights=t, minlength=k)
    if int(np.sum(per_label > 0)) < 2 or tot_m == 0.0 or tot_m == tot_n:
        return None, None
    p0 = tot_m / tot_n

    def chi2(lab_codes):
        s = lab_codes.shape[0]
        flat = (np.arange(s)[:, None] * k + lab_codes).ravel()
        mm = np.bincount(flat, weights=np.tile(m, s), minlength=s * k).reshape(s, k)
        nn = np.bincount(flat, weights=np.tile(t, s), minlength=s * k).reshape(s, k)
        em, es = nn * p0, nn * (1.0 - p0)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(nn > 0, (mm - em) ** 2 / em + ((nn - mm) - es) ** 2 / es, 0.0)
        return terms.sum(axis=1)

    obs = float(chi2(lab[None, :])[0])
    order = np.argsort(blk, kind="stable")
    blk_s, lab_s = blk[order], lab[order]
    m, t = m[order], t[order]
    rng = np.random.default_rng(seed)
    tol = 1e-9 * max(1.0, obs)
    exceed = 0
    for size in stats._chunks(resamples, m.size):
        keys = blk_s[None, :] + rng.random((size, m.size))
        perm = np.argsort(keys, axis=1, kind="stable")
        exceed += int(np.sum(chi2(lab_s[perm]) >= obs - tol))
    return obs, (1.0 + exceed) / (1.0 + resamples)


def _design(rng, blocks, sizes, labels, p_miss, judges, shuffle):
    m, n, lab, blk = [], [], [], []
    for g in range(blocks):
        size = int(rng.choice(sizes))
        for j in range(size):
            tot = int(rng.integers(1, judges + 1))
            m.append(float(rng.binomial(tot, p_miss)))
            n.append(float(tot))
            lab.append(f"L{rng.integers(labels) if shuffle else j % labels}")
            blk.append(f"s{g:04d}")
    order = rng.permutation(len(m)) if shuffle else np.arange(len(m))
    return (np.array(m)[order], np.array(n)[order], np.array(lab, dtype=object)[order],
            np.array(blk, dtype=object)[order])


@pytest.mark.parametrize("case", range(12))
def test_block_permutation_fast_path_is_the_reference(case):
    rng = np.random.default_rng(100 + case)
    blocks = int(rng.choice([3, 40, 400]))
    sizes = [[2], [6], [30], [1, 2, 3], [2, 5, 9, 12], [6, 6, 7]][case % 6]
    labels = int(rng.choice([2, 3, 10]))
    design = _design(rng, blocks, sizes, labels, float(rng.choice([0.05, 0.3, 0.6])),
                     int(rng.choice([1, 2, 3])), shuffle=bool(case % 2))
    resamples = int(rng.choice([50, 333, 2000]))
    got = stats.block_permutation_test(*design, resamples, 7 + case)
    ref = _reference_block_permutation(*design, resamples, 7 + case)
    assert (got.statistic, got.p_value) == ref


def test_block_permutation_fast_path_constant_blocks():
    # most blocks have both units identical (skipped as constant, added once)
    g = 40000
    m = np.zeros(2 * g)
    m[::7] = 1.0
    lab = np.tile(np.array(["a", "b"], dtype=object), g)
    blk = np.repeat(np.arange(g) * 2**30, 2)
    got = stats.block_permutation_test(m, np.ones(2 * g), lab, blk, 60, 3)
    ref = _reference_block_permutation(m, np.ones(2 * g), lab, blk, 60, 3)
    assert (got.statistic, got.p_value) == ref
    assert got.p_value is not None and 0 < got.p_value <= 1


def test_block_permutation_non_integer_counts_use_the_reference_loop():
    rng = np.random.default_rng(5)
    m = rng.random(60)
    t = m + rng.random(60)
    lab = np.tile(["x", "y", "z"], 20)
    blk = np.repeat(np.arange(10), 6)
    got = stats.block_permutation_test(m, t, lab, blk, 200, 11)
    assert (got.statistic, got.p_value) == _reference_block_permutation(m, t, lab, blk, 200, 11)


def _reference_variance_components(values, scenario, side_a, trial_unit):
    """The pre-issue-12 loop: one boolean mask of all trial units per scenario."""
    x = np.asarray(values, dtype=float)
    sc, _ = stats._codes(scenario, x.size, "scenario")
    a = np.asarray(side_a, dtype=bool)
    tu, nt = stats._codes(trial_unit, x.size, "trial_unit")
    if x.size == 0:
        return None, None, 0, 0.0
    s_u = np.bincount(tu, weights=x, minlength=nt)
    n_u = np.bincount(tu, minlength=nt)
    m_u = s_u / n_u
    sc_u = np.zeros(nt, dtype=np.intp)
    a_u = np.zeros(nt, dtype=bool)
    sc_u[tu] = sc
    a_u[tu] = a
    d, w, trials = [], [], []
    for g in np.unique(sc_u):
        ma = m_u[(sc_u == g) & a_u]
        mb = m_u[(sc_u == g) & ~a_u]
        if ma.size < 2 or mb.size < 2:
            continue
        d.append(ma.mean() - mb.mean())
        w.append(ma.var(ddof=1) / ma.size + mb.var(ddof=1) / mb.size)
        trials.append((ma.size + mb.size) / 2.0)
    g_n = len(d)
    t0 = float(np.mean(trials)) if trials else 0.0
    if g_n < 2:
        return None, None, g_n, t0
    within = float(np.mean(w))
    between = max(0.0, float(np.var(d, ddof=1)) - within)
    return between, within, g_n, t0


@pytest.mark.parametrize("case", range(8))
def test_contrast_variance_components_is_the_reference(case):
    rng = np.random.default_rng(300 + case)
    scen, vals, side, unit = [], [], [], []
    for g in range(int(rng.choice([1, 2, 5, 300]))):
        for variant in ("a", "b"):
            for trial in range(int(rng.choice([1, 2, 3, 4, 9, 17]))):
                for _judge in range(int(rng.integers(1, 4))):
                    if rng.random() < 0.15:
                        continue  # a judgment without a valid value
                    scen.append(f"s{g}")
                    vals.append(float(rng.integers(1, 11)) if case % 2 else float(rng.normal(5, 2)))
                    side.append(variant == "a")
                    unit.append(f"s{g}\x1f{variant}\x1f{trial}")
    order = rng.permutation(len(vals))
    args = [np.array(v, dtype=object if isinstance(v[0], str) else None)[order] if v else np.array([])
            for v in (vals, scen, side, unit)]
    assert stats.contrast_variance_components(*args) == _reference_variance_components(*args)


@pytest.mark.parametrize("case", range(8))
def test_variance_components_per_side_are_the_stacked_reference(case):
    """side_variance_components of each side, combined, give the reference loop's numbers
    (and contrast_variance_components') bit for bit, with shared integer codes: scenarios
    one side lacks or has with one trial, rows in shuffled order, non-dyadic values."""
    rng = np.random.default_rng(700 + case)
    n_trials = 20
    sides: dict[bool, list[list[float]]] = {True: [[], [], []], False: [[], [], []]}
    for g in range(int(rng.choice([1, 2, 5, 300]))):
        for variant in (0, 1):
            if rng.random() < 0.1:
                continue  # a scenario this side has no values in
            for trial in range(int(rng.choice([1, 2, 3, 4, 9, 17]))):
                for _judge in range(int(rng.integers(1, 4))):
                    if rng.random() < 0.15:
                        continue
                    x = float(rng.integers(1, 11)) if case % 2 else float(rng.normal(5, 2)) / 3.0
                    col = sides[variant == 0]
                    col[0].append(x)
                    col[1].append(g)
                    col[2].append((g * 2 + variant) * n_trials + trial)  # monotone in (scenario, variant, trial)
    parts, stacked = {}, []
    for is_a, (vals, scen, unit) in sides.items():
        order = rng.permutation(len(vals))
        v = np.array(vals, dtype=float)[order]
        s, u = (np.array(c, dtype=np.int64).reshape(-1)[order] for c in (scen, unit))
        parts[is_a] = stats.side_variance_components(v, s, u)
        stacked.append((v, s, u, np.full(v.size, is_a)))
    args = [np.concatenate([p[i] for p in stacked]) for i in range(4)]
    want = _reference_variance_components(args[0], args[1], args[3], args[2])
    assert stats.combine_variance_components(parts[True], parts[False]) == want
    assert stats.contrast_variance_components(args[0], args[1], args[3], args[2]) == want


def test_codes_of_text_labels_are_numpys_object_codes():
    rng = np.random.default_rng(9)
    words = ["b", "a", "é", "e\u0301", "Z", " z", "10", "9", "s\x1fv", "\U0001f600", "ab" * 30]
    lab = np.array([words[i] for i in rng.integers(0, len(words), 5000)], dtype=object)
    assert stats._as_text(lab).dtype.kind == "U"
    codes, g = stats._codes(lab, lab.size)
    _, ref = np.unique(lab, return_inverse=True)  # sorted by Python's own comparison
    assert g == len(set(words)) and np.array_equal(codes, ref)
    # what the text path cannot represent goes the object way, with the same codes
    nul = lab.copy()
    nul[3] = "a\x00"
    assert stats._as_text(nul) is nul
    assert np.array_equal(stats._codes(nul, nul.size)[0], np.unique(nul, return_inverse=True)[1])
    mixed = lab.copy()
    mixed[7] = 7
    assert stats._as_text(mixed) is mixed
    for bad in (None, float("nan"), np.float32("nan")):
        holed = lab.copy()
        holed[11] = bad
        with pytest.raises(ValueError, match="missing"):
            stats._codes(holed, holed.size)


def test_block_permutation_fast_path_large_blocks_among_small():
    # mostly blocks of 2 (ranked pairwise) with some of 12 and 20 (sorted within the block)
    rng = np.random.default_rng(21)
    sizes = [2] * 300 + [12] * 10 + [20] * 5
    blk = np.repeat(np.arange(len(sizes)), sizes)
    rng.shuffle(sizes)
    m = rng.binomial(2, 0.3, blk.size).astype(float)
    t = np.where(rng.random(blk.size) < 0.2, 3.0, 2.0)
    lab = rng.integers(0, 3, blk.size)
    got = stats.block_permutation_test(m, t, lab, blk, 777, 8)
    assert (got.statistic, got.p_value) == _reference_block_permutation(m, t, lab, blk, 777, 8)


@pytest.mark.parametrize("case", range(6))
def test_spearman_from_ranks_is_scipys_spearmanr(case):
    """spearman_ranked (ranks computed once by the caller) gives scipy.stats.spearmanr's
    statistic bit for bit: ties, tiny and large n, constant and NaN input."""
    from scipy import stats as sps

    rng = np.random.default_rng(900 + case)
    for n in (2, 3, 10, 1000, 20000):
        a = rng.integers(0, 5, n) / 3 if case % 2 else rng.normal(size=n)
        b = a * 0.3 + rng.normal(size=n) if case % 3 else rng.integers(0, 3, n) / 7
        got = stats.spearman_ranked(a, b, sps.rankdata(a), sps.rankdata(b))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sps.ConstantInputWarning)  # constant input: nan
            want = sps.spearmanr(a, b).statistic
        assert (got is None and not np.isfinite(want)) or got == float(want), (case, n)
    const = np.ones(5)
    assert stats.spearman_ranked(const, np.arange(5.0), sps.rankdata(const), sps.rankdata(np.arange(5.0))) is None
    nan = np.array([1.0, np.nan, 3.0, 2.0])
    for fn in (lambda: stats.spearman(nan, np.arange(4.0)),
               lambda: stats.spearman_ranked(nan, np.arange(4.0), sps.rankdata(nan), np.arange(1.0, 5.0))):
        with pytest.raises(ValueError, match="NaN"):
            fn()


def test_average_ranks_of_subsets_are_scipys_rankdata():
    """average_ranks (one sort of all values, filtered per subset) is scipy.stats.rankdata of
    the subset, ties averaged, for subsets in any order, empty and whole."""
    from scipy import stats as sps

    rng = np.random.default_rng(12)
    for n in (0, 1, 2, 50, 3000):
        for ties in (True, False):
            v = rng.integers(0, 6, n) / 7 if ties else rng.normal(size=n)
            order = np.argsort(v, kind="stable")
            for take in (np.arange(n), np.sort(rng.choice(n, n // 2, replace=False)) if n else np.arange(0),
                         rng.permutation(n)[: n // 3], np.arange(0)):
                got = stats.average_ranks(v, order, take)
                assert got.dtype == np.float64
                assert got.tolist() == sps.rankdata(v[take]).tolist(), (n, ties)


@pytest.mark.parametrize("case", range(6))
def test_cluster_sides_are_diff_clustered_and_leave_one_out(case):
    """diff_clustered_sides and leave_one_cluster_out_sides (each side reduced once over
    shared cluster codes) give diff_clustered's and leave_one_cluster_out_diff's numbers
    on the labels, bit for bit: clusters one side lacks, empty sides, one cluster, tiny n,
    constant values (a zero SE), non-dyadic values in shuffled order."""
    rng = np.random.default_rng(40 + case)
    width = int(rng.choice([1, 2, 7, 400]))
    for _ in range(12):
        sides = []
        for _side in range(2):
            n = int(rng.choice([0, 1, 2, 5, 300]))
            codes = rng.integers(0, width, n)
            if case == 5:
                vals = np.full(n, 3.0)
            else:
                vals = rng.integers(1, 11, n) / 3.0 if case % 2 else rng.normal(5, 2, n)
            sides.append((vals, codes))
        (xa, ca), (xb, cb) = sides
        la = np.array([f"c{c:04d}" for c in ca], dtype=object)  # labels in the codes' order
        lb = np.array([f"c{c:04d}" for c in cb], dtype=object)
        sa, sb = stats.cluster_side(xa, ca, width), stats.cluster_side(xb, cb, width)
        assert stats.diff_clustered_sides(sa, sb, 0.9) == stats.diff_clustered(xa, la, xb, lb, 0.9)
        if xa.size and xb.size:
            assert stats.leave_one_cluster_out_sides(sa, sb) == stats.leave_one_cluster_out_diff(xa, la, xb, lb)
