"""Rank intervals (workbench.analysis.ranks): hand-computed examples and an end-to-end run.

The expected intervals are worked out by hand in the comments from the definition
rank_low = 1 + #significantly above, rank_high = N - #significantly below.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import workbench as wb
from workbench.analysis import ranks
from workbench.cli import terminal
from workbench.document import build as document


def cell(variant: str, mean: float | None, status: str = "measured", **kw: Any) -> dict[str, Any]:
    return {"variant": variant, "judge": None, "subset": None, "field": "overall", "mean": mean,
            "status": status, **kw}


def contrast(a: str, b: str, higher: str | None, sig: bool | None, **kw: Any) -> dict[str, Any]:
    return {"a": a, "b": b, "field": "overall", "subset": None, "judge": None, "higher": higher,
            "holm_significant": sig, **kw}


def intervals(card: list[dict[str, Any]], cons: list[dict[str, Any]]) -> dict[str, Any]:
    """The ranks stage on hand-made scorecard and contrast tables, as results.json has it."""
    return document.ranks_section(ranks.rank_intervals(pl.DataFrame(card), pl.DataFrame(cons), "overall", 0.05))


def by_name(doc: dict[str, Any]) -> dict[str, tuple[Any, Any, Any]]:
    return {c["variant"]: (c["rank_low"], c["rank_high"], c["rank_distinguishable"]) for c in doc["cells"]}


def test_three_variants_one_significant_contrast_by_hand() -> None:
    # means A 8 > B 7 > C 6; only A - C is Holm-significant (A higher).
    # A: nothing above -> low 1; C below -> high 3 - 1 = 2      => 1..2
    # B: separated from nobody                                  => 1..3
    # C: A above -> low 2; nothing below -> high 3              => 2..3
    card = [cell("B", 7.0), cell("A", 8.0), cell("C", 6.0)]
    cons = [contrast("A", "B", None, False), contrast("A", "C", "A", True), contrast("B", "C", None, False)]
    doc = intervals(card, cons)
    assert by_name(doc) == {"A": (1, 2, False), "B": (1, 3, False), "C": (2, 3, False)}
    assert [c["variant"] for c in doc["cells"]] == ["A", "B", "C"]
    a, b, c = doc["cells"]
    assert a["below"] == ["C"] and a["above"] == [] and a["tied_with"] == ["B"]
    assert b["tied_with"] == ["A", "C"] and c["above"] == ["A"]
    assert doc["measured"] == 3 and doc["pairs_possible"] == 3 and doc["pairs_compared"] == 3
    assert doc["complete"] is True and all(x["not_compared"] == [] for x in doc["cells"])
    assert [ranks.rank_label(x) for x in doc["cells"]] == ["1-2", "1-3", "2-3"]


def test_all_separated_gives_distinguishable_ranks_and_unmeasured_cells_none() -> None:
    # A > B > C, every pair significant: 1, 2, 3. D has the highest mean but is not measured:
    # never ranked, and its (significant) contrasts do not move anyone's interval.
    card = [cell("A", 8.0), cell("B", 7.0), cell("C", 6.0), cell("D", 9.5, "insufficient")]
    cons = [contrast("A", "B", "A", True), contrast("A", "C", "A", True), contrast("C", "B", "B", True),
            contrast("D", "A", "D", True), contrast("D", "C", "D", True)]
    doc = intervals(card, cons)
    assert by_name(doc) == {"A": (1, 1, True), "B": (2, 2, True), "C": (3, 3, True), "D": (None, None, None)}
    assert doc["cells"][-1]["variant"] == "D" and doc["cells"][-1]["tied_with"] is None
    assert doc["measured"] == 3


def test_raw_significance_without_holm_does_not_separate() -> None:
    # an interval excluding 0 (higher set) but not Holm-significant is not a separation;
    # a subset contrast or another field never counts.
    card = [cell("A", 8.0), cell("B", 7.0)]
    cons = [contrast("A", "B", "A", False),
            {**contrast("A", "B", "A", True), "subset": "hard"},
            {**contrast("A", "B", "A", True), "field": "depth"}]
    assert by_name(intervals(card, cons)) == {"A": (1, 2, False), "B": (1, 2, False)}


def test_a_pair_without_a_contrast_counts_as_not_separated() -> None:
    # configured/capped contrasts: A-B and A-C computed and significant, B-C not computed.
    # A: 1..1; B: A above -> 2, nothing below (B-C missing) -> 3; C: 2..3
    card = [cell("A", 9.0), cell("B", 5.0), cell("C", 1.0)]
    cons = [contrast("A", "B", "A", True), contrast("C", "A", "A", True)]
    doc = intervals(card, cons)
    assert by_name(doc) == {"A": (1, 1, True), "B": (2, 3, False), "C": (2, 3, False)}
    assert doc["pairs_compared"] == 2 and doc["pairs_possible"] == 3 and doc["complete"] is False
    b = doc["cells"][1]
    assert b["tied_with"] == ["C"] and b["not_compared"] == ["C"]
    assert "2 of 3 pairs" in ranks.basis_text(doc)


def _rows(path: Path, means: dict[str, float], sd: float, scenarios: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    lines = []
    for v, m in means.items():
        for s in range(scenarios):
            for t in (1, 2):
                x = float(np.clip(np.round(m + rng.normal(0, sd)), 1, 10))
                lines.append(json.dumps({"scenario": f"s{s}", "variant": v, "trial": t, "judge": "j",
                                         "overall": x}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def cfg() -> wb.Config:
    return wb.load_config(overrides={"bootstrap": {"resamples": 200, "seed": 3}, "scores": {"overall": "overall"}})


def test_end_to_end_clear_order_and_a_tie(tmp_path: Path, cfg: wb.Config) -> None:
    # A ~ 9, B ~ 5, C ~ 5 (same mean): A is clearly first; B and C share ranks 2..3.
    path = _rows(tmp_path / "r.jsonl", {"A": 9.0, "B": 5.0, "C": 5.0}, 0.7, 12, 11)
    a = wb.run(path, cfg)
    bc = next(c for c in a.doc["contrasts"] if {c["a"], c["b"]} == {"B", "C"} and c["subset"] is None)
    assert bc["holm_significant"] is False  # the design makes B-C a tie
    got = by_name(a.doc["ranks"])
    assert got == {"A": (1, 1, True), "B": (2, 3, False), "C": (2, 3, False)}
    assert a.frame("ranks").height == 3
    text = terminal.scorecard_text(a.doc) or ""
    rank_col = {line.split()[1]: line.split()[0] for line in text.splitlines()[3:6]}
    assert rank_col == {"A": "1", "B": "2-3", "C": "2-3"}
    assert "Holm-adjusted contrasts" in text


def test_report_scorecard_shows_the_interval_not_a_mean_order(tmp_path: Path) -> None:
    from workbench import report

    # two variants 0.1 apart with sd 2 on 6 scenarios: not separated, both ranks 1..2
    path = _rows(tmp_path / "r.jsonl", {"A": 6.0, "B": 5.9}, 2.0, 6, 5)
    rep = report.build(path, resamples=200, seed=3, out=tmp_path / "out", write_outputs=False)
    assert by_name(rep.doc["ranks"]) == {"A": (1, 2, False), "B": (1, 2, False)}
    html = str(report.scorecard_tables(rep))
    assert html.count("1\u20132 <span class=\"wb-dim\">not distinguishable</span>") == 2
    assert "Holm-adjusted contrasts" in html


def test_tied_lists_are_not_written_past_the_list_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 28: 5,000 variants wrote N**2 names in tied_with/not_compared (1.04 GB results.json,
    95 MB after). Past ranks.LIST_LIMIT measured cells both are null; the ranks and above/below
    are those of the listed run, and the unlisted tied cells number rank_high - rank_low."""
    card = [cell("B", 7.0), cell("A", 8.0), cell("C", 6.0)]
    cons = [contrast("A", "B", None, False), contrast("A", "C", "A", True), contrast("B", "C", None, False)]
    listed = intervals(card, cons)
    monkeypatch.setattr(ranks, "LIST_LIMIT", 2)
    capped = intervals(card, cons)
    assert by_name(capped) == by_name(listed)
    for full, cut in zip(listed["cells"], capped["cells"], strict=True):
        assert cut["tied_with"] is None and cut["not_compared"] is None
        assert (cut["above"], cut["below"]) == (full["above"], full["below"])
        assert cut["rank_high"] - cut["rank_low"] == len(full["tied_with"])
