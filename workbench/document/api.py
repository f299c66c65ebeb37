"""The analyst's API: each stage as one call returning a polars DataFrame.

The census and scorecard calls are named ``census_table`` and ``scorecard_table`` so that
they do not shadow the submodules ``workbench.analysis.census`` and ``workbench.analysis.scorecard``.

These are the functions the report notebook calls; ``.to_pandas()`` on any result gives
what analysts hold. ``rows`` is the row table from :func:`load_rows` (or ``Analysis.rows``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from workbench.analysis.census import census as _census_table
from workbench.analysis.paired import contrasts as _contrasts
from workbench.analysis.paired import judge_offsets as _judge_offsets
from workbench.analysis.scorecard import scorecard as _scorecard_table
from workbench.common.config import Config, load_config
from workbench.document.pipeline import load


def load_rows(inputs: Sequence[str | Path] | str | Path, config: Config | str | Path | None = None,
              preset: str | None = None,
              plan: str | None = None) -> tuple[pl.DataFrame, Config]:
    """Read inputs into the row table: ``(rows, cfg)``; ``config`` is a Config or a YAML path."""
    cfg = config if isinstance(config, Config) else load_config(None if config is None else str(config), preset)
    paths = [str(inputs)] if isinstance(inputs, str | Path) else [str(i) for i in inputs]
    rows, _, _ = load(paths, cfg, plan)
    return rows, cfg


def census_table(rows: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """Null census per judge x variant (see :func:`workbench.analysis.census.census`)."""
    return _census_table(rows, cfg)


def scorecard_table(rows: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """Scorecard cells (see :func:`workbench.analysis.scorecard.scorecard`)."""
    return _scorecard_table(rows, cfg)


def judge_offsets(rows: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """Paired judge offsets and agreement (see :func:`workbench.analysis.paired.judge_offsets`)."""
    return _judge_offsets(rows, cfg)


def contrasts(rows: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """Variant contrasts, unpaired and paired, with power (see :func:`workbench.analysis.paired.contrasts`)."""
    return _contrasts(rows, cfg)


def claims(rows: pl.DataFrame, cfg: Config, claims_file: str) -> pl.DataFrame:
    """Each headline claim of a claims YAML checked against the rows: verdict, interval, bounds."""
    from workbench.analysis.check import check_claims, read_claims

    return check_claims(rows, cfg, read_claims(claims_file))


def published_check(rows: pl.DataFrame, cfg: Config, published_file: str) -> pl.DataFrame:
    """Each cell of a published scorecard CSV under every aggregation rule: which reproduce it."""
    from workbench.analysis.check import published_check as _published_check
    from workbench.analysis.check import read_published

    return _published_check(rows, cfg, read_published(published_file, cfg), source=published_file)
