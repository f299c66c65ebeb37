"""The committed report notebook: clean (no outputs), parameterised, orchestration only."""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path

import pytest

from workbench import report

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "workbench" / "notebooks" / "reanalysis.ipynb"  # its one copy

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
    names = set()
    for node in tree.body:
        assert isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name), (
            "the parameters cell holds typed assignments only (`name: type = value  # meaning`)"
        )
        assert isinstance(node.value, ast.Constant), "parameters default to literals"
        names.add(node.target.id)
        # safe defaults: nothing points at the example; inputs is required
        if node.target.id not in ("no_gate", "write_outputs"):
            assert node.value.value is None, f"{node.target.id} must default to None"
    assert names == set(inspect.signature(report.build).parameters)
    assert {"inputs", "out", "no_gate"} <= names


def test_help_notebook_shows_every_type_and_meaning() -> None:
    import papermill

    info = papermill.inspect_notebook(str(NOTEBOOK))
    assert set(info) == set(inspect.signature(report.build).parameters)
    for name, p in info.items():
        assert p["inferred_type_name"] not in ("None", "", None), name
        assert len(p["help"]) > 10, name
    assert info["inputs"]["help"].startswith("required")
    assert info["no_gate"]["inferred_type_name"] == "bool" and info["no_gate"]["default"] == "False"


def test_one_copy_of_the_notebook() -> None:
    copies = sorted(p.relative_to(ROOT) for p in ROOT.rglob("reanalysis*")
                    if ".venv" not in p.parts and "reports" not in p.parts and "tests" not in p.parts)
    real = [p for p in copies if not (ROOT / p).is_symlink()]
    assert real == [Path("workbench/notebooks/reanalysis.ipynb")]
    # notebooks/ (the design card's place for it) holds a symlink to that copy, not a second copy
    link = ROOT / "notebooks" / "reanalysis.ipynb"
    assert link.is_symlink() and link.resolve() == (ROOT / real[0]).resolve()
    assert ".ipynb_checkpoints/" in (ROOT / ".gitignore").read_text(encoding="utf-8").split()


def test_last_cell_finishes(nb: dict) -> None:
    assert _source(_code_cells(nb)[-1]).strip() == "wr.finish(R)"


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


def test_render_uses_the_packaged_notebook() -> None:
    assert report.notebook_path() == NOTEBOOK
