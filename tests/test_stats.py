"""Tests for workbench.stats.

Every estimator is checked against an independent computation: a naive loop that
follows the textbook definition, a hand-computed value (spelled out), or a
maintained library (statsmodels / scipy).
"""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import product

import numpy as np
import pytest
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as hst
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from workbench import stats as st

HSET = settings(database=None, deadline=None, max_examples=60)


# ---------------------------------------------------------------------------
# Independent reference implementations (naive loops, textbook definitions)
# ---------------------------------------------------------------------------


def naive_cr1_se_mean(y, g):
    """Sandwich (X'X)^-1 [sum_g X_g'e_g e_g'X_g] (X'X)^-1 with X = 1, CR1 factor."""
    y = [float(v) for v in y]
    n = len(y)
    ybar = sum(y) / n
    groups = {}
    for v, lab in zip(y, g, strict=True):
        groups.setdefault(lab, []).append(v - ybar)
    G = len(groups)
    meat = 0.0
    for resid in groups.values():
        s = 0.0
        for r in resid:
            s += r
        meat += s * s
    bread = 1.0 / n
    return math.sqrt(G / (G - 1) * (n - 1) / (n - 1) * bread * meat * bread)


def naive_icc1(y, g):
    """ICC(1) by explicit loops over groups (one-way ANOVA, Donner 1986 n0)."""
    groups = {}
    for v, lab in zip(y, g, strict=True):
        groups.setdefault(lab, []).append(float(v))
    N = sum(len(v) for v in groups.values())
    G = len(groups)
    grand = sum(sum(v) for v in groups.values()) / N
    ssb = 0.0
    ssw = 0.0
    for vals in groups.values():
        m = sum(vals) / len(vals)
        ssb += len(vals) * (m - grand) ** 2
        for v in vals:
            ssw += (v - m) ** 2
    msb = ssb / (G - 1)
    msw = ssw / (N - G)
    n0 = (N - sum(len(v) ** 2 for v in groups.values()) / N) / (G - 1)
    return (msb - msw) / (msb + (n0 - 1) * msw)


def naive_weighted_kappa(a, b, cats):
    """Cohen's (1968) weighted kappa with quadratic weights, by explicit loops."""
    k = len(cats)
    pos = {c: i for i, c in enumerate(cats)}
    n = len(a)
    obs = [[0.0] * k for _ in range(k)]
    for x, y in zip(a, b, strict=True):
        obs[pos[x]][pos[y]] += 1.0 / n
    row = [sum(obs[i][j] for j in range(k)) for i in range(k)]
    col = [sum(obs[i][j] for i in range(k)) for j in range(k)]
    num = 0.0
    den = 0.0
    for i in range(k):
        for j in range(k):
            w = (i - j) ** 2 / (k - 1) ** 2
            num += w * obs[i][j]
            den += w * row[i] * col[j]
    return 1.0 - num / den


def naive_kripp_interval_two_coders(a, b):
    """Krippendorff's alpha (interval) for 2 coders, no missing, by its definition.

    Do = (1/N) sum_u sum_{c != k in u} (v_c - v_k)^2 / (m_u - 1), m_u = 2
    De = 1/(N(N-1)) sum_{i != j over all N pairable values} (v_i - v_j)^2
    """
    vals = [float(v) for v in a] + [float(v) for v in b]
    N = len(vals)
    do = sum(2 * (float(x) - float(y)) ** 2 for x, y in zip(a, b, strict=True)) / N
    de = 0.0
    for i in range(N):
        for j in range(N):
            if i != j:
                de += (vals[i] - vals[j]) ** 2
    de /= N * (N - 1)
    return 1.0 - do / de


def naive_bootstrap_mean(values, clusters, resamples, seed, confidence):
    """Loop version of the cluster bootstrap, drawing indices the same way."""
    labels = sorted(set(clusters))
    members = {lab: [v for v, c in zip(values, clusters, strict=True) if c == lab]
               for lab in labels}
    rng = np.random.default_rng(seed)
    idx = rng.integers(len(labels), size=(resamples, len(labels)))
    means = []
    for row in idx:
        pooled = []
        for j in row:
            pooled.extend(members[labels[j]])
        means.append(sum(pooled) / len(pooled))
    alpha = 1 - confidence
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def sm_cluster_mean(y, g):
    res = sm.OLS(np.asarray(y, float), np.ones(len(y))).fit(
        cov_type="cluster", cov_kwds={"groups": np.asarray(g)}
    )
    return float(res.bse[0])


def sm_cluster_diff(a, ga, b, gb):
    y = np.r_[np.asarray(a, float), np.asarray(b, float)]
    x = np.c_[np.ones(y.size), np.r_[np.zeros(len(a)), np.ones(len(b))]]
    groups = np.r_[np.asarray(ga), np.asarray(gb)]
    return sm.OLS(y, x).fit(cov_type="cluster", cov_kwds={"groups": groups}, use_t=True)


def sm_cluster_diff_se(a, ga, b, gb):
    """statsmodels SE of the indicator; its own rounding noise (tiny negative
    variance -> sqrt warning / NaN) is mapped to 0."""
    res = sm_cluster_diff(a, ga, b, gb)
    var = float(res.cov_params()[1, 1])
    return math.sqrt(max(var, 0.0))


# ---------------------------------------------------------------------------
# 1. Wilson interval
# ---------------------------------------------------------------------------


def test_wilson_known_values():
    lo, hi = st.wilson_interval(19, 20, 0.95)
    assert lo == pytest.approx(0.7639, abs=1e-4)
    assert hi == pytest.approx(0.9911, abs=1e-4)
    # 0/n: lower 0, upper z^2/(n+z^2) = 3.8415/13.8415 = 0.27753
    lo, hi = st.wilson_interval(0, 10)
    assert lo == 0.0
    assert hi == pytest.approx(1.959964**2 / (10 + 1.959964**2), abs=1e-6)
    assert hi == pytest.approx(0.27753, abs=1e-5)
    # n/n mirrors 0/n
    lo, hi = st.wilson_interval(10, 10)
    assert hi == 1.0
    assert lo == pytest.approx(1 - 0.27753, abs=1e-5)
    assert type(lo) is float and type(hi) is float


def test_wilson_matches_statsmodels():
    for (k, n), conf in product([(0, 1), (1, 1), (3, 7), (19, 20), (50, 100), (1, 250)],
                                [0.8, 0.9, 0.95, 0.99]):
        lo, hi = st.wilson_interval(k, n, conf)
        slo, shi = proportion_confint(k, n, alpha=1 - conf, method="wilson")
        assert lo == pytest.approx(slo, abs=1e-10), (k, n, conf)
        assert hi == pytest.approx(shi, abs=1e-10), (k, n, conf)


def test_wilson_undefined_and_invalid():
    assert st.wilson_interval(0, 0) == (None, None)
    with pytest.raises(ValueError):
        st.wilson_interval(3, 2)
    with pytest.raises(ValueError):
        st.wilson_interval(1, 2, confidence=1.0)


@HSET
@given(n=hst.integers(1, 2000), frac=hst.floats(0, 1), conf=hst.floats(0.5, 0.999))
def test_wilson_contains_estimate(n, frac, conf):
    k = int(round(frac * n))
    lo, hi = st.wilson_interval(k, n, conf)
    assert 0.0 <= lo <= k / n <= hi <= 1.0


# ---------------------------------------------------------------------------
# 2-4. Mean, naive SE, clustered SE, t interval
# ---------------------------------------------------------------------------


def test_mean_se_hand():
    # [1,2,3,4]: mean 2.5, sd = sqrt(5/3) = 1.290994, se = sd/2 = 0.645497
    m, se = st.mean_se(np.array([1.0, 2, 3, 4]))
    assert m == 2.5
    assert se == pytest.approx(0.6454972244, rel=1e-9)
    assert st.mean_se(np.array([])) == (None, None)
    assert st.mean_se(np.array([3.0])) == (3.0, None)


def test_values_with_nan_raise():
    with pytest.raises(ValueError):
        st.mean_se(np.array([1.0, np.nan]))
    with pytest.raises(ValueError):
        st.clustered_se(np.array([1.0, np.nan]), np.array([0, 1]))
    with pytest.raises(ValueError):
        st.cell_summary(np.array([1.0, 2.0]), np.array([0.0, np.nan]))


def test_clustered_se_hand():
    # y = 1..6 in clusters a,a,b,b,c,c; ybar = 3.5; residual sums per cluster
    # -4, 0, 4 -> meat 32; var = G/(G-1) * meat / N^2 = 1.5 * 32/36 = 4/3
    se = st.clustered_se(np.arange(1.0, 7.0), np.array(list("aabbcc")))
    assert se == pytest.approx(math.sqrt(4 / 3), rel=1e-12)
    assert se == pytest.approx(1.1547005, rel=1e-7)


def test_clustered_se_matches_statsmodels_and_loop():
    rng = np.random.default_rng(7)
    g = rng.integers(0, 8, size=60)
    y = rng.normal(size=8)[g] + rng.normal(size=60)
    ours = st.clustered_se(y, g)
    assert ours == pytest.approx(sm_cluster_mean(y, g), rel=1e-10)
    assert ours == pytest.approx(naive_cr1_se_mean(y, g.tolist()), rel=1e-10)


def test_clustered_se_undefined():
    assert st.clustered_se(np.array([1.0, 2.0, 3.0]), np.array(["x", "x", "x"])) is None
    assert st.clustered_se(np.array([1.0]), np.array(["x"])) is None
    assert st.clustered_se(np.array([]), np.array([])) is None


@HSET
@given(
    data=hst.lists(
        hst.tuples(hst.floats(-100, 100, allow_subnormal=False), hst.integers(0, 6)),
        min_size=2,
        max_size=40,
    )
)
def test_clustered_se_property_statsmodels(data):
    y = np.array([d[0] for d in data])
    g = np.array([d[1] for d in data])
    ours = st.clustered_se(y, g)
    if np.unique(g).size < 2:
        assert ours is None
        return
    assert ours == pytest.approx(sm_cluster_mean(y, g), rel=1e-7, abs=1e-9)


def test_t_interval_hand():
    # t_{0.975, 10} = 2.228139; 1 -/+ 2.228139 * 0.5
    lo, hi = st.t_interval(1.0, 0.5, 10, 0.95)
    assert lo == pytest.approx(1 - 2.2281388520 * 0.5, rel=1e-9)
    assert hi == pytest.approx(1 + 2.2281388520 * 0.5, rel=1e-9)
    assert st.t_interval(1.0, None, 10, 0.95) == (None, None)
    assert st.t_interval(1.0, 0.5, 0, 0.95) == (None, None)
    assert st.t_interval(None, 0.5, 5, 0.95) == (None, None)


@HSET
@given(est=hst.floats(-1e6, 1e6), se=hst.floats(0, 1e3), df=hst.integers(1, 500),
       conf=hst.floats(0.5, 0.999))
def test_t_interval_contains_estimate(est, se, df, conf):
    lo, hi = st.t_interval(est, se, df, conf)
    assert lo <= est <= hi


# ---------------------------------------------------------------------------
# 5-7. Bootstrap, ICC, design effect, cell summary
# ---------------------------------------------------------------------------


def _clustered_sample(seed, g=6, n=40):
    rng = np.random.default_rng(seed)
    lab = rng.integers(0, g, size=n)
    lab[:g] = np.arange(g)  # every cluster present
    y = rng.normal(size=g)[lab] + rng.normal(size=n)
    return y, np.array([f"s{i}" for i in lab])


def test_cluster_bootstrap_mean_matches_loop():
    y, lab = _clustered_sample(1)
    ours = st.cluster_bootstrap_mean(y, lab, resamples=500, seed=3, confidence=0.9)
    ref = naive_bootstrap_mean(y.tolist(), lab.tolist(), 500, 3, 0.9)
    assert ours == pytest.approx(ref, rel=1e-12)


def test_cluster_bootstrap_mean_deterministic_and_seeded():
    y, lab = _clustered_sample(2)
    r1 = st.cluster_bootstrap_mean(y, lab, resamples=2000, seed=11, confidence=0.95)
    r2 = st.cluster_bootstrap_mean(y, lab, resamples=2000, seed=11, confidence=0.95)
    r3 = st.cluster_bootstrap_mean(y, lab, resamples=2000, seed=12, confidence=0.95)
    assert r1 == r2
    assert r1 != r3


def test_bootstrap_does_not_touch_global_rng():
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    y, lab = _clustered_sample(3)
    st.cluster_bootstrap_mean(y, lab, resamples=100, seed=0)
    st.contingency_test(np.array([[3, 1], [1, 3], [10, 2]]), seed=0, resamples=100)
    assert np.array_equal(before, np.random.get_state()[1])


def test_cluster_bootstrap_mean_undefined():
    assert st.cluster_bootstrap_mean(np.array([1.0, 2.0]), np.array(["a", "a"]), 100, 0) == (
        None,
        None,
    )


@HSET
@given(seed=hst.integers(0, 2**32 - 1), data_seed=hst.integers(0, 1000))
def test_bootstrap_same_seed_same_result(seed, data_seed):
    y, lab = _clustered_sample(data_seed, g=4, n=12)
    a = st.cluster_bootstrap_mean(y, lab, resamples=200, seed=seed)
    b = st.cluster_bootstrap_mean(y, lab, resamples=200, seed=seed)
    assert a == b


def test_icc_hand_example():
    # A=[1,2,3], B=[4,5], C=[7,8,9,10]; N=9, G=3, grand mean 49/9
    # SSB = 12105/162, MSB = 12105/324; SSW = 2 + 0.5 + 5 = 7.5, MSW = 7.5/6 = 5/4
    # n0 = (9 - 29/9)/2 = 26/9
    # ICC = (12105/324 - 405/324) / (12105/324 + (17/9)(5/4)) = 11700/12870 = 10/11
    y = np.array([1, 2, 3, 4, 5, 7, 8, 9, 10], dtype=float)
    g = np.array(list("AAABBCCCC"))
    msb = Fraction(12105, 324)
    msw = Fraction(5, 4)
    n0 = Fraction(26, 9)
    hand = (msb - msw) / (msb + (n0 - 1) * msw)
    assert hand == Fraction(10, 11)
    assert st.icc_oneway(y, g) == pytest.approx(10 / 11, rel=1e-12)
    # Kish: m = sum n_g^2 / N = 29/9; deff = 1 + (20/9)(10/11) = 299/99 = 3.0202
    assert st.design_effect(10 / 11, np.array([3, 2, 4])) == pytest.approx(299 / 99, rel=1e-12)


def test_icc_matches_loop_and_negative_allowed():
    for seed in range(5):
        y, lab = _clustered_sample(seed, g=7, n=35)
        assert st.icc_oneway(y, lab) == pytest.approx(naive_icc1(y, lab), rel=1e-10)
    # identical group means: MSB = 0, MSW = 0.5, n0 = (4 - 8/4)/1 = 2 -> ICC = -1
    icc = st.icc_oneway(np.array([1.0, 2.0, 1.0, 2.0]), np.array([0, 0, 1, 1]))
    assert icc == pytest.approx(-1.0)


def test_icc_undefined():
    assert st.icc_oneway(np.array([1.0, 2.0, 3.0]), np.array([0, 0, 0])) is None  # G < 2
    assert st.icc_oneway(np.array([1.0, 2.0]), np.array([0, 1])) is None  # N <= G
    assert st.icc_oneway(np.array([2.0] * 4), np.array([0, 0, 1, 1])) is None  # MSB=MSW=0
    assert st.design_effect(None, np.array([2, 2])) is None


def test_cell_summary_consistent():
    y, lab = _clustered_sample(4, g=9, n=45)
    cs = st.cell_summary(y, lab, confidence=0.9, resamples=1000, seed=5)
    assert cs.n == 45 and cs.clusters == 9
    m, se = st.mean_se(y)
    assert cs.mean == m and cs.se == se
    assert cs.se_clustered == pytest.approx(sm_cluster_mean(y, lab), rel=1e-10)
    tcrit = sps.t.ppf(0.95, 8)  # df = G - 1 = 8
    assert cs.ci_low == pytest.approx(m - tcrit * cs.se_clustered, rel=1e-12)
    assert cs.ci_high == pytest.approx(m + tcrit * cs.se_clustered, rel=1e-12)
    assert (cs.boot_low, cs.boot_high) == st.cluster_bootstrap_mean(y, lab, 1000, 5, 0.9)
    assert cs.icc == pytest.approx(naive_icc1(y, lab), rel=1e-10)
    sizes = np.unique(lab, return_counts=True)[1]
    assert cs.design_effect == pytest.approx(1 + (np.sum(sizes**2) / 45 - 1) * cs.icc)
    assert cs.ci_low <= cs.mean <= cs.ci_high
    with pytest.raises(AttributeError):
        cs.mean = 0.0  # frozen


def test_cell_summary_degenerate():
    cs = st.cell_summary(np.array([]), np.array([]))
    assert cs.mean is None and cs.n == 0 and cs.clusters == 0
    assert cs.se is None and cs.ci_low is None and cs.boot_low is None and cs.icc is None
    cs = st.cell_summary(np.array([4.0]), np.array(["x"]))
    assert cs.mean == 4.0 and cs.se is None and cs.se_clustered is None
    assert cs.ci_low is None and cs.boot_low is None and cs.design_effect is None


@HSET
@given(seed=hst.integers(0, 10_000), g=hst.integers(2, 8))
def test_cell_summary_interval_contains_mean(seed, g):
    y, lab = _clustered_sample(seed, g=g, n=3 * g)
    cs = st.cell_summary(y, lab, resamples=200, seed=seed)
    assert cs.ci_low <= cs.mean <= cs.ci_high


# ---------------------------------------------------------------------------
# 8-9. Unpaired differences
# ---------------------------------------------------------------------------


def test_diff_clustered_matches_statsmodels():
    rng = np.random.default_rng(5)
    ga = rng.integers(0, 7, size=30)
    gb = rng.integers(0, 7, size=25)
    eff = rng.normal(size=7)
    a = eff[ga] + rng.normal(size=30)
    b = eff[gb] + 0.4 + rng.normal(size=25)
    d = st.diff_clustered(a, ga, b, gb, confidence=0.95)
    res = sm_cluster_diff(a, ga, b, gb)
    g = np.unique(np.r_[ga, gb]).size
    assert d.diff == pytest.approx(-res.params[1], rel=1e-12)  # sign: a - b
    assert d.diff == pytest.approx(a.mean() - b.mean(), rel=1e-12)
    assert d.se == pytest.approx(res.bse[1], rel=1e-10)
    assert d.df == g - 1 == int(res.df_resid_inference)
    assert d.p_value == pytest.approx(res.pvalues[1], rel=1e-8)
    lo, hi = res.conf_int(alpha=0.05)[1]
    assert (d.ci_low, d.ci_high) == pytest.approx((-hi, -lo), rel=1e-10)
    assert (d.n_a, d.n_b, d.clusters) == (30, 25, g)


@HSET
@given(
    a=hst.lists(hst.tuples(hst.integers(1, 5), hst.integers(0, 4)), min_size=1, max_size=20),
    b=hst.lists(hst.tuples(hst.integers(1, 5), hst.integers(0, 4)), min_size=1, max_size=20),
)
def test_diff_clustered_property_statsmodels(a, b):
    ya = np.array([v for v, _ in a], float)
    ga = np.array([c for _, c in a])
    yb = np.array([v for v, _ in b], float)
    gb = np.array([c for _, c in b])
    d = st.diff_clustered(ya, ga, yb, gb)
    g = np.unique(np.r_[ga, gb]).size
    if g < 2 or ya.size + yb.size <= 2:
        assert d.se is None and d.p_value is None
        return
    assert d.se == pytest.approx(sm_cluster_diff_se(ya, ga, yb, gb), rel=1e-7, abs=1e-7)
    if d.p_value is not None:
        assert d.ci_low <= d.diff <= d.ci_high


def test_diff_clustered_undefined_and_labels():
    d = st.diff_clustered(np.array([]), np.array([]), np.array([1.0]), np.array(["x"]))
    assert d.diff is None and d.se is None and d.p_value is None
    d = st.diff_clustered(np.array([1.0, 2.0]), np.array(["x", "x"]),
                          np.array([3.0]), np.array(["x"]))
    assert d.diff == pytest.approx(-1.5) and d.se is None and d.df is None
    # Clusters shared through string labels: 's1' in both groups is one cluster.
    d = st.diff_clustered(np.array([1.0, 2.0, 3.0]), np.array(["s1", "s2", "s3"]),
                          np.array([2.0, 2.0]), np.array(["s1", "s2"]))
    assert d.clusters == 3 and d.df == 2


def test_cluster_bootstrap_diff_matches_loop_and_seeded():
    rng = np.random.default_rng(9)
    ga = np.array([f"c{i}" for i in rng.integers(0, 5, size=20)])
    gb = np.array([f"c{i}" for i in rng.integers(0, 5, size=15)])
    a = rng.normal(size=20)
    b = rng.normal(size=15)
    ours = st.cluster_bootstrap_diff(a, ga, b, gb, resamples=400, seed=2, confidence=0.9)
    # loop reference over the union of clusters, same draws
    labels = sorted(set(ga) | set(gb))
    r = np.random.default_rng(2)
    idx = r.integers(len(labels), size=(400, len(labels)))
    diffs = []
    for row in idx:
        pa = [v for j in row for v, c in zip(a, ga, strict=True) if c == labels[j]]
        pb = [v for j in row for v, c in zip(b, gb, strict=True) if c == labels[j]]
        if pa and pb:
            diffs.append(sum(pa) / len(pa) - sum(pb) / len(pb))
    ref = tuple(float(x) for x in np.quantile(diffs, [0.05, 0.95]))
    assert ours == pytest.approx(ref, rel=1e-12)
    again = st.cluster_bootstrap_diff(a, ga, b, gb, resamples=400, seed=2, confidence=0.9)
    other = st.cluster_bootstrap_diff(a, ga, b, gb, resamples=400, seed=3, confidence=0.9)
    assert ours == again and ours != other


def test_cluster_bootstrap_diff_drops():
    # a only in cluster 'x', b only in 'y' (G = 2): a resample keeps both sides
    # only if it draws both clusters; return None iff more than half dropped.
    a, ga = np.array([1.0, 2.0]), np.array(["x", "x"])
    b, gb = np.array([0.0, 1.0]), np.array(["y", "y"])
    seen = set()
    for seed in range(20):
        idx = np.random.default_rng(seed).integers(2, size=(11, 2))
        dropped = int(np.sum(idx[:, 0] == idx[:, 1]))
        res = st.cluster_bootstrap_diff(a, ga, b, gb, resamples=11, seed=seed)
        if dropped > 5:
            assert res == (None, None)
            seen.add("none")
        else:
            # every kept resample has diff 1.5 - 0.5 = 1
            assert res == pytest.approx((1.0, 1.0))
            seen.add("kept")
    assert seen == {"none", "kept"}
    assert st.cluster_bootstrap_diff(a, ga, b, ga, 100, 0) == (None, None)  # G < 2


# ---------------------------------------------------------------------------
# 10. Paired differences
# ---------------------------------------------------------------------------


def test_paired_summary_hand():
    d = np.array([1.0, 0.0, -1.0, 2.0, 2.0, 0.0, 1.0, 3.0])
    g = np.array(list("aabbccdd"))
    ps = st.paired_summary(d, g, confidence=0.95, resamples=500, seed=1)
    # mean = 8/8 = 1; sd^2 = (0+1+4+1+1+1+0+4)/7 = 12/7; se = sqrt(12/7/8)
    se = math.sqrt(12 / 7 / 8)
    t7 = 2.3646242516
    assert ps.mean == 1.0 and ps.n == 8 and ps.df == 7
    assert ps.se == pytest.approx(se, rel=1e-12)
    assert ps.ci_low == pytest.approx(1 - t7 * se, rel=1e-9)
    assert ps.ci_high == pytest.approx(1 + t7 * se, rel=1e-9)
    # clustered: residuals per cluster a:(0,-1) b:(-2,1) c:(1,-1) d:(0,2)
    # sums -1, -1, 0, 2 -> meat 6; var = G/(G-1) * meat/N^2 = 4/3 * 6/64 = 1/8
    se_cl = math.sqrt(4 / 3 * 6 / 64)
    assert se_cl == pytest.approx(math.sqrt(1 / 8))
    t3 = 3.1824463053
    assert ps.se_clustered == pytest.approx(se_cl, rel=1e-12)
    assert ps.df_clustered == 3
    assert ps.ci_low_clustered == pytest.approx(1 - t3 * se_cl, rel=1e-9)
    assert (ps.boot_low, ps.boot_high) == st.cluster_bootstrap_mean(d, g, 500, 1, 0.95)
    assert ps.wilcoxon_p == pytest.approx(sps.wilcoxon(d, zero_method="wilcox").pvalue)
    assert ps.diff_counts == {"-1": 1, "0": 2, "1": 2, "2": 2, "3": 1}


def test_paired_summary_degenerate():
    ps = st.paired_summary(np.zeros(5), np.arange(5), resamples=50)
    assert ps.mean == 0.0 and ps.wilcoxon_p is None and ps.se == 0.0
    ps = st.paired_summary(np.array([]), np.array([]), resamples=50)
    assert ps.mean is None and ps.n == 0 and ps.wilcoxon_p is None and ps.df is None
    assert ps.diff_counts == {}
    ps = st.paired_summary(np.array([2.0]), np.array(["a"]), resamples=50)
    assert ps.se is None and ps.ci_low is None and ps.df_clustered is None


def test_diff_counts_rounding_and_order():
    # halves away from zero: -1.5->-2, -0.5->-1, 0.4->0, 0.5->1, 2.49->2, 2.5->3
    d = np.array([-1.5, -0.5, 0.4, 0.5, 2.49, 2.5, -2.0])
    assert st.diff_counts(d) == {"-2": 2, "-1": 1, "0": 1, "1": 1, "2": 1, "3": 1}
    out = st.diff_counts(np.array([10.0, 9.0, -10.0, -2.0, -0.2]))
    assert list(out) == ["-10", "-2", "0", "9", "10"]  # numeric, not lexicographic


@HSET
@given(hst.lists(hst.integers(-4, 4), max_size=50))
def test_diff_counts_total(xs):
    out = st.diff_counts(np.array(xs, dtype=float))
    assert sum(out.values()) == len(xs)
    assert all(out[str(k)] == xs.count(k) for k in set(xs))


# ---------------------------------------------------------------------------
# 11. Agreement
# ---------------------------------------------------------------------------


def test_exact_and_within_one_hand():
    a = np.array([1, 2, 3, 4, 5])
    b = np.array([1, 3, 5, 4, 3])
    assert st.exact_agreement(a, b) == pytest.approx(2 / 5)  # pairs 1 and 4
    assert st.within_one(a, b) == pytest.approx(3 / 5)  # |d| = 0,1,2,0,2
    assert st.exact_agreement(np.array([]), np.array([])) is None
    assert st.within_one(np.array([]), np.array([])) is None
    with pytest.raises(ValueError):
        st.exact_agreement(np.array([1, 2]), np.array([1]))


def test_kappa_quadratic_hand():
    # 2 categories: quadratic kappa = Cohen's kappa. Table [[20,5],[10,15]]:
    # po = 35/50 = 0.7, pe = (25*30 + 25*20)/2500 = 0.5, kappa = 0.2/0.5 = 0.4
    a = np.array([0] * 25 + [1] * 25)
    b = np.array([0] * 20 + [1] * 5 + [0] * 10 + [1] * 15)
    assert st.kappa_quadratic(a, b) == pytest.approx(0.4, rel=1e-12)
    # 3 categories: a=[1,2,3,3], b=[1,3,3,2]; w(1 apart)=1/4, w(2 apart)=1
    # sum wO = 2 * 1/4 * 1/4 = 1/8; marginals (1/4,1/4,1/2) both;
    # sum wE = 2/64 + 2/8 + 2/32 = 11/32 -> kappa = 1 - (1/8)/(11/32) = 7/11
    assert st.kappa_quadratic(np.array([1, 2, 3, 3]), np.array([1, 3, 3, 2])) == pytest.approx(
        7 / 11, rel=1e-12
    )
    # perfect disagreement of two categories: kappa = 1 - 1/0.5 = -1
    assert st.kappa_quadratic(np.array([1, 3]), np.array([3, 1])) == pytest.approx(-1.0)
    assert st.kappa_quadratic(np.array([1, 2, 3]), np.array([1, 2, 3])) == pytest.approx(1.0)


def test_kappa_quadratic_matches_naive_and_labels():
    rng = np.random.default_rng(3)
    a = rng.integers(1, 6, size=80)
    b = np.clip(a + rng.integers(-1, 2, size=80), 1, 5)
    cats = sorted(set(a) | set(b))
    assert st.kappa_quadratic(a, b) == pytest.approx(naive_weighted_kappa(a, b, cats), rel=1e-12)
    # labels extend the category set: observed {1,2,4} vs the full 1..4 scale
    a2, b2 = np.array([1, 2, 4, 4, 1]), np.array([2, 2, 4, 1, 1])
    full = st.kappa_quadratic(a2, b2, labels=np.array([1, 2, 3, 4]))
    assert full == pytest.approx(naive_weighted_kappa(a2, b2, [1, 2, 3, 4]), rel=1e-12)
    assert st.kappa_quadratic(a2, b2) == pytest.approx(
        naive_weighted_kappa(a2, b2, [1, 2, 4]), rel=1e-12
    )
    assert full != pytest.approx(st.kappa_quadratic(a2, b2))
    with pytest.raises(ValueError):
        st.kappa_quadratic(a2, b2, labels=np.array([1, 2]))


def test_kappa_undefined():
    assert st.kappa_quadratic(np.array([3, 3]), np.array([3, 3])) is None  # one category
    # both raters constant on the same level of a 3-level scale: expected
    # disagreement sum(w E) = 0 -> undefined
    assert st.kappa_quadratic(np.array([2, 2]), np.array([2, 2]), labels=[1, 2, 3]) is None
    # constant but different raters: sum(w O) = sum(w E) = 1 -> kappa = 0 (defined)
    assert st.kappa_quadratic(np.array([1, 1]), np.array([2, 2])) == 0.0
    assert st.kappa_quadratic(np.array([]), np.array([])) is None


def test_krippendorff_hand_and_naive():
    # [1,2,3] vs [1,2,4]: N = 6 values, Do = 2*1/6; sum_{i!=j}(vi-vj)^2 = 2*N*SS,
    # SS = 35 - 13^2/6 = 41/6 -> 82; De = 82/30; alpha = 1 - (1/3)/(82/30) = 36/41
    assert st.krippendorff_alpha(np.array([1, 2, 3]), np.array([1, 2, 4])) == pytest.approx(
        36 / 41, rel=1e-9
    )
    rng = np.random.default_rng(4)
    a = rng.integers(1, 6, size=30).astype(float)
    b = np.clip(a + rng.integers(-1, 2, size=30), 1, 5)
    assert st.krippendorff_alpha(a, b) == pytest.approx(
        naive_kripp_interval_two_coders(a, b), rel=1e-9
    )
    ordinal = st.krippendorff_alpha(a, b, level="ordinal")
    assert ordinal is not None and -1 <= ordinal <= 1
    assert st.krippendorff_alpha(np.array([2, 2]), np.array([2, 2])) is None
    assert st.krippendorff_alpha(np.array([]), np.array([])) is None
    with pytest.raises(ValueError):
        st.krippendorff_alpha(a, b, level="bogus")


def test_spearman_hand_and_constant():
    # no ties: d = -1,1,-1,1,0 -> sum d^2 = 4; rho = 1 - 6*4/(5*24) = 0.8
    assert st.spearman(np.array([1, 2, 3, 4, 5]), np.array([2, 1, 4, 3, 5])) == pytest.approx(0.8)
    assert st.spearman(np.array([1, 2, 3]), np.array([4, 4, 4])) is None
    assert st.spearman(np.array([1, 1, 1]), np.array([1, 2, 3])) is None
    assert st.spearman(np.array([1.0]), np.array([2.0])) is None


# ---------------------------------------------------------------------------
# 12. Holm
# ---------------------------------------------------------------------------


def test_holm_hand_and_none():
    # sorted .01*3 = .03, .03*2 = .06, .04*1 = .04 -> running max .03, .06, .06
    assert st.holm([0.01, None, 0.04, 0.03]) == pytest.approx([0.03, None, 0.06, 0.06])
    assert st.holm([None, None]) == [None, None]
    assert st.holm([]) == []
    with pytest.raises(ValueError):
        st.holm([0.5, 1.5])


def naive_holm(ps):
    """Holm (1979) by its definition: adj_i = max over p_j <= p_i of min(1, (m-rank_j) p_j)."""
    m = len(ps)
    ranked = sorted(range(m), key=lambda i: ps[i])
    out = [0.0] * m
    running = 0.0
    for r, i in enumerate(ranked):
        running = max(running, min(1.0, (m - r) * ps[i]))
        out[i] = running
    return out


def test_holm_matches_statsmodels_fixed():
    cases = [[0.01, 0.04, 0.03, 0.2], [0.5], [0.001, 0.001, 0.9, 0.02, 0.04], [1.0, 0.0]]
    for ps in cases:
        ref = multipletests(ps, method="holm")[1]
        assert st.holm(ps) == pytest.approx(list(ref), abs=1e-12), ps
        assert st.holm(ps) == pytest.approx(naive_holm(ps), abs=1e-12), ps


@settings(database=None, deadline=None, max_examples=60)
@given(hst.lists(hst.one_of(hst.none(), hst.floats(0, 1)), max_size=15))
def test_holm_matches_naive_property(ps):
    ours = st.holm(ps)
    vals = [p for p in ps if p is not None]
    assert [o is None for o in ours] == [p is None for p in ps]
    assert [o for o in ours if o is not None] == pytest.approx(naive_holm(vals), abs=1e-12)


# statsmodels' multipletests costs ~50 ms a call here, so fewer examples.
@settings(database=None, deadline=None, max_examples=20)
@given(hst.lists(hst.one_of(hst.none(), hst.floats(0, 1)), max_size=15))
def test_holm_matches_statsmodels(ps):
    ours = st.holm(ps)
    vals = [p for p in ps if p is not None]
    assert [o is None for o in ours] == [p is None for p in ps]
    if not vals:
        return
    ref = multipletests(vals, method="holm")[1]
    got = [o for o in ours if o is not None]
    assert got == pytest.approx(list(ref), abs=1e-12)


# ---------------------------------------------------------------------------
# 13-14. Power, sample size, order statistics
# ---------------------------------------------------------------------------


def test_mde_hand():
    # normal: z_.975 + z_.8 = 1.959964 + 0.841621 = 2.801585
    assert st.mde(1.0) == pytest.approx(2.8015852, rel=1e-7)
    # t, df = 10: 2.228139 + 0.879058 = 3.107197
    assert st.mde(0.5, df=10) == pytest.approx(0.5 * 3.1071966, rel=1e-6)
    assert st.mde(None) is None
    assert st.mde(1.0, df=0) is None


def test_n_needed_textbook():
    # 2 * (1.959964 + 0.841621)^2 * 1 / 0.25 = 62.79 -> 63
    assert st.n_needed(1.0, 0.5) == 63
    assert st.n_needed(1.0, 0.5, design_effect=2.0) == 126  # 125.58 -> 126
    assert st.n_needed(1.0, 0.5, rho=0.5, paired=True) == 32  # 31.40 -> 32
    assert st.n_needed(None, 0.5) is None
    assert st.n_needed(1.0, 0.0) is None
    assert st.n_needed(1.0, -1.0) is None
    assert st.n_needed(0.1, 10.0) == 2  # floor at 2 per side
    with pytest.raises(ValueError):
        st.n_needed(1.0, 0.5, rho=0.3)  # rho only with paired=True


@pytest.mark.slow
def test_n_needed_simulated_power():
    n = st.n_needed(1.0, 0.5)
    rng = np.random.default_rng(2024)
    sims = 4000
    x = rng.normal(0.0, 1.0, size=(sims, n))
    y = rng.normal(0.5, 1.0, size=(sims, n))
    t = (y.mean(1) - x.mean(1)) / np.sqrt(x.var(1, ddof=1) / n + y.var(1, ddof=1) / n)
    crit = sps.t.ppf(0.975, 2 * n - 2)
    power = float(np.mean(np.abs(t) > crit))
    assert abs(power - 0.8) < 0.05, f"empirical power {power:.3f} at n={n} per side"


def test_order_statistic_n():
    assert st.order_statistic_n(0.95, 0.95) == 59
    assert st.order_statistic_n(0.9, 0.95) == 29
    for q, c in product([0.5, 0.8, 0.9, 0.95, 0.99], [0.5, 0.9, 0.95, 0.99]):
        n = st.order_statistic_n(q, c)
        assert q**n <= 1 - c < q ** (n - 1) or n == 1, (q, c, n)
    with pytest.raises(ValueError):
        st.order_statistic_n(1.0, 0.95)


# ---------------------------------------------------------------------------
# 15-16. Contingency tables
# ---------------------------------------------------------------------------


def test_contingency_fisher_branch():
    # [[3,1],[1,3]]: all expected counts 2 < 5. Hypergeometric P(x) for x=0..4:
    # 1,16,36,16,1 over 70; two-sided p = (1+16+16+1)/70 = 34/70; OR = 9
    res = st.contingency_test(np.array([[3, 1], [1, 3]]))
    assert res.method == "fisher_exact"
    assert res.p_value == pytest.approx(34 / 70, rel=1e-12)
    assert res.statistic == pytest.approx(9.0)
    res = st.contingency_test(np.array([[0, 5], [3, 2]]))
    assert res.statistic == 0.0
    res = st.contingency_test(np.array([[5, 0], [3, 2]]))
    assert res.statistic is None  # infinite odds ratio
    assert res.p_value == pytest.approx(sps.fisher_exact([[5, 0], [3, 2]]).pvalue)


def test_contingency_chi2_branch():
    # [[20,30],[30,20]]: expected 25 everywhere, chi2 = 4 * 25/25 = 4, p = P(chi2_1 > 4)
    res = st.contingency_test(np.array([[20, 30], [30, 20]]))
    assert res.method == "chi2"
    assert res.statistic == pytest.approx(4.0)
    assert res.p_value == pytest.approx(0.0455002639, rel=1e-8)
    t = np.array([[30, 10], [10, 30], [100, 20]])
    res = st.contingency_test(t)
    ref = sps.chi2_contingency(t, correction=False)
    assert res.method == "chi2"
    assert res.statistic == pytest.approx(ref.statistic) and res.p_value == pytest.approx(
        ref.pvalue
    )


def test_contingency_monte_carlo_branch():
    t = np.array([[3, 1], [1, 3], [10, 2]])
    res = st.contingency_test(t, seed=1, resamples=20000)
    assert res.method == "chi2_monte_carlo"
    assert res.statistic == pytest.approx(sps.chi2_contingency(t, correction=False).statistic)
    # exact conditional p: enumerate all tables with these margins (rows 4,4,12;
    # first column 14) under the multivariate hypergeometric distribution.
    exp = np.outer(t.sum(1), t.sum(0)) / t.sum()
    obs_stat = np.sum((t - exp) ** 2 / exp)
    p_exact = 0.0
    for x1, x2 in product(range(5), range(5)):
        x3 = 14 - x1 - x2
        if not 0 <= x3 <= 12:
            continue
        tab = np.array([[x1, 4 - x1], [x2, 4 - x2], [x3, 12 - x3]])
        prob = math.comb(4, x1) * math.comb(4, x2) * math.comb(12, x3) / math.comb(20, 14)
        if np.sum((tab - exp) ** 2 / exp) >= obs_stat - 1e-9:
            p_exact += prob
    assert abs(res.p_value - p_exact) < 0.015, (res.p_value, p_exact)
    again = st.contingency_test(t, seed=1, resamples=20000)
    assert again == res
    assert st.contingency_test(t, seed=2, resamples=20000).p_value != res.p_value


def test_contingency_undefined_and_zero_rows():
    assert st.contingency_test(np.array([[5, 0], [3, 0]])).method == "undefined"
    r = st.contingency_test(np.array([[5, 3]]))
    assert (r.statistic, r.p_value, r.method) == (None, None, "undefined")
    # the all-zero middle row is dropped before testing
    a = st.contingency_test(np.array([[3, 1], [0, 0], [1, 3]]))
    b = st.contingency_test(np.array([[3, 1], [1, 3]]))
    assert a == b
    with pytest.raises(ValueError):
        st.contingency_test(np.array([[1, -1], [2, 3]]))


def test_fisher_exact_2x2():
    assert st.fisher_exact_2x2(3, 4, 1, 4) == pytest.approx(34 / 70, rel=1e-12)
    assert st.fisher_exact_2x2(2, 10, 7, 12) == pytest.approx(
        sps.fisher_exact([[2, 8], [7, 5]]).pvalue
    )
    assert st.fisher_exact_2x2(0, 0, 1, 4) is None  # empty group
    assert st.fisher_exact_2x2(0, 5, 0, 7) is None  # nothing missing anywhere
    with pytest.raises(ValueError):
        st.fisher_exact_2x2(6, 5, 0, 7)


# ---------------------------------------------------------------------------
# Types and calibration
# ---------------------------------------------------------------------------


def test_plain_python_types():
    y, lab = _clustered_sample(8)
    cs = st.cell_summary(y, lab, resamples=100)
    for name in ("mean", "se", "se_clustered", "ci_low", "ci_high", "boot_low", "icc",
                 "design_effect"):
        assert type(getattr(cs, name)) is float, name
    assert type(cs.n) is int and type(cs.clusters) is int
    d = st.diff_clustered(y[:20], lab[:20], y[20:], lab[20:])
    assert type(d.se) is float and type(d.df) is int and type(d.p_value) is float
    assert type(st.n_needed(1.0, 0.5)) is int
    assert type(st.kappa_quadratic(np.array([1, 2]), np.array([1, 1]))) is float


@pytest.mark.slow
def test_clustered_interval_coverage():
    """Clustered t interval is near nominal; the naive one under-covers (ICC = 0.5)."""
    rng = np.random.default_rng(20240601)
    truth = 3.0
    reps = 400
    cover_cl = 0
    cover_naive = 0
    for _ in range(reps):
        sizes = rng.integers(3, 7, size=9)
        lab = np.repeat(np.arange(9), sizes)
        y = truth + rng.normal(0, 1, size=9)[lab] + rng.normal(0, 1, size=lab.size)
        m, se = st.mean_se(y)
        lo, hi = st.t_interval(m, st.clustered_se(y, lab), 8, 0.95)
        cover_cl += lo <= truth <= hi
        lo, hi = st.t_interval(m, se, y.size - 1, 0.95)
        cover_naive += lo <= truth <= hi
    cl, nv = cover_cl / reps, cover_naive / reps
    assert cl >= 0.90, f"clustered coverage {cl:.3f} (naive {nv:.3f}), nominal 0.95"
    assert nv < cl - 0.05, f"naive coverage {nv:.3f} vs clustered {cl:.3f}"


def test_leave_one_cluster_out_diff_matches_refitting() -> None:
    rng = np.random.default_rng(11)
    xa, xb = rng.normal(8, 1, 40), rng.normal(7.5, 1, 35)
    ca, cb = rng.integers(0, 7, 40), rng.integers(0, 7, 35)
    ests = []
    for s in sorted(set(ca.tolist()) | set(cb.tolist())):
        ka, kb = ca != s, cb != s
        if ka.any() and kb.any():
            ests.append(xa[ka].mean() - xb[kb].mean())
    lo, hi = st.leave_one_cluster_out_diff(xa, ca, xb, cb)
    assert lo == pytest.approx(min(ests), rel=1e-12) and hi == pytest.approx(max(ests), rel=1e-12)
    # by hand: drop x -> 2 - 5 = -3; drop y -> 1 - 3 = -2
    assert st.leave_one_cluster_out_diff([1.0, 2.0], ["x", "y"], [3.0, 5.0], ["x", "y"]) == (-3.0, -2.0)
    # a cluster holding all of one side cannot be dropped: here no cluster can
    assert st.leave_one_cluster_out_diff([1.0, 2.0], ["x", "x"], [3.0], ["y"]) == (None, None)


# --------------------------------------------------------------------------- wilcoxon_p


def test_wilcoxon_p_by_hand_with_ties() -> None:
    # d = [1, -1, 2]: |d| ranks 1.5, 1.5, 3; observed positive-rank sum 1.5 + 3 = 4.5. The 8
    # sign flips give sums 0, 1.5, 1.5, 3, 3, 4.5, 4.5, 6: 7 of 8 are <= 4.5 and 3 of 8 are
    # >= 4.5, so p = 2 * 3/8 = 0.75.
    assert st.wilcoxon_p([1.0, -1.0, 2.0]) == 0.75
    # a zero is discarded: the same p
    assert st.wilcoxon_p([1.0, 0.0, -1.0, 2.0]) == 0.75


@pytest.mark.parametrize("d", [
    [1, 2, 2, 3, -1, 0, 4, 4, 5, -2, 3, 1, 2],          # n = 13, ties and a zero: enumerated
    [0.5, 0.5, -1.5, 2, 2, 2, -0.5, 1, 3.5, 0, 0, 1.5],  # half points, several zeros
    [1, 1, 1, 1],                                          # all one sign, all tied
    [0, 0, 0, 3],                                          # one non-zero difference
    [2, -3, 1, 4, -5, 6],                                  # no ties, no zeros: scipy's exact
    [1, 2, 2, 3, -1, 0, 4, 4, 5, -2, 3, 1, 2, 6],          # n = 14 with ties: scipy's asymptotic
    list(range(-30, 31)),                                  # n > 50: asymptotic
])
def test_wilcoxon_p_is_scipys(d: list[float]) -> None:
    x = np.asarray(d, dtype=np.float64)
    assert st.wilcoxon_p(x) == float(sps.wilcoxon(x, zero_method="wilcox").pvalue)


@settings(max_examples=40, deadline=None)
@given(hst.lists(hst.integers(-4, 4), min_size=1, max_size=9))
def test_wilcoxon_p_matches_scipy_on_small_integer_rubric_differences(d: list[int]) -> None:
    x = np.asarray(d, dtype=np.float64)
    if not np.any(x != 0):
        return
    assert st.wilcoxon_p(x) == float(sps.wilcoxon(x, zero_method="wilcox").pvalue)


def test_small_integer_paths_are_scipys_and_the_packages() -> None:
    """Spearman's rho and Krippendorff's alpha of rubric scores (ranks and the value domain
    from counts, no sort) are scipy's and the krippendorff package's numbers, bit for bit;
    -0.0 and non-integers take the sorted path."""
    import krippendorff

    rng = np.random.default_rng(3)
    for t in range(150):
        n = int(rng.integers(2, 3000))
        a = rng.integers(1, int(rng.integers(2, 12)), n).astype(float) - (5.0 if t % 5 == 0 else 0.0)
        b = np.clip(a + rng.integers(-2, 3, n), -4, 10).astype(float)
        assert np.array_equal(st._average_ranks(a), sps.rankdata(a))
        domain, inv = np.unique(np.concatenate([a, b]), return_inverse=True)
        d2, i2 = st._unique_inverse(np.concatenate([a, b]))
        assert d2.tobytes() == domain.tobytes() and np.array_equal(i2, inv.reshape(-1))
        if np.all(a == a[0]) or np.all(b == b[0]):
            continue
        assert st.spearman(a, b) == float(sps.spearmanr(a, b).statistic)
        assert st.krippendorff_alpha(a, b) == float(
            krippendorff.alpha(reliability_data=np.vstack([a, b]), level_of_measurement="interval"))
    assert st.small_integers(np.array([0.0, -0.0, 1.0])) is None
    assert st.small_integers(np.array([0.5, 1.0])) is None
