"""The large-sample form of the block permutation test (issue 12: cost grows with blocks).

Moments are checked against brute-force enumeration of every within-block arrangement of the
labels (an independent computation); the switch keeps the exact Monte-Carlo test below the
budget; size and agreement with the exact test are measured by simulation (the bounded
version here; ``benchmarks/permutation_asymptotic.py`` for the full grid).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats as sps

from workbench import stats
from workbench.analysis import census


def _enumerate(m, t, lab, blk, k):
    """E[D] and Cov[D] over every within-block arrangement of the labels (each equally likely)."""
    p0 = m.sum() / t.sum()
    y = m - p0 * t
    blocks = [np.flatnonzero(blk == b) for b in np.unique(blk)]
    arrangements = [sorted(set(itertools.permutations(lab[ix].tolist()))) for ix in blocks]
    ds = []
    for combo in itertools.product(*arrangements):
        perm_lab = lab.copy()
        for ix, labs in zip(blocks, combo, strict=True):
            perm_lab[ix] = labs
        d = np.zeros(k)
        for i in range(m.size):  # naive loop
            d[perm_lab[i]] += y[i]
        ds.append(d)
    ds = np.array(ds)
    mean = ds.mean(axis=0)
    cov = (ds - mean).T @ (ds - mean) / len(ds)
    obs = np.zeros(k)
    for i in range(m.size):
        obs[lab[i]] += y[i]
    return obs, mean, cov


CASES = [
    # three labels, unequal totals, blocks of 4, 3, 3
    (np.array([0, 1, 2, 0, 3, 1, 0, 2, 1, 1.]), np.array([2, 2, 3, 1, 3, 2, 2, 2, 3, 1.]),
     np.array([0, 1, 2, 0, 1, 0, 2, 1, 0, 1]), np.array([0, 0, 0, 0, 1, 1, 1, 2, 2, 2]), 3),
    # two labels, 0/1 units, a block of one unit and a constant block
    (np.array([1, 0, 0, 1, 1, 0, 1, 1, 1, 0.]), np.ones(10),
     np.array([0, 1, 1, 0, 1, 0, 0, 1, 0, 1]), np.array([0, 0, 0, 1, 1, 1, 2, 3, 3, 3]), 2),
    # four labels, one label absent from a block
    (np.array([2, 0, 1, 1, 0, 2, 2, 0, 1.]), np.full(9, 2.),
     np.array([0, 1, 2, 3, 0, 1, 2, 3, 0]), np.array([0, 0, 0, 0, 1, 1, 1, 2, 2]), 4),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_moments_are_those_of_every_arrangement(case):
    m, t, lab, blk, k = CASES[case]
    obs, mean, cov = _enumerate(m, t, lab, blk, k)
    d, e, v, _ = stats._block_permutation_moments(m, t, lab, blk, k, m.sum() / t.sum())
    np.testing.assert_allclose(d, obs, atol=1e-12)
    np.testing.assert_allclose(e, mean, atol=1e-12)
    np.testing.assert_allclose(v, cov, atol=1e-12)
    res = stats.block_permutation_asymptotic(m, t, lab, blk)
    q = float((obs - mean) @ np.linalg.pinv(cov) @ (obs - mean))
    df = np.linalg.matrix_rank(cov)
    assert res.method == "block_permutation_asymptotic"
    assert res.statistic == pytest.approx(q, rel=1e-9)
    assert res.p_value == pytest.approx(sps.chi2.sf(q, df), rel=1e-9)


def test_two_labels_hand_calculation():
    # two blocks of 4 units, two labels each, 0/1 units: D_A = missing of A - p0 * its units
    m = np.array([1, 1, 0, 0, 1, 0, 0, 0.])
    lab = np.array([0, 0, 1, 1, 0, 1, 0, 1])
    blk = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    # p0 = 3/8; D_A = 3 - 4 * 3/8 = 1.5; E_A = 2 * (2/4 - 3/8) + 2 * (1/4 - 3/8) = 0
    # Var_A = sum_b n(N-n)/(N(N-1)) * sum (y - ybar)^2 = 1/3 * (1 + 0.75) = 7/12
    res = stats.block_permutation_asymptotic(m, np.ones(8), lab, blk)
    assert res.statistic == pytest.approx(1.5**2 / (7 / 12))
    assert res.p_value == pytest.approx(2 * sps.norm.sf(1.5 / np.sqrt(7 / 12)))


def test_a_design_no_permutation_changes():
    m = np.array([1, 1, 0, 0, 2, 2.])
    res = stats.block_permutation_asymptotic(m, np.full(6, 2.), [0, 1, 0, 1, 0, 1], [0, 0, 1, 1, 2, 2])
    assert (res.statistic, res.p_value) == (0.0, 1.0)
    assert stats.block_permutation_asymptotic([0, 0.], [1, 1.], [0, 1], [0, 0]).method == "undefined"


def _null_items(rng, g, v, t=3, j=2):
    """Item units of a null design: whole-item and single failures at scenario-specific rates."""
    whole = rng.random((g, v, t, 1)) < rng.beta(1, 9, g)[:, None, None, None]
    miss = whole | (rng.random((g, v, t, j)) < rng.beta(1, 19, g)[:, None, None, None])
    gi, vi = np.meshgrid(np.arange(g), np.arange(v), indexing="ij")
    return (miss.sum(axis=3).ravel().astype(float), np.full(g * v * t, float(j)),
            np.repeat(vi.ravel(), t), np.repeat(gi.ravel(), t))


def test_switch_keeps_the_exact_test_below_the_budget():
    d = _null_items(np.random.default_rng(5), 300, 2)  # 1,800 units x 2,000: under the budget
    assert d[0].size * 2000 <= stats.PERMUTATION_EXACT_BUDGET
    default = stats.block_permutation_test(*d, 2000, 9)
    exact = stats.block_permutation_test(*d, 2000, 9, exact_budget=None)
    assert default == exact and default.method == "block_permutation"
    approx = stats.block_permutation_test(*d, 2000, 9, exact_budget=0)
    assert approx == stats.block_permutation_asymptotic(*d)
    # above the budget but with fewer than PERMUTATION_MIN_BLOCKS blocks that can move: exact
    few = tuple(x[: 6 * 20] for x in d)
    assert stats.block_permutation_test(*few, 500, 9, exact_budget=0).method == "block_permutation"


def test_agrees_with_the_exact_test():
    # measured (benchmarks/permutation_asymptotic.py): the exact p counts the ties at the
    # observed value (a discrete statistic), the chi-square does not, so the exact p is the
    # larger by up to ~0.05 near p = 1 (where a tie at Q = 0 holds a few percent of the
    # permutations); in the tail the difference is the Monte-Carlo error (SD <= 0.011)
    rng = np.random.default_rng(11)
    diffs, tail = [], []
    for s in range(20):
        d = _null_items(rng, 300, 2)
        e = stats.block_permutation_test(*d, 2000, s, exact_budget=None)
        a = stats.block_permutation_test(*d, 2000, s, exact_budget=0)
        assert a.method == "block_permutation_asymptotic"
        diffs.append(e.p_value - a.p_value)
        if min(e.p_value, a.p_value) < 0.3:
            tail.append(abs(e.p_value - a.p_value))
    assert -0.03 < min(diffs) and max(diffs) < 0.06, diffs
    assert tail and max(tail) < 0.03, tail


def test_false_positive_rate_at_large_g():
    # 1000 null data sets, G = 1000 scenarios x 4 variants x 3 trials x 2 judges: both tests'
    # size at alpha 0.05 (binomial SE 0.007); the variant test on the 12,000 items (blocks:
    # scenarios), the judge test on the 24,000 judgments (blocks: items)
    rng = np.random.default_rng(2026)
    pv, pj = [], []
    for _ in range(1000):
        m, t, v, g = _null_items(rng, 1000, 4)
        pv.append(stats.block_permutation_test(m, t, v, g, 2000, 0).p_value)
        # judge labels of each item's 2 judgments: the item's m missing ones go to a random judge
        # when m = 1 (no judge effect), both or none otherwise
        first = rng.random(m.size) < 0.5
        jm = np.stack([np.where(m == 1, first, m == 2), np.where(m == 1, ~first, m == 2)], axis=1)
        item = np.repeat(np.arange(m.size), 2)
        pj.append(stats.block_permutation_test(jm.ravel().astype(float), np.ones(jm.size),
                                               np.tile([0, 1], m.size), item, 2000, 0).p_value)
    for p in (pv, pj):
        assert all(x is not None for x in p)
        fpr = float(np.mean(np.array(p) < 0.05))
        assert 0.03 <= fpr <= 0.07, fpr


def test_census_names_the_large_sample_method():
    approx = stats.TestResult(1.0, 0.3, "block_permutation_asymptotic")
    exact = stats.TestResult(1.0, 0.3, "block_permutation")
    enumerated = stats.TestResult(1.0, 0.3, "block_permutation_exact")
    assert census.method_name("variant", approx) == "block_permutation_within_scenario_asymptotic"
    assert census.method_name("judge", approx) == "judge_block_permutation_within_scenario_variant_asymptotic"
    assert census.method_name("variant", exact) == "block_permutation_within_scenario"
    assert census.method_name("variant", enumerated) == "block_permutation_within_scenario_exact"
    assert census.method_name("variant", approx, "trial") == "item_permutation_within_scenario_asymptotic"
    assert census.method_name("judge", approx, "trial") == "judge_permutation_within_item_asymptotic"
    assert census.method_name("variant", exact, "trial") == "item_permutation_within_scenario"
    assert census.method_name("judge", stats.TestResult(None, None, "undefined")) == "undefined"
