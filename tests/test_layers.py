"""The package's layer order: no module imports one in a layer above its own.

Layers, lowest first (``LAYERS`` below is the one definition; README "Layout" shows it).
Each layer is one sub-package of ``workbench/``, so the tree shows the pipeline:

* ``common`` and ``stats`` (foundation): errors, the vocabularies (``vocab``, ``methods``), the
  stage-table schemas (``schemas``), the canonical JSON writer (``results``), file and
  output-folder checks, text made safe for a terminal (``text``), the Config and its presets;
  the statistics, one module per family (a leaf: it imports nothing else of the package).
* ``ingest``: raw lines -> the row table with its ledger: formats and their detection, the
  columnar reader (``engine``), where the files are read (``execute``: ``--jobs`` processes or
  a Dask cluster), the plan (``ledger``), the selections of rows every later stage shares and
  of the pairs a run compares (``selection``), the clusters (``clusters``).
* ``reduce``: the row table -> small typed tables of sufficient statistics and label codes.
* ``analysis``: census, scorecard, paired analyses, ranks, forensic checks, provenance and
  name checks, harness rules, the board, the judge diagnostics.
* ``sim``: the simulator, its calibration and the embedded example.
* ``document``: the pipeline (inputs -> every stage -> the results document), the document
  itself (``build``), the analyst's API on top of it, and what every command does with its
  arguments (``cliargs``: config, early checks, outputs, exit codes).
* ``report`` (presentation): plots and the HTML report.
* ``cli`` (commands): the dispatcher (``cli.main``, which loads ``cli.check | report | batch``
  by name), what a command prints (``cli.terminal``) and the self-test.
* ``entry``: the package facade (``import workbench as wb``).

Every import counts: module level, inside a function, under ``TYPE_CHECKING``, and
``importlib.import_module`` with a literal or f-string name (an f-string names every module
its literal prefix matches). Within one layer imports are allowed but must not form a cycle.

To place a new module: put it in the package of the lowest layer that holds everything it
imports. A module in no layer fails the test, and so does a module outside every sub-package
(only the facade sits in ``workbench/`` itself); ``dask*``/``distributed*`` are reserved for the
Dask engine.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "workbench"

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("common", "common.*", "stats", "stats.*")),
    ("ingest", ("ingest", "ingest.*", "dask*", "distributed*")),
    ("reduce", ("reduce", "reduce.*")),
    ("analysis", ("analysis", "analysis.*")),
    ("sim", ("sim", "sim.*")),
    ("document", ("document", "document.*")),
    ("presentation", ("report", "report.*")),
    ("commands", ("cli", "cli.*")),
    ("entry", ("__init__", "__main__")),
)


def layer_of(module: str) -> int | None:
    """The index in LAYERS of a module named relative to the package, or None."""
    for i, (_, members) in enumerate(LAYERS):
        for m in members:
            if m == module or (m.endswith("*") and module.startswith(m[:-1])):
                return i
    return None


def modules() -> dict[str, Path]:
    """Every module of the package by its name relative to the package (``report.build``;
    a subpackage's ``__init__`` is the subpackage's name, the package's own is ``__init__``)."""
    out = {}
    for p in sorted(PKG.rglob("*.py")):
        parts = list(p.relative_to(PKG).with_suffix("").parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """``name`` (relative to the package) or the longest known module it lies in."""
    parts = name.split(".")
    while parts:
        cand = ".".join(parts)
        if cand in known:
            return cand
        parts.pop()
    return None


def imports(module: str, path: Path, known: dict[str, Path]) -> list[tuple[str, int]]:
    """``(imported module, line)`` for every workbench import in a module's source."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_pkg = path.name == "__init__.py"
    here = [] if module == "__init__" else module.split(".")
    package = here if is_pkg else here[:-1]  # the package a relative import starts from
    found: list[tuple[str, int]] = []

    def add(name: str, line: int) -> None:
        target = _resolve(name, known)
        if target is not None and target != module:
            found.append((target, line))

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                stem = [*base, *(node.module.split(".") if node.module else [])]
            elif node.module and (node.module == "workbench" or node.module.startswith("workbench.")):
                stem = node.module.split(".")[1:]
            else:
                continue
            for alias in node.names:  # `from . import cli` imports the module cli
                sub = ".".join([*stem, alias.name])
                add(sub if sub in known else ".".join(stem) or "__init__", node.lineno)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "workbench" or alias.name.startswith("workbench."):
                    add(".".join(alias.name.split(".")[1:]) or "__init__", node.lineno)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) \
                == "import_module" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                prefix, exact = arg.value, True
            elif isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
                prefix, exact = str(arg.values[0].value), False
            else:
                continue
            if prefix.startswith("workbench."):
                rel = prefix[len("workbench."):]
                for name in known:
                    if name == rel or (not exact and name.startswith(rel)):
                        add(name, node.lineno)
    return found


KNOWN = modules()


def test_every_module_has_a_layer() -> None:
    unplaced = [m for m in KNOWN if layer_of(m) is None]
    assert not unplaced, (f"modules in no layer: {', '.join(unplaced)}; add each to the lowest layer "
                          "holding what it imports (tests/test_layers.py LAYERS)")


@pytest.mark.parametrize("module", sorted(KNOWN))
def test_no_import_goes_up(module: str) -> None:
    mine = layer_of(module)
    if mine is None:
        pytest.skip("unplaced (test_every_module_has_a_layer fails)")
    up = []
    for target, line in imports(module, KNOWN[module], KNOWN):
        theirs = layer_of(target)
        if theirs is not None and theirs > mine:
            up.append(f"workbench/{KNOWN[module].relative_to(PKG)}:{line}: {module} ({LAYERS[mine][0]}) "
                      f"imports {target} ({LAYERS[theirs][0]})")
    assert not up, "imports that go up a layer:\n" + "\n".join(up)


def test_no_cycle_within_a_layer() -> None:
    graph = {m: {t for t, _ in imports(m, p, KNOWN) if layer_of(t) == layer_of(m)} for m, p in KNOWN.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                cycle = stack[stack.index(t):] + [t]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


def test_the_checker_sees_every_kind_of_import(tmp_path: Path) -> None:
    # the parser itself: a local import, a relative import from a subpackage, an absolute
    # import and an f-string importlib call all count (a checker that saw none would pass)
    src = tmp_path / "probe.py"
    src.write_text("import workbench.cli.main\n"
                   "def f():\n    from ..document import pipeline\n    from ..cli.terminal import safe\n"
                   "    import importlib\n    importlib.import_module(f'workbench.cli.{x}')\n",
                   encoding="utf-8")
    found = {t for t, _ in imports("report.probe", src, KNOWN)}
    assert {"cli.main", "document.pipeline", "cli.terminal", "cli.check", "cli.report", "cli.batch"} <= found
    assert layer_of("ingest.engine_duckdb") == layer_of("ingest.reader")
    assert layer_of("report.tables") < layer_of("cli.terminal") == layer_of("cli.main")


def test_the_tree_shows_the_layers() -> None:
    """Every module sits in the sub-package of its layer: only the facade is in workbench/ itself,
    and every sub-package is one layer's (its modules and its __init__ in the same layer)."""
    flat = [m for m in KNOWN if "." not in m and m != "__init__" and not (PKG / m).is_dir()]
    assert not flat, f"modules outside every sub-package: {flat}"
    for m in KNOWN:
        if "." in m:
            assert layer_of(m) == layer_of(m.split(".")[0]), m
    assert {m.split(".")[0] for m in KNOWN if m != "__init__"} == {
        "common", "stats", "ingest", "reduce", "analysis", "sim", "document", "report", "cli"}


def test_the_statistics_import_nothing_else_of_the_package() -> None:
    """workbench.stats (one module per family, issue 29) is a leaf of the package: its modules
    import one another only, so every estimator can be read and tested alone."""
    outside = [f"{m} imports {t}" for m in KNOWN if m == "stats" or m.startswith("stats.")
               for t, _ in imports(m, KNOWN[m], KNOWN) if t != "stats" and not t.startswith("stats.")]
    assert not outside, outside
    assert {"stats.base", "stats.cr2", "stats.permutation", "stats.bootstrap"} <= set(KNOWN)


def _row_readers(source: str, function: str = "run") -> set[str]:
    """What reads the name ``rows`` in ``function`` of ``source``, from the reduction (the
    ``KeyedCodes`` call) on: a call with ``rows`` anywhere in its arguments (``f(rows)``,
    ``f(table=rows)``, ``f([rows])``) by its callee; a method or attribute of
    ``rows`` itself (``rows.lazy()``, ``rows.height``) as ``rows.NAME``; ``rows`` bound to another
    name (``x = rows``, ``t, u = rows, 1``) as ``=NAME``. A function defined in ``source`` and
    called after the reduction is read as well (its body, whatever line it is on)."""
    tree = ast.parse(source)
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    fn = funcs[function]
    start = min(n.lineno for n in ast.walk(fn)
                if isinstance(n, ast.Call) and ast.unparse(n.func).endswith("KeyedCodes"))

    def names_rows(node: ast.AST) -> bool:
        """``rows`` in an argument, not inside a call of its own (that call is the reader:
        ``f(g(rows))`` is ``g``'s, ``f(rows.lazy())`` is ``rows.lazy``)."""
        if isinstance(node, ast.Name):
            return node.id == "rows"
        if isinstance(node, ast.Call):
            return False
        return any(names_rows(c) for c in ast.iter_child_nodes(node))

    out: set[str] = set()
    seen: set[str] = set()

    def scan(body: ast.AST, after: int) -> None:
        for node in ast.walk(body):
            if getattr(node, "lineno", after) < after:
                continue
            if isinstance(node, ast.Call):
                callee = ast.unparse(node.func)
                if any(names_rows(a) for a in [*node.args, *(k.value for k in node.keywords)]):
                    out.add(callee)
                if callee in funcs and callee not in seen and callee != function:
                    seen.add(callee)
                    scan(funcs[callee], 0)
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "rows":
                out.add("rows." + node.attr)
            elif isinstance(node, ast.Assign | ast.AnnAssign | ast.NamedExpr) and node.value is not None:
                values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
                if any(isinstance(v, ast.Name) and v.id == "rows" for v in values):
                    targets = (node.targets if isinstance(node, ast.Assign) else [node.target])
                    out.update("=" + ast.unparse(t) for t in targets)

    scan(fn, start)
    return out


def test_every_stage_that_receives_the_row_table_after_the_reduction_is_listed() -> None:
    """A ratchet on issue 29's "no stage after the reduction receives the row table": the calls
    of ``pipeline.run`` that hand it ``rows`` after the coded view is built are exactly
    ``pipeline.ROW_READERS`` (a new reader fails; so does an entry whose stage moved off the
    rows, until its line is deleted)."""
    from workbench.document import pipeline

    source = (PKG / "document" / "pipeline.py").read_text(encoding="utf-8")
    found = _row_readers(source)
    assert not {f for f in found if f.startswith("=")}, "run() binds the row table to another name"
    assert found - set(pipeline.ROW_READERS) == set(), "a stage receives the row table: list it or move it"
    assert set(pipeline.ROW_READERS) - found == set(), "a listed reader no longer receives the rows"


def test_the_row_reader_guard_sees_calls_keywords_and_aliases() -> None:
    source = textwrap.dedent('''
        def helper(x):
            return deep(rows)

        def run(rows, cfg):
            early(rows)
            view = reduce_codes.KeyedCodes(rows, cfg)
            stage_a(rows, cfg)
            mod.stage_b(cfg, table=rows)
            x = [nested(rows) for _ in range(2)]
            listed([rows])
            lazy_arg(rows.select("x"))
            n = rows.height
            other = rows
            t, u = rows, 1
            helper(1)
            stage_c(view)
    ''')
    assert _row_readers(source) == {"reduce_codes.KeyedCodes", "stage_a", "mod.stage_b", "nested", "listed",
                                    "rows.select", "rows.height", "=other", "=(t, u)", "deep"}


def test_the_terminal_summary_does_not_import_matplotlib() -> None:
    """``workbench analyze`` prints the report's own sentences (self-preference, judge versus
    human) from ``workbench.report.prose``; the report package's names are imported when first
    asked for, so the terminal does not pay for matplotlib and the HTML export (0.37 s of every
    run at 1M generated rows, measured 2026-12-08). A fresh interpreter tells."""
    code = ("import sys, workbench.cli.terminal as t\n"
            "t.judges_text({'self_preference': {'why': 'no_writer'}, 'human': {}})\n"
            "import workbench.report.prose\n"
            "print('matplotlib' in sys.modules)\n"
            "import workbench.report as r, workbench.report.build\n"
            "print(callable(r.build))\n"  # the function, not its module of the same name
            "r.figure\n"
            "r.export.WorkbenchExporter, r.plots.VALID\n"  # submodules as attributes, as before
            "print('matplotlib' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True", "True"]
