"""The cluster sign-flip test (``stats.sign_flip_test``): its random patterns, its exact and
Monte-Carlo forms against naive loops."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from workbench import stats


@pytest.mark.parametrize("g", [13, 50, 4001])
def test_coin_flips_are_the_draws_of_rng_integers(g: int) -> None:
    """The raw-stream bits are numpy's own rng.integers(0, 2) draws, chunk after chunk (odd
    chunk lengths leave a half output pending; it must carry to the next chunk)."""
    for seed in (0, 7, 20261201):
        ref = np.random.default_rng(seed)
        flips = stats._CoinFlips(np.random.default_rng(seed))
        for rows in (3, 7, 1, 20, 5):
            want = ref.integers(0, 2, size=(rows, g)) * 2.0 - 1.0
            got = flips.signs(rows, g)
            assert got.dtype == np.float64 and got.flags.c_contiguous
            np.testing.assert_array_equal(got, want)


def _naive_monte_carlo(d: np.ndarray, cl: np.ndarray, resamples: int, seed: int) -> float:
    """The test as first written: rng.integers patterns, one pattern at a time."""
    labels = sorted(set(cl.tolist()))
    sums = np.array([d[cl == lab].sum() for lab in labels])
    obs = abs(sums.sum())
    rng = np.random.default_rng(seed)
    per = max(1, stats._CHUNK_CELLS // len(labels))
    exceed, left = 0, resamples
    while left:
        size = min(per, left)
        for pat in rng.integers(0, 2, size=(size, len(labels))) * 2.0 - 1.0:
            exceed += abs(float(pat @ sums)) >= obs - 1e-9 * max(1.0, obs)
        left -= size
    return (1 + exceed) / (1 + resamples)


def test_monte_carlo_p_equals_the_naive_loop() -> None:
    rng = np.random.default_rng(3)
    for g, seed in ((13, 1), (40, 2), (300, 3)):
        cl = rng.integers(0, g, 8 * g)
        cl[:g] = np.arange(g)  # every cluster present
        d = rng.integers(-2, 3, cl.size).astype(float) + 0.3
        assert stats.sign_flip_test(d, cl, 700, seed) == _naive_monte_carlo(d, cl, 700, seed)


def test_exact_p_enumerates_every_pattern() -> None:
    d = np.array([1.0, 2.0, -0.5, 3.0, 0.5, 1.5, -1.0])
    cl = np.array([0, 0, 1, 2, 3, 4, 4])
    sums = np.array([3.0, -0.5, 3.0, 0.5, 0.5])
    hits = sum(abs(np.dot(s, sums)) >= abs(sums.sum()) - 1e-9 for s in itertools.product((-1, 1), repeat=5))
    assert stats.sign_flip_test(d, cl, 100, 0) == hits / 32
