"""Native-layout config features on small hand-made files (no real data needed).

Each expected value is worked out by hand in the test from the rows written: explode with a
missing game, categorical values with weights and a flipped position, continuous preferences,
Inspect logs with NOANSWER, unscored and errored samples, the ``all_rows`` rule and the
ambiguity it creates, planned-but-absent rows in the scorecard and the published summary, and
a published cell without rows as a finding rather than an exit 2.
"""

from __future__ import annotations

import json
import math
import zipfile
from pathlib import Path
from typing import Any

import pytest

from workbench.analysis import check
from workbench.cli import main as cli
from workbench.common import schemas
from workbench.common.config import load_config
from workbench.common.errors import ConfigError
from workbench.document import pipeline

FAST = {"bootstrap": {"resamples": 200}, "min_valid_n": 1, "min_clusters": 1}


def write(path: Path, rows: list[Any]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), "utf-8")
    return str(path)


def arena_row(q: str, g1: Any, g2: Any, model: str = "m") -> dict[str, Any]:
    games = [None if g is None else {"score": g, "judgment": "..."} for g in (g1, g2)]
    return {"question_id": q, "model": model, "judge": "j", "games": games}


def test_arena_hard_explode_values_weights_flip_and_missing_games(tmp_path: Path) -> None:
    d = tmp_path / "data" / "arena-hard-v0.1"
    f = write(d / "model_judgment" / "j" / "m.jsonl", [
        arena_row("q1", "B>>A", "A>B"),       # model wins both: credit 1 (w3), 1 (w1)
        arena_row("q2", "A>B", "A=B"),        # loses game 1 (0), ties game 2 (0.5)
        arena_row("q3", None, "B>A"),         # game 1 null; game 2 model (A) loses: 0
        {"question_id": "q4", "model": "m", "judge": "j", "games": [{"score": "A>B"}]},  # game 2 absent
        {"question_id": "q5", "model": "m", "judge": "j", "games": "oops"},
        arena_row("q6", "A?B", "B>A"),        # a label not in the mapping
    ])
    write(d / "question.jsonl", [{"question_id": f"q{i}"} for i in range(1, 9)])
    a = pipeline.run([f], load_config(preset="arena-hard", overrides=FAST))
    rows = {(r["line"], r["trial"]): r for r in a.rows.filter(a.rows["line"].is_not_null()).to_dicts()}
    assert rows[(1, "1")]["outcome"] == 100.0 and rows[(1, "2")]["outcome"] == 100.0
    assert rows[(2, "1")]["outcome"] == 0.0 and rows[(2, "2")]["outcome"] == 50.0
    assert rows[(3, "1")]["bucket"] == "empty" and "position 1: the judgment is null" in rows[(3, "1")]["reason"]
    assert rows[(3, "2")]["outcome"] == 0.0
    assert rows[(4, "2")]["bucket"] == "empty" and "no judgment in the row" in rows[(4, "2")]["reason"]
    bad = [r for r in rows.values() if r["line"] == 5]
    assert len(bad) == 1 and bad[0]["bucket"] == "malformed" and "field 'games' is a JSON string" in bad[0]["reason"]
    assert rows[(6, "1")]["bucket"] == "non_numeric"
    assert "'A?B' is not in the value mapping (A>>B, A>B" in rows[(6, "1")]["reason"]
    # harness (v0.1): show_result.py reads game["score"] of a null game (TypeError, line 3)
    # and games[1] of a one-game row (IndexError, line 4): it prints nothing, and says why
    fig, base = a.doc["harness"]["figures"]
    assert fig["variant"] == "m" and fig["value"] is None
    assert base["variant"] == "gpt-4-0314" and base["value"] is None and "stops before printing" in base["note"]
    assert "m.jsonl:3: a null game: game['score'] raises TypeError (and 1 more)" in fig["note"]
    (p,) = a.doc["harness"]["position_swap"]
    assert (p["items"], p["both_usable"], p["one_missing"], p["both_missing"]) == (5, 2, 3, 0)
    assert p["disagree"] == 1  # q2: loss vs tie
    # the task list beside the folder is the plan: q7, q8 absent (2 positions each), q5 has no key
    assert a.doc["plan"]["mode"] == "tasks" and p["absent_items"] == 3
    cell = [c for c in a.doc["scorecard"] if c["judge"] is None and c["subset"] is None][0]
    assert cell["absent"] == 6 and cell["rows"] == 10 + 6
    assert a.doc["ledger_notes"]["input_lines"] == 6


def test_continuous_preference_reason_names_the_scale(tmp_path: Path) -> None:
    rows = [{"instruction": f"i{k}", "generator_2": "m", "annotator": "a", "preference": p}
            for k, p in enumerate([1.0, 1.25, 2.0, 0, 2.5, 0.5, None])]
    f = tmp_path / "results" / "m" / "a" / "annotations.json"
    f.parent.mkdir(parents=True)
    f.write_text(json.dumps(rows), "utf-8")
    a = pipeline.run([str(f)], load_config(preset="alpaca-eval", overrides=FAST))
    got = {r["scenario"]: r for r in a.rows.to_dicts()}
    assert [got[f"i{k}"]["preference"] for k in range(4)] == [0.0, 25.0, 100.0, 50.0]
    # 2.5 is outside the rubric [0, 2]; 0.5 is inside it but is neither a preference nor a code
    assert "outside the rubric" in got["i4"]["reason"]
    assert got["i5"]["reason"] == "field 'preference': not a preference in [1, 2] nor one of the codes 0, got 0.5"
    assert got["i6"]["bucket"] == "empty"
    alpaca = {f["figure"]: f["value"] for f in a.doc["harness"]["figures"]}
    assert math.isclose(alpaca["win_rate"], 100 * (0 + 0.25 + 1 + 0.5) / 4)
    assert alpaca["n_draws"] == 1 and alpaca["n_total"] == 4


def _inspect_log(path: Path, samples: list[dict[str, Any]], fmt: str = "json") -> str:
    header = {"version": 2, "status": "success",
              "eval": {"task": "t", "model": "openai/x", "run_id": "R1", "task_file": "t.py",
                       "dataset": {"samples": len(samples)}},
              "results": {"scores": [{"name": "grader", "metrics": {"accuracy": {"value": 0.5},
                                                                   "stderr": {"value": 0.0}}}]}}
    if fmt == "json":
        path.write_text(json.dumps({**header, "samples": samples}), "utf-8")
    else:
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("header.json", json.dumps(header))
            for s in samples:
                z.writestr(f"samples/{s['id']}_epoch_1.json", json.dumps(s))
    return str(path)


@pytest.mark.parametrize("fmt", ["json", "eval"])
def test_inspect_buckets_and_the_noanswer_counterfactual(tmp_path: Path, fmt: str) -> None:
    def s(i: int, value: Any = None, error: Any = None, scored: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"id": i, "epoch": 1}
        if scored:
            out["scores"] = {"grader": {"value": value}}
        if error:
            out["error"] = {"message": error}
        return out

    samples = [s(1, "C"), s(2, "I"), s(3, "P"), s(4, "N"), s(5, "C"), s(6, scored=False),
               s(7, error="RateLimitError: too many requests"), s(8, None)]
    log = _inspect_log(tmp_path / f"log.{fmt}", samples, fmt)
    a = pipeline.run([log], load_config(preset="inspect", overrides=FAST))
    led = a.doc["ledger"]
    assert (led["valid"], led["empty"], led["unscored"], led["errored"]) == (4, 1, 2, 1)
    reasons = {r["scenario"]: r["reason"] for r in a.rows.to_dicts()}  # scenario = task:sample_id
    assert "sample error: RateLimitError" in reasons["t:7"] and "no value from scorer" in reasons["t:6"]
    assert "sentinel 'N' means no score" in reasons["t:4"]
    c = [c for c in a.doc["scorecard"] if c["judge"] is None][0]
    assert math.isclose(c["mean"], (1 + 0 + 0.5 + 1) / 4) and c["valid_n"] == 4 and c["rows"] == 8
    # Inspect's own accuracy counts N as 0 over the scored samples: 2.5 / 5
    acc = [f for f in a.doc["harness"]["figures"] if f["figure"] == "accuracy"][0]
    assert math.isclose(acc["value"], 2.5 / 5) and acc["n"] == 5 and acc["matches"]
    se = [f for f in a.doc["harness"]["figures"] if f["figure"] == "stderr"][0]
    xs = [1, 0, 0.5, 0, 1]
    m = sum(xs) / 5
    assert math.isclose(se["value"], math.sqrt(sum((x - m) ** 2 for x in xs) / 4) / math.sqrt(5))
    assert se["matches"] is False  # the log printed 0.0 (made up here): shown as DIFFERS
    # the zero-filled counterfactual is shown beside, never applied
    rules = check.aggregation_rules(a.rows, a.config, c["variant"], None, None, "value")
    assert math.isclose(rules["valid_mean"], 2.5 / 4)


def _mt_rows(scores: dict[int, list[float]]) -> list[dict[str, Any]]:
    out = []
    for q, runs in scores.items():
        for s in runs:
            out.append({"question_id": q, "turn": 1, "model": "m", "judge": ["gpt-4", "single-v1"], "score": s})
    return out


def test_rule_ambiguity_when_every_key_is_judged_equally_often(tmp_path: Path) -> None:
    """Every key judged 3 times identically: all_rows, item_mean and valid_mean coincide, and the
    check says so instead of naming one."""
    f = write(tmp_path / "gpt-4_single.jsonl", _mt_rows({q: [float(q % 7 + 2)] * 3 for q in range(81, 91)}))
    a = pipeline.run([f], load_config(preset="mt-bench", overrides=FAST))
    mean = sum(q % 7 + 2 for q in range(81, 91)) / 10
    card = tmp_path / "card.csv"
    card.write_text(f"variant,score\nm,{mean:.2f}\n", "utf-8")
    (rec,) = schemas.records(check.published_check(a.rows, a.config, check.read_published(str(card), a.config)),
                              schemas.PUBLISHED_CHECK)
    assert {"all_rows", "item_mean", "valid_mean"} <= set(rec["reproduced_by"])
    assert "every key was judged 3 times, so item_mean and all_rows coincide" in rec["ambiguous"]["why"]
    assert "cannot name one rule" in check.published_summary([rec])


def test_all_rows_alone_when_reruns_differ(tmp_path: Path) -> None:
    """q81 judged 8 twice (an appended re-run): FastChat averages both rows; the rules that count
    a key once (the forensic rules read a conflicting re-judgment's lines as they are, an exact
    duplicate once) do not reproduce it."""
    f = write(tmp_path / "gpt-4_single.jsonl", _mt_rows({81: [8.0, 8.0], 82: [7.0], 83: [3.0]}))
    a = pipeline.run([f], load_config(preset="mt-bench", overrides=FAST))
    rules = check.aggregation_rules(a.rows, a.config, "m", None, None, "score")
    assert math.isclose(rules["all_rows"], (8 + 8 + 7 + 3) / 4)
    assert math.isclose(rules["valid_mean"], (8 + 7 + 3) / 3)
    card = tmp_path / "card.csv"
    card.write_text("variant,score\nm,6.50\n", "utf-8")
    (rec,) = schemas.records(check.published_check(a.rows, a.config, check.read_published(str(card), a.config)),
                              schemas.PUBLISHED_CHECK)
    # FastChat's own rule (harness: fastchat_single average) is all_rows here: both named, not ambiguous
    assert rec["reproduced_by"] == ["all_rows", "harness"] and rec["ambiguous"] is None


def test_published_cell_without_rows_is_a_finding_not_an_exit_2(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # scores vary by question (all equal would be a zero-width interval: a degenerate cell)
    f = write(tmp_path / "gpt-4_single.jsonl", _mt_rows({q: [6.0 if q % 2 else 7.0] for q in range(81, 95)}))
    card = tmp_path / "card.csv"
    card.write_text("variant,judge,score\nm,,6.50\nghost,,5.00\nm,claude,6.50\n", "utf-8")
    out = tmp_path / "out"
    code = cli.main(["analyze", f, "--published", str(card), "--resamples", "200", "-q", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    doc = json.loads((out / "results.json").read_text("utf-8"))
    recs = doc["published_check"]
    assert [r["finding"] is None for r in recs] == [True, False, False]
    assert "variant 'ghost' has no rows" in recs[1]["finding"] and "line 3" in recs[1]["finding"]
    assert "judge 'claude' has no rows" in recs[2]["finding"]
    assert "2 cells cannot be checked" in doc["published_summary"]


def test_absent_rows_enter_rows_bounds_and_the_published_summary(tmp_path: Path) -> None:
    """10 of 12 planned present, all valid: the card says 10/12 with bounds, and the summary does
    not claim there are no missing scores."""
    f = write(tmp_path / "gpt-4_single.jsonl", _mt_rows({q: [6.0] for q in range(81, 91)}))
    plan = tmp_path / "plan.csv"
    plan.write_text("scenario,variant,trial,judge\n" + "".join(f"{q}:1,m,1,gpt-4\n" for q in range(81, 93)), "utf-8")
    a = pipeline.run([f], load_config(preset="mt-bench", overrides=FAST), plan=str(plan))
    c = [c for c in a.doc["scorecard"] if c["judge"] is None][0]
    assert (c["valid_n"], c["rows"], c["absent"]) == (10, 12, 2)
    assert math.isclose(c["lower_bound"], (60 + 2 * 1) / 12) and math.isclose(c["upper_bound"], (60 + 20) / 12)
    assert math.isclose(c["zero_filled_mean"], 60 / 12)
    card = tmp_path / "card.csv"
    card.write_text("variant,score\nm,6.00\n", "utf-8")
    (rec,) = schemas.records(check.published_check(a.rows, a.config, check.read_published(str(card), a.config)),
                              schemas.PUBLISHED_CHECK)
    assert "zero_filled_planned" not in rec["reproduced_by"]
    assert math.isclose(rec["rules"]["zero_filled_planned"]["value"], 5.0)
    summary = check.published_summary([rec])
    assert "no missing scores" not in summary and "planned-but-absent" in summary


def test_provenance_finding_for_a_judge_that_disagrees_with_the_file_name(tmp_path: Path) -> None:
    rows = _mt_rows({q: [6.0] for q in range(81, 91)})
    f = write(tmp_path / "claude-3_single.jsonl", rows)
    a = pipeline.run([f], load_config(preset="mt-bench", overrides=FAST))
    (p,) = a.doc["provenance_checks"]
    assert p["finding"] and p["disagree"] == 10 and "'gpt-4' vs 'claude-3' (10)" in p["message"]


def test_config_rejects_bad_native_keys() -> None:
    with pytest.raises(ConfigError, match="explode needs exactly one of field"):
        load_config(overrides={"explode": {"field": "a", "fields": ["b"]}})
    with pytest.raises(ConfigError, match="values.A>B"):
        load_config(overrides={"values": {"A>B": "x"}, "headline": "overall"})
    with pytest.raises(ConfigError, match="reader must be one of inspect"):
        load_config(overrides={"reader": "zip"})
    with pytest.raises(ConfigError, match="harness must be"):
        load_config(overrides={"harness": {"rule": "nope"}})


@pytest.mark.parametrize("name", __import__("workbench.common.config", fromlist=["PRESETS"]).PRESETS)
def test_preset_show_prints_the_shipped_yaml(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    assert cli.main(["preset", "show", name]) == 0
    shown = capsys.readouterr().out
    root = Path(__file__).resolve().parents[1]
    assert shown == (root / "workbench" / "presets" / f"{name}.yaml").read_text("utf-8")
    assert isinstance(yaml.safe_load(shown), dict)
    assert load_config(preset=name).sources == (f"preset:{name}",)


def test_preset_list_names_every_preset(capsys: pytest.CaptureFixture[str]) -> None:
    from workbench.common.config import PRESETS

    assert cli.main(["preset", "list"]) == 0
    assert capsys.readouterr().out.split() == list(PRESETS)
    assert {"mt-bench", "mt-bench-pair", "alpaca-eval", "wildbench", "arena-hard", "inspect"} <= set(PRESETS)


def test_real_data_tests_skip_outside_ci_and_fail_under_ci(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("real_data_mod", Path(__file__).with_name("test_real_data.py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    missing = tmp_path / "nowhere"
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="real judge logs not found"):
        mod.require_real_data(missing)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true and real judge logs not found"):
        mod.require_real_data(missing)


# --------------------------------------------------------------------------- issue 25: plans


def _mt_single(q: int, turn: int, model: str, score: float) -> dict[str, Any]:
    return {"question_id": q, "model": model, "judge": ["gpt-4", "single-v1"], "score": score, "turn": turn}


def _mt_questions(path: Path, qids: list[int], turns: int | None = 2) -> str:
    return write(path, [{"question_id": q, "category": "writing",
                         **({} if turns is None else {"turns": [f"q{q} t{t}" for t in range(1, turns + 1)]})}
                        for q in qids])


def test_mt_bench_question_file_plans_each_turn(tmp_path: Path) -> None:
    # model a is complete (3 questions x 2 turns); model b lacks q83 turn 2
    rows = [_mt_single(q, t, m, 7) for m in ("a", "b") for q in (81, 82, 83) for t in (1, 2)
            if (m, q, t) != ("b", 83, 2)]
    f = write(tmp_path / "data" / "mt_bench" / "model_judgment" / "gpt-4_single.jsonl", rows)
    qs = _mt_questions(tmp_path / "data" / "mt_bench" / "question.jsonl", [81, 82, 83])
    a = pipeline.run([f], load_config(preset="mt-bench", overrides=FAST), plan=qs)
    assert a.doc["plan"]["planned"] == 12 and a.doc["plan"]["unplanned"] == 0
    assert a.doc["ledger"]["missing_planned"] == 1
    absent = a.rows.filter(a.rows["bucket"] == "missing_planned")
    assert absent.select("scenario", "variant").rows() == [("83:2", "b")]
    by = {c["variant"]: c for c in a.doc["scorecard"] if c["judge"] is None and c["subset"] is None}
    assert (by["a"]["rows"], by["a"]["absent"]) == (6, 0)  # complete: nothing missing
    assert (by["b"]["rows"], by["b"]["absent"]) == (6, 1)


def test_mt_bench_pairwise_question_file_plans_each_turn_and_pair(tmp_path: Path) -> None:
    def pair(q: int, t: int) -> dict[str, Any]:
        return {"question_id": q, "turn": t, "model_1": "x", "model_2": "y", "g1_winner": "model_2",
                "g2_winner": "tie", "judge": ["gpt-4", "pair-v2"]}

    rows = [pair(q, t) for q in (81, 82) for t in (1, 2) if (q, t) != (82, 2)]
    f = write(tmp_path / "data" / "mt_bench" / "model_judgment" / "gpt-4_pair.jsonl", rows)
    qs = _mt_questions(tmp_path / "data" / "mt_bench" / "question.jsonl", [81, 82])
    a = pipeline.run([f], load_config(preset="mt-bench-pair", overrides=FAST), plan=qs)
    # 2 questions x 2 turns x 1 pair x 2 positions
    assert a.doc["plan"]["planned"] == 8 and a.doc["plan"]["unplanned"] == 0
    absent = a.rows.filter(a.rows["bucket"] == "missing_planned").sort("trial")
    assert absent.select("scenario", "variant", "trial").rows() == [("82:2", "y", "1"), ("82:2", "y", "2")]
    (p,) = a.doc["harness"]["position_swap"]
    assert (p["absent_items"], p["planned_items"]) == (1, 4)


def test_plan_in_another_key_structure_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from workbench.common.errors import InputError

    rows = [_mt_single(q, t, "a", 7) for q in (81, 82, 83, 84) for t in (1, 2)]
    f = write(tmp_path / "gpt-4_single.jsonl", rows)
    qs = _mt_questions(tmp_path / "question.jsonl", [81, 82, 83, 84], turns=None)  # no turns listed
    with pytest.raises(InputError) as exc:
        pipeline.run([f], load_config(preset="mt-bench", overrides=FAST), plan=qs)
    msg = str(exc.value)
    assert "plan keys do not match the rows' keys: no planned scenario is in the rows" in msg
    assert "plan scenario: '81', '82', '83', ... (4 distinct)" in msg
    assert "rows scenario: '81:1', '81:2', '82:1', ... (8 distinct)" in msg
    assert "the rows' scenario is composite [question_id, turn]" in msg
    assert "the task list gives no 'turn' (no 'turn' field, no 'turns' list)" in msg
    assert "refused rather than counted as 4 missing judgments" in msg
    # a CSV plan keyed by question alone: the same refusal, exit 2 from the CLI
    csv = tmp_path / "plan.csv"
    csv.write_text("scenario,variant,trial,judge\n81,a,1,gpt-4\n82,a,1,gpt-4\n", "utf-8")
    code = cli.main(["analyze", "--preset", "mt-bench", "--plan", str(csv), "--out", str(tmp_path / "o"), f])
    err = capsys.readouterr().err
    assert code == 2
    assert "plan.csv: plan keys do not match the rows' keys" in err
    assert "plan scenario: '81', '82'; rows scenario: '81:1', '81:2', '82:1', ... (8 distinct)" in err


# --------------------------------------------------------------------------- issue 25: check


def _published(path: Path, field: str, cells: list[tuple[str, str, str]]) -> str:
    path.write_text(f"variant,judge,{field}\n" + "".join(f"{v},{j},{x}\n" for v, j, x in cells), "utf-8")
    return str(path)


def test_published_check_names_the_fastchat_pairwise_rule_in_either_unit(tmp_path: Path) -> None:
    def pair(q: int, t: int, g1: str, g2: str) -> dict[str, Any]:
        return {"question_id": q, "turn": t, "model_1": "x", "model_2": "y", "g1_winner": g1,
                "g2_winner": g2, "judge": ["gpt-4", "pair-v2"]}

    games = ([("model_2", "model_2")] * 40 + [("model_1", "model_1")] * 36 + [("tie", "tie")] * 30
             + [("model_2", "model_1")] * 40 + [("model_2", "error")] * 4)
    keys = [(q, t) for q in range(1, 76) for t in (1, 2)]
    f = write(tmp_path / "gpt-4_pair.jsonl", [pair(q, t, *g) for (q, t), g in zip(keys, games, strict=False)])
    # FastChat: the 4 rows with an error game dropped; y: 40 wins, 36 losses, 70 ties of 146 rows,
    # win_rate_adjusted = (40 + 35) / 146 = 0.5136986...; the workbench's per-game valid mean keeps
    # the other game of those rows: (40*200 + 30*100 + 40*100 + 4*100) / 296 = 52.027 percent
    pub = _published(tmp_path / "pub.csv", "winner", [("y", "gpt-4", "0.513699")])
    a = pipeline.run([f], load_config(preset="mt-bench-pair", overrides=FAST), published=pub)
    (rec,) = a.doc["published_check"]
    assert rec["reproduced_by"] == ["harness"]
    assert rec["rules"]["harness"]["value"] == pytest.approx(75 / 146) and rec["rules"]["harness"]["n"] == 146
    assert rec["rules"]["harness_rescaled"]["value"] == pytest.approx(7500 / 146)
    assert rec["valid_mean"] == pytest.approx(15400 / 296)
    assert rec["harness_figure"] == ("fastchat_pairwise win_rate_adjusted (harness: a fraction, as the harness "
                                     "prints it; harness_rescaled: as a percent)")
    assert a.doc["published_summary"] == ("1 of 1 published cell reproduces by the harness's own rule "
                                          "(fastchat_pairwise win_rate_adjusted, as a fraction)")
    # the same figure printed in percent
    pub2 = _published(tmp_path / "pub2.csv", "winner", [("y", "gpt-4", "51.37")])
    b = pipeline.run([f], load_config(preset="mt-bench-pair", overrides=FAST), published=pub2)
    (rec2,) = b.doc["published_check"]
    assert rec2["reproduced_by"] == ["harness_rescaled"]
    assert "(fastchat_pairwise win_rate_adjusted, as a percent)" in b.doc["published_summary"]


def test_published_check_names_the_arena_hard_weighted_score(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "data" / "arena-hard-v0.1" / "model_judgment" / "j"
    f = write(d / "m.jsonl", [
        arena_row("q1", "B>>A", "A>B"),   # model wins both: credit 1 weight 3, 1 weight 1
        arena_row("q2", "A>B", "B>A"),    # loses both: 0 (1), 0 (1)
        arena_row("q3", "A=B", "A=B"),    # ties: 0.5 (1), 0.5 (1)
        arena_row("q4", "A>>B", "B>>A"),  # loses both strongly: 0 (3), 0 (3)
    ])
    # show_result.py v0.1: 100 * (4 + 0 + 1 + 0) / (4 + 2 + 2 + 6) = 35.714...; valid mean 37.5
    pub = _published(tmp_path / "pub.csv", "outcome", [("m", "j", "35.71")])
    a = pipeline.run([f], load_config(preset="arena-hard", overrides=FAST), published=pub)
    (rec,) = a.doc["published_check"]
    assert rec["reproduced_by"] == ["harness"] and rec["valid_mean"] == pytest.approx(37.5)
    assert rec["rules"]["harness"] == {"value": pytest.approx(500 / 14), "n": 8}
    assert rec["rules"]["harness_rescaled"]["value"] == pytest.approx(5 / 14)
    assert a.doc["published_summary"] == ("1 of 1 published cell reproduces by the harness's own rule "
                                          "(arena_hard score, as a percent)")
    # as a fraction, from the CLI: the table names the rule and the figure
    frac = _published(tmp_path / "frac.csv", "outcome", [("m", "j", "0.3571")])
    code = cli.main(["check", "--preset", "arena-hard", "--published", frac, "--resamples", "200",
                     "--min-valid-n", "1", "--min-clusters", "1", "--out", str(tmp_path / "o"), f])
    out = capsys.readouterr().out
    assert code == 1  # not reproduced by the valid mean: the exit code is unchanged
    assert "reproduces by the harness's own rule (arena_hard score, as a fraction)" in out
    assert "harness_rescaled (arena_hard score)" in out
    # a published figure no rule gives still names the nearest, the harness among the candidates
    near = _published(tmp_path / "near.csv", "outcome", [("m", "j", "35.80")])
    c = pipeline.run([f], load_config(preset="arena-hard", overrides=FAST), published=near)
    (rec3,) = c.doc["published_check"]
    assert rec3["reproduced_by"] == [] and rec3["nearest_rule"] == "harness"
    assert rec3["distance"] == pytest.approx(35.80 - 500 / 14)


def test_published_check_names_the_inspect_accuracy_as_a_fraction(tmp_path: Path) -> None:
    # C, I, P, N, C: Inspect's accuracy counts the N sentinel as 0 over 5 scored samples, 2.5 / 5;
    # the valid mean drops it, 2.5 / 4. On a 0-1 scale the figure is a fraction, so the same
    # figure in percent is harness_rescaled
    samples = [{"id": i, "epoch": 1, "scores": {"grader": {"value": v}}}
               for i, v in enumerate("CIPNC", start=1)]
    log = _inspect_log(tmp_path / "log.json", samples)
    for printed, by in (("0.5", "harness"), ("50.0", "harness_rescaled")):
        pub = _published(tmp_path / "pub.csv", "value", [("openai/x", "grader", printed)])
        a = pipeline.run([log], load_config(preset="inspect", overrides=FAST), published=pub)
        (rec,) = a.doc["published_check"]
        assert by in rec["reproduced_by"] and rec["valid_mean"] == pytest.approx(2.5 / 4)
        assert rec["rules"]["harness"] == {"value": pytest.approx(0.5), "n": 5}
        assert rec["rules"]["harness_rescaled"]["value"] == pytest.approx(50.0)
        assert rec["harness_figure"] == ("inspect accuracy (harness: a fraction, as the harness prints it; "
                                         "harness_rescaled: as a percent)")
