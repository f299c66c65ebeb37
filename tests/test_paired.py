"""Tests for workbench.analysis.paired (issue 4: judge offsets, variant contrasts, power, repetitions).

Reference values come from plain loops over the raw records, scipy and statsmodels, or
hand calculations spelled out in comments; never from the function under test.
"""

from __future__ import annotations

import importlib
import itertools
import json
import math
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
import statsmodels.api as sm
from cr2_reference import dense_diff, dense_mean
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hst
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

import workbench as wb

paired = importlib.import_module("workbench.analysis.paired")


def _records(table: pl.DataFrame) -> list[dict[str, Any]]:
    """A paired stage table as the records results.json holds (``diff_counts`` an object)."""
    from workbench.common import schemas

    return schemas.records(table, schemas.JUDGE_OFFSETS if "judge_a" in table.columns
                            else schemas.PAIRED_CONTRASTS)

HSET = settings(
    database=None, deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow]
)


# --------------------------------------------------------------------------- helpers


def write_lines(path: Path, lines: list[Any]) -> Path:
    path.write_text(
        "\n".join(ln if isinstance(ln, str) else json.dumps(ln) for ln in lines) + "\n",
        encoding="utf-8",
    )
    return path


def make_cfg(**over: Any) -> wb.Config:
    base: dict[str, Any] = {
        "bootstrap": {"resamples": 300, "seed": 5},
        "scores": {"overall": "overall"},
    }
    base.update(over)
    return wb.load_config(overrides=base)


def read(lines: list[Any], cfg: wb.Config) -> pl.DataFrame:
    with tempfile.TemporaryDirectory() as d:
        rows, _ = wb.read_rows([str(write_lines(Path(d) / "rows.jsonl", lines))], cfg)
    return rows


def valid_map(
    lines: list[dict[str, Any]],
    judge: str | None = None,
    variant: str | None = None,
    scen: set[str] | None = None,
) -> dict[tuple[str, ...], float]:
    """{(scenario, variant, trial[, judge]): value} over records with a valid overall (1..10)."""
    out = {}
    for r in lines:
        v = r.get("overall")
        if not (isinstance(v, int | float) and not isinstance(v, bool) and 1 <= v <= 10):
            continue
        if judge is not None and r["judge"] != judge:
            continue
        if variant is not None and r["variant"] != variant:
            continue
        if scen is not None and r["scenario"] not in scen:
            continue
        key = (r["scenario"], r["variant"], str(r["trial"]))
        out[key if judge is not None else (*key, r["judge"])] = float(v)
    return out


def sm_cluster(y: np.ndarray, x: np.ndarray, groups: list[str]) -> Any:
    _, codes = np.unique(np.asarray(groups), return_inverse=True)
    return sm.OLS(y, x).fit(cov_type="cluster", cov_kwds={"groups": codes})


def t_ci(est: float, se: float, df: int, conf: float = 0.95) -> tuple[float, float]:
    t = sps.t.ppf(1 - (1 - conf) / 2, df)
    return est - t * se, est + t * se


def naive_kappa_quadratic(a: list[float], b: list[float]) -> float:
    """Cohen's weighted kappa with quadratic weights (i - j)^2 on the integer scale.

    Observed disagreement: mean of (a_i - b_i)^2; expected under independent marginals:
    mean over every (i, j) of (a_i - b_j)^2. The weight normaliser (k - 1)^2 cancels.
    """
    n = len(a)
    obs = sum((x - y) ** 2 for x, y in zip(a, b, strict=True)) / n
    exp = sum((x - y) ** 2 for x in a for y in b) / (n * n)
    return 1 - obs / exp


def naive_alpha_interval(a: list[float], b: list[float]) -> float:
    """Krippendorff's alpha, interval metric, two coders, no missing values.

    alpha = 1 - (N - 1) * sum_u sum_{c != k in u} d^2 / (m_u - 1) / sum_{c != k over all} d^2
    with N = 2n pairable values and m_u = 2 (so each unit contributes 2 (a_u - b_u)^2).
    """
    vals = list(a) + list(b)
    big_n = len(vals)
    within = sum(2 * (x - y) ** 2 for x, y in zip(a, b, strict=True))
    total = sum((x - y) ** 2 for x in vals for y in vals)
    return 1 - (big_n - 1) * within / total


def mirror(counts: dict[str, int]) -> dict[str, int]:
    return {str(-int(k)): v for k, v in counts.items()}


# --------------------------------------------------------------------------- judge offsets


def offsets_lines(seed: int = 4) -> list[dict[str, Any]]:
    """Two judges over 8 scenarios x 2 variants x 3 trials; the second judge uses the ends
    of the scale (gaps between used values), and some items only one judge scored."""
    rng = np.random.default_rng(seed)
    out: list[dict[str, Any]] = []
    for s in range(8):
        eff = rng.normal(0, 1.2)
        for v in ("A", "B"):
            for t in (1, 2, 3):
                base = 6 + eff + (0.7 if v == "B" else 0)
                for j, shift in (("claude", 0.0), ("glm", 0.4)):
                    r: dict[str, Any] = {"scenario": f"s{s}", "variant": v, "trial": t, "judge": j}
                    x = base + shift + rng.normal(0, 1.0)
                    if j == "glm":
                        x = 2 if x < 5.5 else (9 if x > 7 else x)  # coarse judge: 2, 5-7, 9
                    u = rng.random()
                    if u < 0.12:
                        pass  # scoreless row
                    elif u < 0.15:
                        r["overall"] = "n/a"  # non-numeric
                    else:
                        r["overall"] = int(np.clip(round(x), 1, 10))
                    if not (j == "claude" and s == 7 and v == "A" and t == 3):  # one absent line
                        out.append(r)
    return out


@pytest.fixture(scope="module")
def offsets() -> dict[str, Any]:
    lines = offsets_lines()
    cfg = make_cfg(subsets={"early": {"scenario": ["s0", "s1", "s2", "s3"]}})
    rows = read(lines, cfg)
    return {"lines": lines, "cfg": cfg, "rows": rows, "records": _records(paired.judge_offsets(rows, cfg))}


def test_judge_offsets_match_naive_loops(offsets: dict[str, Any]) -> None:
    lines, recs = offsets["lines"], offsets["records"]
    scopes = [
        (None, None, None),
        ("A", None, None),
        ("B", None, None),
        (None, "early", {"s0", "s1", "s2", "s3"}),
    ]
    assert {(r["variant"], r["subset"]) for r in recs} == {(v, s) for v, s, _ in scopes}
    for variant, subset, scen in scopes:
        (rec,) = [r for r in recs if r["variant"] == variant and r["subset"] == subset]
        assert (rec["judge_a"], rec["judge_b"]) == ("claude", "glm")  # sorted: claude - glm
        ma = valid_map(lines, "claude", variant, scen)
        mb = valid_map(lines, "glm", variant, scen)
        keys = sorted(set(ma) & set(mb))
        a = [ma[k] for k in keys]
        b = [mb[k] for k in keys]
        d = [x - y for x, y in zip(a, b, strict=True)]
        n = len(d)
        where = f"{variant}/{subset}"
        assert rec["pairs"] == n > 10, where
        assert rec["only_a"] == len(set(ma) - set(mb)), where
        assert rec["only_b"] == len(set(mb) - set(ma)), where
        assert rec["only_a"] + rec["only_b"] > 0
        assert rec["mean_diff"] == pytest.approx(sum(d) / n), where
        tt = sps.ttest_rel(a, b).confidence_interval(0.95)
        assert rec["t_ci_low"] == pytest.approx(tt.low) and rec["t_ci_high"] == pytest.approx(
            tt.high
        ), where
        scen_of = [k[0] for k in keys]
        fit = sm_cluster(np.array(d), np.ones(n), scen_of)
        lo, hi = t_ci(sum(d) / n, float(fit.bse[0]), len(set(scen_of)) - 1)
        assert rec["clustered_ci_low"] == pytest.approx(lo) and rec[
            "clustered_ci_high"
        ] == pytest.approx(hi)
        assert rec["diff_counts"] == {
            str(k): c for k, c in sorted(Counter(int(x) for x in d).items())
        }
        assert list(rec["diff_counts"]) == [str(k) for k in sorted(int(x) for x in set(d))]
        assert rec["wilcoxon_p"] == pytest.approx(sps.wilcoxon(a, b).pvalue), where
        assert rec["exact_agreement"] == pytest.approx(
            sum(x == y for x, y in zip(a, b, strict=True)) / n
        )
        assert rec["within_one"] == pytest.approx(
            sum(abs(x - y) <= 1 for x, y in zip(a, b, strict=True)) / n
        )
        assert rec["kappa_quadratic"] == pytest.approx(naive_kappa_quadratic(a, b)), where
        assert rec["krippendorff_alpha"] == pytest.approx(naive_alpha_interval(a, b)), where
        assert rec["spearman"] == pytest.approx(sps.spearmanr(a, b).statistic), where
        # the headline is CR2 with Bell-McCaffrey df (dense matrices of P&T 2018); CR1 beside
        assert rec["ci_method"] == rec["p_method"] == "cluster_cr2_bm"
        want = dense_mean(d, scen_of)
        for k in ("se", "df", "ci_low", "ci_high", "p"):
            assert rec[k] == pytest.approx(want[k], rel=1e-9), (where, k)
        assert (rec["cr1_ci_low"], rec["cr1_ci_high"]) == (rec["clustered_ci_low"], rec["clustered_ci_high"])
        assert rec["cr1_se"] == pytest.approx(float(fit.bse[0])) and rec["cr1_df"] == len(set(scen_of)) - 1
        assert rec["cr1_p"] == pytest.approx(2 * sps.t.sf(abs(sum(d) / n / float(fit.bse[0])), len(set(scen_of)) - 1))
        assert rec["cr1_method"] == "cluster_t"
        assert rec["boot_low"] <= rec["mean_diff"] <= rec["boot_high"]
        assert rec["ci_low"] <= rec["mean_diff"] <= rec["ci_high"]


def test_quadratic_kappa_uses_the_rubric_scale_by_hand() -> None:
    # Judge a uses 2 and 9 only, judge b uses 2, 3 and 9. Pairs (2,2) (9,9) (2,3) (9,2).
    # Observed mean squared difference: (0 + 0 + 1 + 49) / 4 = 12.5.
    # Expected: mean over the 16 (a_i, b_j) of (a_i - b_j)^2 with a = {2,9,2,9}, b = {2,9,3,2}:
    # a = 2 against b: 0 + 49 + 1 + 0 = 50 (twice); a = 9: 49 + 0 + 36 + 49 = 134 (twice)
    # -> (100 + 268) / 16 = 23. kappa = 1 - 12.5 / 23 = 0.456522.
    # Counting only the observed categories {2, 3, 9} as equally spaced would treat 3 -> 9
    # as one step and give a different number.
    cfg = make_cfg()
    lines = []
    for t, (x, y) in enumerate([(2, 2), (9, 9), (2, 3), (9, 2)]):
        lines.append(
            {"scenario": f"s{t % 2}", "variant": "A", "trial": t, "judge": "a", "overall": x}
        )
        lines.append(
            {"scenario": f"s{t % 2}", "variant": "A", "trial": t, "judge": "b", "overall": y}
        )
    rec = paired._offset_record(read(lines, cfg), cfg, "a", "b", None, None, 0)
    assert rec["kappa_quadratic"] == pytest.approx(1 - 12.5 / 23)
    assert rec["mean_diff"] == pytest.approx((0 + 0 - 1 + 7) / 4)
    assert rec["diff_counts"] == {"-1": 1, "0": 2, "7": 1}


_judged = hst.tuples(
    hst.sampled_from(["s1", "s2", "s3", "s4"]),
    hst.sampled_from(["A", "B"]),
    hst.integers(1, 3),
    hst.one_of(hst.none(), hst.integers(1, 10)),
    hst.one_of(hst.none(), hst.integers(1, 10)),
)


@HSET
@given(
    items=hst.lists(_judged, min_size=1, max_size=30, unique_by=lambda x: x[:3]),
    variant=hst.sampled_from([None, "A"]),
)
def test_swapping_judges_negates_the_offset_and_mirrors_the_counts(
    items: list[tuple[Any, ...]], variant: str | None
) -> None:
    lines: list[dict[str, Any]] = [
        {"scenario": "s9", "variant": "Z", "trial": 1, "judge": "p", "overall": 5}
    ]
    for s, v, t, x, y in items:
        for j, val in (("p", x), ("q", y)):
            r: dict[str, Any] = {"scenario": s, "variant": v, "trial": t, "judge": j}
            if val is not None:
                r["overall"] = val
            lines.append(r)
    cfg = make_cfg()
    rows = read(lines, cfg)
    fw = paired._offset_record(rows, cfg, "p", "q", variant, None, 17)
    bw = paired._offset_record(rows, cfg, "q", "p", variant, None, 17)
    assert fw["pairs"] == bw["pairs"]
    assert (fw["only_a"], fw["only_b"]) == (bw["only_b"], bw["only_a"])
    assert bw["diff_counts"] == mirror(fw["diff_counts"])
    if fw["pairs"] == 0:
        assert fw["mean_diff"] is None and bw["mean_diff"] is None
        return
    assert bw["mean_diff"] == pytest.approx(-fw["mean_diff"], abs=1e-12)
    for lo, hi in (
        ("ci_low", "ci_high"),
        ("t_ci_low", "t_ci_high"),
        ("clustered_ci_low", "clustered_ci_high"),
    ):
        if fw[lo] is None:
            assert bw[lo] is None and bw[hi] is None
        else:
            assert bw[lo] == pytest.approx(-fw[hi], abs=1e-9)
            assert bw[hi] == pytest.approx(-fw[lo], abs=1e-9)
    for k in (
        "wilcoxon_p",
        "exact_agreement",
        "within_one",
        "kappa_quadratic",
        "krippendorff_alpha",
        "spearman",
    ):
        if fw[k] is None:
            assert bw[k] is None, k
        else:
            assert bw[k] == pytest.approx(fw[k], abs=1e-9), k


# --------------------------------------------------------------------------- planted effects


def planted_lines(seed: int = 20260819) -> list[dict[str, Any]]:
    """Judge 'lenient' = 'strict' + 0.5; variant V1 = V0 + 1.0, V2 = V0 + 0.

    40 scenarios with a random effect (sd 0.6) shared by every variant and judge, a
    scenario x variant interaction (sd 0.2) and row noise (sd 0.4); 2 trials, 2 judges.
    """
    rng = np.random.default_rng(seed)
    effect = {"V0": 0.0, "V1": 1.0, "V2": 0.0}
    out = []
    for s in range(40):
        se = rng.normal(0, 0.6)
        for v, eff in effect.items():
            sv = rng.normal(0, 0.2)
            for t in (1, 2):
                for j, off in (("lenient", 0.5), ("strict", 0.0)):
                    x = 5.0 + se + sv + eff + off + rng.normal(0, 0.4)
                    out.append(
                        {
                            "scenario": f"s{s:02d}",
                            "variant": v,
                            "trial": t,
                            "judge": j,
                            "overall": round(float(x), 3),
                        }
                    )
    return out


@pytest.fixture(scope="module")
def planted() -> dict[str, Any]:
    cfg = make_cfg(subsets={"half": {"scenario": [f"s{s:02d}" for s in range(20)]}}, trials_matched=True)
    a = wb.run([str(write_lines(Path(tempfile.mkdtemp()) / "p.jsonl", planted_lines()))], cfg)
    return {"cfg": cfg, "doc": a.doc}


def test_planted_judge_offset_is_recovered(planted: dict[str, Any]) -> None:
    recs = [r for r in planted["doc"]["judge_offsets"] if r["subset"] is None]
    assert len(recs) == 4  # all variants, then V0, V1, V2
    for r in recs:
        assert (r["judge_a"], r["judge_b"]) == ("lenient", "strict")
        assert r["pairs"] == 80 * (3 if r["variant"] is None else 1)
        for lo, hi in (
            ("ci_low", "ci_high"),
            ("t_ci_low", "t_ci_high"),
            ("clustered_ci_low", "clustered_ci_high"),
        ):
            assert r[lo] < 0.5 < r[hi], (r["variant"], lo, r[lo], r[hi])
        assert abs(r["mean_diff"] - 0.5) < 0.15


def test_planted_variant_effects_are_recovered(planted: dict[str, Any]) -> None:
    truth = {("V0", "V1"): -1.0, ("V0", "V2"): 0.0, ("V1", "V2"): 1.0}
    recs = [r for r in planted["doc"]["contrasts"] if r["subset"] is None]
    assert {(r["a"], r["b"]) for r in recs} == set(truth)
    for r in recs:
        want = truth[(r["a"], r["b"])]
        assert r["ci_low"] < want < r["ci_high"], r
        assert r["paired_ci_low"] < want < r["paired_ci_high"], r
        assert abs(r["paired_diff"] - want) < 0.15 and abs(r["diff"] - want) < 0.15
        assert (
            r["paired_unit"] == "row"
            and r["matched"] == 160
            and r["unmatched_a"] == r["unmatched_b"] == 0
        )
        # a real effect of 1 point is detected after Holm; a null one is not
        assert (r["p_holm"] < 0.05) == (want != 0.0), r


# --------------------------------------------------------------------------- contrasts


def contrast_lines(seed: int = 12) -> list[dict[str, Any]]:
    """Three variants over 7 scenarios, 2 trials, 2 judges, with scoreless rows, absent
    lines and one variant (C) judged by a third judge only: no row-level partner."""
    rng = np.random.default_rng(seed)
    out = []
    for s in range(7):
        se = rng.normal(0, 1.0)
        for v, eff in (("A", 0.6), ("B", 0.0)):
            for t in (1, 2):
                for j in ("j1", "j2"):
                    if rng.random() < 0.1:
                        continue  # no line at all
                    r: dict[str, Any] = {"scenario": f"s{s}", "variant": v, "trial": t, "judge": j}
                    if rng.random() > 0.15:
                        r["overall"] = int(np.clip(round(6 + se + eff + rng.normal(0, 1.2)), 1, 10))
                    out.append(r)
        if s != 3:  # C is missing scenario s3
            for t in (1, 2, 3):
                out.append(
                    {
                        "scenario": f"s{s}",
                        "variant": "C",
                        "trial": t,
                        "judge": "j3",
                        "overall": int(np.clip(round(5.5 + se + rng.normal(0, 1.0)), 1, 10)),
                    }
                )
    return out


@pytest.fixture(scope="module")
def contrast_data() -> dict[str, Any]:
    lines = contrast_lines()
    # trial k of A and of B declared matched: the naive references below join on the trial
    cfg = make_cfg(subsets={"odd": {"scenario": ["s1", "s3", "s5"]}}, trials_matched=True)
    rows = read(lines, cfg)
    return {"lines": lines, "cfg": cfg, "rows": rows, "records": _records(paired.contrasts(rows, cfg))}


def test_default_pairing_averages_trials_within_scenario_and_judge(contrast_data: dict[str, Any]) -> None:
    """Without trials_matched, a unit is (scenario, judge): each side the mean of its valid trials."""
    lines = contrast_data["lines"]
    cfg = contrast_data["cfg"].with_overrides(trials_matched=False)
    for a, b in (("A", "B"), ("A", "C"), ("B", "C")):
        try:
            rec = paired.contrast_record(contrast_data["rows"], cfg, a, b)
        except Exception:  # pragma: no cover - a variant missing from the fixture
            continue
        sa, sb = _side(lines, a, None), _side(lines, b, None)
        ma, mb = defaultdict(list), defaultdict(list)
        for k, x in sa.items():
            ma[(k[0], k[3])].append(x)
        for k, x in sb.items():
            mb[(k[0], k[3])].append(x)
        common = sorted(set(ma) & set(mb))
        if not common:
            assert rec["paired_unit"] == "scenario_mean"
            continue
        assert rec["paired_unit"] == "scenario_judge"
        d = np.array([np.mean(ma[u]) - np.mean(mb[u]) for u in common])
        assert rec["matched"] == len(common)
        assert rec["paired_diff"] == pytest.approx(d.mean())
        groups = [u[0] for u in common]
        fit = sm_cluster(d, np.ones(len(d)), groups)
        lo, hi = t_ci(float(d.mean()), float(fit.bse[0]), len(set(groups)) - 1)
        assert (rec["paired_cr1_ci_low"], rec["paired_cr1_ci_high"]) == (pytest.approx(lo), pytest.approx(hi))
        want = dense_mean(d, groups)
        assert (rec["paired_ci_low"], rec["paired_ci_high"], rec["paired_df"]) == (
            pytest.approx(want["ci_low"]), pytest.approx(want["ci_high"]), pytest.approx(want["df"]))


def _side(
    lines: list[dict[str, Any]], v: str, scen: set[str] | None
) -> dict[tuple[str, ...], float]:
    return {k: x for k, x in valid_map(lines, scen=scen).items() if k[1] == v}


def test_unpaired_contrast_matches_statsmodels_cluster_ols(contrast_data: dict[str, Any]) -> None:
    lines = contrast_data["lines"]
    for rec in contrast_data["records"]:
        scen = None if rec["subset"] is None else {"s1", "s3", "s5"}
        sa, sb = _side(lines, rec["a"], scen), _side(lines, rec["b"], scen)
        ya, yb = list(sa.values()), list(sb.values())
        assert (rec["valid_n_a"], rec["valid_n_b"]) == (len(ya), len(yb))
        assert rec["mean_a"] == pytest.approx(sum(ya) / len(ya))
        # stacked OLS y = b0 + b1 * [row is b]; diff = a - b = -b1; CR1 clustered on scenario
        y = np.array(ya + yb)
        x = np.column_stack([np.ones(len(y)), np.r_[np.zeros(len(ya)), np.ones(len(yb))]])
        groups = [k[0] for k in sa] + [k[0] for k in sb]
        fit = sm_cluster(y, x, groups)
        g = len(set(groups))
        diff, se = -float(fit.params[1]), float(fit.bse[1])
        where = f"{rec['a']}-{rec['b']}/{rec['subset']}"
        assert rec["diff"] == pytest.approx(diff), where
        assert rec["cr1_se"] == pytest.approx(se), where
        assert rec["cr1_df"] == g - 1 and rec["cr1_method"] == "cluster_t"
        lo, hi = t_ci(diff, se, g - 1)
        assert (rec["cr1_ci_low"], rec["cr1_ci_high"]) == (pytest.approx(lo), pytest.approx(hi)), where
        assert rec["cr1_p"] == pytest.approx(2 * sps.t.sf(abs(diff / se), g - 1)), where
        # the headline: CR2 with Bell-McCaffrey df, by the dense matrices of P&T 2018
        want = dense_diff(ya, [k[0] for k in sa], yb, [k[0] for k in sb])
        assert rec["ci_method"] == "cluster_cr2_bm", where
        for k in ("se", "df", "ci_low", "ci_high", "p"):
            assert rec[k] == pytest.approx(want[k], rel=1e-9), (where, k)


def test_paired_contrast_on_matched_units_matches_a_naive_join(
    contrast_data: dict[str, Any],
) -> None:
    lines = contrast_data["lines"]
    seen_units = set()
    for rec in contrast_data["records"]:
        scen = None if rec["subset"] is None else {"s1", "s3", "s5"}
        sa, sb = _side(lines, rec["a"], scen), _side(lines, rec["b"], scen)
        # unit (scenario, trial, judge): keys minus the variant
        ua = {(k[0], k[2], k[3]): x for k, x in sa.items()}
        ub = {(k[0], k[2], k[3]): x for k, x in sb.items()}
        common = sorted(set(ua) & set(ub))
        if common:
            unit = "row"
            d = {u: ua[u] - ub[u] for u in common}
            un_a, un_b = len(set(ua) - set(ub)), len(set(ub) - set(ua))
        else:  # no row has a partner: scenario means
            unit = "scenario_mean"
            ma, mb = defaultdict(list), defaultdict(list)
            for u, x in ua.items():
                ma[u[0]].append(x)
            for u, x in ub.items():
                mb[u[0]].append(x)
            common = sorted(set(ma) & set(mb))
            d = {(s,): sum(ma[s]) / len(ma[s]) - sum(mb[s]) / len(mb[s]) for s in common}
            un_a, un_b = len(set(ma) - set(mb)), len(set(mb) - set(ma))
        seen_units.add(unit)
        where = f"{rec['a']}-{rec['b']}/{rec['subset']}"
        assert rec["paired_unit"] == unit, where
        assert (rec["matched"], rec["unmatched_a"], rec["unmatched_b"]) == (len(d), un_a, un_b), (
            where
        )
        diffs = np.array(list(d.values()))
        assert rec["paired_diff"] == pytest.approx(diffs.mean()), where
        groups = [u[0] for u in d]
        fit = sm_cluster(diffs, np.ones(len(diffs)), groups)
        lo, hi = t_ci(float(diffs.mean()), float(fit.bse[0]), len(set(groups)) - 1)
        assert rec["paired_ci_method"] == "cluster_cr2_bm"
        assert (rec["paired_cr1_ci_low"], rec["paired_cr1_ci_high"]) == (
            pytest.approx(lo),
            pytest.approx(hi),
        ), where
        want = dense_mean(diffs, groups)
        assert (rec["paired_ci_low"], rec["paired_ci_high"]) == (
            pytest.approx(want["ci_low"]), pytest.approx(want["ci_high"])), where
    assert seen_units == {"row", "scenario_mean"}


def test_leave_one_scenario_out_range_by_naive_loop(contrast_data: dict[str, Any]) -> None:
    lines = contrast_data["lines"]
    for rec in contrast_data["records"]:
        scen = None if rec["subset"] is None else {"s1", "s3", "s5"}
        sa, sb = _side(lines, rec["a"], scen), _side(lines, rec["b"], scen)
        ests = []
        for drop in sorted({k[0] for k in sa} | {k[0] for k in sb}):
            ka = [x for k, x in sa.items() if k[0] != drop]
            kb = [x for k, x in sb.items() if k[0] != drop]
            if ka and kb:
                ests.append(sum(ka) / len(ka) - sum(kb) / len(kb))
        assert rec["loo_min"] == pytest.approx(min(ests)) and rec["loo_max"] == pytest.approx(
            max(ests)
        )


def test_holm_across_the_family_matches_statsmodels(contrast_data: dict[str, Any]) -> None:
    recs = contrast_data["records"]
    for subset in (None, "odd"):
        fam = [r for r in recs if r["subset"] == subset]
        assert len(fam) == 3
        want = multipletests([r["p"] for r in fam], method="holm")[1]
        assert [r["p_holm"] for r in fam] == pytest.approx(list(want))


def test_configured_contrast_pairs_and_empty_sides() -> None:
    cfg = make_cfg(contrasts=[["B", "A"], ["A", "nobody"]])
    # A - B per scenario: 7-5, 6-6, 8-6, 7-5 = 2, 0, 2, 2 -> mean 1.5 (so B - A = -1.5)
    scores = {"A": (7, 6, 8, 7), "B": (5, 6, 6, 5)}
    lines = [
        {"scenario": f"s{s}", "variant": v, "trial": 1, "judge": "j", "overall": xs[s]}
        for v, xs in scores.items()
        for s in range(4)
    ]
    recs = _records(paired.contrasts(read(lines, cfg), cfg))
    assert [(r["a"], r["b"]) for r in recs] == [("B", "A"), ("A", "nobody")]
    assert recs[0]["diff"] == pytest.approx(-1.5) and recs[0]["paired_diff"] == pytest.approx(-1.5)
    empty = recs[1]
    for k in ("diff", "se", "p", "p_holm", "paired_diff", "mde", "n_needed", "loo_min", "sd"):
        assert empty[k] is None, k
    # a family with one defined p-value (the other is null and not counted): Holm leaves it
    assert recs[0]["p"] is not None and recs[0]["p_holm"] == recs[0]["p"]


# --------------------------------------------------------------------------- power


def test_n_needed_follows_the_formula_with_the_reported_inputs(
    contrast_data: dict[str, Any],
) -> None:
    lines = contrast_data["lines"]
    cfg = contrast_data["cfg"]
    z = sps.norm.ppf(1 - cfg.alpha / 2) + sps.norm.ppf(cfg.power)
    for rec in contrast_data["records"]:
        scen = None if rec["subset"] is None else {"s1", "s3", "s5"}
        sa, sb = _side(lines, rec["a"], scen), _side(lines, rec["b"], scen)
        ya, yb = np.array(list(sa.values())), np.array(list(sb.values()))
        # pooled within-variant SD, sqrt((SS_a + SS_b) / (n_a + n_b - 2))
        sd = math.sqrt(
            (((ya - ya.mean()) ** 2).sum() + ((yb - yb.mean()) ** 2).sum())
            / (ya.size + yb.size - 2)
        )
        assert rec["sd"] == pytest.approx(sd)
        rho = rec["pairing_correlation"]
        use_rho = rho if (rec["paired_unit"] == "row" and rho is not None and rho > 0) else 0.0
        assert rec["n_needed_paired"] == (use_rho > 0)
        deff = max(rec["design_effect"] or 1.0, 1.0)
        want = max(
            2, math.ceil(2 * z * z * sd * sd * (1 - use_rho) * deff / cfg.target_effect**2 - 1e-9)
        )
        assert rec["n_needed"] == want
        # the MDE of the unpaired contrast: (t_{1-alpha/2, df} + t_{power, df}) * se
        q = sps.t.ppf(1 - cfg.alpha / 2, rec["df"]) + sps.t.ppf(cfg.power, rec["df"])
        assert rec["mde"] == pytest.approx(q * rec["se"])
    # halving the target effect needs (about) four times the n
    small = paired.contrast_record(
        contrast_data["rows"], cfg.with_overrides(target_effect=0.25), "A", "B"
    )
    big = paired.contrast_record(contrast_data["rows"], cfg, "A", "B")
    assert 4 * big["n_needed"] - 4 <= small["n_needed"] <= 4 * big["n_needed"]


def test_pairing_inputs_by_a_naive_loop(contrast_data: dict[str, Any]) -> None:
    lines = contrast_data["lines"]
    (rec,) = [
        r for r in contrast_data["records"] if (r["a"], r["b"], r["subset"]) == ("A", "B", None)
    ]
    sa, sb = _side(lines, "A", None), _side(lines, "B", None)
    ua = {(k[0], k[2], k[3]): x for k, x in sa.items()}
    ub = {(k[0], k[2], k[3]): x for k, x in sb.items()}
    common = sorted(set(ua) & set(ub))
    xa, xb = [ua[u] for u in common], [ub[u] for u in common]
    assert rec["pairing_correlation"] == pytest.approx(sps.pearsonr(xa, xb).statistic)
    assert rec["pairing_spearman"] == pytest.approx(sps.spearmanr(xa, xb).statistic)
    assert rec["pairing_correlation"] > 0 and rec["n_needed_paired"]
    # design effect of the matched differences within scenario: 1 + (m - 1) * ICC(1),
    # ICC from the one-way ANOVA of the differences, m = sum n_g^2 / N
    d = [ua[u] - ub[u] for u in common]
    groups: dict[str, list[float]] = defaultdict(list)
    for u, x in zip(common, d, strict=True):
        groups[u[0]].append(x)
    n, g = len(d), len(groups)
    grand = sum(d) / n
    msb = sum(len(v) * (sum(v) / len(v) - grand) ** 2 for v in groups.values()) / (g - 1)
    msw = sum((x - sum(v) / len(v)) ** 2 for v in groups.values() for x in v) / (n - g)
    n0 = (n - sum(len(v) ** 2 for v in groups.values()) / n) / (g - 1)
    icc = (msb - msw) / (msb + (n0 - 1) * msw)
    m = sum(len(v) ** 2 for v in groups.values()) / n
    assert rec["design_effect"] == pytest.approx(1 + (m - 1) * icc)


def _frame(
    values: np.ndarray, scen: np.ndarray, variant: np.ndarray, trial: np.ndarray
) -> pl.DataFrame:
    """A minimal row table (every row valid) for the simulations: skips file I/O."""
    n = values.size
    return pl.DataFrame(
        {
            "bucket": ["valid"] * n,
            "scenario": scen,
            "variant": variant,
            "trial": trial,
            "judge": ["j"] * n,
            "overall": values,
        }
    )


def _design(
    rng: np.random.Generator,
    g: int,
    trials: int,
    effect: float,
    sd_s: float,
    sd_sv: float,
    sd_e: float,
) -> pl.DataFrame:
    """Variants a, b over g scenarios x trials; b = a + effect. Shared scenario effect sd_s,
    scenario x variant interaction sd_sv, row noise sd_e."""
    s_eff = np.repeat(rng.normal(0, sd_s, g), 2 * trials)
    sv = np.repeat(rng.normal(0, sd_sv, 2 * g), trials)
    shift = np.tile(np.repeat([0.0, effect], trials), g)
    values = 5.5 + s_eff + sv + shift + rng.normal(0, sd_e, 2 * g * trials)
    scen = np.repeat([f"s{i:03d}" for i in range(g)], 2 * trials)
    variant = np.tile(np.repeat(["a", "b"], trials), g)
    trial = np.tile(np.array([str(t) for t in range(trials)] * 2), g)
    return _frame(values, scen, variant, trial)


@pytest.mark.slow
def test_mde_agrees_with_simulated_power() -> None:
    """Power of the reported test at a true effect equal to the reported MDE is 0.8 +- 0.07.

    Design: 24 scenarios x 2 variants x 2 trials; scenario effect sd 1 (shared), scenario x
    variant interaction sd 0.5, noise sd 1. The MDE is the mean reported over 150 null
    data sets of this design; power is the share of 600 data sets with that true effect
    (b - a) whose clustered p (the p that Holm adjusts) is below alpha.
    """
    cfg = make_cfg(bootstrap={"resamples": 100, "seed": 1})
    rng = np.random.default_rng(4242)
    design = {"g": 24, "trials": 2, "sd_s": 1.0, "sd_sv": 0.5, "sd_e": 1.0}
    mdes = [
        paired.contrast_record(_design(rng, effect=0.0, **design), cfg, "b", "a")["mde"]
        for _ in range(150)
    ]
    mde = float(np.mean(mdes))
    hits, reported = 0, []
    draws = 600
    for _ in range(draws):
        rec = paired.contrast_record(_design(rng, effect=mde, **design), cfg, "b", "a")
        hits += rec["p"] < cfg.alpha
        reported.append(rec["mde"])
    power = hits / draws
    msg = (
        f"MDE {mde:.3f} (sd over null data sets {np.std(mdes):.3f}); "
        f"empirical power at that effect {power:.3f} over {draws} data sets "
        f"(target {cfg.power}, tolerance 0.07)"
    )
    print(msg)
    assert abs(power - cfg.power) <= 0.07, msg
    assert float(np.mean(reported)) == pytest.approx(mde, rel=0.05), msg


@pytest.mark.slow
def test_n_needed_gives_the_planned_power_in_a_paired_design() -> None:
    """Plan from a large pilot, then simulate the planned design and measure its power.

    Pilot: 300 scenarios x 2 trials, both variants on every row (matched units), shared
    scenario effect sd 1, noise sd 1, so rho ~ 0.5 and the differences are unclustered.
    n_needed pairs for target 0.5 are then run as n/2 scenarios x 2 trials; power is the
    share of 500 data sets whose paired clustered interval excludes 0. Tolerance 0.8 +- 0.07.
    """
    # both variants on every row with a shared draw per trial: trials matched by design
    cfg = make_cfg(bootstrap={"resamples": 100, "seed": 2}, target_effect=0.5, trials_matched=True)
    rng = np.random.default_rng(77)
    design = {"trials": 2, "sd_s": 1.0, "sd_sv": 0.0, "sd_e": 1.0}
    pilot = paired.contrast_record(_design(rng, g=300, effect=0.0, **design), cfg, "b", "a")
    assert pilot["n_needed_paired"] and pilot["pairing_correlation"] == pytest.approx(0.5, abs=0.1)
    n = pilot["n_needed"]
    g = math.ceil(n / design["trials"])
    hits, draws = 0, 500
    for _ in range(draws):
        rec = paired.contrast_record(_design(rng, g=g, effect=0.5, **design), cfg, "b", "a")
        hits += rec["paired_ci_low"] > 0 or rec["paired_ci_high"] < 0
    power = hits / draws
    msg = (
        f"n_needed {n} pairs ({g} scenarios x 2 trials; pilot sd {pilot['sd']:.3f}, rho "
        f"{pilot['pairing_correlation']:.3f}, deff {pilot['design_effect']:.3f}); empirical power "
        f"{power:.3f} over {draws} data sets (target 0.8, tolerance 0.07)"
    )
    print(msg)
    assert abs(power - 0.8) <= 0.07, msg


# --------------------------------------------------------------------------- repetitions


def test_repetition_icc_of_trials_by_naive_anova(offsets: dict[str, Any]) -> None:
    lines, cfg = offsets["lines"], offsets["cfg"]
    rep = wb.document.build.repetition_section(paired.repetition_consistency(offsets["rows"], cfg))
    by_v = {r["variant"]: r for r in rep["per_variant"]}
    for v in ("A", "B"):
        groups: dict[tuple[str, str], list[float]] = defaultdict(list)
        trials = set()
        for (s, var, t, j), x in valid_map(lines).items():
            if var == v:
                groups[(s, j)].append(x)
                trials.add(t)
        vals = [x for xs in groups.values() for x in xs]
        n, g = len(vals), len(groups)
        grand = sum(vals) / n
        msb = sum(len(xs) * (sum(xs) / len(xs) - grand) ** 2 for xs in groups.values()) / (g - 1)
        msw = sum((x - sum(xs) / len(xs)) ** 2 for xs in groups.values() for x in xs) / (n - g)
        n0 = (n - sum(len(xs) ** 2 for xs in groups.values()) / n) / (g - 1)
        assert by_v[v]["trials"] == len(trials) == 3
        assert by_v[v]["icc_trials"] == pytest.approx((msb - msw) / (msb + (n0 - 1) * msw))
    assert rep["order_statistic_n_95_95"] == 59  # 0.95^58 = 0.0510 > 0.05 >= 0.95^59 = 0.0485


def test_rank_inversions_between_single_trials_by_hand() -> None:
    # means over trials: A (9+6+9)/3 = 8, B (7+8+6)/3 = 7, C (5+4+7)/3 = 5.33 -> A > B > C
    # trial 1: A 9, B 7, C 5 -> A B C (same); trial 2: B 8, A 6, C 4 -> B A C (differs);
    # trial 3: A 9, C 7, B 6 -> A C B (differs). D is in trial 1 only: not ranked.
    scores = {"A": (9, 6, 9), "B": (7, 8, 6), "C": (5, 4, 7)}
    lines = [
        {"scenario": "s1", "variant": v, "trial": t + 1, "judge": "j", "overall": x}
        for v, xs in scores.items()
        for t, x in enumerate(xs)
    ]
    lines.append({"scenario": "s1", "variant": "D", "trial": 1, "judge": "j", "overall": 10})
    cfg = make_cfg()
    rep = wb.document.build.repetition_section(paired.repetition_consistency(read(lines, cfg), cfg))
    assert rep["reference_ranking"] == ["A", "B", "C"]
    assert [s["ranking"] for s in rep["slices"]] == [
        ["A", "B", "C"],
        ["B", "A", "C"],
        ["A", "C", "B"],
    ]
    assert (rep["inversions"], rep["n_slices"]) == (2, 3)


def test_judge_pairs_is_the_inner_join_of_valid_items(offsets: dict[str, Any]) -> None:
    jp = paired.judge_pairs(offsets["rows"], offsets["cfg"], "glm", "claude")
    ma, mb = valid_map(offsets["lines"], "glm"), valid_map(offsets["lines"], "claude")
    keys = sorted(set(ma) & set(mb))
    assert jp.select("scenario", "variant", "trial").rows() == keys
    assert jp["diff"].to_list() == [ma[k] - mb[k] for k in keys]
    # every pair of judges appears once, in name order
    names = sorted({r["judge"] for r in offsets["lines"]})
    assert {(r["judge_a"], r["judge_b"]) for r in offsets["records"]} == set(
        itertools.combinations(names, 2)
    )


def test_mde_paired_from_an_independent_clustered_se(tmp_path) -> None:
    """mde_paired = (t_{1-a/2, G-1} + t_{power, G-1}) x CR1 SE of the matched differences,
    recomputed here from a naive join of the rows and statsmodels' cluster-robust OLS."""
    import json as _json

    import statsmodels.api as _sm
    from scipy import stats as _sps

    import workbench as wb

    root = Path(__file__).resolve().parents[1] / "data" / "example"
    cfg = wb.load_config(str(root / "config.yaml"), overrides={"bootstrap": {"resamples": 200},
                                                               "trials_matched": True})
    a = wb.run([str(root / "judge_rows.jsonl")], cfg)
    rec = next(c for c in a.doc["contrasts"]
               if (c["a"], c["b"], c["subset"]) == ("single_pass_brief", "stepwise_brief", None))
    vals: dict[tuple, dict[str, float]] = {}
    seen: dict[tuple, list[str]] = {}
    for line in (root / "judge_rows.jsonl").read_text(encoding="utf-8").splitlines():
        try:
            obj = _json.loads(line)
        except ValueError:
            continue
        if not isinstance(obj, dict) or "scenario" not in obj:
            continue
        key = (obj["scenario"], obj["variant"], obj["trial"], obj["judge"])
        seen.setdefault(key, []).append(line)
        v = obj.get("overall")
        if isinstance(v, int | float) and not isinstance(v, bool) and 1 <= v <= 10:
            vals.setdefault(key, {})["v"] = float(v)
    # keys seen with different content are held out; identical repeats count once
    usable = {k: d["v"] for k, d in vals.items() if len(set(seen[k])) == 1}
    diffs, groups = [], []
    for (s, var, t, j), v in usable.items():
        if var == "single_pass_brief" and (s, "stepwise_brief", t, j) in usable:
            diffs.append(v - usable[(s, "stepwise_brief", t, j)])
            groups.append(s)
    assert len(diffs) == rec["matched"]
    _, codes = np.unique(np.asarray(groups), return_inverse=True)
    # the SE and df behind the paired headline: CR2 with Bell-McCaffrey df (dense matrices)
    ref = dense_mean(diffs, groups)
    want = (_sps.t.ppf(1 - cfg.alpha / 2, ref["df"]) + _sps.t.ppf(cfg.power, ref["df"])) * ref["se"]
    assert rec["mde_paired"] == pytest.approx(want, rel=1e-9)
    # and the CR1 beside it still equals statsmodels
    fit = _sm.OLS(np.asarray(diffs), np.ones(len(diffs))).fit(cov_type="cluster", cov_kwds={"groups": codes})
    g = len(set(groups))
    lo = float(np.mean(diffs)) - _sps.t.ppf(1 - (1 - cfg.confidence) / 2, g - 1) * float(fit.bse[0])
    assert rec["paired_cr1_ci_low"] == pytest.approx(lo, rel=1e-9)


def test_contrast_confounding_by_fisher_on_the_census_margins() -> None:
    """Each all-scenario contrast carries the confounding judgment the report shows, as data:
    the design test (whole items permuted within scenarios, recomputed here), Fisher's exact p
    (scipy) on the variants' census margins beside it, and the judge sets from the census."""
    from workbench.analysis import census as census_mod
    from workbench.document import pipeline

    EXAMPLE = Path(__file__).resolve().parent.parent / "data" / "example"
    cfg = wb.load_config(str(EXAMPLE / "config.yaml"))
    a = pipeline.run([str(EXAMPLE / "judge_rows.jsonl")], cfg, plan=str(EXAMPLE / "plan.csv"))
    margin = {m["variant"]: m for m in a.doc["census_margins"] if m["judge"] is None and m["variant"] is not None}
    judges: dict[str, set[str]] = defaultdict(set)
    for c in a.doc["census"]:
        if c["judgments"] > 0:
            judges[c["variant"]].add(c["judge"])
    seen = 0
    for c in a.doc["contrasts"]:
        if c["subset"] is not None:
            assert c["confounded"] is None and c["fisher_p"] is None
            continue
        ma, mb = margin[c["a"]], margin[c["b"]]
        p = sps.fisher_exact([[ma["missing"], ma["judgments"] - ma["missing"]],
                              [mb["missing"], mb["judgments"] - mb["missing"]]]).pvalue
        assert c["fisher_p"] == pytest.approx(p, rel=1e-12)
        units = census_mod.judgment_units(a.rows, cfg).filter(pl.col("variant").is_in([c["a"], c["b"]]))
        res = census_mod.design_missingness_test(
            units, "variant", wb.stats.derive_seed(cfg.seed, "contrast_confounding", c["a"], c["b"]))
        assert c["missingness_p"] == res.p_value
        assert c["missingness_method"] == census_mod.method_name("variant", res)
        assert c["missingness_method"].startswith("block_permutation_within_scenario")
        assert c["confounded_missing"] is bool(res.p_value < cfg.alpha)
        assert c["missing_rate_a"] == ma["missing"] / ma["judgments"]
        assert c["judges_a"] == sorted(judges[c["a"]]) and c["judges_b"] == sorted(judges[c["b"]])
        assert c["confounded_judges"] is (judges[c["a"]] != judges[c["b"]])
        assert c["confounded"] is (c["confounded_missing"] or c["confounded_judges"])
        seen += c["confounded_missing"]
    assert seen > 0  # the example has variants whose missing rates differ
    # the call each contrast records (what the report shows; it decides nothing itself)
    for c in a.doc["contrasts"]:
        lo, hi = c["ci_low"], c["ci_high"]
        assert c["higher"] == (c["a"] if lo > 0 else c["b"] if hi < 0 else None)
        assert c["holm_significant"] is bool(c["p_holm"] < cfg.alpha)
        assert c["underpowered"] is bool(c["mde"] > cfg.target_effect)


def test_sign_flip_patterns_follow_the_run_budget_and_are_recorded() -> None:
    """With resamples x scenarios over bootstrap.budget the sign-flip test draws the cut
    count of random patterns (as the joint bootstrap does) and the record says how many: the
    p-value equals stats.sign_flip_test on the judges' paired differences with that count."""
    import numpy as np

    from workbench import stats
    from workbench.common.config import load_config

    rng = np.random.default_rng(5)
    recs = []
    for s in range(40):
        base = rng.normal(6, 1.5)
        for t in range(2):
            for j, off in (("ja", 0.3), ("jb", 0.0)):
                recs.append({"scenario": f"s{s:02d}", "variant": "v", "trial": str(t), "judge": j,
                             "overall": float(np.clip(np.round(base + off + rng.normal(0, 1)), 1, 10))})
    import json
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "rows.jsonl"
        f.write_text("".join(json.dumps(r) + "\n" for r in recs), "utf-8")
        cfg = load_config(overrides={"bootstrap": {"resamples": 5000, "budget": 40 * 1500, "min_resamples": 100}})
        from workbench.document import pipeline

        a = pipeline.run([str(f)], cfg)
    (off,) = [o for o in a.doc["judge_offsets"] if o["variant"] is None and o["subset"] is None]
    assert a.doc["bootstrap"]["resamples"] == 1500 and off["sign_flip_resamples"] == 1500
    by = {(r["scenario"], r["trial"], r["judge"]): r["overall"] for r in recs}
    keys = sorted({(s, t) for s, t, _ in by})
    d = np.array([by[(s, t, "ja")] - by[(s, t, "jb")] for s, t in keys])
    sc = np.array([s for s, _ in keys])
    seed = stats.derive_seed(cfg.seed, "sign_flip", "ja", "jb", None, None, "overall")
    assert off["p_sign_flip"] == stats.sign_flip_test(d, sc, 1500, seed)
    assert off["p_sign_flip"] != stats.sign_flip_test(d, sc, 5000, seed)
    assert off["sign_flip_method"] == "monte_carlo"
