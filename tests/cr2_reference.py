"""CR2 / Bell-McCaffrey by dense matrices, written from Pustejovsky & Tipton (2018, JBES
36:672-683, eq. 5 and Theorem 2 with the working model Phi = I) for the tests: explicit X,
H, (I - H_gg)^{-1/2} by eigendecomposition, the q_g vectors and their Gram matrix."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats as sps


def dense_cr2(y: np.ndarray, x: np.ndarray, clusters: np.ndarray, c: np.ndarray) -> tuple[float, float]:
    """(se of c'beta, BM df): V = (X'X)^-1 sum_g X_g' A_g e_g e_g' A_g X_g (X'X)^-1 with
    A_g = (I - H_gg)^{-1/2}; p_g = cluster-g block of A_g X_g (X'X)^-1 c, q_g = (I - H) p_g,
    df = (sum_g q_g'q_g)^2 / sum_{g,h} (q_g'q_h)^2."""
    y = np.asarray(y, dtype=float)
    clusters = np.asarray(clusters)
    n = y.size
    xtxi = np.linalg.inv(x.T @ x)
    h = x @ xtxi @ x.T
    m = np.eye(n) - h
    e = m @ y
    meat = np.zeros((x.shape[1], x.shape[1]))
    ps = []
    for g in np.unique(clusters):
        idx = np.flatnonzero(clusters == g)
        w, u = np.linalg.eigh(np.eye(idx.size) - h[np.ix_(idx, idx)])
        a = u @ np.diag(w ** -0.5) @ u.T
        s = x[idx].T @ a @ e[idx]
        meat += np.outer(s, s)
        p = np.zeros(n)
        p[idx] = a @ x[idx] @ xtxi @ c
        ps.append(p)
    v = xtxi @ meat @ xtxi
    q = np.array([m @ p for p in ps])
    gram = q @ q.T
    return float(np.sqrt(c @ v @ c)), float(np.trace(gram) ** 2 / np.sum(gram * gram))


def dense_mean(y: Any, clusters: Any, confidence: float = 0.95) -> dict[str, float]:
    """The mean's CR2 se, BM df, t interval and p, by :func:`dense_cr2`."""
    y = np.asarray(y, dtype=float)
    se, df = dense_cr2(y, np.ones((y.size, 1)), np.asarray(clusters), np.array([1.0]))
    return _t(float(y.mean()), se, df, confidence)


def dense_diff(a: Any, ca: Any, b: Any, cb: Any, confidence: float = 0.95) -> dict[str, float]:
    """mean_a - mean_b's CR2 se, BM df, t interval and p on X = [1, indicator(b)]."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    y = np.r_[a, b]
    x = np.c_[np.ones(y.size), np.r_[np.zeros(a.size), np.ones(b.size)]]
    cl = np.r_[np.asarray(ca, dtype=object), np.asarray(cb, dtype=object)].astype(str)
    se, df = dense_cr2(y, x, cl, np.array([0.0, -1.0]))
    return _t(float(a.mean() - b.mean()), se, df, confidence)


def _t(est: float, se: float, df: float, confidence: float) -> dict[str, float]:
    q = sps.t.ppf(1 - (1 - confidence) / 2, df)
    return {"estimate": est, "se": se, "df": df, "ci_low": est - q * se, "ci_high": est + q * se,
            "p": float(2 * sps.t.sf(abs(est / se), df))}
