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
    "census_table": "api",
    "claims": "api",
    "contrasts": "api",
    "judge_offsets": "api",
    "load_rows": "api",
    "published_check": "api",
    "scorecard_table": "api",
    "Config": "config",
    "load_config": "config",
    "ConfigError": "errors",
    "InputError": "errors",
    "WorkbenchError": "errors",
    "BUCKETS": "ingest",
    "FIELD_STATUSES": "ingest",
    "read_rows": "ingest",
    "apply_plan": "ledger",
    "count_ledger": "ledger",
    "read_plan": "ledger",
    "Analysis": "pipeline",
    "load": "pipeline",
    "run": "pipeline",
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
    from .api import (  # noqa: F401
        census_table,
        claims,
        contrasts,
        judge_offsets,
        load_rows,
        published_check,
        scorecard_table,
    )
    from .config import Config, load_config  # noqa: F401
    from .errors import ConfigError, InputError, WorkbenchError  # noqa: F401
    from .ingest import BUCKETS, FIELD_STATUSES, read_rows  # noqa: F401
    from .ledger import apply_plan, count_ledger, read_plan  # noqa: F401
    from .pipeline import Analysis, load, run  # noqa: F401
