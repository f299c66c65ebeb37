"""Length: AlpacaEval's length-controlled win rate, recomputed, and the slope of score on length.

**The harness's LC** (tatsu-lab/alpaca_eval ``metrics/glm_winrate.py``, ``length_controlled_v1``):
per evaluated model, the preference ``y = p - 1`` in [0, 1] (``0 -> 1.5`` first) is fitted by a
logistic GLM with continuous targets (log loss, each row duplicated as label 1 with weight ``y``
and label 0 with weight ``1 - y``) on the formula
``np.tanh(std_delta_len) + instruction_difficulty + not_gamed_baseline.astype(float) - 1``, where
``std_delta_len = (len(output_1) - len(output_2)) / sd`` (characters; ``output_1`` is the
baseline's answer, ``sd`` the sample sd of that difference over the model's rows), the
instruction's ``instruction_difficulty`` comes from a table the harness downloads from its
dataset hub, and ``not_gamed_baseline`` is 1 for the model's rows (0 for the gamed baselines'
rows it adds with weight 0.1 each as a regulariser). The LC win rate is the mean over the
model's rows of the prediction with the length term at 0:
``100 * mean_i logistic(w_ng + w_id * difficulty_i)`` (the baseline's weights are all 0, so
this is also ``predict_winrate`` against the baseline). The harness prints no interval.

**What is computed here** (:func:`lc_records`), per (judge, baseline) group of variants:

* ``difficulty: fitted from the given annotations`` (the default; the hub's table and the
  gamed-baseline rows are not reachable from here): one joint fit of every variant of the group,
  ``logit E[y] = theta_m + beta_m * tanh(delta / sd_m) + d_i``, with a per-instruction difficulty
  ``d_i`` shared by the variants (coefficient 1 for every model, where the harness has a
  per-model weight on a table fitted from 200 models) and a normal penalty ``d_i ~ N(0, s2)``
  whose variance is estimated (Laplace evidence, MacKay's update). LC_m = ``100 * mean_i logistic(theta_m + d_i)``
  over the model's rows. Since ``theta_m`` is unpenalised its score equation makes the fitted
  mean (length term in) equal the observed win rate, so LC = win rate minus the fitted length
  effect; the difficulty only shapes that correction.
* ``difficulty: supplied`` (``--lc-difficulty FILE``): with the harness's fitted weights for
  the model (the weights CSV beside the annotations in the harness's repository layout), LC is
  the harness's own formula with the supplied table, so it reproduces the published figure when
  the table is the harness's; without weights for the model, the per-model GLM above is refitted
  on the given rows with the supplied difficulty as its covariate (no gamed-baseline rows).

**Interval** (``ci_method: lc_cluster_bootstrap_refit``): instructions resampled with
replacement (the same draw for every variant of the group), the whole estimator refitted in
each resample (standardising sd, difficulty and its variance included), percentile interval.
With supplied difficulty and the harness's weights, the interval is the refit's bootstrap
spread placed around the harness-weights figure (its weights come from a fit that cannot be
rerun here). :func:`slope_records`: per judge, OLS of the score (percent) on
``log(len(output_2) / len(output_1))`` with scenario and variant fixed effects (within
scenario), CR1 clustered by scenario, t(G - 1) (``cluster_t``); and per variant without them.

**Any harness** (:func:`answer_section`, config ``length: {field, unit, extract}``): where the
rows carry the judged answer (its text, a number of characters or tokens, or a judge prompt it
is cut from: :func:`fastchat_answer`, :func:`arena_hard_answer`), per judge the slope of the
headline score on log(answer length) within scenario (scenario and variant fixed effects by
demeaning, :func:`within_slope`; CR1 clustered by the run's cluster, t(G - 1):
``ols_fe_cluster_t``) and per judge x variant across its scenarios (``cluster_t``); rows without
a length or with length 0 are counted and left out; no length at all is said by name
(:data:`NO_LENGTH`).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from workbench.common.config import LENGTH_FIELD
from workbench.common.errors import WorkbenchError

__all__ = ["GroupData", "fit_shared", "lc_fitted", "lc_harness", "fit_per_model", "read_difficulty",
           "read_weights", "read_leaderboard", "bootstrap_lc", "lc_records", "slope_records", "section",
           "cluster_ols", "FITTED", "SUPPLIED", "LC_METHOD", "NO_LENGTH", "fastchat_answer", "answer_spec",
           "answer_lengths", "keep_lengths", "within_slope", "answer_slope_records", "answer_section", "slope_lines"]

FITTED = "fitted from the given annotations"
SUPPLIED = "supplied"
LC_METHOD = "lc_cluster_bootstrap_refit"
WEIGHT_COLS = ("np.tanh(std_delta_len)", "instruction_difficulty", "not_gamed_baseline.astype(float)")

Arr = NDArray[np.float64]


def _logistic(x: Arr) -> Arr:
    return np.exp(-np.logaddexp(0.0, -x))


@dataclass
class GroupData:
    """Rows of one (judge, baseline) group as arrays: ``y`` in [0, 1], ``delta`` =
    len(output_1) - len(output_2) in characters, ``model`` and ``item`` integer codes."""

    y: Arr
    delta: Arr
    model: NDArray[np.intp]
    item: NDArray[np.intp]
    models: list[str]
    items: list[str]

    def take(self, items: NDArray[np.intp]) -> GroupData:
        """The rows of the instructions ``items`` (a resample: a repeated instruction is a new one)."""
        order = np.argsort(self.item, kind="stable")
        counts = np.bincount(self.item, minlength=len(self.items))
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        c = counts[items]
        rows = order[np.repeat(starts[items] - np.cumsum(c) + c, c) + np.arange(c.sum())]
        new_item = np.repeat(np.arange(len(items)), c)
        return GroupData(self.y[rows], self.delta[rows], self.model[rows], new_item, self.models,
                         [self.items[i] for i in items])


def _std_len(g: GroupData) -> Arr:
    """tanh(delta / sd_m): the harness's length feature, sd (ddof 1) within each model."""
    x = np.zeros_like(g.delta)
    for m in range(len(g.models)):
        sel = g.model == m
        sd = float(np.std(g.delta[sel], ddof=1)) if sel.sum() > 1 else 0.0
        x[sel] = np.tanh(g.delta[sel] / sd) if sd > 0 else 0.0
    return x


@dataclass
class SharedFit:
    theta: Arr
    beta: Arr
    d: Arr
    s2: float
    converged: bool
    psi: float = 1.0
    lam: float = 0.0


def _item_mean_x(g: GroupData, x: Arr) -> Arr:
    """Per row: the mean length feature of its instruction over the group's variants (Mundlak)."""
    n = len(g.items)
    return (np.bincount(g.item, x, n) / np.maximum(np.bincount(g.item, minlength=n), 1))[g.item]


def fit_shared(g: GroupData, start: SharedFit | None = None, max_outer: int = 200,
               tol: float = 1e-10) -> SharedFit:
    """Penalised fractional-logit fit ``logit E[y] = theta_m + beta_m x + lam xbar_i + d_i``,
    ``d_i ~ N(0, s2)``; ``xbar_i`` (the instruction's mean length feature, Mundlak's device) lets
    the difficulty lean with length, so ``beta_m`` is a within-instruction slope; ``lam xbar_i +
    d_i`` is the instruction's difficulty. Quasi-likelihood with dispersion psi (Pearson); MAP for
    fixed s2 and psi by Newton with the Schur complement of the diagonal difficulty block; s2 by
    the Laplace evidence fixed point (MacKay): ``s2 = sum d_i^2 / sum(1 - 1 / (s2 H_ii))``."""
    M, n = len(g.models), len(g.items)
    x = _std_len(g)
    xbar = _item_mean_x(g, x)
    y, m, i = g.y, g.model, g.item
    N = y.size
    K = 2 * M + 1
    Z = np.zeros((N, K))
    Z[np.arange(N), m] = 1.0
    Z[np.arange(N), M + m] = x
    Z[:, 2 * M] = xbar
    if start is None:
        ybar = np.clip(np.bincount(m, y, M) / np.maximum(np.bincount(m, minlength=M), 1), 1e-4, 1 - 1e-4)
        k = np.concatenate([np.log(ybar / (1 - ybar)), np.zeros(M + 1)])
        d, s2, psi = np.zeros(n), 1.0, 1.0
    else:
        k = np.concatenate([start.theta, start.beta, [start.lam]])
        d = start.d.copy() if len(start.d) == n else np.zeros(n)
        s2, psi = start.s2, start.psi

    def objective(kk: Arr, dd: Arr) -> float:
        eta = Z @ kk + dd[i]
        return float((y * eta - np.logaddexp(0.0, eta)).sum() / psi - 0.5 * (dd ** 2).sum() / s2)

    converged = False
    gamma = 0.0
    for _outer in range(max_outer):
        obj = objective(k, d)
        for _it in range(50):
            p = _logistic(Z @ k + d[i])
            r, w = (y - p) / psi, p * (1 - p) / psi
            gd = np.bincount(i, r, n) - d / s2
            gk = Z.T @ r
            a = np.bincount(i, w, n) + 1.0 / s2
            wz = Z * w[:, None]
            b = np.column_stack([np.bincount(i, wz[:, j], n) for j in range(K)])
            c = Z.T @ wz
            ba = b / a[:, None]
            dk = np.linalg.solve(c - b.T @ ba + 1e-10 * np.eye(K), gk - ba.T @ gd)
            dd = (gd - b @ dk) / a
            step = 1.0
            for _h in range(30):
                k2, d2 = k + step * dk, d + step * dd
                new = objective(k2, d2)
                if new >= obj - 1e-12:
                    break
                step /= 2
            k, d = k2, d2
            change, obj = new - obj, new
            if abs(change) < tol * (1 + abs(obj)) and step == 1.0:
                break
        p = _logistic(Z @ k + d[i])
        w = p * (1 - p)
        a = np.bincount(i, w, n) / psi + 1.0 / s2
        # MacKay's evidence update (the fixed point of the Laplace marginal likelihood, the same as
        # EM's s2 = mean(d^2 + 1/a) but much faster where the data say little per instruction)
        gamma = float(np.sum(1.0 - 1.0 / (s2 * a)))
        s2_new = min(max(float(np.sum(d ** 2)) / max(gamma, 1e-9), 1e-6), 1e4)
        # quasi-likelihood dispersion (Pearson, on the effective degrees of freedom): continuous
        # preferences vary less than a 0/1 outcome, and without it the instructions' spread would
        # be taken for noise
        psi_new = float(np.sum((y - p) ** 2 / np.maximum(w, 1e-12))) / max(N - K - gamma, 1.0)
        psi_new = min(max(psi_new, 1e-3), 1e3)
        done = abs(s2_new - s2) <= 1e-6 * max(s2, 1e-3) and abs(psi_new - psi) <= 1e-6 * psi
        s2, psi = s2_new, psi_new
        if done:
            converged = True
            break
    return SharedFit(k[:M].copy(), k[M:2 * M].copy(), d, s2, converged, psi, float(k[2 * M]))


def lc_fitted(g: GroupData, fit: SharedFit) -> Arr:
    """LC per model (percent): the observed win rate minus the fitted length effect, each row's
    ``E[logistic(eta)] - E[logistic(eta - beta_m x)]`` averaged over the difficulty's posterior
    ``N(d_i, v_i)`` (probit approximation), so the correction does not shrink with the difficulty
    estimates; with the length term at 0 this is the harness's mean of logistic(theta_m + difficulty_i)."""
    M, n = len(g.models), len(g.items)
    x = _std_len(g)
    xbar = _item_mean_x(g, x)
    eta0 = fit.theta[g.model] + fit.lam * xbar + fit.d[g.item]
    eta = eta0 + fit.beta[g.model] * x
    w = _logistic(eta) * (1 - _logistic(eta))
    v = (1.0 / (np.bincount(g.item, w, n) / fit.psi + 1.0 / fit.s2))[g.item]
    k = 1.0 / np.sqrt(1.0 + np.pi * v / 8.0)
    corr = _logistic(eta * k) - _logistic(eta0 * k)
    cnt = np.maximum(np.bincount(g.model, minlength=M), 1)
    return 100 * (np.bincount(g.model, g.y - corr, M) / cnt)


def lc_harness(difficulty: Arr, w_ng: float, w_id: float, baseline: Sequence[float] = (0.0, 0.0)) -> float:
    """The harness's ``predict_winrate``: ``100 * mean logistic(dw_ng + dw_id * difficulty)`` with the
    model's weights minus the baseline's (``baseline = (w_ng, w_id)`` of the baseline, 0 for itself)."""
    z = (w_ng - baseline[0]) + (w_id - baseline[1]) * np.asarray(difficulty, dtype=float)
    return float(100 * np.mean(_logistic(z)))


def fit_per_model(y: Arr, x: Arr, diff: Arr, iters: int = 100) -> Arr:
    """The harness's per-model GLM without its gamed-baseline rows and without its L1 penalty:
    fractional logit of ``y`` on [tanh length, difficulty, 1] (no other intercept), by Newton.
    Returns (w_len, w_id, w_ng)."""
    X = np.column_stack([x, diff, np.ones_like(x)])
    w = np.zeros(3)
    for _ in range(iters):
        p = _logistic(X @ w)
        g = X.T @ (y - p)
        h = X.T @ (X * (p * (1 - p))[:, None]) + 1e-8 * np.eye(3)
        step = np.linalg.solve(h, g)
        w = w + step
        if np.max(np.abs(step)) < 1e-10:
            break
    return w


# --------------------------------------------------------------------------- files


def read_difficulty(path: str | Path) -> dict[str, float]:
    """A difficulty table: CSV whose first column is the instruction (its text, or its 0-based
    position in the instruction set) and which has an ``instruction_difficulty`` column (else
    the second column is the difficulty), as the harness's ``instruction_difficulty.csv``."""
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            rows = list(csv.reader(fh))
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkbenchError(f"{path}: cannot read the --lc-difficulty table: {exc}") from exc
    if len(rows) < 2 or len(rows[0]) < 2:
        raise WorkbenchError(f"{path}: --lc-difficulty needs a header and two columns (instruction, "
                             "instruction_difficulty)")
    head = rows[0]
    col = head.index("instruction_difficulty") if "instruction_difficulty" in head else 1
    out: dict[str, float] = {}
    for k, r in enumerate(rows[1:], start=2):
        if not r:
            continue
        try:
            v = float(r[col])
        except (ValueError, IndexError) as exc:
            raise WorkbenchError(f"{path}: line {k}: instruction_difficulty is not a number") from exc
        if not math.isfinite(v):
            raise WorkbenchError(f"{path}: line {k}: instruction_difficulty is not finite")
        out[r[0]] = v
    return out


def read_weights(path: str | Path) -> dict[str, dict[str, float]]:
    """The harness's weights CSV (``metrics/weights/<annotator>/length_controlled_v1/baseline_*.csv``)."""
    with open(path, encoding="utf-8", newline="") as fh:
        return {r[""]: {c: float(r[c]) for c in WEIGHT_COLS} for r in csv.DictReader(fh)}


def read_leaderboard(path: str | Path) -> dict[str, float]:
    """``length_controlled_winrate`` per model from a leaderboard CSV."""
    with open(path, encoding="utf-8", newline="") as fh:
        out = {}
        for r in csv.DictReader(fh):
            v = r.get("length_controlled_winrate")
            if v not in (None, ""):
                out[r[""]] = float(v)
        return out


def known_files(input_paths: Sequence[str], judge: str, baseline: str) -> dict[str, Path | None]:
    """The leaderboard and weights CSVs where the harness's repository layout puts them, found from
    an input ``<root>/results/<model>/<annotator>/annotations.json``; None where absent."""
    found: dict[str, Path | None] = {"leaderboard": None, "weights": None}
    for p in input_paths:
        parts = Path(p).resolve().parts
        if len(parts) < 5 or parts[-4] != "results":
            continue
        root = Path(*parts[:-4])
        lb = root / "src/alpaca_eval/leaderboards/data_AlpacaEval_2" / f"{judge}_leaderboard.csv"
        wt = root / "src/alpaca_eval/metrics/weights" / judge / "length_controlled_v1" / f"baseline_{baseline}.csv"
        if found["leaderboard"] is None and lb.is_file():
            found["leaderboard"] = lb
        if found["weights"] is None and wt.is_file():
            found["weights"] = wt
    return found


def instruction_order(rows: pl.DataFrame) -> list[str]:
    """The instruction set in its file order, merged over the files (each file is the set in
    order with some instructions absent): a topological merge, ties by first position."""
    seqs = [g["scenario"].to_list() for g in rows.partition_by("file", maintain_order=True)]
    first: dict[str, tuple[int, int]] = {}
    succ: dict[str, set[str]] = {}
    indeg: dict[str, int] = {}
    for f, seq in enumerate(seqs):
        for k, s in enumerate(seq):
            first.setdefault(s, (k, f))
            succ.setdefault(s, set())
            indeg.setdefault(s, 0)
        for a, b in zip(seq, seq[1:], strict=False):
            if b not in succ[a]:
                succ[a].add(b)
                indeg[b] += 1
    import heapq

    heap = [(first[s], s) for s, v in indeg.items() if v == 0]
    heapq.heapify(heap)
    out = []
    while heap:
        _, s = heapq.heappop(heap)
        out.append(s)
        for t in succ[s]:
            indeg[t] -= 1
            if indeg[t] == 0:
                heapq.heappush(heap, (first[t], t))
    return out if len(out) == len(first) else list(first)


# --------------------------------------------------------------------------- groups


def group_frames(rows: pl.DataFrame, hl: str) -> list[tuple[tuple[str, str], pl.DataFrame]]:
    """Rows as read with both answers' text and a preference the harness keeps (0 -> 1.5, 1..2),
    per (judge, baseline generator)."""
    need = {"x_output_1", "x_output_2", f"{hl}__raw"}
    if not need <= set(rows.columns):
        return []
    base = pl.col("x_generator_1") if "x_generator_1" in rows.columns else pl.lit("baseline")
    p = pl.when(pl.col(f"{hl}__raw") == 0).then(1.5).otherwise(pl.col(f"{hl}__raw"))
    read = (rows.filter(pl.col("line").is_not_null() & pl.col("x_output_1").is_not_null()
                        & pl.col("x_output_2").is_not_null() & pl.col(f"{hl}__raw").is_not_null()
                        & pl.col("variant").is_not_null() & pl.col("scenario").is_not_null())
            .with_columns(p.alias("_p"), base.fill_null("baseline").alias("_baseline"))
            .filter((pl.col("_p") >= 1) & (pl.col("_p") <= 2))
            .with_columns((pl.col("_p") - 1).alias("_y"),
                          (pl.col("x_output_1").str.len_chars().cast(pl.Float64)
                           - pl.col("x_output_2").str.len_chars().cast(pl.Float64)).alias("_delta"),
                          pl.col("x_output_1").str.len_chars().alias("_len1"),
                          pl.col("x_output_2").str.len_chars().alias("_len2"),
                          pl.col("judge").fill_null("").alias("_judge")))
    out = []
    for key, g in sorted(read.partition_by(["_judge", "_baseline"], as_dict=True).items(),
                         key=lambda kv: tuple(map(str, kv[0]))):
        out.append(((str(key[0]), str(key[1])), g))
    return out


def group_data(frame: pl.DataFrame) -> GroupData:
    models = sorted(set(frame["variant"].to_list()))
    items = sorted(set(frame["scenario"].to_list()))
    mi = {v: k for k, v in enumerate(models)}
    ii = {v: k for k, v in enumerate(items)}
    return GroupData(frame["_y"].to_numpy().astype(float), frame["_delta"].to_numpy().astype(float),
                     np.array([mi[v] for v in frame["variant"].to_list()], dtype=np.intp),
                     np.array([ii[v] for v in frame["scenario"].to_list()], dtype=np.intp), models, items)


def _estimate(g: GroupData, diff: Arr | None, start: SharedFit | None = None
              ) -> tuple[Arr, SharedFit | None, Arr | None]:
    """LC per model, the shared fit (fitted difficulty) or the per-model weights (supplied)."""
    if diff is None:
        fit = fit_shared(g, start)
        return lc_fitted(g, fit), fit, None
    x = _std_len(g)
    d = diff[g.item]
    M = len(g.models)
    lc, ws = np.zeros(M), np.zeros((M, 3))
    for m in range(M):
        sel = g.model == m
        ws[m] = fit_per_model(g.y[sel], x[sel], d[sel])
        lc[m] = lc_harness(d[sel], ws[m][2], ws[m][1])
    return lc, None, ws


def bootstrap_lc(g: GroupData, diff: Arr | None, resamples: int, seed: int,
                 start: SharedFit | None = None) -> Arr:
    """(resamples x models) LC estimates, instructions resampled with replacement and refitted."""
    rng = np.random.default_rng(seed)
    n = len(g.items)
    out = np.full((resamples, len(g.models)), np.nan)
    for b in range(resamples):
        pick = rng.integers(0, n, n)
        gb = g.take(pick)
        sb = None
        if start is not None:
            sb = SharedFit(start.theta, start.beta, start.d[pick], start.s2, True, start.psi, start.lam)
        if len(set(gb.model.tolist())) < len(g.models):
            continue
        out[b] = _estimate(gb, None if diff is None else diff[pick], sb)[0]
    return out


def lc_records(rows: pl.DataFrame, hl: str, *, difficulty: Mapping[str, float] | None = None,
               difficulty_source: str | None = None, input_paths: Sequence[str] = (),
               resamples: int = 1000, seed: int = 0, confidence: float = 0.95,
               weights: Mapping[str, Mapping[str, float]] | None = None,
               leaderboard: Mapping[str, float] | None = None) -> list[dict[str, Any]]:
    """One record per variant: the LC win rate, its interval and method, the published figure and
    the difference where a leaderboard is given or found, and what difficulty was used."""
    out: list[dict[str, Any]] = []
    alpha = 1 - confidence
    for (judge, baseline), frame in group_frames(rows, hl):
        g = group_data(frame)
        files = known_files(input_paths, judge, baseline)
        lb = dict(leaderboard) if leaderboard is not None else (
            read_leaderboard(files["leaderboard"]) if files["leaderboard"] else {})
        wts = dict(weights) if weights is not None else (read_weights(files["weights"]) if files["weights"] else {})
        diff = None
        if difficulty is not None:
            order = instruction_order(rows.filter(pl.col("scenario").is_in(g.items)
                                                  & pl.col("line").is_not_null()))
            pos = {s: str(k) for k, s in enumerate(order)}
            vals = [difficulty.get(s, difficulty.get(pos.get(s, ""), math.nan)) for s in g.items]
            lost = sum(math.isnan(v) for v in vals)
            if lost:
                raise WorkbenchError(f"{difficulty_source or 'the difficulty table'}: no instruction_difficulty "
                                     f"for {lost} of the {len(g.items)} instructions of judge {judge!r} (keyed "
                                     "by instruction text or 0-based position)")
            diff = np.array(vals, dtype=float)
        lc, fit, ws = _estimate(g, diff)
        boot = bootstrap_lc(g, diff, resamples, seed, fit)
        ok = np.isfinite(boot).all(axis=1)
        raw = 100 * np.bincount(g.model, g.y, len(g.models)) / np.bincount(g.model, minlength=len(g.models))
        for m, variant in enumerate(g.models):
            sel = g.model == m
            point, refit, how = float(lc[m]), None, None
            used_weights = False
            if diff is not None and variant in wts and baseline in wts:
                w, wb = wts[variant], wts[baseline]
                refit = point
                point = lc_harness(diff[g.item[sel]], w[WEIGHT_COLS[2]], w[WEIGHT_COLS[1]],
                                   (wb[WEIGHT_COLS[2]], wb[WEIGHT_COLS[1]]))
                used_weights = True
            bm = boot[ok, m]
            lo = hi = None
            if bm.size >= 20:
                lo, hi = (float(v) for v in np.quantile(bm, [alpha / 2, 1 - alpha / 2]))
                if used_weights and refit is not None:
                    lo, hi = point - (refit - lo), point + (hi - refit)
            if diff is None:
                how = ("joint fit of the group's variants with a per-instruction difficulty shared by them "
                       "(normal penalty, variance by the Laplace evidence), the length term at 0")
            elif used_weights:
                how = "the harness's fitted weights (weights CSV) with the supplied difficulty: its predict_winrate"
            else:
                how = "the harness's per-model GLM refitted on these rows with the supplied difficulty"
            pub = lb.get(variant)
            rec: dict[str, Any] = {
                "variant": variant, "judge": judge, "baseline": baseline, "n": int(sel.sum()),
                "win_rate": float(raw[m]), "lc_win_rate": point, "ci_low": lo, "ci_high": hi,
                "ci_method": LC_METHOD if lo is not None else None, "resamples": int(ok.sum()),
                "confidence": confidence,
                "difficulty": FITTED if diff is None else SUPPLIED, "estimate": how,
                "lc_refit": refit, "published_lc": pub,
                "difference": None if pub is None else point - pub,
                "length_weight": (float(fit.beta[m]) if fit is not None
                                  else float(ws[m][0]) if ws is not None else None),
                "difficulty_variance": None if fit is None else float(fit.s2),
                "harness_weights": ({c: wts[variant][c] for c in WEIGHT_COLS} if variant in wts else None),
            }
            out.append(rec)
    return out


# --------------------------------------------------------------------------- slopes


def cluster_ols(y: Arr, X: Arr, clusters: NDArray[np.intp], confidence: float = 0.95
                ) -> tuple[Arr, Arr, float, int]:
    """OLS coefficients, CR1 cluster-robust SEs and the t(G - 1) quantile, G clusters."""
    from scipy import stats as sps

    n, k = X.shape
    xtx_inv = np.linalg.pinv(X.T @ X)
    coef = xtx_inv @ X.T @ y
    u = y - X @ coef
    G = int(clusters.max()) + 1 if clusters.size else 0
    sc = np.zeros((G, k))
    np.add.at(sc, clusters, X * u[:, None])
    meat = sc.T @ sc
    corr = (G / max(G - 1, 1)) * ((n - 1) / max(n - k, 1))
    cov = corr * xtx_inv @ meat @ xtx_inv
    se = np.sqrt(np.clip(np.diag(cov), 0, None))
    q = float(sps.t.ppf(1 - (1 - confidence) / 2, max(G - 1, 1)))
    return coef, se, q, G


def _dummies(codes: NDArray[np.intp]) -> Arr:
    k = int(codes.max()) + 1
    D = np.zeros((codes.size, k))
    D[np.arange(codes.size), codes] = 1.0
    return D


def slope_records(rows: pl.DataFrame, hl: str, confidence: float = 0.95) -> list[dict[str, Any]]:
    """Per judge (within scenario: scenario and variant fixed effects) and per variant: the slope
    of the score (percent, 100 * (p - 1)) on log(len(output_2) / len(output_1)), CR1 clustered by
    scenario. Rows where either answer is empty are left out (no log length)."""
    out: list[dict[str, Any]] = []
    for (judge, baseline), frame in group_frames(rows, hl):
        f = frame.filter((pl.col("_len1") > 0) & (pl.col("_len2") > 0))
        if f.height < 3:
            continue
        y = 100 * f["_y"].to_numpy().astype(float)
        lr = np.log(f["_len2"].to_numpy().astype(float)) - np.log(f["_len1"].to_numpy().astype(float))
        scen = {s: k for k, s in enumerate(sorted(set(f["scenario"].to_list())))}
        sc = np.array([scen[s] for s in f["scenario"].to_list()], dtype=np.intp)
        var = {v: k for k, v in enumerate(sorted(set(f["variant"].to_list())))}
        vc = np.array([var[v] for v in f["variant"].to_list()], dtype=np.intp)
        units = [("all variants, within scenario", None, np.ones(y.size, bool))]
        units += [(v, v, vc == k) for v, k in var.items()]
        for label, variant, sel in units:
            if sel.sum() < 3:
                continue
            if variant is None:
                X = np.column_stack([lr[sel], _dummies(sc[sel]), _dummies(vc[sel])[:, 1:]])
                # scenarios with one row carry no within-scenario information; they stay (they only
                # fit their own dummy)
            else:
                X = np.column_stack([lr[sel], np.ones(int(sel.sum()))])
            _, cl = np.unique(sc[sel], return_inverse=True)
            coef, se, q, G = cluster_ols(y[sel], X, cl.astype(np.intp), confidence)
            b, s = float(coef[0]), float(se[0])
            out.append({"judge": judge, "baseline": baseline, "variant": variant, "unit": label,
                        "n": int(sel.sum()), "clusters": G, "regressor": "log(len(output_2) / len(output_1))",
                        "slope": b, "se": s, "ci_low": b - q * s, "ci_high": b + q * s,
                        "ci_method": "cluster_t", "per_doubling": b * math.log(2),
                        "fixed_effects": "scenario + variant" if variant is None else None})
    return out


# --------------------------------------------------------------------------- answer length (any harness)

NO_LENGTH = "rows carry no answer length"
"""Why a run with ``length.field`` set has no slope: no valid row holds a length (results.json
``length.why``)."""

LENGTH_COLUMN = f"x_{LENGTH_FIELD}"

_FC_START, _FC_END = "[The Start of Assistant's Answer]\n", "\n[The End of Assistant's Answer]"
_FC_CONV = "<|The Start of Assistant A's Conversation with User|>"
_FC_CONV_END = "\n\n<|The End of Assistant A's Conversation with User|>"
_FC_TURN = "### Assistant A:\n"


def fastchat_answer(prompt: str | None) -> str | None:
    """The judged answer cut from a FastChat single-answer judge prompt (``user_prompt``), None
    where the prompt has neither layout. ``single-v1`` and ``single-math-v1`` put it between
    ``[The Start of Assistant's Answer]\\n`` and ``\\n[The End of Assistant's Answer]``; the
    ``-multi-turn`` prompts hold the whole conversation between ``<|The Start of Assistant A's
    Conversation with User|>`` and its end marker, and the judged answer is the last turn
    (after the last ``### Assistant A:\\n``). FastChat inserts the answer verbatim, so the cut
    is the answer's text exactly (unless the answer itself contains the closing marker)."""
    if prompt is None:
        return None
    k = prompt.find(_FC_START)
    if k >= 0:
        e = prompt.rfind(_FC_END)
        return prompt[k + len(_FC_START):e] if e >= k + len(_FC_START) else None
    k = prompt.find(_FC_CONV)
    if k >= 0:
        e = prompt.rfind(_FC_CONV_END)
        t = prompt.rfind(_FC_TURN, k, e) if e > k else -1
        return prompt[t + len(_FC_TURN):e] if t >= 0 else None
    return None


_AH = "<|The Start of Assistant {0}'s Answer|>\n", "\n<|The End of Assistant {0}'s Answer|>"


def arena_hard_answer(prompt: str | None, position: str | None) -> str | None:
    """The evaluated model's answer cut from an Arena-Hard judge prompt (a game's ``user_prompt``,
    v2.0: its last ``prompt`` message): Assistant B's answer in game 1 (the baseline is A) and
    Assistant A's in game 2 (the positions swapped), between ``<|The Start of Assistant X's
    Answer|>`` and its end marker (the harness inserts the answer verbatim); None where the
    prompt or the position (``1`` / ``2``) is not that layout."""
    side = {"1": "B", "2": "A"}.get(str(position)) if prompt is not None else None
    if side is None:
        return None
    start, end = (m.format(side) for m in _AH)
    k = prompt.find(start)
    e = prompt.find(end, k + len(start)) if k >= 0 else -1
    return prompt[k + len(start):e] if e >= 0 else None


def answer_spec(cfg: Any) -> dict[str, Any] | None:
    """What ``length:`` reads (field, unit, extract, the unit of the lengths), None when unset."""
    sec = (getattr(cfg, "raw", {}) or {}).get("length") or {}
    if not isinstance(sec, Mapping) or sec.get("field") is None or LENGTH_FIELD not in cfg.extra_fields:
        return None
    unit, extract = sec.get("unit"), sec.get("extract")
    reading = ("the number in the field" if unit is not None else
               "the answer cut from the judge prompt, FastChat's single-answer layout"
               if extract == "fastchat_single" else
               "the evaluated model's answer cut from the game's judge prompt, Arena-Hard's layout"
               if extract == "arena_hard" else "the field's text")
    fld = sec["field"]
    return {"field": " | ".join(fld) if isinstance(fld, list) else str(fld), "unit": unit or "characters",
            "extract": extract, "reading": reading}


def answer_lengths(rows: pl.DataFrame, spec: Mapping[str, Any]) -> pl.Series:
    """Per row the answer's length (Float64, null where the row has none): the text's characters,
    the answer cut from a FastChat prompt, or the number in the field (``length.unit`` set; a
    value that is not a finite number >= 0 has no length); the column itself once
    :func:`keep_lengths` has reduced it."""
    if rows.schema[LENGTH_COLUMN] == pl.Float64:
        return rows[LENGTH_COLUMN].alias("_len")
    alts = sorted((c for c in rows.columns if c.startswith(LENGTH_COLUMN) and c[len(LENGTH_COLUMN):].isdigit()),
                  key=lambda c: int(c[len(LENGTH_COLUMN):]))
    col = rows.select(pl.coalesce([pl.col(c).cast(pl.String) for c in [LENGTH_COLUMN, *alts]]))[LENGTH_COLUMN]
    if spec["extract"] == "arena_hard":
        pos = rows[f"{LENGTH_COLUMN}pos"].cast(pl.String).to_list() if f"{LENGTH_COLUMN}pos" in rows.columns \
            else [None] * rows.height
        cut = [None if v is None else arena_hard_answer(v, p) for v, p in zip(col.to_list(), pos, strict=True)]
        return pl.Series("_len", [None if a is None else float(len(a)) for a in cut], dtype=pl.Float64)
    if spec["extract"] == "fastchat_single":
        cut = [None if v is None else fastchat_answer(v) for v in col.to_list()]
        return pl.Series("_len", [None if a is None else float(len(a)) for a in cut], dtype=pl.Float64)
    if spec["reading"] == "the number in the field":
        num = pl.DataFrame({"v": col.str.strip_chars().cast(pl.Float64, strict=False)})
        ok = pl.col("v").is_finite() & (pl.col("v") >= 0)
        return num.select(pl.when(ok).then(pl.col("v")).otherwise(None).alias("_len"))["_len"]
    return col.str.len_chars().cast(pl.Float64).alias("_len")


def keep_lengths(rows: pl.DataFrame, cfg: Any) -> pl.DataFrame:
    """``rows`` with the answer-length columns (``x___length``, its alternative paths and the
    Arena-Hard position) replaced by one Float64 ``x___length``, the length: the answers' and
    prompts' text is dropped as soon as the rows are read, so the later stages and rows.parquet
    hold a number per row (a FastChat judge prompt is kilobytes). Unchanged without ``length.field``."""
    spec = answer_spec(cfg)
    cols = [c for c in rows.columns if c.startswith(LENGTH_COLUMN)]
    if spec is None or LENGTH_COLUMN not in rows.columns or rows.schema[LENGTH_COLUMN] == pl.Float64:
        return rows
    lens = answer_lengths(rows, spec).alias(LENGTH_COLUMN)
    return rows.drop(cols).with_columns(lens)


def _demean(v: Arr, codes: Sequence[NDArray[np.intp]], tol: float = 1e-13, max_iter: int = 10_000) -> Arr:
    """``v`` with the fixed effects of every code vector projected out (alternating projections:
    demeaning by each in turn until nothing moves; exact in one pass for one code vector)."""
    out = v - v.mean()
    scale = max(float(np.abs(v).max()) if v.size else 0.0, 1.0)
    for _ in range(max_iter):
        moved = 0.0
        for c in codes:
            n = int(c.max()) + 1
            m = np.bincount(c, out, n) / np.bincount(c, minlength=n)
            out = out - m[c]
            moved = max(moved, float(np.abs(m).max()))
        if moved <= tol * scale or len(codes) == 1:
            break
    return out


def within_slope(y: Arr, x: Arr, fe: Sequence[NDArray[np.intp]], clusters: NDArray[np.intp],
                 confidence: float = 0.95) -> tuple[float, float, float, int] | None:
    """OLS slope of ``y`` on ``x`` with the fixed effects ``fe`` (Frisch-Waugh-Lovell: both
    demeaned), its CR1 cluster-robust SE with the small-sample factor of the full dummy
    regression (k = 1 + the levels of the first code + those of the others minus one each), and
    the t(G - 1) quantile: (slope, se, q, G); None when x has no variation left."""
    from scipy import stats as sps

    xt, yt = _demean(x, fe), _demean(y, fe)
    sxx = float(xt @ xt)
    if sxx <= 1e-12 * max(float(x @ x), 1.0):
        return None
    b = float(xt @ yt) / sxx
    u = yt - b * xt
    G = int(clusters.max()) + 1
    score = np.bincount(clusters, xt * u, G)
    n = y.size
    k = 1 + sum(int(c.max()) + 1 for c in fe) - max(len(fe) - 1, 0)
    corr = (G / max(G - 1, 1)) * ((n - 1) / max(n - k, 1))
    se = math.sqrt(corr * float(score @ score)) / sxx
    q = float(sps.t.ppf(1 - (1 - confidence) / 2, max(G - 1, 1)))
    return b, se, q, G


def _codes(values: list[Any]) -> NDArray[np.intp]:
    _, inv = np.unique(np.array([str(v) for v in values], dtype=object), return_inverse=True)
    return inv.astype(np.intp)


def answer_slope_records(rows: pl.DataFrame, cfg: Any, spec: Mapping[str, Any],
                         confidence: float = 0.95) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Per judge (within scenario: scenario and variant fixed effects) and per judge x variant
    (across its scenarios): the slope of the headline score on log(answer length), CR1 clustered
    by the design's cluster, t(G - 1). Valid headline rows only; a row without a length or with
    length 0 (no log) is left out and counted. Returns (records, counts over all judges)."""
    from workbench.ingest import clusters
    from workbench.ingest.selection import in_cells

    hl = cfg.headline
    ccol = clusters.column(rows)
    # only the columns read here (and the length columns answer_lengths reads) are copied
    keep = list(dict.fromkeys(["judge", "scenario", "variant", ccol, hl,
                               *(c for c in rows.columns if c.startswith(LENGTH_COLUMN))]))
    valid = (rows.lazy().filter(in_cells() & pl.col(hl).is_not_null() & pl.col("scenario").is_not_null()
                                & pl.col("variant").is_not_null()).select(keep).collect())
    frame = valid.select(pl.col("judge").cast(pl.String).fill_null("").alias("_judge"),
                         pl.col("scenario").cast(pl.String), pl.col("variant").cast(pl.String),
                         pl.col(ccol).cast(pl.String).alias("_cluster"), pl.col(hl).cast(pl.Float64).alias("_y"),
                         answer_lengths(valid, spec))
    counts = {"valid_rows": frame.height, "with_length": int((frame["_len"] > 0).sum()),
              "zero_length": int((frame["_len"] == 0).sum()), "no_length": int(frame["_len"].null_count())}
    out: list[dict[str, Any]] = []
    regressor = f"log(answer length, {spec['unit']})"
    for (judge,), g in sorted(frame.partition_by("_judge", as_dict=True).items(), key=lambda kv: str(kv[0])):
        rows_j = g.height
        f = g.filter(pl.col("_len") > 0)
        base = {"judge": judge, "baseline": None, "rows": rows_j, "zero_length": int((g["_len"] == 0).sum()),
                "no_length": int(g["_len"].null_count()), "regressor": regressor}
        y = f["_y"].to_numpy().astype(float)
        lx = np.log(f["_len"].to_numpy().astype(float))
        sc, vc, cl = _codes(f["scenario"].to_list()), _codes(f["variant"].to_list()), _codes(f["_cluster"].to_list())
        units: list[tuple[str, str | None, NDArray[np.bool_]]] = [("all variants, within scenario", None,
                                                                   np.ones(y.size, bool))]
        units += [(v, v, vc == k) for k, v in enumerate(sorted(set(f["variant"].to_list())))]
        for label, variant, sel in units:
            n = int(sel.sum())
            if variant is not None and n < 3:
                continue
            fit = None
            if n >= 3:
                fe = [sc, vc] if variant is None else []  # the pooled unit uses every row
                _, clu = np.unique(cl[sel], return_inverse=True)
                if variant is None:
                    fit = within_slope(y[sel], lx[sel], fe, clu.astype(np.intp), confidence)
                else:
                    coef, se, q, G = cluster_ols(y[sel], np.column_stack([lx[sel], np.ones(n)]),
                                                 clu.astype(np.intp), confidence)
                    fit = (float(coef[0]), float(se[0]), q, G) if float(np.ptp(lx[sel])) > 0 else None
            rec: dict[str, Any] = {**base, "variant": variant, "unit": label, "n": n}
            if variant is not None:
                rec["rows"] = int((g["variant"] == variant).sum())
                rec["zero_length"] = int(((g["variant"] == variant) & (g["_len"] == 0)).sum())
                rec["no_length"] = int(((g["variant"] == variant) & g["_len"].is_null()).sum())
            if fit is None:
                rec.update({"clusters": int(np.unique(cl[sel]).size), "slope": None, "se": None, "ci_low": None,
                            "ci_high": None, "ci_method": None, "per_doubling": None,
                            "why": NO_LENGTH if n == 0 else "fewer than 3 rows with a length" if n < 3 else
                            "no spread of the length within scenario (each scenario's rows share one length)"
                            if variant is None else "no spread of the length across scenarios"})
            else:
                b, s, q, G = fit
                rec.update({"clusters": G, "slope": b, "se": s, "ci_low": b - q * s, "ci_high": b + q * s,
                            "ci_method": "ols_fe_cluster_t" if variant is None else "cluster_t",
                            "per_doubling": b * math.log(2), "why": None})
            rec["fixed_effects"] = "scenario + variant" if variant is None else None
            out.append(rec)
    return out, counts


def answer_section(rows: pl.DataFrame, cfg: Any, confidence: float = 0.95) -> dict[str, Any] | None:
    """The answer-length part of results.json ``length`` (``answer_length``, ``slopes``, ``why``),
    None when ``length.field`` is unset."""
    spec = answer_spec(cfg)
    if spec is None:
        return None
    if LENGTH_COLUMN not in rows.columns:
        recs, counts = [], {"valid_rows": 0, "with_length": 0, "zero_length": 0, "no_length": 0}
    else:
        recs, counts = answer_slope_records(rows, cfg, spec, confidence)
    measured = [r for r in recs if r["slope"] is not None]
    return {"answer_length": {**spec, **counts}, "slopes": recs,
            "why": None if counts["with_length"] else NO_LENGTH, "measured": len(measured)}


def section(rows: pl.DataFrame, cfg: Any, input_paths: Sequence[str] = ()) -> dict[str, Any] | None:
    """results.json ``length``: AlpacaEval's LC and slopes where rows carry both answers' text,
    the slopes on the answer length where ``length.field`` is set; None when neither."""
    hl = cfg.headline
    conf0 = float(getattr(cfg, "confidence", 0.95))
    answers = answer_section(rows, cfg, conf0)
    if not group_frames(rows, hl):
        return answers
    raw = getattr(cfg, "raw", {}) or {}
    source = (raw.get("length") or {}).get("difficulty")
    if source is not None and not isinstance(source, str):
        raise WorkbenchError(f"config: length.difficulty must be a file path, got {source!r}")
    difficulty = read_difficulty(source) if source else None
    boot = raw.get("bootstrap") or {}
    resamples = int(min(int(boot.get("resamples", 1000)), 2000))
    seed = int(boot.get("seed", 0))
    conf = float(raw.get("confidence", 0.95))
    lc = lc_records(rows, hl, difficulty=difficulty, difficulty_source=source, input_paths=input_paths,
                    resamples=resamples, seed=seed, confidence=conf)
    return {
        "difficulty": FITTED if difficulty is None else SUPPLIED,
        "difficulty_file": source,
        "note": ("instruction_difficulty fitted from the given annotations: the harness downloads its table "
                 "(instruction_difficulty.csv, df_gamed.csv) from its dataset hub, not reachable here, so "
                 "the LC below is the harness's GLM with that term estimated from these rows; supply the "
                 "table with --lc-difficulty FILE to use it") if difficulty is None else
                ("instruction_difficulty supplied (--lc-difficulty); with the harness's weights CSV the "
                 "figure is its own predict_winrate"),
        "resamples": resamples, "seed": seed,
        "lc": lc,
        "slopes": slope_records(rows, hl, conf) + (answers["slopes"] if answers else []),
        **({k: v for k, v in answers.items() if k != "slopes"} if answers else {}),
    }


def slope_lines(sec: Mapping[str, Any] | None, value_unit: str | None = None) -> list[str]:
    """Plain sentences on the slopes of results.json ``length`` (the terminal's and the report's
    text): per judge the within-scenario slope per doubling of the length with its interval, the
    rows used and the valid n; by name where no length exists. Nothing without a ``length``."""
    if not sec:
        return []
    unit = value_unit or "points"
    spec = sec.get("answer_length") or {}
    out: list[str] = []
    if sec.get("why") == NO_LENGTH:
        out.append(f"Length: {NO_LENGTH} (length.field {spec.get('field')!r}: no valid row holds one), so "
                   "whether a judge's score rises with the answer's length is not measured.")
    for r in sec.get("slopes") or []:
        if r.get("variant") is not None:
            continue
        alpaca = r.get("regressor", "").startswith("log(len(output_2)")
        what = ("the evaluated answer's length relative to the baseline's (characters)" if alpaca
                else f"the answer's length in {spec.get('unit', 'characters')} ({spec.get('field')}: "
                     f"{spec.get('reading')})")
        judge = r.get("judge") or "the judge"
        if r.get("slope") is None and r.get("why") == NO_LENGTH and sec.get("why") == NO_LENGTH:
            continue  # said once above
        if r.get("slope") is None:
            out.append(f"Length, {judge}: no within-scenario slope ({r.get('why')}; {r.get('n')} rows with a "
                       "length).")
            across = [x for x in sec.get("slopes") or [] if x.get("judge") == r.get("judge")
                      and x.get("variant") is not None and x.get("slope") is not None]
            out += [f"Length, {judge}, {x['variant']} across its scenarios (length and question confounded): "
                    f"{x['per_doubling']:+.3g} {unit} per doubling [{x['ci_low'] * math.log(2):+.3g}, "
                    f"{x['ci_high'] * math.log(2):+.3g}] (CR1 clustered t, {x['clusters']} clusters, {x['n']} of "
                    f"{x['rows']} valid rows with a length)." for x in across]
            continue
        ln2 = math.log(2)
        used = (f"{r['n']} rows" if alpaca else
                f"{r['n']} of {r['rows']} valid rows with a length"
                + (f"; {r['zero_length']} empty answers and {r['no_length']} rows without a length left out"
                   if r.get("zero_length") or r.get("no_length") else ""))
        out.append(f"Length, {judge}: the score changes by {r['per_doubling']:+.3g} {unit} per doubling of "
                   f"{what} [{r['ci_low'] * ln2:+.3g}, {r['ci_high'] * ln2:+.3g}], within scenario "
                   f"(scenario and variant fixed effects, CR1 clustered t, {r['clusters']} clusters; {used}).")
    return out
