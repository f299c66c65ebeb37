"""Planted-truth preference data for :mod:`workbench.analysis.length` (a known GLM: per-instruction
difficulty, per-model quality and length effect), and the planted length-controlled win rate."""

from __future__ import annotations

import numpy as np

from workbench.analysis import length

THETA = (-2.0, -1.0, 0.3)
BETA = (-1.5, -0.6, -1.0)


def planted_lc(theta: float, sigma: float = 1.0) -> float:
    """100 * E[logistic(theta + d)], d ~ N(0, sigma^2) (Gauss-Hermite, 80 nodes)."""
    x, w = np.polynomial.hermite_e.hermegauss(80)
    return float(100 * np.sum(w / (1 + np.exp(-(theta + sigma * x)))) / np.sqrt(2 * np.pi))


def simulate(n: int, seed: int, theta: tuple[float, ...] = THETA, beta: tuple[float, ...] = BETA,
             phi: float = 3.0, sigma: float = 1.0) -> tuple[length.GroupData, np.ndarray]:
    """Rows of len(theta) models on n instructions: y ~ Beta(phi p, phi (1 - p)) with
    logit p = theta_m + beta_m tanh(delta / sd_m) + d_i; the length difference delta (baseline
    minus model, characters) leans with the difficulty (harder instructions, longer answers),
    so ignoring the difficulty would bias the length weight. Returns the data and d."""
    rng = np.random.default_rng(seed)
    M = len(theta)
    d = rng.normal(0, sigma, n)
    item = np.tile(np.arange(n), M)
    model = np.repeat(np.arange(M), n)
    delta = 400 * rng.normal(0, 1, n * M) + 150 * d[item] - 200 * model
    g = length.GroupData(np.zeros(n * M), delta.astype(float), model.astype(np.intp), item.astype(np.intp),
                         [f"m{k}" for k in range(M)], [f"i{k:04d}" for k in range(n)])
    x = length._std_len(g)
    eta = np.asarray(theta)[model] + np.asarray(beta)[model] * x + d[item]
    p = 1 / (1 + np.exp(-eta))
    g.y = np.clip(rng.beta(phi * p, phi * (1 - p)), 0.0, 1.0)
    return g, d
