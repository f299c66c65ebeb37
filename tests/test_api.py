"""The analyst's API: ``import workbench`` gives each stage as a DataFrame, and the stage
modules stay importable by name (no API function shadows a submodule)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import workbench as wb

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "data" / "example"


def test_submodules_are_not_shadowed() -> None:
    # the layer packages, and the flat names of earlier releases (wb.census...) that now resolve
    # to the module's new home (workbench/__init__.py _MOVED)
    for name in ("common", "stats", "ingest", "reduce", "analysis", "sim", "document", "report", "cli"):
        mod = importlib.import_module(f"workbench.{name}")
        assert getattr(wb, name, mod) is mod, f"workbench.{name} is shadowed by {getattr(wb, name)!r}"
    for name, home in (("census", "analysis.census"), ("scorecard", "analysis.scorecard"),
                       ("paired", "analysis.paired"), ("check", "analysis.check"), ("ledger", "ingest.ledger")):
        mod = importlib.import_module(f"workbench.{home}")
        assert getattr(wb, name) is mod, f"wb.{name} is {getattr(wb, name)!r}, not workbench.{home}"


def test_api_frames_match_the_pipeline() -> None:
    cfg = wb.load_config(str(EX / "config.yaml"), overrides={"bootstrap": {"resamples": 200}})
    a = wb.run([str(EX / "judge_rows.jsonl")], cfg, plan=str(EX / "plan.csv"))
    rows = a.rows
    assert wb.census_table(rows, cfg).equals(a.frame("census"))
    assert wb.scorecard_table(rows, cfg).equals(a.frame("scorecard"))
    offs = wb.judge_offsets(rows, cfg)
    assert offs.height == len(a.doc["judge_offsets"])
    assert offs["mean_diff"].to_list() == [o["mean_diff"] for o in a.doc["judge_offsets"]]
    con = wb.contrasts(rows, cfg)
    assert con["diff"].to_list() == [c["diff"] for c in a.doc["contrasts"]]
    claims = wb.claims(rows, cfg, str(EX / "claims.yaml"))
    # the example's three claims (data/example/README.md): two refuted and one that holds
    # claim 2: its own 95% interval [0.13, 1.11] excludes 0, its Holm 97.5% one [-0.09, 1.32] does not
    assert claims["verdict"].to_list() == ["refuted", "refuted", "holds"]
    pub = wb.published_check(rows, cfg, str(EX / "published_scorecard.csv"))
    assert pub.height == 12 and isinstance(pub, pl.DataFrame)
    pdf = wb.scorecard_table(rows, cfg).to_pandas()
    assert len(pdf) == a.frame("scorecard").height


def test_run_takes_a_path_or_a_list_and_a_config_or_its_path() -> None:
    one = wb.run("data/example/judge_rows.jsonl", "data/example/config.yaml")
    many = wb.run([Path("data/example/judge_rows.jsonl")], wb.load_config("data/example/config.yaml"))
    assert one.doc == many.doc
    assert one.doc["ledger"]["lines"] == len(Path("data/example/judge_rows.jsonl").read_bytes().splitlines())
    rows, cfg = wb.load_rows(Path("data/example/judge_rows.jsonl"), Path("data/example/config.yaml"))
    assert rows.height == one.rows.height and cfg.headline == one.config.headline


def test_wrong_frame_name_lists_the_valid_ones_and_display_is_compact() -> None:
    a = wb.run("data/example/judge_rows.jsonl", "data/example/config.yaml")
    with pytest.raises(KeyError) as err:
        a.frame("scorcard")
    assert "did you mean 'scorecard'" in str(err.value) and "census_margins" in str(err.value)
    shown = a._repr_html_()
    assert len(shown) < 2000 and "286 lines" in shown and "scorecard" in shown
    assert len(repr(a)) < 300


def test_every_stage_runs_with_one_blas_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """results.json must not depend on the core count: BLAS products round differently when
    split over threads, so the whole run holds BLAS to one thread (seen from inside a stage)."""
    from threadpoolctl import threadpool_info

    from workbench.analysis import paired
    from workbench.document import pipeline

    seen: list[int] = []
    real = paired.contrasts

    def spy(*a: Any, **k: Any) -> Any:
        seen.extend(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
        return real(*a, **k)

    monkeypatch.setattr(paired, "contrasts", spy)
    pipeline.run([str(EX / "judge_rows.jsonl")], str(EX / "config.yaml"))
    assert seen and set(seen) == {1}


def test_explore_board_cells_and_every_frame() -> None:
    """Issue 26: the notebook's exploring API: ``board()``, ``cells()`` (the headline slice
    without a three-condition filter), and ``frame(name)`` for every table, the ledger included."""
    a = wb.run("data/example/judge_rows.jsonl", "data/example/config.yaml")
    hl = a.config.headline
    card = a.frame("scorecard")
    pooled = card.filter(pl.col("field") == hl, pl.col("judge").is_null(), pl.col("subset").is_null())
    cells = a.cells()
    assert cells.height == pooled.height == 6 and cells.height < card.height  # 6 variants in the example
    assert cells["mean"].to_list() == pooled.sort("variant")["mean"].to_list()
    judge = card["judge"].drop_nulls()[0]
    assert a.cells(judge=judge).height == card.filter(pl.col("field") == hl, pl.col("judge") == judge,
                                                      pl.col("subset").is_null()).height
    with pytest.raises(KeyError, match="fields:"):
        a.cells(field="nope")
    board = a.board()
    assert board["variant"].to_list() == [r["variant"] for r in a.doc["board"][0]["rows"]]
    assert a.frame("board").equals(board)
    ledger = a.frame("ledger")
    counts = dict(zip(ledger["bucket"].to_list(), ledger["lines"].to_list(), strict=True))
    assert counts["lines"] == 286 and counts == a.doc["ledger"]
    assert a.frame("rows") is a.rows
    assert set(a.frame("methods")["name"]) == {m["name"] for m in a.doc["methods"]}
    for name in a.frame_names():
        assert isinstance(a.frame(name), pl.DataFrame), name
    with pytest.raises(KeyError, match="did you mean 'ledger'"):
        a.frame("ledgr")
