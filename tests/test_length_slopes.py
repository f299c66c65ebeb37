"""workbench.analysis.length beyond AlpacaEval: the slope of a judge's score on log(answer length), per
judge within scenario (scenario and variant fixed effects, CR1 clustered, t(G - 1)), wherever the
rows carry the answer (``length: {field, unit, extract}``). Checked against an independent
statsmodels OLS with dummies and cluster-robust SEs on constructed rows with a planted slope, an
Inspect log built here, and the shared FastChat / WildBench files (their answers read here with
the standard library, apart from workbench)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
import statsmodels.api as sm
from conftest import make_row_line
from scipy import stats as sps
from test_real_data import NATIVE, require_real_data

from workbench.analysis import length
from workbench.cli import main as cli
from workbench.common.config import load_config
from workbench.document import pipeline

FAST = {"bootstrap": {"resamples": 200}}
WGM = NATIVE / "wgm20__FastChat/fastchat/llm_judge/data/mt_bench/model_judgment/gpt-4_single.jsonl"
WB = NATIVE / "allenai__WildBench/eval_results/v2.0625/score.v2/eval=gpt-4o-2024-05-13"


def reference_slope(y: list[float], x: list[float], scen: list[str], var: list[str], cluster: list[str],
                    confidence: float = 0.95) -> tuple[float, float, float, float]:
    """(slope, se, ci_low, ci_high): statsmodels OLS of y on x with scenario and variant dummies,
    cluster-robust covariance (CR1: G/(G-1) (N-1)/(N-K)), t(G - 1) interval."""
    s_lev, v_lev = sorted(set(scen)), sorted(set(var))
    X = np.column_stack([np.asarray(x, float)]
                        + [[1.0 if s == a else 0.0 for s in scen] for a in s_lev]
                        + [[1.0 if v == a else 0.0 for v in var] for a in v_lev[1:]])
    groups = np.unique(np.asarray(cluster), return_inverse=True)[1]
    fit = sm.OLS(np.asarray(y, float), X).fit(cov_type="cluster", cov_kwds={"groups": groups})
    b, se = float(fit.params[0]), float(fit.bse[0])
    q = float(sps.t.ppf(1 - (1 - confidence) / 2, int(groups.max())))
    return b, se, b - q * se, b + q * se


def pooled(doc: dict[str, Any], judge: str) -> dict[str, Any]:
    recs = [r for r in doc["length"]["slopes"] if r["judge"] == judge and r["variant"] is None]
    assert len(recs) == 1, recs
    return recs[0]


# ------------------------------------------------------------------------ constructed rows


def planted_rows(seed: int = 5) -> tuple[list[str], list[dict[str, Any]]]:
    """30 scenarios x 3 variants x 2 judges; judge ``slopey`` adds 0.8 points per unit of log
    length, ``flat`` nothing. Plus: an empty answer, a row without the answer field, a row whose
    score is null (none of them in the slope; each counted where it belongs)."""
    rng = np.random.default_rng(seed)
    lines, truth = [], []
    s_eff = rng.normal(0, 0.6, 30)
    v_eff = {"a": 0.0, "b": 0.4, "c": -0.3}
    for i in range(30):
        for v, ve in v_eff.items():
            n = int(rng.integers(40, 900))
            for judge, beta in (("slopey", 0.8), ("flat", 0.0)):
                score = 3.0 + s_eff[i] + ve + beta * math.log(n) + rng.normal(0, 0.5)
                score = round(min(max(score, 1.0), 10.0), 6)
                lines.append(make_row_line(scenario=f"s{i:02d}", variant=v, judge=judge, overall=score,
                                           answer="x" * n))
                truth.append({"scenario": f"s{i:02d}", "variant": v, "judge": judge, "y": score, "len": n})
    lines.append(make_row_line(scenario="s00", variant="a", judge="slopey", trial=2, overall=5, answer=""))
    lines.append(make_row_line(scenario="s01", variant="a", judge="slopey", trial=2, overall=5))
    lines.append(make_row_line(scenario="s02", variant="a", judge="slopey", trial=2, overall=None, answer="abc"))
    return lines, truth


def test_planted_slope_recovered_and_equal_to_statsmodels(tmp_path: Path) -> None:
    lines, truth = planted_rows()
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    an = pipeline.run([str(path)], load_config(overrides={**FAST, "length": {"field": "answer"}}))
    doc = an.doc
    sec = doc["length"]
    assert an.frame("length_slopes").height == len(sec["slopes"]) > 0
    assert sec["why"] is None and sec["answer_length"]["unit"] == "characters"
    # every valid row in exactly one count: 180 with a length, 1 empty, 1 without the field
    assert (sec["answer_length"]["valid_rows"], sec["answer_length"]["with_length"],
            sec["answer_length"]["zero_length"], sec["answer_length"]["no_length"]) == (182, 180, 1, 1)
    for judge, beta in (("slopey", 0.8), ("flat", 0.0)):
        t = [r for r in truth if r["judge"] == judge]
        b, se, lo, hi = reference_slope([r["y"] for r in t], [math.log(r["len"]) for r in t],
                                        [r["scenario"] for r in t], [r["variant"] for r in t],
                                        [r["scenario"] for r in t])
        rec = pooled(doc, judge)
        assert rec["n"] == 90 and rec["clusters"] == 30 and rec["ci_method"] == "ols_fe_cluster_t"
        assert rec["slope"] == pytest.approx(b, rel=1e-9) and rec["se"] == pytest.approx(se, rel=1e-9)
        assert (rec["ci_low"], rec["ci_high"]) == pytest.approx((lo, hi), rel=1e-9)
        assert rec["per_doubling"] == pytest.approx(b * math.log(2), rel=1e-12)
        assert lo < beta < hi, (judge, lo, hi)
    slopey = pooled(doc, "slopey")
    assert (slopey["rows"], slopey["zero_length"], slopey["no_length"]) == (92, 1, 1)
    assert pooled(doc, "flat")["ci_low"] < 0 < pooled(doc, "flat")["ci_high"]
    assert pooled(doc, "slopey")["ci_low"] > 0.3
    # per judge x variant, across scenarios: statsmodels OLS with an intercept, clustered
    t = [r for r in truth if r["judge"] == "slopey" and r["variant"] == "b"]
    X = np.column_stack([[math.log(r["len"]) for r in t], np.ones(len(t))])
    g = np.unique([r["scenario"] for r in t], return_inverse=True)[1]
    ref = sm.OLS([r["y"] for r in t], X).fit(cov_type="cluster", cov_kwds={"groups": g})
    rec = [r for r in sec["slopes"] if r["judge"] == "slopey" and r["variant"] == "b"][0]
    assert rec["slope"] == pytest.approx(float(ref.params[0]), rel=1e-9)
    assert rec["se"] == pytest.approx(float(ref.bse[0]), rel=1e-9)
    # the board gains no LC column from a slope, and the text names the judges
    assert all("lc_win_rate" not in row for row in doc["board"][0]["rows"])
    text = "\n".join(length.slope_lines(sec, doc["value_unit"]))
    assert "Length, slopey" in text and "Length, flat" in text and "90 of 92 valid rows" in text


def test_a_length_field_as_a_number_of_tokens(tmp_path: Path) -> None:
    """``unit: tokens``: the number is the length; the same slope as the text of that many characters."""
    lines, truth = planted_rows(8)
    num = [json.dumps({**json.loads(ln), "ntok": len(json.loads(ln).get("answer", "")) or None})
           for ln in lines[:-3]]
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(num) + "\n", "utf-8")
    doc = pipeline.run([str(path)], load_config(overrides={**FAST, "length": {"field": "ntok", "unit": "tokens"}})).doc
    t = [r for r in truth if r["judge"] == "slopey"]
    b, se, _, _ = reference_slope([r["y"] for r in t], [math.log(r["len"]) for r in t], [r["scenario"] for r in t],
                                  [r["variant"] for r in t], [r["scenario"] for r in t])
    rec = pooled(doc, "slopey")
    assert rec["regressor"] == "log(answer length, tokens)"
    assert rec["slope"] == pytest.approx(b, rel=1e-9) and rec["se"] == pytest.approx(se, rel=1e-9)


def test_no_length_is_said_by_name_and_no_config_writes_no_section(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(make_row_line(scenario=f"s{i}", variant=v) for i in range(5) for v in "ab") + "\n")
    assert "length" not in pipeline.run([str(path)], load_config(overrides=FAST)).doc
    cfg = tmp_path / "c.yaml"
    cfg.write_text("length: {field: answer}\nbootstrap: {resamples: 200}\n")
    out = tmp_path / "out"
    assert cli.main(["analyze", "--no-gate", "--config", str(cfg), "--out", str(out), str(path)]) == 0
    sec = json.loads((out / "results.json").read_text())["length"]
    assert sec["why"] == length.NO_LENGTH == "rows carry no answer length"
    assert sec["answer_length"]["no_length"] == 10 and pooled({"length": sec}, "gpt-4o")["slope"] is None
    said = [x for x in capsys.readouterr().out.splitlines() if x.startswith("Length")]
    assert said == ["Length: rows carry no answer length (length.field 'answer': no valid row holds one), so "
                    "whether a judge's score rises with the answer's length is not measured."]


def test_bad_length_config_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(make_row_line() + "\n")
    for bad, says in (("{field: answer, unit: words}", "length.unit"), ("{unit: tokens}", "length.field"),
                      ("{field: answer, extract: other}", "length.extract"), ("{fieldd: answer}", "fieldd")):
        cfg = tmp_path / "c.yaml"
        cfg.write_text(f"length: {bad}\n")
        assert cli.main(["analyze", "--config", str(cfg), "--out", str(tmp_path / "o"), str(path)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and says in err[0] and "Traceback" not in err[0], err


# ------------------------------------------------------------------------ prompts the answer is cut from


def test_answer_cut_from_fastchat_and_arena_hard_prompts() -> None:
    single = "[Question]\nq?\n\n[The Start of Assistant's Answer]\nline 1\nline 2\n[The End of Assistant's Answer]"
    assert length.fastchat_answer(single) == "line 1\nline 2"
    multi = ("<|The Start of Reference Answer|>\n\n### User:\nq1\n\n### Reference answer:\nr1\n\n"
             "<|The End of Reference Answer|>\n\n\n<|The Start of Assistant A's Conversation with User|>\n\n"
             "### User:\nq1\n\n### Assistant A:\nfirst\n\n### User:\nq2\n\n### Assistant A:\nsecond one\n\n"
             "<|The End of Assistant A's Conversation with User|>")
    assert length.fastchat_answer(multi) == "second one"
    assert length.fastchat_answer("no markers") is None and length.fastchat_answer(None) is None
    ah = ("<|User Prompt|>\nq\n\n<|The Start of Assistant A's Answer|>\nbase line\n<|The End of Assistant A's "
          "Answer|>\n\n<|The Start of Assistant B's Answer|>\nmodel!\n<|The End of Assistant B's Answer|>")
    assert length.arena_hard_answer(ah, "1") == "model!" and length.arena_hard_answer(ah, "2") == "base line"
    assert length.arena_hard_answer(ah, None) is None


# ------------------------------------------------------------------------ an Inspect log built here


def _log(path: Path, model: str, samples: list[dict[str, Any]]) -> str:
    header = {"version": 2, "status": "success",
              "eval": {"task": "t", "model": model, "run_id": "R-" + model, "task_file": "t.py",
                       "dataset": {"samples": len(samples)}},
              "results": {"scores": [{"name": "grader", "metrics": {"accuracy": {"value": 0.5}}}]}}
    path.write_text(json.dumps({**header, "samples": samples}), "utf-8")
    return str(path)


def test_inspect_completion_length_and_slope(tmp_path: Path) -> None:
    """Two models x 16 samples; the reader keeps each completion's length (an integer), never the
    text; a list content counts its text parts joined by newlines (Inspect's ChatMessage.text)."""
    rng = np.random.default_rng(11)
    files, truth = [], []
    for m, model in enumerate(("openai/a", "openai/b")):
        samples = []
        for i in range(1, 17):
            n = int(rng.integers(20, 600))
            grade = "C" if rng.random() < 0.2 + 0.6 * (n > 250) else "I"
            if i == 3 and m == 1:  # content as a list of parts: "x"*n and "y"*4, joined by "\n"
                content: Any = [{"type": "text", "text": "x" * (n - 5)}, {"type": "image", "image": "u"},
                                {"type": "text", "text": "yyyy"}]
            else:
                content = "x" * n
            samples.append({"id": i, "epoch": 1, "output": {"choices": [{"message": {"content": content}}]},
                            "scores": {"grader": {"value": grade}}})
            truth.append({"scenario": str(i), "variant": model, "y": 1.0 if grade == "C" else 0.0, "len": n})
        files.append(_log(tmp_path / f"{m}.json", model, samples))
    a = pipeline.run(files, load_config(preset="inspect", overrides=FAST))
    assert a.rows["x___length"].dtype == pl.Float64  # the number, not the text
    assert sorted(a.rows["x___length"].to_list()) == sorted(float(r["len"]) for r in truth)
    b, se, lo, hi = reference_slope([r["y"] for r in truth], [math.log(r["len"]) for r in truth],
                                    [r["scenario"] for r in truth], [r["variant"] for r in truth],
                                    [r["scenario"] for r in truth])
    rec = pooled(a.doc, "grader")
    assert (rec["n"], rec["clusters"]) == (32, 16)
    assert rec["slope"] == pytest.approx(b, rel=1e-9) and rec["se"] == pytest.approx(se, rel=1e-9)
    assert a.doc["length"]["answer_length"]["reading"] == "the number in the field"


# ------------------------------------------------------------------------ the shared real files


def _fastchat_answer(prompt: str) -> str:
    """The judged answer, read here by regular expressions (apart from workbench.analysis.length)."""
    m = re.search(r"\[The Start of Assistant's Answer\]\n(.*)\n\[The End of Assistant's Answer\]", prompt, re.S)
    if m:
        return m.group(1)
    conv = prompt.split("<|The Start of Assistant A's Conversation with User|>", 1)[1]
    conv = re.sub(r"\n\n<\|The End of Assistant A's Conversation with User\|>\s*$", "", conv)
    return conv.split("### Assistant A:\n")[-1]


def test_real_fastchat_single_slope_against_an_independent_fit() -> None:
    """wgm20 FastChat MT-Bench single (gpt-4 judging 5 models, 800 rows, 15 scored -1): the answer
    cut from each user_prompt; slope recorded: -0.1488 points per unit log length (-0.103 per
    doubling), 785 rows, 80 question clusters."""
    require_real_data()
    rows = [json.loads(x) for x in WGM.read_text("utf-8").splitlines() if x.strip()]
    ok = [r for r in rows if r["score"] != -1]
    b, se, lo, hi = reference_slope([float(r["score"]) for r in ok],
                                    [math.log(len(_fastchat_answer(r["user_prompt"]))) for r in ok],
                                    [f"{r['question_id']}/{r['turn']}" for r in ok], [r["model"] for r in ok],
                                    [str(r["question_id"]) for r in ok])
    doc = pipeline.run([str(WGM)], load_config(preset="mt-bench", overrides=FAST)).doc
    rec = pooled(doc, "gpt-4")
    assert (rec["n"], rec["rows"], rec["clusters"]) == (len(ok), 785, 80)
    assert rec["slope"] == pytest.approx(b, rel=1e-9) and rec["se"] == pytest.approx(se, rel=1e-9)
    assert (rec["ci_low"], rec["ci_high"]) == pytest.approx((lo, hi), rel=1e-9)
    assert rec["slope"] == pytest.approx(-0.148809868555, abs=1e-9)
    assert doc["length"]["answer_length"]["extract"] == "fastchat_single"
    a = pipeline.run([str(WGM)], load_config(preset="mt-bench", overrides=FAST))
    # the row table keeps the length, not the prompt (kilobytes a row)
    assert a.rows["x___length"].dtype == pl.Float64 and "x___length1" not in a.rows.columns


def test_real_wildbench_model_output_lengths() -> None:
    """WildBench v2 (gpt-4o judging three models): model_output is the answer; the 65 empty
    responses (still scored) have no log length and are counted, not used."""
    require_real_data()
    files = sorted(str(p) for p in WB.glob("*.json"))
    recs = [r for f in files for r in json.loads(Path(f).read_text("utf-8"))]
    empty = sum(1 for r in recs if r["model_output"] == "")
    doc = pipeline.run(files, load_config(preset="wildbench", overrides=FAST)).doc
    al = doc["length"]["answer_length"]
    assert (al["valid_rows"], al["zero_length"], al["with_length"]) == (len(recs), empty, len(recs) - empty)
    assert empty == 65
    ok = [(r, Path(f).stem) for f in files for r in json.loads(Path(f).read_text("utf-8")) if r["model_output"]]
    b, se, _, _ = reference_slope([float(r["score"]) for r, _ in ok],
                                  [math.log(len(r["model_output"])) for r, _ in ok],
                                  [r["session_id"] for r, _ in ok], [v for _, v in ok],
                                  [r["session_id"] for r, _ in ok])
    rec = pooled(doc, "gpt-4o-2024-05-13")
    assert rec["slope"] == pytest.approx(b, rel=1e-9) and rec["se"] == pytest.approx(se, rel=1e-9)
    assert rec["ci_low"] > 0  # this judge's score rises with the answer's length


def test_the_report_says_what_the_terminal_says(tmp_path: Path) -> None:
    """The report's judge-diagnostics paragraphs carry the same sentences as the terminal block
    (both from length.slope_lines)."""
    from workbench.cli import terminal
    from workbench.report.model import Report
    from workbench.report.tables import offsets_tables

    lines, _ = planted_rows()
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    a = pipeline.run([str(path)], load_config(overrides={**FAST, "length": {"field": "answer"}}))
    said = terminal.length_text(a.doc)
    assert said is not None and said.count("Length, ") == 2
    html = str(offsets_tables(Report(analysis=a, parameters={}, out_dir=tmp_path, command_line="")))
    for line in said.splitlines():
        assert line.split(" [", 1)[0].replace("'", "&#x27;") in html, line
