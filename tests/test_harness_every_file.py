"""Every shared real judge log: the harness column equals what the harness itself prints.

One case per data file under ``../shared/realdata/native/`` (or per file group the harness reads
together: penfever's two files share one judge folder, which show_result.py reads at once). Each
case runs the shipped preset on the file(s) and compares EVERY harness record with the harness's
own figure, computed here without the workbench: ``EXPECTED`` of the folder's reference.py (read
with ``ast``), the published file (leaderboard CSV, score.json, a log's ``results``), or a small
standard-library re-computation that follows the harness's code (tolerance 1e-9; counts exact).
The set of (variant, figure) records must be exactly the set the harness prints: no model
missing, none extra. Where the harness prints nothing (WildBench's file-name filter) the record
has no value and its note says why.

Files that are no judge log (task lists, published tables, AlpacaEval's GLM weights) are
listed in ``ROLES`` with what they are used for; a test checks that every file under native/
is either a case's input or has a role, so a file added to shared/ cannot go unchecked.
"""

from __future__ import annotations

import csv
import json
import math
import zipfile
from pathlib import Path
from typing import Any

import pytest
from test_real_data import FAST, NATIVE, expected, require_real_data

from workbench.common.config import load_config
from workbench.document import pipeline


@pytest.fixture(autouse=True)
def _real_data() -> None:
    require_real_data()


TOL = 1e-9
MT = "fastchat/llm_judge/data/mt_bench/model_judgment"
AE = "tatsu-lab__alpaca_eval/results/{}/weighted_alpaca_eval_gpt4_turbo/annotations.json"
AE_CSV = ("tatsu-lab__alpaca_eval/src/alpaca_eval/leaderboards/data_AlpacaEval_2/"
          "weighted_alpaca_eval_gpt4_turbo_leaderboard.csv")
WB = "allenai__WildBench/eval_results/v2.0625/score.v2/eval=gpt-4o-2024-05-13/{}.json"
V01_Q = "zeppombal__arena-hard-auto/data/arena-hard-v0.1/question.jsonl"
V20_Q = "tiaan720__arena-hard-auto/data/arena-hard-v2.0/question.jsonl"
INSPECT = "UKGovernmentBEIS__inspect_ai/tests"
VITALS = "tidyverse__vitals/vignettes"

# case id -> (preset, inputs relative to native/, plan: None or a task list relative to native/)
CASES: dict[str, tuple[str, list[str], str | None]] = {
    "lm-sys pair": ("mt-bench-pair",
                    ["lm-sys__FastChat/fastchat/llm_judge/data/skycamp/model_judgment/gpt-4_pair.jsonl"], None),
    "lesnikow pair": ("mt-bench-pair", [f"lesnikow__fast-chat/{MT}/gpt-4-turbo_pair.jsonl"], None),
    "wgm20 single": ("mt-bench", [f"wgm20__FastChat/{MT}/gpt-4_single.jsonl"], None),
    "dreaming-panda single": ("mt-bench", [f"dreaming-panda__MTBench/{MT}/gpt-4_single-origin.jsonl"], None),
    "jxiw single": ("mt-bench", [f"jxiw__FastChat/{MT}/gpt-4_single.jsonl"], None),
    **{f"alpaca {m}": ("alpaca-eval", [AE.format(m)], None) for m in ("text_davinci_001", "minotaur-13b", "phi-2")},
    **{f"wildbench {m}": ("wildbench", [WB.format(m)], None)
       for m in ("reka-core-20240501", "reka-flash-20240226", "Phi-3-mini-128k-instruct")},
    "zeppombal v0.1": ("arena-hard", ["zeppombal__arena-hard-auto/data/arena-hard-v0.1/model_judgment/"
                                      "gpt-3.5-turbo-0125/Nexusflow__Athene-V2-Chat.jsonl"], V01_Q),
    "penfever v0.1 (one judge folder)": ("arena-hard", [
        "penfever__arena-hard-auto/data/arena-hard-v0.1/model_judgment/DeepSeek-R1-Distill-Llama-70B/bagel-8b-v1.0.jsonl",
        "penfever__arena-hard-auto/data/arena-hard-v0.1/model_judgment/DeepSeek-R1-Distill-Llama-70B/gpt-4-0314.jsonl"],
        V01_Q),
    "ServiceNow v0.1": ("arena-hard", ["ServiceNow__arena-hard-auto/data/arena-hard-v0.1/model_judgment/gpt-4-32k/"
                                       "nowllm_mistral_7b_24_03_28_sft_v1_150k_sharegpt_scale_round2.jsonl"], V01_Q),
    "tiaan720 v2.0": ("arena-hard", ["tiaan720__arena-hard-auto/data/arena-hard-v2.0/model_judgment/gemini-2.5-flash/"
                                     "gemini-2.0-flash-lite-001.jsonl"], V20_Q),
    **{f"vitals {p.split('/')[-1][:19]}": ("inspect", [f"{VITALS}/{p}"], None) for p in (
        "data/logs/2025-04-29T14-36-27-05-00_An-R-Eval_e4763d5da8fe03a6cf4a90.json",
        "data/logs/2025-04-29T14-37-06-05-00_An-R-Eval_e4763d5da8fe03a6cf4a90.json",
        "articles/data/solvers/logs/2025-04-29T14-37-34-05-00_An-R-Eval_1da30c33406baede90d819.json")},
    "inspect json": ("inspect", [f"{INSPECT}/analysis/test_logs/2025-05-12T20-28-26-04-00_security-guide.json"], None),
    "inspect eval": ("inspect", [f"{INSPECT}/log/test_list_logs/2024-11-05T13-32-37-05-00_input-task_"
                                 "hxs4q9azL3ySGkjJirypKZ.eval"], None),
}

# files that are no judge log: what each one is for
ROLES = {
    V01_Q: "task list (plan) of the three Arena-Hard v0.1 cases",
    V20_Q: "task list (plan) of the Arena-Hard v2.0 case",
    AE_CSV: "published figures of the alpaca cases",
    "allenai__WildBench/leaderboard/data_dir/score.json": "published figures of the wildbench cases",
    "jxiw__MambaInLlama/benchmark/mt_bench/README.md": "published table of the jxiw case (checked cell by cell "
                                                       "in test_real_data.py)",
    ("tatsu-lab__alpaca_eval/src/alpaca_eval/metrics/weights/weighted_alpaca_eval_gpt4_turbo/length_controlled_v1/"
     "baseline_gpt4_1106_preview.csv"): "the harness's fitted LC GLM weights; length_controlled_winrate needs "
                                         "instruction_difficulty.csv, which the harness downloads: not recomputable",
}

_RUNS: dict[str, pipeline.Analysis] = {}


def _run(case: str) -> pipeline.Analysis:
    if case not in _RUNS:
        preset, inputs, plan = CASES[case]
        _RUNS[case] = pipeline.run([str(NATIVE / p) for p in inputs], load_config(preset=preset, overrides=FAST),
                                   plan=None if plan is None else str(NATIVE / plan))
    return _RUNS[case]


def _jsonl(rel: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (NATIVE / rel).read_text("utf-8").splitlines() if x.strip()]


def _mean(xs: list[float]) -> float:
    return math.fsum(xs) / len(xs)


# ------------------------------------------------------------------ the harnesses, re-done here


def _fastchat_single(rel: str) -> dict[tuple[str, str], float]:
    """show_result.py display_result_single: drop score == -1; mean per (model, turn), per model."""
    rows = [r for r in _jsonl(rel) if r["score"] != -1]
    out = {}
    for m in {r["model"] for r in rows}:
        rs = [r for r in rows if r["model"] == m]
        for t in (1, 2):
            out[(m, f"turn {t}")] = _mean([r["score"] for r in rs if r["turn"] == t])
        out[(m, "average")] = _mean([r["score"] for r in rs])
    return out


def _single_expected(case: str) -> dict[tuple[str, str], Any]:
    rel = CASES[case][1][0]
    mine = _fastchat_single(rel)
    folder = rel.split("/")[0]
    if folder != "jxiw__FastChat":  # jxiw's reference.py checks the README table instead
        exp = {(m, {"turn1": "turn 1", "turn2": "turn 2", "average": "average"}[k]): v
               for m, figs in expected(folder).items() for k, v in figs.items()}
        assert set(exp) == set(mine) and all(math.isclose(mine[k], exp[k], abs_tol=TOL) for k in exp)
    return mine


def _pair_expected(case: str) -> dict[tuple[str, str], Any]:
    """pairwise-all (every model of the file): EXPECTED of reference.py."""
    folder = CASES[case][1][0].split("/")[0]
    return {(m, k): v for m, figs in expected(folder)["pairwise-all"].items() for k, v in figs.items()}


def _alpaca_expected(case: str) -> dict[tuple[str, str], Any]:
    """The published leaderboard line of the model; length_controlled_winrate, lc_standard_error
    and avg_length are not recomputable from the files (see ROLES and PROVENANCE.md)."""
    model = case.split(" ", 1)[1]
    with (NATIVE / AE_CSV).open(encoding="utf-8", newline="") as fh:
        pub = {r[""]: r for r in csv.DictReader(fh)}[model]
    out: dict[tuple[str, str], Any] = {(model, k): float(pub[k]) for k in ("win_rate", "standard_error",
                                                                         "discrete_win_rate")}
    out.update({(model, k): int(pub[k]) for k in ("n_wins", "n_wins_base", "n_draws", "n_total")})
    return out


def _wildbench_expected(case: str) -> dict[tuple[str, str], Any]:
    """score.json's entry; a file the harness skips (line 86) prints nothing: None."""
    model = case.split(" ", 1)[1]
    pub = json.loads((NATIVE / "allenai__WildBench/leaderboard/data_dir/score.json").read_text("utf-8"))
    if model not in pub:
        assert any(s in model for s in ("128", "256", "384", "512", "640", "768", "896", "1024"))
        return {(model, k): None for k in ("score", "adjusted_score", "total")}
    return {(model, k): pub[model][k] for k in ("score", "adjusted_score", "total")}


def _arena_expected(case: str) -> dict[tuple[str, str], Any]:
    """EXPECTED per file (None: the baseline, 50 by construction), named as show_result.py
    prints it (v0.1 row["model"], v2.0 its last path part), plus the baseline's own line at 50."""
    inputs = CASES[case][1]
    folder = inputs[0].split("/")[0]
    exp = expected(folder)
    out: dict[tuple[str, str], Any] = {}
    baseline = "gpt-4-0314"
    for rel in inputs:
        rows = _jsonl(rel)
        (model,) = {r["model"] for r in rows}
        if "v2.0" in rel:
            model = model.split("/")[-1]
            (baseline,) = {r["baseline"] for r in rows}
            assert {r["category"] for r in rows} == {"hard_prompt"}
        value = exp[Path(rel).stem]
        out[(model, "score")] = 50.0 if value is None else value
    out[(baseline, "score")] = 50.0
    return out


def _inspect_log(rel: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    path = NATIVE / rel
    if path.suffix == ".eval":
        with zipfile.ZipFile(path) as z:
            header = json.loads(z.read("header.json"))
            return header, [json.loads(z.read(n)) for n in sorted(z.namelist()) if n.startswith("samples/")]
    d = json.loads(path.read_text("utf-8"))
    return d, d.get("samples") or []


def _inspect_expected(case: str) -> dict[tuple[str, str], Any]:
    """The log's own results; recomputed with the writer's rule (Python Inspect: C 1, P 0.5,
    I 0, mean and sd/sqrt(n); vitals: I<P<C as 0, 1, 2 over the observed maximum, x 100)."""
    rel = CASES[case][1][0]
    header, samples = _inspect_log(rel)
    (sc,) = header["results"]["scores"]
    vals = [s["scores"][sc["name"]]["value"] for s in samples if sc["name"] in (s.get("scores") or {})]
    printed = {k: m["value"] for k, m in sc["metrics"].items()}
    if rel.startswith("tidyverse"):
        num = [{"I": 0, "P": 1, "C": 2}[v] for v in vals]
        got = {"accuracy": 100 * _mean([v / max(num) for v in num])}
        assert set(printed) == {"accuracy"} and abs(got["accuracy"] - printed["accuracy"]) <= 5e-5
    else:
        x = [{"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}[v] for v in vals]
        m = _mean(x)
        se = 0.0 if len(x) < 2 else math.sqrt(math.fsum((v - m) ** 2 for v in x) / (len(x) - 1) / len(x))
        got = {"accuracy": m, "stderr": se}
        assert set(printed) == set(got) and all(abs(got[k] - printed[k]) <= 1e-12 for k in got)
    return {(header["eval"]["model"], k): v for k, v in got.items()}


def harness_prints(case: str) -> dict[tuple[str, str], Any]:
    """(model as the harness prints it, figure) -> value; None where it prints nothing."""
    preset = CASES[case][0]
    return {"mt-bench": _single_expected, "mt-bench-pair": _pair_expected, "alpaca-eval": _alpaca_expected,
            "wildbench": _wildbench_expected, "arena-hard": _arena_expected,
            "inspect": _inspect_expected}[preset](case)


def _printed_name(preset: str, variant: str) -> str:
    """The workbench keeps an Inspect log's run id on the variant ("model:run"); the log
    prints the model."""
    return variant.rsplit(":", 1)[0] if preset == "inspect" else variant


# ------------------------------------------------------------------ the checks


@pytest.mark.parametrize("case", list(CASES))
def test_every_harness_record_equals_what_the_harness_prints(case: str) -> None:
    a = _run(case)
    preset = CASES[case][0]
    figs = a.doc["harness"]["figures"]
    got = {(_printed_name(preset, f["variant"]), f["figure"]): f for f in figs}
    assert len(got) == len(figs), "one record per (model, figure)"
    want = harness_prints(case)
    assert set(got) == set(want), {"missing": set(want) - set(got), "extra": set(got) - set(want)}
    judges = {f["judge"] for f in figs}
    assert len(judges) == 1 and None not in judges, judges
    for key, value in want.items():
        f = got[key]
        if value is None:
            assert f["value"] is None and f["note"], (key, f)
            assert "skips this file" in f["note"] and "prints no figure" in f["note"], f["note"]
        elif isinstance(value, int) and not isinstance(value, bool) and not isinstance(f["value"], float):
            assert f["value"] == value, (key, f["value"], value)
        else:
            assert f["value"] is not None and math.isclose(f["value"], value, rel_tol=TOL, abs_tol=TOL), (
                key, f["value"], value)
        if "printed" in f:  # an Inspect log's own results: the record says it matches
            assert f["matches"], f


def test_every_shared_file_is_a_case_input_or_has_a_role() -> None:
    """All 26 data files (and the MambaInLlama README table) under native/ are covered."""
    every = {str(p.relative_to(NATIVE)) for p in NATIVE.rglob("*") if p.is_file()
             and p.name not in ("PROVENANCE.md", "reference.py") and p.parent != NATIVE}
    inputs = {p for _, ins, _ in CASES.values() for p in ins}
    assert inputs.isdisjoint(ROLES)
    assert every == inputs | set(ROLES), {"unchecked": every - inputs - set(ROLES),
                                          "gone": (inputs | set(ROLES)) - every}
    assert len(every) == 27 and len(inputs) == 21
