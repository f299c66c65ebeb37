"""The whole run in one place: inputs + config -> every stage -> the results document.

The CLI (``workbench analyze``/``check``/``report``) and the notebook both call
:func:`run`, so a papermill report and a terminal run cannot disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import polars as pl

from . import api, ingest, ledger, paired
from .census import census as census_table
from .census import census_margins, missingness_tests, scale_checks
from .config import Config
from .results import SCHEMA_VERSION
from .scorecard import check_names, consistency, flag_rates, gate, pass_rates
from .scorecard import scorecard as scorecard_table


@dataclass
class Analysis:
    """Everything one run computed: the row table, stage frames and the results document."""

    config: Config
    rows: pl.DataFrame
    sources: list[ingest.SourceFile]
    doc: dict[str, Any]
    frames: dict[str, pl.DataFrame] = field(default_factory=dict)

    def frame(self, name: str) -> pl.DataFrame:
        """A stage's table by name (``census``, ``scorecard``, ``judge_offsets``...)."""
        return self.frames[name]


def _version() -> str:
    try:
        return metadata.version("workbench")
    except metadata.PackageNotFoundError:  # running from a source tree
        return "0+unknown"


def load(
    inputs: Sequence[str], cfg: Config, plan: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> tuple[pl.DataFrame, list[ingest.SourceFile], dict[str, Any]]:
    """Read inputs and apply the plan: ``(rows, sources, plan_info)``.

    ``plan`` is a CSV path, ``"complete"`` (every observed scenario x variant x trial x
    judge) or None.
    """
    rows, sources = ingest.read_rows(inputs, cfg, progress=progress)
    plan_df = None
    if plan == "complete":
        plan_df = ledger.complete_plan(rows)
    elif plan is not None:
        plan_df = ledger.read_plan(plan)
    rows, info = ledger.apply_plan(rows, plan_df)
    info["mode"] = None if plan is None else ("complete" if plan == "complete" else "file")
    return rows, sources, info


def run(
    inputs: Sequence[str], cfg: Config, plan: str | None = None,
    published: str | None = None, claims: str | None = None,
    progress: Callable[[int], None] | None = None,
    on_stage: Callable[[str], None] | None = None,
) -> Analysis:
    """Run every stage and return the :class:`Analysis` (nothing is written to disk).

    ``progress(n)`` is called as lines are read; ``on_stage(text)`` as each later stage
    starts (the CLI shows both on a terminal, so a long run is never silent).
    """
    stage = on_stage or (lambda text: None)
    rows, sources, plan_info = load(inputs, cfg, plan, progress)
    stage(f"{rows.height} rows read; census")
    config_warnings = check_names(rows, cfg)
    hl = cfg.headline
    led = ledger.count_ledger(rows, planned=plan is not None)
    cen = census_table(rows, cfg)
    margins = census_margins(rows, cfg)
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "workbench_version": _version(),
        "inputs": [{"path": s.path, "sha256": s.sha256, "lines": s.lines} for s in sources],
        "config": cfg.to_dict(),
        "config_sources": list(cfg.sources),
        "config_warnings": config_warnings,
        "plan": plan_info,
        "ledger": led,
        "ledger_notes": {
            "from_string": int(rows.filter((pl.col("bucket") == "valid") & pl.col(f"{hl}__from_string")).height),
            "sentinel": int(rows.filter((pl.col(f"{hl}__status") == "sentinel")
                                        & (pl.col("bucket") != "duplicate")).height),
            "unplanned": plan_info.get("unplanned"),
        },
        "malformed_lines": rows.filter(pl.col("bucket") == "malformed").select("file", "line", "reason").to_dicts(),
        "census": _census_records(cen, cfg),
        "census_margins": _census_records(margins, cfg),
        "missingness_tests": missingness_tests(rows, cfg),
        "scale_checks": scale_checks(rows, cfg),
    }
    stage(f"scorecard (cluster bootstrap, {cfg.resamples} resamples per cell)")
    card = scorecard_table(rows, cfg)
    flags = flag_rates(rows, cfg)
    passes = pass_rates(rows, cfg)
    cons = consistency(rows, cfg)
    doc["value_unit"] = cfg.value_unit
    doc["scorecard"] = card.to_dicts()
    doc["flag_rates"] = flags.to_dicts()
    doc["pass_rates"] = passes.to_dicts()
    doc["consistency"] = cons.to_dicts()
    doc["gate"] = gate(card, cfg, passes)
    stage("judge offsets")
    doc["judge_offsets"] = paired.judge_offsets(rows, cfg)
    stage("variant contrasts")
    doc["contrasts"] = paired.contrasts(rows, cfg)
    paired.contrast_confounding(doc["contrasts"], doc["census"], doc["census_margins"], cfg, rows)
    # headline check (workbench.check): a published card and/or claims, when given
    from . import check

    published_checks = claims_checked = None
    if published is not None or claims is not None:
        stage("headline check")
    if published is not None:
        published_checks = check.published_check(
            rows, cfg, check.read_published(published, cfg), source=published)
        doc["published_check"] = published_checks
        doc["published_summary"] = check.published_summary(published_checks)
    if claims is not None:
        claims_checked = check.check_claims(rows, cfg, check.read_claims(claims))
        doc["claims"] = claims_checked
    doc["repetition"] = paired.repetition_consistency(rows, cfg)
    frames = {"census": cen, "census_margins": margins, "scorecard": card, "flag_rates": flags,
              "pass_rates": passes, "consistency": cons,
              "judge_offsets": api._frame(doc["judge_offsets"]), "contrasts": api._frame(doc["contrasts"])}
    if published_checks is not None:
        frames["published_check"] = check.published_frame(published_checks)
    if claims_checked is not None:
        frames["claims"] = check.claims_frame(claims_checked)
    return Analysis(config=cfg, rows=rows, sources=sources, doc=doc, frames=frames)


def _census_records(df: pl.DataFrame, cfg: Config) -> list[dict[str, Any]]:
    out = []
    for rec in df.to_dicts():
        nulls = {n: rec.pop(f"nulls__{n}") for n in cfg.score_names}
        rec["field_nulls"] = nulls
        out.append(rec)
    return out
