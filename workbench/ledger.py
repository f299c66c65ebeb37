"""Ledger: the plan (what should exist) and the count of every line in exactly one bucket."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from . import selection
from .config import KEY_FIELDS
from .errors import InputError
from .ingest import BUCKETS

LEDGER_KEYS: tuple[str, ...] = ("lines", *BUCKETS, "missing_planned")


def read_plan(path: str) -> pl.DataFrame:
    """Read a plan CSV (columns scenario, variant, trial, judge; one row per planned judgment)."""
    p = Path(path)
    if not p.is_file():
        raise InputError(path, "plan file not found")
    try:
        plan = pl.read_csv(p, infer_schema=False)
    except (pl.exceptions.PolarsError, OSError) as exc:
        # polars messages run over several lines (hints, context); the CLI prints one line
        first = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        raise InputError(path, f"cannot read plan CSV: {first}") from exc
    missing = [k for k in KEY_FIELDS if k not in plan.columns]
    if missing:
        raise InputError(path, f"plan is missing column(s) {', '.join(missing)}; need {', '.join(KEY_FIELDS)}")
    plan = plan.select(KEY_FIELDS)
    nulls = plan.with_row_index("row").filter(pl.any_horizontal(pl.col(KEY_FIELDS).is_null()))
    if nulls.height:
        row = nulls.row(0, named=True)
        raise InputError(path, "a planned judgment has an empty key field", line=int(row["row"]) + 2)
    return plan.unique(maintain_order=True)


def complete_plan(rows: pl.DataFrame) -> pl.DataFrame:
    """The plan ``--plan complete`` means: every observed scenario x variant x trial x judge."""
    keyed = rows.lazy().filter(selection.keyed_read()).select(KEY_FIELDS).collect()
    out = None
    for k in KEY_FIELDS:
        col = keyed.select(pl.col(k).unique().sort())
        out = col if out is None else out.join(col, how="cross")
    assert out is not None
    return out


def apply_plan(rows: pl.DataFrame, plan: pl.DataFrame | None) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Append one ``missing_planned`` row per planned judgment with no row at all.

    Returns ``(rows, info)`` where info has ``planned`` (judgments in the plan) and
    ``unplanned`` (rows whose key the plan does not list: counted beside the ledger).
    Without a plan, rows are returned unchanged and info values are null.
    """
    if plan is None:
        return rows, {"planned": None, "unplanned": None}
    keyed = rows.lazy().filter(selection.keyed()).select(KEY_FIELDS).unique().collect()
    missing = plan.join(keyed, on=list(KEY_FIELDS), how="anti")
    unplanned = rows.lazy().filter(selection.keyed_once()).select(KEY_FIELDS).join(
        plan.lazy(), on=list(KEY_FIELDS), how="anti").select(pl.len()).collect().item()
    extra = missing.with_columns(
        pl.lit("missing_planned").alias("bucket"),
        pl.lit("planned judgment with no row in any input").alias("reason"),
    )
    out = pl.concat([rows, extra], how="diagonal_relaxed")
    return out, {"planned": plan.height, "unplanned": unplanned}


def count_ledger(rows: pl.DataFrame, planned: bool) -> dict[str, int | None]:
    """Count lines per bucket. ``lines`` equals the sum of the line buckets (checked)."""
    counts = dict(rows.group_by("bucket").len().iter_rows())
    out: dict[str, int | None] = {b: int(counts.get(b, 0)) for b in BUCKETS}
    out["lines"] = int(rows.select(pl.col("line").is_not_null().sum()).item())
    out["missing_planned"] = int(counts.get("missing_planned", 0)) if planned else None
    if sum(int(out[b]) for b in BUCKETS) != out["lines"]:  # type: ignore[arg-type]
        raise RuntimeError("ledger does not add up: a line landed in no bucket or in two")
    return {k: out[k] for k in LEDGER_KEYS}
