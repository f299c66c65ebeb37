"""Clusters: the unit of independence of every interval and test, apart from the duplicate key.

A row's ``scenario`` is the item key: what pairing, matching and duplicate detection use. Its
``cluster`` (config ``cluster:``, default the scenario key itself) is the unit whose
outcomes may be correlated: every clustered statistic (CR1 standard errors, the joint cluster
bootstrap, sign-flip tests, clustered rates, ICC and design effects, power planning) treats
clusters, not scenarios, as independent. MT-Bench's scenario is (question_id, turn) while the
two turns of one question share the question: its cluster is ``question_id``.

Each scenario sits in exactly one cluster. A cluster named by parts of the (composite)
scenario key (``cluster: question_id`` with ``keys.scenario: [question_id, turn]``) is read
from the scenario key, so the two cannot disagree. A cluster read from fields of its own is
checked: a keyed row without it, or a scenario whose rows name two clusters, is an
:class:`~workbench.common.errors.InputError` naming the file, line and field (exit code 2): a
scenario split over clusters has no unit of independence, and no interval would be right.
Planned rows with no line (``missing_planned``) take their scenario's cluster; a planned
scenario no line holds is a cluster of its own.
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl

from workbench.common.config import CLUSTER_FIELD_PREFIX, Config
from workbench.common.errors import InputError
from workbench.ingest import selection
from workbench.ingest.engine import composite_key

COLUMN = "cluster"
"""The row table's cluster label column (text, like the key columns)."""


def split_key(key: str) -> list[str]:
    """The parts of a composite key (:func:`workbench.ingest.engine.composite_key`), back."""
    if key.startswith("["):
        parts = json.loads(key)
        if isinstance(parts, list) and all(isinstance(p, str) for p in parts):
            return parts
    return key.split(":")


def _from_scenario(scen: pl.Series, parts: tuple[int, ...], width: int) -> pl.Series:
    """Cluster labels from scenario keys: the selected parts of each (composite) key, joined
    as a composite key (one part: the part itself). Each distinct scenario is decoded once."""
    uniq = scen.unique().drop_nulls()  # the distinct values first: no null-free copy of the column
    if width == 1:
        mapping = {s: s for s in uniq.to_list()}
    else:
        mapping = {}
        for s in uniq.to_list():
            p = split_key(s)
            if len(p) != width:  # cannot happen for keys the ingest built; keep it whole
                mapping[s] = s
                continue
            chosen = [p[i] for i in parts]
            mapping[s] = chosen[0] if len(chosen) == 1 else composite_key(chosen)
    return scen.replace_strict(mapping, default=None, return_dtype=pl.String)


def _field_label(cfg: Config) -> str:
    return cfg.cluster_name


def assign(rows: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """The rows with their ``cluster`` label column (see the module text); the hidden
    ``x___cluster*`` columns a cluster of its own fields is read into are dropped.

    Raises :class:`InputError` (file, line, field) for a keyed line without its cluster
    field and for a scenario whose lines name two clusters.
    """
    if "scenario" not in rows.columns:
        return rows
    if COLUMN in rows.columns:
        return _fill_planned(rows, cfg)
    if cfg.cluster is None:
        return rows.with_columns(pl.col("scenario").cast(pl.String).alias(COLUMN))
    parts = cfg.cluster_parts
    if parts is not None:
        return rows.with_columns(_parts_of(rows["scenario"].cast(pl.String), cfg).alias(COLUMN))
    names = [f"x_{CLUSTER_FIELD_PREFIX}{i}" for i in range(len(cfg.cluster))]
    present = [c for c in names if c in rows.columns]
    if len(present) != len(names):  # rows not read by this config (a test's table): the scenario
        return rows.with_columns(pl.col("scenario").cast(pl.String).alias(COLUMN)).drop(present)
    label = (pl.col(names[0]) if len(names) == 1 else
             pl.when(pl.all_horizontal([pl.col(c).is_not_null() for c in names]))
             .then(pl.concat_list(names).map_elements(lambda xs: composite_key(list(xs)),
                                                      return_dtype=pl.String)))
    rows = rows.with_columns(label.alias(COLUMN)).drop(names)
    read = selection.keyed_read()
    lacking = rows.lazy().filter(read & pl.col(COLUMN).is_null()).select("file", "line").head(1).collect()
    if lacking.height:
        f, ln = lacking.row(0)
        n = int(rows.select((read & pl.col(COLUMN).is_null()).fill_null(False).sum()).item())
        raise InputError(str(f), f"the cluster field is missing or null on a keyed line ({n} such "
                         "line(s)); every judgment needs its cluster (config cluster:)",
                         line=None if ln is None else int(ln), field=_field_label(cfg))
    per = (rows.lazy().filter(read).group_by("scenario")
           .agg(pl.col(COLUMN).n_unique().alias("k")).filter(pl.col("k") > 1).collect())
    if per.height:
        scen = sorted(per["scenario"].to_list())[0]
        first = rows.lazy().filter(read & (pl.col("scenario") == scen)).select("file", "line", COLUMN).collect()
        c0 = first[COLUMN][0]
        other = first.filter(pl.col(COLUMN) != c0).row(0, named=True)
        raise InputError(str(other["file"]), f"scenario {scen!r} is in cluster {other[COLUMN]!r} here but "
                         f"in cluster {c0!r} at {first['file'][0]}:{first['line'][0]}; each scenario must "
                         f"sit inside one cluster ({per.height} scenario(s) span several)",
                         line=None if other["line"] is None else int(other["line"]), field=_field_label(cfg))
    return _fill_planned(rows, cfg)


def _parts_of(scen: pl.Series, cfg: Config) -> pl.Series:
    parts = cfg.cluster_parts
    assert parts is not None
    return _from_scenario(scen, parts, len(cfg.keys["scenario"] or ()))


def _fill_planned(rows: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """Rows without a cluster (planned judgments with no line, appended by the plan): the
    cluster their scenario's lines name, else the one their scenario key gives (its parts, or
    the scenario itself: a planned scenario no line holds is a cluster of its own)."""
    need = rows.select((pl.col(COLUMN).is_null() & pl.col("scenario").is_not_null()).alias("n")).to_series()
    if not bool(need.any()):
        return rows
    scen = rows["scenario"].cast(pl.String)
    if cfg.cluster is None:
        guess = scen
    elif cfg.cluster_parts is not None:
        guess = _parts_of(scen, cfg)
    else:
        known = (rows.lazy().filter(pl.col(COLUMN).is_not_null()).select("scenario", COLUMN)
                 .unique(subset="scenario", keep="first").collect())
        fill = dict(zip(known["scenario"].cast(pl.String).to_list(), known[COLUMN].to_list(), strict=True))
        guess = scen.replace_strict(fill, default=scen, return_dtype=pl.String)
    return rows.with_columns(pl.when(pl.lit(need)).then(pl.lit(guess)).otherwise(pl.col(COLUMN)).alias(COLUMN))


def column(rows: pl.DataFrame) -> str:
    """The column holding the rows' cluster labels: ``cluster`` when the table has it (rows
    from :func:`assign`), else ``scenario`` (a table built without it: scenario = cluster)."""
    return COLUMN if COLUMN in rows.columns else "scenario"


def cluster_of(scenario_codes: np.ndarray, cluster_codes: np.ndarray, n_scenarios: int) -> np.ndarray:
    """Per scenario code 0..n-1, its cluster code, from rows' aligned (scenario, cluster)
    codes (each scenario in one cluster: :func:`assign` checked it); -1 for a code no row has."""
    out = np.full(n_scenarios, -1, dtype=np.int64)
    if scenario_codes.size:
        out[np.asarray(scenario_codes, dtype=np.int64)] = np.asarray(cluster_codes, dtype=np.int64)
    return out


def record(cfg: Config, scenarios: int, clusters: int) -> dict[str, object]:
    """What results.json records about the clustering (``clustering``)."""
    return {
        "unit": cfg.cluster_name,
        "definition": cfg.cluster_text if cfg.cluster is not None else None,
        "from": ("scenario key" if cfg.cluster is None else
                 "parts of the scenario key" if cfg.cluster_parts is not None else "fields"),
        "scenarios": scenarios,
        "clusters": clusters,
    }
