"""What the CLI prints (issue 26): plain help text, input counts, batch failure reasons, and
the papermill run's one-line GateFailed. Every test asserts the text a user sees."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import make_row_line, write_lines

from workbench import report
from workbench.cli import batch as cmd_batch
from workbench.cli import main as cli
from workbench.common.text import count, gate_reasons, gate_summary
from workbench.report.export import GateFailed

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
EXAMPLE = ROOT / "data" / "example"
COMMANDS = [[], ["analyze"], ["check"], ["report"], ["batch"], ["synth"], ["selftest"], ["calibrate"],
            ["preset"], ["preset", "list"], ["preset", "show"]]

# --------------------------------------------------------------------------- 2: help text


def _help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as done:
        cli.main([*argv, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: " ".join(a) or "workbench")
def test_help_has_no_markup_and_no_repository_docs(argv: list[str], capsys) -> None:
    text = _help(argv, capsys)
    assert "`" not in text  # no RST ``literal`` nor markdown `code`
    for markup in (":mod:", ":func:", ":class:", "**", "docs/", ".md"):
        assert markup not in text, f"{markup!r} in: workbench {' '.join(argv)} --help"


def test_top_level_help_is_plain_and_points_at_preset_show(capsys) -> None:
    text = _help([], capsys)
    assert "Reanalysis workbench for LLM-as-a-judge evaluations" in text
    assert "workbench preset show NAME" in text
    assert "Exit codes: 0 done; 1 a gate failed" in text


@pytest.mark.parametrize("command", ["analyze", "check", "report"])
def test_input_help_names_every_supported_format(command: str, capsys) -> None:
    text = " ".join(_help([command], capsys).split())
    assert "INPUT judge-row files or globs: .jsonl, .jsonl.gz, .json (a JSON array of rows), .csv, .tsv " \
           "(plain or .gz), .parquet, or Inspect AI logs (.eval zip or .json log)" in text
    assert "--config FILE YAML config file (workbench preset show NAME prints a complete one to start " \
           "from)" in text


# --------------------------------------------------------------------------- 3: input counts


def test_count_is_singular_and_plural() -> None:
    assert [count(n, "input") for n in (0, 1, 2, 3)] == ["0 inputs", "1 input", "2 inputs", "3 inputs"]


def _rows(folder: Path, n_files: int) -> None:
    for f in range(n_files):
        lines = [make_row_line(scenario=f"s{s}", trial=t, judge="j", variant=v, overall=(s + t) % 9 + 1)
                 for s in range(f * 4, f * 4 + 4) for t in (1, 2) for v in ("a", "b")]
        write_lines(folder / f"part{f}.jsonl", lines)


@pytest.mark.parametrize(("n_files", "said"), [(3, "analysing 3 inputs"), (1, "analysing 1 input")])
def test_report_counts_the_files_a_glob_matches(n_files: int, said: str, tmp_path: Path, capsys,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    _rows(tmp_path / "in", n_files)

    def render(out: Path, params: dict[str, Any], progress: bool = False) -> dict[str, Path]:
        (Path(out) / "report.html").write_text("<html></html>", encoding="utf-8")  # no kernel here
        return {"notebook": Path(out) / "report.ipynb", "html": Path(out) / "report.html"}

    monkeypatch.setattr(report, "render", render)
    code = cli.main(["report", str(tmp_path / "in" / "part*.jsonl"), "--out", str(tmp_path / "out"),
                     "--resamples", "100", "--min-valid-n", "1", "--min-clusters", "1"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert f"workbench: {said}\n" in err
    assert "input(s)" not in err
    doc = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert len(doc["inputs"]) == n_files


def test_report_gate_failure_names_the_short_cells(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    _rows(tmp_path / "in", 1)
    monkeypatch.setattr(report, "render", lambda out, params, progress=False: {"html": Path(out) / "report.html"})
    code = cli.main(["report", str(tmp_path / "in" / "part0.jsonl"), "--out", str(tmp_path / "out"),
                     "--resamples", "100", "--min-valid-n", "9", "--min-clusters", "1"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.splitlines()[-1] == ("workbench: gate failed: cell a (overall, all judges): 8 valid < 9 preregistered; "
                                    "cell b (overall, all judges): 8 valid < 9 preregistered; the report shows why")


# --------------------------------------------------------------------------- 4 and 5: gate reasons

GATE = {"passed": False, "field": "overall", "min_valid_n": 30, "min_clusters": 3,
        "failing": [{"variant": "rag", "valid_n": 21, "rows": 24, "clusters": 6, "status": "insufficient",
                     "why": "21 valid < 30 preregistered"}],
        "pass_gate": 0.8, "pass_failing": [{"variant": "base", "ci_low": 0.645, "rate": 0.95, "passes": 19,
                                            "n": 20, "why": "pass rate lower bound 0.645 < 0.8"}]}


def test_gate_reasons_name_the_cell_and_its_counts() -> None:
    assert gate_reasons(GATE) == ["cell rag (overall, all judges): 21 valid < 30 preregistered",
                                  "pass rate of base: pass rate lower bound 0.645 < 0.8"]
    many = {**GATE, "failing": GATE["failing"] * 5, "pass_failing": []}
    assert gate_summary(many) == "; ".join(["cell rag (overall, all judges): 21 valid < 30 preregistered"] * 3) \
        + "; and 2 more"
    assert gate_summary({"passed": True, "failing": []}) == ""


def _fake_report_run(stderr_by_entry: dict[str, tuple[int, str, dict[str, Any] | None]]) -> Any:
    """A stand-in for the entry's ``workbench report`` process: writes what it would write."""

    def run(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        out = Path(cmd[cmd.index("--out") + 1])
        code, err, gate = stderr_by_entry[out.name]
        if gate is not None:
            (out / "report.html").write_text("<html></html>", encoding="utf-8")
            (out / "results.json").write_text(json.dumps({"gate": gate, "scorecard": []}), encoding="utf-8")
        return subprocess.CompletedProcess(cmd, code, "", err)

    return run


@pytest.mark.parametrize("quiet", [False, True])
def test_batch_prints_each_failure_reason_on_the_terminal(quiet: bool, tmp_path: Path, capsys,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "rows.jsonl").write_text("{}\n", encoding="utf-8")
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text("entries:\n  - {name: good, inputs: rows.jsonl}\n  - {name: strict, inputs: rows.jsonl}\n"
                        "  - {name: shown, inputs: rows.jsonl, no_gate: true}\n"
                        "  - {name: broken, inputs: missing.jsonl}\n", encoding="utf-8")
    passed = {"passed": True, "failing": [], "pass_failing": []}
    monkeypatch.setattr(cmd_batch.subprocess, "run", _fake_report_run({
        "good": (0, "", passed),
        "strict": (1, "workbench: gate failed: ...; the report shows why\n", GATE),
        "shown": (0, "", GATE),
        "broken": (2, "workbench: error: missing.jsonl: no such file\n", None),
    }))
    code = cli.main(["batch", str(manifest), "--out", str(tmp_path / "out"), "--jobs", "1",
                     *(["--quiet"] if quiet else [])])
    err = capsys.readouterr().err
    assert code == 1
    lines = {re.sub(r"^\[\d/4\] ", "", ln) for ln in err.splitlines()}
    reason = "cell rag (overall, all judges): 21 valid < 30 preregistered; " \
             "pass rate of base: pass rate lower bound 0.645 < 0.8"
    assert f"gate failed strict: {reason}" in lines
    assert f"gate failed (no_gate) shown: {reason}" in lines
    assert "error       broken: missing.jsonl: no such file" in lines
    assert ("ok          good" in lines) is not quiet  # --quiet drops progress, not reasons
    # the index keeps the headline numbers for a gate failure and the error for an error
    index = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert "missing.jsonl: no such file" in index


def test_gate_failed_renders_as_one_line_in_a_kernel() -> None:
    exc = GateFailed("the preregistered gate failed: cell rag (overall, all judges): 21 valid < 30 preregistered")
    assert exc._render_traceback_() == [
        "GateFailed in the last cell, wr.finish(R): the preregistered gate failed: "
        "cell rag (overall, all judges): 21 valid < 30 preregistered"]


def test_papermill_gate_failure_ends_with_its_one_line_message(tmp_path: Path) -> None:
    if not (BIN / "papermill").is_file():
        pytest.skip("papermill is not installed next to this interpreter")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1",
           "PYTHONPATH": str(ROOT)}  # the kernel imports this tree's workbench
    done = subprocess.run(
        [str(BIN / "papermill"), str(report.notebook_path()), "executed.ipynb", "--no-progress-bar",
         "-p", "config", str(EXAMPLE / "config.yaml"), "-p", "min_valid_n", "100000",
         "-y", f"inputs: [{EXAMPLE / 'judge_rows.jsonl'}]"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode != 0
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    last = lines[-1]
    assert last.startswith("GateFailed in the last cell, wr.finish(R): the preregistered gate failed: "
                           "cell freeform_reflect (overall, all judges): 42 valid < 100000 preregistered; "), last
    assert last.endswith("; and 3 more; report/report.html shows why (set no_gate to run through)"), last
    assert lines[-2] == 'Exception encountered at "In [31]":' or lines[-2].startswith("Exception encountered at")
    # no traceback through the workbench's own code (papermill's own frames are papermill's)
    assert "workbench/report" not in done.stderr and "----> " not in done.stderr
    assert "Gate failed." in (tmp_path / "report" / "report.html").read_text(encoding="utf-8")


@pytest.mark.parametrize(("value", "expected"), [(True, True), (False, False), ("false", False), ("FALSE", False),
                                                 ("True", True), (" true ", True)])
def test_boolean_parameters_read_true_and_false_only(value: Any, expected: bool) -> None:
    """Issue 28: papermill's ``-p no_gate false`` passes the string "false", which is truthy."""
    from workbench.report.build import validate_parameters

    assert validate_parameters({"no_gate": value})["no_gate"] is expected


@pytest.mark.parametrize(("values", "message"), [
    ({"no_gate": "no"}, "parameter no_gate: expected true or false, got str 'no'"),
    ({"no_gate": 0}, "parameter no_gate: expected true or false, got int 0"),
    ({"inputs": 5}, "parameter inputs: expected a path or a list of paths, got int 5"),
    ({"inputs": ["a.jsonl", 3]}, "parameter inputs: expected a path or a list of paths, got list ['a.jsonl', 3]"),
    ({"seed": "x"}, "parameter seed: expected a whole number, got str 'x'"),
    ({"seed": True}, "parameter seed: expected a whole number, got bool True"),
    ({"resamples": 2.5}, "parameter resamples: expected a whole number, got float 2.5"),
    ({"confidence": 95}, "parameter confidence: expected a number between 0 and 1, got int 95"),
    ({"preset": 3}, "parameter preset: expected a path or name (text), got int 3"),
    ({"params": ["a"]}, "parameter params: expected a list of [NAME, VALUE] pairs, got list ['a']"),
])
def test_wrong_parameter_types_name_the_parameter(values: dict[str, Any], message: str) -> None:
    from workbench.report.build import ParameterError, build, validate_parameters

    with pytest.raises(ParameterError) as err:
        validate_parameters(values)
    assert str(err.value) == message
    assert err.value._render_traceback_() == [f"ParameterError: {message}"]
    if "inputs" not in values:
        with pytest.raises(ParameterError, match=re.escape(message)):
            build(inputs="data/example/judge_rows.jsonl", **values)


def test_digit_strings_are_whole_numbers() -> None:
    from workbench.report.build import validate_parameters

    got = validate_parameters({"seed": "7", "resamples": " 200 ", "min_valid_n": None, "confidence": "0.9"})
    assert (got["seed"], got["resamples"], got["min_valid_n"], got["confidence"]) == (7, 200, None, 0.9)


def test_papermill_no_gate_false_keeps_the_gate(tmp_path: Path) -> None:
    """``-p no_gate false`` used to turn the gate off; now the run fails on it as it should."""
    if not (BIN / "papermill").is_file():
        pytest.skip("papermill is not installed next to this interpreter")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1",
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [str(BIN / "papermill"), str(report.notebook_path()), "executed.ipynb", "--no-progress-bar",
         "-p", "config", str(EXAMPLE / "config.yaml"), "-p", "min_valid_n", "100000", "-p", "no_gate", "false",
         "-p", "resamples", "200", "-y", f"inputs: [{EXAMPLE / 'judge_rows.jsonl'}]"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode != 0
    assert [ln for ln in done.stderr.splitlines() if ln.strip()][-1].startswith("GateFailed in the last cell")
