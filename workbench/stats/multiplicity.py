"""Multiplicity: Holm's step-down adjustment and its per-rank levels.

Part of :mod:`workbench.stats` (import from there); a pure move out of the former
``stats.py``.
"""

from __future__ import annotations

import numpy as np

# ---------------------------------------------------------------------------
# Multiplicity
# ---------------------------------------------------------------------------




def holm(pvalues: list[float | None]) -> list[float | None]:
    """Return Holm step-down adjusted p-values (same order; in [0, 1]).

    Holm (1979), "A simple sequentially rejective multiple test procedure",
    Scand. J. Stat. 6:65-70: with the m non-None p-values sorted ascending,
    adj_(i) = max_{j <= i} min(1, (m - j + 1) * p_(j)).

    Parameters
    ----------
    pvalues : list of float or None
        Raw p-values; None entries are passed through unchanged and excluded
        from the family (they do not count towards m).

    Returns
    -------
    list of float or None
        Adjusted p-values aligned with the input.
    """
    idx = [i for i, p in enumerate(pvalues) if p is not None]
    out: list[float | None] = [None] * len(pvalues)
    if not idx:
        return out
    p = np.array([float(pvalues[i]) for i in idx], dtype=float)  # type: ignore[arg-type]
    if np.any(np.isnan(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError("p-values must be in [0, 1] (use None for undefined)")
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adj_sorted = np.maximum.accumulate(scaled)
    adj = np.empty(m, dtype=float)
    adj[order] = adj_sorted
    for j, i in enumerate(idx):
        out[i] = float(adj[j])
    return out


def holm_stepdown_levels(pvalues: list[float | None], alpha: float = 0.05) -> list[float | None]:
    """Return the confidence level of each hypothesis's Holm-consistent interval.

    Holm's procedure tests the i-th smallest of m p-values at alpha / (m - i + 1) and stops
    at the first it cannot reject (p >= its level: the project calls a p significant when
    p < alpha). The interval that agrees with it (it excludes 0 exactly
    when the Holm-adjusted p is below ``alpha``; Strassburger & Bretz (2008), Stat. Med.
    27(24), in the two-sided form) has level 1 - alpha / (m - i + 1) for the hypothesis
    rejected at step i, and every hypothesis not rejected takes the level of the step where
    the procedure stopped, 1 - alpha / (m - j + 1). With m = 1 it is the 1 - alpha interval.
    These are the levels; the intervals are each estimate's t interval at its level.

    Parameters
    ----------
    pvalues : list of float or None
        Raw two-sided p-values; None entries are not in the family and get None.
    alpha : float
        The family's error rate.

    Returns
    -------
    list of float or None
        Confidence levels aligned with the input.
    """
    idx = [i for i, p in enumerate(pvalues) if p is not None]
    out: list[float | None] = [None] * len(pvalues)
    m = len(idx)
    order = sorted(idx, key=lambda i: float(pvalues[i]))  # type: ignore[arg-type]  # stable: ties keep input order
    level = 1.0 - alpha / m if m else None
    stopped = False
    for step, i in enumerate(order):
        if not stopped:
            level = 1.0 - alpha / (m - step)
            stopped = float(pvalues[i]) >= alpha / (m - step)  # type: ignore[arg-type]
        out[i] = level
    return out
