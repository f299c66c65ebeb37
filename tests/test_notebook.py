"""The committed report notebook: clean (no outputs), parameterised, orchestration only."""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path

import jupytext
import pytest

from workbench import report

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "reanalysis.ipynb"
PAIRED = ROOT / "notebooks" / "reanalysis.py"
PACKAGED = ROOT / "workbench" / "notebooks" / "reanalysis.ipynb"

#: Statements a notebook cell may not contain: no definitions, no loops, no comprehensions.
FORBIDDEN = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Lambda,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


@pytest.fixture(scope="module")
def nb() -> dict:
    return json.loads(NOTEBOOK.read_text(encoding="utf-8"))


def _code_cells(nb: dict) -> list[dict]:
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def _source(cell: dict) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


def test_committed_without_outputs_or_execution_counts(nb: dict) -> None:
    for i, cell in enumerate(_code_cells(nb)):
        assert cell.get("outputs") == [], (
            f"code cell {i} has committed outputs: clear them before committing"
        )
        assert cell.get("execution_count") is None, f"code cell {i} has an execution count"
    assert "papermill" not in nb["metadata"], (
        "an executed notebook was committed (papermill metadata)"
    )
    assert "widgets" not in nb["metadata"]


def test_has_one_parameters_cell_first(nb: dict) -> None:
    tagged = [
        i
        for i, c in enumerate(nb["cells"])
        if "parameters" in c.get("metadata", {}).get("tags", [])
    ]
    assert len(tagged) == 1, (
        "exactly one cell must be tagged 'parameters' (papermill injects after it)"
    )
    assert nb["cells"][tagged[0]]["cell_type"] == "code"
    first_code = next(i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code")
    assert tagged[0] == first_code


def test_parameters_match_build_signature(nb: dict) -> None:
    cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    tree = ast.parse(_source(cell))
    names = {
        t.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    for node in tree.body:
        assert isinstance(node, ast.Assign), "the parameters cell holds plain assignments only"
        assert isinstance(node.value, ast.Constant | ast.List | ast.Dict), (
            "parameters must be literals"
        )
    wanted = {
        "inputs",
        "config",
        "preset",
        "plan",
        "published",
        "claims",
        "min_valid_n",
        "min_clusters",
        "confidence",
        "resamples",
        "seed",
        "subsets",
        "out_dir",
        "command_line",
        "params",
    }
    assert names == wanted
    assert names == set(inspect.signature(report.build).parameters)


def test_code_cells_only_orchestrate(nb: dict) -> None:
    for i, cell in enumerate(_code_cells(nb)):
        tree = ast.parse(_source(cell))
        bad = [type(n).__name__ for n in ast.walk(tree) if isinstance(n, FORBIDDEN)]
        assert not bad, (
            f"code cell {i} contains {bad}: move it into workbench, the notebook only calls and "
            "shows"
        )


def test_cells_call_existing_report_functions(nb: dict) -> None:
    called = set()
    for cell in _code_cells(nb):
        for node in ast.walk(ast.parse(_source(cell))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "wr"
            ):
                called.add(node.attr)
    assert called, "the notebook should call workbench.report as wr"
    missing = sorted(n for n in called if not callable(getattr(report, n, None)))
    assert not missing, f"notebook calls workbench.report functions that do not exist: {missing}"


def test_every_section_has_a_heading_cell(nb: dict) -> None:
    text = "\n".join(_source(c) for c in _code_cells(nb))
    for key, _ in report.SECTIONS:
        assert f'wr.heading(R, "{key}")' in text, f"section {key} has no heading cell"


def test_jupytext_pair_in_sync() -> None:
    a = jupytext.read(NOTEBOOK)
    b = jupytext.read(PAIRED)
    cells_a = [(c.cell_type, c.source.strip(), sorted(c.metadata.get("tags", []))) for c in a.cells]
    cells_b = [(c.cell_type, c.source.strip(), sorted(c.metadata.get("tags", []))) for c in b.cells]
    assert cells_a == cells_b, (
        "notebooks/reanalysis.py and .ipynb differ: run `jupytext --sync "
        "notebooks/reanalysis.ipynb`"
    )


def test_packaged_copy_identical() -> None:
    assert PACKAGED.read_bytes() == NOTEBOOK.read_bytes(), (
        "workbench/notebooks/reanalysis.ipynb (shipped in the wheel) differs from "
        "notebooks/reanalysis.ipynb: "
        "cp notebooks/reanalysis.ipynb workbench/notebooks/"
    )


def test_render_uses_source_tree_notebook() -> None:
    assert report.notebook_path() == NOTEBOOK
