"""The missingness tests on the unit that fails (issue 24): the unit construction
(census.missingness_units) against a loop over judgments, the exact p against a hand
enumeration of every within-block permutation, the smallest attainable p by enumeration, the
``missingness: {unit}`` config key and the results.json keys."""

from __future__ import annotations

import itertools
import json
import math
from collections import defaultdict
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workbench import load_config, read_rows, stats
from workbench.analysis import census
from workbench.analysis.census import missingness_tests
from workbench.cli import main as cli
from workbench.common.errors import ConfigError


def _naive_units(miss, s, v, t, j, factor, unit, cluster=None):
    """The units by a loop over judgments, following the definition in the docstring."""
    outer = s if cluster is None else cluster
    acc: dict[tuple[Any, ...], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for i in range(len(miss)):
        if factor == "variant":
            key = (outer[i], v[i]) if unit == "block" else (s[i], v[i], t[i])
        else:
            key = (outer[i], v[i], j[i]) if unit == "block" else (s[i], v[i], t[i], j[i])
        acc[key][0] += miss[i]
        acc[key][1] += 1
    keys = sorted(acc)
    width = {("variant", "block"): 1, ("variant", "trial"): 1, ("judge", "block"): 2, ("judge", "trial"): 3}
    strata = sorted({k[:width[(factor, unit)]] for k in keys})
    label_at = 1 if factor == "variant" else -1
    return (np.array([acc[k][0] for k in keys]), np.array([acc[k][1] for k in keys]),
            np.array([k[label_at] for k in keys]),
            np.array([strata.index(k[:width[(factor, unit)]]) for k in keys]))


@pytest.mark.parametrize("factor", ["variant", "judge"])
@pytest.mark.parametrize("unit", ["block", "trial"])
@pytest.mark.parametrize("with_cluster", [False, True])
def test_missingness_units_equal_a_loop_over_judgments(factor: str, unit: str, with_cluster: bool) -> None:
    rng = np.random.default_rng(5)
    n = 400
    s, v, t, j = (rng.integers(0, k, n) for k in (7, 3, 4, 2))
    # one judgment per key, as judgment units are (duplicates counted once)
    key = np.unique(np.c_[s, v, t, j], axis=0)
    s, v, t, j = key.T
    miss = (rng.random(s.size) < 0.3).astype(float)
    cluster = s // 2 if with_cluster else None
    got = census.missingness_units(miss, s, v, t, j, factor, unit, cluster)
    want = _naive_units(miss, s, v, t, j, factor, unit, cluster)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
    # totals add up to the judgments; each label sits in one block per key
    assert got[1].sum() == s.size and got[0].sum() == miss.sum()
    # labels as text give the same units (codes of the sorted labels)
    text = census.missingness_units(miss, [f"s{x}" for x in s], [f"v{x}" for x in v], t, j, factor, unit,
                                    None if cluster is None else [f"c{x}" for x in cluster])
    for a, b in zip(text, got, strict=True):
        np.testing.assert_array_equal(a, b)


def test_missingness_units_reject_a_bad_factor_or_unit() -> None:
    with pytest.raises(ValueError, match="factor"):
        census.missingness_units([0.0], [0], [0], [0], [0], "trial")
    with pytest.raises(ValueError, match="unit must be one of"):
        census.missingness_units([0.0], [0], [0], [0], [0], "variant", "row")


def _chi2(m, t, lab, k):
    """Pearson's chi-square of the labels x [missing, scored] table, by hand."""
    p0 = sum(m) / sum(t)
    out = 0.0
    for level in range(k):
        mm = sum(x for x, lv in zip(m, lab, strict=True) if lv == level)
        nn = sum(x for x, lv in zip(t, lab, strict=True) if lv == level)
        if nn:
            out += (mm - nn * p0) ** 2 / (nn * p0) + ((nn - mm) - nn * (1 - p0)) ** 2 / (nn * (1 - p0))
    return out


def _all_within_block_permutations(lab, blk):
    """Every permutation of the labels within each block (all orderings, repeats included)."""
    blocks = sorted(set(blk))
    pos = [[i for i, b in enumerate(blk) if b == g] for g in blocks]
    for combo in itertools.product(*[list(itertools.permutations(p)) for p in pos]):
        new = list(lab)
        for p, perm in zip(pos, combo, strict=True):
            for dst, src in zip(p, perm, strict=True):
                new[dst] = lab[src]
        yield new


def test_exact_p_equals_a_hand_enumeration_of_every_within_block_permutation() -> None:
    # 3 scenarios, 3 variants (one block each), a fourth scenario with only 2 variants;
    # (missing, total) per block over 3 trials x 2 judges
    m = [0, 2, 5, 1, 1, 4, 0, 3, 6, 2, 2]
    t = [6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 5]
    lab = [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 2]
    blk = [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3]
    obs = _chi2(m, t, lab, 3)
    perms = list(_all_within_block_permutations(lab, blk))
    assert len(perms) == 6 * 6 * 6 * 2
    hits = sum(_chi2(m, t, p, 3) >= obs - 1e-9 * max(1.0, obs) for p in perms)
    want = float(Fraction(hits, len(perms)))
    got = stats.block_permutation_enumerated(np.array(m, float), np.array(t, float), lab, blk)
    assert got.method == "block_permutation_exact"
    assert got.statistic == pytest.approx(obs, rel=1e-12)
    assert got.p_value == pytest.approx(want, rel=1e-12)
    # the census runs the exact form for this design, and the Monte-Carlo test agrees with it
    assert census.unit_test(np.array(m, float), np.array(t, float), np.array(lab), np.array(blk), 1) == got
    mc = stats.block_permutation_test(np.array(m, float), np.array(t, float), lab, blk, 20000, 3)
    assert abs(mc.p_value - want) < 4 * np.sqrt(want * (1 - want) / 20000) + 1e-4
    # too many arrangements for the limit: None (the caller draws permutations instead)
    assert stats.block_permutation_enumerated(np.array(m, float), np.array(t, float), lab, blk, limit=100) is None


def test_min_p_equals_the_smallest_p_over_every_arrangement() -> None:
    """The design's smallest attainable p: for units that all differ, the minimum over every
    possible observed arrangement of P(statistic >= its value), by enumeration."""
    designs = [
        ([0, 1] * 3, [0, 0, 1, 1, 2, 2]),  # 2 variants x 3 scenarios: 2 / 2^3
        ([0, 1, 2] * 2, [0, 0, 0, 1, 1, 1]),  # 3 variants x 2 scenarios: 6 / 36
        ([0, 1, 2, 0, 1], [0, 0, 0, 1, 1]),  # a scenario without variant 2: no relabeling of 2
        ([0, 0, 1, 0, 1, 1], [0, 0, 0, 1, 1, 1]),  # unequal counts per block
    ]
    for lab, blk in designs:
        m = [float(i * i % 7 + i) for i in range(len(lab))]  # all different
        t = [20.0] * len(lab)
        k = max(lab) + 1
        perms = list(_all_within_block_permutations(lab, blk))
        stats_all = [_chi2(m, t, p, k) for p in perms]
        smallest = min(sum(s >= x - 1e-9 * max(1.0, x) for s in stats_all) / len(perms) for x in stats_all)
        assert stats.block_permutation_min_p(lab, blk) == pytest.approx(smallest, rel=1e-12), (lab, blk)
    assert stats.block_permutation_min_p([0, 1] * 3, [0, 0, 1, 1, 2, 2]) == 0.25
    assert stats.block_permutation_min_p([0, 1] * 5, np.repeat(np.arange(5), 2)) == 2 / 32
    assert stats.block_permutation_min_p([], []) is None


def _rows(write_jsonl, scenarios: int, crash: set[tuple[int, str]]) -> str:
    lines = [json.dumps({"scenario": f"s{s}", "variant": v, "trial": t, "judge": j,
                         "overall": None if (s, v) in crash else 5 + (s + t) % 3})
             for s in range(scenarios) for v in ("v1", "v2") for t in (1, 2, 3) for j in ("A", "B")]
    return write_jsonl(lines)


def test_config_key_round_trip_and_bad_value() -> None:
    assert load_config().missingness_unit == "block"
    assert load_config().to_dict()["missingness"] == {"unit": "block"}
    cfg = load_config(overrides={"missingness": {"unit": "trial"}})
    assert cfg.missingness_unit == "trial" and cfg.to_dict()["missingness"] == {"unit": "trial"}
    again = load_config().with_overrides(missingness_unit="trial")
    assert again.missingness_unit == "trial" and again.to_dict() == cfg.to_dict()
    with pytest.raises(ConfigError, match="missingness.unit must be one of block, trial"):
        load_config(overrides={"missingness": {"unit": "row"}})
    with pytest.raises(ConfigError, match="missingness"):
        load_config(overrides={"missingness": {"units": "trial"}})


def test_results_json_records_the_unit_blocks_and_min_p(write_jsonl, tmp_path: Path, capsys) -> None:
    """3 scenarios, 2 variants: 6 (scenario, variant) blocks, min p 2/2^3 = 0.25 > 0.05, so
    the variant test cannot reject and says so; with -p missingness.unit trial the items."""
    path = _rows(write_jsonl, 3, {(0, "v2"), (2, "v2")})
    out = tmp_path / "out"
    assert cli.main(["analyze", path, "--out", str(out), "--no-gate", "--resamples", "200"]) == 0
    printed = capsys.readouterr().out
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert doc["config"]["missingness"] == {"unit": "block"}
    tests = {t["factor"]: t for t in doc["missingness_tests"]}
    v = tests["variant"]
    assert (v["unit"], v["blocks"], v["informative_blocks"]) == ("scenario_variant_block", 6, 4)
    assert v["method"] == "block_permutation_within_scenario_exact" and v["permutations"] is None
    assert v["min_p"] == 0.25 and v["cannot_reject"] is True
    # v2 lost 2 of 3 scenarios, v1 none: the most extreme table but p = P(that table) = 2/4
    # (2 of the 4 arrangements of the 2 informative scenarios reach it)
    assert v["p_value"] == 0.5
    j = tests["judge"]
    # both judges lose the crashed blocks together: no judge block can change the table, p = 1
    assert (j["unit"], j["blocks"], j["informative_blocks"], j["p_value"]) == (
        "scenario_variant_judge_block", 12, 0, 1.0)
    assert j["min_p"] == 2 / 2**6 and j["cannot_reject"] is False  # 6 (scenario, variant) of 2 judges
    assert "cannot reject at 5% with 6 blocks" in printed
    contrast = next(c for c in doc["contrasts"] if c["subset"] is None and c["judge"] is None)
    assert contrast["missingness_min_p"] == 0.25 and contrast["confounded_missing"] is False
    # the finer unit, chosen on the command line, is recorded as used
    out2 = tmp_path / "out2"
    assert cli.main(["analyze", path, "--out", str(out2), "--no-gate", "--resamples", "200",
                     "-p", "missingness.unit", "trial"]) == 0
    capsys.readouterr()
    doc2 = json.loads((out2 / "results.json").read_text(encoding="utf-8"))
    assert doc2["config"]["missingness"] == {"unit": "trial"}
    v2 = {t["factor"]: t for t in doc2["missingness_tests"]}["variant"]
    assert (v2["unit"], v2["blocks"]) == ("scenario_variant_trial", 18)
    assert v2["method"].startswith("item_permutation_within_scenario")
    # 3 scenarios of 6 items (3 per variant): (6 choose 3)^3 arrangements, 2 relabelings;
    # the items of a crashed block fail together, and the item test calls it a variant effect
    assert v2["min_p"] == 2 / 20**3 and v2["method"] == "item_permutation_within_scenario_exact"
    assert v2["p_value"] < 0.05


def test_whole_block_failures_are_not_a_variant_effect(write_jsonl) -> None:
    """A variant-independent crash of whole (scenario, variant) blocks: the item test calls it
    a variant effect (its items of one block fail together), the block test does not."""
    crash = {(0, "v2"), (3, "v1"), (5, "v2"), (6, "v2"), (8, "v2"), (9, "v1"), (11, "v2")}
    path = _rows(write_jsonl, 12, crash)
    rows, _ = read_rows([path], load_config())
    block = {t["factor"]: t for t in missingness_tests(rows, load_config()).to_dicts()}["variant"]
    trial = {t["factor"]: t for t in missingness_tests(
        rows, load_config().with_overrides(missingness_unit="trial")).to_dicts()}["variant"]
    assert trial["p_value"] < 0.05 < block["p_value"]
    # block test by hand: 7 informative scenarios, one block lost each; the table's statistic
    # depends only on how many go to v2 (5 of 7 observed): P(|X - 3.5| >= 1.5), X ~ Bin(7, 1/2)
    from math import comb
    want = sum(comb(7, x) for x in range(8) if abs(x - 3.5) >= 1.5 - 1e-12) / 2**7
    assert block["p_value"] == pytest.approx(want, rel=1e-12)
    assert block["method"] == "block_permutation_within_scenario_exact"


def test_min_p_and_informative_blocks_equal_a_loop_on_many_blocks() -> None:
    # the table-based codes and column grouping (issue 29: no structured np.unique over one
    # field per block) against Python loops over blocks, on designs with many blocks, sparse
    # block ids, labels absent from some blocks and identical label columns
    rng = np.random.default_rng(29)
    for trial in range(40):
        n = int(rng.integers(1, 400))
        blocks = rng.integers(0, 60, n) * 13 + 5
        labels = rng.choice(np.array([2, 4, 9, 11]), n)
        if trial % 2:  # labels 2 and 4 once in every block: identical columns, |G| > 1
            blocks = np.repeat(rng.permutation(60)[: max(1, n // 3)] * 13 + 5, 3)
            labels = np.tile(np.array([2, 4, 9]), blocks.size // 3)
            labels[2::3] = rng.choice(np.array([9, 11]), blocks.size // 3)
            n = blocks.size
        m = rng.integers(0, 3, n).astype(float)
        t = np.where(rng.random(n) < 0.8, 2.0, 1.0)
        groups: dict[int, list[int]] = defaultdict(list)
        for i, b in enumerate(blocks.tolist()):
            groups[b].append(i)
        informative = sum(len(ix) for ix in groups.values()
                          if len({labels[i] for i in ix}) > 1 and len({(m[i], t[i]) for i in ix}) > 1)
        levels = sorted(set(labels.tolist()))
        counts = [[sum(labels[i] == lv for i in groups[b]) for lv in levels] for b in sorted(groups)]
        arrangements = 1
        for row in counts:
            left = sum(row)
            for c in row:
                arrangements *= math.comb(left, c)
                left -= c
        columns = [tuple(r[j] for r in counts) for j in range(len(levels))]
        relabel = 1
        for col in set(columns):
            relabel *= math.factorial(columns.count(col))
        res = stats.TestResult(1.0, 0.5, "block_permutation_exact")
        design = census.unit_design(m, t, labels, blocks, res)
        assert design["informative_blocks"] == informative
        assert design["min_p"] == float(min(1.0, relabel / arrangements))
