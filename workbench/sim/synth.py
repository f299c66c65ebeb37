"""Planted-truth simulator: judge rows drawn from a declared generating model.

``workbench synth --out DIR [--seed N] [--scenario NAME] [--config FILE]`` writes
``judge_rows.jsonl`` (default format), ``plan.csv``, ``config.yaml`` (the analysis config the
scenario is meant to be run with), ``truth.json`` (every true cell mean, judge offset, variant
contrast and missing rate), and, when the model asks for them, ``published_scorecard.csv``
and ``claims.yaml``. Same model and seed, same bytes.

Generating model (every knob is a field of :class:`Model`; docs/synth.md lists them)::

    latent[s, v, t, j] = mu + variant_effect[v] + scenario[s] + variant_by_scenario[s, v]
                         + judge_offset[j] + judge_by_scenario[s, j] + item[s, v, t] + noise
    score = clip(round(latent), rubric_min, rubric_max)

with scenario ~ N(0, scenario_sd), variant_by_scenario ~ N(0, variant_scenario_sd),
judge_by_scenario ~ N(0, judge_offset_sd) (a judge offset that varies by scenario), item ~
N(0, item_sd) (the rendered output both judges read), noise ~ N(0, noise_sd). Missingness acts
per row (``missing_rates[judge][variant]``, shifted per scenario on the logit scale by
``missing_scenario_sd``), per whole item (``item_failure_rate``: every judge of one scenario x
variant x trial loses its score, a failed render), per whole block (``block_failure_rate``: every
trial of one scenario x variant, a variant that crashes on a scenario) and can depend on
the true score (``mnar_ratio``: rows whose score is below ``mnar_below`` miss ``mnar_ratio``
times as often: missing not at random). A missing row is written without its headline
(``partial``) or, with probability ``empty_share``, as an empty object with only its keys.

The vectorised core, :func:`draw`, returns score and validity arrays of shape
(sets, scenarios, variants, trials, judges); the calibration suite draws hundreds of data sets
in one call. :func:`truth` computes the true values exactly (normal CDF of every rounding
interval), with no simulation.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from scipy import stats as _sps

from workbench.common.errors import ConfigError, WorkbenchError

SUBSCORES: tuple[str, ...] = ("correctness", "completeness", "depth", "citations", "honesty")
SUBSCORE_SD = 0.7
#: the row key of an item's answer length in characters (models with ``length_slopes``)
LENGTH_KEY = "answer_chars"


def _config_reads_length() -> bool:
    """Whether the config takes ``length.field`` (the per-judge slopes on an answer length):
    only then does config.yaml name ``answer_chars`` (an older config would refuse the key)."""
    from workbench.common import config

    return "field" in getattr(config, "OPTIONAL", {}).get(("length",), {})


@dataclass(frozen=True)
class Model:
    """The generating model. Effects are in rubric points on the latent scale."""

    scenarios: int = 9
    variants: tuple[str, ...] = ("baseline", "treatment")
    variant_effects: tuple[float, ...] = (0.0, 0.0)
    judges: tuple[str, ...] = ("judge-a", "judge-b")
    judge_offsets: tuple[float, ...] = (0.0, 0.0)
    judge_offset_sd: float = 0.0
    trials: int = 3
    mu: float = 6.0
    scenario_sd: float = 1.0
    variant_scenario_sd: float = 0.0
    item_sd: float = 0.6
    noise_sd: float = 0.8
    rubric_min: int = 1
    rubric_max: int = 10
    #: row-level missing rate per judge, per variant: ``{judge: {variant: rate}}`` (or a
    #: number for every cell); 0 when absent
    missing_rates: Any = 0.0
    item_failure_rate: float = 0.0
    #: whole-block failures: every trial and judge of one (scenario, variant) loses its score at
    #: this rate, independently of the variant (a variant that crashes on a scenario)
    block_failure_rate: float = 0.0
    #: unequal cluster sizes: each scenario runs a number of trials drawn uniformly from
    #: ``trials_min`` .. ``trials`` (None: every scenario runs ``trials``); the trials it did
    #: not run are not in the design (no row, not planned)
    trials_min: int | None = None
    #: sd of a scenario effect on the logit of every row-level missing rate (rates that vary
    #: by scenario: some scenarios are harder to render or to judge)
    missing_scenario_sd: float = 0.0
    mnar_ratio: float = 1.0
    mnar_below: float = 5.0
    empty_share: float = 0.0
    malformed_lines: int = 0
    duplicates: int = 0
    conflicts: int = 0
    absent_planned: int = 0
    #: published scorecard: None (none), "valid_mean" or "zero_filled" (the silent-zero reducer)
    published: str | None = None
    #: claims: None, "observed" (the printed card's differences), or "zero" ("no difference")
    claims: str | None = None
    #: analysis config written beside the rows (a mapping of workbench config keys)
    analysis_config: dict[str, Any] = field(default_factory=dict)
    #: self-preference: the writer family of each variant ``{variant: family}`` (None: no
    #: writers; a variant not listed has no writer)
    writers: Any = None
    #: ``{judge: bonus}``: latent points added to a judge's score of a variant whose writer
    #: family is the judge's own (0 when absent)
    self_preference: Any = None
    #: ``{judge: family}``; a judge not listed: :func:`workbench.analysis.selfpref.default_family` of its name
    families: Any = None
    #: judge versus human: the share of items (scenario, variant, trial) a human labels
    #: (0: no human labels), written to ``human_labels.jsonl`` and named in ``config.yaml``
    human_rate: float = 0.0
    #: the human's noise sd around an item's latent truth (mu + variant effect + scenario,
    #: variant-by-scenario and item terms: no judge offset), rounded and clipped as a judge's
    human_noise_sd: float = 0.5
    #: the human's judge name (``human_judge:`` in config.yaml)
    human_judge: str = "human"
    #: length effect: ``{judge: slope}``, latent points per unit of log(answer length) added to
    #: the judge's score (a judge not listed: 0). Set (even all 0), every item (scenario,
    #: variant, trial) gets an answer of ``exp(N(length_log_mean, length_log_sd^2))`` characters
    #: (the output both judges read, independent of every other term), written to each row as
    #: ``answer_chars``; None: no lengths (and the same random stream as before)
    length_slopes: Any = None
    length_log_mean: float = 6.0
    length_log_sd: float = 0.5

    def __post_init__(self) -> None:
        problems = []
        if self.scenarios < 1 or self.trials < 1:
            problems.append("scenarios and trials must be >= 1")
        if len(self.variant_effects) != len(self.variants):
            problems.append("variant_effects needs one value per variant")
        if len(self.judge_offsets) != len(self.judges):
            problems.append("judge_offsets needs one value per judge")
        if len(set(self.variants)) != len(self.variants) or len(set(self.judges)) != len(self.judges):
            problems.append("variant and judge names must be distinct")
        for name in ("missing_scenario_sd", "judge_offset_sd", "scenario_sd", "variant_scenario_sd",
                     "item_sd", "noise_sd"):
            if getattr(self, name) < 0:
                problems.append(f"{name} must be >= 0")
        if self.trials_min is not None and not 1 <= self.trials_min <= self.trials:
            problems.append("trials_min must be in 1 .. trials")
        if self.human_noise_sd < 0:
            problems.append("human_noise_sd must be >= 0")
        if self.human_judge in self.judges:
            problems.append("human_judge must not be one of the judges")
        for name in ("item_failure_rate", "block_failure_rate", "empty_share", "human_rate"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                problems.append(f"{name} must be in [0, 1]")
        if self.mnar_ratio < 0:
            problems.append("mnar_ratio must be >= 0")
        if self.rubric_min >= self.rubric_max:
            problems.append("rubric_min must be below rubric_max")
        if self.published not in (None, "valid_mean", "zero_filled"):
            problems.append("published must be null, valid_mean or zero_filled")
        if self.claims not in (None, "observed", "zero"):
            problems.append("claims must be null, observed or zero")
        if self.length_log_sd < 0:
            problems.append("length_log_sd must be >= 0")
        for name, keys, what in (("writers", self.variants, "variant"), ("self_preference", self.judges, "judge"),
                                 ("families", self.judges, "judge"), ("length_slopes", self.judges, "judge")):
            spec = getattr(self, name)
            if spec is None:
                continue
            if not isinstance(spec, dict):
                problems.append(f"{name} must be a mapping {{{what}: ...}}")
            elif set(spec) - set(keys):
                problems.append(f"{name}: unknown {what}(s) {sorted(map(str, set(spec) - set(keys)))}")
        if isinstance(self.self_preference, dict):
            if self.writers is None:
                problems.append("self_preference needs writers (variant -> writer family)")
            if any(isinstance(b, bool) or not isinstance(b, int | float) for b in self.self_preference.values()):
                problems.append("self_preference values must be numbers")
        if isinstance(self.length_slopes, dict) and any(
                isinstance(b, bool) or not isinstance(b, int | float) for b in self.length_slopes.values()):
            problems.append("length_slopes values must be numbers")
        try:
            rates = self.rate_matrix()
            if np.any(rates < 0) or np.any(rates > 1):
                problems.append("missing_rates must be in [0, 1]")
        except (TypeError, ValueError, KeyError) as exc:
            problems.append(f"missing_rates: {exc}")
        if problems:
            raise ConfigError("synth model: " + "; ".join(problems))

    def rate_matrix(self) -> np.ndarray:
        """Row-level missing rate per (variant, judge), shape (V, J)."""
        r = self.missing_rates
        out = np.zeros((len(self.variants), len(self.judges)))
        if isinstance(r, int | float) and not isinstance(r, bool):
            out[:] = float(r)
            return out
        if not isinstance(r, dict):
            raise TypeError("expected a number or {judge: {variant: rate}}")
        for j, judge in enumerate(self.judges):
            spec = r.get(judge, 0.0)
            if isinstance(spec, int | float) and not isinstance(spec, bool):
                out[:, j] = float(spec)
                continue
            if not isinstance(spec, dict):
                raise TypeError(f"{judge}: expected a number or {{variant: rate}}")
            unknown = set(spec) - set(self.variants)
            if unknown:
                raise KeyError(f"{judge}: unknown variant(s) {sorted(unknown)}")
            for v, variant in enumerate(self.variants):
                out[v, j] = float(spec.get(variant, 0.0))
        unknown = set(r) - set(self.judges)
        if unknown:
            raise KeyError(f"unknown judge(s) {sorted(unknown)}")
        return out

    def judge_family(self, judge: str) -> str:
        """The judge's family: ``families`` or the default of :mod:`workbench.analysis.selfpref`."""
        from workbench.analysis.selfpref import default_family

        return str((self.families or {}).get(judge) or default_family(judge))

    def bonus_matrix(self) -> np.ndarray:
        """Self-preference bonus per (variant, judge), shape (V, J): the judge's
        ``self_preference`` where the variant's writer family is the judge's, else 0."""
        out = np.zeros((len(self.variants), len(self.judges)))
        if not self.writers or not self.self_preference:
            return out
        for j, judge in enumerate(self.judges):
            fam = self.judge_family(judge)
            for v, variant in enumerate(self.variants):
                if self.writers.get(variant) == fam:
                    out[v, j] = float(self.self_preference.get(judge, 0.0))
        return out

    def slope_vector(self) -> np.ndarray:
        """Planted length slope per judge, shape (J,): ``length_slopes`` or 0."""
        spec = self.length_slopes or {}
        return np.array([float(spec.get(j, 0.0)) for j in self.judges])

    def length_var(self) -> np.ndarray:
        """Per judge, the latent variance its length term adds: (slope * length_log_sd)^2
        (0 without ``length_slopes``)."""
        if self.length_slopes is None:
            return np.zeros(len(self.judges))
        return (self.slope_vector() * self.length_log_sd) ** 2

    @property
    def scenario_names(self) -> list[str]:
        width = len(str(self.scenarios))
        return [f"s{i + 1:0{width}d}" for i in range(self.scenarios)]


def model_from_mapping(data: dict[str, Any], base: Model | None = None) -> Model:
    """A :class:`Model` from YAML-style data (the knobs at top level or under ``synth:``)."""
    if "synth" in data and isinstance(data["synth"], dict):
        data = data["synth"]
    known = {f.name for f in fields(Model)}
    unknown = set(data) - known
    if unknown:
        raise ConfigError(f"synth config: unknown knob(s) {', '.join(sorted(unknown))}; "
                          f"known: {', '.join(sorted(known))}")
    kw = {}
    for k, v in data.items():
        kw[k] = tuple(v) if isinstance(v, list) else v
    try:
        return replace(base or Model(), **kw)
    except TypeError as exc:
        raise ConfigError(f"synth config: {exc}") from exc


# --------------------------------------------------------------------------- core draw


def draw(model: Model, rng: np.random.Generator, sets: int = 1) -> dict[str, np.ndarray]:
    """Draw ``sets`` data sets at once.

    Returns arrays of shape (sets, G, V, T, J): ``score`` (int, the score the judge gave;
    meaningful only where ``valid``), ``valid`` (bool), ``item_failed`` (bool: the whole item
    lost its scores); and ``latent`` (float); with ``length_slopes`` also ``log_length``,
    shape (sets, G, V, T), the log of the item's answer length in characters.
    """
    r, g, v, t, j = sets, model.scenarios, len(model.variants), model.trials, len(model.judges)
    shape = (r, g, v, t, j)
    ve = np.asarray(model.variant_effects, dtype=float)[None, None, :, None, None]
    jo = np.asarray(model.judge_offsets, dtype=float)[None, None, None, None, :]
    # the draws in the order of the sum (the stream is the one before the human's truth was kept)
    scen = rng.normal(0.0, 1.0, (r, g, 1, 1, 1)) * model.scenario_sd
    v_scen = rng.normal(0.0, 1.0, (r, g, v, 1, 1)) * model.variant_scenario_sd
    j_scen = rng.normal(0.0, 1.0, (r, g, 1, 1, j)) * model.judge_offset_sd
    item = rng.normal(0.0, 1.0, (r, g, v, t, 1)) * model.item_sd
    lat = (model.mu + ve + jo + model.bonus_matrix()[None, None, :, None, :]
           + scen + v_scen + j_scen + item
           + rng.normal(0.0, 1.0, shape) * model.noise_sd)
    log_len = None
    if model.length_slopes is not None:
        # drawn only when set (a model without lengths keeps its stream); centred, so a judge's
        # mean moves only through the variance the term adds (truth: length_var)
        log_len = model.length_log_mean + rng.normal(0.0, 1.0, (r, g, v, t)) * model.length_log_sd
        lat = lat + (log_len - model.length_log_mean)[..., None] * model.slope_vector()[None, None, None, None, :]
    # the latent truth of an item (what a human label measures): no judge term, no judge noise
    true_lat = (model.mu + ve + scen + v_scen + item)[..., 0]
    score = np.clip(np.rint(lat), model.rubric_min, model.rubric_max).astype(np.int64)
    rate = model.rate_matrix()[None, None, :, None, :]
    if model.missing_scenario_sd > 0:
        rate = _shift_logit(rate, rng.normal(0.0, model.missing_scenario_sd, (r, g, 1, 1, 1)))
    rate = np.where(score < model.mnar_below, np.minimum(1.0, rate * model.mnar_ratio), rate)
    row_missing = rng.random(shape) < rate
    item_failed = np.broadcast_to(rng.random((r, g, v, t, 1)) < model.item_failure_rate, shape)
    valid = ~(row_missing | item_failed)
    # the two knobs below draw only when set: a model without them draws the same stream as before
    if model.block_failure_rate > 0:
        block = np.broadcast_to(rng.random((r, g, v, 1, 1)) < model.block_failure_rate, shape)
        item_failed = item_failed | block
        valid = valid & ~block
    present = np.ones(shape, dtype=bool)
    if model.trials_min is not None and model.trials_min < t:
        runs = rng.integers(model.trials_min, t + 1, (r, g, 1, 1, 1))
        present = np.broadcast_to(np.arange(t)[None, None, None, :, None] < runs, shape).copy()
        valid = valid & present
    out = {"score": score, "valid": valid, "item_failed": np.array(item_failed), "latent": lat,
           "present": present, "true_latent": true_lat}
    if log_len is not None:
        out["log_length"] = log_len
    return out


def draw_human(model: Model, d: dict[str, np.ndarray], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The human's labels for the data sets of :func:`draw`: on each item in the design,
    labelled at ``human_rate`` (independently of every score: labels missing completely at
    random), score = clip(round(true latent + N(0, human_noise_sd))). Arrays of shape
    (sets, G, V, T): ``score`` (meaningful only where ``labelled``) and ``labelled``."""
    true_lat = d["true_latent"]
    labelled = (rng.random(true_lat.shape) < model.human_rate) & d["present"][..., 0]
    lat = true_lat + rng.normal(0.0, 1.0, true_lat.shape) * model.human_noise_sd
    score = np.clip(np.rint(lat), model.rubric_min, model.rubric_max).astype(np.int64)
    return {"score": score, "labelled": labelled}


# --------------------------------------------------------------------------- truth


def _shift_logit(rate: np.ndarray, shift: np.ndarray | float) -> np.ndarray:
    """logistic(logit(rate) + shift), with rates of exactly 0 or 1 left as they are."""
    r = np.asarray(rate, dtype=float)
    with np.errstate(divide="ignore"):
        lg = np.log(r) - np.log1p(-r)
    out = 1.0 / (1.0 + np.exp(-(lg + shift)))
    return np.where((r <= 0) | (r >= 1), r, out)


def _marginal_rate(rate: float, sd: float) -> float:
    """E[logistic(logit(rate) + N(0, sd^2))] by 64-point Gauss-Hermite quadrature."""
    if sd == 0 or rate <= 0 or rate >= 1:
        return float(rate)
    x, w = np.polynomial.hermite_e.hermegauss(64)
    return float(np.sum(w * _shift_logit(np.array(rate), sd * x)) / np.sum(w))


def _score_probs(mean: float, sd: float, lo: int, hi: int) -> np.ndarray:
    """P(clip(round(N(mean, sd^2))) == k) for k = lo..hi (round half to even is a null set)."""
    ks = np.arange(lo, hi + 1, dtype=float)
    if sd == 0:
        k = min(max(round(mean), lo), hi)
        return (ks == k).astype(float)
    upper = np.where(ks == hi, np.inf, ks + 0.5)
    lower = np.where(ks == lo, -np.inf, ks - 0.5)
    return _sps.norm.cdf((upper - mean) / sd) - _sps.norm.cdf((lower - mean) / sd)


def truth(model: Model) -> dict[str, Any]:
    """The true values of every estimand the workbench reports, computed exactly.

    Means are over the population of scenarios (what a clustered interval targets): the
    score of one judgment is clip(round(L)) with L normal, mean mu + variant effect + judge
    offset and variance the sum of the model's variances. ``missing_rates`` are the marginal
    probabilities that a judgment has no headline (row, item and score-dependent parts).
    """
    sd = math.sqrt(model.scenario_sd**2 + model.variant_scenario_sd**2 + model.judge_offset_sd**2
                   + model.item_sd**2 + model.noise_sd**2)
    lo, hi = model.rubric_min, model.rubric_max
    ks = np.arange(lo, hi + 1, dtype=float)
    rates = model.rate_matrix()
    bonus = model.bonus_matrix()
    cells = []
    mean = {}
    miss = {}
    # a judge's length term adds (slope * length_log_sd)^2 to its latent variance
    sd_j = np.sqrt(sd**2 + model.length_var())
    for vi, variant in enumerate(model.variants):
        for ji, judge in enumerate(model.judges):
            p = _score_probs(model.mu + model.variant_effects[vi] + model.judge_offsets[ji] + bonus[vi, ji],
                             float(sd_j[ji]), lo, hi)
            m = float(np.sum(ks * p))
            base_rate = rates[vi, ji]
            if model.mnar_ratio == 1.0:
                base_rate = _marginal_rate(base_rate, model.missing_scenario_sd)
            row_rate = np.where(ks < model.mnar_below, np.minimum(1.0, base_rate * model.mnar_ratio),
                                base_rate)
            r_row = float(np.sum(p * row_rate))
            r = 1.0 - (1.0 - model.block_failure_rate) * (1.0 - model.item_failure_rate) * (1.0 - r_row)
            # mean of the scores that are kept (differs from m only when missingness depends on them)
            keep = p * (1.0 - row_rate)
            valid_mean = float(np.sum(ks * keep) / keep.sum()) if keep.sum() > 0 else None
            mean[(variant, judge)] = m
            miss[(variant, judge)] = r
            cells.append({"variant": variant, "judge": judge, "mean": m, "valid_mean": valid_mean,
                          "missing_rate": r})
    pooled = [{"variant": variant, "mean": float(np.mean([mean[(variant, j)] for j in model.judges])),
               "missing_rate": float(np.mean([miss[(variant, j)] for j in model.judges]))}
              for variant in model.variants]
    pm = {c["variant"]: c["mean"] for c in pooled}
    offsets = []
    for a_i, ja in enumerate(model.judges):
        for jb in model.judges[a_i + 1:]:
            pair = sorted([ja, jb])
            offsets.append({"judge_a": pair[0], "judge_b": pair[1], "variant": None,
                            "offset": float(np.mean([mean[(v, pair[0])] - mean[(v, pair[1])]
                                                     for v in model.variants]))})
            for variant in model.variants:
                offsets.append({"judge_a": pair[0], "judge_b": pair[1], "variant": variant,
                                "offset": mean[(variant, pair[0])] - mean[(variant, pair[1])]})
    contrasts = []
    for a_i, a in enumerate(model.variants):
        for b in model.variants[a_i + 1:]:
            x, y = sorted([a, b])
            contrasts.append({"a": x, "b": y, "diff": pm[x] - pm[y],
                              "latent_diff": (model.variant_effects[model.variants.index(x)]
                                              - model.variant_effects[model.variants.index(y)])})
    return {"model": _model_dict(model), "score_sd_latent": sd, "cells": cells, "pooled": pooled,
            "judge_offsets": offsets, "contrasts": contrasts,
            "self_preference": _self_preference_truth(model, mean, bonus),
            "human": _human_truth(model, mean), "length": _length_truth(model, bonus, sd_j)}


def _length_truth(model: Model, bonus: np.ndarray, sd_j: np.ndarray) -> list[dict[str, Any]]:
    """Per judge (with ``length_slopes``): ``latent_slope`` (the planted slope) and ``slope``, the
    score-scale slope of the score on log(answer length) that the within-scenario regression
    targets. The latent L = m + b x + rest is jointly normal with x = log length, so by Stein's
    lemma cov(x, clip(round(L))) = b var(x) E[g'(L)], with E[g'(L)] the normal density at the
    rounding thresholds lo + 0.5 .. hi - 0.5: slope = b * mean over variants of
    sum_k phi((k + 0.5 - m_v) / sd) / sd (exact; variants weighted equally, as a balanced design
    weights them). ``per_doubling`` = slope * log 2."""
    if model.length_slopes is None:
        return []
    cuts = np.arange(model.rubric_min, model.rubric_max, dtype=float) + 0.5
    out = []
    for ji, judge in enumerate(model.judges):
        b = float(model.slope_vector()[ji])
        s = float(sd_j[ji])
        dens = [float(np.sum(_sps.norm.pdf((cuts - (model.mu + model.variant_effects[vi]
                                                     + model.judge_offsets[ji] + bonus[vi, ji])) / s)) / s)
                for vi in range(len(model.variants))]
        slope = b * float(np.mean(dens))
        out.append({"judge": judge, "latent_slope": b, "slope": slope, "per_doubling": slope * math.log(2)})
    return out


def _human_truth(model: Model, mean: dict[tuple[str, str], float]) -> list[dict[str, Any]]:
    """Per variant x judge (with ``human_rate`` > 0): ``human_mean``, the expected human label
    (score scale: clip(round(N(mu + variant effect, sd^2 + human_noise_sd^2))) with sd^2 the
    scenario, variant-by-scenario and item variances), the estimand of results.json
    ``human`` ``ppi_mean`` and ``human_mean``; ``latent_mean`` = mu + variant effect;
    ``judge_mean`` the judge's true mean (``cells``) and ``judge_bias`` = judge_mean - human_mean."""
    if model.human_rate <= 0:
        return []
    sd = math.sqrt(model.scenario_sd**2 + model.variant_scenario_sd**2 + model.item_sd**2
                   + model.human_noise_sd**2)
    ks = np.arange(model.rubric_min, model.rubric_max + 1, dtype=float)
    out = []
    for vi, variant in enumerate(model.variants):
        lat = model.mu + model.variant_effects[vi]
        hm = float(np.sum(ks * _score_probs(lat, sd, model.rubric_min, model.rubric_max)))
        for judge in model.judges:
            out.append({"variant": variant, "judge": judge, "human_mean": hm, "latent_mean": float(lat),
                        "judge_mean": mean[(variant, judge)], "judge_bias": mean[(variant, judge)] - hm})
    return out


def _self_preference_truth(model: Model, mean: dict[tuple[str, str], float], bonus: np.ndarray
                           ) -> list[dict[str, Any]]:
    """Per pair of judges of different families (sorted by name, a - b): the true
    difference-in-differences the estimator of :mod:`workbench.analysis.selfpref` targets, ``did``
    (score scale: mean over family-a variants of the true a - b offset minus the same over
    family-b variants) and ``latent_did`` (latent scale: the planted bonus_a + bonus_b when both
    families write). None when a family writes no variant."""
    if not model.writers:
        return []
    out = []
    for ja, jb in sorted(tuple(sorted(p)) for p in itertools.combinations(model.judges, 2)):
        fa, fb = model.judge_family(ja), model.judge_family(jb)
        if fa == fb:
            continue
        ia, ib = model.judges.index(ja), model.judges.index(jb)
        va = [v for v in model.variants if model.writers.get(v) == fa]
        vb = [v for v in model.variants if model.writers.get(v) == fb]
        if not va or not vb:
            out.append({"judge_a": ja, "judge_b": jb, "family_a": fa, "family_b": fb, "did": None,
                        "latent_did": None})
            continue
        gap = {v: float(bonus[vi, ia] - bonus[vi, ib]) for vi, v in enumerate(model.variants)}

        did = (float(np.mean([mean[(v, ja)] - mean[(v, jb)] for v in va]))
               - float(np.mean([mean[(v, ja)] - mean[(v, jb)] for v in vb])))
        out.append({"judge_a": ja, "judge_b": jb, "family_a": fa, "family_b": fb, "did": did,
                    "latent_did": float(np.mean([gap[v] for v in va]) - np.mean([gap[v] for v in vb])),
                    "bonus_a": float((model.self_preference or {}).get(ja, 0.0)),
                    "bonus_b": float((model.self_preference or {}).get(jb, 0.0))})
    return out


def _model_dict(model: Model) -> dict[str, Any]:
    d = asdict(model)
    for k, v in d.items():
        if isinstance(v, tuple):
            d[k] = list(v)
    return d


# --------------------------------------------------------------------------- files


def _fmt_mean(num: int, den: int) -> str:
    """num/den printed with 2 decimals, half up, from exact integers (no float rounding)."""
    from decimal import ROUND_HALF_UP, Decimal

    return str((Decimal(num) / Decimal(den)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def write(model: Model, out: str | Path, seed: int = 0) -> dict[str, Path]:
    """Draw one data set from ``model`` with ``seed`` and write every file into ``out``."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WorkbenchError(f"{out}: cannot create output directory: {exc.strerror or exc}") from exc
    rng = np.random.default_rng(seed)
    d = draw(model, rng, 1)
    score, valid = d["score"][0], d["valid"][0]
    lat = d["latent"][0]
    log_len = d["log_length"][0] if "log_length" in d else None
    in_design = d["present"][0]
    g_n, v_n, t_n, j_n = score.shape
    names = model.scenario_names
    sub_noise = rng.normal(0.0, SUBSCORE_SD, (*score.shape, len(SUBSCORES)))
    empty = rng.random(score.shape) < model.empty_share
    keys = [(gi, vi, ti, ji) for gi in range(g_n) for vi in range(v_n) for ti in range(t_n) for ji in range(j_n)
            if in_design[gi, vi, ti, ji]]
    absent = set()
    if model.absent_planned:
        pick = rng.choice(len(keys), size=min(model.absent_planned, len(keys)), replace=False)
        absent = {keys[i] for i in sorted(pick.tolist())}
    lines: list[str] = []
    records: dict[tuple[int, int, int, int], dict[str, Any]] = {}
    for key in keys:
        gi, vi, ti, ji = key
        rec: dict[str, Any] = {"scenario": names[gi], "variant": model.variants[vi], "trial": ti + 1,
                               "judge": model.judges[ji]}
        if valid[key] or not empty[key]:
            for s_i, s in enumerate(SUBSCORES):
                rec[s] = int(np.clip(np.rint(lat[key] + sub_noise[(*key, s_i)]), model.rubric_min,
                                     model.rubric_max))
            if valid[key]:
                rec["overall"] = int(score[key])
            rec["fabrication_flags"] = []
            rec["verdict"] = "synthetic"
            if log_len is not None:
                rec[LENGTH_KEY] = int(np.rint(math.exp(log_len[gi, vi, ti])))
        records[key] = rec
        if key not in absent:
            lines.append(json.dumps(rec))
    # ledger pathologies, placed at seeded positions
    extra_rng = np.random.default_rng([seed, 1])
    present = [k for k in keys if k not in absent]
    for _ in range(model.duplicates):
        k = present[int(extra_rng.integers(len(present)))]
        lines.append(json.dumps(records[k]))
    used: set[tuple[int, int, int, int]] = set()
    conflict_lines: list[tuple[tuple[int, int, int, int], dict[str, Any]]] = []
    for _ in range(model.conflicts):
        cand = [k for k in present if "overall" in records[k] and k not in used]
        if not cand:
            break
        k = cand[int(extra_rng.integers(len(cand)))]
        used.add(k)
        rec = dict(records[k])
        rec["overall"] = int(model.rubric_min if rec["overall"] != model.rubric_min else model.rubric_max)
        lines.append(json.dumps(rec))
        conflict_lines.append((k, rec))
    for i in range(model.malformed_lines):
        lines.append('{"scenario": "' + names[i % g_n] + '", "variant": ')
    (out / "judge_rows.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    paths = {"rows": out / "judge_rows.jsonl"}

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["scenario", "variant", "trial", "judge"])
    for gi, vi, ti, ji in keys:
        w.writerow([names[gi], model.variants[vi], ti + 1, model.judges[ji]])
    (out / "plan.csv").write_text(buf.getvalue(), encoding="utf-8")
    paths["plan"] = out / "plan.csv"

    tr = truth(model)
    tr["seed"] = int(seed)
    tr["files"] = {"rows": "judge_rows.jsonl", "plan": "plan.csv"}
    tr["planted"] = {"absent_planned": len(absent), "duplicates": model.duplicates,
                     "conflicts": len(used), "malformed_lines": model.malformed_lines}

    # printed card: per variant over the lines as a naive reducer reads them (an exact
    # duplicate once, a conflicting re-judgment with each of its lines)
    card = {}
    as_read = [(k, records[k]) for k in present] + conflict_lines
    for vi, variant in enumerate(model.variants):
        ks = [k for k, _ in as_read if k[1] == vi]
        vals = [rec["overall"] for k, rec in as_read if k[1] == vi and "overall" in rec]
        if model.published == "zero_filled":
            card[variant] = (sum(vals), len(ks))
        else:
            card[variant] = (sum(vals), len(vals))
    if model.published is not None:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["variant", "overall"])
        for variant in model.variants:
            s, n = card[variant]
            w.writerow([variant, _fmt_mean(s, n) if n else ""])
        (out / "published_scorecard.csv").write_text(buf.getvalue(), encoding="utf-8")
        paths["published"] = out / "published_scorecard.csv"
        tr["files"]["published"] = "published_scorecard.csv"
        tr["published_rule"] = model.published
    if model.claims is not None and len(model.variants) >= 2:
        claims = []
        base = model.variants[0]
        for variant in model.variants[1:]:
            if model.claims == "zero":
                claimed = 0.0
                name = f"{variant} is no different from {base}"
            else:
                sa, na = card[variant]
                sb, nb = card[base]
                claimed = float(_fmt_mean(sa, na)) - float(_fmt_mean(sb, nb)) if na and nb else 0.0
                claimed = round(claimed, 2)
                name = f"{variant} beats {base}" if claimed >= 0 else f"{base} beats {variant}"
            claims.append({"name": name, "field": "overall", "a": variant, "b": base, "claimed": claimed})
        (out / "claims.yaml").write_text(yaml.safe_dump(claims, sort_keys=False), encoding="utf-8")
        paths["claims"] = out / "claims.yaml"
        tr["files"]["claims"] = "claims.yaml"
    cfg: dict[str, Any] = {"rubric": {"min": model.rubric_min, "max": model.rubric_max}}
    if model.writers:
        # the writer of a variant is named by its family, and every judge's family is written out
        cfg["writer"] = {str(v): str(w) for v, w in model.writers.items()}
        cfg["families"] = {**{str(w): str(w) for w in model.writers.values()},
                           **{j: model.judge_family(j) for j in model.judges}}
    if model.human_rate > 0:
        hd = draw_human(model, d, np.random.default_rng([seed, 2]))
        hs, hl = hd["score"][0], hd["labelled"][0]
        human_lines = [json.dumps({"scenario": names[gi], "variant": model.variants[vi], "trial": ti + 1,
                                   "judge": model.human_judge, "overall": int(hs[gi, vi, ti])})
                       for gi in range(g_n) for vi in range(v_n) for ti in range(t_n) if hl[gi, vi, ti]]
        (out / "human_labels.jsonl").write_text("\n".join(human_lines) + "\n", encoding="utf-8")
        paths["human_labels"] = out / "human_labels.jsonl"
        tr["files"]["human_labels"] = "human_labels.jsonl"
        tr["planted"]["human_labels"] = len(human_lines)
        cfg["human_labels"] = "human_labels.jsonl"
        cfg["human_judge"] = model.human_judge
    if log_len is not None and _config_reads_length():
        cfg["length"] = {"field": LENGTH_KEY, "unit": "characters"}
    cfg.update(model.analysis_config)
    (out / "config.yaml").write_text(
        "# Analysis config written by `workbench synth` for this data set\n"
        + yaml.safe_dump(cfg, sort_keys=True), encoding="utf-8")
    paths["config"] = out / "config.yaml"
    tr["files"]["config"] = "config.yaml"
    (out / "truth.json").write_text(json.dumps(tr, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    paths["truth"] = out / "truth.json"
    return paths


# --------------------------------------------------------------------------- built-in scenarios

SCENARIOS: dict[str, Model] = {
    # complete data, no judge offset, a real variant effect
    "clean": Model(
        scenarios=9, variants=("baseline", "improved"), variant_effects=(0.0, 1.2),
        judges=("judge-a", "judge-b"), judge_offsets=(0.0, 0.0), trials=3, mu=5.5,
        published="valid_mean", claims="observed",
        analysis_config={"min_valid_n": 20, "min_clusters": 3,
                         "pass": {"threshold": 5, "gate": 0.2, "k": 3}},
    ),
    # the post-mortem: judge-dependent missingness varying by variant, a zero-filled card and
    # a headline built on it; the preregistered minimum sits above the worst cell
    "silent_zero": Model(
        scenarios=12, variants=("stepwise", "single_pass", "freeform"), variant_effects=(0.0, 0.1, -0.1),
        judges=("claude", "glm"), judge_offsets=(0.0, 0.1), trials=3, mu=8.0, scenario_sd=0.6,
        missing_rates={"claude": {"stepwise": 0.30, "single_pass": 0.18, "freeform": 0.24},
                       "glm": {"stepwise": 0.14, "single_pass": 0.08, "freeform": 0.11}},
        empty_share=0.3, malformed_lines=2, duplicates=3, absent_planned=4,
        published="zero_filled", claims="observed",
        analysis_config={"min_valid_n": 60, "min_clusters": 3},
    ),
    # MCAR whole-item failures (failed renders) and no effects at all
    "item_failures": Model(
        scenarios=9, variants=("baseline", "treatment"), variant_effects=(0.0, 0.0),
        judges=("judge-a", "judge-b"), judge_offsets=(0.0, 0.0), trials=3, mu=6.0,
        item_failure_rate=0.2, claims="zero",
        analysis_config={"min_valid_n": 10, "min_clusters": 3, "equivalence_margin": 1.0},
    ),
    # the judge diagnostics: three judges of three families, two of which write the outputs;
    # anthropic/judge prefers its own family's writing (+0.5), is lenient (+0.8 against a human's
    # truth) and rewards length (0.8 per log character); openai/judge is unbiased on all three;
    # google/judge (its family writes nothing) is the neutral reference; a human labels 25 %
    "judge_biases": Model(
        scenarios=30, variants=("claude_v", "gpt_v", "claude_v2", "gpt_v2"), variant_effects=(0.0, 0.3, -0.2, 0.1),
        judges=("anthropic/judge", "openai/judge", "google/judge"), judge_offsets=(0.8, 0.0, -0.2), trials=3,
        mu=5.5, missing_rates=0.1,
        writers={"claude_v": "anthropic", "gpt_v": "openai", "claude_v2": "anthropic", "gpt_v2": "openai"},
        self_preference={"anthropic/judge": 0.5}, length_slopes={"anthropic/judge": 0.8}, human_rate=0.25,
        analysis_config={"min_valid_n": 20, "min_clusters": 3},
    ),
    # the post-mortem's first pass: each judge scored only the other family's outputs
    # (crosswise), so self-preference and judge severity are confounded
    "crosswise": Model(
        scenarios=12, variants=("claude_v", "gpt_v"), variant_effects=(0.0, 0.0),
        judges=("anthropic/judge", "openai/judge"), judge_offsets=(0.3, 0.0), trials=3, mu=6.0,
        writers={"claude_v": "anthropic", "gpt_v": "openai"}, self_preference={"anthropic/judge": 0.5},
        missing_rates={"anthropic/judge": {"claude_v": 1.0, "gpt_v": 0.05},
                       "openai/judge": {"claude_v": 0.05, "gpt_v": 1.0}},
        analysis_config={"min_valid_n": 10, "min_clusters": 3},
    ),
}


def scenario(name: str) -> Model:
    """A built-in scenario's model by name."""
    if name not in SCENARIOS:
        raise ConfigError(f"unknown synth scenario {name!r}; built in: {', '.join(SCENARIOS)}")
    return SCENARIOS[name]


def load_model(path: str | None, scenario_name: str | None) -> Model:
    """The model for ``workbench synth``: a built-in scenario, then a YAML file's knobs."""
    base = scenario(scenario_name) if scenario_name else Model()
    if path is None:
        return base
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{path}: synth config file not found")
    try:
        data = yaml.safe_load(p.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read synth config: {str(exc).splitlines()[0]}") from exc
    if data is None:
        return base
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of synth knobs")
    try:
        return model_from_mapping(data, base)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
