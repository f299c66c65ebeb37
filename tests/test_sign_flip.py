"""The cluster sign-flip test (``stats.sign_flip_test``): its random patterns, its exact and
Monte-Carlo forms against naive loops."""

from __future__ import annotations

import itertools
from pathlib import Path

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


def test_large_sample_p_by_hand() -> None:
    """p = 2 (1 - Phi(|sum S_g| / sqrt(sum S_g^2))), S_g the cluster sums, on a small array."""
    from scipy.stats import norm

    d = np.array([1.0, -2.0, 0.5, 3.0, -1.0, 2.0, 2.0, -0.5, 1.5])
    cl = np.array(["b", "a", "a", "c", "d", "d", "e", "e", "b"])
    # sums by hand: a = -1.5, b = 2.5, c = 3, d = 1, e = 1.5; total 6.5; squares 20.75
    z = 6.5 / np.sqrt(1.5**2 + 2.5**2 + 3.0**2 + 1.0**2 + 1.5**2)
    assert z == pytest.approx(6.5 / np.sqrt(20.75))
    p = stats.sign_flip_asymptotic(d, cl)
    assert p == pytest.approx(2.0 * (1.0 - norm.cdf(z)), rel=1e-12)
    assert p == pytest.approx(0.1535985, abs=1e-7)  # 2 * (1 - 0.92320074): Phi(1.42694) by its series
    assert stats.sign_flip_asymptotic(-d, cl) == p
    # every cluster sum 0 but not every difference: no pattern moves T, p = 1 (as exact)
    assert stats.sign_flip_asymptotic([1.0, -1.0, 2.0, -2.0], [0, 0, 1, 1]) == 1.0
    assert stats.sign_flip_asymptotic([0.0, 0.0], [0, 1]) is None
    assert stats.sign_flip_asymptotic([1.0, 2.0], [0, 0]) is None


def _balanced(g: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    cl = np.repeat(np.arange(g), 4)
    return rng.integers(-3, 4, cl.size).astype(float) + 0.25, cl


def test_the_form_switches_above_the_cluster_threshold() -> None:
    g0, share = stats.SIGN_FLIP_ASYMPTOTIC_CLUSTERS, stats.SIGN_FLIP_ASYMPTOTIC_SHARE
    d, cl = _balanced(g0, 1)
    at = stats.sign_flip(d, cl, 999, 4)
    assert at.method == "monte_carlo" and at.p_value == stats.sign_flip_test(d, cl, 999, 4)
    d, cl = _balanced(g0 + 1, 1)
    sums = np.bincount(cl, weights=d)
    assert (sums**2).max() < share * (sums**2).sum()
    above = stats.sign_flip(d, cl, 999, 4)
    assert above.method == "asymptotic" and above.statistic == abs(sums.sum())
    assert above.p_value == stats.sign_flip_asymptotic(d, cl)
    assert above.p_value != stats.sign_flip_test(d, cl, 999, 4)
    # small designs keep the exact and Monte-Carlo tests, unchanged
    assert stats.sign_flip(d[:48], cl[:48], 999, 4).method == "exact"
    assert stats.sign_flip(d[:48], cl[:48], 999, 4).p_value == stats.sign_flip_test(d[:48], cl[:48], 999, 4)
    assert stats.sign_flip(d[:80], cl[:80], 999, 4).method == "monte_carlo"
    assert stats.sign_flip([0.0, 0.0], [0, 1]).method == "undefined"


def test_a_dominant_cluster_keeps_the_monte_carlo_test() -> None:
    """The share condition: the largest S_g^2 at exactly the share of sum S_g^2 is the
    large-sample form; a little more is Monte-Carlo."""
    share = stats.SIGN_FLIP_ASYMPTOTIC_SHARE
    g = stats.SIGN_FLIP_ASYMPTOTIC_CLUSTERS + 50
    cl = np.arange(g)
    rest = np.where(np.arange(g - 1) % 2 == 0, 1.0, -1.0)  # S_g = +-1: sum of squares g - 1
    for big, method in ((np.sqrt(share * (g - 1) / (1 - share)), "asymptotic"),
                        (np.sqrt(share * (g - 1) / (1 - share)) * 1.01, "monte_carlo")):
        d = np.r_[big, rest]
        sq = d**2
        assert (sq.max() <= share * sq.sum()) == (method == "asymptotic")
        assert stats.sign_flip(d, cl, 499, 2).method == method


def test_results_json_says_which_form(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A run with many balanced scenarios records the large-sample form (no resamples), its
    p-value the hand formula on the judges' paired differences; a small run says exact."""
    import json

    from scipy.stats import norm

    from workbench.cli import main as cli

    rng = np.random.default_rng(9)
    g = stats.SIGN_FLIP_ASYMPTOTIC_CLUSTERS + 100
    lines, d = [], {}
    for s in range(g):
        base = rng.normal(6, 1.2)
        for t in range(3):
            ja = float(np.clip(np.round(base + 0.1 + rng.normal(0, 1)), 1, 10))
            jb = float(np.clip(np.round(base + rng.normal(0, 1)), 1, 10))
            d.setdefault(s, []).append(ja - jb)
            for j, x in (("ja", ja), ("jb", jb)):
                lines.append({"scenario": f"s{s:04d}", "variant": "v", "trial": t, "judge": j, "overall": x})
    f = tmp_path / "rows.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in lines), "utf-8")
    assert cli.main(["analyze", str(f), "--out", str(tmp_path / "out"), "-q", "--no-gate",
                     "--resamples", "300"]) == 0
    doc = json.loads((tmp_path / "out" / "results.json").read_text("utf-8"))
    (off,) = [o for o in doc["judge_offsets"] if o["variant"] is None and o["subset"] is None]
    sums = [sum(v) for v in d.values()]
    z = abs(sum(sums)) / np.sqrt(sum(x * x for x in sums))
    assert off["clusters"] == g and off["sign_flip_method"] == "asymptotic"
    assert off["sign_flip_resamples"] is None
    assert off["p_sign_flip"] == pytest.approx(2.0 * (1.0 - norm.cdf(z)), rel=1e-9)
    # the example (8 scenarios): every offset exact, no resamples
    out = tmp_path / "ex"
    example = Path(__file__).resolve().parents[1] / "data" / "example" / "judge_rows.jsonl"
    assert cli.main(["analyze", str(example), "--out", str(out), "-q", "--no-gate",
                     "--resamples", "300"]) == 0
    ex = json.loads((out / "results.json").read_text("utf-8"))["judge_offsets"]
    assert ex and all(o["sign_flip_method"] == ("exact" if o["p_sign_flip"] is not None else None)
                      and o["sign_flip_resamples"] is None for o in ex)
