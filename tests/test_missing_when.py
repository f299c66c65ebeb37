"""Declared failure encodings, ``missing_when:`` (issue 25): failures a scorer writes as ordinary
in-range scores ("No response" as -2, "Parse error" as 0, the reason in ``explanation``) turn
into missing scores with the declared reason, counted in the census like any other.

Every input is constructed in tmp_path: an Inspect log of the real shape (``.eval`` zip with
``header.json`` + ``samples/<id>_epoch_<n>.json``, or a ``.json`` log) and a default-format
JSONL. Expected figures come from naive loops over the constructed values.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from fuzz_support import run_cli

from workbench.common.config import load_config
from workbench.common.errors import ConfigError
from workbench.document import pipeline
from workbench.ingest import reader as ingest

PATTERN = "No response|Parse error"
DECLARE = {"value": [{"field": "explanation", "matches": PATTERN, "reason": "declared_failure"}]}
FAST = {"bootstrap": {"resamples": 200}, "min_valid_n": 1, "min_clusters": 1, "rubric": {"min": -2, "max": 2}}

# per model: (value, explanation) of samples 1..12; -2 "No response" and 0 "Parse error" are
# failures written in range, a real 0 and a real -2 (explained otherwise) are scores
SAMPLES = {
    "openai/a": [(2, "clear and correct"), (1, "mostly right"), (-2, "No response"), (0, "Parse error: no "
                 "grade in the output"), (2, "good"), (1, "ok"), (0, "half right"), (-2, "wrong answer"),
                 (2, "good"), (1, "ok"), (-2, "No response"), (1, "fine")],
    "openai/b": [(1, "ok"), (0, "Parse error"), (-1, "weak"), (2, "great"), (1, "ok"), (1, "ok"),
                 (-2, "off topic"), (2, "good"), (0, "neutral"), (1, "ok"), (2, "good"), (1, "ok")],
}


def _write_log(path: Path, model: str, samples: list[tuple[int, str]]) -> str:
    n = len(samples)
    values = [v for v, _ in samples]
    ev = {"run_id": "RUN1", "task": "qa", "task_id": "TASK1", "created": "2025-01-01T00:00:00+00:00",
          "task_file": "qa.py", "model": model, "eval_id": f"E-{model}",
          "dataset": {"samples": n, "sample_ids": list(range(1, n + 1))}, "scorers": [{"name": "likert"}]}
    head = {"version": 2, "status": "success", "eval": ev, "plan": {"name": "plan", "steps": []},
            "results": {"total_samples": n, "completed_samples": n,
                        "scores": [{"name": "likert", "scorer": "likert",
                                    "metrics": {"mean": {"name": "mean", "value": sum(values) / n}}}]},
            "stats": {}}
    docs = [{"id": i, "epoch": 1, "input": "q", "target": "t",
             "scores": {"likert": {"value": v, "answer": f"answer {i}", "explanation": e}}}
            for i, (v, e) in enumerate(samples, start=1)]
    if path.suffix == ".eval":
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("header.json", json.dumps(head))
            for s in docs:
                z.writestr(f"samples/{s['id']}_epoch_1.json", json.dumps(s))
    else:
        path.write_text(json.dumps({**head, "samples": docs}), "utf-8")
    return str(path)


def _logs(tmp_path: Path, suffix: str) -> list[str]:
    return [_write_log(tmp_path / f"{m.split('/')[1]}{suffix}", m, s) for m, s in SAMPLES.items()]


def _pooled(doc: dict[str, Any], variant: str) -> dict[str, Any]:
    (c,) = [c for c in doc["scorecard"] if c["variant"] == variant and c["judge"] is None
            and c["subset"] is None and c["field"] == "value"]
    return c


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_inspect_failures_written_as_scores_become_missing(tmp_path: Path, suffix: str) -> None:
    logs = _logs(tmp_path, suffix)
    before = pipeline.run(logs, load_config(preset="inspect", overrides=FAST)).doc
    after_run = pipeline.run(logs, load_config(preset="inspect", overrides={**FAST, "missing_when": DECLARE}))
    after = after_run.doc
    total = sum(len(s) for s in SAMPLES.values())
    failed = {m: [i for i, (_, e) in enumerate(s, start=1) if re.search(PATTERN, e)] for m, s in SAMPLES.items()}
    n_failed = sum(map(len, failed.values()))
    assert n_failed == 4  # the construction: 3 in a, 1 in b
    # before: every failure is a measurement, the mean includes the -2s and 0s
    assert before["ledger"]["valid"] == total and before["ledger"]["empty"] == 0
    assert "declared_missing" not in before["ledger_notes"]
    for m, s in SAMPLES.items():
        c = _pooled(before, m)
        assert c["valid_n"] == len(s)
        assert c["mean"] == pytest.approx(sum(v for v, _ in s) / len(s))
    # after: missing with the declared reason, the valid mean over the rest
    assert after["ledger"]["valid"] == total - n_failed and after["ledger"]["empty"] == n_failed
    assert sum(v for k, v in after["ledger"].items() if k != "lines" and v) == total
    assert after["ledger_notes"]["declared_missing"] == n_failed
    rows = after_run.rows
    for m, s in SAMPLES.items():
        kept = [v for i, (v, _) in enumerate(s, start=1) if i not in failed[m]]
        c = _pooled(after, m)
        assert c["valid_n"] == len(kept) and c["rows"] == len(s)
        assert c["mean"] == pytest.approx(sum(kept) / len(kept))
        assert c["zero_filled_mean"] == pytest.approx(sum(kept) / len(s))  # a failure counts as 0 there
        mine = rows.filter(pl.col("variant") == m).sort("line")
        status = dict(zip(mine["line"].to_list(), mine["value__status"].to_list(), strict=True))
        assert [i for i, st in status.items() if st == "declared_missing"] == failed[m]
        assert set(status.values()) == {"valid", "declared_missing"}
        for line, raw, value, reason in mine.filter(pl.col("value__status") == "declared_missing").select(
                "line", "value__raw", "value", "reason").iter_rows():
            assert value is None and raw == s[line - 1][0]  # the number kept for the counterfactuals
            assert reason == (f"field 'value': declared missing, {s[line - 1][0]} written where explanation "
                              f"matches '{PATTERN}' (declared_failure)")
    # the census per judge x variant counts them like any other missing
    cen = {(c["judge"], c["variant"]): c for c in after["census"]}
    for m, s in SAMPLES.items():
        c = cen[("likert", m)]
        assert (c["judgments"], c["valid"], c["missing"]) == (len(s), len(s) - len(failed[m]), len(failed[m]))
        assert c["missing_rate"] == pytest.approx(len(failed[m]) / len(s))
        assert c["field_nulls"] == {"value": len(failed[m])}
    assert all(c["missing"] == 0 for c in before["census"])
    # the condition's field is read to classify, not kept in the row table
    assert not [c for c in rows.columns if "when" in c or "explanation" in c]


def test_declared_failures_fail_the_gate_they_passed(tmp_path: Path) -> None:
    logs = _logs(tmp_path, ".eval")
    strict = {**FAST, "min_valid_n": 10}  # a has 12 rows, 9 of them real scores
    before = pipeline.run(logs, load_config(preset="inspect", overrides=strict)).doc
    after = pipeline.run(logs, load_config(preset="inspect", overrides={**strict, "missing_when": DECLARE})).doc
    assert before["gate"]["passed"] is True
    assert after["gate"]["passed"] is False
    assert [(f["variant"], f["valid_n"]) for f in after["gate"]["failing"]] == [("openai/a", 9)]


def test_check_tells_the_declared_failures_apart(tmp_path: Path) -> None:
    logs = _logs(tmp_path, ".json")
    s = SAMPLES["openai/a"]
    printed = sum(v for v, _ in s) / len(s)  # the log's own mean: the failures averaged in
    (tmp_path / "card.csv").write_text(f"variant,judge,value\nopenai/a,likert,{printed:.4f}\n", "utf-8")
    base = "extends: inspect\nrubric: {min: -2, max: 2}\nmin_valid_n: 1\nmin_clusters: 1\n"
    (tmp_path / "before.yaml").write_text(base, "utf-8")
    declare = f'missing_when:\n  value:\n    - {{field: explanation, matches: "{PATTERN}", reason: declared_failure}}\n'
    (tmp_path / "after.yaml").write_text(base + declare, "utf-8")
    out = {}
    for name in ("before", "after"):
        res = run_cli(["check", *logs, "--config", str(tmp_path / f"{name}.yaml"), "--published",
                       str(tmp_path / "card.csv"), "--resamples", "200", "--out", str(tmp_path / name)])
        assert res.traceback is None, res.traceback
        out[name] = (res, json.loads((tmp_path / name / "results.json").read_text("utf-8")))
    res, doc = out["before"]
    assert res.code == 0
    assert "no missing scores to tell them apart" in res.out
    (rec,) = doc["published_check"]
    assert {"valid_mean", "zero_filled", "raw_numeric_mean"} <= set(rec["reproduced_by"])
    # the harness's own rule is a candidate, under the log's metric name (``mean``, not the
    # preset's default ``accuracy``)
    assert "harness" in rec["reproduced_by"] and rec["rules"]["harness"]["n"] == len(s)
    assert rec["harness_figure"] == "inspect mean (rubric points, as the harness prints it)"
    res, doc = out["after"]
    assert res.code == 1 and "no missing scores to tell them apart" not in res.out
    (rec,) = doc["published_check"]
    assert set(rec["reproduced_by"]) == {"harness", "raw_numeric_mean"}  # Inspect averages them in
    assert rec["rules"]["harness"]["value"] == pytest.approx(printed)
    assert not {"valid_mean", "zero_filled", "drop_sentinels_only"} & set(rec["reproduced_by"])
    assert "declared failures" in res.out and "declared_missing 4" in res.out


# --------------------------------------------------------------------------- default format


def _default_rows() -> list[dict[str, Any]]:
    """Default-format rows: two judges x two variants x 6 scenarios; a parse failure is written
    as overall 1 with verdict PARSE_FAILED, a refusal as meta.code 7 (a number) with any score."""
    out = []
    for j, judge in enumerate(("j1", "j2")):
        for v, variant in enumerate(("base", "tuned")):
            for s in range(6):
                overall = 1 + (s * 3 + j + 2 * v) % 10
                verdict, code = "ok", 0
                if (s + j + v) % 4 == 0:
                    overall, verdict = 1, "PARSE_FAILED"
                elif (s * (j + 1) + v) % 5 == 3:
                    code = 7
                out.append({"scenario": f"s{s}", "variant": variant, "trial": 1, "judge": judge,
                            "overall": overall, "correctness": overall, "verdict": verdict, "meta": {"code": code}})
    return out


def _declared(r: dict[str, Any]) -> bool:
    return r["verdict"] == "PARSE_FAILED" or r["meta"]["code"] == 7


def test_default_format_declared_failures(tmp_path: Path) -> None:
    records = _default_rows()
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    base = {"scores": {"overall": "overall", "correctness": "correctness"}, "min_valid_n": 1, "min_clusters": 1,
            "bootstrap": {"resamples": 200}}
    when = {"overall": [{"field": "verdict", "equals": "PARSE_FAILED", "reason": "parse_failure"},
                        {"field": "meta.code", "equals": 7.0, "reason": "refused"}]}
    before = pipeline.run([str(path)], load_config(overrides=base))
    after = pipeline.run([str(path)], load_config(overrides={**base, "missing_when": when}))
    declared = [r for r in records if _declared(r)]
    assert 0 < len(declared) < len(records)
    assert before.doc["ledger"]["valid"] == len(records)
    # correctness is not declared: a declared headline with a scored subscore is partial
    assert after.doc["ledger"]["valid"] == len(records) - len(declared)
    assert after.doc["ledger"]["partial"] == len(declared)
    rows = after.rows.sort("line")
    for r, st, reason in zip(records, rows["overall__status"], rows["reason"], strict=True):
        if r["verdict"] == "PARSE_FAILED":
            assert (st, reason) == ("declared_missing", "field 'overall': declared missing, 1 written where "
                                    "verdict equals 'PARSE_FAILED' (parse_failure)")
        elif r["meta"]["code"] == 7:
            assert (st, reason) == ("declared_missing", f"field 'overall': declared missing, {r['overall']} "
                                    "written where meta.code equals 7.0 (refused)")
        else:
            assert (st, reason) == ("valid", None)
    assert rows["correctness__status"].unique().to_list() == ["valid"]
    cen_b = {(c["judge"], c["variant"]): c for c in before.doc["census"]}
    cen_a = {(c["judge"], c["variant"]): c for c in after.doc["census"]}
    for judge in ("j1", "j2"):
        for variant in ("base", "tuned"):
            cell = [r for r in records if r["judge"] == judge and r["variant"] == variant]
            kept = [r["overall"] for r in cell if not _declared(r)]
            assert cen_b[(judge, variant)]["missing"] == 0
            assert cen_a[(judge, variant)]["missing"] == len(cell) - len(kept)
            assert cen_a[(judge, variant)]["missing_rate"] == pytest.approx((len(cell) - len(kept)) / len(cell))
            (c,) = [c for c in after.doc["scorecard"] if (c["variant"], c["judge"], c["subset"], c["field"])
                    == (variant, judge, None, "overall")]
            assert c["valid_n"] == len(kept) and c["mean"] == pytest.approx(sum(kept) / len(kept))
            (b,) = [c for c in before.doc["scorecard"] if (c["variant"], c["judge"], c["subset"], c["field"])
                    == (variant, judge, None, "overall")]
            assert b["mean"] == pytest.approx(sum(r["overall"] for r in cell) / len(cell))


def test_equals_forms_and_absent_fields(tmp_path: Path) -> None:
    """equals: a number matches 2 and 2.0 (and the text "2"); a boolean true (and the text);
    a string the field's text exactly (a JSON number's text too: "2" is 2, not 2.0); matches
    searches the text; an absent or null field never matches."""
    recs = [{"scenario": f"s{i}", "variant": "v", "trial": 1, "judge": "j", "overall": 5, "f": f}
            for i, f in enumerate([2, 2.0, "2", "2 ", True, "true", "Parse error", "parse error", None])]
    recs.append({"scenario": "s9", "variant": "v", "trial": 1, "judge": "j", "overall": 5})
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), "utf-8")
    base = {"scores": {"overall": "overall"}}
    cases = [({"field": "f", "equals": 2}, [True, True, True, True, False, False, False, False, False, False]),
             ({"field": "f", "equals": "2"}, [True, False, True, False, False, False, False, False, False, False]),
             ({"field": "f", "equals": True}, [False, False, False, False, True, True, False, False, False, False]),
             ({"field": "f", "matches": "(?i)^parse"}, [False] * 6 + [True, True, False, False]),
             ({"field": "f", "matches": "error$"}, [False] * 6 + [True, True, False, False])]
    for cond, want in cases:
        rows, _ = ingest.read_rows([str(path)], load_config(overrides={**base, "missing_when": {"overall": [cond]}}))
        got = (rows.sort("line")["overall__status"] == "declared_missing").to_list()
        assert got == want, cond


@pytest.mark.parametrize("when, fragment", [
    ([1], "missing_when: must be a mapping"),
    ({"value": 3}, "missing_when.value must be a non-empty list of conditions"),
    ({"value": []}, "missing_when.value must be a non-empty list of conditions"),
    ({"valu": [{"field": "explanation", "equals": "x"}]}, "missing_when.valu: 'valu' is not one of scores"),
    ({"value": ["explanation"]}, "missing_when.value[0] must be a mapping"),
    ({"value": [{"equals": "x"}]}, "missing_when.value[0] needs field"),
    ({"value": [{"field": "explanation"}]}, "missing_when.value[0] needs exactly one of equals"),
    ({"value": [{"field": "e", "equals": 1, "matches": "a"}]}, "exactly one of equals (a value) or matches "
                                                              "(a regex), not both"),
    ({"value": [{"field": "e", "equal": 1}]}, "missing_when.value[0]: unknown key(s) ['equal']"),
    ({"value": [{"field": "e", "equals": None}]}, "missing_when.value[0].equals must be a string, number"),
    ({"value": [{"field": "e", "equals": [1]}]}, "missing_when.value[0].equals must be a string, number"),
    ({"value": [{"field": "e", "matches": ""}]}, "missing_when.value[0].matches must be a non-empty regex"),
    ({"value": [{"field": "e", "matches": "(?=No)"}]}, "missing_when.value[0].matches is not a usable regex"),
    ({"value": [{"field": "e", "matches": r"(a)\1"}]}, "missing_when.value[0].matches is not a usable regex"),
    ({"value": [{"field": "e", "matches": "("}]}, "missing_when.value[0].matches is not a usable regex"),
    ({"value": [{"field": "", "matches": "x"}]}, "missing_when.value[0].field: a field path"),
    ({"value": [{"field": "e", "matches": "x", "reason": ""}]}, "missing_when.value[0].reason must be"),
])
def test_bad_missing_when_is_one_line(when: Any, fragment: str) -> None:
    with pytest.raises(ConfigError) as exc:
        load_config(preset="inspect", overrides={"missing_when": when})
    text = str(exc.value)
    assert fragment in text and "\n" not in text


def test_bad_missing_when_in_a_file_exits_2(tmp_path: Path) -> None:
    log = _logs(tmp_path, ".eval")[0]
    cfg = tmp_path / "c.yaml"
    cfg.write_text('extends: inspect\nmissing_when:\n  value:\n    - {field: explanation, matches: "(?<=x)y"}\n',
                   "utf-8")
    res = run_cli(["analyze", log, "--config", str(cfg), "--out", str(tmp_path / "o")])
    assert res.code == 2 and res.traceback is None
    (line,) = [x for x in res.err.splitlines() if x.strip()]
    assert "missing_when.value[0].matches is not a usable regex" in line


def test_reserved_extra_field_name() -> None:
    with pytest.raises(ConfigError, match="the writer's, missing_when's, the answer length's"):
        load_config(overrides={"extra_fields": {"__when0": "x"}})


def test_dask_engine_reads_the_same_declared_failures(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    from polars.testing import assert_frame_equal

    from workbench.ingest import execute

    logs = _logs(tmp_path, ".eval")
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _default_rows()), "utf-8")
    jsonl_cfg = load_config(overrides={"scores": {"overall": "overall", "correctness": "correctness"},
                                       "missing_when": {"overall": [{"field": "verdict", "equals": "PARSE_FAILED"}]}})
    inspect_cfg = load_config(preset="inspect", overrides={**FAST, "missing_when": DECLARE})
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster:
        ex = execute.Execution(engine="dask", scheduler=cluster.scheduler_address)
        for files, cfg in ((logs, inspect_cfg), ([str(path)], jsonl_cfg)):
            local, _ = ingest.read_rows(files, cfg)
            dask, _ = execute.read_rows(files, cfg, ex)
            assert_frame_equal(local, dask)
            assert (local[f"{cfg.headline}__status"] == "declared_missing").sum() > 0


def test_a_declared_failure_and_a_score_under_one_key_conflict(tmp_path: Path) -> None:
    """Two rows of one key with the same number: a failure and a grade are not one judgment
    (conflict); the same failure twice is a duplicate. Without missing_when both are duplicates."""
    def row(s: str, expl: str) -> dict[str, Any]:
        return {"scenario": s, "variant": "v", "trial": 1, "judge": "j", "overall": 1, "note": expl}

    recs = [row("a", "No response"), row("a", "graded"), row("b", "No response"), row("b", "No response"),
            row("c", "graded")]
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), "utf-8")
    base = {"scores": {"overall": "overall"}}
    plain, _ = ingest.read_rows([str(path)], load_config(overrides=base))
    assert plain.sort("line")["bucket"].to_list() == ["valid", "duplicate", "valid", "duplicate", "valid"]
    when = {"overall": [{"field": "note", "matches": "^No response$"}]}
    rows, _ = ingest.read_rows([str(path)], load_config(overrides={**base, "missing_when": when}))
    assert rows.sort("line")["bucket"].to_list() == ["conflict", "conflict", "empty", "duplicate", "valid"]


def test_csv_condition_without_a_label(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text("scenario,variant,trial,judge,overall,note\na,v,1,j,5,ok\nb,v,1,j,1,Parse error\n"
                    "c,v,1,j,1,7\n", "utf-8")
    cfg = load_config(overrides={"scores": {"overall": "overall"}, "missing_when": {
        "overall": [{"field": "note", "matches": "Parse"}, {"field": "note", "equals": 7}]}})
    rows, _ = ingest.read_rows([str(path)], cfg)
    assert rows.sort("line").select("bucket", "reason").rows() == [
        ("valid", None),
        ("empty", "field 'overall': declared missing, 1 written where note matches 'Parse'"),
        ("empty", "field 'overall': declared missing, 1 written where note equals 7")]


def test_every_score_declared_missing_is_one_line_saying_so(tmp_path: Path) -> None:
    log = _write_log(tmp_path / "all.eval", "openai/a", [(-2, "No response")] * 3)
    cfg = tmp_path / "c.yaml"
    cfg.write_text('extends: inspect\nrubric: {min: -2, max: 2}\nmissing_when:\n  value:\n'
                   '    - {field: explanation, matches: "No response"}\n', "utf-8")
    res = run_cli(["analyze", log, "--config", str(cfg), "--out", str(tmp_path / "o")])
    assert res.code == 2 and res.traceback is None
    (line,) = [x for x in res.err.splitlines() if x.strip()]
    assert "no valid row at all (empty 3); 3 headline score(s) declared missing by missing_when" in line
