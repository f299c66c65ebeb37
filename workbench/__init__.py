"""Reanalysis workbench for LLM-as-a-judge evaluations.

Every input line lands in one ledger bucket, a missing score is never a number, and every
mean travels with its valid n and an interval. The same functions back the CLI and the
report notebook::

    import workbench as wb
    cfg = wb.load_config("data/example/config.yaml")
    a = wb.run(["data/example/judge_rows.jsonl"], cfg, plan="data/example/plan.csv")
    a.frame("census").to_pandas()

The names below are imported on first use (PEP 562), so ``import workbench`` and the
``workbench --help`` / ``--version`` / ``preset list`` commands do not load polars, numpy,
scipy or duckdb; ``wb.stats`` and the other submodules are imported on first use too.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: public name -> the submodule that defines it
_EXPORTS = {
    "census_table": "document.api",
    "claims": "document.api",
    "contrasts": "document.api",
    "judge_offsets": "document.api",
    "load_rows": "document.api",
    "published_check": "document.api",
    "scorecard_table": "document.api",
    "Config": "common.config",
    "load_config": "common.config",
    "ConfigError": "common.errors",
    "InputError": "common.errors",
    "WorkbenchError": "common.errors",
    "BUCKETS": "ingest.reader",
    "FIELD_STATUSES": "ingest.reader",
    "read_rows": "ingest.reader",
    "apply_plan": "ingest.ledger",
    "count_ledger": "ingest.ledger",
    "read_plan": "ingest.ledger",
    "Analysis": "document.pipeline",
    "load": "document.pipeline",
    "run": "document.pipeline",
}

#: the flat submodule names of earlier releases -> where each module lives now, so ``wb.census``
#: and the like keep working (``wb.ingest``, ``wb.reduce``,
#: ``wb.document`` and ``wb.cli`` are now packages)
_MOVED = {
    "api": "document.api",
    "board": "analysis.board",
    "calibrate": "sim.calibrate",
    "calibrate_grid": "sim.calibrate_grid",
    "calibrate_judges": "sim.calibrate_judges",
    "census": "analysis.census",
    "check": "analysis.check",
    "cliargs": "document.cliargs",
    "clusters": "ingest.clusters",
    "cmd_batch": "cli.batch",
    "cmd_check": "cli.check",
    "cmd_report": "cli.report",
    "config": "common.config",
    "detect": "ingest.detect",
    "engine": "ingest.engine",
    "errors": "common.errors",
    "example": "sim.example",
    "execute": "ingest.execute",
    "files": "common.files",
    "formats": "ingest.formats",
    "harness": "analysis.harness",
    "human": "analysis.human",
    "ingest_spill": "ingest.spill",
    "ledger": "ingest.ledger",
    "length": "analysis.length",
    "methods": "common.methods",
    "names": "analysis.names",
    "numbers": "common.numbers",
    "outdir": "common.outdir",
    "paired": "analysis.paired",
    "pipeline": "document.pipeline",
    "plots": "report.plots",
    "provenance": "analysis.provenance",
    "ranks": "analysis.ranks",
    "reduce_codes": "reduce.codes",
    "results": "common.results",
    "schemas": "common.schemas",
    "scorecard": "analysis.scorecard",
    "selection": "ingest.selection",
    "selfpref": "analysis.selfpref",
    "selftest": "cli.selftest",
    "synth": "sim.synth",
    "tabular": "ingest.tabular",
    "terminal": "cli.terminal",
    "text": "common.text",
    "vocab": "common.vocab",
}

__all__ = [
    "BUCKETS",
    "FIELD_STATUSES",
    "Analysis",
    "Config",
    "ConfigError",
    "InputError",
    "WorkbenchError",
    "apply_plan",
    "census_table",
    "claims",
    "contrasts",
    "judge_offsets",
    "load_rows",
    "published_check",
    "scorecard_table",
    "count_ledger",
    "load",
    "load_config",
    "read_plan",
    "read_rows",
    "run",
]


def __getattr__(name: str) -> Any:
    """``wb.run``, ``wb.Config``...: imported from their submodule on first use; ``wb.stats``
    and the other submodules likewise."""
    module = _EXPORTS.get(name)
    if module is None and name in _MOVED:
        value = importlib.import_module(f".{_MOVED[name]}", __name__)
        globals()[name] = value
        return value
    if module is not None:
        value = getattr(importlib.import_module(f".{module}", __name__), name)
        globals()[name] = value
        return value
    if not name.startswith("_"):
        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # what type checkers and IDEs see: the eager imports
    from .common.config import Config, load_config  # noqa: F401
    from .common.errors import ConfigError, InputError, WorkbenchError  # noqa: F401
    from .document.api import (  # noqa: F401
        census_table,
        claims,
        contrasts,
        judge_offsets,
        load_rows,
        published_check,
        scorecard_table,
    )
    from .document.pipeline import Analysis, load, run  # noqa: F401
    from .ingest.ledger import apply_plan, count_ledger, read_plan  # noqa: F401
    from .ingest.reader import BUCKETS, FIELD_STATUSES, read_rows  # noqa: F401
