"""Golden file: results.json for the embedded example, compared as text.

Regenerate only on purpose, after checking the diff is intended:
``make golden`` (sets WORKBENCH_REGENERATE_GOLDEN=1).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from workbench.cli import main as cli

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "example_results.json"
EXAMPLE = ROOT / "data" / "example"

ARGS = [
    "data/example/judge_rows.jsonl",
    "--config", "data/example/config.yaml",
    "--plan", "data/example/plan.csv",
    "--published", "data/example/published_scorecard.csv",
    "--claims", "data/example/claims.yaml",
    "--resamples", "2000",
    "--no-gate", "-q",
]


def test_example_results_match_golden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    code = cli.main(["analyze", *ARGS, "--out", str(tmp_path)])
    assert code == 0
    produced = (tmp_path / "results.json").read_text(encoding="utf-8")
    if os.environ.get("WORKBENCH_REGENERATE_GOLDEN") == "1":
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(produced, encoding="utf-8")
    assert GOLDEN.is_file(), "no golden file yet: run `make golden` and review it"
    expected = GOLDEN.read_text(encoding="utf-8")
    assert produced == expected, (
        "results.json for the example changed; if intended, run `make golden` and commit the diff"
    )


def test_results_are_byte_identical_across_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    outs = []
    for i in range(2):
        out = tmp_path / f"run{i}"
        assert cli.main(["analyze", *ARGS, "--out", str(out)]) == 0
        outs.append((out / "results.json").read_bytes())
    assert outs[0] == outs[1]
