"""Reanalysis workbench for LLM-as-a-judge evaluations.

Every input line lands in one ledger bucket, a missing score is never a number, and every
mean travels with its valid n and an interval. The same functions back the CLI and the
report notebook::

    import workbench as wb
    cfg = wb.load_config("data/example/config.yaml")
    a = wb.run(["data/example/judge_rows.jsonl"], cfg, plan="data/example/plan.csv")
    a.frame("census").to_pandas()
"""

from .api import (
    census_table,
    claims,
    contrasts,
    judge_offsets,
    load_rows,
    published_check,
    scorecard_table,
)
from .config import Config, load_config
from .errors import ConfigError, InputError, WorkbenchError
from .ingest import BUCKETS, FIELD_STATUSES, read_rows
from .ledger import apply_plan, count_ledger, read_plan
from .pipeline import Analysis, load, run

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
