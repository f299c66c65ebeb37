"""Clusters apart from keys (config ``cluster:``, :mod:`workbench.ingest.clusters`).

The clustered numbers are checked against statsmodels (OLS with ``cov_type='cluster'``, CR1,
on question groups) and the joint bootstrap against a plain computation from the same
weights; the scenario key keeps pairing and duplicates.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from cr2_reference import dense_diff, dense_mean
from test_real_data import NATIVE, require_real_data

from workbench import stats
from workbench.cli import main as cli
from workbench.common.config import PRESETS, load_config
from workbench.common.errors import ConfigError, InputError
from workbench.document import pipeline
from workbench.reduce import sufficient as reduce

FAST = {"bootstrap": {"resamples": 400}, "min_valid_n": 1, "min_clusters": 1}


def _write(path: Path, rows: list[dict[str, Any]]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return str(path)


def _mt_rows() -> list[dict[str, Any]]:
    """Ten questions x two turns x two models; turn 2 follows turn 1 of its question (the
    correlation MT-Bench shows), model m2 a little lower."""
    rng = np.random.default_rng(7)
    out = []
    for q in range(81, 91):
        base = int(rng.integers(2, 9))
        for model, shift in (("m1", 0), ("m2", -1)):
            for turn in (1, 2):
                score = int(np.clip(base + shift + rng.integers(-1, 2), 1, 10))
                out.append({"question_id": q, "model": model, "judge": ["gpt-4", "single-v1"],
                            "turn": turn, "score": score, "judgment": "[[x]]", "user_prompt": "..."})
    return out


def _ols_cluster(y: np.ndarray, x: np.ndarray, groups: np.ndarray) -> Any:
    sm = pytest.importorskip("statsmodels.api")
    _, g = np.unique(groups, return_inverse=True)
    return sm.OLS(y, x).fit(cov_type="cluster", cov_kwds={"groups": g})


# --------------------------------------------------------------------------- config


def test_cluster_defaults_to_the_scenario_key_and_parses_paths() -> None:
    cfg = load_config()
    assert cfg.cluster is None and cfg.cluster_name == "scenario" and cfg.cluster_parts is None
    one = load_config(overrides={"cluster": "meta.group"})
    assert one.cluster == (("meta", "group"),) and one.cluster_name == "meta.group"
    # a cluster of its own fields is read as hidden extra fields
    assert one.extra_fields["__cluster0"] == ("meta", "group") and one.cluster_parts is None
    two = load_config(overrides={"cluster": ["a", "b[0]"]})
    assert two.cluster == (("a",), ("b", 0)) and two.cluster_name == "a+b[0]"
    mt = load_config(preset="mt-bench")
    assert mt.cluster == (("question_id",),) and mt.cluster_parts == (0,)
    assert not any(k.startswith("__cluster") for k in mt.extra_fields)  # read from the key
    assert load_config(preset="mt-bench", overrides={"cluster": None}).cluster is None
    # a scenario the file path sets is not the key's path: the cluster is read from the row
    by_path = load_config(overrides={"cluster": "scenario", "path_fields": r"(?P<scenario>[^/]+)\.jsonl$"})
    assert by_path.cluster_parts is None and by_path.extra_fields["__cluster0"] == ("scenario",)
    for bad, why in (([], "at least one path"), (7, "non-empty string"), (["a", "a"], "named twice")):
        with pytest.raises(ConfigError, match=why):
            load_config(overrides={"cluster": bad})
    with pytest.raises(ConfigError, match="reserved for the cluster"):
        load_config(overrides={"extra_fields": {"__cluster0": "x"}})


@pytest.mark.parametrize(("preset", "unit"), [
    ("mt-bench", "question_id"), ("mt-bench-pair", "question_id"), ("arena-hard", "question_id"),
    ("arena-hard-v1", "question_id"), ("wildbench", "session_id"), ("inspect", "task+sample_id"),
    ("alpaca-eval", "instruction")])
def test_every_preset_names_its_cluster(preset: str, unit: str) -> None:
    cfg = load_config(preset=preset)
    assert cfg.cluster_name == unit
    assert cfg.cluster_parts is not None  # a part of the scenario key: cannot disagree with it
    assert len(PRESETS) == 7


# --------------------------------------------------------------------------- numbers


def test_mt_bench_cell_contrast_and_paired_se_are_cr1_on_question_clusters(tmp_path: Path) -> None:
    rows = _mt_rows()
    f = _write(tmp_path / "mt_bench" / "model_judgment" / "gpt-4_single.jsonl", rows)
    a = pipeline.run([f], load_config(preset="mt-bench", overrides=FAST))
    card = {(r["variant"], r["judge"]): r for r in a.doc["scorecard"] if r["subset"] is None}
    y1 = np.array([r["score"] for r in rows if r["model"] == "m1"], dtype=float)
    q1 = np.array([r["question_id"] for r in rows if r["model"] == "m1"])
    fit = _ols_cluster(y1, np.ones((y1.size, 1)), q1)
    cell = card[("m1", None)]
    assert cell["cluster"] == "question_id" and cell["clusters"] == 10 and cell["valid_n"] == 20
    assert cell["se_clustered"] == pytest.approx(float(fit.bse[0]), rel=1e-12)
    t = stats._t_ppf(0.975, 9)
    assert cell["ci_low"] == pytest.approx(y1.mean() - t * float(fit.bse[0]), rel=1e-12)
    # the scenario key alone (the old preset): 20 clusters, CR1 on (question, turn) groups
    old = pipeline.run([f], load_config(preset="mt-bench", overrides={**FAST, "cluster": None}))
    old_cell = next(r for r in old.doc["scorecard"] if r["variant"] == "m1" and r["judge"] is None
                    and r["subset"] is None)
    t1 = np.array([r["turn"] for r in rows if r["model"] == "m1"])
    fit_old = _ols_cluster(y1, np.ones((y1.size, 1)), q1 * 10 + t1)
    assert old_cell["clusters"] == 20 and old_cell["cluster"] == "scenario"
    assert old_cell["se_clustered"] == pytest.approx(float(fit_old.bse[0]), rel=1e-12)
    # unpaired contrast m1 - m2: OLS on [1, is_m1] clustered by question (K = 2)
    c = next(r for r in a.doc["contrasts"] if r["subset"] is None)
    assert (c["a"], c["b"]) == ("m1", "m2")
    y = np.array([r["score"] for r in rows], dtype=float)
    isa = np.array([r["model"] == "m1" for r in rows], dtype=float)
    q = np.array([r["question_id"] for r in rows])
    fit_c = _ols_cluster(y, np.column_stack([np.ones_like(y), isa]), q)
    assert c["diff"] == pytest.approx(float(fit_c.params[1]), rel=1e-12)
    assert c["cr1_se"] == pytest.approx(float(fit_c.bse[1]), rel=1e-12)
    assert c["cluster"] == "question_id" and c["clusters"] == 10 and c["cr1_df"] == 9
    # the headline: CR2 with Bell-McCaffrey df on question clusters (the dense P&T reference)
    qa = np.array([r["question_id"] for r in rows if r["model"] == "m2"])
    ref = dense_diff(y1, q1, np.array([r["score"] for r in rows if r["model"] == "m2"], dtype=float), qa)
    assert (c["se"], c["df"]) == (pytest.approx(ref["se"], rel=1e-10), pytest.approx(ref["df"], rel=1e-10))
    # paired: one matched unit per (question, turn): d clustered by question
    by = {(r["model"], r["question_id"], r["turn"]): r["score"] for r in rows}
    keys = sorted({(qq, tt) for _, qq, tt in by})
    d = np.array([by[("m1", qq, tt)] - by[("m2", qq, tt)] for qq, tt in keys], dtype=float)
    fit_p = _ols_cluster(d, np.ones((d.size, 1)), np.array([qq for qq, _ in keys]))
    half = (c["paired_ci_high"] - c["paired_ci_low"]) / 2
    assert c["matched"] == 20 and c["paired_clusters"] == 10
    assert (c["paired_cr1_ci_high"] - c["paired_cr1_ci_low"]) / 2 == pytest.approx(t * float(fit_p.bse[0]), rel=1e-10)
    ref_p = dense_mean(d, np.array([qq for qq, _ in keys]))
    assert half == pytest.approx(ref_p["ci_high"] - ref_p["estimate"], rel=1e-10)
    # the joint bootstrap draws question weights: the cell's interval from the same weights
    boot = a.doc["bootstrap"]
    assert (boot["clusters"], boot["scenarios"], boot["cluster"]) == (10, 20, "question_id")
    assert a.doc["clustering"] == {"unit": "question_id", "definition": "question_id",
                                   "from": "parts of the scenario key", "scenarios": 20, "clusters": 10}
    cfg = a.config
    b = reduce.bootstrap_resamples(cfg, 10)
    w = stats.joint_bootstrap_weights(10, 0, b, stats.derive_seed(cfg.seed, "joint_bootstrap")).astype(float)
    labels = sorted({str(x) for x in q1})  # the sorted cluster index
    s = np.array([y1[q1.astype(str) == lab].sum() for lab in labels])
    n = np.array([(q1.astype(str) == lab).sum() for lab in labels], dtype=float)
    lo, hi, _ = stats.joint_percentile((w @ s) / (w @ n), 10, cfg.confidence)
    assert (cell["boot_low"], cell["boot_high"]) == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12))
    # rows carry their cluster; duplicates and pairing stay on the scenario
    r = a.rows.filter(a.rows["line"] == 2).row(0, named=True)
    assert (r["scenario"], r["cluster"]) == ("81:2", "81")


def test_a_cluster_of_its_own_field_and_planned_rows(tmp_path: Path) -> None:
    rows = []
    for i in range(6):
        for v in ("a", "b"):
            rows.append({"scenario": f"s{i}", "group": f"g{i // 2}", "variant": v, "trial": 1,
                         "judge": "j", "overall": float((i * 3 + (v == "a")) % 10 + 1)})
    rows = [r for r in rows if not (r["scenario"] == "s5" and r["variant"] == "b")]  # planned, absent
    f = _write(tmp_path / "rows.jsonl", rows)
    cfg = load_config(overrides={**FAST, "cluster": "group", "scores": ["overall"], "flags": None,
                                 "verdict": None})
    a = pipeline.run([f], cfg, plan="complete")
    planned = a.rows.filter(a.rows["bucket"] == "missing_planned").row(0, named=True)
    assert (planned["scenario"], planned["cluster"]) == ("s5", "g2")
    assert not any(c.startswith("x___cluster") for c in a.rows.columns)
    cell = next(r for r in a.doc["scorecard"] if r["variant"] == "a" and r["judge"] is None)
    y = np.array([r["overall"] for r in rows if r["variant"] == "a"])
    g = np.array([r["group"] for r in rows if r["variant"] == "a"])
    assert cell["clusters"] == 3 and cell["cluster"] == "group"
    assert cell["se_clustered"] == pytest.approx(float(_ols_cluster(y, np.ones((6, 1)), g).bse[0]), rel=1e-12)


def test_the_power_plan_counts_clusters_and_says_so(tmp_path: Path) -> None:
    """With ``cluster:`` set, the plan's G is the clusters (3 groups of 2 scenarios, 2 trials
    each), and its sentence counts them by name; without it, 6 scenarios."""
    rows = [{"scenario": f"s{i}", "group": f"g{i // 2}", "variant": v, "trial": t, "judge": "j",
             "overall": float((i * 3 + t * 5 + (v == "a")) % 10 + 1)}
            for i in range(6) for v in ("a", "b") for t in (1, 2)]
    f = _write(tmp_path / "rows.jsonl", rows)
    base = {**FAST, "scores": ["overall"], "flags": None, "verdict": None}
    named = pipeline.run([f], load_config(overrides={**base, "cluster": "group"})).doc["contrasts"][0]
    plain = pipeline.run([f], load_config(overrides=base)).doc["contrasts"][0]
    assert (named["clusters"], plain["clusters"]) == (3, 6)
    assert "group clusters" in named["power_statement"] and "scenarios" not in named["power_statement"]
    assert "scenarios" in plain["power_statement"]
    assert "clusters" not in plain["power_statement"]


def test_a_scenario_in_two_clusters_is_an_error_naming_file_line_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"scenario": "s1", "group": "g1", "variant": "a", "trial": 1, "judge": "j", "overall": 5},
            {"scenario": "s2", "group": "g1", "variant": "a", "trial": 1, "judge": "j", "overall": 6},
            {"scenario": "s1", "group": "g2", "variant": "b", "trial": 1, "judge": "j", "overall": 7}]
    f = _write(tmp_path / "rows.jsonl", rows)
    with pytest.raises(InputError, match=r"rows\.jsonl:3: field 'group': scenario 's1' is in cluster 'g2'"):
        pipeline.run([f], load_config(overrides={**FAST, "cluster": "group"}))
    cfg = tmp_path / "c.yaml"
    cfg.write_text("cluster: group\n", "utf-8")
    code = cli.main(["analyze", f, "--config", str(cfg), "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "rows.jsonl:3: field 'group'" in err and "one cluster" in err
    assert "rows.jsonl:1" in err  # where the other cluster was seen
    # a keyed line without its cluster field: named too
    rows[1].pop("group")
    f2 = _write(tmp_path / "rows2.jsonl", rows)
    with pytest.raises(InputError, match=r"rows2\.jsonl:2: field 'group': the cluster field is missing"):
        pipeline.run([f2], load_config(overrides={**FAST, "cluster": "group"}))


# --------------------------------------------------------------------------- real files


def test_mt_bench_native_cells_have_one_cluster_per_question() -> None:
    folder = NATIVE / "wgm20__FastChat"
    require_real_data(folder)
    f = folder / "fastchat" / "llm_judge" / "data" / "mt_bench" / "model_judgment" / "gpt-4_single.jsonl"
    a = pipeline.run([str(f)], load_config(preset="mt-bench", overrides={"bootstrap": {"resamples": 200}}))
    keyed = a.rows.filter(a.rows["bucket"] == "valid")
    assert keyed["scenario"].n_unique() == 160 and keyed["cluster"].n_unique() == 80
    per = keyed.group_by("cluster").agg(pl.col("scenario").n_unique().alias("k"))
    assert per["k"].to_list() == [2] * 80  # both turns of each question, one cluster
    cells = [r for r in a.doc["scorecard"] if r["judge"] is None and r["subset"] is None]
    assert cells and all(r["cluster"] == "question_id" and r["clusters"] <= 80 for r in cells)
    assert sum(r["clusters"] == 80 for r in cells) >= 4
    assert a.doc["bootstrap"]["clusters"] == 80 and a.doc["bootstrap"]["scenarios"] == 160
    assert all(c["clusters"] <= 80 and c["df"] <= 79 for c in a.doc["contrasts"])


def test_missingness_blocks_are_whole_clusters(tmp_path: Path) -> None:
    """The variant test's units are whole (cluster, variant) blocks: with MT-Bench's question
    cluster, the two turns of a question x model are one block (10 questions x 2 models = 20
    blocks, not 40), and a model that fails a whole question loses one block."""
    rows = _mt_rows()
    for r in rows:  # m2 fails both turns of questions 81 and 82; m1 turn 2 of question 90
        if (r["model"] == "m2" and r["question_id"] in (81, 82)) or (
                r["model"] == "m1" and r["question_id"] == 90 and r["turn"] == 2):
            r["score"] = -1
    f = _write(tmp_path / "mt_bench" / "model_judgment" / "gpt-4_single.jsonl", rows)
    tests = {t["factor"]: t for t in pipeline.run([f], load_config(preset="mt-bench", overrides=FAST))
             .doc["missingness_tests"]}
    v = tests["variant"]
    assert v["unit"] == "scenario_variant_block" and v["blocks"] == 20
    # the exact p by hand: 10 question blocks, labels swapped within a question; the table is
    # m1 [1 missing of 20], m2 [4 of 20]; chi-square as extreme or more for arrangements where
    # m2 holds its observed missing count 4 or 1 (the 3 informative questions: 2 x 2 + 1 x 1)
    missing = {81: (0, 2), 82: (0, 2), 90: (1, 0)}  # (m1, m2) missing per informative question
    import itertools

    def chi2(m1: int, m2: int) -> float:
        tab = np.array([[m1, 20 - m1], [m2, 20 - m2]], dtype=float)
        e = tab.sum(1, keepdims=True) * tab.sum(0, keepdims=True) / tab.sum()
        return float(((tab - e) ** 2 / e).sum())

    obs = chi2(1, 4)
    hits = 0
    for flips in itertools.product((0, 1), repeat=3):
        m1 = sum(p[f] for p, f in zip(missing.values(), flips, strict=True))
        hits += chi2(m1, 5 - m1) >= obs - 1e-9
    assert v["p_value"] == pytest.approx(hits / 8)
    # the scenario key alone: (question, turn) blocks
    old = {t["factor"]: t for t in pipeline.run(
        [f], load_config(preset="mt-bench", overrides={**FAST, "cluster": None})).doc["missingness_tests"]}
    assert old["variant"]["blocks"] == 40
