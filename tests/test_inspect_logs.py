"""Inspect logs read together (issue 25): the log's identity in the keys, scales from the log or
the user, out-of-range cells failing the gate, bounds printed on the declared rubric.

Every log here is constructed in tmp_path with the shape of the real ones (a ``.eval`` zip with
``header.json`` and ``samples/<id>_epoch_<n>.json``, or a ``.json`` log with ``samples``).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from workbench.cli import main as cli
from workbench.common.config import load_config
from workbench.common.errors import InputError
from workbench.document import pipeline

FAST = {"bootstrap": {"resamples": 200}, "min_valid_n": 1, "min_clusters": 1}


def header(model: str, eval_id: str | None, *, run_id: str = "RUN1", task: str = "qa", scorer: str = "grader",
           metrics: dict[str, float] | None = None, n: int = 20) -> dict[str, Any]:
    ev: dict[str, Any] = {"run_id": run_id, "task": task, "task_id": "TASK1", "created": "2025-01-01T00:00:00+00:00",
                          "task_file": "qa.py", "model": model,
                          "dataset": {"samples": n, "sample_ids": list(range(1, n + 1))},
                          "scorers": [{"name": scorer, "metrics": [{"name": f"inspect_ai/{m}"}
                                                                   for m in (metrics or {})]}]}
    if eval_id is not None:
        ev["eval_id"] = eval_id
    return {"version": 2, "status": "success", "invalidated": False, "eval": ev, "plan": {"name": "plan", "steps": []},
            "results": {"total_samples": n, "completed_samples": n,
                        "scores": [{"name": scorer, "scorer": scorer,
                                    "metrics": {k: {"name": k, "value": v} for k, v in (metrics or {}).items()}}]},
            "stats": {}}


def write_log(path: Path, head: dict[str, Any], values: list[Any], scorer: str = "grader", epoch: int = 1,
              score_meta: dict[str, Any] | None = None) -> str:
    samples = []
    for i, v in enumerate(values, start=1):
        sc: dict[str, Any] = {"value": v, "answer": "a", "explanation": "e"}
        if score_meta is not None:
            sc["metadata"] = score_meta
        samples.append({"id": i, "epoch": epoch, "input": "q", "target": "t", "scores": {scorer: sc}})
    if path.suffix == ".eval":
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("header.json", json.dumps(head))
            for s in samples:
                z.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
    else:
        path.write_text(json.dumps({**head, "samples": samples}), "utf-8")
    return str(path)


def ci(values: str) -> list[str]:
    return list(values)


# =========================================================================== 1. keys


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_five_logs_of_one_run_are_five_evaluations_not_duplicates(tmp_path: Path, suffix: str) -> None:
    # one run (run_id RUN1, task qa), five logs: model a twice (two epoch sets), b twice, c once;
    # every log's samples are ids 1..20 at epoch 1 (what collided before: 52 conflict + 48 duplicate)
    grades = ["CCICCICCICCICCICCICC", "CICICICICICICICICICI", "IIIIICCCCCIIIIICCCCC",
              "CCCCCCCCCCCCCCCCCCCI", "ICICICICICICICICICIC"]
    models = ["openai/a", "openai/a", "openai/b", "openai/b", "openai/c"]
    logs = []
    for k, (model, g) in enumerate(zip(models, grades, strict=True)):
        acc = g.count("C") / 20
        logs.append(write_log(tmp_path / f"log{k}{suffix}", header(model, f"EVAL{k}", metrics={"accuracy": acc}),
                              ci(g)))
    a = pipeline.run(logs, load_config(preset="inspect", overrides=FAST))
    led = a.doc["ledger"]
    assert (led["lines"], led["valid"], led.get("duplicate", 0), led.get("conflict", 0)) == (100, 100, 0, 0)
    card = {c["variant"]: c for c in a.doc["scorecard"] if c["judge"] is None and c["subset"] is None}
    # variant = model: a's two logs are two trials of each of its 20 samples
    assert card["openai/a"]["valid_n"] == 40 and card["openai/a"]["clusters"] == 20
    assert card["openai/a"]["mean"] == pytest.approx((grades[0] + grades[1]).count("C") / 40)
    assert card["openai/b"]["mean"] == pytest.approx((grades[2] + grades[3]).count("C") / 40)
    assert card["openai/c"]["valid_n"] == 20
    trials = sorted(set(a.rows.filter(a.rows["variant"] == "openai/a")["trial"].to_list()))
    assert trials == ["EVAL0:1", "EVAL1:1"]
    # each log's own printed accuracy is reproduced, one record per log
    acc = {Path(f["file"]).name: f for f in a.doc["harness"]["figures"] if f["figure"] == "accuracy"}
    assert len(acc) == 5 and all(f["matches"] for f in acc.values())


def test_logs_without_eval_id_use_run_task_and_created_and_tasks_are_apart(tmp_path: Path) -> None:
    h1 = header("openai/a", None, run_id="R1", task="qa")
    h2 = header("openai/a", None, run_id="R2", task="qa")
    h3 = header("openai/a", None, run_id="R2", task="other")
    logs = [write_log(tmp_path / "a.json", h1, ci("CCCC")), write_log(tmp_path / "b.json", h2, ci("IIII")),
            write_log(tmp_path / "c.json", h3, ci("CICI"))]
    a = pipeline.run(logs, load_config(preset="inspect", overrides=FAST))
    assert a.doc["ledger"]["valid"] == 12
    scen = sorted(set(a.rows["scenario"].to_list()))
    assert scen == [*(f"other:{i}" for i in range(1, 5)), *(f"qa:{i}" for i in range(1, 5))]
    trials = set(a.rows["trial"].to_list())
    # no eval_id: run_id/task_id@created (a part with ':' makes the composite key JSON)
    assert trials == {'["R1/TASK1@2025-01-01T00:00:00+00:00","1"]', '["R2/TASK1@2025-01-01T00:00:00+00:00","1"]'}


def test_the_same_log_twice_is_duplicates_and_the_message_says_why(tmp_path: Path) -> None:
    h = header("openai/a", "E1")
    one = write_log(tmp_path / "one.eval", h, ci("CICI"))
    two = write_log(tmp_path / "copy.eval", h, ci("CICI"))
    with pytest.raises(InputError) as exc:
        pipeline.run([one, two], load_config(preset="inspect", overrides=FAST))
    msg = str(exc.value)
    assert "copy.eval: no valid row at all (duplicate 4)" in msg
    assert "read as one row per sample x scorer with fields sample_id, epoch, model, task, run_id, log" in msg
    assert "every row repeats the key of a row read before" in msg and "trial <- log+epoch" in msg
    # never the header's fields, never the preset already in use
    assert "invalidated" not in msg and "--preset inspect might fit" not in msg


def test_no_valid_row_names_the_format_and_the_keys_it_lacks(tmp_path: Path) -> None:
    rows = tmp_path / "header.jsonl"
    rows.write_text(json.dumps(header("openai/a", "E1")) + "\n", "utf-8")
    with pytest.raises(InputError) as exc:
        pipeline.run([str(rows)], load_config(preset="mt-bench", overrides=FAST))
    msg = str(exc.value)
    assert "it is an Inspect log's header" in msg and "not rows" in msg
    assert "it lacks the key field(s) scenario (question_id, turn), variant (model), judge (judge)" in msg
    assert "--preset inspect might fit" in msg
    plain = tmp_path / "plain.jsonl"
    plain.write_text('{"id": 1, "score": 5}\n', "utf-8")
    with pytest.raises(InputError) as exc:
        pipeline.run([str(plain)], load_config(preset="mt-bench", overrides=FAST))
    msg = str(exc.value)
    assert "lacks the key field(s) scenario (question_id, turn)" in msg and "--preset mt-bench" not in msg


# =========================================================================== 3. bounds on the rubric


@pytest.mark.parametrize("lo, hi, values", [(-2, 2, [2] * 12 + [1] * 6 + [0] * 2),
                                            (1, 10, [10] * 14 + [9] * 4 + [7] * 2)])
def test_printed_bounds_use_the_declared_rubric(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                lo: int, hi: int, values: list[int]) -> None:
    log = write_log(tmp_path / "likert.eval", header("openai/a", "E1", scorer="likert", metrics={"mean": 0.0}),
                    values, scorer="likert")
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(f"extends: inspect\nrubric: {{min: {lo}, max: {hi}}}\n", "utf-8")
    code = cli.main(["analyze", log, "--config", str(cfg), "--resamples", "200", "--min-valid-n", "1",
                     "--min-clusters", "1", "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert code == 0, out
    res = json.loads((tmp_path / "out" / "results.json").read_text("utf-8"))
    assert res["value_range"] == [lo, hi]
    (c,) = [c for c in res["scorecard"] if c["judge"] is None and c["subset"] is None]
    assert c["mean"] == pytest.approx(sum(values) / len(values))
    assert lo < c["ci_low"] < c["ci_high"] < hi  # inside the rubric: printed as computed
    line = next(x for x in out.splitlines() if x.lstrip().startswith("1  openai/a") and "(20/20)" in x)
    assert f"[{c['ci_low']:.4f}, {c['ci_high']:.4f}]" in line and "*" not in line
    assert "1.0000*" not in out


# =========================================================================== 2. scales, gate, metrics

LIKERT = [-2] * 20 + [-1] * 19 + [2] * 10 + [0] * 48 + [1] * 3  # 49 of 100 outside 0..1


def test_numbers_without_a_recorded_scale_need_the_rubric(tmp_path: Path) -> None:
    log = write_log(tmp_path / "likert.eval", header("openai/a", "E1", scorer="likert", n=100,
                                                     metrics={"mean": sum(LIKERT) / 100, "stderr": 0.12}),
                    LIKERT, scorer="likert")
    with pytest.raises(InputError) as exc:
        pipeline.run([log], load_config(preset="inspect", overrides=FAST))
    assert ("scorer 'likert' writes numbers (-2 to 2 in this log) and the log records no scale for them; "
            "the workbench does not assume one") in str(exc.value)
    assert "rubric: {min: -2, max: 2}" in str(exc.value)
    # a scale the log records is read (and a rubric that differs is refused, naming it)
    meta = write_log(tmp_path / "meta.eval", header("openai/a", "E2", scorer="likert", n=100), LIKERT,
                     scorer="likert", score_meta={"scale": [-2, 2]})
    with pytest.raises(InputError, match=r"numbers on -2\.\.2 \(recorded in the scores' metadata\), not the "
                                         r"config's rubric 0\.\.1"):
        pipeline.run([meta], load_config(preset="inspect", overrides=FAST))
    a = pipeline.run([meta], load_config(preset="inspect", overrides={**FAST, "rubric": {"min": -2, "max": 2}}))
    assert a.doc["ledger"]["valid"] == 100 and a.doc["gate"]["passed"]


def test_out_of_range_cell_fails_the_gate_and_the_harness_uses_the_logs_metric_names(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mean = sum(LIKERT) / 100
    log = write_log(tmp_path / "likert.eval", header("openai/a", "E1", scorer="likert", n=100,
                                                     metrics={"mean": mean, "stderr": 0.12}),
                    LIKERT, scorer="likert")
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("extends: inspect\nrubric: {min: 0, max: 1}\n", "utf-8")  # the wrong scale, given
    code = cli.main(["analyze", log, "--config", str(cfg), "--resamples", "200", "--out", str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert code != 0
    res = json.loads((tmp_path / "o" / "results.json").read_text("utf-8"))
    g = res["gate"]
    assert g["passed"] is False
    (f,) = g["range_failing"]
    assert (f["variant"], f["judge"], f["out_of_range"], f["judgments"]) == ("openai/a", "likert", 49, 100)
    why = "judge likert: 49 of 100 values out_of_range (49% > 5%) of the rubric 0..1"
    assert why in g["failing"][0]["why"]
    first_screen = out.split("\n\n")[0]  # the board
    assert f"OUT OF RANGE (gate fails): openai/a, {why}" in first_screen
    assert f"gate: FAILED: openai/a: {why}" in out
    # harness: the log's names (mean, stderr), and what the log printed
    figs = {x["figure"]: x for x in res["harness"]["figures"]}
    assert set(figs) == {"mean", "stderr"} and "accuracy" not in figs
    assert figs["mean"]["printed"] == pytest.approx(mean) and figs["mean"]["matches"]
    assert figs["mean"]["value"] == pytest.approx(mean) and figs["stderr"]["printed"] == 0.12
    assert "harness: mean" in first_screen
    assert f"openai/a mean: printed in the log {mean:g} (matches)" in out
