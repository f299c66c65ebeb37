"""Self-preference (issue 27): the difference-in-differences of :mod:`workbench.analysis.selfpref`.

Reference values are hand calculations spelled out in comments, or the planted truth of the
simulator; never the function under test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import read_records
from scipy import stats as sps

import workbench as wb
from workbench.analysis import selfpref
from workbench.common.errors import ConfigError
from workbench.document import pipeline
from workbench.sim import synth

JA, JO = "anthropic/claude-3", "openai/gpt-4o"  # judges: families anthropic, openai
WRITERS = {"v_claude": "anthropic/claude-3-haiku", "v_gpt": "openai/gpt-4o-mini"}


def _cfg(**over: Any) -> wb.Config:
    base: dict[str, Any] = {"bootstrap": {"resamples": 200, "seed": 5}, "scores": {"overall": "overall"},
                            "writer": WRITERS}
    base.update(over)
    return wb.load_config(overrides=base)


def _rows(lines: list[dict[str, Any]], cfg: wb.Config) -> Any:
    return read_records(lines, cfg)


def _line(s: str, v: str, t: int, j: str, x: int | None) -> dict[str, Any]:
    rec: dict[str, Any] = {"scenario": s, "variant": v, "trial": t, "judge": j}
    if x is not None:
        rec["overall"] = x
    return rec


# (scenario, variant, trial): (score of JA, score of JO); None = missing
HAND = {
    ("s1", "v_claude", 1): (8, 6), ("s1", "v_claude", 2): (7, 6),   # d 2, 1   -> 1.5
    ("s1", "v_gpt", 1): (5, 5), ("s1", "v_gpt", 2): (6, 5),         # d 0, 1   -> 0.5   c1 = 1.0
    ("s2", "v_claude", 1): (9, 7), ("s2", "v_claude", 2): (None, 7),  # d 2      -> 2.0
    ("s2", "v_gpt", 1): (6, 7), ("s2", "v_gpt", 2): (6, 6),         # d -1, 0  -> -0.5  c2 = 2.5
    ("s3", "v_claude", 1): (6, 6), ("s3", "v_claude", 2): (7, 6),   # d 0, 1   -> 0.5
    ("s3", "v_gpt", 1): (5, 6), ("s3", "v_gpt", 2): (5, 5),         # d -1, 0  -> -0.5  c3 = 1.0
    ("s4", "v_claude", 1): (7, None),                               # not shared
    ("s4", "v_gpt", 1): (4, 4),                                     # s4: one family only, dropped
}


def _hand_lines() -> list[dict[str, Any]]:
    out = []
    for (s, v, t), (a, o) in HAND.items():
        out += [_line(s, v, t, JA, a), _line(s, v, t, JO, o)]
    return out


def test_default_family() -> None:
    assert selfpref.default_family("openai/gpt-4o") == "openai"
    assert selfpref.default_family("claude-3-opus") == "claude"
    assert selfpref.default_family("GPT-4o-mini") == "gpt"
    assert selfpref.default_family("7b-model") == "7b-model"


def test_config_writer_and_families() -> None:
    cfg = _cfg(families={"openai/gpt-4o": "oai"})
    assert cfg.writer_map == WRITERS and cfg.writer_field is None
    assert selfpref.family_of("openai/gpt-4o", cfg) == ("oai", "config")
    assert selfpref.family_of("openai/gpt-4o-mini", cfg) == ("openai", "default")
    f = wb.load_config(overrides={"writer": "meta.generator"})
    assert f.writer_field == ("meta", "generator") and "__writer" in f.extra_fields
    with pytest.raises(ConfigError, match="writer must be"):
        wb.load_config(overrides={"writer": [1, 2]})
    with pytest.raises(ConfigError, match="families.x"):
        wb.load_config(overrides={"families": {"x": [1]}})


def test_hand_example() -> None:
    """c_s per scenario (comments in HAND): 1.0, 2.5, 1.0; mean 1.5; sd^2 = (0.25 + 1 + 0.25) / 2
    = 0.75; se = sqrt(0.75 / 3) = 0.5; t(2) interval 1.5 -/+ 4.3027 * 0.5; p = 2 P(T_2 > 3)."""
    cfg = _cfg()
    sec = selfpref.self_preference(_rows(_hand_lines(), cfg), cfg)
    assert sec["identified"] and sec["method"] == selfpref.METHOD
    (rec,) = sec["pairs"]
    assert (rec["judge_a"], rec["family_a"], rec["judge_b"], rec["family_b"]) == (JA, "anthropic", JO, "openai")
    t = sps.t.ppf(0.975, 2)
    assert rec["estimate"] == pytest.approx(1.5)
    assert rec["se"] == pytest.approx(0.5) and rec["df"] == pytest.approx(2)
    assert rec["ci_low"] == pytest.approx(1.5 - t * 0.5) and rec["ci_high"] == pytest.approx(1.5 + t * 0.5)
    assert rec["p"] == pytest.approx(2 * sps.t.sf(3.0, 2))
    assert rec["offset_on_family_a"] == pytest.approx((1.5 + 2.0 + 0.5) / 3)
    assert rec["offset_on_family_b"] == pytest.approx((0.5 - 0.5 - 0.5) / 3)
    assert (rec["items"], rec["items_family_a"], rec["items_family_b"]) == (11, 5, 6)
    assert (rec["units"], rec["scenarios"], rec["scenarios_one_family"]) == (6, 3, 1)
    fams = {f["model"]: (f["family"], f["source"], f["role"]) for f in sec["families"]}
    assert fams[JA] == ("anthropic", "default", "judge")
    assert fams["openai/gpt-4o-mini"] == ("openai", "default", "writer")
    assert "families by the provider/name prefix" in selfpref.families_note(sec)


def test_writer_from_a_row_field() -> None:
    """The same example with the writer read from each row (``writer: meta.by``)."""
    lines = [{**x, "meta": {"by": WRITERS[x["variant"]]}} for x in _hand_lines()]
    cfg = _cfg(writer="meta.by")
    (rec,) = selfpref.self_preference(_rows(lines, cfg), cfg)["pairs"]
    assert rec["estimate"] == pytest.approx(1.5) and rec["items"] == 11


@pytest.mark.parametrize("case, why", [
    ("no_writer", "no_writer"), ("one_judge", "one_judge"), ("same_family", "judges_one_family"),
    ("crosswise", "crosswise"), ("self_graded", "self_graded"), ("one_writer_family", "judges_not_crossing_writers"),
    ("reference_pair", "one_side_only"),
    ("split_scenarios", "writer_families_not_within_scenario"),
])
def test_not_identified_says_why(case: str, why: str) -> None:
    lines = _hand_lines()
    over: dict[str, Any] = {}
    if case == "no_writer":
        over["writer"] = None
    elif case == "one_judge":
        lines = [x for x in lines if x["judge"] == JA]
    elif case == "same_family":
        over["families"] = {JA: "one", JO: "one"}
    elif case == "crosswise":  # A scores only openai writers, O only anthropic ones
        lines = [x for x in lines if (x["judge"] == JA) == (x["variant"] == "v_gpt")]
    elif case == "self_graded":  # A scores only anthropic writers, O only openai ones
        lines = [x for x in lines if (x["judge"] == JA) == (x["variant"] == "v_claude")]
    elif case == "one_writer_family":  # claude outputs exist, but only JA scored them
        lines = [x for x in lines if x["variant"] == "v_gpt" or x["judge"] == JA]
    elif case == "reference_pair":  # only gpt outputs: JA's family wrote nothing
        lines = [x for x in lines if x["variant"] == "v_gpt"]
    else:  # v_claude only in s1, s2; v_gpt only in s3, s4
        lines = [x for x in lines if (x["variant"] == "v_claude") == (x["scenario"] in ("s1", "s2"))]
    cfg = _cfg(**over)
    sec = selfpref.self_preference(_rows(lines, cfg), cfg)
    assert not sec["identified"] and sec["why"] == why and sec["method"] is None
    assert sec["explanation"]
    for rec in sec["pairs"]:
        assert rec["estimate"] is None and rec["why"] == ("reference_pair" if case == "reference_pair" else why)
    if case == "crosswise":
        assert "confounded" in sec["explanation"] and "severity" in sec["explanation"]


# --------------------------------------------------------------------------- synth


def _planted(**over: Any) -> synth.Model:
    base = dict(scenarios=20, variants=("v_claude", "v_gpt", "v_claude2", "v_gpt2"),
                variant_effects=(0.0, 0.3, -0.2, 0.1), judges=(JA, JO), judge_offsets=(0.4, 0.0),
                trials=3, mu=5.5, writers={"v_claude": "anthropic", "v_gpt": "openai",
                                           "v_claude2": "anthropic", "v_gpt2": "openai"},
                self_preference={JA: 0.5, JO: 0.0}, missing_rates=0.1)
    base.update(over)
    return synth.Model(**base)


def _run_synth(model: synth.Model, tmp: Path, seed: int = 3) -> tuple[dict[str, Any], dict[str, Any]]:
    paths = synth.write(model, tmp, seed=seed)
    an = pipeline.run([str(paths["rows"])], wb.load_config(
        str(paths["config"]), overrides={"bootstrap": {"resamples": 200}}))
    _RUNS[tmp] = an
    return an.doc, json.loads(paths["truth"].read_text())


_RUNS: dict[Path, Any] = {}


def _report_text(tmp: Path) -> str:
    from workbench.report.model import Report
    from workbench.report.tables import offsets_tables

    return str(offsets_tables(Report(analysis=_RUNS[tmp], parameters={}, out_dir=tmp, command_line="")))


def test_synth_recovers_planted_self_preference(tmp_path: Path) -> None:
    doc, truth = _run_synth(_planted(), tmp_path)
    (t,) = truth["self_preference"]
    assert t["latent_did"] == pytest.approx(0.5) and t["did"] == pytest.approx(0.5, abs=0.03)
    (rec,) = doc["self_preference"]["pairs"]
    assert rec["identified"] and rec["scenarios"] == 20
    assert rec["ci_low"] < t["did"] < rec["ci_high"]
    assert rec["ci_low"] < 0.5 < rec["ci_high"]
    # the analyst's frame is the document's record, list fields joined
    fr = _RUNS[tmp_path].frame("self_preference")
    assert fr.height == 1 and fr["estimate"][0] == rec["estimate"] and fr["ci_low"][0] == rec["ci_low"]
    assert fr["writer_families_a"][0] == ", ".join(rec["writer_families_a"])
    # the method is described, and the report says it in one sentence
    assert any(m["name"] == selfpref.METHOD for m in doc["methods"])
    html = _report_text(tmp_path)
    assert "combined own-family preference of +0.57" in html and "cannot separate" in html
    assert html.count("own-family preference of") == 1  # one sentence per judge pair


def test_synth_crosswise_not_identified(tmp_path: Path) -> None:
    # A only on openai writers, O only on anthropic writers: rate 1 on the judge's own family
    miss = {JA: {"v_claude": 1.0, "v_claude2": 1.0}, JO: {"v_gpt": 1.0, "v_gpt2": 1.0}}
    doc, _ = _run_synth(_planted(missing_rates=miss), tmp_path)
    sec = doc["self_preference"]
    assert not sec["identified"] and sec["why"] == "crosswise"
    (rec,) = sec["pairs"]
    assert rec["estimate"] is None and rec["ci_low"] is None
    assert "self-preference and judge severity are confounded" in rec["explanation"]
    html = _report_text(tmp_path)
    assert "cannot be estimated (crosswise)" in html and "judge severity are confounded" in html


# --------------------------------------------------------------------------- per judge

JG = "google/gemini"  # a judge of a family that wrote none of the outputs: the neutral reference


def test_per_judge_against_a_neutral_reference() -> None:
    """HAND plus JG scoring 5 on every item. JA - JG, trials averaged per unit (claude - gpt):
    s1 (2.5 - 0.5) = 2, s2 (4 - 1) = 3, s3 (1.5 - 0) = 1.5, s4 (2 - -1) = 3 (s4's claude item
    is shared with JG, not with JO); mean 2.375, squared deviations sum 1.6875, sd^2 0.5625,
    se sqrt(0.5625 / 4) = 0.375, t(3). JO - JG (gpt - claude): s1 (0 - 1) = -1, s2 (1.5 - 2)
    = -0.5, s3 (0.5 - 1) = -0.5 (s4: JO has no claude item); mean -2/3, sd^2 1/12, se 1/6, t(2)."""
    lines = _hand_lines() + [_line(s, v, t, JG, 5) for (s, v, t) in HAND]
    cfg = _cfg()
    sec = selfpref.self_preference(_rows(lines, cfg), cfg)
    recs = {r["judge"]: r for r in sec["judges"]}
    assert sorted(recs) == [JA, JG, JO]
    a, o, g = recs[JA], recs[JO], recs[JG]
    assert a["identified"] and a["reference"] == JG and a["reference_family"] == "google"
    assert a["estimand"] == "own_family_preference" and a["ci_method"] == selfpref.JUDGE_METHOD
    t3, t2 = sps.t.ppf(0.975, 3), sps.t.ppf(0.975, 2)
    assert a["estimate"] == pytest.approx(2.375) and a["se"] == pytest.approx(0.375)
    assert a["df"] == pytest.approx(3) and a["ci_low"] == pytest.approx(2.375 - t3 * 0.375)
    assert a["p"] == pytest.approx(2 * sps.t.sf(2.375 / 0.375, 3))
    assert a["offset_on_own_family"] == pytest.approx((2.5 + 4 + 1.5 + 2) / 4)
    assert (a["scenarios"], a["items"], a["units"]) == (4, 13, 8)  # 14 items, JA lacks one
    assert o["identified"] and o["estimate"] == pytest.approx(-2 / 3) and o["se"] == pytest.approx(1 / 6)
    assert o["ci_high"] == pytest.approx(-2 / 3 + t2 / 6) and o["scenarios_one_side"] == 1
    assert not g["identified"] and g["why"] == "no_own_family_outputs" and g["estimate"] is None
    # the pair JA - JO is unchanged by the third judge
    (pair,) = [p for p in sec["pairs"] if {p["judge_a"], p["judge_b"]} == {JA, JO}]
    assert pair["estimate"] == pytest.approx(1.5)


def test_two_judges_only_the_pair_sum_is_identified() -> None:
    cfg = _cfg()
    sec = selfpref.self_preference(_rows(_hand_lines(), cfg), cfg)
    assert [(r["judge"], r["identified"], r["why"]) for r in sec["judges"]] == [
        (JA, False, "no_neutral_reference"), (JO, False, "no_neutral_reference")]
    assert "cannot be told apart" in sec["judges"][0]["explanation"]


def test_synth_recovers_each_judges_planted_preference(tmp_path: Path) -> None:
    """+0.5 planted for JA, 0 for JO, JG neutral (its family writes nothing): the per-judge
    audit recovers both within their intervals."""
    model = _planted(judges=(JA, JO, JG), judge_offsets=(0.4, 0.0, -0.2), scenarios=30)
    doc, truth = _run_synth(model, tmp_path)
    cells = {(c["variant"], c["judge"]): c["mean"] for c in truth["cells"]}
    fam = {"v_claude": "anthropic", "v_gpt": "openai", "v_claude2": "anthropic", "v_gpt2": "openai"}

    def true_did(j: str, own: str) -> float:
        own_v = [v for v in fam if fam[v] == own]
        other = [v for v in fam if fam[v] != own]
        d = {v: cells[(v, j)] - cells[(v, JG)] for v in fam}
        return sum(d[v] for v in own_v) / len(own_v) - sum(d[v] for v in other) / len(other)

    recs = {r["judge"]: r for r in doc["self_preference"]["judges"]}
    for j, own, planted in ((JA, "anthropic", 0.5), (JO, "openai", 0.0)):
        r = recs[j]
        assert r["identified"] and r["reference"] == JG
        assert r["ci_low"] < true_did(j, own) < r["ci_high"], (j, r["estimate"], true_did(j, own))
        assert true_did(j, own) == pytest.approx(planted, abs=0.05)
    assert recs[JA]["ci_low"] > 0  # the planted +0.5 is detected at 30 scenarios
    assert any(m["name"] == selfpref.JUDGE_METHOD for m in doc["methods"])
    html = _report_text(tmp_path)
    assert "separated per judge below" in html and html.count("whose family wrote none of the outputs") == 2
    from workbench.cli import terminal

    text = terminal.judges_text(doc)  # the terminal says what the report says
    assert text is not None and text.count("has an own-family preference of") == 2
    fr = _RUNS[tmp_path].frame("self_preference_judges")
    assert fr.height == 3 and fr.filter(fr["judge"] == JA)["estimate"][0] == recs[JA]["estimate"]
