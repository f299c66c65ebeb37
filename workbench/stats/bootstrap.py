"""The joint cluster bootstrap on per-scenario sums: one set of weights per run, shared by
every cell, and its percentile intervals.

Part of :mod:`workbench.stats` (import from there); a pure move out of the former
``stats.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from workbench.stats.base import _check_confidence, _check_resamples, _percentile_interval

# ---------------------------------------------------------------------------
# Joint cluster bootstrap on per-scenario sums (one set of weights per run)
# ---------------------------------------------------------------------------



JOINT_BOOTSTRAP_METHOD = "joint_cluster_bootstrap_multinomial"
"""Name recorded in results.json for :func:`joint_bootstrap_weights` + :func:`joint_bootstrap_means`."""

# Upper bound on the float64 weights held at once (a block of resamples x clusters): 32 MB.
_JOINT_BLOCK_CELLS = 4_000_000


JOINT_SEED_BLOCK = 64
"""Resamples drawn from one generator: resample r comes from ``default_rng([seed, r // 64])``."""


def joint_bootstrap_weights(n_clusters: int, start: int, stop: int, seed: int,
                            out: NDArray[Any] | None = None) -> NDArray[Any]:
    """Return the bootstrap weights of resamples ``start..stop-1``: shape (stop - start, G).

    The standard cluster bootstrap (Field & Welsh 2007) drawn once per run: resample r
    draws G clusters with replacement from the run's canonical cluster index, uniformly,
    and weight w_rg is how often cluster g was drawn, i.e. a Multinomial(G; 1/G, ..., 1/G)
    vector summing to G. The draws of resamples 64k..64k+63 come one after the other from
    ``default_rng([seed, k])`` (``integers(G, size=G)`` each), so a resample's weights do
    not depend on how resamples are blocked in memory, on the number of resamples
    requested, or on which cells use them.

    ``out``: an array of that shape to fill and return instead of a new float64 one (an
    integer dtype holds the counts without a float64 copy; a count above its range raises
    OverflowError).
    """
    g = int(n_clusters)
    if out is None:
        out = np.empty((max(0, stop - start), g), dtype=np.float64)
    elif out.shape != (max(0, stop - start), g):
        raise ValueError(f"out must have shape {(max(0, stop - start), g)}, got {out.shape}")
    if stop <= start:
        return out
    limit = None if out.dtype.kind == "f" else int(np.iinfo(out.dtype).max)
    k = JOINT_SEED_BLOCK
    for block in range(start // k, (stop - 1) // k + 1):
        rng = np.random.default_rng([int(seed), int(block)])
        for r in range(block * k, min(stop, (block + 1) * k)):
            draw = rng.integers(g, size=g)
            if r >= start:
                row = np.bincount(draw, minlength=g)
                if limit is not None and g and int(row.max()) > limit:
                    raise OverflowError(f"a cluster drawn {int(row.max())} times does not fit {out.dtype}")
                out[r - start] = row
    return out


def joint_bootstrap_means(
    sums: ArrayLike, counts: ArrayLike, resamples: int, seed: int
) -> NDArray[np.float64]:
    """Return the resampled means of every column: shape (resamples, C), NaN where undefined.

    ``sums`` and ``counts`` are (G, C): column c holds cell c's per-cluster sum of valid
    values S_gc and count n_gc over the run's canonical cluster index (0 where cell c has no
    value in cluster g). With the weights w_rg of :func:`joint_bootstrap_weights` (the same
    for every column, so all cells are resampled jointly), resample r's mean of column c is
    sum_g w_rg S_gc / sum_g w_rg n_gc. When the weighted count is 0 (none of the cell's
    clusters was drawn) the mean is undefined: NaN, never 0. Cost: resamples x G x C
    multiply-adds, in blocks of resamples holding at most ~4M weights.
    """
    s = np.asarray(sums, dtype=np.float64)
    n = np.asarray(counts, dtype=np.float64)
    if s.ndim != 2 or s.shape != n.shape:
        raise ValueError(f"sums and counts must be (G, C) of one shape, got {s.shape} and {n.shape}")
    if not (np.all(np.isfinite(s)) and np.all(np.isfinite(n))) or np.any(n < 0):
        raise ValueError("sums must be finite and counts finite and non-negative")
    b = _check_resamples(resamples)
    g, c = s.shape
    out = np.full((b, c), np.nan, dtype=np.float64)
    if g == 0 or c == 0:
        return out
    both = np.concatenate([s, n], axis=1)
    per = max(1, _JOINT_BLOCK_CELLS // g)
    for start in range(0, b, per):
        stop = min(b, start + per)
        w = joint_bootstrap_weights(g, start, stop, seed)
        t = w @ both
        ts, tn = t[:, :c], t[:, c:]
        ok = tn > 0
        block = out[start:stop]
        np.divide(ts, tn, out=block, where=ok)
    return out


def joint_percentile(
    draws: ArrayLike, clusters: int, confidence: float = 0.95
) -> tuple[float | None, float | None, int]:
    """Percentile interval of one column of joint bootstrap draws: (low, high, undefined).

    ``undefined`` counts resamples whose statistic is NaN (a side with weighted count 0);
    the interval is over the defined ones. (None, None) when the statistic has fewer than 2
    clusters, or more than half of the resamples are undefined (as
    :func:`cluster_bootstrap_diff` drops them).
    """
    c = _check_confidence(confidence)
    x = np.asarray(draws, dtype=np.float64)
    ok = np.isfinite(x)
    undefined = int(x.size - int(ok.sum()))
    if clusters < 2 or not ok.any() or undefined * 2 > x.size:
        return None, None, undefined
    lo, hi = _percentile_interval(x[ok], c)
    return lo, hi, undefined
