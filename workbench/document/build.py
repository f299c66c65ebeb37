"""The results document, built in one place from the stage tables.

Every stage hands on a typed table (:mod:`workbench.common.schemas`) or a small typed result
holding tables (:class:`workbench.analysis.ranks.RankIntervals`); no stage returns the records a
later stage turns back into a frame. :func:`build` is the one place those tables become
the JSON-ready document that :mod:`workbench.common.results` writes (``results.json``) and the
presentation reads (terminal, report, plots). A table's records are its rows
(:func:`workbench.common.schemas.records`): ``List``/``Struct`` columns as lists and objects, a map
column (``Schema.maps``: ``diff_counts``, a published cell's ``rules``) as an object keyed by
its key field's text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from workbench.analysis import board, check
from workbench.analysis.paired import Repetition
from workbench.analysis.ranks import RankIntervals
from workbench.common import methods, schemas


def census_records(table: pl.DataFrame, fields: Sequence[str]) -> list[dict[str, Any]]:
    """The census (or its margins) as results.json records: the ``nulls__{field}`` columns as
    one ``field_nulls`` object per record, ``{field: count}`` in the config's field order."""
    out = []
    for rec in table.to_dicts():
        rec["field_nulls"] = {f: rec.pop(f"nulls__{f}") for f in fields}
        out.append(rec)
    return out


def ranks_section(ranks: RankIntervals) -> dict[str, Any]:
    """results.json ``ranks``: what the intervals rest on and one record per cell."""
    return {
        "field": ranks.field, "basis": ranks.basis, "alpha": ranks.alpha, "measured": ranks.measured,
        "pairs_possible": ranks.pairs_possible, "pairs_compared": ranks.pairs_compared,
        "complete": ranks.complete, "cells": schemas.records(ranks.cells, schemas.RANKS),
    }


def repetition_section(rep: Repetition) -> dict[str, Any]:
    """results.json ``repetition``: the per-variant ICCs, the single-trial slices and their
    count of rankings that differ from the reference."""
    return {"per_variant": schemas.records(rep.per_variant), "reference_ranking": rep.reference_ranking,
            "slices": schemas.records(rep.slices), "inversions": rep.inversions, "n_slices": rep.slices.height,
            "order_statistic_n_95_95": rep.order_statistic_n_95_95}


def build(*, head: dict[str, Any], fields: Sequence[str],
          malformed_lines: pl.DataFrame, census: pl.DataFrame, census_margins: pl.DataFrame,
          missingness_tests: pl.DataFrame, scale_checks: pl.DataFrame,
          provenance_checks: pl.DataFrame,
          value_unit: Any, value_range: Sequence[float],
          scorecard: pl.DataFrame, flag_rates: pl.DataFrame, pass_rates: pl.DataFrame,
          consistency: pl.DataFrame, gate: dict[str, Any], contrast_selection: dict[str, Any],
          judge_offsets: pl.DataFrame, contrasts: pl.DataFrame, bootstrap: dict[str, Any],
          ranks: RankIntervals,
          published_check: pl.DataFrame | None = None,
          claims: pl.DataFrame | None = None,
          repetition: Repetition,
          harness: dict[str, Any] | None = None,
          length: dict[str, Any] | None = None,
          self_preference: dict[str, Any] | None = None,
          human: dict[str, Any] | None = None) -> dict[str, Any]:
    """The results document of a run from its stage tables.

    ``head``: what the run records about itself before any stage (schema and workbench
    versions, inputs, config and its sources and warnings, name warnings, plan, ledger and
    its notes), in that order; ``fields`` the config's score names. The keys follow in the
    order of the stages; an optional section (``published_check``, ``claims``, ``harness``)
    only when its stage ran; ``length`` (:mod:`workbench.analysis.length`) when rows carry both answers' text.
    ``self_preference`` (:mod:`workbench.analysis.selfpref`) is always a
    section: without a ``writer:`` it says why there is no estimate (``why: no_writer``);
    so is ``human`` (:mod:`workbench.analysis.human`; without human labels ``why: no_human_labels``).
    """
    doc: dict[str, Any] = dict(head)
    doc["malformed_lines"] = malformed_lines.to_dicts()
    doc["census"] = census_records(census, fields)
    doc["census_margins"] = census_records(census_margins, fields)
    doc["missingness_tests"] = schemas.records(missingness_tests, schemas.MISSINGNESS_TESTS)
    doc["scale_checks"] = schemas.records(scale_checks, schemas.SCALE_CHECKS)
    doc["provenance_checks"] = schemas.records(provenance_checks, schemas.PROVENANCE_CHECKS)
    doc["value_unit"] = value_unit
    doc["value_range"] = list(value_range)
    doc["scorecard"] = scorecard.to_dicts()
    doc["flag_rates"] = flag_rates.to_dicts()
    doc["pass_rates"] = pass_rates.to_dicts()
    doc["consistency"] = consistency.to_dicts()
    doc["gate"] = gate
    doc["contrast_selection"] = contrast_selection
    doc["judge_offsets"] = schemas.records(judge_offsets, schemas.JUDGE_OFFSETS)
    doc["contrasts"] = schemas.records(contrasts, schemas.CONTRASTS)
    doc["bootstrap"] = bootstrap
    doc["ranks"] = ranks_section(ranks)
    if published_check is not None:
        doc["published_check"] = schemas.records(published_check, schemas.PUBLISHED_CHECK)
        doc["published_summary"] = check.published_summary(doc["published_check"])
    if claims is not None:
        doc["claims"] = schemas.records(claims, schemas.CLAIMS)
    doc["repetition"] = repetition_section(repetition)
    doc["self_preference"] = self_preference if self_preference is not None else {
        "identified": False, "why": "no_writer", "pairs": [], "judges": []}
    doc["human"] = human if human is not None else {
        "identified": False, "why": "no_human_labels", "agreement": [], "records": []}
    if harness is not None:
        doc["harness"] = harness
    if length is not None:
        doc["length"] = length
    doc["board"] = board.build(doc)
    doc["methods"] = methods.section(doc)
    return doc
