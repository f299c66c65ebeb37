"""Power and the sample-size searches (workbench.stats.power_t, cluster_power_plan).

power_t is checked against a numerical integral of the noncentral t written here (no
``scipy.stats.nct``); the plan's searches against a brute-force scan of every n on a grid.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate
from scipy import stats as sps

from workbench import stats as st


def power_by_integral(nc: float, df: float, alpha: float = 0.05) -> float:
    """P(|T| > c) for T = (Z + nc) / sqrt(V / df), V ~ chi2(df): the integral over V of
    P(Z > c s - nc) + P(Z < -c s - nc), s = sqrt(V / df)."""
    c = sps.t.ppf(1 - alpha / 2, df)

    def f(v: float) -> float:
        s = math.sqrt(v / df)
        return (sps.norm.sf(c * s - nc) + sps.norm.cdf(-c * s - nc)) * sps.chi2.pdf(v, df)

    lo, hi = sps.chi2.ppf([1e-14, 1 - 1e-14], df)
    val, _ = integrate.quad(f, lo, hi, limit=400, points=[df])
    return float(val)


@pytest.mark.parametrize(("nc", "df"), [(2.0, 1), (7.7, 1), (12.7, 2), (8.2, 5), (9.0, 30), (3.0, 4), (20.0, 1)])
def test_power_t_matches_the_integral_where_nct_cdf_is_nan(nc: float, df: int) -> None:
    """scipy's nct.cdf(-c, df, nc) is NaN above nc ~ 7.6; the power must stay a number."""
    got = st.power_t(nc, 1.0, df)
    assert math.isfinite(got) and 0.0 <= got <= 1.0
    assert got == pytest.approx(power_by_integral(nc, df), abs=1e-7)


def test_power_t_is_monotone_in_noncentrality_on_a_grid() -> None:
    for df in (1, 2, 3, 9, 40):
        p = [st.power_t(nc, 1.0, df) for nc in np.linspace(0.0, 30.0, 601)]
        assert all(math.isfinite(x) for x in p)
        assert all(b >= a - 1e-13 for a, b in zip(p, p[1:], strict=False)), df


def _brute(bv: float, wv: float, g0: int, t0: float, effect: float, target: float,
           g_max: int = 6000, t_max: int = 50000) -> tuple[int | None, int | None, float]:
    """Smallest G (at T0) and smallest T >= ceil(T0) (at G0) with power >= target by scanning
    every n: the two-tailed noncentral t written out (upper tail of +nc and of -nc)."""
    def power(g: np.ndarray, t: np.ndarray) -> np.ndarray:
        v = bv + wv * t0 / t
        nc = effect / np.sqrt(v / g)
        c = sps.t.ppf(0.975, g - 1)
        return sps.nct.sf(c, g - 1, nc) + sps.nct.sf(c, g - 1, -nc)

    gs = np.arange(2, g_max + 1)
    pg = power(gs.astype(float), np.full(gs.size, t0))
    g_need = int(gs[np.argmax(pg >= target)]) if np.any(pg >= target) else None
    ts = np.arange(math.ceil(t0), t_max + 1)
    pt = power(np.full(ts.size, float(g0)), ts.astype(float))
    t_need = int(ts[np.argmax(pt >= target)]) if np.any(pt >= target) else None
    ceiling = float(power(np.array([float(g0)]), np.array([np.inf]))[0]) if bv > 0 else 1.0
    return g_need, t_need, ceiling


CASES = [
    # (between var, within var, scenarios, trials, effect): df = 1 cases first (G = 2)
    (0.001, 1.0, 2, 3.0, 0.5),
    (0.0005, 2.0, 2, 3.0, 0.3),
    (0.01, 1.0, 3, 3.0, 0.5),
    (0.05, 2.0, 9, 3.0, 0.4),
    (0.2, 0.5, 5, 2.0, 0.3),
    (0.02, 3.0, 20, 3.0, 0.25),
    (0.3, 0.3, 4, 3.0, 1.5),
]


@pytest.mark.parametrize(("bv", "wv", "g0", "t0", "effect"), CASES)
def test_cluster_power_plan_equals_a_brute_force_scan(bv: float, wv: float, g0: int, t0: float,
                                                      effect: float) -> None:
    plan = st.cluster_power_plan(bv, wv, g0, t0, effect, 0.05, 0.8)
    g_need, t_need, ceiling = _brute(bv, wv, g0, t0, effect, 0.8)
    assert plan["scenarios_needed"] == g_need
    assert plan["trials_ceiling_power"] == pytest.approx(ceiling, abs=1e-12)
    assert plan["power_monotone"] is True
    if plan["power_now"] >= 0.8:
        assert plan["trials_needed"] == math.ceil(t0)
    elif ceiling < 0.8:
        assert plan["trials_needed"] is None and "cannot get there" in plan["statement"]
    else:
        assert plan["trials_needed"] == t_need


def test_df1_trials_needed_case_of_the_issue() -> None:
    """Two scenarios (df = 1): 80 % power needs noncentrality ~ 17.6, where the old form of
    the power was NaN; the search then walked past the answer. Brute force gives it."""
    plan = st.cluster_power_plan(0.001, 1.0, 2, 3.0, 0.5, 0.05, 0.8)
    _, t_need, _ = _brute(0.001, 1.0, 2, 3.0, 0.5, 0.8)
    assert t_need is not None and plan["trials_needed"] == t_need
    v = 0.001 + 1.0 * 3.0 / t_need
    assert st.power_t(0.5, math.sqrt(v / 2), 1) >= 0.8 > st.power_t(0.5, math.sqrt((0.001 + 3.0 / (t_need - 1)) / 2), 1)


def test_the_statement_names_the_unit_it_counts() -> None:
    """The plan's G is clusters when the config sets one: the sentence counts them by name,
    with the same numbers as the default (which counts scenarios)."""
    default = st.cluster_power_plan(0.2, 1.0, 9, 3.0, 0.5, 0.05, 0.8)
    named = st.cluster_power_plan(0.2, 1.0, 9, 3.0, 0.5, 0.05, 0.8, unit="question_id clusters")
    assert {k: v for k, v in named.items() if k != "statement"} == \
        {k: v for k, v in default.items() if k != "statement"}
    assert default["scenarios_needed"] is not None and default["scenarios_needed"] > 9
    g = default["scenarios_needed"]
    assert named["statement"].startswith(f"80% power needs {g} question_id clusters at the current trials")
    assert default["statement"].startswith(f"80% power needs {g} scenarios at the current trials")
    assert "at the current 9" in named["statement"]
