"""CLI: ``workbench analyze`` exit codes, one-line errors naming the file, and its outputs.

Runs ``workbench.cli.main.main([...])`` in process (fast) and the installed console script in a
subprocess for the cases where the real stderr and exit status matter.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from conftest import DROP, make_row_line, write_lines

from workbench.cli import main as cli

ROOT = Path(__file__).resolve().parents[1]
WORKBENCH = Path(sys.executable).parent / "workbench"

LEDGER_KEYS = {
    "lines",
    "blank",
    "valid",
    "unscored",
    "errored",
    "partial",
    "empty",
    "non_numeric",
    "out_of_range",
    "invalid_number",
    "malformed",
    "duplicate",
    "conflict",
    "missing_planned",
}
CENSUS_KEYS = {
    "judge",
    "variant",
    "rows",
    "valid",
    "partial",
    "empty",
    "non_numeric",
    "out_of_range",
    "invalid_number",
    "duplicate",
    "conflict",
    "missing_planned",
    "missing_rate",
    "missing_rate_ci_low",
    "missing_rate_ci_high",
}
TEST_KEYS = {"factor", "statistic", "p_value", "method"}
FAST = ["--resamples", "200", "-q"]


def good_lines() -> list[str | bytes]:
    """2 judges x 2 variants x 6 scenarios x 2 trials = 48 valid rows, then 6 damaged lines."""
    lines: list[str | bytes] = []
    for j, judge in enumerate(("gpt-4o", "claude")):
        for v, variant in enumerate(("baseline", "rag")):
            for s in range(6):
                for trial in (1, 2):
                    lines.append(
                        make_row_line(
                            judge=judge,
                            variant=variant,
                            scenario=f"s{s}",
                            trial=trial,
                            overall=(s + trial + j + v) % 10 + 1,
                        )
                    )
    lines += [
        make_row_line(
            judge="gpt-4o", variant="rag", scenario="s6", trial=1, overall=DROP
        ),  # partial
        "",  # blank
        # malformed (truncated):
        '{"scenario": "s7", "variant": "rag", "trial": 1, "judge": "gpt-4o", "overall": ',
        make_row_line(judge="claude", variant="rag", scenario="s0", trial=1, overall=1),  # conflict
        make_row_line(judge="claude", variant="baseline", scenario="s6", trial=1, overall="8/10"),
        make_row_line(judge="claude", variant="baseline", scenario="s6", trial=2, overall=85),
    ]
    return lines


@pytest.fixture
def good(tmp_path: Path) -> str:
    return write_lines(tmp_path / "in" / "rows.jsonl", good_lines())


@pytest.fixture
def plan(tmp_path: Path) -> str:
    p = tmp_path / "in" / "plan.csv"
    rows = ["scenario,variant,trial,judge"]
    for judge in ("gpt-4o", "claude"):
        for variant in ("baseline", "rag"):
            for s in range(8):  # s6 and s7 planned for every cell: some never ran
                rows.append(f"s{s},{variant},1,{judge}")
    p.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return str(p)


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_analyze_good_input_writes_results(good: str, plan: str, tmp_path: Path, capsys) -> None:
    out_dir = tmp_path / "out"
    code, out, err = run_main(
        ["analyze", good, "--plan", plan, "--out", str(out_dir), "--no-gate", *FAST], capsys
    )
    assert code == 0, err
    assert "Traceback" not in err
    assert f"wrote {out_dir / 'results.json'} and {out_dir / 'rows.parquet'}" in out
    doc = json.loads((out_dir / "results.json").read_text(encoding="utf-8"))
    assert doc["schema_version"] == 1
    raw = Path(good).read_bytes()
    assert doc["inputs"] == [{"path": good, "sha256": hashlib.sha256(raw).hexdigest(), "lines": 54}]
    assert set(doc["ledger"]) == LEDGER_KEYS
    # by hand: 48 valid rows; line 49 partial, 50 blank, 51 malformed; line 52 repeats
    # (claude, rag, s0, 1) with overall 1 where the original has (0+1+1+1)%10+1 = 4 -> both
    # conflict; 53 non_numeric; 54 out_of_range.
    assert doc["ledger"] == {
        "lines": 54,
        "blank": 1,
        "valid": 47,
        "partial": 1,
        "empty": 0,
        "unscored": 0,
        "errored": 0,
        "non_numeric": 1,
        "out_of_range": 1,
        "invalid_number": 0,
        "malformed": 1,
        "duplicate": 0,
        "conflict": 2,
        # plan: 2 judges x 2 variants x 8 scenarios, trial 1 = 32 keys; no row
        # for s7 (4 cells) and s6 in (gpt-4o, baseline), (claude, rag) -> 6
        "missing_planned": 6,
    }
    assert sum(v for k, v in doc["ledger"].items() if k not in ("lines", "missing_planned")) == 54
    assert len(doc["census"]) == 4
    for rec in doc["census"]:
        assert CENSUS_KEYS <= set(rec)
    assert {(c["judge"], c["variant"]) for c in doc["census"]} == {
        ("claude", "baseline"),
        ("claude", "rag"),
        ("gpt-4o", "baseline"),
        ("gpt-4o", "rag"),
    }
    assert [t["factor"] for t in doc["missingness_tests"]] == ["judge", "variant"]
    for t in doc["missingness_tests"]:
        assert TEST_KEYS <= set(t)
    assert doc["malformed_lines"] == [
        {"file": good, "line": 51, "reason": "not JSON: Expecting value (column 80)"}
    ]  # as json.loads says


def test_rows_parquet_has_every_line_and_planned_rows(
    good: str, plan: str, tmp_path: Path, capsys
) -> None:
    out_dir = tmp_path / "out"
    code, _, err = run_main(
        ["analyze", good, "--plan", plan, "--out", str(out_dir), "--no-gate", *FAST], capsys
    )
    assert code == 0, err
    rows = pl.read_parquet(out_dir / "rows.parquet")
    lines = rows.filter(pl.col("line").is_not_null())
    assert lines.height == 54
    assert lines["line"].sort().to_list() == list(range(1, 55))
    assert set(lines["file"]) == {good}
    planned = rows.filter(pl.col("bucket") == "missing_planned")
    assert planned.height == 6
    assert planned["file"].null_count() == 6 and planned["line"].null_count() == 6
    assert rows.height == 54 + 6
    for col in ("file", "line", "bucket", "reason", "scenario", "variant", "trial", "judge"):
        assert col in rows.columns
    by_line = dict(lines.select("line", "bucket").iter_rows())
    assert (by_line[49], by_line[50], by_line[51], by_line[53], by_line[54]) == (
        "partial",
        "blank",
        "malformed",
        "non_numeric",
        "out_of_range",
    )


def test_results_json_is_byte_identical_across_runs(
    good: str, plan: str, tmp_path: Path, capsys
) -> None:
    texts = []
    for name in ("a", "b"):
        code, _, err = run_main(
            ["analyze", good, "--plan", plan, "--out", str(tmp_path / name), "--no-gate", *FAST],
            capsys,
        )
        assert code == 0, err
        texts.append((tmp_path / name / "results.json").read_bytes())
    assert texts[0] == texts[1]
    assert b"NaN" not in texts[0] and b"Infinity" not in texts[0]


def test_analyze_via_console_script(good: str, tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    proc = subprocess.run(
        [str(WORKBENCH), "analyze", good, "--out", str(out_dir), "--no-gate", *FAST],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert (out_dir / "results.json").is_file() and (out_dir / "rows.parquet").is_file()
    doc = json.loads((out_dir / "results.json").read_text(encoding="utf-8"))
    assert doc["ledger"]["lines"] == 54 and doc["ledger"]["missing_planned"] is None


# ----------------------------------------------------------------------------- exit 2


def _bad_inputs(tmp_path: Path, good: str) -> dict[str, tuple[list[str], str]]:
    """case -> (argv after 'analyze', the path the message must name)."""
    d = tmp_path / "bad"
    d.mkdir()
    empty = write_lines(d / "empty.jsonl", [])
    novalid = write_lines(d / "novalid.jsonl", [make_row_line(overall=None), "", "{"])
    badkey = d / "badkey.yaml"
    badkey.write_text("rubrik: {min: 1, max: 10}\n", encoding="utf-8")
    badyaml = d / "bad.yaml"
    badyaml.write_text("rubric: {min: 1, max: 10\nkeys: [\n", encoding="utf-8")
    ragged = d / "ragged.csv"
    ragged.write_text("scenario,variant,trial,judge\ns1,v1,1,j\ns1,v1,1,j,x,y\n", encoding="utf-8")
    nocol = d / "nocol.csv"
    nocol.write_text("scenario,variant,judge\ns1,v1,j\n", encoding="utf-8")
    missing = str(d / "missing.jsonl")
    return {
        "nonexistent": ([missing], missing),
        "empty": ([empty], empty),
        "no_valid_row": ([novalid], novalid),
        "directory": ([str(d)], str(d)),
        "unmatched_glob": ([str(d / "*.nothing")], str(d / "*.nothing")),
        "bad_config_key": ([good, "--config", str(badkey)], str(badkey)),
        "bad_yaml": ([good, "--config", str(badyaml)], str(badyaml)),
        "missing_plan": ([good, "--plan", str(d / "plan.csv")], str(d / "plan.csv")),
        "ragged_plan": ([good, "--plan", str(ragged)], str(ragged)),
        "plan_without_trial": ([good, "--plan", str(nocol)], str(nocol)),
        "missing_config": ([good, "--config", str(d / "nope.yaml")], str(d / "nope.yaml")),
        "second_file_bad": ([good, missing], missing),
    }


CASES = [
    "nonexistent",
    "empty",
    "no_valid_row",
    "directory",
    "unmatched_glob",
    "bad_config_key",
    "bad_yaml",
    "missing_plan",
    "ragged_plan",
    "plan_without_trial",
    "missing_config",
    "second_file_bad",
]

MESSAGES = {
    "nonexistent": "no such file",
    "empty": "file is empty",
    "no_valid_row": "no valid row at all (blank 1, malformed 1, partial 1)",
    "directory": "is a directory",
    "unmatched_glob": "no file matches this pattern",
    "bad_config_key": "rubrik: unknown key; did you mean 'rubric'?",
    "bad_yaml": "not valid YAML: line 2, column 5: expected ',' or '}', but got ':'",
    "missing_plan": "plan file not found",
    "ragged_plan": "cannot read plan CSV",
    "plan_without_trial": "plan is missing column(s) trial",
    "missing_config": "config file not found",
    "second_file_bad": "no such file",
}


@pytest.mark.parametrize("case", CASES)
def test_bad_input_exits_2_with_one_line(case: str, good: str, tmp_path: Path, capsys) -> None:
    argv, named = _bad_inputs(tmp_path, good)[case]
    out_dir = tmp_path / "out"
    code, out, err = run_main(["analyze", *argv, "--out", str(out_dir), *FAST], capsys)
    assert code == 2
    assert "Traceback" not in err
    assert err.endswith("\n") and err.count("\n") == 1, err  # exactly one line
    assert err.startswith(f"workbench: error: {named}: ") or err.startswith(
        f"workbench: error: {named}:"
    ), err
    assert MESSAGES[case] in err
    assert not (out_dir / "results.json").exists()


@pytest.mark.parametrize("case", ["nonexistent", "bad_yaml", "no_valid_row"])
def test_bad_input_via_console_script(case: str, good: str, tmp_path: Path) -> None:
    argv, named = _bad_inputs(tmp_path, good)[case]
    proc = subprocess.run(
        [str(WORKBENCH), "analyze", *argv, "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(f"workbench: error: {named}:")
    assert MESSAGES[case] in proc.stderr


def test_usage_errors_exit_2(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["analyze", "x.jsonl"])  # --out missing
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "--out" in err
    with pytest.raises(SystemExit) as exc:
        cli.main(["nonsense"])
    assert exc.value.code == 2


def test_malformed_lines_are_never_fatal(tmp_path: Path, capsys) -> None:
    lines = [make_row_line(scenario=f"s{i}", trial=1) for i in range(3)]
    lines += [b"\xff\xfe", "[1]", "{", '"x"', "null", make_row_line(judge=None)]
    path = write_lines(tmp_path / "mixed.jsonl", lines)
    code, out, err = run_main(
        ["analyze", path, "--out", str(tmp_path / "out"), "--no-gate", *FAST], capsys
    )
    assert code == 0, err
    doc = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert doc["ledger"]["malformed"] == 6 and doc["ledger"]["valid"] == 3
    assert [m["line"] for m in doc["malformed_lines"]] == [4, 5, 6, 7, 8, 9]
    assert doc["malformed_lines"][-1]["reason"] == "key field 'judge' is null"


def test_plan_complete_on_the_command_line(good: str, tmp_path: Path, capsys) -> None:
    out_dir = tmp_path / "out"
    code, _, err = run_main(
        ["analyze", good, "--plan", "complete", "--out", str(out_dir), "--no-gate", *FAST], capsys
    )
    assert code == 0, err
    doc = json.loads((out_dir / "results.json").read_text(encoding="utf-8"))
    # observed: scenarios s0-s6 (s7 is only on the malformed line), 2 variants, trials 1-2,
    # 2 judges -> 56 combinations; keys with a row: 48 + (gpt-4o, rag, s6, 1) +
    # (claude, baseline, s6, 1) + (claude, baseline, s6, 2) = 51 -> 5 planned, no row
    assert doc["ledger"]["missing_planned"] == 5
    assert doc["plan"]["planned"] == 56 and doc["plan"]["mode"] == "complete"


@pytest.mark.parametrize(
    "section", ["rubric: 5", "bootstrap: 7", "constants: [a]", "pass: [1]", "consistency: 3"]
)
def test_config_section_of_the_wrong_type_exits_2(section: str, good: str, tmp_path: Path,
                                                   capsys) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(section + "\n", encoding="utf-8")
    code, _, err = run_main(["analyze", good, "--config", str(cfg), "--out", str(tmp_path / "o")],
                            capsys)
    name = section.split(":")[0]
    assert code == 2 and f"{name}: must be a mapping" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_out_naming_an_existing_file_exits_2(good: str, tmp_path: Path, capsys) -> None:
    target = tmp_path / "taken"
    target.write_text("x", encoding="utf-8")
    code, _, err = run_main(["analyze", good, "--out", str(target)], capsys)
    assert code == 2 and "--out must be a directory" in err and "Traceback" not in err


def test_pass_gate_on_the_wilson_lower_bound_fails_the_run(tmp_path: Path, capsys) -> None:
    # 19 of 20 pass (overall >= 7): point estimate 0.95, Wilson 95% lower bound 0.764 < 0.8,
    # scenario-clustered lower bound 0.645 (5 scenarios; see test_scorecard's hand calculation)
    lines = [make_row_line(scenario=f"s{i % 5}", trial=i // 5, judge="j", variant="A",
                           overall=3 if i == 7 else 9) for i in range(20)]
    path = write_lines(tmp_path / "r.jsonl", lines)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("pass: {threshold: 7, gate: 0.8}\nmin_valid_n: 5\n", encoding="utf-8")
    out = tmp_path / "out"
    code, _, _ = run_main(["analyze", path, "--config", str(cfg), "--out", str(out), *FAST],
                               capsys)
    assert code == 1
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    (fail,) = doc["gate"]["pass_failing"]
    # the gate reads the scenario-clustered lower bound, not the plain Wilson 0.763869
    (pr,) = [r for r in doc["pass_rates"] if r["subset"] is None]
    assert fail["variant"] == "A" and fail["ci_low"] == pytest.approx(pr["ci_low"])
    assert pr["ci_low"] < pr["wilson_low"] == pytest.approx(0.763869, abs=2e-6)
    from workbench.cli import terminal

    text = terminal.scorecard_text(doc) or ""
    assert "gate: FAILED" in text and "lower bound 0.645 < 0.8" in text
    cfg.write_text("pass: {threshold: 7, gate: 0.75}\nmin_valid_n: 5\n", encoding="utf-8")
    code, _, _ = run_main(["analyze", path, "--config", str(cfg), "--out", str(out), *FAST], capsys)
    assert code == 1  # 0.75 is above the clustered bound too (the plain Wilson would pass it)
    cfg.write_text("pass: {threshold: 7, gate: 0.6}\nmin_valid_n: 5\n", encoding="utf-8")
    code, _, _ = run_main(["analyze", path, "--config", str(cfg), "--out", str(out), *FAST], capsys)
    assert code == 0


def test_config_names_that_match_no_row(good: str, tmp_path: Path, capsys) -> None:
    cfg = tmp_path / "c.yaml"
    out = tmp_path / "out"
    # a subset that selects nothing would leave its cells silently empty: exit 2
    cfg.write_text("subsets: {fw: {scenario: [nope1, nope2]}}\n", encoding="utf-8")
    code, _, err = run_main(["analyze", good, "--config", str(cfg), "--out", str(out), *FAST], capsys)
    assert code == 2 and "subset 'fw' selects no row" in err
    # a contrast naming an absent variant: exit 2, naming it
    cfg.write_text("contrasts: [[baseline, nosuch]]\n", encoding="utf-8")
    code, _, err = run_main(["analyze", good, "--config", str(cfg), "--out", str(out), *FAST], capsys)
    assert code == 2 and "nosuch" in err and "Traceback" not in err
    # one typo among real names: the run goes on and says so
    cfg.write_text("subsets: {fw: {scenario: [s0, s1, s_typo]}}\n", encoding="utf-8")
    code, _, err = run_main(["analyze", good, "--config", str(cfg), "--out", str(out), "--no-gate",
                             *FAST], capsys)
    assert code == 0, err
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert doc["config_warnings"] == ["subset 'fw': scenario value(s) s_typo occur in no row"]


# --------------------------------------------------------------------------- usability


def test_version(capsys) -> None:
    from importlib import metadata

    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"workbench {metadata.version('workbench')}"


def test_help_shows_defaults_and_batch_documents_the_manifest(capsys) -> None:
    from workbench.common.config import DEFAULTS

    with pytest.raises(SystemExit):
        cli.main(["analyze", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"built in {DEFAULTS['min_valid_n']}" in text
    assert f"built in {DEFAULTS['bootstrap']['resamples']}" in text
    with pytest.raises(SystemExit):
        cli.main(["batch", "--help"])
    text = capsys.readouterr().out
    assert "entries:" in text and "no_gate" in text and "(default: 2)" in text
    for key in ("name", "inputs", "preset", "config", "plan", "published", "claims", "params"):
        assert f"{key}:" in text, key


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (["--resampels", "3"], "(did you mean '--resamples'?)"),
        (["--no-gtae"], "(did you mean '--no-gate'?)"),
        (["--preset", "mt-bnech"], "(did you mean 'mt-bench'?)"),
    ],
)
def test_did_you_mean(good: str, tmp_path: Path, argv: list[str], hint: str, capsys) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(["analyze", good, "--out", str(tmp_path / "o"), *argv])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert hint in err and "Traceback" not in err


def test_check_with_published_alone(tmp_path: Path, capsys) -> None:
    ex = Path(__file__).resolve().parents[1] / "data" / "example"
    code, out, err = run_main(
        ["check", str(ex / "judge_rows.jsonl"), "--config", str(ex / "config.yaml"),
         "--published", str(ex / "published_scorecard.csv"), "--resamples", "200"], capsys)
    assert "published scorecard:" in out and "claims:" not in out
    # the example's card reproduces only with missing scores as 0 (11 of 12 cells): exit 1
    assert "zero_filled" in out and code == 1
    code, _, err = run_main(["check", str(ex / "judge_rows.jsonl"), *FAST], capsys)
    assert code == 2 and "--claims FILE" in err and "--published FILE" in err


def test_colour_on_a_terminal_only(monkeypatch) -> None:
    from workbench.cli import terminal

    class Tty:
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert terminal.colour("HOLDS", "good", Tty()) == "\033[32mHOLDS\033[0m"
    assert terminal.colour("HOLDS", "good", object()) == "HOLDS"  # a pipe: no isatty
    monkeypatch.setenv("NO_COLOR", "1")
    assert terminal.colour("HOLDS", "good", Tty()) == "HOLDS"


def test_an_underflowing_missingness_p_is_not_printed_as_zero() -> None:
    """A large-sample test far in its tail returns p = 0.0 (chi-square sf underflow): the
    terminal says p < 1e-16, never "p = 0"; ordinary p-values keep three digits."""
    from workbench.cli import terminal

    doc = {"census": [], "missingness_tests": [
        {"factor": "judge", "method": "judge_permutation_within_item_asymptotic", "p_value": 0.0},
        {"factor": "variant", "method": "item_permutation_within_scenario_asymptotic", "p_value": 0.160687},
        {"factor": "x", "method": "undefined", "p_value": None}]}
    text = terminal.census_text(doc)
    assert "judge_permutation_within_item_asymptotic p < 1e-16" in text
    assert "item_permutation_within_scenario_asymptotic p = 0.161" in text
    assert "undefined p = -" in text and "p = 0\n" not in text + "\n"


# --------------------------------------------------------------------------- start-up (issue 26)

HEAVY = ("polars", "numpy", "duckdb", "scipy", "pandas", "pyarrow", "workbench.document.pipeline")


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["preset", "list"]])
def test_light_commands_do_not_import_the_analysis_stack(argv: list[str]) -> None:
    # structural, not a timing (benchmarks/cli_startup.py times it): what these commands load
    probe = (
        "import sys\n"
        "from workbench.cli.main import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        "print(' '.join(sorted(m for m in sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    loaded = set(done.stderr.split())
    heavy = sorted(m for m in loaded if m in HEAVY or m.split(".")[0] in HEAVY[:-1])
    assert heavy == [], f"workbench {' '.join(argv)} imported {heavy[:8]}"
    assert "workbench.cli.main" in loaded  # the probe did run the CLI of this tree


def test_package_attributes_still_resolve_lazily() -> None:
    import workbench as wb

    assert wb.run is wb.pipeline.run and wb.load_config is wb.config.load_config
    assert wb.stats.derive_seed is not None  # a submodule, imported on first use
    assert set(wb.__all__) <= set(dir(wb))
    with pytest.raises(AttributeError):
        _ = wb.no_such_name
