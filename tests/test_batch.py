"""``workbench batch``: one report per entry, failures isolated, an escaped index, exit code."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_report import once, write_synthetic

from workbench.cli import main as cli
from workbench.cli.batch import Entry, Outcome, index_html, read_manifest
from workbench.common.errors import WorkbenchError

MANIFEST = """\
entries:
  - name: good
    inputs: data/rows.jsonl
    config: data/config.yaml
    params: {resamples: 200}
  - name: strict
    inputs: [data/rows.jsonl]
    config: data/config.yaml
    params: {resamples: 200, min_valid_n: 1000}
  - name: broken
    inputs: data/does-not-exist.jsonl
"""


def _run_batch(base: Path) -> int:
    write_synthetic(base / "data")
    manifest = base / "manifest.yaml"
    manifest.write_text(MANIFEST, encoding="utf-8")
    return cli.main(["batch", str(manifest), "--out", str(base / "out"), "--jobs", "2"])


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    base = once(tmp_path_factory, "batch-run", _run_batch)
    code = json.loads((base / ".done").read_text(encoding="utf-8"))
    return {
        "base": base,
        "code": code,
        "index": (base / "out" / "index.html").read_text(encoding="utf-8"),
    }


def _row(index: str, name: str) -> str:
    m = re.search(rf"<tr><td>(?:<a [^>]*>)?{name}(?:</a>)?</td>.*?</tr>", index)
    assert m, f"{name} not listed"
    return m.group(0)


def test_exit_code_1_when_an_entry_errors(batch: dict) -> None:
    assert batch["code"] == 1


def test_index_lists_every_entry_with_status(batch: dict) -> None:
    index = batch["index"]
    assert index.count("<tr><td>") == 3
    good, strict, broken = (_row(index, n) for n in ("good", "strict", "broken"))
    assert ">ok<" in good and 'href="good/report.html"' in good
    assert ">gate failed<" in strict and 'href="strict/report.html"' in strict
    assert ">error<" in broken and "does-not-exist.jsonl" in broken and "report.html" not in broken
    assert re.search(
        r"overall \d\.\d\d to \d\.\d\d \(3 of 3 variants measured\); valid \d+/72 rows", good
    )
    assert "no measured overall cell" in strict


def test_good_entries_have_reports_and_failures_are_isolated(batch: dict) -> None:
    out = batch["base"] / "out"
    for name in ("good", "strict"):
        assert (out / name / "report.html").is_file()
        assert (out / name / "results.json").is_file()
    assert not (out / "broken" / "report.html").exists()
    assert "does-not-exist.jsonl" in (out / "broken" / "report.log").read_text(encoding="utf-8")


def test_index_is_offline(batch: dict) -> None:
    assert not re.search(r"""\b(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", batch["index"])
    assert "<script" not in batch["index"]


def test_index_escapes_names_and_errors() -> None:
    e = Entry(name="x", inputs=["a"])
    page = index_html([Outcome(e, "error", 2, "<script>alert(1)</script>", 1.0)], "<b>m.yaml")
    assert "<script>alert" not in page and "&lt;script&gt;" in page and "&lt;b&gt;m.yaml" in page


def test_manifest_paths_resolve_against_its_folder(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    m = tmp_path / "sub" / "m.yaml"
    m.write_text(
        "- {name: a, inputs: r.jsonl, plan: complete, claims: c.yaml, preset: mt-bench,"
        " params: {seed: 3, confidence: 0.9}}\n",
        encoding="utf-8",
    )
    (entry,) = read_manifest(m)
    assert entry.inputs == [str(tmp_path / "sub" / "r.jsonl")]
    assert entry.options == {
        "plan": "complete",
        "claims": str(tmp_path / "sub" / "c.yaml"),
        "preset": "mt-bench",
    }
    argv = entry.argv(Path("o"))
    assert argv[:4] == ["report", str(tmp_path / "sub" / "r.jsonl"), "--out", "o"]
    assert ["--seed", "3"] == argv[argv.index("--seed") : argv.index("--seed") + 2]
    assert ["-p", "confidence", "0.9"] == argv[argv.index("-p") : argv.index("-p") + 3]


@pytest.mark.parametrize(
    "text, match",
    [
        ("[]", "non-empty list"),
        ("- {inputs: r.jsonl}", "'name'"),
        ("- {name: ../x, inputs: r.jsonl}", "'name'"),
        ("- {name: a, inputs: r.jsonl}\n- {name: a, inputs: r.jsonl}", "duplicate name"),
        ("- {name: a}", "'inputs'"),
        ("- {name: a, inputs: r.jsonl, colour: red}", "unknown key"),
    ],
)
def test_bad_manifest_is_an_input_error(tmp_path: Path, text: str, match: str) -> None:
    m = tmp_path / "m.yaml"
    m.write_text(text, encoding="utf-8")
    with pytest.raises(WorkbenchError, match=match):
        read_manifest(m)


def test_bad_manifest_exits_2(tmp_path: Path) -> None:
    assert (
        cli.main(["batch", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "o")])
        == cli.EXIT_INPUT
    )


@pytest.mark.parametrize(
    ("code", "passed", "no_gate", "status"),
    [
        (0, True, False, "ok"),
        (1, False, False, "gate failed"),
        (0, False, True, "gate failed (no_gate)"),  # the exit code hid it; the index must not
        (0, True, True, "ok"),
        (2, True, False, "error"),
    ],
)
def test_entry_status_reads_the_gate_from_the_entry_results(
    tmp_path: Path, code: int, passed: bool, no_gate: bool, status: str
) -> None:
    from workbench.cli.batch import FAILING, entry_status

    (tmp_path / "report.html").write_text("<html></html>", encoding="utf-8")
    (tmp_path / "results.json").write_text(json.dumps({"gate": {"passed": passed}}), encoding="utf-8")
    assert entry_status(code, tmp_path, no_gate) == (status, None)
    assert (status in FAILING) is (status in ("error", "gate failed"))
    page = index_html([Outcome(Entry(name="e", inputs=["a"]), status, code, None, 1.0)], "m.yaml")
    assert f">{status}<" in page
    (tmp_path / "report.html").unlink()
    assert entry_status(0, tmp_path, no_gate)[0] == "error"
