"""The notebook run by papermill itself, as a user would, on real MT-Bench judgments.

Given only ``inputs`` and ``preset`` it writes what ``workbench report`` writes, with the same
``results.json`` and ``report.html`` bytes, and it exits non-zero when the preregistered gate
fails. The rows are FastChat's published GPT-4 single-answer judgments of MT-Bench, read from
``../shared/realdata/native`` (never copied into the repository); the mt-bench preset reads
that native layout as it is.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workbench import report

ROOT = Path(__file__).resolve().parents[1]
NATIVE = ROOT.parent / "shared" / "realdata" / "native"
MT_BENCH = (NATIVE / "jxiw__FastChat" / "fastchat" / "llm_judge" / "data" / "mt_bench" / "model_judgment"
            / "gpt-4_single.jsonl")
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.slow


def _need_data() -> Path:
    if not MT_BENCH.is_file():
        reason = f"real MT-Bench judgments not found at {MT_BENCH}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return MT_BENCH


def _env() -> dict[str, str]:
    # papermill's python3 kernel is this venv's (its ipykernel kernelspec runs `python`)
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1"}


def _papermill(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "papermill"), str(report.notebook_path()), "executed.ipynb", "--no-progress-bar", *args],
        cwd=cwd, env=_env(), capture_output=True, text=True, timeout=600, check=False,
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    data = _need_data()
    base = tmp_path_factory.mktemp("papermill")
    pm = _papermill(base, "-p", "preset", "mt-bench", "-y", f"inputs: [{data}]")
    got = {name: (base / "report" / name).read_bytes() for name in ("results.json", "report.html")}
    listed = sorted(p.name for p in (base / "report").iterdir())
    figures = sorted(p.name for p in (base / "report" / "figures").iterdir())
    shutil.rmtree(base / "report")
    cli = subprocess.run(
        [str(BIN / "workbench"), "report", str(data), "--out", "report", "--preset", "mt-bench"],
        cwd=base, env=_env(), capture_output=True, text=True, timeout=600, check=False,
    )
    want = {name: (base / "report" / name).read_bytes() for name in ("results.json", "report.html")}
    return {"pm": pm, "cli": cli, "got": got, "want": want, "listed": listed, "figures": figures, "base": base}


def test_papermill_with_inputs_and_preset_writes_the_outputs(runs: dict) -> None:
    assert runs["pm"].returncode == 0, runs["pm"].stderr[-2000:]
    assert runs["cli"].returncode == 0, runs["cli"].stderr[-2000:]
    assert {"results.json", "rows.parquet", "report.html", "run.json", "figures"} <= set(runs["listed"])
    assert "scorecard_forest.png" in runs["figures"] and "scorecard_forest.svg" in runs["figures"]


def test_results_and_report_identical_to_workbench_report(runs: dict) -> None:
    assert runs["got"]["results.json"] == runs["want"]["results.json"]
    assert runs["got"]["report.html"] == runs["want"]["report.html"]
    page = runs["got"]["report.html"].decode("utf-8")
    assert "gpt-4_single.jsonl" in page and 'id="scorecard"' in page
    assert report.external_references(page) == []


def test_papermill_exits_non_zero_when_the_gate_fails(runs: dict) -> None:
    base = runs["base"] / "gate"
    base.mkdir()
    failed = _papermill(base, "-p", "preset", "mt-bench", "-p", "min_valid_n", "100000",
                        "-y", f"inputs: [{MT_BENCH}]")
    assert failed.returncode != 0
    assert "GateFailed" in failed.stderr and "preregistered gate failed" in failed.stderr
    # the report is written first, so the reader can see why
    assert "Gate failed." in (base / "report" / "report.html").read_text(encoding="utf-8")
    # no_gate runs through
    through = _papermill(base, "-p", "preset", "mt-bench", "-p", "min_valid_n", "100000",
                         "-p", "no_gate", "True", "-y", f"inputs: [{MT_BENCH}]")
    assert through.returncode == 0, through.stderr[-2000:]


def test_nbconvert_exporter_gives_the_same_page(runs: dict) -> None:
    import nbformat

    nb = nbformat.read(str(runs["base"] / "executed.ipynb"), as_version=4)
    exporter = report.export.WorkbenchExporter()
    page, _ = exporter.from_notebook_node(nb)
    # base/executed.ipynb is the first run's (the gate runs executed into base/gate)
    assert page == runs["got"]["report.html"].decode("utf-8")
