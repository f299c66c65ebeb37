"""One definition of the missing rate, with its denominator named where it is printed.

The census's rate is (judgments - valid) / judgments, planned judgments with no row
included; the terminal prints it with the same precision rule as the report.
"""

from __future__ import annotations

from workbench.cli import terminal
from workbench.report.formats import pct as report_pct


def test_terminal_and_report_print_rates_alike() -> None:
    for n in (5, 50, 999, 1000, 1024, 5000, 20000):
        for k in (0, 1, 2, 3, n // 3, n - 1, n):
            assert terminal.pct(k / n, n) == report_pct(k / n, n), (k, n)
    assert terminal.pct(3 / 1024, 1024) == "0.3%"  # not "0%" (by hand: 0.29296875%)
    assert terminal.pct(None) == "-"


def test_census_text_names_the_denominator() -> None:
    doc = {"census": [{"judge": "j", "variant": "a", "judgments": 1024, "valid": 1021, "partial": 0,
                       "empty": 3, "missing_planned": 0, "non_numeric": 0, "out_of_range": 0,
                       "invalid_number": 0, "conflict_keys": 0, "missing_rate": 3 / 1024,
                       "missing_rate_ci_low": 0.001, "missing_rate_ci_high": 0.0086}]}
    text = terminal.census_text(doc)
    assert "missing/judgments [95% CI]" in text
    assert "(judgments - valid) / judgments, planned judgments with no row included" in text
    assert "0.3% [0.1%, 0.9%]" in text


def test_claim_missing_rates_are_the_census_rates_with_planned_absent_rows(tmp_path) -> None:
    import json

    from scipy.stats import fisher_exact

    import workbench as wb

    # a: all 18 planned scenarios scored. b: 12 scenarios with a row, 2 of them without a score, and
    # 6 more planned that never ran. By hand: b has 18 judgments, 12 - 2 = 10 valid, so
    # 8 missing: 8/18 (with rows only it would be 2/12, the old claims' figure).
    lines, plan = [], ["scenario,variant,trial,judge"]
    for s in range(18):
        for v in ("a", "b"):
            plan.append(f"s{s},{v},1,j")
            if s >= 12:
                if v == "a":
                    lines.append({"scenario": f"s{s}", "variant": v, "trial": 1, "judge": "j", "overall": 6})
                continue
            score = None if (v == "b" and s < 2) else 5 + s % 3
            lines.append({"scenario": f"s{s}", "variant": v, "trial": 1, "judge": "j", "overall": score})
    (tmp_path / "rows.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    (tmp_path / "plan.csv").write_text("\n".join(plan) + "\n", encoding="utf-8")
    (tmp_path / "claims.yaml").write_text("- {name: ab, a: a, b: b, claimed: 1.0}\n", encoding="utf-8")
    cfg = wb.load_config(overrides={"bootstrap": {"resamples": 200, "seed": 1}, "scores": {"overall": "overall"}})
    an = wb.run(str(tmp_path / "rows.jsonl"), cfg, plan=str(tmp_path / "plan.csv"),
                claims=str(tmp_path / "claims.yaml"))
    claim = an.doc["claims"][0]
    margin = {m["variant"]: m for m in an.doc["census_margins"] if m["judge"] is None and m["variant"]}
    assert (claim["rows_a"], claim["rows_b"]) == (18, 18)
    assert claim["missing_rate_a"] == 0 and claim["missing_rate_b"] == 8 / 18
    assert margin["b"]["missing_rate"] == claim["missing_rate_b"] and margin["b"]["judgments"] == 18
    assert claim["fisher_p"] == fisher_exact([[0, 18], [8, 10]]).pvalue
    contrast = next(c for c in an.doc["contrasts"] if c["subset"] is None)
    assert contrast["missing_rate_b"] == claim["missing_rate_b"]
    assert "b: 8 of 18 judgments have no valid overall" in claim["notes"]
