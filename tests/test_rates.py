"""One definition of the missing rate, with its denominator named where it is printed.

The census's rate is (judgments - valid) / judgments, planned judgments with no row
included; the terminal prints it with the same precision rule as the report.
"""

from __future__ import annotations

from workbench import terminal
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
