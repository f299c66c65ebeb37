"""Tests for workbench.analysis.scorecard (issue 3: valid n, error bars, bounds, gate).

Every asserted number comes from an independent computation: a slow reference that
parses the JSONL with the stdlib and follows the textbook definitions in plain loops,
statsmodels / scipy, or a hand calculation spelled out in a comment. Nothing is
compared with the output of the function under test.
"""

from __future__ import annotations

import importlib
import json
import math
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import statsmodels.api as sm
from cr2_reference import dense_mean
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hst
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

import workbench as wb
from workbench.cli import main as cli

# ``workbench.analysis.scorecard`` is shadowed by the API function of the same name in
# ``workbench/__init__.py``; take the module itself from the import system.
sc = importlib.import_module("workbench.analysis.scorecard")

KEYS = ("scenario", "variant", "trial", "judge")
SCORES = ("overall", "correctness", "completeness", "depth", "citations", "honesty")
RUBRIC = (1.0, 10.0)
HSET = settings(
    database=None, deadline=None, max_examples=30, suppress_health_check=[HealthCheck.too_slow]
)


# --------------------------------------------------------------------------- helpers


def write_lines(path: Path, lines: list[Any]) -> Path:
    """Write JSONL: dicts are dumped, strings written verbatim (blank/malformed lines)."""
    text = "\n".join(ln if isinstance(ln, str) else json.dumps(ln) for ln in lines) + "\n"
    path.write_text(text, encoding="utf-8")
    return path


def make_cfg(**over: Any) -> wb.Config:
    base: dict[str, Any] = {"bootstrap": {"resamples": 200, "seed": 11}}
    base.update(over)
    return wb.load_config(overrides=base)


def card_of(path: Path, cfg: wb.Config) -> list[dict[str, Any]]:
    rows, _ = wb.read_rows([str(path)], cfg)
    return sc.scorecard(rows, cfg).to_dicts()


def find(
    card: list[dict[str, Any]],
    variant: str,
    field: str = "overall",
    judge: str | None = None,
    subset: str | None = None,
) -> dict[str, Any]:
    hits = [
        c
        for c in card
        if c["variant"] == variant
        and c["field"] == field
        and c["judge"] == judge
        and c["subset"] == subset
    ]
    assert len(hits) == 1, (variant, field, judge, subset, len(hits))
    return hits[0]


# --------------------------------------------------------------------------- slow reference


def is_valid(v: Any, lo: float = RUBRIC[0], hi: float = RUBRIC[1]) -> bool:
    """A usable score: a JSON number (not a bool), finite, inside the rubric."""
    return (
        isinstance(v, int | float)
        and not isinstance(v, bool)
        and math.isfinite(v)
        and lo <= v <= hi
    )


def naive_rows(lines: list[Any], scores: tuple[str, ...] = SCORES) -> list[dict[str, Any]]:
    """The rows that exist for cells, re-derived from the raw lines with the stdlib.

    Blank and unparseable lines and lines with an unusable key are dropped; a key seen
    with identical content again is counted once; a key seen with different contents is a
    conflict: one row per conflicting key (one judgment), with no valid value.
    """
    parsed: list[tuple[tuple[str, ...], dict[str, Any], str]] = []
    for ln in lines:
        text = ln if isinstance(ln, str) else json.dumps(ln)
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError:
            continue
        if not isinstance(obj, dict):
            continue
        key = []
        for k in KEYS:
            v = obj.get(k)
            if (
                isinstance(v, bool)
                or not isinstance(v, str | int)
                or (isinstance(v, str) and not v.strip())
            ):
                break
            key.append(str(v))
        else:
            parsed.append((tuple(key), obj, json.dumps(obj, sort_keys=True)))
    contents: dict[tuple[str, ...], set[str]] = defaultdict(set)
    for key, _, canon in parsed:
        contents[key].add(canon)
    out, seen = [], set()
    for key, obj, _ in parsed:
        conflict = len(contents[key]) > 1
        if key in seen:
            continue  # identical repeat counted once; a conflicting key is one scoreless row
        seen.add(key)
        row = dict(zip(KEYS, key, strict=True))
        row["values"] = {
            f: (None if conflict or not is_valid(obj.get(f)) else float(obj[f])) for f in scores
        }
        row["conflict"] = conflict
        row["flags"] = (
            obj.get("fabrication_flags") if isinstance(obj.get("fabrication_flags"), list) else None
        )
        out.append(row)
    return out


def naive_icc(vals: list[float], labels: list[str]) -> float | None:
    """One-way ANOVA ICC(1) with Donner's n0 for unequal group sizes, in plain loops."""
    groups: dict[str, list[float]] = defaultdict(list)
    for v, lab in zip(vals, labels, strict=True):
        groups[lab].append(v)
    g, n = len(groups), len(vals)
    if g < 2 or n <= g:
        return None
    grand = sum(vals) / n
    ssb = ssw = 0.0
    for xs in groups.values():
        m = sum(xs) / len(xs)
        ssb += len(xs) * (m - grand) ** 2
        for x in xs:
            ssw += (x - m) ** 2
    msb, msw = ssb / (g - 1), ssw / (n - g)
    if msb == 0 and msw == 0:
        return None
    n0 = (n - sum(len(xs) ** 2 for xs in groups.values()) / n) / (g - 1)
    return (msb - msw) / (msb + (n0 - 1) * msw)


def statsmodels_cluster_se(vals: list[float], labels: list[str]) -> float:
    """CR1 SE of the intercept of y = b0 + e, clustered on labels (statsmodels)."""
    _, codes = np.unique(np.asarray(labels), return_inverse=True)
    fit = sm.OLS(np.asarray(vals, dtype=float), np.ones(len(vals))).fit(
        cov_type="cluster", cov_kwds={"groups": codes}
    )
    return float(fit.bse[0])


def naive_cell(
    rows: list[dict[str, Any]],
    field: str,
    lo: float = RUBRIC[0],
    hi: float = RUBRIC[1],
    conf: float = 0.95,
) -> dict[str, Any]:
    vals = [r["values"][field] for r in rows if r["values"][field] is not None]
    labs = [r["scenario"] for r in rows if r["values"][field] is not None]
    n, n_rows = len(vals), len(rows)
    total = sum(vals)
    mean = total / n if n else None
    se = None
    if n >= 2:
        ss = 0.0
        for x in vals:
            ss += (x - mean) ** 2
        se = math.sqrt(ss / (n - 1)) / math.sqrt(n)
    g = len(set(labs))
    se_cl = statsmodels_cluster_se(vals, labs) if n >= 2 and g >= 2 else None
    ci = (None, None)
    if se_cl is not None:
        t = sps.t.ppf(1 - (1 - conf) / 2, g - 1)
        ci = (mean - t * se_cl, mean + t * se_cl)
    # the headline: CR2 with Bell-McCaffrey df by dense matrices (tests/cr2_reference.py)
    cr2 = dense_mean(vals, labs, conf) if se_cl is not None else {}
    icc = naive_icc(vals, labs)
    deff = None
    if icc is not None:
        sizes = [labs.count(s) for s in set(labs)]
        deff = 1 + (sum(k * k for k in sizes) / n - 1) * icc
    return {
        "mean": mean,
        "valid_n": n,
        "rows": n_rows,
        "clusters": g,
        "zero_filled_mean": total / n_rows if n_rows else None,
        "lower_bound": (total + (n_rows - n) * lo) / n_rows if n_rows else None,
        "upper_bound": (total + (n_rows - n) * hi) / n_rows if n_rows else None,
        "se": se,
        "se_clustered": se_cl,
        "cr1_ci_low": ci[0],
        "cr1_ci_high": ci[1],
        "se_cr2": cr2.get("se"),
        "df": cr2.get("df"),
        "ci_low": cr2.get("ci_low"),
        "ci_high": cr2.get("ci_high"),
        "icc": icc,
        "design_effect": deff,
    }


def assert_close(got: dict[str, Any], want: dict[str, Any], where: str) -> None:
    for k, w in want.items():
        v = got[k]
        if w is None:
            assert v is None, f"{where} {k}: expected null, got {v}"
        elif isinstance(w, int):
            assert v == w, f"{where} {k}: {v} != {w}"
        else:
            assert v == pytest.approx(w, rel=1e-9, abs=1e-12), f"{where} {k}: {v} != {w}"


# --------------------------------------------------------------------------- mixed test file


def mixed_lines(seed: int = 3) -> list[Any]:
    """Valid, partial, empty, non-numeric, out-of-range, bool, NaN, duplicate, conflict,
    blank and malformed lines over 5 scenarios x 2 variants x 2 trials x 2 judges."""
    rng = np.random.default_rng(seed)
    out: list[Any] = []
    for s in range(1, 6):
        for v in ("A", "B"):
            for t in (1, 2):
                for j in ("j1", "j2"):
                    rec: dict[str, Any] = {
                        "scenario": f"s{s}",
                        "variant": v,
                        "trial": t,
                        "judge": j,
                    }
                    u = rng.random()
                    full = {f: int(rng.integers(1, 11)) for f in SCORES}
                    if u < 0.10:
                        pass  # empty: keys only
                    elif u < 0.20:
                        rec.update({f: full[f] for f in ("depth", "honesty")})  # partial
                    elif u < 0.25:
                        rec.update(full, overall="8/10")
                    elif u < 0.30:
                        rec.update(full, overall=15, citations=0)
                    elif u < 0.33:
                        rec.update(full, overall=True)
                    elif u < 0.36:
                        rec.update(full, overall=None, depth=7.5)
                    else:
                        rec.update(full)
                    w = rng.random()
                    if w < 0.5:
                        rec["fabrication_flags"] = []
                    elif w < 0.75:
                        rec["fabrication_flags"] = ["invented_citation"] * int(rng.integers(1, 3))
                    out.append(rec)
    out += [
        "",
        "{not json",
        {"scenario": "s1", "variant": "A", "trial": 3, "overall": 9},  # no judge: malformed
        {"scenario": "", "variant": "A", "trial": 3, "judge": "j1", "overall": 9},  # empty key
        '{"scenario": "s2", "variant": "B", "trial": 7, "judge": "j1", "overall": NaN}',
        {
            "scenario": "s3",
            "variant": "A",
            "trial": 9,
            "judge": "j1",
            "overall": 4,
            "correctness": 2,
        },
        {
            "scenario": "s3",
            "variant": "A",
            "trial": 9,
            "judge": "j1",
            "overall": 6,
            "correctness": 2,
        },
        "   ",
        {
            "scenario": "s4",
            "variant": "B",
            "trial": 5,
            "judge": "j2",
            "overall": 10,
            "honesty": 9,
            "fabrication_flags": ["x"],
        },
    ]
    out.append(dict(out[-1]))  # identical repeat: a duplicate
    out.append(out[0])  # repeat of the very first row
    return out


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    lines = mixed_lines()
    path = write_lines(tmp_path_factory.mktemp("mixed") / "rows.jsonl", lines)
    cfg = make_cfg(subsets={"framework": {"scenario": ["s1", "s2", "s4"]}})
    analysis = wb.run([str(path)], cfg)
    return {
        "lines": lines,
        "path": path,
        "cfg": cfg,
        "analysis": analysis,
        "naive": naive_rows(lines),
    }


def test_mixed_file_really_has_every_kind_of_line(mixed: dict[str, Any]) -> None:
    led = mixed["analysis"].doc["ledger"]
    for bucket in (
        "blank",
        "valid",
        "partial",
        "empty",
        "non_numeric",
        "out_of_range",
        "invalid_number",
        "malformed",
        "duplicate",
        "conflict",
    ):
        assert led[bucket] > 0, bucket


def test_every_cell_matches_the_slow_reference(mixed: dict[str, Any]) -> None:
    card = mixed["analysis"].doc["scorecard"]
    naive = mixed["naive"]
    subset_scen = {"s1", "s2", "s4"}
    expected_keys = set()
    for v in ("A", "B"):
        for field in SCORES:
            scopes = [
                (None, None, [r for r in naive if r["variant"] == v]),
                (
                    None,
                    "framework",
                    [r for r in naive if r["variant"] == v and r["scenario"] in subset_scen],
                ),
            ]
            scopes += [
                (j, None, [r for r in naive if r["variant"] == v and r["judge"] == j])
                for j in ("j1", "j2")
            ]
            for judge, subset, rows in scopes:
                expected_keys.add((v, judge, subset, field))
                got = find(card, v, field, judge, subset)
                assert_close(got, naive_cell(rows, field), f"{v}/{judge}/{subset}/{field}")
    assert {(c["variant"], c["judge"], c["subset"], c["field"]) for c in card} == expected_keys


def test_cells_bootstrap_interval_is_inside_the_cluster_means(mixed: dict[str, Any]) -> None:
    # A cluster-bootstrap mean is a weighted average of scenario means, so every
    # percentile lies between the smallest and the largest scenario mean.
    for c in mixed["analysis"].doc["scorecard"]:
        if c["boot_low"] is None:
            assert c["clusters"] < 2
            continue
        rows = [
            r
            for r in mixed["naive"]
            if r["variant"] == c["variant"]
            and (c["judge"] is None or r["judge"] == c["judge"])
            and (c["subset"] is None or r["scenario"] in {"s1", "s2", "s4"})
            and r["values"][c["field"]] is not None
        ]
        by: dict[str, list[float]] = defaultdict(list)
        for r in rows:
            by[r["scenario"]].append(r["values"][c["field"]])
        means = [sum(x) / len(x) for x in by.values()]
        assert min(means) - 1e-12 <= c["boot_low"] <= c["boot_high"] <= max(means) + 1e-12
        assert c["ci_method"] == ("cluster_cr2_bm" if c["ci_low"] is not None else None)
        assert c["cr1_method"] == ("cluster_t" if c["cr1_ci_low"] is not None else None)


def test_flag_rates_match_the_slow_reference(mixed: dict[str, Any]) -> None:
    got = {(r["variant"], r["subset"]): r for r in mixed["analysis"].doc["flag_rates"]}
    for v in ("A", "B"):
        for subset, keep in ((None, None), ("framework", {"s1", "s2", "s4"})):
            # denominator: rows where the flags field exists as a list (conflicts held out)
            rows = [
                r
                for r in mixed["naive"]
                if r["variant"] == v
                and not r["conflict"]
                and r["flags"] is not None
                and (keep is None or r["scenario"] in keep)
            ]
            flagged = sum(1 for r in rows if len(r["flags"]) > 0)
            lo, hi = proportion_confint(flagged, len(rows), alpha=0.05, method="wilson")
            rec = got[(v, subset)]
            assert (rec["flagged"], rec["n"]) == (flagged, len(rows))
            assert rec["rate"] == pytest.approx(flagged / len(rows))
            assert rec["wilson_low"] == pytest.approx(lo, abs=1e-12)
            assert rec["wilson_high"] == pytest.approx(hi, abs=1e-12)


# --------------------------------------------------------------------------- by hand


def test_one_cell_by_hand(tmp_path: Path) -> None:
    key = {"variant": "A", "judge": "j1"}
    lines = [
        {**key, "scenario": "s1", "trial": 1, "overall": 8},
        {**key, "scenario": "s1", "trial": 2, "overall": 6},
        {**key, "scenario": "s2", "trial": 1, "overall": 9},
        {**key, "scenario": "s3", "trial": 1},  # empty row
        {**key, "scenario": "s3", "trial": 1},  # its duplicate: not a row
        "{broken",  # malformed: not a row
    ]
    cfg = make_cfg(scores={"overall": "overall"})
    c = find(card_of(write_lines(tmp_path / "r.jsonl", lines), cfg), "A")
    # valid 8, 6, 9: mean 23/3; four rows (the empty one counts, its duplicate does not)
    assert (c["valid_n"], c["rows"], c["clusters"]) == (3, 4, 2)
    assert c["mean"] == pytest.approx(23 / 3)
    assert c["zero_filled_mean"] == pytest.approx(23 / 4)  # 5.75
    assert c["zero_filled_diff"] == pytest.approx(23 / 4 - 23 / 3)
    assert c["lower_bound"] == pytest.approx((23 + 1) / 4)  # 6.00
    assert c["upper_bound"] == pytest.approx((23 + 10) / 4)  # 8.25
    # deviations 1/3, -5/3, 4/3: SS = 1/9 + 25/9 + 16/9 = 14/3, var = 7/3, se = sqrt(7/3 / 3)
    assert c["se"] == pytest.approx(math.sqrt(7 / 9))  # 0.8819
    # cluster residual sums: s1 = 1/3 - 5/3 = -4/3, s2 = 4/3; CR1 with G = 2, K = 1:
    # se^2 = G/(G-1) * (16/9 + 16/9) / n^2 = 2 * (32/9) / 9 = 64/81 -> se = 8/9
    assert c["se_clustered"] == pytest.approx(8 / 9)
    t1 = 12.706204736174698  # t_{0.975, 1}
    assert c["cr1_ci_low"] == pytest.approx(23 / 3 - t1 * 8 / 9)
    assert c["cr1_ci_high"] == pytest.approx(23 / 3 + t1 * 8 / 9)
    assert (c["cr1_method"], c["ci_method"]) == ("cluster_t", "cluster_cr2_bm")
    # CR2 (the headline): shares pi = 2/3, 1/3; se^2 = sum_g S_g^2 / (n^2 (1 - pi_g))
    # = (16/9) / 9 * (3 + 3/2) = 8/9. Bell-McCaffrey df = 1 / (sum pi^2 + sum_{g != h} w_g w_h),
    # w_g = pi_g^2 / (1 - pi_g) = 4/3, 1/6: 1 / (5/9 + 2 * 2/9) = 1 (always 1 with G = 2)
    assert c["se_cr2"] == pytest.approx(math.sqrt(8 / 9))
    assert c["df"] == pytest.approx(1.0)
    assert c["ci_low"] == pytest.approx(23 / 3 - t1 * math.sqrt(8 / 9))
    assert c["ci_high"] == pytest.approx(23 / 3 + t1 * math.sqrt(8 / 9))
    # ICC: group means 7 (n 2) and 9 (n 1), grand 23/3. SSB = 2(2/3)^2 + (4/3)^2 = 8/3, MSB = 8/3;
    # SSW = 1 + 1 = 2, MSW = 2/(3-2) = 2; n0 = (3 - 5/3)/1 = 4/3;
    # ICC = (8/3 - 2) / (8/3 + (1/3) * 2) = (2/3) / (10/3) = 0.2; m = 5/3, deff = 1 + (2/3)(0.2)
    assert c["icc"] == pytest.approx(0.2)
    assert c["design_effect"] == pytest.approx(1 + 2 / 15)


def test_single_valid_value_has_null_error_bars_never_zero(tmp_path: Path) -> None:
    lines = [
        {"scenario": "s1", "variant": "A", "trial": 1, "judge": "j", "overall": 7},
        {"scenario": "s2", "variant": "A", "trial": 1, "judge": "j"},
        {"scenario": "s1", "variant": "B", "trial": 1, "judge": "j"},
    ]
    cfg = make_cfg(scores={"overall": "overall"})
    card = card_of(write_lines(tmp_path / "r.jsonl", lines), cfg)
    a = find(card, "A")
    assert (a["mean"], a["valid_n"], a["rows"]) == (7.0, 1, 2)
    for k in (
        "se",
        "se_clustered",
        "se_cr2",
        "df",
        "ci_low",
        "ci_high",
        "ci_method",
        "cr1_ci_low",
        "cr1_ci_high",
        "cr1_method",
        "boot_low",
        "boot_high",
        "icc",
        "design_effect",
    ):
        assert a[k] is None, k
    b = find(card, "B")  # no valid value at all
    assert b["mean"] is None and b["se"] is None and b["status"] == "not_measured"
    assert b["zero_filled_mean"] == 0.0
    assert (b["lower_bound"], b["upper_bound"]) == (1.0, 10.0)
    # and in results.json the nulls stay nulls
    from workbench.common import results

    doc = json.loads(results.dumps({"scorecard": card}))
    assert find(doc["scorecard"], "A")["se"] is None


def test_evidence_status(tmp_path: Path) -> None:
    def rec(s: str, v: str, t: int, score: int | None = 5) -> dict[str, Any]:
        r: dict[str, Any] = {"scenario": s, "variant": v, "trial": t, "judge": "j"}
        if score is not None:
            r["overall"] = score
        return r

    lines = [
        rec("s1", "M", 1, 4),
        rec("s1", "M", 2, 6),
        rec("s2", "M", 1, 7),  # 3 valid, 2 scenarios
        rec("s1", "N", 1),
        rec("s2", "N", 1),
        rec("s3", "N", 1, None),  # 2 valid
        rec("s1", "O", 1),
        rec("s1", "O", 2),
        rec("s1", "O", 3),  # 3 valid, 1 scenario
        rec("s1", "P", 1, None),
        rec("s2", "P", 1, None),
    ]  # none valid
    cfg = make_cfg(scores={"overall": "overall"}, min_valid_n=3, min_clusters=2)
    card = card_of(write_lines(tmp_path / "r.jsonl", lines), cfg)
    status = {v: find(card, v)["status"] for v in "MNOP"}
    assert status == {
        "M": "measured",
        "N": "insufficient",
        "O": "insufficient",
        "P": "not_measured",
    }
    gate = sc.gate(sc.scorecard(wb.read_rows([str(tmp_path / "r.jsonl")], cfg)[0], cfg), cfg)
    assert not gate["passed"]
    why = {f["variant"]: f["why"] for f in gate["failing"]}
    assert set(why) == {"N", "O", "P"}
    assert "2 valid < 3" in why["N"] and "scenario" not in why["N"]
    assert "1 scenarios < 2" in why["O"] and "valid" not in why["O"]


def test_a_zero_width_interval_is_not_measured(tmp_path: Path) -> None:
    """Issue 24, degenerate designs: a cell whose every cluster shows the same mean (here all
    eights over 4 scenarios) has the interval [8, 8]; it is insufficient, not ranked as
    measured, and the gate says why. A cell beside it that varies stays measured."""
    lines = [{"scenario": f"s{g}", "variant": v, "trial": t, "judge": "j",
              "overall": 8 if v == "flat" else 4 + (g + t) % 5}
             for g in range(4) for t in range(3) for v in ("flat", "varied")]
    cfg = make_cfg(scores={"overall": "overall"}, min_valid_n=3, min_clusters=2)
    path = write_lines(tmp_path / "r.jsonl", lines)
    card = card_of(path, cfg)
    flat, varied = find(card, "flat"), find(card, "varied")
    assert (flat["mean"], flat["ci_low"], flat["ci_high"]) == (8.0, 8.0, 8.0)
    # the CR2 headline and the CR1 beside it agree that the design is degenerate
    assert (flat["cr1_ci_low"], flat["cr1_ci_high"], flat["se_cr2"], flat["se_clustered"]) == (8.0, 8.0, 0.0, 0.0)
    assert flat["status"] == "insufficient" and varied["status"] == "measured"
    assert varied["ci_low"] < varied["ci_high"] and varied["cr1_ci_low"] < varied["cr1_ci_high"]
    gate = sc.gate(sc.scorecard(wb.read_rows([str(path)], cfg)[0], cfg), cfg)
    assert not gate["passed"]
    (fail,) = gate["failing"]
    assert fail["variant"] == "flat" and "zero-width interval" in fail["why"]


def test_per_subset_cells_use_only_the_subset_scenarios(tmp_path: Path) -> None:
    lines = []
    for s, x in (("s1", 2), ("s2", 4), ("s3", 9), ("s4", 10)):
        lines.append({"scenario": s, "variant": "A", "trial": 1, "judge": "j", "overall": x})
    lines.append(
        {"scenario": "s2", "variant": "A", "trial": 2, "judge": "j"}
    )  # scoreless, in subset
    cfg = make_cfg(
        scores={"overall": "overall"},
        subsets={"hard": {"scenario": ["s1", "s2"]}, "easy": {"scenario": ["s3", "s4", "s9"]}},
    )
    card = card_of(write_lines(tmp_path / "r.jsonl", lines), cfg)
    hard, easy, pooled = (
        find(card, "A", subset="hard"),
        find(card, "A", subset="easy"),
        find(card, "A"),
    )
    # hard: values 2, 4 and one scoreless row -> mean 3, rows 3, zero-filled 6/3 = 2
    assert (hard["mean"], hard["valid_n"], hard["rows"], hard["clusters"]) == (3.0, 2, 3, 2)
    assert hard["zero_filled_mean"] == pytest.approx(2.0)
    assert (easy["mean"], easy["valid_n"], easy["rows"]) == (9.5, 2, 2)
    assert (pooled["mean"], pooled["valid_n"], pooled["rows"]) == (6.25, 4, 5)


def test_planned_variant_with_no_row_still_gets_a_failing_cell(tmp_path: Path) -> None:
    lines = [
        {"scenario": f"s{s}", "variant": "A", "trial": t, "judge": "j", "overall": 6 + s}
        for s in range(3)
        for t in range(4)
    ]
    path = write_lines(tmp_path / "r.jsonl", lines)
    plan = tmp_path / "plan.csv"
    plan.write_text(
        "scenario,variant,trial,judge\n"
        + "".join(f"s{s},{v},{t},j\n" for s in range(3) for t in range(4) for v in "AC"),
        encoding="utf-8",
    )
    cfg = make_cfg(scores={"overall": "overall"})
    a = wb.run([str(path)], cfg, plan=str(plan))
    c = find(a.doc["scorecard"], "C")
    # its planned-but-absent judgments are the cell's rows (none has a score)
    assert (c["rows"], c["absent"], c["valid_n"], c["mean"], c["status"]) == (
        c["absent"], c["absent"], 0, None, "not_measured")
    assert c["absent"] > 0
    lo, hi = a.config.value_range
    assert c["zero_filled_mean"] == 0.0 and (c["lower_bound"], c["upper_bound"]) == (lo, hi)
    assert [f["variant"] for f in a.doc["gate"]["failing"]] == ["C"]
    assert find(a.doc["scorecard"], "A")["status"] == "measured"


# --------------------------------------------------------------------------- properties

_score = hst.one_of(hst.none(), hst.integers(1, 10))
_row = hst.tuples(
    hst.sampled_from(["s1", "s2", "s3"]),
    hst.sampled_from(["A", "B"]),
    hst.sampled_from(["j1", "j2"]),
    _score,
    _score,
)


def _records(rows: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    out = []
    for i, (s, v, j, overall, honesty) in enumerate(rows):
        r: dict[str, Any] = {"scenario": s, "variant": v, "trial": i, "judge": j}
        if overall is not None:
            r["overall"] = overall
        if honesty is not None:
            r["honesty"] = honesty
        out.append(r)
    return out


def _card_from_records(records: list[dict[str, Any]], cfg: wb.Config) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as d:
        return card_of(write_lines(Path(d) / "r.jsonl", records), cfg)


PROP_CFG = make_cfg(
    scores={"overall": "overall", "honesty": "honesty"}, bootstrap={"resamples": 100, "seed": 1}
)


@HSET
@given(rows=hst.lists(_row, min_size=1, max_size=25), extra=_row, partial=hst.booleans())
def test_scoreless_row_never_moves_a_valid_mean_and_lowers_the_zero_filled_one(
    rows: list[tuple[Any, ...]], extra: tuple[Any, ...], partial: bool
) -> None:
    s, v, j, _, _ = extra
    rows = [
        *rows,
        ("s1", "A", "j1", 5, None),
    ]  # at least one valid row (a file with none is an error)
    before = _card_from_records(_records(rows), PROP_CFG)
    scoreless = _records([*rows, (s, v, j, None, 6 if partial else None)])
    after = _card_from_records(scoreless, PROP_CFG)
    for cell in after:
        if cell["field"] != "overall":
            continue
        touched = cell["variant"] == v and cell["judge"] in (None, j)
        old = [
            c
            for c in before
            if (c["variant"], c["judge"], c["field"]) == (cell["variant"], cell["judge"], "overall")
        ]
        if not old:  # the scoreless row opened a new cell
            assert cell["valid_n"] == 0 and cell["mean"] is None and cell["zero_filled_mean"] == 0.0
            continue
        (o,) = old
        assert cell["mean"] == o["mean"] and cell["valid_n"] == o["valid_n"]
        assert cell["se"] == o["se"] and cell["se_clustered"] == o["se_clustered"]
        if not touched:
            assert cell["zero_filled_mean"] == o["zero_filled_mean"]
        elif o["valid_n"] == 0:
            assert cell["zero_filled_mean"] == o["zero_filled_mean"] == 0.0
        else:
            assert cell["rows"] == o["rows"] + 1
            assert cell["zero_filled_mean"] < o["zero_filled_mean"]


@HSET
@given(rows=hst.lists(_row, min_size=1, max_size=30))
def test_bounds_bracket_the_valid_mean(rows: list[tuple[Any, ...]]) -> None:
    rows = [*rows, ("s2", "B", "j2", 3, 3)]
    for c in _card_from_records(_records(rows), PROP_CFG):
        assert c["rows"] >= c["valid_n"]
        if c["valid_n"] == 0:
            assert c["mean"] is None
            continue
        eps = 1e-12
        # zero-filled <= worst case (missing at the rubric minimum 1 > 0) <= mean <= best case
        assert c["zero_filled_mean"] <= c["lower_bound"] + eps
        assert c["lower_bound"] - eps <= c["mean"] <= c["upper_bound"] + eps
        if c["rows"] == c["valid_n"]:
            assert c["lower_bound"] == pytest.approx(c["mean"]) == pytest.approx(c["upper_bound"])
        if c["ci_low"] is not None:
            assert c["ci_low"] <= c["mean"] <= c["ci_high"]
        if c["se"] is not None:
            assert c["se"] >= 0 and c["valid_n"] >= 2


# --------------------------------------------------------------------------- determinism and gate


def _analyze(path: Path, out: Path, *extra: str) -> int:
    return cli.main(["analyze", str(path), "--out", str(out), "--resamples", "500", "-q", *extra])


def test_bootstrap_is_deterministic_for_a_seed(mixed: dict[str, Any], tmp_path: Path) -> None:
    outs = []
    for name, seed in (("a", "5"), ("b", "5"), ("c", "6")):
        assert _analyze(mixed["path"], tmp_path / name, "--seed", seed, "--no-gate") == 0
        outs.append((tmp_path / name / "results.json").read_bytes())
    assert outs[0] == outs[1]
    a, c = (json.loads(o) for o in (outs[0], outs[2]))
    assert find(a["scorecard"], "A")["boot_low"] != find(c["scorecard"], "A")["boot_low"]
    # only the draws differ: means and analytic intervals are seed-free
    assert find(a["scorecard"], "A")["ci_low"] == find(c["scorecard"], "A")["ci_low"]


def _gate_file(path: Path, valid: int, scenarios: int = 3) -> Path:
    lines = [
        {
            "scenario": f"s{i % scenarios}",
            "variant": "A",
            "trial": i,
            "judge": "j",
            "overall": 6 + i % 3 + (i % scenarios == 0),  # scenario means differ
        }
        for i in range(valid)
    ]
    lines += [
        {"scenario": "s0", "variant": "A", "trial": 100 + i, "judge": "j"} for i in range(4)
    ]  # scoreless
    return write_lines(path, lines)


def test_gate_passes_exactly_at_the_minimum(tmp_path: Path) -> None:
    path = _gate_file(tmp_path / "r.jsonl", valid=10)
    assert _analyze(path, tmp_path / "out", "--min-valid-n", "10", "--min-clusters", "3") == 0
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert doc["gate"]["passed"] and find(doc["scorecard"], "A")["valid_n"] == 10


def test_gate_fails_one_below_the_minimum_and_writes_results_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _gate_file(tmp_path / "r.jsonl", valid=9)
    out = tmp_path / "out"
    code = cli.main(
        [
            "analyze",
            str(path),
            "--out",
            str(out),
            "--resamples",
            "500",
            "--min-valid-n",
            "10",
            "--min-clusters",
            "3",
        ]
    )
    assert code == 1
    printed = capsys.readouterr().out
    assert "FAILED" in printed and "9 valid < 10" in printed
    doc = json.loads((out / "results.json").read_text())  # the evidence is on disk
    assert (out / "rows.parquet").is_file()
    assert not doc["gate"]["passed"]
    assert doc["gate"]["failing"] == [
        {
            "variant": "A",
            "valid_n": 9,
            "rows": 13,
            "clusters": 3,
            "status": "insufficient",
            "why": "9 valid < 10 preregistered",
        }
    ]
    assert (
        _analyze(path, tmp_path / "out2", "--min-valid-n", "10", "--min-clusters", "3", "--no-gate")
        == 0
    )
    assert _analyze(path, tmp_path / "out3", "--min-valid-n", "9", "--min-clusters", "3") == 0


def test_gate_counts_scenarios_too(tmp_path: Path) -> None:
    path = _gate_file(tmp_path / "r.jsonl", valid=12, scenarios=2)
    assert _analyze(path, tmp_path / "o1", "--min-valid-n", "10", "--min-clusters", "3") == 1
    assert _analyze(path, tmp_path / "o2", "--min-valid-n", "10", "--min-clusters", "2") == 0


# --------------------------------------------------------------------------- pass rates


def test_wilson_lower_bound_gate_fails_19_of_20(tmp_path: Path) -> None:
    lines = [
        {
            "scenario": f"s{i % 5}",
            "variant": "A",
            "trial": i // 5,
            "judge": "j",
            "overall": 3 if i == 7 else 9,
        }
        for i in range(20)
    ]
    lines.append(
        {"scenario": "s0", "variant": "A", "trial": 9, "judge": "j"}
    )  # no outcome: out of n
    cfg = make_cfg(scores={"overall": "overall"}, **{"pass": {"threshold": 7, "gate": 0.8, "k": 4}})
    rows, _ = wb.read_rows([str(write_lines(tmp_path / "r.jsonl", lines))], cfg)
    (rec,) = sc.pass_rates(rows, cfg).to_dicts()
    assert (rec["passes"], rec["n"], rec["rate"]) == (19, 20, 0.95)
    # Wilson, z = 1.959964, z^2 = 3.841459: denom = 1 + z^2/20 = 1.192073;
    # centre = (0.95 + z^2/40) / denom = 1.046036 / 1.192073 = 0.877494;
    # half = z/denom * sqrt(0.95*0.05/20 + z^2/1600) = 1.644166 * 0.069108 = 0.113625
    # -> low = 0.763869, high = 0.991119
    assert rec["wilson_low"] == pytest.approx(0.763869, abs=2e-6)
    assert rec["wilson_high"] == pytest.approx(0.991119, abs=2e-6)
    lo, hi = proportion_confint(19, 20, alpha=0.05, method="wilson")
    assert (rec["wilson_low"], rec["wilson_high"]) == (pytest.approx(lo), pytest.approx(hi))
    assert rec["rate"] >= 0.8 and rec["gate_pass"] is False  # the point estimate would have passed
    # the gate reads the scenario-clustered bound: per-scenario passes 4,4,3,4,4 of 4 each.
    # CR1: resid = c - p n = (0.2, 0.2, -0.8, 0.2, 0.2); var = 5/4 * 0.8 / 400 = 0.0025;
    # binomial var 0.95 * 0.05 / 20 = 0.002375 -> deff 1.052632; n_eff = 20 / deff *
    # (1.959964 / t_{0.975, 4} = 2.776445)^2 = 9.467 -> Wilson(0.95, 9.467)
    z, t4 = sps.norm.ppf(0.975), sps.t.ppf(0.975, 4)
    ne = 20 / (0.0025 / 0.002375) * (z / t4) ** 2
    lo, hi = proportion_confint(0.95 * ne, ne, alpha=0.05, method="wilson")
    assert (rec["ci_low"], rec["ci_high"]) == (pytest.approx(lo), pytest.approx(hi))
    assert rec["ci_low"] < rec["wilson_low"] and rec["ci_method"] == "wilson_design_effect_t"
    # pass^4: 5 (scenario, judge) items x 4 trials with an outcome (s0's trial 9 has none
    # and is left out); only s2 (i = 7) has a failure -> C(3,4)/C(4,4) = 0 there, 1 elsewhere
    assert (rec["k"], rec["pass_hat_k"], rec["units_with_k"], rec["units_short"]) == (4, 0.8, 5, 0)


def test_pass_hat_k_by_a_naive_loop(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    lines = []
    for s in range(6):
        for t in range(3 if s != 5 else 2):  # s5 has only 2 trials: cannot show 3 passes
            for v in ("A", "B"):
                lines.append(
                    {
                        "scenario": f"s{s}",
                        "variant": v,
                        "trial": t,
                        "judge": "j",
                        "overall": int(rng.integers(4, 11)),
                    }
                )
    cfg = make_cfg(
        scores={"overall": "overall"},
        subsets={"few": {"scenario": ["s0", "s1"]}},
        **{"pass": {"threshold": 6, "k": 3}},
    )
    rows, _ = wb.read_rows([str(write_lines(tmp_path / "r.jsonl", lines))], cfg)
    got = {(r["variant"], r["subset"]): r for r in sc.pass_rates(rows, cfg).to_dicts()}
    k = 3
    for v in ("A", "B"):
        for subset, keep in ((None, None), ("few", {"s0", "s1"})):
            mine = [
                r for r in lines if r["variant"] == v and (keep is None or r["scenario"] in keep)
            ]
            per: dict[str, list[bool]] = defaultdict(list)
            for r in mine:
                per[r["scenario"]].append(r["overall"] >= 6)
            # unbiased per item: C(passes, k) / C(outcomes, k); items with < k outcomes listed
            est = {s_: math.comb(sum(x), k) / math.comb(len(x), k) for s_, x in per.items() if len(x) >= k}
            short = sorted(f"{s_}/j" for s_, x in per.items() if len(x) < k)
            rec = got[(v, subset)]
            assert rec["passes"] == sum(sum(x) for x in per.values()) and rec["n"] == len(mine)
            assert rec["k"] == k
            assert rec["pass_hat_k"] == pytest.approx(sum(est.values()) / len(est))
            assert rec["units_with_k"] == len(est)
            assert rec["units_short"] == len(short) and rec["units_short_list"] == short
            assert rec["gate_pass"] is None
            if len(est) >= 2:
                vals = np.array(list(est.values()))
                fit = sm.OLS(vals, np.ones(vals.size)).fit(
                    cov_type="cluster", cov_kwds={"groups": np.arange(vals.size)})
                lo = vals.mean() - sps.t.ppf(0.975, vals.size - 1) * fit.bse[0]
                assert rec["pass_hat_k_cr1_ci_low"] == pytest.approx(max(0.0, lo))
                # headline: Wilson on the effective number of outcomes p(1 - p) / v, v the CR2
                # variance (one item per scenario: the HC2 variance, sum e_i^2 / (1 - 1/m) / m^2,
                # and BM df m - 1), capped at outcomes / k, the quantile t at 4 x df, here by
                # statsmodels' Wilson (at z) on n_eff (z / t)^2
                m, p_ = vals.size, float(vals.mean())
                v2 = float(np.sum((vals - p_) ** 2)) / (1 - 1 / m) / m**2
                cap = sum(len(x) for s_, x in per.items() if s_ in est) / k
                ne = min(cap, p_ * (1 - p_) / v2) if 0 < p_ < 1 and v2 > 0 else cap
                ne *= (sps.norm.ppf(0.975) / sps.t.ppf(0.975, 4 * (m - 1))) ** 2
                wl, wh = proportion_confint(p_ * ne, ne, alpha=0.05, method="wilson")
                assert rec["pass_hat_k_ci_method"] == "wilson_design_effect_cr2_4bm"
                assert (rec["pass_hat_k_ci_low"], rec["pass_hat_k_ci_high"]) == (
                    pytest.approx(wl if p_ > 0 else 0.0), pytest.approx(wh if p_ < 1 else 1.0))
    # pass^k never exceeds pass^(k-1) on the same rows
    cfg2 = cfg.with_overrides(pass_k=2)
    two = {(r["variant"], r["subset"]): r for r in sc.pass_rates(rows, cfg2).to_dicts()}
    for key, rec in got.items():
        if rec["pass_hat_k"] is not None and two[key]["units_with_k"] == rec["units_with_k"]:
            assert rec["pass_hat_k"] <= two[key]["pass_hat_k"] + 1e-12


def test_pass_field_holds_out_conflicting_rows(tmp_path: Path) -> None:
    base = {"variant": "A", "judge": "j"}
    lines = [
        {**base, "scenario": "s1", "trial": 1, "overall": 5, "ok": True},
        {**base, "scenario": "s1", "trial": 2, "overall": 5, "ok": False},
        {**base, "scenario": "s2", "trial": 1, "overall": 5, "ok": True},
        {
            **base,
            "scenario": "s2",
            "trial": 1,
            "overall": 6,
            "ok": True,
        },  # conflict with the line above
        {**base, "scenario": "s3", "trial": 1, "ok": True},  # scoreless but has an outcome
        {**base, "scenario": "s3", "trial": 2, "overall": 7},
    ]  # no outcome
    cfg = make_cfg(scores={"overall": "overall"}, **{"pass": {"field": "ok"}})
    rows, _ = wb.read_rows([str(write_lines(tmp_path / "r.jsonl", lines))], cfg)
    (rec,) = sc.pass_rates(rows, cfg).to_dicts()
    # outcomes: s1 True, s1 False, s3 True (the two conflicting s2 lines are held out)
    assert (rec["passes"], rec["n"]) == (2, 3)


# --------------------------------------------------------------------------- consistency


def test_consistency_counts_by_hand(tmp_path: Path) -> None:
    def rec(j: str, t: int, **scores: Any) -> dict[str, Any]:
        return {"scenario": "s1", "variant": "A", "trial": t, "judge": j, **scores}

    subs = ("correctness", "completeness", "depth", "citations")
    lines = [
        rec(
            "j1",
            1,
            overall=9,
            **dict(zip(subs, (2, 3, 2, 3), strict=True)),
            honesty=9,
            fabrication_flags=["x"],
        ),  # subs mean (2+3+2+3+9)/5 = 3.8: |9 - 3.8| = 5.2 > 3; honest+flagged
        rec(
            "j1", 2, overall=5, **dict.fromkeys(subs, 5), honesty=5, fabrication_flags=["x"]
        ),  # neither
        rec(
            "j1", 3, overall=8, honesty=4, fabrication_flags=[]
        ),  # only honesty: |8 - 4| = 4 > 3; not flagged
        rec("j1", 4, overall=8, fabrication_flags=["y"]),  # no sub-score: not checked
        rec(
            "j1", 5, overall=6, honesty=8, fabrication_flags=["z"]
        ),  # |6 - 8| = 2; 8 >= 8 and flagged
        rec("j1", 6, overall=5, honesty=9),  # |5 - 9| = 4 > 3; no flags field
        rec(
            "j2", 1, overall=7, **dict.fromkeys(subs, 4), honesty=4
        ),  # |7 - 4| = 3: not more than 3
        rec("j2", 2, correctness=1, honesty=10, fabrication_flags=["x"]),  # partial: no overall
    ]
    cfg = make_cfg()
    rows, _ = wb.read_rows([str(write_lines(tmp_path / "r.jsonl", lines))], cfg)
    got = {r["judge"]: r for r in sc.consistency(rows, cfg).to_dicts()}
    assert got["j1"]["overall_checked"] == 5 and got["j1"]["overall_far_from_subscores"] == 3
    assert got["j1"]["honesty_checked"] == 4 and got["j1"]["honest_but_flagged"] == 2
    assert got["j2"]["overall_checked"] == 1 and got["j2"]["overall_far_from_subscores"] == 0
    assert got["j2"]["honesty_checked"] == 1 and got["j2"]["honest_but_flagged"] == 1


# --------------------------------------------------------------------------- coverage


@pytest.mark.slow
def test_clustered_interval_covers_at_nominal_rate_and_naive_does_not() -> None:
    """Scenario random effects (ICC 0.5, 8 values per scenario, 12 scenarios).

    The naive interval treats 96 values as independent although the design effect is
    1 + 7 * 0.5 = 4.5, so its half-width is about 1/sqrt(4.5) of what it should be.
    """
    cfg = make_cfg(bootstrap={"resamples": 200, "seed": 3})
    rng = np.random.default_rng(20260819)
    true_mean, draws, g, m = 6.0, 1000, 12, 8
    labels = np.repeat([f"s{i}" for i in range(g)], m)
    hit_cl = hit_naive = hit_boot = 0
    for i in range(draws):
        values = true_mean + np.repeat(rng.normal(0, 1.0, g), m) + rng.normal(0, 1.0, g * m)
        cell = sc.summarize_cell(values, labels, g * m, cfg, key=(i,))
        hit_cl += cell["ci_low"] <= true_mean <= cell["ci_high"]
        t = sps.t.ppf(0.975, g * m - 1)
        hit_naive += abs(cell["mean"] - true_mean) <= t * cell["se"]
        hit_boot += cell["boot_low"] <= true_mean <= cell["boot_high"]
    cl, nv, bt = hit_cl / draws, hit_naive / draws, hit_boot / draws
    msg = (
        f"coverage over {draws} draws: clustered CR2 t(BM df; equal clusters: CR1 t(G-1)) {cl:.3f}, naive {nv:.3f}, "
        f"cluster bootstrap {bt:.3f} (nominal 0.95)"
    )
    # Monte Carlo SE of a 0.95 rate over 1000 draws is 0.007; CR1 with 12 clusters runs a
    # little under nominal: allow 0.03
    assert abs(cl - 0.95) <= 0.03, msg
    assert nv <= 0.80, msg
    print(msg)


# --------------------------------------------------------------------------- the prepared cells


def _reference_scorecard(rows: Any, cfg: wb.Config) -> list[dict[str, Any]]:
    """The scorecard cell by cell, the plain way: every cell's rows picked from the row
    table by a Python loop over its dicts, its row count by hand (a conflicting key once,
    planned-but-absent judgments added), its values handed to ``summarize_cell`` with their
    scenario names, on a bootstrap of its own that registers each cell from its values."""
    from workbench.reduce.sufficient import JointBootstrap

    recs = rows.to_dicts()
    keyed = [r for r in recs if r["bucket"] not in ("blank", "malformed")]
    jb = JointBootstrap.for_rows(rows, cfg)
    specs = [(("variant",), None), (("variant", "judge"), None)] + [(("variant",), s) for s in cfg.subsets]
    out = []
    for by, subset in specs:
        spec = cfg.subsets.get(subset, {}) if subset else {}
        def inside(r: dict[str, Any], spec: dict[str, Any] = spec) -> bool:
            return all(r[f] in vals for f, vals in spec.items())
        keys = sorted({tuple(r[b] for b in by) for r in keyed if inside(r)}, key=lambda k: tuple(map(str, k)))
        for key in keys:
            mine = [r for r in keyed if inside(r) and tuple(r[b] for b in by) == key]
            present = [r for r in mine if r["bucket"] not in ("duplicate", "missing_planned")]
            conflict_keys = {tuple(r[k] for k in KEYS) for r in present if r["bucket"] == "conflict"}
            n_conflict = sum(r["bucket"] == "conflict" for r in present)
            absent = sum(r["bucket"] == "missing_planned" for r in mine)
            n_rows = len(present) - n_conflict + len(conflict_keys) + absent
            for fld in cfg.score_names:
                valid = [r for r in present if r[fld] is not None]
                labels = dict(zip(by, key, strict=True))
                rec = sc.summarize_cell(np.array([r[fld] for r in valid], dtype=float),
                                        np.array([r["scenario"] for r in valid], dtype=object), n_rows, cfg,
                                        key=(labels["variant"], labels.get("judge"), subset, fld), joint=jb)
                rec.update({"variant": labels["variant"], "judge": labels.get("judge"), "subset": subset,
                            "field": fld, "absent": absent})
                out.append(rec)
    jb.run()
    return out


def test_prepared_cells_equal_a_plain_per_cell_computation(tmp_path: Path) -> None:
    """The scorecard (rows prepared once, cells as slices) equals, number for number and bit
    for bit, a plain per-cell computation on a file with everything a cell can meet: two
    subsets, planned-but-absent judgments (one variant planned with no row at all), exact
    repeats, conflicting repeats, null and absent scores, scores given as strings, several
    fields, scenario names whose text order is not their numeric order, lines out of order."""
    rng = np.random.default_rng(7)
    lines: list[Any] = []
    for s in rng.permutation(23):
        for v in ("base", "Beta", "alpha"):
            for t in (1, 2):
                for j in ("j-2", "j-10"):
                    row: dict[str, Any] = {"scenario": f"s{s}", "variant": v, "trial": t, "judge": j}
                    for f in ("overall", "correctness", "depth"):
                        u = rng.random()
                        if u < 0.1:
                            continue  # absent
                        row[f] = None if u < 0.15 else (str(int(rng.integers(1, 11))) if u < 0.2
                                                        else int(rng.integers(1, 11)))
                    lines.append(row)
    order = rng.permutation(len(lines))
    lines = [lines[i] for i in order]
    lines += [dict(lines[3]), dict(lines[40]), {**lines[41], "overall": 11 - int(lines[41].get("overall") or 1)},
              {**lines[77], "depth": 1 if lines[77].get("depth") != 1 else 2}, "{not json", ""]
    path = write_lines(tmp_path / "r.jsonl", lines)
    plan = tmp_path / "plan.csv"
    plan.write_text("scenario,variant,trial,judge\n"
                    + "".join(f"s{s},{v},{t},{j}\n" for s in range(25) for v in ("base", "Beta", "alpha", "gamma")
                              for t in (1, 2) for j in ("j-2", "j-10")), encoding="utf-8")
    cfg = make_cfg(scores={f: f for f in ("overall", "correctness", "depth")},
                   subsets={"tens": {"scenario": [f"s{i}" for i in (1, 10, 11, 12, 2, 24)]},
                            "alpha_hard": {"scenario": ["s3", "s4", "s5"], "variant": ["alpha"]}})
    a = wb.run([str(path)], cfg, plan=str(plan))
    rows = a.rows
    buckets = set(rows["bucket"].to_list())
    assert {"duplicate", "conflict", "missing_planned", "malformed", "valid", "partial"} <= buckets
    got = sc.scorecard(rows, cfg).to_dicts()
    want = _reference_scorecard(rows, cfg)
    assert len(got) == len(want) == (4 + 8 + 4 + 1) * 3
    for g, w in zip(got, want, strict=True):
        assert g == {k: w[k] for k in g}, (g["variant"], g["judge"], g["subset"], g["field"])
    # the run's scorecard (its bootstrap shared with offsets and contrasts) is the same
    assert a.doc["scorecard"] == got
    gamma = [c for c in got if c["variant"] == "gamma" and c["judge"] is None and c["subset"] is None]
    assert all(c["valid_n"] == 0 and c["rows"] == c["absent"] == 25 * 2 * 2 for c in gamma)


def test_cell_summary_sorted_equals_cell_summary_bit_for_bit() -> None:
    from workbench import stats

    rng = np.random.default_rng(3)
    for n in (0, 1, 2, 7, 500):
        codes = np.sort(rng.integers(0, max(1, n // 3), n)) * 5 + 2  # sorted, not dense
        x = rng.normal(5, 2, n).round(rng.integers(0, 3))
        assert stats.cell_summary_sorted(x, codes, 0.9) == stats.cell_summary(x, codes, 0.9, bootstrap=False)
    with pytest.raises(ValueError, match="sorted"):
        stats.cell_summary_sorted(np.array([1.0, 2.0]), np.array([1, 0]))


def test_scorecard_bootstrap_columns_are_the_reduction_s_per_scenario_sums(tmp_path: Path) -> None:
    """The per-scenario (count, sum) each cell registers with the joint bootstrap, summed from
    the scorecard's own slices, are workbench.reduce.sufficient.cell_reduction's, column for column."""
    from workbench.reduce import sufficient as reduce

    rng = np.random.default_rng(2)
    lines = [{"scenario": f"s{s}", "variant": v, "trial": t, "judge": j,
              **({"overall": int(rng.integers(1, 11))} if rng.random() > 0.2 else {}),
              **({"depth": float(rng.integers(2, 20)) / 2} if rng.random() > 0.1 else {})}
             for s in rng.permutation(17) for v in "AB" for t in (1, 2, 3) for j in ("x", "y")]
    lines.append(dict(lines[5]))
    path = write_lines(tmp_path / "r.jsonl", lines)
    cfg = make_cfg(scores={"overall": "overall", "depth": "depth"},
                   subsets={"odd": {"scenario": [f"s{i}" for i in range(1, 17, 2)]}})
    rows, _ = wb.read_rows([str(path)], cfg)
    jb = reduce.JointBootstrap.for_rows(rows, cfg)
    # the columns as registered (the pass releases their sums once their draws are made)
    registered: list[tuple[np.ndarray, ...]] = []
    add_sums = jb.add_sums

    def record(codes: np.ndarray, n: np.ndarray, s: np.ndarray) -> int:
        col = add_sums(codes, n, s)
        if col == len(registered):  # a new column, not one already known
            c = jb.columns[col]
            registered.append((c.codes.copy(), c.n.copy(), c.s.copy()))
        return col

    jb.add_sums = record  # type: ignore[method-assign]
    card = sc.scorecard(rows, cfg, jb)
    assert all(c.s is None for c in jb.columns)  # released after the pass
    red = reduce.cell_reduction(rows, cfg, jb.scenarios)
    parts = red.partition_by(["field", "variant", "judge", "subset"], as_dict=True)
    want = reduce.JointBootstrap.for_rows(rows, cfg)
    for c in card.iter_rows(named=True):
        p = parts.get((c["field"], c["variant"], c["judge"], c["subset"]))
        if p is None:
            want.add_sums(np.zeros(0, np.intp), np.zeros(0), np.zeros(0))
        else:
            want.add_sums(p["code"].to_numpy(), p["n"].to_numpy(), p["sum"].to_numpy())
    assert len(registered) == len(jb.columns) == len(want.columns) > 0
    for got, exp in zip(registered, want.columns, strict=True):
        for a, b in zip(got, (exp.codes, exp.n, exp.s), strict=True):
            assert a.tobytes() == b.tobytes()


def test_integer_values_sort_as_the_stable_sorts() -> None:
    """The packed-key sort of integer scores (scorecard._IntegerValues) gives the arrays of
    the stable sorts by (scenario, value) then cell, byte for byte, and so does its fallback;
    -0.0 and non-integers take the general path."""
    from workbench import stats
    from workbench.analysis import scorecard as sc

    rng = np.random.default_rng(1)
    # the last two: a packed key past 2**32 (the uint64 branch: (m + 1) * g * width ~ 1e13)
    shapes = [(int(rng.integers(1, 2000)), int(rng.integers(1, 300)), int(rng.integers(1, 25)), 17)
              for _ in range(100)] + [(5000, 70_000, 70_000, 2000), (3000, 40_000, 9, 60_000)]
    for trial, (n, g, m, width) in enumerate(shapes):
        c = rng.integers(0, g, n).astype(np.int32)
        x = rng.integers(-5, width - 5, n).astype(np.float64) + (1000.0 if trial % 3 == 0 else 0.0)
        idx = rng.permutation(2 * n)[:n].astype(np.int32)
        base_cell = rng.integers(0, m + 1, 2 * n).astype(np.int32)
        order = sc._stable_order(c, sc._value_rank(x))
        want = sc._CellValues.slices(base_cell, m, (idx[order], x[order], c[order]))
        small = stats.small_integers(x)
        assert small is not None
        offsets = small[:2]
        packed = sc._IntegerValues(*offsets)
        if width > 17:
            assert (m + 1) * (int(c.max()) + 1) * packed.width >= 2**32  # the uint64 key
        got = sc._CellValues.slices(base_cell, m, (idx, packed, c))
        wide = sc._IntegerValues(*offsets)
        wide.sorted_by = lambda *a: None  # type: ignore[method-assign]  # the fallback
        fallback = sc._CellValues.slices(base_cell, m, (idx, wide, c))
        for w, a, b in zip(want, got, fallback, strict=True):
            assert w.dtype == a.dtype == b.dtype and w.tobytes() == a.tobytes() == b.tobytes()
    assert stats.small_integers(np.array([0.0, -0.0, 1.0])) is None
    assert stats.small_integers(np.array([0.5, 1.0])) is None


def test_unequal_clusters_headline_cr2_against_the_dense_reference(tmp_path: Path) -> None:
    """Issue 24 follow-up: with unequal clusters (1-7 trials per scenario, 4 scenarios) every
    cell's headline interval is CR2 with the Bell-McCaffrey df, equal to the dense matrices
    of tests/cr2_reference.py to 1e-12 (the fast path works on per-cluster sums); its df is
    below G - 1, where the CR1 t(G - 1) beside it assumed G - 1."""
    rng = np.random.default_rng(7)
    trials = {"s0": 1, "s1": 2, "s2": 7, "s3": 4}
    lines = [{"scenario": s, "variant": v, "trial": t, "judge": j, "overall": int(rng.integers(1, 11))}
             for s, m in trials.items() for t in range(m) for v in ("A", "B") for j in ("j1", "j2")]
    cfg = make_cfg(scores={"overall": "overall"}, min_valid_n=3, min_clusters=2)
    card = card_of(write_lines(tmp_path / "r.jsonl", lines), cfg)
    seen = 0
    for c in card:
        rows = [r for r in lines if r["variant"] == c["variant"] and (c["judge"] is None or r["judge"] == c["judge"])]
        y = np.array([r["overall"] for r in rows], dtype=float)
        labs = np.array([r["scenario"] for r in rows])
        ref = dense_mean(y, labs)
        for key, want in (("se_cr2", ref["se"]), ("df", ref["df"]), ("ci_low", ref["ci_low"]),
                          ("ci_high", ref["ci_high"])):
            assert abs(c[key] - want) <= 1e-12 * max(1.0, abs(want)), (c["variant"], c["judge"], key, c[key], want)
        assert c["df"] < c["clusters"] - 1
        assert c["ci_method"] == "cluster_cr2_bm" and c["cr1_method"] == "cluster_t"
        t = sps.t.ppf(0.975, c["clusters"] - 1)
        assert c["cr1_ci_low"] == pytest.approx(c["mean"] - t * c["se_clustered"], rel=1e-12)
        seen += 1
    assert seen == 6  # A, B pooled and per judge


def test_per_scenario_sums_share_the_scenario_index_when_every_scenario_is_there() -> None:
    """A cell's per-scenario counts and sums (awaiting the bootstrap) are a loop's; a cell with
    a value in every scenario takes the shared ``arange`` as its codes (the same object, no
    copy), one in most scenarios the few it lacks, one in few its own codes."""
    from workbench.analysis import scorecard as sc

    every = np.arange(4, dtype=np.int32)
    codes = np.array([0, 0, 1, 2, 2, 2, 3], dtype=np.int32)
    values = np.array([1.0, 2.0, 5.0, 1.0, 1.0, 4.0, 7.0])
    got_codes, n, s = sc._per_scenario(values, codes, every)
    assert got_codes is every
    want = {g: [v for c, v in zip(codes.tolist(), values.tolist(), strict=True) if c == g] for g in range(4)}
    assert n.tolist() == [len(want[g]) for g in range(4)] and s.tolist() == [sum(want[g]) for g in range(4)]
    # most scenarios (3 of 4): kept as the one it lacks; few (1 of 4): the codes themselves
    gap = np.array([0, 2, 2, 3], dtype=np.int32)
    got_codes, n, s = sc._per_scenario(np.array([1.0, 2.0, 3.0, 4.0]), gap, every)
    assert isinstance(got_codes, sc._Gaps) and got_codes.missing.tolist() == [1]
    assert sc._codes_of(got_codes).tolist() == [0, 2, 3]
    assert n.tolist() == [1, 2, 1] and s.tolist() == [1.0, 5.0, 4.0]
    got_codes, n, s = sc._per_scenario(np.array([6.0, 3.0]), np.array([2, 2], dtype=np.int32), every)
    assert sc._codes_of(got_codes).tolist() == [2] and n.tolist() == [2] and s.tolist() == [9.0]
    from workbench.reduce import codes as reduce_codes

    assert [reduce_codes.narrowest_unsigned(t) for t in (0, 255, 256, 65535, 65536, 2**32)] == [
        np.uint8, np.uint8, np.uint16, np.uint16, np.uint32, np.int64]
