"""Harness rules line for line (workbench.analysis.harness): what show_result.py itself does with a
null game, a one-game row, a label its version does not know, a v2.0-shaped row in a folder
not named v2, and categories. Expected values are hand calculations from the harness source
(lmarena/arena-hard-auto show_result.py v0.1 get_battles_from_row, v2.0 load_judgments)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from workbench.common.config import load_config
from workbench.document import pipeline

FAST = {"bootstrap": {"resamples": 200}, "min_valid_n": 1, "min_clusters": 1}


def _write(path: Path, rows: list[dict[str, Any]]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return str(path)


def _game(label: str | None) -> dict[str, Any]:
    return {"score": label, "judgment": "..."}


def _all_figs(*fs: str) -> list[dict[str, Any]]:
    return pipeline.run(list(fs), load_config(preset="arena-hard", overrides=FAST)).doc["harness"]["figures"]


def _figs(f: str) -> list[dict[str, Any]]:
    """The model's own records (the baseline's line is one more, see the tests at the end)."""
    return [x for x in _all_figs(f) if x["variant"] == "m"]


def _v2(uid: str, g1: str | None, g2: str | None, category: str = "hard_prompt") -> dict[str, Any]:
    return {"uid": uid, "category": category, "judge": "j", "model": "m", "baseline": "base",
            "games": [_game(g1), _game(g2)]}


def test_a_v2_shaped_row_is_read_by_v2_rules_whatever_the_folder(tmp_path: Path) -> None:
    """A translation fork's folder without "v2" in its name: the rows carry uid, so v2.0's
    load_judgments read them and drop the row with a null score whole (line 31). Game credit
    for the model: game 2 label as is, game 1 mirrored; >> counts 3 times.
      u1: g1 B>A -> 1 (w1), g2 A>B -> 1 (w1)
      u2: g1 A>>B -> 0 (w3), g2 B>A -> 0 (w1)
      u3: g1 null, g2 A>>B -> v2 drops the row; v0.1 would keep 1 (w3)
      u4: g1 A=B -> 0.5, g2 A=B -> 0.5
    v2.0: (1 + 1 + 0 + 0 + 0.5 + 0.5) / (1 + 1 + 3 + 1 + 1 + 1) = 3 / 8."""
    rows = [_v2("u1", "B>A", "A>B"), _v2("u2", "A>>B", "B>A"), _v2("u3", None, "A>>B"), _v2("u4", "A=B", "A=B")]
    f = _write(tmp_path / "data" / "m-arena-hard" / "model_judgment" / "j" / "m.jsonl", rows)
    (fig,) = _figs(f)
    assert math.isclose(fig["value"], 100 * 3 / 8, rel_tol=1e-12)
    assert fig["note"].startswith("v2.0 vs baseline base") and "1 row(s) with a null game dropped whole" in fig["note"]
    assert "unseeded bootstrap" in fig["note"] and "category hard_prompt (the default --category)" in fig["note"]
    # the same rows keyed by question_id (v0.1-shaped) in the same folder: v0.1 keeps u3's game 2
    old = [{**{k: v for k, v in r.items() if k not in ("uid", "category")}, "question_id": r["uid"]} for r in rows]
    (fig1,) = _figs(_write(tmp_path / "v01" / "data" / "m-arena-hard" / "model_judgment" / "j" / "m.jsonl", old))
    assert math.isclose(fig1["value"], 100 * (3 + 3) / (8 + 3), rel_tol=1e-12)
    assert fig1["note"].startswith("v0.1")


def test_v01_knows_five_labels_v2_ten(tmp_path: Path) -> None:
    """get_battles_from_row (v0.1) gives a battle only for A=B, A>B, A>>B, B>A, B>>A: the
    game labelled A<<B (model much better, in game 1) gets weight 0 there; v2.0's
    label_to_score counts it 3 times.
      q1: g1 A<<B (v0.1 dropped; v2 1 x3), g2 B>A -> 0 (w1)
      q2: g1 B>>A -> 1 (w3), g2 A>B -> 1 (w1)
    v0.1: (0 + 3 + 1) / (1 + 3 + 1) = 4 / 5; v2.0: (3 + 0 + 3 + 1) / (3 + 1 + 3 + 1) = 7 / 8."""
    q = [("q1", "A<<B", "B>A"), ("q2", "B>>A", "A>B")]
    v01 = [{"question_id": a, "model": "m", "judge": "j", "games": [_game(b), _game(c)]} for a, b, c in q]
    (fig,) = _figs(_write(tmp_path / "data" / "arena-hard-v0.1" / "model_judgment" / "j" / "m.jsonl", v01))
    assert math.isclose(fig["value"], 100 * 4 / 5, rel_tol=1e-12)
    assert "1 game(s) without a v0.1 verdict dropped" in fig["note"]
    v2 = [_v2(a, b, c) for a, b, c in q]
    (fig2,) = _figs(_write(tmp_path / "data" / "arena-hard-v2.0" / "model_judgment" / "j" / "m.jsonl", v2))
    assert math.isclose(fig2["value"], 100 * 7 / 8, rel_tol=1e-12)


def test_a_one_game_row_stops_both_versions(tmp_path: Path) -> None:
    """games[1] of a one-game row raises IndexError in both versions: no figure, and why."""
    v2 = [_v2("u1", "B>A", "A>B"), {**_v2("u2", "B>A", "A>B"), "games": [_game("B>A")]}]
    (fig,) = _figs(_write(tmp_path / "data" / "arena-hard-v2.0" / "model_judgment" / "j" / "m.jsonl", v2))
    assert fig["value"] is None and fig["n"] is None
    assert "m.jsonl:2 has 1 game(s): games[1] raises IndexError" in fig["note"]
    assert "prints no figure" in fig["note"]


def test_v2_categories_are_separate_leaderboards(tmp_path: Path) -> None:
    """show_result.py v2.0 filters battles to each --category (default hard_prompt): a file of
    two categories gives one figure per category, each on its own rows."""
    rows = [_v2("u1", "B>A", "A>B"), _v2("u2", "A>B", "B>A"),                  # hard: 2 / 4
            _v2("c1", "B>>A", "A>B", "creative_writing")]                      # creative: 4 / 4
    figs = {f["figure"]: f for f in _figs(_write(tmp_path / "data" / "arena-hard-v2.0" / "model_judgment"
                                                 / "j" / "m.jsonl", rows))}
    assert set(figs) == {"score", "score (creative_writing)"}
    assert math.isclose(figs["score"]["value"], 50.0, rel_tol=1e-12)
    assert math.isclose(figs["score (creative_writing)"]["value"], 100.0, rel_tol=1e-12)
    assert "printed only with --category creative_writing" in figs["score (creative_writing)"]["note"]


# ------------------------------------------------------------------ the baseline's printed line


def test_the_baseline_line_is_printed_at_50_by_both_versions(tmp_path: Path) -> None:
    """show_result.py prints one line per model of the fit, and the baseline is one of them:
    v0.1 puts it as model_a of every battle (win rate against itself: fillna(0.5) -> 50),
    v2.0's format_confidence_interval appends it at 50.0. A file without a row for the
    baseline still prints its line: the record set is {model, baseline}.
      v0.1 q1: g1 B>A -> model wins (w1), g2 B>A -> model loses (w1): 1 / 2 -> 50.0
           q2: g1 A>B -> loss (w1), g2 A>>B -> model wins (w3): 3 / 4
      model: (1 + 0 + 0 + 3) / (1 + 1 + 1 + 3) = 4 / 6."""
    v01 = [{"question_id": q, "model": "m", "judge": "j", "games": [_game(a), _game(b)]}
           for q, a, b in (("q1", "B>A", "B>A"), ("q2", "A>B", "A>>B"))]
    figs = {f["variant"]: f for f in _all_figs(
        _write(tmp_path / "data" / "arena-hard-v0.1" / "model_judgment" / "j" / "m.jsonl", v01))}
    assert set(figs) == {"m", "gpt-4-0314"}
    assert math.isclose(figs["m"]["value"], 100 * 4 / 6, rel_tol=1e-12)
    base = figs["gpt-4-0314"]
    assert (base["value"], base["n"], base["judge"], base["figure"]) == (50.0, None, "j", "score")
    assert "model_a of every battle" in base["note"] and "no rows of its own" in base["note"]
    # v2.0: the row's own baseline, per printed category
    v2 = [_v2("u1", "B>A", "A>B"), _v2("c1", "A>B", "B>A", "creative_writing")]
    got = {(f["variant"], f["figure"]): f["value"] for f in _all_figs(
        _write(tmp_path / "data" / "arena-hard-v2.0" / "model_judgment" / "j" / "m.jsonl", v2))}
    assert got == {("m", "score"): 100.0, ("m", "score (creative_writing)"): 0.0,
                   ("base", "score"): 50.0, ("base", "score (creative_writing)"): 50.0}


def test_a_row_that_stops_the_script_stops_every_model_of_the_judge_folder(tmp_path: Path) -> None:
    """v0.1 reads data/arena-hard-v0.1/model_judgment/<judge>/*.jsonl at once: a one-game row
    in one model's file raises IndexError before anything is printed, so the other model of
    the same judge gets no figure either (and nor does the baseline); another judge is another
    run of the script and prints as usual."""
    d = tmp_path / "data" / "arena-hard-v0.1" / "model_judgment"
    ok = [{"question_id": "q1", "model": "ok", "judge": "j", "games": [_game("B>A"), _game("A>B")]}]
    bad = [{"question_id": "q1", "model": "bad", "judge": "j", "games": [_game("B>A")]}]
    other = [{**ok[0], "judge": "k"}]
    figs = {(f["variant"], f["judge"]): f for f in _all_figs(
        _write(d / "j" / "ok.jsonl", ok), _write(d / "j" / "bad.jsonl", bad), _write(d / "k" / "ok.jsonl", other))}
    assert set(figs) == {("ok", "j"), ("bad", "j"), ("gpt-4-0314", "j"), ("ok", "k"), ("gpt-4-0314", "k")}
    for key in (("ok", "j"), ("bad", "j"), ("gpt-4-0314", "j")):
        assert figs[key]["value"] is None
        assert "bad.jsonl:1 has 1 game(s): games[1] raises IndexError" in figs[key]["note"]
    assert figs[("ok", "k")]["value"] == 100.0 and figs[("gpt-4-0314", "k")]["value"] == 50.0


def test_wildbench_prints_nothing_for_a_file_its_name_filter_skips(tmp_path: Path) -> None:
    """_create_tables.py line 86 skips a file whose name contains "128" (and 256, ... 1024): the
    model never reaches score.json, so its records have no value; the note says why and
    what the rule would give: scores 6, 7, 9 -> mean 22/3, adjusted (22/3 - 5) * 2 = 14/3."""
    d = tmp_path / "eval_results" / "v2.0625" / "score.v2" / "eval=judge-x"
    d.mkdir(parents=True)
    rows = [{"session_id": f"s{i}", "score": str(v), "model_test": "org/m-128k", "model_output": "x",
             "parsed_result": {"score": str(v)}} for i, v in enumerate((6, 7, 9))]
    (d / "m-128k.json").write_text(json.dumps(rows), "utf-8")
    (d / "m.json").write_text(json.dumps([{**r, "model_test": "org/m"} for r in rows]), "utf-8")
    a = pipeline.run([str(d / "m-128k.json"), str(d / "m.json")], load_config(preset="wildbench", overrides=FAST))
    got = {(f["variant"], f["figure"]): f for f in a.doc["harness"]["figures"]}
    assert set(got) == {(v, k) for v in ("m-128k", "m") for k in ("score", "adjusted_score", "total")}
    for k in ("score", "adjusted_score", "total"):
        skipped = got[("m-128k", k)]
        assert skipped["value"] is None and skipped["n"] is None
        assert "skips this file (its name contains '128'" in skipped["note"]
        assert "its rule would give score 7.333333333, adjusted_score 4.666666667, total 3" in skipped["note"]
    assert math.isclose(got[("m", "score")]["value"], 22 / 3, rel_tol=1e-12)
    assert math.isclose(got[("m", "adjusted_score")]["value"], 14 / 3, rel_tol=1e-12)
    assert got[("m", "total")]["value"] == 3
