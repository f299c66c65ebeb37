"""The result containers every estimator returns (CellStats, DiffStats, PairedStats, TestResult) and
the rules they share: input checks (values, cluster codes, confidence, resamples), chunked
draws, t and normal quantiles, percentile intervals, per-cell seeds and one BLAS thread.

Part of :mod:`workbench.stats` (import from there); a pure move out of the former
``stats.py``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special as _sps_special
from scipy import stats as _sps

# ---------------------------------------------------------------------------
# Input validation helpers
# ---------------------------------------------------------------------------

# Upper bound on the number of integers drawn per bootstrap chunk (memory cap).
_CHUNK_CELLS = 2_000_000

# ---------------------------------------------------------------------------
# Result containers
# ---------------------------------------------------------------------------




@dataclass(frozen=True)
class CellStats:
    """Summary of one scorecard cell (one mean with its valid n and error bars).

    Attributes
    ----------
    mean : float or None
        Sample mean in value units; None when n == 0.
    n : int
        Number of valid values.
    clusters : int
        Number of distinct clusters G.
    se : float or None
        Naive standard error (sd ddof=1 / sqrt(n)); None when n < 2.
    se_clustered : float or None
        CR1 cluster-robust standard error; None when G < 2 or n < 2.
    ci_low, ci_high : float or None
        Clustered t interval (df = G - 1); None when se_clustered is None.
    boot_low, boot_high : float or None
        Cluster bootstrap percentile interval; None when G < 2.
    icc : float or None
        One-way ANOVA ICC(1); may be negative; None when undefined.
    design_effect : float or None
        Kish design effect 1 + (m - 1) * icc; None when icc is None.
    se_cr2 : float or None
        CR2 cluster-robust standard error of the mean (:func:`cr2_mean_from_sums`); None
        when G < 2. Zero exactly when ``se_clustered`` is zero (the same degenerate design).
    df_cr2 : float or None
        Bell-McCaffrey degrees of freedom of the mean (G - 1 with equal clusters, fewer
        when they are unequal); None with ``se_cr2``.
    ci_low_cr2, ci_high_cr2 : float or None
        CR2 t interval with ``df_cr2`` degrees of freedom (the scorecard's headline since
        issue 24's follow-up; ``ci_low``/``ci_high`` stay the CR1 t(G - 1) interval).
    """

    mean: float | None
    n: int
    clusters: int
    se: float | None
    se_clustered: float | None
    ci_low: float | None
    ci_high: float | None
    boot_low: float | None
    boot_high: float | None
    icc: float | None
    design_effect: float | None
    se_cr2: float | None = None
    df_cr2: float | None = None
    ci_low_cr2: float | None = None
    ci_high_cr2: float | None = None


@dataclass(frozen=True)
class DiffStats:
    """Unpaired difference of means (a - b) with a cluster-robust error bar.

    Attributes
    ----------
    diff : float or None
        mean_a - mean_b in value units; None when either side is empty.
    se : float or None
        CR1 cluster-robust standard error of the difference; None when undefined.
    df : int or None
        Degrees of freedom G - 1 (G distinct clusters over both groups).
    ci_low, ci_high : float or None
        t interval with ``df`` degrees of freedom.
    p_value : float or None
        Two-sided t-test p-value of diff = 0; None when se is None or se == 0.
    n_a, n_b : int
        Valid n on each side.
    clusters : int
        Number of distinct clusters G over both groups.
    """

    diff: float | None
    se: float | None
    df: int | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    n_a: int = 0
    n_b: int = 0
    clusters: int = 0


@dataclass(frozen=True)
class PairedStats:
    """Summary of paired differences (e.g. judge A score - judge B score per row).

    Attributes
    ----------
    mean : float or None
        Mean difference in value units; None when n == 0.
    n : int
        Number of pairs.
    clusters : int
        Number of distinct clusters G.
    se : float or None
        Paired-t standard error sd / sqrt(n); None when n < 2.
    df : int or None
        Paired-t degrees of freedom n - 1; None when n < 2.
    ci_low, ci_high : float or None
        Paired t interval.
    se_clustered : float or None
        CR1 cluster-robust standard error of the mean difference.
    df_clustered : int or None
        G - 1; None when G < 2.
    ci_low_clustered, ci_high_clustered : float or None
        Clustered t interval.
    boot_low, boot_high : float or None
        Cluster bootstrap percentile interval.
    wilcoxon_p : float or None
        Wilcoxon signed-rank two-sided p-value; None when all diffs are 0 or n < 1.
    diff_counts : dict[str, int]
        Counts per rounded integer difference (see :func:`diff_counts`).
    p_clustered : float or None
        Two-sided t p-value of the CR1 clustered SE with df G - 1; None when se is None or 0.
    se_cr2, df_cr2, ci_low_cr2, ci_high_cr2, p_cr2 : float or None
        CR2 standard error, Bell-McCaffrey df, t interval and p-value
        (:func:`cluster_mean_cr2`): the small-sample form whose size holds with unequal
        clusters.
    """

    mean: float | None
    n: int
    clusters: int
    se: float | None
    df: int | None
    ci_low: float | None
    ci_high: float | None
    se_clustered: float | None
    df_clustered: int | None
    ci_low_clustered: float | None
    ci_high_clustered: float | None
    boot_low: float | None
    boot_high: float | None
    wilcoxon_p: float | None
    diff_counts: dict[str, int] = field(default_factory=dict, hash=False)
    p_clustered: float | None = None
    se_cr2: float | None = None
    df_cr2: float | None = None
    ci_low_cr2: float | None = None
    ci_high_cr2: float | None = None
    p_cr2: float | None = None


@dataclass(frozen=True)
class TestResult:
    """Result of an independence test.

    Attributes
    ----------
    statistic : float or None
        Test statistic (chi-square, or the odds ratio for Fisher's exact test);
        None when undefined.
    p_value : float or None
        p-value in [0, 1]; None when undefined.
    method : str
        One of 'chi2', 'chi2_monte_carlo', 'fisher_exact', 'undefined'.
    """

    __test__ = False  # not a pytest test class

    statistic: float | None
    p_value: float | None
    method: str

# ---------------------------------------------------------------------------
# Input validation helpers
# ---------------------------------------------------------------------------




def _values(x: ArrayLike, name: str = "values") -> NDArray[np.float64]:
    """Return ``x`` as a 1-D float array; raise ValueError on NaN/inf or wrong shape."""
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite entries; pass only valid values")
    return arr


def _is_missing_label(x: Any) -> bool:
    if x is None:
        return True
    try:
        return isinstance(x, float | np.floating) and math.isnan(x)
    except TypeError:  # pragma: no cover - defensive
        return False


def _any_missing_label(lab: NDArray[Any]) -> bool:
    """``any(_is_missing_label(v) for v in lab)`` for an object array, in C loops: None is
    the only object equal to None and a NaN the only one unequal to itself, so only the
    candidates those two comparisons find are checked one by one."""
    try:
        cand = np.asarray((lab == None) | (lab != lab), dtype=bool)  # noqa: E711
    except (TypeError, ValueError):  # an element whose comparison is not a truth value
        return any(_is_missing_label(v) for v in lab)
    if cand.shape != lab.shape:
        return any(_is_missing_label(v) for v in lab)
    return any(_is_missing_label(v) for v in lab[cand])


def _as_text(lab: NDArray[Any]) -> NDArray[Any]:
    """An object array of Python strings as a fixed-width text array (numpy sorts it in C,
    ~3x faster than comparing objects, in the same code point order), else ``lab`` itself:
    other objects, a string that does not survive the conversion (trailing NULs), or a
    conversion that would take more than 256 MB."""
    if lab.dtype != object or lab.size < 1024:
        return lab
    try:
        width = max(map(len, lab.tolist()))
    except TypeError:
        return lab
    if width * 4 * lab.size > 256 * 2**20:
        return lab
    try:
        text = lab.astype(str)
        same = bool(np.all(text == lab))
    except (TypeError, ValueError):
        return lab
    return text if same else lab


def _labels(clusters: ArrayLike, name: str = "clusters") -> NDArray[Any]:
    """Return cluster labels as a 1-D array (tuples and other hashables kept whole)."""
    lab = np.asarray(clusters)
    if lab.ndim == 1:
        return lab
    if lab.ndim > 1 and not isinstance(clusters, np.ndarray):
        items = list(clusters)  # type: ignore[call-overload]
        obj = np.empty(len(items), dtype=object)
        for i, v in enumerate(items):
            obj[i] = tuple(v) if isinstance(v, list) else v
        return obj
    raise ValueError(f"{name} must be 1-D, got shape {lab.shape}")


def _codes(clusters: ArrayLike, n: int, name: str = "clusters") -> tuple[NDArray[np.intp], int]:
    """Return (integer codes 0..G-1, G) for cluster labels of length ``n``."""
    lab = _labels(clusters, name)
    if lab.shape[0] != n:
        raise ValueError(f"{name} has length {lab.shape[0]}, expected {n}")
    if n == 0:
        return np.zeros(0, dtype=np.intp), 0
    if lab.dtype.kind in "iu":
        dense = _dense_int_codes(lab)
        if dense is not None:
            return dense
    if lab.dtype.kind == "f":
        if np.any(np.isnan(lab)):
            raise ValueError(f"{name} contains missing (NaN) labels")
    elif lab.dtype == object:
        if _any_missing_label(lab):
            raise ValueError(f"{name} contains missing (None/NaN) labels")
    try:
        _, inv = np.unique(_as_text(lab), return_inverse=True)
        inv = np.asarray(inv, dtype=np.intp).reshape(-1)
    except TypeError:
        # Mixed, non-orderable labels: code by first appearance.
        mapping: dict[Any, int] = {}
        inv = np.fromiter(
            (mapping.setdefault(v, len(mapping)) for v in lab.tolist()), dtype=np.intp, count=n
        )
    g = int(inv.max()) + 1
    return inv, g


def _dense_int_codes(lab: NDArray[Any]) -> tuple[NDArray[np.intp], int] | None:
    """``np.unique(lab, return_inverse=True)``'s codes for integer labels, in O(n): the rank
    of each label among the distinct labels (a table over the label range, when that range is
    at most a few times the number of labels; else None and np.unique sorts)."""
    lo, hi = int(lab.min()), int(lab.max())
    if hi - lo > 4 * lab.size + 1024:
        return None
    present = np.zeros(hi - lo + 1, dtype=bool)
    wide = np.uint64 if lab.dtype.kind == "u" else np.int64
    # offsets into the (small) range, made in place: one label-sized temporary, not three
    off = lab.astype(wide)
    off -= wide(lo)
    off = off.astype(np.intp, copy=False)
    present[off] = True
    rank = np.cumsum(present, dtype=np.intp) - 1
    return rank[off], int(rank[-1]) + 1


def _check_confidence(confidence: float) -> float:
    c = float(confidence)
    if not (0.0 < c < 1.0):
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return c


def _check_resamples(resamples: int) -> int:
    b = int(resamples)
    if b < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples!r}")
    return b


def _pair(a: ArrayLike, b: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    aa = _values(a, "a")
    bb = _values(b, "b")
    if aa.shape != bb.shape:
        raise ValueError(f"a and b must have the same length, got {aa.size} and {bb.size}")
    return aa, bb


@functools.lru_cache(maxsize=4096)
def _t_ppf(q: float, df: float) -> float:
    """``scipy.stats.t.ppf(q, df)`` as a float, remembered: the scorecard asks it once per cell
    (CR1: the same G - 1 mostly; CR2: a Bell-McCaffrey df per cell). Computed by
    ``scipy.special.stdtrit``, the function ``t.ppf`` evaluates (the same number, bit for bit;
    ``tests/test_stats_cr2.py``), without its argument handling: 1 us, not about 100 us, per
    distinct df."""
    return float(_sps_special.stdtrit(df, q))


@functools.lru_cache(maxsize=64)
def _norm_ppf(q: float) -> float:
    """``scipy.stats.norm.ppf(q)`` as a float, remembered."""
    return float(_sps.norm.ppf(q))


def _f(x: Any) -> float | None:
    """Plain float, or None if not finite."""
    if x is None:
        return None
    v = float(x)
    return v if math.isfinite(v) else None


def _flush(se: float, *arrays: NDArray[np.float64]) -> float:
    """Return ``se``, or 0.0 if it is floating-point noise (< 1e-12 x max |value|).

    Residuals of constant data are not always exactly 0 in floating point; without
    this a true zero standard error could surface as ~1e-17 and give p ~ 0.
    """
    scale = max((float(np.max(np.abs(arr))) for arr in arrays if arr.size), default=0.0)
    return 0.0 if se <= 1e-12 * scale else float(se)


def _percentile_interval(
    stats: NDArray[np.float64], confidence: float
) -> tuple[float | None, float | None]:
    alpha = 1.0 - confidence
    lo, hi = np.quantile(stats, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(lo), float(hi)


def _chunks(resamples: int, width: int) -> list[int]:
    per = max(1, _CHUNK_CELLS // max(1, width))
    sizes = [per] * (resamples // per)
    if resamples % per:
        sizes.append(resamples % per)
    return sizes

# ---------------------------------------------------------------------------
# Seeds and BLAS threads (the rules every estimator shares)
# ---------------------------------------------------------------------------




def derive_seed(base: int, *key: Any) -> int:
    """Return a seed for one cell derived from a base seed and the cell's key (an int).

    SHA-256 of the base and the key parts (``repr`` of each, joined by a unit separator),
    first 8 bytes as an unsigned integer reduced below 2**63.  Two cells with different keys
    get unrelated bootstrap draws; the same key always gets the same seed.
    """
    import hashlib

    text = "\x1f".join([str(int(base)), *(repr(k) for k in key)])
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") % (2**63)


def one_blas_thread() -> Any:
    """A context in which BLAS uses one thread: the one home of that rule.

    A BLAS product's rounding depends on how it splits the work across threads (measured:
    with 1 against 2 threads, 17 of 30 large matrix-vector products and 20 of 30 dot
    products differed in the last bits), so without it a result could depend on the
    machine's core count. On a shared machine OpenBLAS threads also spin-wait (the sign-flip
    products cost about twice the CPU with 2 threads under load). :func:`workbench.document.pipeline.run`
    and the calibration run entirely inside it; the functions here that multiply with BLAS
    (:func:`sign_flip_test`, the joint bootstrap) enter it themselves for direct callers.
    """
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")
