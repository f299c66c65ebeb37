"""CR2 standard errors with Bell-McCaffrey degrees of freedom (workbench.stats).

Checked against a dense-matrix implementation of Pustejovsky & Tipton (2018, JBES) written
here from the formulas (explicit X, H, (I - H_gg)^{-1/2} by eigendecomposition, Q), a hand
result for equal clusters, and statsmodels for the CR1 beside it.
"""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm
from cr2_reference import dense_cr2
from scipy import stats as sps

from workbench import stats as st


def _unbalanced(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    g = int(rng.integers(2, 9))
    sizes = rng.integers(1, 12, g)
    cl = np.repeat(np.arange(g), sizes)
    y = rng.normal(size=cl.size) + rng.normal(size=g)[cl] + rng.integers(0, 3, cl.size)
    perm = rng.permutation(cl.size)  # clusters need not be contiguous
    return y[perm], cl[perm]


@pytest.mark.parametrize("seed", range(12))
def test_cluster_mean_cr2_matches_dense_matrices(seed: int) -> None:
    rng = np.random.default_rng(seed)
    y, cl = _unbalanced(rng)
    r = st.cluster_mean_cr2(y, cl, 0.9)
    se, df = dense_cr2(y, np.ones((y.size, 1)), cl, np.array([1.0]))
    assert r.estimate == pytest.approx(y.mean())
    assert r.se == pytest.approx(se, rel=1e-10)
    assert r.df == pytest.approx(df, rel=1e-10)
    t = sps.t.ppf(0.95, df)
    assert (r.ci_low, r.ci_high) == (pytest.approx(y.mean() - t * se), pytest.approx(y.mean() + t * se))
    assert r.p_value == pytest.approx(2 * sps.t.sf(abs(y.mean() / se), df))
    assert r.clusters == np.unique(cl).size and r.method == "cluster_cr2_bm"


@pytest.mark.parametrize("seed", range(12))
def test_diff_cr2_matches_dense_matrices(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    y, cl = _unbalanced(rng)
    b = rng.random(y.size) < 0.45
    b[0], b[1] = False, True
    # every cluster must leave each group something elsewhere, else I - H_gg is singular
    if any(np.all(cl[grp] == cl[grp][0]) for grp in (b, ~b)):
        pytest.skip("a group inside one cluster (tested separately)")
    x = np.c_[np.ones(y.size), b.astype(float)]
    se, df = dense_cr2(y, x, cl, np.array([0.0, -1.0]))
    r = st.diff_cr2(y[~b], cl[~b], y[b], cl[b])
    assert r.estimate == pytest.approx(y[~b].mean() - y[b].mean())
    assert r.se == pytest.approx(se, rel=1e-10)
    assert r.df == pytest.approx(df, rel=1e-10)
    assert r.p_value == pytest.approx(2 * sps.t.sf(abs(r.estimate / se), df))
    # the ClusterSide form gives the same numbers
    g = int(cl.max()) + 1
    rs = st.diff_cr2_sides(st.cluster_side(y[~b], cl[~b], g), st.cluster_side(y[b], cl[b], g))
    assert (rs.se, rs.df, rs.ci_low, rs.p_value) == (r.se, r.df, r.ci_low, r.p_value)


def test_diff_cr2_two_clusters_df_above_g_minus_1() -> None:
    """The two-group Satterthwaite df is not bounded by G - 1 (rank of the form can be G)."""
    y = np.array([1.0, 2.0, 4.0, 0.5, 3.0, 2.5, 1.5])
    cl = np.array([0, 0, 0, 1, 1, 1, 1])
    b = np.array([False, True, False, True, False, True, False])
    se, df = dense_cr2(y, np.c_[np.ones(7), b.astype(float)], cl, np.array([0.0, -1.0]))
    r = st.diff_cr2(y[~b], cl[~b], y[b], cl[b])
    assert r.df == pytest.approx(df) and r.se == pytest.approx(se)


@pytest.mark.parametrize(("g", "m"), [(2, 3), (3, 4), (5, 2), (9, 5)])
def test_cr2_balanced_is_cr1_factor_and_g_minus_1_df(g: int, m: int) -> None:
    """Equal clusters: se^2 = G/(G-1) sum_g S_g^2 / n^2 and BM df = G - 1 (by hand: Q_gg =
    m/n^2, off-diagonal R_gh = 1/(G^2 m (G-1)) ... sum = 1/(G^2 m^2 (G-1)), numerator 1/n^2)."""
    rng = np.random.default_rng(g * 10 + m)
    cl = np.repeat(np.arange(g), m)
    y = rng.normal(size=g * m) + rng.normal(size=g)[cl]
    n = g * m
    s = np.array([np.sum(y[cl == k] - y.mean()) for k in range(g)])
    r = st.cluster_mean_cr2(y, cl)
    assert r.se ** 2 == pytest.approx(g / (g - 1) * np.sum(s ** 2) / n ** 2, rel=1e-12)
    assert r.df == pytest.approx(g - 1, rel=1e-12)
    # with K = 1 the CR1 factor is G/(G-1) too: the two agree on equal clusters
    assert r.se == pytest.approx(st.clustered_se(y, cl), rel=1e-12)


def test_cr2_balanced_two_group_df() -> None:
    """Both groups in every cluster with equal counts: the same hand result, df = G - 1."""
    g, ma, mb = 6, 3, 2
    rng = np.random.default_rng(7)
    ca, cb = np.repeat(np.arange(g), ma), np.repeat(np.arange(g), mb)
    a, b = rng.normal(size=ca.size), rng.normal(size=cb.size) + 0.3
    r = st.diff_cr2(a, ca, b, cb)
    assert r.df == pytest.approx(g - 1, rel=1e-12)
    infl = np.array([np.sum(a[ca == k] - a.mean()) / a.size - np.sum(b[cb == k] - b.mean()) / b.size
                     for k in range(g)])
    assert r.se ** 2 == pytest.approx(g / (g - 1) * np.sum(infl ** 2), rel=1e-12)


def test_cr1_beside_still_matches_statsmodels() -> None:
    rng = np.random.default_rng(3)
    y, cl = _unbalanced(rng)
    fit = sm.OLS(y, np.ones(y.size)).fit(cov_type="cluster", cov_kwds={"groups": cl})
    ps = st.paired_summary(y, cl, bootstrap=False)
    assert ps.se_clustered == pytest.approx(float(fit.bse[0]))
    assert ps.p_clustered == pytest.approx(2 * sps.t.sf(abs(y.mean() / fit.bse[0]), np.unique(cl).size - 1))
    r = st.cluster_mean_cr2(y, cl)
    assert (ps.se_cr2, ps.df_cr2, ps.ci_low_cr2, ps.ci_high_cr2, ps.p_cr2) == (
        r.se, r.df, r.ci_low, r.ci_high, r.p_value)
    b = rng.random(y.size) < 0.5
    x = np.c_[np.ones(y.size), b.astype(float)]
    fit2 = sm.OLS(y, x).fit(cov_type="cluster", cov_kwds={"groups": cl}, use_t=True)
    ds = st.diff_clustered(y[~b], cl[~b], y[b], cl[b])
    assert ds.se == pytest.approx(float(fit2.bse[1])) and ds.p_value == pytest.approx(float(fit2.pvalues[1]))


def test_cr2_undefined_is_null() -> None:
    one = st.cluster_mean_cr2([1.0, 2.0, 3.0], ["s", "s", "s"])  # G = 1: the whole sample
    assert one.estimate == 2.0 and (one.se, one.df, one.ci_low, one.ci_high, one.p_value) == (None,) * 5
    empty = st.cluster_mean_cr2([], [])
    assert empty.estimate is None and empty.se is None
    # group b entirely in cluster "x": 1 - b_g / n_b = 0, its variance not estimable
    r = st.diff_cr2([1.0, 2.0, 3.0, 5.0], ["x", "y", "y", "z"], [0.0, 1.0], ["x", "x"])
    assert r.estimate == pytest.approx(2.75 - 0.5)
    assert (r.se, r.df, r.ci_low, r.ci_high, r.p_value) == (None,) * 5
    assert st.diff_cr2([1.0], ["x"], [], []).estimate is None
    # zero variance: se 0, no p (t undefined), interval collapses to the point
    z = st.cluster_mean_cr2([2.0, 2.0, 2.0], ["a", "b", "b"])
    assert z.se == 0.0 and z.p_value is None and z.ci_low == z.ci_high == 2.0


# --------------------------------------------------------------------------- pass^k interval


def test_pass_k_interval_by_hand() -> None:
    """Items (c passes of n): s0 (3/3, 2/3), s1 (1/3, 3/3), s2 (0/3, 2/2); k = 2.
    Per item C(c,2)/C(n,2): 1, 1/3 | 0, 1 | 0, 1 -> p = (1 + 1/3 + 0 + 1 + 0 + 1)/6 = 5/9.
    Residuals per scenario: s0 4/3 - 10/9 = 2/9, s1 1 - 10/9 = -1/9, s2 -1/9; CR1 var (K = 1)
    = 3/2 * (4 + 1 + 1)/81 / 36 = 1/324; binomial var p(1-p)/6 = 20/486 -> deff = 0.075, floored
    at G/m = 1/2; n_eff = 6 / 0.5 * (z / t_2)^2, Wilson on (p n_eff, n_eff)."""
    from statsmodels.stats.proportion import proportion_confint

    c, n, sc = [3, 2, 1, 3, 0, 2], [3, 3, 3, 3, 3, 2], ["s0", "s0", "s1", "s1", "s2", "s2"]
    r = st.pass_k_interval(c, n, sc, 2, method="wilson_design_effect_t")
    assert r.estimate == pytest.approx(5 / 9) and (r.items, r.clusters) == (6, 3)
    ne = 6 / 0.5 * (sps.norm.ppf(0.975) / sps.t.ppf(0.975, 2)) ** 2
    lo, hi = proportion_confint(5 / 9 * ne, ne, alpha=0.05, method="wilson")
    assert (r.ci_low, r.ci_high) == (pytest.approx(lo), pytest.approx(hi))
    # the headline: n_eff = p(1 - p) / v_CR2 capped at outcomes / k = 17 / 2, the quantile t at
    # 4 x the BM df; CR2 and its df by the dense reference, Wilson at quantile q on n_eff as
    # statsmodels' Wilson (at z) on n_eff (z / q)^2
    head = st.pass_k_interval(c, n, sc, 2)
    assert head.method == "wilson_design_effect_cr2_4bm" == st.PASS_K_METHOD
    vals = np.array([1, 1 / 3, 0, 1, 0, 1])
    se, df = dense_cr2(vals, np.ones((6, 1)), np.array(sc), np.array([1.0]))
    n_eff = min(17 / 2, 5 / 9 * 4 / 9 / se**2)
    scale = (sps.norm.ppf(0.975) / sps.t.ppf(0.975, 4 * df)) ** 2
    lo, hi = proportion_confint(5 / 9 * n_eff * scale, n_eff * scale, alpha=0.05, method="wilson")
    assert (head.ci_low, head.ci_high) == (pytest.approx(lo), pytest.approx(hi))
    assert head.ci_high - head.ci_low < r.ci_high - r.ci_low
    old = st.pass_k_interval(c, n, sc, 2, method="cluster_t_clipped")
    half = sps.t.ppf(0.975, 2) * np.sqrt(1 / 324)
    assert (old.ci_low, old.ci_high) == (pytest.approx(5 / 9 - half), pytest.approx(min(1.0, 5 / 9 + half)))
    means = st.pass_k_interval(c, n, sc, 2, method="scenario_means_t_clipped")
    sm_ = np.array([2 / 3, 1 / 2, 1 / 2])
    h2 = sps.t.ppf(0.975, 2) * np.std(sm_, ddof=1) / np.sqrt(3)
    assert (means.ci_low, means.ci_high) == (pytest.approx(sm_.mean() - h2), pytest.approx(sm_.mean() + h2))


def test_pass_k_interval_all_pass_is_not_a_point() -> None:
    """3 of 3 scenarios all passing: the t interval collapses to [1, 1]; the headline keeps a
    lower bound below 1 (deff 1, Wilson on n (z/t_2)^2)."""
    r = st.pass_k_interval([3] * 6, [3] * 6, [0, 0, 1, 1, 2, 2], 2, method="wilson_design_effect_t")
    old = st.pass_k_interval([3] * 6, [3] * 6, [0, 0, 1, 1, 2, 2], 2, method="cluster_t_clipped")
    assert (old.ci_low, old.ci_high) == (1.0, 1.0)
    ne = 6 * (sps.norm.ppf(0.975) / sps.t.ppf(0.975, 2)) ** 2
    z = sps.norm.ppf(0.975)
    assert r.ci_high == 1.0 and r.ci_low == pytest.approx(ne / (ne + z * z))  # Wilson at p = 1
    # the headline at p = 1: n_eff is the cap, 18 outcomes / k = 9, the quantile at 4 x BM df
    # (equal clusters of 2 items: BM df = G - 1 = 2)
    head = st.pass_k_interval([3] * 6, [3] * 6, [0, 0, 1, 1, 2, 2], 2)
    ne = 9 * (z / sps.t.ppf(0.975, 8)) ** 2
    assert head.ci_high == 1.0 and head.ci_low == pytest.approx(ne / (ne + z * z))
    one = st.pass_k_interval([1, 2], [2, 2], ["s", "s"], 1)
    assert one.estimate == 0.75 and (one.ci_low, one.ci_high) == (None, None)
    with pytest.raises(ValueError, match="unknown pass"):
        st.pass_k_interval([1], [2], ["s"], 1, method="nope")


# --------------------------------------------------------------------------- the scorecard cell's CR2


def _close(a: float, b: float, tol: float = 1e-12) -> bool:
    return abs(a - b) <= tol * max(1.0, abs(b))


@pytest.mark.parametrize("seed", range(30))
def test_cell_cr2_closed_form_matches_dense_matrices(seed: int) -> None:
    """The cell's CR2 and Bell-McCaffrey df from per-cluster counts and residual sums
    (st.cr2_mean_from_sums through cell_summary / cell_summary_sorted) on unbalanced
    clusters (1 to 40 values each, G = 2..12, some clusters of one value) equal the dense
    matrices of Pustejovsky & Tipton to 1e-12 and stats.cluster_mean_cr2."""
    rng = np.random.default_rng(500 + seed)
    g = int(rng.integers(2, 13))
    sizes = rng.integers(1, 41, g)
    sizes[rng.integers(0, g)] = 1  # one cluster of a single value
    cl = np.repeat(np.arange(g), sizes)
    y = rng.normal(size=cl.size) * 2 + rng.normal(size=g)[cl] * 3 + rng.integers(0, 10, cl.size)
    se, df = dense_cr2(y, np.ones((y.size, 1)), cl, np.array([1.0]))
    t = sps.t.ppf(0.95, df)
    perm = rng.permutation(cl.size)
    cs = st.cell_summary(y[perm], cl[perm], 0.9, bootstrap=False)
    order = np.lexsort((y, cl))
    ss = st.cell_summary_sorted(y[order], cl[order], 0.9)
    ref = st.cluster_mean_cr2(y, cl, 0.9)
    for c in (cs, ss):
        assert c.se_cr2 is not None and c.df_cr2 is not None and c.ci_low_cr2 is not None
        assert _close(c.se_cr2, se) and _close(c.df_cr2, df), (c.se_cr2, se, c.df_cr2, df)
        assert _close(c.ci_low_cr2, y.mean() - t * se) and _close(c.ci_high_cr2, y.mean() + t * se)
        assert _close(c.se_cr2, ref.se) and _close(c.df_cr2, ref.df)
        assert _close(c.ci_low_cr2, ref.ci_low) and _close(c.ci_high_cr2, ref.ci_high)
        assert 1.0 <= c.df_cr2 <= g - 1 + 1e-12
        # the CR1 beside it is unchanged: t(G - 1) on clustered_se
        lo, hi = st.t_interval(y.mean(), st.clustered_se(y, cl), g - 1, 0.9)
        assert (c.se_clustered, c.ci_low, c.ci_high) == (pytest.approx(st.clustered_se(y, cl), rel=1e-13),
                                                         pytest.approx(lo, rel=1e-13), pytest.approx(hi, rel=1e-13))


def test_cell_cr2_closed_form_by_hand() -> None:
    """Counts 1, 2, 3 (n = 6, pi = 1/6, 1/3, 1/2) and residual sums S = 1, -2, 1:
    var = sum_g (S_g / n)^2 / (1 - pi_g) = (1/36)(6/5 + 4 * 3/2 + 2) = (1/36)(46/5) = 23/90;
    w = pi^2 / (1 - pi) = 1/30, 1/6, 1/2: sum w = 7/10, sum w^2 = 1/900 + 1/36 + 1/4 = 251/900,
    sum pi^2 = 1/36 + 1/9 + 1/4 = 7/18; df = 1 / (7/18 + 49/100 - 251/900) = 1 / (350 + 441 - 251)
    * 900 = 900/540 = 5/3."""
    var, df = st.cr2_mean_from_sums(np.array([1, 2, 3]), np.array([1.0, -2.0, 1.0]))
    assert var == pytest.approx(23 / 90, rel=1e-14)
    assert df == pytest.approx(5 / 3, rel=1e-14)
    # equal clusters: G - 1 df and the CR1 factor G / (G - 1)
    var, df = st.cr2_mean_from_sums(np.array([4, 4, 4, 4]), np.array([1.0, -1.0, 2.0, -2.0]))
    assert df == pytest.approx(3.0, rel=1e-14)
    assert var == pytest.approx(4 / 3 * 10 / 256, rel=1e-14)
    assert st.cr2_mean_from_sums(np.array([5]), np.array([0.0])) is None


def test_cell_cr2_is_zero_exactly_when_cr1_is() -> None:
    """A degenerate design (every cluster at the same mean) has a zero-width interval under both;
    floating-point noise in the residual sums does not make one of them non-zero."""
    y = np.array([0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1])  # 0.1 is not exact: residuals ~1e-17
    cl = np.array([0, 0, 0, 1, 2, 2, 2])
    c = st.cell_summary(y, cl, bootstrap=False)
    assert c.se_clustered == 0.0 and c.se_cr2 == 0.0
    assert c.ci_low_cr2 == c.ci_high_cr2 == c.mean and c.ci_low == c.ci_high
    y2 = np.array([1.0, 3.0, 2.0, 2.0, 1.0, 2.0, 3.0])  # cluster means 2, 2, 2: S_g = 0
    c2 = st.cell_summary(y2, cl, bootstrap=False)
    assert c2.se_clustered == 0.0 and c2.se_cr2 == 0.0 and c2.df_cr2 is not None
    one = st.cell_summary(np.array([1.0, 2.0]), np.array([0, 0]), bootstrap=False)
    assert (one.se_cr2, one.df_cr2, one.ci_low_cr2, one.ci_high_cr2) == (None, None, None, None)


def test_t_quantile_is_scipy_t_ppf_bit_for_bit() -> None:
    """stats._t_ppf (scipy.special.stdtrit, fast for the cells' many Bell-McCaffrey dfs) is
    scipy.stats.t.ppf, bit for bit, on integer and fractional df, at the confidences used."""
    rng = np.random.default_rng(3)
    dfs = [1.0, 2.0, 3.0, 19.0, 1e6, float("inf"), *rng.uniform(1.0, 60.0, 300).tolist()]
    for q in (0.95, 0.975, 0.995, 0.9):
        for df in dfs:
            assert st._t_ppf(q, df) == float(sps.t.ppf(q, df)), (q, df)
