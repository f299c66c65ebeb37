"""The board (issue 26): one row per variant, sorted, the valid-row figure at the decimals its
interval supports, its rank interval, missing share and status, the harness's own figure beside
it; first in the report and the terminal. Values are checked against the stage records they come
from (a hand-built document, the example's golden results, real harness files)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from test_real_data import files, require_real_data

from workbench.analysis import board
from workbench.cli import terminal
from workbench.common.config import load_config
from workbench.document import pipeline

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "example_results.json"


@pytest.mark.parametrize(("lo", "hi", "nd"), [
    (7.22, 8.40, 2),      # half-width 0.59: two significant digits -> 2 decimals
    (0.45, 0.55, 3),      # 0.05 -> 3
    (40.0, 64.0, 0),      # 12 -> 0
    (0.5, 0.5, 2),        # zero width: the default
    (None, 1.0, 2),
    (0.1234567, 0.1234569, 6),  # capped at 6
])
def test_decimals_follow_the_interval(lo: float | None, hi: float | None, nd: int) -> None:
    assert board.decimals(lo, hi) == nd


def _cell(variant: str, mean: float | None, status: str = "measured", lo: float = 1.0, hi: float = 2.0) -> dict:
    return {"variant": variant, "judge": None, "subset": None, "field": "score", "mean": mean, "valid_n": 9,
            "rows": 10, "ci_low": lo, "ci_high": hi, "ci_method": "cluster_cr2_bm", "clusters": 5, "status": status,
            "zero_filled_mean": None}


def test_board_by_hand() -> None:
    doc: dict[str, Any] = {
        "config": {"headline": "score"},
        "scorecard": [_cell("b", 5.0), _cell("a", 6.0), _cell("c", 9.0, status="insufficient"),
                      {**_cell("a", 1.0), "judge": "j1"}],
        "ranks": {"cells": [{"variant": "a", "rank_low": 1, "rank_high": 1, "rank_distinguishable": True},
                            {"variant": "b", "rank_low": 2, "rank_high": 2, "rank_distinguishable": True}]},
        "census_margins": [{"judge": None, "variant": "a", "missing": 1, "judgments": 10, "missing_rate": 0.1,
                            "missing_planned": 1},
                           {"judge": "j1", "variant": None, "missing": 5, "judgments": 30, "missing_rate": 1 / 6}],
        "harness": {"rule": "fastchat_single", "figures": [
            {"variant": "a", "judge": "j1", "figure": "average", "value": 6.004, "n": 10, "note": None},
            {"variant": "b", "judge": "j1", "figure": "average", "value": 4.5, "n": 10, "note": "a re-run counted"},
            {"variant": "b", "judge": "j1", "figure": "turn 1", "value": 4.0, "n": 5, "note": None}]},
    }
    (b,) = board.build(doc)
    assert b["field"] == "score" and b["harness_figure"] == "average"
    # measured cells by mean, high first; the insufficient one after, whatever its mean
    assert [r["variant"] for r in b["rows"]] == ["a", "b", "c"]
    a, bb, c = b["rows"]
    assert (a["rank_low"], a["rank_high"], a["missing"], a["judgments"], a["absent"]) == (1, 1, 1, 10, 1)
    assert c["rank_low"] is None and c["missing"] is None
    # interval [1, 2]: half-width 0.5 -> 2 decimals; 6.004 and 6.0 agree at 2 decimals
    assert a["decimals"] == 2 and a["harness_value"] == 6.004 and a["harness_differs"] is False
    assert bb["harness_differs"] is True and bb["harness_why"] == "a re-run counted"
    assert c["harness_value"] is None and "no such line" in c["harness_why"]
    assert "position_swap_disagreement" not in a
    text = terminal.board_text({**doc, "board": [b]})
    assert text is not None
    lines = text.splitlines()
    assert lines[3].split()[:3] == ["1", "a", "6.00"] and "4.50 (differs)" in lines[4]
    assert "harness differs for b: a re-run counted" in text


def test_example_board_is_the_scorecard_sorted() -> None:
    doc = json.loads(GOLDEN.read_text("utf-8"))
    (b,) = doc["board"]
    hl = doc["config"]["headline"]
    pooled = {c["variant"]: c for c in doc["scorecard"]
              if c["judge"] is None and c["subset"] is None and c["field"] == hl}
    assert sorted(r["variant"] for r in b["rows"]) == sorted(pooled)
    measured = [r for r in b["rows"] if r["status"] == "measured"]
    assert [r["mean"] for r in measured] == sorted((r["mean"] for r in measured), reverse=True)
    assert b["rows"][:len(measured)] == measured
    margins = {m["variant"]: m for m in doc["census_margins"] if m["judge"] is None and m["variant"]}
    for r in b["rows"]:
        c = pooled[r["variant"]]
        assert (r["mean"], r["valid_n"], r["rows"], r["ci_low"], r["ci_high"]) == (
            c["mean"], c["valid_n"], c["rows"], c["ci_low"], c["ci_high"])
        assert r["missing"] == margins[r["variant"]]["missing"]


def test_real_mt_bench_board_carries_the_harness_average(tmp_path: Path) -> None:
    require_real_data()
    a = pipeline.run(files("wgm20__FastChat", "fastchat/llm_judge/data/mt_bench/model_judgment/gpt-4_single.jsonl"),
                     load_config(preset="mt-bench", overrides={"bootstrap": {"resamples": 200}}))
    (b,) = a.doc["board"]
    avg = {f["variant"]: f["value"] for f in a.doc["harness"]["figures"] if f["figure"] == "average"}
    assert len(b["rows"]) == 5 and {r["variant"] for r in b["rows"]} == set(avg)
    for r in b["rows"]:
        assert r["harness_value"] == avg[r["variant"]]
    # one cluster per question (issue 24): 80 questions, one model lost every turn of one
    assert sorted(r["clusters"] for r in b["rows"]) == [79, 80, 80, 80, 80]
    # the terminal prints the board first
    out = tmp_path / "out.txt"
    with out.open("w") as fh:
        terminal.print_analysis(a, fh)
    assert out.read_text().startswith("board: score")


def test_real_pairwise_board_adds_the_position_swap() -> None:
    require_real_data()
    a = pipeline.run(files("lesnikow__fast-chat", "**/gpt-4-turbo_pair.jsonl"),
                     load_config(preset="mt-bench-pair", overrides={"bootstrap": {"resamples": 200}}))
    (b,) = a.doc["board"]
    swaps = {p["variant"]: p for p in a.doc["harness"]["position_swap"]}
    for r in b["rows"]:
        p = swaps[r["variant"]]
        assert r["position_swap_disagreement"] == p["disagree"] / p["both_usable"]
    assert any(re.search(r"win_rate_adjusted", str(x)) for x in (b["harness_figure"],))
