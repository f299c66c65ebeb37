"""Power and sample size: minimum detectable effects, the n needed, order statistics, the
power of a clustered t test and the cluster power plan.

Part of :mod:`workbench.stats` (import from there); a pure move out of the former
``stats.py``.
"""

from __future__ import annotations

import math
from typing import Any

from scipy import stats as _sps

from workbench.stats.base import _norm_ppf, _t_ppf

# ---------------------------------------------------------------------------
# Minimum detectable effects and sample sizes
# ---------------------------------------------------------------------------




def _check_alpha_power(alpha: float, power: float) -> None:
    if not (0.0 < alpha < 1.0):
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if not (0.0 < power < 1.0):
        raise ValueError(f"power must be in (0, 1), got {power!r}")


def mde(
    se: float | None, df: float | None = None, alpha: float = 0.05, power: float = 0.8
) -> float | None:
    """Return the minimum detectable effect (value units) for a two-sided test.

    MDE = (q_{1-alpha/2} + q_{power}) * se (Bloom 1995, "Minimum detectable
    effects", Evaluation Review 19:547-556), with q the Student-t quantile at
    ``df`` degrees of freedom, or the standard-normal quantile when df is None.

    Parameters
    ----------
    se : float or None
        Standard error of the estimate (value units).
    df : float, optional
        Degrees of freedom; None for the normal approximation.
    alpha : float
        Two-sided significance level.
    power : float
        Target power.

    Returns
    -------
    float or None
        None when se is None or df < 1.
    """
    _check_alpha_power(alpha, power)
    if se is None:
        return None
    if se < 0:
        raise ValueError(f"se must be >= 0, got {se}")
    if df is None:
        q = float(_sps.norm.ppf(1.0 - alpha / 2.0) + _sps.norm.ppf(power))
    else:
        if df < 1:
            return None
        q = float(_sps.t.ppf(1.0 - alpha / 2.0, df) + _sps.t.ppf(power, df))
    return float(q * se)


def n_needed(
    sd: float | None,
    effect: float | None,
    alpha: float = 0.05,
    power: float = 0.8,
    rho: float = 0.0,
    design_effect: float = 1.0,
    paired: bool = False,
) -> int | None:
    """Return the valid n per side needed to detect ``effect`` (count of values).

    Normal-approximation sample size for a two-sided two-sample comparison of
    means (e.g. Chow, Shao & Wang 2008, *Sample Size Calculations in Clinical
    Research*, sec. 3.2)::

        n = ceil(2 * (z_{1-alpha/2} + z_{power})^2 * sd^2 * (1 - rho) * deff / effect^2)

    where sd is the per-value standard deviation, rho the pairing correlation
    (Var(a - b) = 2 sd^2 (1 - rho); only allowed with ``paired=True``, then n is
    the number of pairs) and deff a design effect for clustering (Kish 1965).
    The result is floored at 2 (a variance needs two values per side).

    Parameters
    ----------
    sd : float or None
        Standard deviation of one value (value units).
    effect : float or None
        Difference in means to detect (value units), > 0.
    alpha : float
        Two-sided significance level.
    power : float
        Target power.
    rho : float
        Correlation between paired values, in [-1, 1]; must be 0 when unpaired.
    design_effect : float
        Variance inflation for clustering (>= 0; 1 for independent values).
    paired : bool
        Whether the comparison is paired (n = number of pairs).

    Returns
    -------
    int or None
        None when sd is None, effect is None or effect <= 0.
    """
    _check_alpha_power(alpha, power)
    if not (-1.0 <= rho <= 1.0):
        raise ValueError(f"rho must be in [-1, 1], got {rho!r}")
    if rho != 0.0 and not paired:
        raise ValueError("rho (pairing correlation) must be 0 for an unpaired comparison")
    if design_effect < 0:
        raise ValueError(f"design_effect must be >= 0, got {design_effect!r}")
    if sd is None or effect is None or effect <= 0:
        return None
    if sd < 0:
        raise ValueError(f"sd must be >= 0, got {sd!r}")
    z = float(_sps.norm.ppf(1.0 - alpha / 2.0) + _sps.norm.ppf(power))
    raw = 2.0 * z * z * sd * sd * (1.0 - rho) * design_effect / (effect * effect)
    # Guard against 62.99999999 vs 63 style float noise before ceil.
    n = math.ceil(raw - 1e-9 * max(1.0, raw))
    return int(max(n, 2))


def order_statistic_n(q: float, c: float) -> int:
    """Return the smallest n with q**n <= 1 - c (a sample count).

    Distribution-free order-statistic sample size (Wilks 1941, "Determination
    of sample sizes for setting tolerance limits", Ann. Math. Stat. 12:91-96):
    with n i.i.d. draws the maximum exceeds the q-quantile with probability
    1 - q**n >= c.  q = c = 0.95 gives 59.

    Parameters
    ----------
    q : float
        Quantile (coverage) in (0, 1).
    c : float
        Confidence in (0, 1).

    Returns
    -------
    int
        The minimal n (always defined for valid inputs).
    """
    if not (0.0 < q < 1.0) or not (0.0 < c < 1.0):
        raise ValueError(f"q and c must be in (0, 1), got q={q!r}, c={c!r}")
    target = 1.0 - c
    n = max(1, math.ceil(math.log(target) / math.log(q)))
    while n > 1 and q ** (n - 1) <= target:
        n -= 1
    while q**n > target:
        n += 1
    return int(n)

# ---------------------------------------------------------------------------
# Power of a clustered test and the sample-size plan
# ---------------------------------------------------------------------------

def power_t(effect: float, se: float, df: float, alpha: float = 0.05) -> float:
    """Power of a two-sided t test of size ``alpha`` when the true effect is ``effect``.

    Noncentral t (``scipy.stats.nct``) with noncentrality effect / se and ``df`` degrees of
    freedom: P(|T| > t_{1-alpha/2, df}) = sf(c; nc) + sf(c; -nc), the lower tail
    P(T < -c; nc) written as the upper tail of the mirrored distribution. The direct form
    ``nct.cdf(-c, df, nc)`` is NaN in scipy 1.17 for noncentralities above about 7.6 at every
    df (a third of a 0-40 grid): a NaN power compared as "below target", and the sample-size
    searches walked past the answer (``trials_needed`` 96 became 789). The mirrored form is
    finite and non-decreasing in nc on that grid (df 1 to 10^5), equal to the direct form to
    6e-16 where both exist; a non-finite value would fall back to the normal approximation.
    """
    if se <= 0:
        return 1.0 if effect != 0 else alpha
    crit = _t_ppf(1.0 - alpha / 2.0, df)  # float(t.ppf), remembered (the same number)
    nc = abs(effect) / se
    p = float(_sps.nct.sf(crit, df, nc) + _sps.nct.sf(crit, df, -nc))
    if not math.isfinite(p):
        z = _norm_ppf(1.0 - alpha / 2.0)
        p = float(_sps.norm.sf(z - nc) + _sps.norm.cdf(-z - nc))
    return min(max(p, 0.0), 1.0)


def cluster_power_plan(
    between_var: float | None,
    within_var: float | None,
    clusters: int,
    trials: float,
    effect: float | None,
    alpha: float = 0.05,
    power: float = 0.8,
    max_clusters: int = 100_000,
    unit: str = "scenarios",
) -> dict[str, Any]:
    """Power in the unit that limits it: scenarios (or the clusters ``unit`` names, e.g.
    ``question_id clusters``, in the statement), and what more trials can reach.

    Model for an estimate averaged over G scenario-level contrasts D_g with
    Var(D_g) = between_var + within_var * T0 / T (``between_var``: variance of the true
    per-scenario contrast, which no number of trials removes; ``within_var``: the part due
    to the current ``trials`` T0, which shrinks as 1/T), a two-sided t test with G - 1 df
    (:func:`power_t`).  Returns

    * ``power_now``: power at the current G and T0;
    * ``scenarios_needed``: smallest G reaching ``power`` at the current trials (None when
      even ``max_clusters`` would not);
    * ``trials_ceiling_power``: power as T -> infinity at the current G (the ceiling that
      adding trials alone can reach);
    * ``trials_needed``: trials per scenario x variant reaching ``power`` at the current G,
      or None when the ceiling is below ``power`` (then more trials cannot get there);
    * ``power_monotone``: whether the power the searches evaluated was non-decreasing in
      scenarios (at the current trials) and in trials (at the current scenarios); the
      searches (doubling, then bisection) find the smallest n only when it is. It is in
      theory; False names a numerical failure, and the statement says so;
    * ``statement``: one plain sentence saying which.
    """
    out: dict[str, Any] = {"power_now": None, "scenarios_needed": None, "trials_ceiling_power": None,
                           "trials_needed": None, "power_monotone": None, "statement": None}
    if (between_var is None or within_var is None or effect is None or effect <= 0
            or clusters < 2 or trials <= 0):
        return out
    bv, wv = max(0.0, float(between_var)), max(0.0, float(within_var))
    seen: dict[tuple[int, float], float] = {}  # the searches ask some (G, T) twice

    def pw(g: int, t: float) -> float:
        if (g, t) not in seen:
            v = bv + (wv * trials / t if math.isfinite(t) else 0.0)
            seen[(g, t)] = power_t(effect, math.sqrt(v / g), g - 1, alpha)
        return seen[(g, t)]

    out["power_now"] = pw(clusters, trials)
    lo, hi = 2, 2
    while pw(hi, trials) < power and hi < max_clusters:
        lo, hi = hi, min(hi * 2, max_clusters)
    if pw(hi, trials) >= power:
        while lo < hi:
            mid = (lo + hi) // 2
            if pw(mid, trials) >= power:
                hi = mid
            else:
                lo = mid + 1
        out["scenarios_needed"] = int(hi)
    ceiling = pw(clusters, math.inf)
    out["trials_ceiling_power"] = ceiling
    if out["power_now"] >= power:
        out["trials_needed"] = int(math.ceil(trials))
    elif ceiling >= power:
        t_lo, t_hi = int(math.ceil(trials)), int(math.ceil(trials))
        while pw(clusters, t_hi) < power and t_hi < 10**7:
            t_lo, t_hi = t_hi, t_hi * 2
        while t_lo < t_hi:
            mid = (t_lo + t_hi) // 2
            if pw(clusters, mid) >= power:
                t_hi = mid
            else:
                t_lo = mid + 1
        out["trials_needed"] = int(t_hi)
    out["power_monotone"] = _monotone_visits(seen, clusters, trials)
    g_text = (f"{out['scenarios_needed']} {unit}" if out["scenarios_needed"] is not None
              else f"more than {max_clusters} {unit}")
    if out["power_now"] >= power:
        out["statement"] = f"the current {clusters} {unit} already reach {power:.0%} power"
    elif out["trials_needed"] is not None:
        out["statement"] = (f"{power:.0%} power needs {g_text} at the current trials, or "
                            f"{out['trials_needed']} trials per scenario at the current {clusters}")
    else:
        out["statement"] = (f"more trials cannot get there: with {clusters} {unit} the ceiling is "
                            f"{ceiling:.0%} power; you need {g_text}")
    if not out["power_monotone"]:
        out["statement"] += " (power was not monotone where searched: these may not be the smallest)"
    return out


def _monotone_visits(seen: dict[tuple[int, float], float], clusters: int, trials: float) -> bool:
    """Whether the powers the plan's searches evaluated rise with scenarios at the current
    trials and with trials at the current scenarios (the condition for bisection)."""
    by_g = [seen[k] for k in sorted(k for k in seen if k[1] == trials)]
    by_t = [seen[k] for k in sorted((k for k in seen if k[0] == clusters), key=lambda k: k[1])]
    return all(b >= a - 1e-12 for seq in (by_g, by_t) for a, b in zip(seq, seq[1:], strict=False))
