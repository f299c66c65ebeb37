"""The judge diagnostics' calibration (:mod:`workbench.sim.calibrate_judges`) measures the
estimators results.json reports: on drawn data sets its vectorised cores give the numbers of
:func:`workbench.analysis.selfpref.self_preference`, :func:`workbench.analysis.length.answer_slope_records` and
:func:`workbench.analysis.human.human_section` (the pipeline's functions on a row table of the same
draw), and its truths are the planted ones. The bands themselves are asserted by the slow
``tests/test_calibration.py``."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from workbench import load_config
from workbench.analysis import human, length, selfpref
from workbench.sim import calibrate, synth
from workbench.sim import calibrate_judges as cj


def _frame(m: synth.Model, d: dict[str, np.ndarray], h: dict[str, np.ndarray], k: int) -> pl.DataFrame:
    """Data set ``k`` of a draw as the pipeline's valid rows: judges' rows with their answer length
    and the human's labels as rows of judge ``human``."""
    score, valid = d["score"][k], d["valid"][k]
    g, v, t, j = score.shape
    idx = np.indices((g, v, t, j)).reshape(4, -1)
    hidx = np.indices((g, v, t)).reshape(3, -1)
    keep, hkeep = valid.reshape(-1), h["labelled"][k].reshape(-1)
    names = np.array(m.scenario_names, dtype=object)
    variants = np.array(m.variants, dtype=object)
    chars = np.exp(d["log_length"][k])
    return pl.DataFrame({
        "bucket": "valid",
        "scenario": np.concatenate([names[idx[0]][keep], names[hidx[0]][hkeep]]).tolist(),
        "variant": np.concatenate([variants[idx[1]][keep], variants[hidx[1]][hkeep]]).tolist(),
        "trial": np.concatenate([(idx[2] + 1)[keep], (hidx[2] + 1)[hkeep]]).astype(str).tolist(),
        "judge": np.array(m.judges, dtype=object)[idx[3]][keep].tolist() + ["human"] * int(hkeep.sum()),
        "overall": np.concatenate([score.reshape(-1)[keep], h["score"][k].reshape(-1)[hkeep]]).astype(float),
        length.LENGTH_COLUMN: np.concatenate([chars[idx[0], idx[1], idx[2]][keep],
                                              chars.reshape(-1)[hkeep]]).astype(float),
    })


@pytest.fixture(scope="module")
def drawn() -> tuple[synth.Model, dict[str, np.ndarray], dict[str, np.ndarray]]:
    m = cj.judge_model(9, "block", "varying")
    rng = np.random.default_rng(5)
    d = synth.draw(m, rng, 3)
    return m, d, synth.draw_human(m, d, rng)


def _cfg():
    return load_config(overrides={
        "scores": {"overall": "overall"}, "writer": cj.WRITERS,
        "families": {cj.JA: "anthropic", cj.JB: "openai", cj.JR: "google"},
        "length": {"field": "answer_chars", "unit": "characters"}})


@pytest.mark.parametrize("k", [0, 1, 2])
def test_the_vectorised_cores_give_the_pipelines_numbers(drawn, k: int) -> None:
    m, d, h = drawn
    cfg = _cfg()
    df = _frame(m, d, h, k)
    s, ok = d["score"][k], d["valid"][k]
    own_a = np.array([cj.WRITERS[v] == "anthropic" for v in m.variants])
    sec = selfpref.self_preference(df.filter(pl.col("judge") != "human"), cfg)
    (pair,) = [p for p in sec["pairs"] if {p["judge_a"], p["judge_b"]} == {cj.JA, cj.JB}]
    r = cj.did(s, ok, 0, 1, own_a if pair["judge_a"] == cj.JA else ~own_a)
    assert r is not None and pair["estimate"] == pytest.approx(r.estimate, abs=1e-12)
    assert (pair["ci_low"], pair["ci_high"], pair["p"]) == pytest.approx((r.ci_low, r.ci_high, r.p_value), abs=1e-12)
    for j, own in ((cj.JA, own_a), (cj.JB, ~own_a)):
        (rec,) = [x for x in sec["judges"] if x["judge"] == j and x["reference"] == cj.JR]
        r = cj.did(s, ok, m.judges.index(j), m.judges.index(cj.JR), own)
        assert (rec["estimate"], rec["ci_low"], rec["ci_high"], rec["p"]) == pytest.approx(
            (r.estimate, r.ci_low, r.ci_high, r.p_value), abs=1e-12)
    spec = length.answer_spec(cfg)
    assert spec is not None
    recs, _ = length.answer_slope_records(df.filter(pl.col("judge") != "human"), cfg, spec)
    for j in (cj.JA, cj.JB):
        (rec,) = [x for x in recs if x["judge"] == j and x["variant"] is None]
        b, se, q, g = cj.length_slope(s, ok, d["log_length"][k], m.judges.index(j))
        assert (rec["slope"], rec["se"], rec["ci_low"], rec["clusters"]) == pytest.approx((b, se, b - q * se, g),
                                                                                          rel=1e-9)
    hs = human.human_section(df, cfg)
    (rec,) = [x for x in hs["records"] if x["judge"] == cj.JA and x["variant"] == m.variants[0]]
    pp, jo, ho = cj.ppi(s, ok, h["score"][k], h["labelled"][k], 0, 0)
    assert (rec["ppi_mean"], rec["ppi_ci_low"], rec["ppi_ci_high"]) == pytest.approx(
        (pp.estimate, pp.ci_low, pp.ci_high), abs=1e-12)
    assert (rec["judge_mean"], rec["judge_ci_low"], rec["human_mean"], rec["human_ci_high"]) == pytest.approx(
        (jo.estimate, jo.ci_low, ho.estimate, ho.ci_high), abs=1e-12)


def test_the_truths_are_the_planted_effects() -> None:
    m = cj.judge_model(9, "row", "constant")
    tr = synth.truth(m)
    # own-family preference of the biased judge against the neutral reference: +0.5 latent, a
    # little less on the score scale (rounding and clipping); the unbiased judge's is 0 but for the
    # clipping of two judges with different offsets on variants of different quality (1e-5)
    assert 0.45 < cj.own_family_truth(m, tr, cj.JA, cj.JR) < 0.5
    assert abs(cj.own_family_truth(m, tr, cj.JB, cj.JR)) < 1e-4
    null = synth.truth(cj.judge_model(9, "row", "constant", planted=False))
    (p,) = [t for t in null["self_preference"] if {t["judge_a"], t["judge_b"]} == {cj.JA, cj.JB}]
    assert abs(p["did"]) < 2e-3  # clipping of judges with different offsets, not a preference
    assert {t["judge"]: t["latent_slope"] for t in tr["length"]} == {cj.JA: 0.8, cj.JB: 0.0, cj.JR: 0.0}


def test_rows_follow_the_calibration_schema_and_bands() -> None:
    rows = cj.run_point(5, "item", "constant", sets=200, seed=calibrate.SEED)
    assert [r["method"] for r in rows] == list(cj.METHODS)
    cols = {"scenarios", "missing", "offset", "method", "kind", "what", "status", "headline", "sets",
            "undefined", "rate", "mcse", "band_low", "band_high", "in_band", "note"}
    for r in rows:
        assert set(r) == cols
        assert r["sets"] + r["undefined"] == 200
        assert r["mcse"] == pytest.approx(math.sqrt(r["rate"] * (1 - r["rate"]) / r["sets"]))
        if r["kind"] == "power":
            assert (r["band_low"], r["band_high"], r["in_band"]) == (None, None, None)
    by = {r["method"]: r for r in rows}
    # the planted effects are detected more often than the nulls are rejected
    assert by["length_slope_power"]["rate"] > 3 * by["length_slope_fe_cluster_t_p"]["rate"]
    assert by["ppi_judge_only"]["rate"] < 0.8 < by["ppi_cr2_bm"]["rate"]
    assert set(cj.METHODS) <= set(calibrate.METHODS)
