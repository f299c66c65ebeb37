"""Ledger: the plan (what should exist) and the count of every line in exactly one bucket."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from workbench.common.config import KEY_FIELDS
from workbench.common.errors import InputError
from workbench.ingest import selection
from workbench.ingest.reader import BUCKETS

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


def _examples(values: list[str], n: int = 3) -> str:
    shown = ", ".join(repr(v) for v in values[:n])
    more = f", ... ({len(values)} distinct)" if len(values) > n else ""
    return shown + more


def check_plan_keys(rows: pl.DataFrame, plan: pl.DataFrame, where: str, cfg: Any = None,
                    notes: list[str] | None = None) -> None:
    """Refuse a plan whose keys are not the rows' keys (:class:`InputError`, exit 2).

    A key field the plan and the rows both hold but share no value of (the plan's
    ``81`` against the rows' ``81:1``, a question list for rows keyed by question and turn)
    would turn every planned judgment into ``missing_planned`` and every row into an
    unplanned one: that is a plan in another key structure, not missing data. The message
    shows a few values of each side (and the rows' scenario key when it is composite).
    """
    keyed = rows.lazy().filter(selection.keyed()).select(KEY_FIELDS).unique().collect()
    if not keyed.height or not plan.height:
        return
    for k in KEY_FIELDS:
        in_plan = [v for v in plan[k].unique(maintain_order=True).to_list() if v is not None]
        in_rows = [v for v in keyed[k].unique(maintain_order=True).to_list() if v is not None]
        if not in_plan or not in_rows or set(in_plan) & set(in_rows):
            continue
        shape = ""
        paths = (getattr(cfg, "keys", None) or {}).get(k) if cfg is not None else None
        if paths and len(paths) > 1:
            names = [".".join(map(str, p)) for p in paths]
            shape = f"; the rows' {k} is composite [{', '.join(names)}] (spelled {':'.join(names)})"
        extra = "".join(f"; {n}" for n in (notes or []))
        raise InputError(where, (
            f"plan keys do not match the rows' keys: no planned {k} is in the rows "
            f"(plan {k}: {_examples(sorted(in_plan, key=_natural))}; rows {k}: "
            f"{_examples(sorted(in_rows, key=_natural))}){shape}{extra}; refused rather than "
            f"counted as {plan.height} missing judgments"))


def _natural(v: str) -> tuple[Any, ...]:
    import re

    return tuple((0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", str(v)) if t)


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
