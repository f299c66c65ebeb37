"""Headline check: published-card forensics and claim verdicts on planted synthetic data.

Every expected value is computed here by an independent naive loop (or by statsmodels for
the clustered interval), never by the module under test.
"""

from __future__ import annotations

import json
import math
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import statsmodels.api as sm
from cr2_reference import dense_diff
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import fisher_exact

from workbench import stats
from workbench.analysis import check
from workbench.cli import main as cli
from workbench.common import schemas
from workbench.common.config import load_config
from workbench.common.errors import InputError, WorkbenchError
from workbench.document import pipeline

SCENARIOS = [f"s{i}" for i in range(9)]
JUDGES = ["j1", "j2"]
TRIALS = [1, 2, 3]
SUBS = ["correctness", "completeness", "depth", "citations", "honesty"]
HARD = ["s0", "s1", "s2"]


# --------------------------------------------------------------------------- synthetic data


def generate(seed: int, effects: dict[str, float],
             judges_for: dict[str, list[str]] | None = None) -> list[dict[str, Any]]:
    """Default-format judge rows: 9 scenarios x 3 trials x judges per variant."""
    rng = np.random.default_rng(seed)
    scen = rng.normal(0.0, 0.6, len(SCENARIOS))
    rows = []
    for v, eff in effects.items():
        for si, s in enumerate(SCENARIOS):
            for t in TRIALS:
                for j in (judges_for or {}).get(v, JUDGES):
                    latent = 6.5 + eff + scen[si] + rng.normal(0.0, 0.8)
                    row: dict[str, Any] = {"scenario": s, "variant": v, "trial": t, "judge": j}
                    for k in SUBS:
                        row[k] = int(np.clip(np.rint(latent + rng.normal(0.0, 0.7)), 1, 10))
                    row["overall"] = int(np.clip(np.rint(latent), 1, 10))
                    row["fabrication_flags"] = []
                    row["verdict"] = "fine"
                    rows.append(row)
    return rows


def drop(rows: list[dict[str, Any]], seed: int, variant: str, n: int, field: str = "overall",
         judge: str | None = None, empty: bool = False,
         scenarios: list[str] | None = None) -> None:
    """Remove ``field`` (or every rubric field: an empty object) from n rows of a variant."""
    rng = np.random.default_rng(seed)
    pool = [i for i, r in enumerate(rows) if r["variant"] == variant
            and (judge is None or r["judge"] == judge) and field in r
            and (scenarios is None or r["scenario"] in scenarios)]
    for i in rng.choice(len(pool), size=n, replace=False):
        r = rows[pool[int(i)]]
        if empty:
            for k in [*SUBS, "overall", "fabrication_flags", "verdict"]:
                r.pop(k, None)
        else:
            r.pop(field)


def write_rows(path: Path, rows: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def write_config(path: Path, min_valid_n: int = 10) -> str:
    path.write_text(
        "subsets:\n  hard: {scenario: [" + ", ".join(HARD) + "]}\n"
        f"min_valid_n: {min_valid_n}\nmin_clusters: 3\n"
        "bootstrap: {resamples: 200, seed: 7}\n", encoding="utf-8")
    return str(path)


def write_claims(path: Path, claims: list[dict[str, Any]]) -> str:
    lines = []
    for c in claims:
        lines.append(f"- name: {json.dumps(c['name'])}")
        for k in ("field", "subset", "judge", "a", "b"):
            if c.get(k) is not None:
                lines.append(f"  {k}: {c[k]}")
        lines.append(f"  claimed: {c['claimed']}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def setup(tmp_path: Path, rows: list[dict[str, Any]], min_valid_n: int = 10,
          plan: str | None = None) -> tuple[Any, Any]:
    cfg = load_config(write_config(tmp_path / "config.yaml", min_valid_n))
    data, _, _ = pipeline.load([write_rows(tmp_path / "rows.jsonl", rows)], cfg, plan)
    return data, cfg


# --------------------------------------------------------------------------- naive reducers


def usable(r: dict[str, Any], field: str) -> bool:
    v = r.get(field)
    return isinstance(v, int | float) and not isinstance(v, bool) and 1 <= v <= 10


def pick(rows: list[dict[str, Any]], variant: str, judge: str | None = None,
         subset: list[str] | None = None) -> list[dict[str, Any]]:
    return [r for r in rows if r["variant"] == variant and (judge is None or r["judge"] == judge)
            and (subset is None or r["scenario"] in subset)]


def naive_zero(rows: list[dict[str, Any]], field: str = "overall") -> float:
    total = 0.0
    for r in rows:
        total += r[field] if usable(r, field) else 0  # the silent zero, on purpose
    return total / len(rows)


def naive_valid(rows: list[dict[str, Any]], field: str = "overall") -> tuple[float, int]:
    vals = [r[field] for r in rows if usable(r, field)]
    return sum(vals) / len(vals), len(vals)


def naive_item_mean(rows: list[dict[str, Any]], field: str = "overall") -> float:
    items: dict[tuple[Any, ...], list[float]] = {}
    for r in rows:
        if usable(r, field):
            items.setdefault((r["scenario"], r["variant"], r["trial"]), []).append(r[field])
    return sum(sum(v) / len(v) for v in items.values()) / len(items)


def printed(x: float) -> str:
    return f"{x:.2f}"  # a float reducer's toFixed(2)


def clustered_ci(rows: list[dict[str, Any]], a: str, b: str, field: str = "overall"
                 ) -> tuple[float, float, float]:
    """Difference of valid means a - b with the headline interval: CR2 with Bell-McCaffrey df
    (issue 24), by the dense matrices of Pustejovsky & Tipton 2018 (tests/cr2_reference.py);
    the point estimate is statsmodels' OLS coefficient."""
    ra = [r for r in pick(rows, a) if usable(r, field)]
    rb = [r for r in pick(rows, b) if usable(r, field)]
    y = np.array([r[field] for r in ra + rb], dtype=float)
    x = sm.add_constant(np.array([0.0] * len(ra) + [1.0] * len(rb)))
    fit = sm.OLS(y, x).fit()
    want = dense_diff([r[field] for r in ra], [r["scenario"] for r in ra],
                      [r[field] for r in rb], [r["scenario"] for r in rb])
    return -float(fit.params[1]), float(want["ci_low"]), float(want["ci_high"])


# --------------------------------------------------------------------------- (a) silent-zero card


def test_silent_zero_card_reproduces_only_zero_filled(tmp_path: Path) -> None:
    rows = generate(11, {"A": 0.0, "B": 0.0, "C": 0.0, "D": 0.0})
    drop(rows, 1, "B", 22)                 # B loses many overalls
    for k, v in enumerate(["A", "C", "D"]):
        drop(rows, 2 + k, v, 3)            # the others a few
    for k, v in enumerate(["A", "C", "D"]):
        drop(rows, 10 + k, v, 2, empty=True)   # empty objects: honesty missing too
    drop(rows, 20, "B", 1, judge="j1", empty=True, scenarios=HARD)
    drop(rows, 21, "B", 1, judge="j2", empty=True)
    # every published cell must have missing rows, or valid_mean would reproduce it honestly
    cells = [(v, None, None) for v in "ABCD"] + [("B", "j1", None), ("B", "j2", None),
                                                 ("B", None, "hard")]
    for v, j, s in cells:
        sub = pick(rows, v, j, HARD if s else None)
        assert any(not usable(r, "overall") for r in sub)
        assert any(not usable(r, "honesty") for r in sub)
    card = "variant,judge,subset,overall,honesty\n" + "".join(
        f"{v},{j or ''},{s or ''},{printed(naive_zero(pick(rows, v, j, HARD if s else None)))},"
        f"{printed(naive_zero(pick(rows, v, j, HARD if s else None), 'honesty'))}\n"
        for v, j, s in cells)
    (tmp_path / "card.csv").write_text(card, encoding="utf-8")
    data, cfg = setup(tmp_path, rows)
    pub = check.read_published(str(tmp_path / "card.csv"), cfg)
    table = check.published_check(data, cfg, pub)
    checks = schemas.records(table, schemas.PUBLISHED_CHECK)
    assert len(checks) == 2 * len(cells)
    for rec in checks:
        assert set(rec) == {"variant", "judge", "subset", "field", "published", "reproduced_by",
                            "nearest_rule", "nearest_value", "distance", "decimals", "valid_mean",
                            "rules", "ambiguous", "finding", "harness_figure"}
        assert "zero_filled" in rec["reproduced_by"], rec
        assert "valid_mean" not in rec["reproduced_by"], rec
        assert rec["reproduced_by"] == sorted(rec["reproduced_by"])
        assert rec["decimals"] == 2
        sub = pick(rows, rec["variant"], rec["judge"], HARD if rec["subset"] else None)
        assert rec["valid_mean"] == pytest.approx(naive_valid(sub, rec["field"])[0], abs=1e-12)
    n = len(checks)
    assert check.published_summary(checks) == (
        f"{n} of {n} published cells reproduce only when missing scores count as 0")


def test_aggregation_rules_match_naive_loops(tmp_path: Path) -> None:
    rows = generate(12, {"A": 0.0, "B": 0.5})
    drop(rows, 1, "A", 9)
    drop(rows, 2, "A", 2, empty=True)
    # a plan with a fourth trial nobody ran for A/j1: 9 planned judgments with no row
    plan = tmp_path / "plan.csv"
    keys = [(r["scenario"], r["variant"], r["trial"], r["judge"]) for r in rows]
    keys += [(s, "A", 4, "j1") for s in SCENARIOS]
    plan.write_text("scenario,variant,trial,judge\n" + "".join(
        f"{s},{v},{t},{j}\n" for s, v, t, j in keys), encoding="utf-8")
    data, cfg = setup(tmp_path, rows, plan=str(plan))
    sub = pick(rows, "A")
    got = check.aggregation_rules(data, cfg, "A", None, None, "overall")
    valid, nv = naive_valid(sub)
    assert got["valid_mean"] == pytest.approx(valid, abs=1e-12)
    assert got["zero_filled"] == pytest.approx(naive_zero(sub), abs=1e-12)
    min_filled = (valid * nv + (len(sub) - nv) * 1) / len(sub)
    assert got["min_filled"] == pytest.approx(min_filled, abs=1e-12)
    assert got["item_mean"] == pytest.approx(naive_item_mean(sub), abs=1e-12)
    assert got["zero_filled_planned"] == pytest.approx(naive_zero(sub) * len(sub) / (len(sub) + 9),
                                                       abs=1e-12)
    # a judge cell and a subset cell
    sj = pick(rows, "A", "j2", HARD)
    got = check.aggregation_rules(data, cfg, "A", "j2", "hard", "overall")
    assert got["zero_filled"] == pytest.approx(naive_zero(sj), abs=1e-12)
    # none planned there
    assert got["zero_filled_planned"] == pytest.approx(naive_zero(sj), abs=1e-12)
    # without a plan the planned rule is absent
    data2, _ = setup(tmp_path, rows)
    got = check.aggregation_rules(data2, cfg, "A", None, None, "overall")
    assert "zero_filled_planned" not in got


def test_summary_names_cells_no_rule_reproduces(tmp_path: Path) -> None:
    rows = generate(13, {"A": 0.0, "B": 0.0})
    drop(rows, 1, "A", 10)
    data, cfg = setup(tmp_path, rows)
    va, _ = naive_valid(pick(rows, "A"))
    zb = naive_zero(pick(rows, "B"))  # B has no missing: every rule alike
    (tmp_path / "card.csv").write_text(f"variant,overall\nA,{va + 0.5:.2f}\nB,{zb:.2f}\n")
    checks = schemas.records(check.published_check(data, cfg, check.read_published(str(tmp_path / "card.csv"))),
                             schemas.PUBLISHED_CHECK)
    a, b = checks
    assert a["reproduced_by"] == [] and a["nearest_rule"] == "valid_mean"
    assert a["distance"] == pytest.approx(abs(va - float(f"{va + 0.5:.2f}")), abs=1e-12)
    assert {"valid_mean", "zero_filled"} <= set(b["reproduced_by"])
    summary = check.published_summary(checks)
    assert summary.startswith("1 of 2 published cells reproduces under valid_mean and zero_filled "
                              "alike")
    assert "1 cell reproduces under no rule; nearest: A overall" in summary
    # the first screen's line (issue 26): counts per kind of rule, no rule names or values
    assert check.published_headline(checks) == ("1 of 2 published cells reproduces under more than one rule "
                                                 "alike; 1 reproduces under no rule")


# --------------------------------------------------------------------------- claims


def claim_for(rows: list[dict[str, Any]], tmp_path: Path, a: str, b: str, claimed: float,
              min_valid_n: int = 10, equivalence_margin: float | None = None) -> tuple[dict[str, Any], Any, Any]:
    data, cfg = setup(tmp_path, rows, min_valid_n)
    if equivalence_margin is not None:
        cfg = cfg.with_overrides(equivalence_margin=equivalence_margin)
    path = write_claims(tmp_path / "claims.yaml", [{"name": "c", "a": a, "b": b,
                                                    "claimed": claimed}])
    (rec,) = check.check_claims(data, cfg, check.read_claims(path)).to_dicts()
    return rec, data, cfg


CLAIM_KEYS = {"name", "field", "subset", "a", "b", "claimed", "recomputed", "ci_low", "ci_high",
              "paired", "paired_ci_low", "paired_ci_high", "zero_filled", "valid_n_a", "rows_a",
              "valid_n_b", "rows_b", "bound_low", "bound_high", "verdict", "confounded", "notes",
              "judge", "status_a", "status_b", "missing_rate_a", "missing_rate_b", "fisher_p",
              "missingness_p", "missingness_method", "missingness_min_p", "judge_missingness_p", "p", "p_holm",
              "equivalence_margin", "confounded_missing", "confounded_judges", "confounding_notes",
              "verdict_ci_low", "verdict_ci_high", "verdict_confidence", "verdict_ci_method",
              "verdict_family"}


def test_real_effect_holds(tmp_path: Path) -> None:
    rows = generate(21, {"A": 1.5, "B": 0.0})
    drop(rows, 1, "A", 2)
    drop(rows, 2, "B", 2)
    diff, lo, hi = clustered_ci(rows, "A", "B")
    claimed = round(diff, 2)
    rec, _, _ = claim_for(rows, tmp_path, "A", "B", claimed)
    assert set(rec) == CLAIM_KEYS
    assert lo > 0 and lo <= claimed <= hi
    assert rec["verdict"] == "holds"
    assert rec["recomputed"] == pytest.approx(diff, abs=1e-12)
    assert rec["ci_low"] == pytest.approx(lo, abs=1e-9)
    assert rec["ci_high"] == pytest.approx(hi, abs=1e-9)
    assert (rec["valid_n_a"], rec["rows_a"], rec["valid_n_b"], rec["rows_b"]) == (52, 54, 52, 54)
    zero = naive_zero(pick(rows, "A")) - naive_zero(pick(rows, "B"))
    assert rec["zero_filled"] == pytest.approx(zero, abs=1e-12)
    assert rec["confounded"] is False
    assert rec["field"] == "overall" and rec["subset"] is None and rec["judge"] is None
    # a claim nearer 0 than the whole interval still holds; one beyond it shrinks
    rec2, _, _ = claim_for(rows, tmp_path, "A", "B", round(lo / 2, 2))
    assert rec2["verdict"] == "holds"
    rec3, _, _ = claim_for(rows, tmp_path, "A", "B", round(hi + 0.5, 2))
    assert rec3["verdict"] == "shrinks"
    assert rec3["notes"][0].endswith(f"the claimed {hi + 0.5:.2f} is above it")
    # the same effect claimed the other way round: b - a is negative and holds
    rec4, _, _ = claim_for(rows, tmp_path, "B", "A", -claimed)
    assert rec4["verdict"] == "holds"
    rec5, _, _ = claim_for(rows, tmp_path, "B", "A", round(-hi - 0.5, 2))
    assert rec5["verdict"] == "shrinks" and rec5["notes"][0].endswith("is below it")


def test_null_effect_with_large_zero_filled_headline_is_refuted(tmp_path: Path) -> None:
    rows = generate(31, {"A": 0.0, "B": 0.0})
    drop(rows, 1, "B", 27)  # b loses half its overall
    za, zb = naive_zero(pick(rows, "A")), naive_zero(pick(rows, "B"))
    claimed = float(Decimal(printed(za)) - Decimal(printed(zb)))  # read off the printed card
    assert claimed > 2.5
    diff, lo, hi = clustered_ci(rows, "A", "B")
    assert lo <= 0 <= hi
    rec, _, _ = claim_for(rows, tmp_path, "A", "B", claimed)
    assert rec["status_a"] == rec["status_b"] == "measured"
    assert rec["verdict"] == "refuted"
    assert rec["notes"][0] == f"the interval contains 0 and excludes the claimed {claimed:.2f}"
    assert rec["recomputed"] == pytest.approx(diff, abs=1e-12)
    assert rec["zero_filled"] == pytest.approx(za - zb, abs=1e-12)
    assert f"the zero-filled difference {za - zb:.2f} reproduces the claim" in rec["notes"]
    assert "b: 27 of 54 judgments have no valid overall" in rec["notes"]
    # bounds: b's 27 missing rows anywhere in 1..10 (a has none missing)
    sa = sum(r["overall"] for r in pick(rows, "A"))
    sb = sum(r["overall"] for r in pick(rows, "B") if usable(r, "overall"))
    assert rec["bound_low"] == pytest.approx(sa / 54 - (sb + 27 * 10) / 54, abs=1e-12)
    assert rec["bound_high"] == pytest.approx(sa / 54 - (sb + 27 * 1) / 54, abs=1e-12)
    assert rec["bound_low"] < 0 < rec["bound_high"]
    # missingness differs between the sides: Fisher's exact p is kept beside the design test
    p = fisher_exact([[0, 54], [27, 27]]).pvalue
    assert rec["fisher_p"] == pytest.approx(p, rel=1e-9)
    # 9 scenarios x 2 variants: whole (scenario, variant) blocks, 2^9 arrangements enumerated
    assert rec["missingness_method"] == "block_permutation_within_scenario_exact"
    assert rec["missingness_min_p"] == 2 / 2**9
    assert rec["missingness_p"] < 0.05
    assert rec["confounded"] is True
    assert any(n.startswith("missing rates differ: 0% of 54 judgments vs 50% of 54 "
                            "(whole scenario x variant blocks permuted within scenarios")
               for n in rec["notes"])
    # the same interval against a claim inside it: inconclusive; with a margin: equivalent
    inside = round((lo + hi) / 2, 2) if lo < round((lo + hi) / 2, 2) < hi else 0.0
    rec2, _, _ = claim_for(rows, tmp_path, "A", "B", inside)
    assert rec2["verdict"] == "inconclusive"
    margin = max(abs(lo), abs(hi)) + 0.01
    rec3, _, _ = claim_for(rows, tmp_path, "A", "B", 0.0, equivalence_margin=margin)
    assert rec3["verdict"] == "equivalent" and check.claim_supported(rec3)
    rec4, _, _ = claim_for(rows, tmp_path, "A", "B", 0.0, equivalence_margin=max(abs(lo), abs(hi)) - 0.01)
    assert rec4["verdict"] == "inconclusive"
    # the report reads the reasons as data, not by matching sentences
    assert (rec["confounded_missing"], rec["confounded_judges"]) == (True, False)
    assert len(rec["confounding_notes"]) == 1
    assert rec["confounding_notes"][0].startswith("missing rates differ: 0% of 54 judgments vs 50% of 54")


def test_reversal_reverses(tmp_path: Path) -> None:
    rows = generate(41, {"A": -1.5, "B": 0.0})
    drop(rows, 1, "B", 32)
    za, zb = naive_zero(pick(rows, "A")), naive_zero(pick(rows, "B"))
    claimed = round(za - zb, 2)
    assert claimed > 0
    diff, lo, hi = clustered_ci(rows, "A", "B")
    assert hi < 0
    rec, _, _ = claim_for(rows, tmp_path, "A", "B", claimed)
    assert rec["verdict"] == "reverses"
    assert rec["notes"][0] == "the interval excludes 0 with the opposite sign"
    assert rec["recomputed"] == pytest.approx(diff, abs=1e-12)


def test_insufficient_when_a_side_is_below_min_valid_n(tmp_path: Path) -> None:
    rows = generate(51, {"A": 0.0, "B": 0.0})
    drop(rows, 1, "A", 46)  # 8 valid left
    drop(rows, 2, "B", 3)
    diff, lo, hi = clustered_ci(rows, "A", "B")
    rec, _, _ = claim_for(rows, tmp_path, "A", "B", 3.25)
    assert rec["status_a"] == "insufficient" and rec["status_b"] == "measured"
    assert rec["verdict"] == "insufficient"
    clause = ("the interval contains 0" if lo <= 0 <= hi else "the interval excludes 0"
              if lo > 0 else "the interval excludes 0 with the opposite sign")
    expected = (f"c: claimed 3.25 -> recomputed {diff:.2f} [{lo:.2f}, {hi:.2f}] (8/54 vs 51/54 "
                f"valid): INSUFFICIENT (8 valid < 10 preregistered; {clause})")
    assert check.claim_line(rec) == expected
    # lowering the preregistered minimum makes the same side measured
    rec2, _, _ = claim_for(rows, tmp_path, "A", "B", 3.25, min_valid_n=8)
    assert rec2["verdict"] != "insufficient"


def test_confounding_by_judge_assignment(tmp_path: Path) -> None:
    # anti-self-preference: j1 scores A and C, j2 scores B and D; j1 drops far more overall
    assign = {"A": ["j1"], "C": ["j1"], "B": ["j2"], "D": ["j2"]}
    rows = generate(61, {"A": 0.0, "B": 0.0, "C": 0.0, "D": 0.0}, assign)
    drop(rows, 1, "A", 5)
    drop(rows, 2, "C", 20)
    drop(rows, 3, "B", 5)
    rec, _, cfg = claim_for(rows, tmp_path, "A", "B", 0.5)
    # the sides themselves have equal missing rates: no side flag ...
    assert rec["missingness_p"] > 0.05
    assert rec["fisher_p"] == pytest.approx(1.0)
    assert not any(n.startswith("missing rates differ") for n in rec["notes"])
    # ... but the judges behind them do: j1 misses 25 of 54, j2 5 of 54
    p = fisher_exact([[25, 29], [5, 49]]).pvalue
    assert p < 0.001
    assert rec["confounded"] is True
    note = next(n for n in rec["notes"] if n.startswith("different judges"))
    # no block is judged by both: whole (scenario, variant) blocks (3 trials each) labelled
    # by their judge group, permuted within scenarios (4 blocks a scenario, 6 arrangements
    # each: 6^9 > 2000, so the Monte-Carlo test); the units built here by a loop
    units = []
    for s in SCENARIOS:
        for v in "ABCD":
            mine = [r for r in rows if r["scenario"] == s and r["variant"] == v]
            units.append((sum(not usable(r, "overall") for r in mine), len(mine), int(v in "AC"),
                          SCENARIOS.index(s)))
    m, t, lab, blk = (np.array(x, dtype=float) for x in zip(*units, strict=True))
    want = stats.block_permutation_test(m, t, lab.astype(int), blk.astype(int), 2000,
                                        stats.derive_seed(cfg.seed, "confound_judge", "c"))
    assert rec["judge_missingness_p"] == want.p_value < 0.01
    assert note == ("different judges: a scored by j1, b by j2; j1 leaves 46% of its 54 judgments "
                    f"without a valid overall vs 9% of 54 for j2 (design permutation p={want.p_value:.2g})")
    assert (rec["confounded_missing"], rec["confounded_judges"]) == (False, True)
    assert rec["confounding_notes"] == [note]


def test_claim_line_format_matches_the_issue() -> None:
    rec = {"name": "Topology", "claimed": 3.25, "recomputed": -0.12, "ci_low": -0.61,
           "ci_high": 0.38, "valid_n_a": 8, "rows_a": 16, "valid_n_b": 16, "rows_b": 18,
           "verdict": "insufficient",
           "notes": ["8 valid < 10 preregistered; the interval contains 0"]}
    assert check.claim_line(rec) == (
        "Topology: claimed 3.25 -> recomputed -0.12 [-0.61, 0.38] (8/16 vs 16/18 valid): "
        "INSUFFICIENT (8 valid < 10 preregistered; the interval contains 0)")
    rec.update(ci_low=None, ci_high=None, recomputed=-0.004, verdict="inconclusive", notes=["x"])
    assert check.claim_line(rec).endswith(
        "recomputed 0.00 [no interval] (8/16 vs 16/18 valid): INCONCLUSIVE (x)")


# --------------------------------------------------------------------------- (h) rounding


def _half_up(x: Fraction, d: int) -> Decimal:
    q = Decimal(x.numerator) / Decimal(x.denominator)
    return q.quantize(Decimal(1).scaleb(-d), rounding=ROUND_HALF_UP)


def test_rounding_accepts_half_even_and_half_up() -> None:
    tie = Fraction(1313, 200)  # 6.565 exactly
    assert _half_up(tie, 2) == Decimal("6.57")
    assert check.printed_matches(tie, "6.57")   # half up
    assert check.printed_matches(tie, "6.56")   # half even
    assert not check.printed_matches(tie, "6.58")
    assert not check.printed_matches(tie, "6.5")   # printed precision decides: 6.6 at 1 dp
    assert check.printed_matches(tie, "6.6")
    neg = Fraction(-49, 8)  # -6.125
    assert check.printed_matches(neg, "-6.12") and check.printed_matches(neg, "-6.13")
    # a float reducer sees 6.555 as 6.55499...; its "6.55" is accepted too
    assert f"{6.555:.2f}" == "6.55"
    assert check.printed_matches(Fraction(1311, 200), "6.55")
    assert check.printed_matches(Fraction(1311, 200), "6.56")
    assert not check.printed_matches(None, "6.55")


def test_rounding_through_published_check(tmp_path: Path) -> None:
    rows = [{"scenario": SCENARIOS[i], "variant": "X", "trial": 1, "judge": "j1", "overall": v,
             "honesty": 7} for i, v in enumerate([6, 6, 6, 6, 6, 6, 6, 7])]  # mean 49/8 = 6.125
    data, cfg = setup(tmp_path, rows)
    (tmp_path / "card.csv").write_text("variant,overall\nX,6.12\nX,6.13\n", encoding="utf-8")
    with pytest.raises(InputError, match="published twice"):
        check.read_published(str(tmp_path / "card.csv"))
    for text, ok in (("6.12", True), ("6.13", True), ("6.125", True), ("6.1", True),
                     ("6.14", False)):
        (tmp_path / "card.csv").write_text(f"variant,overall\nX,{text}\n", encoding="utf-8")
        (rec,) = schemas.records(check.published_check(data, cfg, check.read_published(str(tmp_path / "card.csv"))),
                                 schemas.PUBLISHED_CHECK)
        assert ("valid_mean" in rec["reproduced_by"]) is ok, text
        assert rec["decimals"] == len(text.split(".")[1])
    # 6.14: no rule reproduces it; every rule is 6.125 here (no missing rows), the first is named
    assert rec["reproduced_by"] == [] and rec["nearest_rule"] == "valid_mean"
    assert rec["nearest_value"] == pytest.approx(6.125) and rec["distance"] == pytest.approx(0.015)


# --------------------------------------------------------------------------- readers


def test_read_published_errors(tmp_path: Path) -> None:
    cfg = load_config(None)
    p = tmp_path / "card.csv"
    cases = [
        ("name,overall\nA,6.5\n", "no 'variant' column"),
        ("variant,overall\nA,6.5x\n", r"card.csv:2: field 'overall': expected a number"),
        ("variant,overall\nA,6.5,7\n", r"card.csv:2: expected 2 columns"),
        ("variant,overal\nA,6.5\n", r"card.csv:1: column 'overal' is not a rubric field"),
        ("", "empty"),
        ("variant,overall\n", "no rows"),
    ]
    for text, msg in cases:
        p.write_text(text, encoding="utf-8")
        with pytest.raises(InputError, match=msg):
            check.read_published(str(p), cfg)
    p.write_text("\ufeffvariant,judge,overall,honesty\nA,,6.50,\nA,j1,,7\n", encoding="utf-8")
    df = check.read_published(str(p), cfg)
    assert df["overall"].to_list() == ["6.50", None] and df["honesty"].to_list() == [None, "7"]
    assert df["judge"].to_list() == [None, "j1"] and df["line"].to_list() == [2, 3]


def test_read_claims_errors(tmp_path: Path) -> None:
    p = tmp_path / "claims.yaml"
    cases = [
        ("- {a: A, b: B}\n", r"item 1: 'claimed' is required"),
        ("- {name: x, a: A, b: A, claimed: 1}\n", r"item 1 \('x'\): a and b are the same"),
        ("- {a: A, b: B, claimed: 1, colour: red}\n", "unknown key"),
        ("- {a: A, b: B, claimed: lots}\n", "'claimed' must be a number"),
        ("- {name: x, a: A, b: B, claimed: 1}\n- {name: x, a: A, b: C, claimed: 1}\n",
         "already named"),
        ("a: A\n", "expected a YAML list"),
        ("[]\n", "no claims"),
        ("- [a, b\n", "not valid YAML"),
    ]
    for text, msg in cases:
        p.write_text(text, encoding="utf-8")
        with pytest.raises(InputError, match=msg):
            check.read_claims(str(p))
    p.write_text("- {a: A, b: B, claimed: '1.50'}\n", encoding="utf-8")
    (c,) = check.read_claims(str(p))
    assert c["name"] == "A vs B" and c["claimed"] == 1.5 and c["field"] is None


def test_claims_naming_unknown_things_are_input_errors(tmp_path: Path) -> None:
    rows = generate(71, {"A": 0.0, "B": 0.0})
    data, cfg = setup(tmp_path, rows)
    for extra, msg in (({"b": "Z"}, "variant 'Z'"), ({"field": "style"}, "not a rubric field"),
                       ({"subset": "easy"}, "subset 'easy'"), ({"judge": "j9"}, "judge 'j9'")):
        claim = {"name": "x", "a": "A", "b": "B", "claimed": 1.0, **extra}
        path = write_claims(tmp_path / "claims.yaml", [claim])
        with pytest.raises(InputError, match=msg):
            check.check_claims(data, cfg, check.read_claims(path))


# --------------------------------------------------------------------------- (i) the command


def _cli_files(tmp_path: Path, rows: list[dict[str, Any]], claims: list[dict[str, Any]]
               ) -> list[str]:
    return [write_rows(tmp_path / "rows.jsonl", rows), "--config",
            write_config(tmp_path / "config.yaml"), "--claims",
            write_claims(tmp_path / "claims.yaml", claims)]


def test_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = generate(21, {"A": 1.5, "B": 0.0})
    drop(rows, 1, "A", 2)
    drop(rows, 2, "B", 2)
    diff, _, _ = clustered_ci(rows, "A", "B")
    za, zb = naive_zero(pick(rows, "A")), naive_zero(pick(rows, "B"))
    (tmp_path / "card.csv").write_text(f"variant,overall\nA,{printed(za)}\nB,{printed(zb)}\n",
                                       encoding="utf-8")
    args = _cli_files(tmp_path, rows, [{"name": "A beats B", "a": "A", "b": "B",
                                        "claimed": round(diff, 2)}])
    out = tmp_path / "out"
    code = cli.main(["check", *args, "--published", str(tmp_path / "card.csv"), "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "A beats B: claimed" in text and ": HOLDS (" in text
    assert "2 of 2 published cells reproduce only when missing scores count as 0" in text
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert set(doc["claims"][0]) == CLAIM_KEYS
    assert doc["published_check"][0]["reproduced_by"] == ["zero_filled"]
    assert doc["published_summary"].startswith("2 of 2")

    # a claim that does not hold -> 1
    args = _cli_files(tmp_path, rows, [{"name": "B beats A", "a": "B", "b": "A", "claimed": 1.0}])
    assert cli.main(["check", *args]) == 1
    assert ": REVERSES (" in capsys.readouterr().out

    # bad input -> 2, one line naming the file
    (tmp_path / "bad.yaml").write_text("- {a: A, b: B}\n", encoding="utf-8")
    assert cli.main(["check", args[0], "--config", args[2], "--claims",
                     str(tmp_path / "bad.yaml")]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml" in err and "item 1" in err and len(err.strip().splitlines()) == 1
    # --claims is required
    assert cli.main(["check", args[0]]) == 2
    assert "--claims" in capsys.readouterr().err
    # a damaged published card
    (tmp_path / "card.csv").write_text("variant,overall\nA,six\n", encoding="utf-8")
    assert cli.main(["check", *args, "--published", str(tmp_path / "card.csv")]) == 2
    assert "card.csv:2: field 'overall'" in capsys.readouterr().err


def test_run_stores_frames(tmp_path: Path) -> None:
    rows = generate(81, {"A": 0.0, "B": 0.0})
    drop(rows, 1, "B", 10)
    cfg = load_config(write_config(tmp_path / "config.yaml"))
    (tmp_path / "card.csv").write_text(
        f"variant,overall\nB,{printed(naive_zero(pick(rows, 'B')))}\n", encoding="utf-8")
    claims = write_claims(tmp_path / "claims.yaml", [{"name": "x", "a": "A", "b": "B",
                                                      "claimed": 1.0}])
    an = pipeline.run([write_rows(tmp_path / "rows.jsonl", rows)], cfg,
                      published=str(tmp_path / "card.csv"), claims=claims)
    assert an.frame("published_check").height == 1
    assert an.frame("claims")["verdict"].to_list() == [an.doc["claims"][0]["verdict"]]
    assert math.isclose(an.doc["claims"][0]["recomputed"], clustered_ci(rows, "A", "B")[0],
                        abs_tol=1e-12)
    with pytest.raises(WorkbenchError):
        pipeline.run([str(tmp_path / "rows.jsonl")], cfg, claims=str(tmp_path / "nope.yaml"))


def test_harness_rules_keep_out_of_range_and_sentinels(tmp_path: Path) -> None:
    rows = generate(91, {"A": 0.0})
    rows[0]["overall"], rows[1]["overall"], rows[2]["overall"] = -1, -1, 11  # 2 sentinels, 1 > max
    rows[3].pop("overall")
    (tmp_path / "config.yaml").write_text("missing_values: [-1]\nbootstrap: {resamples: 200}\n",
                                          encoding="utf-8")
    cfg = load_config(str(tmp_path / "config.yaml"))
    data, _, _ = pipeline.load([write_rows(tmp_path / "rows.jsonl", rows)], cfg)
    got = check.aggregation_rules(data, cfg, "A", None, None, "overall")
    numbers = [r["overall"] for r in rows if "overall" in r]
    kept = [x for x in numbers if x != -1]
    assert got["raw_numeric_mean"] == pytest.approx(sum(numbers) / len(numbers), abs=1e-12)
    assert got["drop_sentinels_only"] == pytest.approx(sum(kept) / len(kept), abs=1e-12)
    assert got["valid_mean"] == pytest.approx(naive_valid(rows)[0], abs=1e-12)
    assert got["zero_filled"] == pytest.approx(naive_zero(rows), abs=1e-12)


def test_unnamed_claims_on_one_pair_get_distinct_names(tmp_path: Path) -> None:
    path = tmp_path / "claims.yaml"
    path.write_text("- {a: A, b: B, claimed: 1.0}\n"
                    "- {a: A, b: B, field: honesty, claimed: 0.5}\n"
                    "- {a: A, b: B, field: honesty, subset: fw, claimed: 0.2}\n", encoding="utf-8")
    names = [c["name"] for c in check.read_claims(str(path))]
    assert names == ["A vs B", "A vs B (honesty)", "A vs B (honesty, fw)"]


# --------------------------------------------------------------------------- verdicts on the family


def test_holm_stepdown_levels_by_hand() -> None:
    # sorted 0.01 (step 1: 0.01 < 0.05/3, rejected at 98.33%), 0.03 (step 2: 0.03 >= 0.05/2,
    # the procedure stops: 97.5% for it and every later one)
    assert stats.holm_stepdown_levels([0.01, 0.04, 0.03], 0.05) == pytest.approx([1 - 0.05 / 3, 0.975, 0.975])
    # every step rejects: 1 - alpha/2, then 1 - alpha
    assert stats.holm_stepdown_levels([0.002, 0.001], 0.05) == pytest.approx([0.95, 0.975])
    # the procedure stops at once: every claim at the Bonferroni level
    assert stats.holm_stepdown_levels([0.5, None, 0.03], 0.05) == pytest.approx([0.975, None, 0.975])
    # 0.02 < 0.05/2 is rejected at 97.5%; then 0.5 >= 0.05/1 stops at 95%
    assert stats.holm_stepdown_levels([0.5, None, 0.02], 0.05) == pytest.approx([0.95, None, 0.975])
    assert stats.holm_stepdown_levels([0.04], 0.05) == pytest.approx([0.95])
    assert stats.holm_stepdown_levels([None, None], 0.05) == [None, None]


@given(st.lists(st.one_of(st.none(), st.floats(1e-9, 1.0)), min_size=1, max_size=12))
@settings(max_examples=300, deadline=None)
def test_a_level_excludes_zero_exactly_when_the_holm_p_is_below_alpha(ps: list[float | None]) -> None:
    """The interval at level L excludes 0 iff the test's p < 1 - L (t duality); so the
    step-down intervals agree with Holm's adjusted p (stats.holm, the max-accumulate formula)."""
    levels = stats.holm_stepdown_levels(ps, 0.05)
    for p, level, adj in zip(ps, levels, stats.holm(ps), strict=True):
        assert (level is None) == (p is None)
        if p is not None:
            assert (p < 1 - level - 1e-15) == (adj < 0.05 - 1e-12) or abs(adj - 0.05) < 1e-9


def test_verdicts_read_the_holm_interval_of_the_family(tmp_path: Path) -> None:
    """Three claims: each verdict interval is the dense CR2 BM t interval at the Holm level
    computed here by hand from the three p-values; a claim whose 95% interval excludes 0 but
    whose family interval does not is not `holds`."""
    rows = generate(3, {"A": 0.0, "B": 0.6, "C": 1.6, "D": 0.0})
    for k, v in enumerate("ABCD"):
        drop(rows, 40 + k, v, 3)
    data, cfg = setup(tmp_path, rows)
    spec = [("ba", "B", "A", 0.6), ("ca", "C", "A", 1.6), ("da", "D", "A", 0.3)]
    path = write_claims(tmp_path / "claims.yaml", [{"name": n, "a": a, "b": b, "claimed": c}
                                                   for n, a, b, c in spec])
    recs = check.check_claims(data, cfg, check.read_claims(path)).to_dicts()
    dense = []
    for _, a, b, _ in spec:
        ra = [r for r in pick(rows, a) if usable(r, "overall")]
        rb = [r for r in pick(rows, b) if usable(r, "overall")]
        dense.append((ra, rb, dense_diff([r["overall"] for r in ra], [r["scenario"] for r in ra],
                                         [r["overall"] for r in rb], [r["scenario"] for r in rb])))
    ps = [d["p"] for _, _, d in dense]
    order = sorted(range(3), key=lambda i: ps[i])
    want_level, stopped = {}, False
    for step, i in enumerate(order):
        if not stopped:
            level = 1 - 0.05 / (3 - step)
            stopped = ps[i] >= 0.05 / (3 - step)
        want_level[i] = level
    for i, (rec, (ra, rb, d)) in enumerate(zip(recs, dense, strict=True)):
        assert rec["p"] == pytest.approx(d["p"], rel=1e-9)
        assert rec["verdict_confidence"] == pytest.approx(want_level[i], abs=1e-15)
        wide = dense_diff([r["overall"] for r in ra], [r["scenario"] for r in ra],
                          [r["overall"] for r in rb], [r["scenario"] for r in rb], want_level[i])
        assert rec["verdict_ci_low"] == pytest.approx(wide["ci_low"], abs=1e-9)
        assert rec["verdict_ci_high"] == pytest.approx(wide["ci_high"], abs=1e-9)
        assert rec["verdict_ci_method"] == "holm_stepdown_cr2_bm" and rec["verdict_family"] == 3
        assert (rec["ci_low"], rec["ci_high"]) == pytest.approx((d["ci_low"], d["ci_high"]), abs=1e-9)
        excludes = rec["verdict_ci_low"] > 0 or rec["verdict_ci_high"] < 0
        assert excludes == (rec["p_holm"] < 0.05)
        assert f"({want_level[i]:.2%}" not in rec["notes"][0]
        assert rec["notes"][0].startswith(f"on the {want_level[i]:.2%} Holm interval")
    # the family changes a verdict here: B - A's own 95% interval excludes 0, its Holm one does not
    ba = recs[0]
    assert ba["ci_low"] > 0 and ba["verdict_ci_low"] <= 0 and ba["verdict"] == "inconclusive", ba
    assert recs[1]["verdict"] == "holds"
    # one claim alone: the family is itself, the verdict interval its 95% interval
    path1 = write_claims(tmp_path / "one.yaml", [{"name": "ba", "a": "B", "b": "A", "claimed": 0.6}])
    (one,) = check.check_claims(data, cfg, check.read_claims(path1)).to_dicts()
    assert one["verdict_confidence"] == pytest.approx(0.95) and one["verdict_family"] == 1
    assert (one["verdict_ci_low"], one["verdict_ci_high"]) == (one["ci_low"], one["ci_high"])
    assert one["verdict"] == "holds" and not one["notes"][0].startswith("on the")


def test_a_zero_width_interval_is_insufficient(tmp_path: Path) -> None:
    """Each side constant (7 and 5 in every scenario): the difference is 2 with se 0, no p,
    an interval of zero width: a degenerate design, never `holds`."""
    rows = [{"scenario": s, "variant": v, "trial": t, "judge": j, "overall": 7 if v == "A" else 5}
            for s in SCENARIOS for v in "AB" for t in TRIALS for j in JUDGES]
    rec, _, _ = claim_for(rows, tmp_path, "A", "B", 2.0)
    assert rec["recomputed"] == 2.0 and rec["ci_low"] == rec["ci_high"] == 2.0
    assert rec["p"] is None and rec["verdict_confidence"] is None and rec["verdict_family"] is None
    assert rec["verdict"] == "insufficient"
    assert "zero width" in rec["notes"][0] and "degenerate" in rec["notes"][0]
