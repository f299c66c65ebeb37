"""The named schema of every table a stage hands on: the row table and each stage table of
:attr:`workbench.document.pipeline.Analysis.frames`.

A :class:`Schema` lists its columns in order with their polars dtypes; a name holding
``{field}`` stands for one column per configured score name (``nulls__{field}`` is
``nulls__overall``, ``nulls__correctness``...), ``optional`` columns are present only under
some configs (a consistency check needs sub-scores), and ``open_prefixes`` admit the columns
a config adds by name (``path_*``, ``x_*`` on the row table).

:func:`conform` is the check at a stage's boundary: a missing or unexpected column, or a
value of the wrong kind, raises :class:`SchemaMismatch` naming the table and the column (a
bug in the workbench, never bad input, so it is not a :class:`~workbench.common.errors.WorkbenchError`).
Within a kind it only normalises: an all-null column gets its declared dtype and an integer
column its declared width, so values, and so ``results.json``, never change.
:func:`frame` builds a stage table from records (the stages that compute per record:
judge offsets, contrasts, ranks), the one place records become a frame.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from workbench.common.vocab import Bucket, names

FIELD = "{field}"


class SchemaMismatch(RuntimeError):
    """A stage produced a table that is not its schema: a bug in the workbench."""


@dataclass(frozen=True)
class Schema:
    """A stage table's name, columns (in order) and dtypes; see the module docstring."""

    name: str
    columns: Mapping[str, Any]
    optional: frozenset[str] = frozenset()
    open_prefixes: tuple[str, ...] = ()
    may_be_empty: bool = False  # a frame with no columns at all: the stage did not apply
    maps: Mapping[str, tuple[str, str | None]] = dataclasses.field(default_factory=dict)
    """Columns that results.json writes as an object: a list of structs, by the name of the
    key field and of the value field (``diff_counts``: ``{"-1": 24, "0": 50}`` from ``[{diff:
    -1, count: 24}, ...]``), or None when the value is the struct's other fields (a published
    cell's ``rules``: ``{"valid_mean": {"value": 8.3, "n": 33}}``); see :func:`records`."""

    def expected(self, fields: Sequence[str] = ()) -> dict[str, Any]:
        """The columns for these score names (templates expanded), in order."""
        out: dict[str, Any] = {}
        for name, dtype in self.columns.items():
            if FIELD in name:
                out.update({name.replace(FIELD, f): dtype for f in fields})
            else:
                out[name] = dtype
        return out

    def required(self, fields: Sequence[str] = ()) -> dict[str, Any]:
        return {k: v for k, v in self.expected(fields).items() if not self._optional(k)}

    def _optional(self, column: str) -> bool:
        return any(column == o or (FIELD in o and _matches(o, column)) for o in self.optional)

    def empty(self, fields: Sequence[str] = ()) -> pl.DataFrame:
        """A frame with the required columns and no rows."""
        return pl.DataFrame(schema=self.required(fields))


def _matches(template: str, column: str) -> bool:
    head, _, tail = template.partition(FIELD)
    return column.startswith(head) and column.endswith(tail) and len(column) > len(head) + len(tail)


def _kind(dtype: Any) -> str:
    if dtype == pl.Null:
        return "null"
    if dtype.is_integer():
        return "integer"
    if dtype.is_float():
        return "float"
    if dtype == pl.Boolean:
        return "boolean"
    if dtype == pl.String:
        return "string"
    if isinstance(dtype, pl.List):
        return "list"
    if isinstance(dtype, pl.Struct):
        return "struct"
    return str(dtype)


def conform(frame: pl.DataFrame, schema: Schema, fields: Sequence[str] = ()) -> pl.DataFrame:
    """``frame`` checked against ``schema`` (dtypes normalised within a kind); raises
    :class:`SchemaMismatch` naming the table and the column on any other difference."""
    if schema.may_be_empty and frame.width == 0:
        return frame
    expected = schema.expected(fields)
    got = dict(frame.schema)
    missing = [c for c in schema.required(fields) if c not in got]
    extra = [c for c in got if c not in expected and not c.startswith(schema.open_prefixes)]
    if missing or extra:
        raise SchemaMismatch(
            f"stage table {schema.name!r} does not match its schema (workbench.common.schemas): "
            + "; ".join(p for p in (f"missing {', '.join(missing)}" if missing else "",
                                    f"unexpected {', '.join(extra)}" if extra else "") if p))
    casts = []
    for col, dtype in got.items():
        want = expected.get(col)
        if want is None or dtype == want:
            continue
        if _kind(dtype) == "null" or (_kind(dtype) == _kind(want) == "integer") \
                or (_kind(dtype) == _kind(want) == "list" and dtype.inner == pl.Null):
            casts.append(pl.col(col).cast(want, strict=True))
            continue
        raise SchemaMismatch(f"stage table {schema.name!r}, column {col!r}: {dtype} where the schema "
                             f"(workbench.common.schemas) has {want}")
    return frame.with_columns(casts) if casts else frame


def frame(records: Iterable[Mapping[str, Any]], schema: Schema, fields: Sequence[str] = ()) -> pl.DataFrame:
    """A stage table from per-record output, conformed to ``schema`` (a stage that computes
    per record, judge offsets, contrasts, ranks, builds its table here once its records are
    complete). Lists and objects stay typed: ``List``/``Struct`` columns, a map (``Schema.maps``)
    as a list of key/value structs; nothing is kept as its ``str``."""
    expected = schema.expected(fields)
    flat = []
    for r in records:
        rec = dict(r)
        for col, (k, v) in schema.maps.items():
            if isinstance(rec.get(col), Mapping):
                # the key as its declared type (``"-1"`` -> -1: the map's keys are its text)
                key_type = {f.name: f.dtype for f in expected[col].inner.fields}[k]
                cast = int if key_type.is_integer() else float if key_type.is_float() else str
                rec[col] = [{k: cast(key), **(val if v is None else {v: val})} for key, val in rec[col].items()]
        flat.append(rec)
    if not flat:
        return schema.empty(fields)
    # the declared dtypes of the nested columns (inference cannot know an empty list's inner type)
    nested = {c: d for c, d in expected.items() if isinstance(d, pl.List | pl.Struct)}
    df = pl.DataFrame(flat, infer_schema_length=None, schema_overrides=nested or None)
    return conform(df, schema, fields)


def records(table: pl.DataFrame, schema: Schema | None = None) -> list[dict[str, Any]]:
    """The rows of a stage table as results.json records (column order kept; what
    :func:`frame` made from them), a map column of ``schema`` as an object:
    ``[{diff: -1, count: 24}]`` -> ``{"-1": 24}``."""
    out = table.to_dicts()
    for col, (k, v) in (schema.maps.items() if schema is not None else ()):
        if col not in table.columns:
            continue
        for rec in out:
            if rec[col] is not None:
                rec[col] = {str(e.pop(k)): (e if v is None else e[v]) for e in rec[col]}
    return out


# --------------------------------------------------------------------------- the tables

_S, _I, _U, _F, _B = pl.String, pl.Int64, pl.UInt32, pl.Float64, pl.Boolean
_LS = pl.List(pl.String)
#: ``diff_counts``: pairs per rounded integer difference (:func:`workbench.stats.diff_counts`)
_DIFF_COUNTS = pl.List(pl.Struct({"diff": pl.Int64, "count": pl.Int64}))

ROWS = Schema("rows", {
    "file": _S, "line": _I, "bucket": _S, "reason": _S,
    "scenario": _S, "variant": _S, "trial": _S, "judge": _S,
    FIELD: _F, f"{FIELD}__raw": _F, f"{FIELD}__status": _S, f"{FIELD}__from_string": _B,
    "flags": _LS, "flags_present": _B, "verdict": _S, "pass_value": _F, f"{FIELD}__label": _S,
    "cluster": _S,
}, optional=frozenset({"pass_value", f"{FIELD}__label", "cluster"}), open_prefixes=("path_", "x_"))
"""One row per input line (and per planned judgment with no line): :func:`workbench.ingest.reader.read_rows`
then :func:`workbench.ingest.ledger.apply_plan`. ``{field}__label`` exists for the headline only, when
the config maps labels to values. ``cluster``: the row's unit of independence
(:func:`workbench.ingest.clusters.assign`; a table without it clusters on ``scenario``)."""

#: The census's counts: one per bucket a cell can hold (not blank/malformed lines, plus the
#: planned-but-absent judgments).
_CENSUS_COUNTS = {b: _U for b in names(Bucket) if b not in (Bucket.BLANK, Bucket.MALFORMED)}

CENSUS = Schema("census", {
    "judge": _S, "variant": _S, "rows": _U, **_CENSUS_COUNTS, "missing_planned": _U,
    "sentinel": _U, "from_string": _U, "nulls__{field}": _U, "conflict_keys": _U, "judgments": _U,
    "missing": _U, "missing_rate": _F, "missing_rate_ci_low": _F, "missing_rate_ci_high": _F,
    "missing_rate_n_eff": _F, "missing_rate_ci_method": _S, "missing_rate_design_effect": _F,
    "missing_rate_design_effect_from": _S,
})
"""Null census per judge x variant (:func:`workbench.analysis.census.census`)."""

CENSUS_MARGINS = Schema("census_margins", dict(CENSUS.columns))
"""The census per judge and per variant alone (:func:`workbench.analysis.census.census_margins`): the
census's columns, the other key null."""

SCORECARD = Schema("scorecard", {
    "variant": _S, "judge": _S, "subset": _S, "field": _S,
    "mean": _F, "valid_n": _I, "rows": _I, "clusters": _I, "cluster": _S,
    "zero_filled_mean": _F, "zero_filled_diff": _F,
    "lower_bound": _F, "upper_bound": _F, "se": _F, "se_clustered": _F, "se_cr2": _F, "df": _F,
    "ci_low": _F, "ci_high": _F, "ci_method": _S, "cr1_ci_low": _F, "cr1_ci_high": _F, "cr1_method": _S,
    "boot_low": _F, "boot_high": _F, "icc": _F, "design_effect": _F,
    "status": _S, "absent": _I,
})
"""Scorecard cells (:func:`workbench.analysis.scorecard.scorecard`); ``status`` is a
:class:`workbench.common.vocab.CellStatus`."""

_RATE = {"n": _I, "rate": _F, "ci_low": _F, "ci_high": _F, "ci_method": _S, "clusters": _I,
         "wilson_low": _F, "wilson_high": _F}

FLAG_RATES = Schema("flag_rates", {"variant": _S, "subset": _S, "flagged": _I, **_RATE})
"""Fabrication-flag rate per variant (:func:`workbench.analysis.scorecard.flag_rates`)."""

PASS_RATES = Schema("pass_rates", {
    "variant": _S, "subset": _S, "passes": _I, **_RATE,
    "pass_hat_k": _F, "pass_hat_k_ci_low": _F, "pass_hat_k_ci_high": _F, "pass_hat_k_ci_method": _S,
    "pass_hat_k_cr1_ci_low": _F, "pass_hat_k_cr1_ci_high": _F, "k": _I,
    "units_with_k": _I, "units_short": _I, "units_short_list": _LS,
    "gate_threshold": _F, "gate_pass": _B,
})
"""Pass rate and pass^k per variant (:func:`workbench.analysis.scorecard.pass_rates`)."""

CONSISTENCY = Schema("consistency", {
    "judge": _S, "variant": _S, "overall_checked": _U, "overall_far_from_subscores": _U,
    "honesty_checked": _U, "honest_but_flagged": _U,
}, optional=frozenset({"overall_checked", "overall_far_from_subscores", "honesty_checked",
                       "honest_but_flagged"}), may_be_empty=True)
"""Rows whose numbers disagree with themselves (:func:`workbench.analysis.scorecard.consistency`);
each pair of columns only when its check applies, no columns when none does."""

MISSINGNESS_TESTS = Schema("missingness_tests", {
    "factor": _S, "statistic": _F, "p_value": _F, "method": _S, "permutations": _I,
    "unit": _S, "blocks": _I, "informative_blocks": _I, "min_p": _F, "cannot_reject": _B,
    "classic_p": _F, "classic_method": _S, "levels": _I,
    "missing_rates": pl.List(pl.Struct({"level": _S, "rate": _F})),
}, maps={"missing_rates": ("level", "rate")})
"""Does the missing rate depend on the judge? on the variant? (:func:`workbench.analysis.census.missingness_tests`):
one row per factor; ``missing_rates`` one ``{level, rate}`` per level (results.json: an object
by level)."""

SCALE_CHECKS = Schema("scale_checks", {
    "judge": _S, "numeric": _I, "outside": _I, "share_outside": _F, "min": _F, "max": _F,
    "scale_mismatch": _B, "message": _S,
})
"""Per judge, numeric headline values outside the rubric (:func:`workbench.analysis.census.scale_checks`)."""

PROVENANCE_CHECKS = Schema("provenance_checks", {
    "file": _S, "field": _S, "path": _S, "compare": _S, "rows": _I,
    "agree": _I, "disagree": _I, "unknown": _I,
    "examples": pl.List(pl.Struct({"field": _S, "path": _S, "rows": _I})),
    "finding": _B, "message": _S,
})
"""A row field checked against its file's path, per file x check
(:func:`workbench.analysis.provenance.provenance_checks`); no rows without ``cross_check``."""

JUDGE_OFFSETS = Schema("judge_offsets", {
    "judge_a": _S, "judge_b": _S, "variant": _S, "subset": _S, "field": _S,
    "pairs": _I, "clusters": _I, "cluster": _S, "only_a": _I, "only_b": _I,
    "mean_diff": _F, "ci_low": _F, "ci_high": _F, "ci_method": _S, "p": _F, "p_method": _S,
    "se": _F, "df": _F, "cr1_se": _F, "cr1_df": _I, "cr1_ci_low": _F, "cr1_ci_high": _F, "cr1_p": _F,
    "cr1_method": _S,
    "p_sign_flip": _F, "sign_flip_method": _S, "sign_flip_resamples": _I, "boot_low": _F, "boot_high": _F,
    "t_ci_low": _F, "t_ci_high": _F,
    "clustered_ci_low": _F, "clustered_ci_high": _F, "ignores_clustering": _LS, "wilcoxon_p": _F,
    "diff_counts": _DIFF_COUNTS, "exact_agreement": _F, "within_one": _F, "kappa_quadratic": _F,
    "krippendorff_alpha": _F, "spearman": _F,
}, maps={"diff_counts": ("diff", "count")})
"""Paired judge offsets and agreement (:func:`workbench.analysis.paired.judge_offsets`); ``diff_counts``
one ``{diff, count}`` struct per rounded difference (results.json: ``{"-1": 24, ...}``),
``ignores_clustering`` the names of the columns that ignore it."""

PAIRED_CONTRASTS = Schema("contrasts", {
    "a": _S, "b": _S, "field": _S, "subset": _S, "judge": _S,
    "mean_a": _F, "valid_n_a": _I, "mean_b": _F, "valid_n_b": _I,
    "diff": _F, "se": _F, "df": _F, "ci_low": _F, "ci_high": _F, "p": _F, "ci_method": _S,
    "cr1_se": _F, "cr1_df": _I, "cr1_ci_low": _F, "cr1_ci_high": _F, "cr1_p": _F, "cr1_method": _S,
    "boot_low": _F, "boot_high": _F, "cluster": _S, "clusters": _I, "paired_clusters": _I,
    "paired_unit": _S, "paired_diff": _F, "paired_ci_low": _F, "paired_ci_high": _F, "paired_ci_method": _S,
    "paired_df": _F, "paired_cr1_ci_low": _F, "paired_cr1_ci_high": _F,
    "paired_boot_low": _F, "paired_boot_high": _F,
    "matched": _I, "unmatched_a": _I, "unmatched_b": _I, "loo_min": _F, "loo_max": _F,
    "pairing_correlation": _F, "pairing_spearman": _F, "design_effect": _F, "sd": _F,
    "n_needed_paired": _B, "mde": _F, "mde_paired": _F, "target_effect": _F, "n_needed": _I,
    "n_needed_assumes": _S, "power_now": _F, "scenarios_needed": _I, "trials_per_scenario": _F,
    "trials_needed": _I, "trials_ceiling_power": _F, "power_monotone": _B, "power_statement": _S,
    "between_scenario_var": _F, "within_scenario_var": _F,
    "p_holm": _F, "higher": _S, "holm_significant": _B, "underpowered": _B,
})
"""Variant contrasts with power (:func:`workbench.analysis.paired.contrasts`, what
:func:`workbench.document.api.contrasts` returns)."""

CONTRASTS = Schema("contrasts", {
    **PAIRED_CONTRASTS.columns,
    "missing_rate_a": _F, "missing_rate_b": _F, "fisher_p": _F, "missingness_p": _F,
    "missingness_method": _S, "missingness_min_p": _F, "confounded_missing": _B, "judges_a": _LS, "judges_b": _LS,
    "confounded_judges": _B, "confounded": _B,
})
"""The contrasts of a run: :data:`PAIRED_CONTRASTS` with the missingness and judge-set
confounding of :func:`workbench.analysis.paired.contrast_confounding`; ``judges_a``/``judges_b`` the
judge names of each side."""

RANKS = Schema("ranks", {
    "variant": _S, "status": _S, "mean": _F, "rank_low": _I, "rank_high": _I,
    "rank_distinguishable": _B, "above": _LS, "below": _LS, "tied_with": _LS, "not_compared": _LS,
})
"""Rank intervals per variant (:func:`workbench.analysis.ranks.rank_intervals` ``cells``): the variant
names above, below, tied with and not compared with each cell (null for an unranked cell)."""

REPETITION = Schema("repetition", {"variant": _S, "trials": _I, "icc_trials": _F})
"""Agreement of repeated trials per variant (:func:`workbench.analysis.paired.repetition_consistency`
``per_variant``): ICC(1) with the (scenario, judge) pair as the cluster; null with one trial."""

REPETITION_SLICES = Schema("repetition_slices", {"trial": _S, "ranking": _LS, "differs": _B})
"""Per trial number, the variant ranking on that trial alone and whether it differs from the
ranking on all trials (:func:`workbench.analysis.paired.repetition_consistency` ``slices``)."""

PUBLISHED_CHECK = Schema("published_check", {
    "variant": _S, "judge": _S, "subset": _S, "field": _S,
    "published": _F, "decimals": _I, "reproduced_by": _LS,
    "nearest_rule": _S, "nearest_value": _F, "distance": _F,
    "valid_mean": _F,
    "rules": pl.List(pl.Struct({"rule": _S, "value": _F, "n": _I})),
    "ambiguous": pl.Struct({"rules": _LS, "why": _S}),
    "finding": _S, "harness_figure": _S,
}, maps={"rules": ("rule", None)})
"""Each published cell under every aggregation rule (:func:`workbench.analysis.check.published_check`);
``reproduced_by`` holds :class:`workbench.common.vocab.Rule` names, ``rules`` each rule's value and n
(results.json: an object by rule name), ``ambiguous`` the rules that reproduce it and why
when there are several (null otherwise), ``harness_figure`` which harness figure the
``harness`` rules are and in which unit (null without a harness rule or a figure for the cell)."""

CLAIMS = Schema("claims", {
    "name": _S, "field": _S, "subset": _S, "judge": _S,
    "a": _S, "b": _S, "claimed": _F, "recomputed": _F,
    "ci_low": _F, "ci_high": _F, "paired": _F,
    "paired_ci_low": _F, "paired_ci_high": _F, "zero_filled": _F,
    "valid_n_a": _I, "rows_a": _I, "valid_n_b": _I, "rows_b": _I,
    "status_a": _S, "status_b": _S, "missing_rate_a": _F,
    "missing_rate_b": _F, "bound_low": _F, "bound_high": _F,
    "fisher_p": _F, "missingness_p": _F, "missingness_method": _S, "missingness_min_p": _F,
    "judge_missingness_p": _F, "p": _F, "p_holm": _F,
    "verdict_ci_low": _F, "verdict_ci_high": _F, "verdict_confidence": _F,
    "verdict_ci_method": _S, "verdict_family": _I,
    "equivalence_margin": _F, "verdict": _S, "confounded": _B,
    "confounded_missing": _B, "confounded_judges": _B,
    "confounding_notes": _LS, "notes": _LS,
})
"""Each headline claim checked (:func:`workbench.analysis.check.check_claims`); ``verdict`` is a
:class:`workbench.common.vocab.Verdict`."""

#: Every stage table of :attr:`workbench.document.pipeline.Analysis.frames`, by its name there.
STAGE_TABLES: dict[str, Schema] = {s.name: s for s in (
    CENSUS, CENSUS_MARGINS, MISSINGNESS_TESTS, SCALE_CHECKS, PROVENANCE_CHECKS,
    SCORECARD, FLAG_RATES, PASS_RATES, CONSISTENCY,
    JUDGE_OFFSETS, CONTRASTS, RANKS, REPETITION, REPETITION_SLICES, PUBLISHED_CHECK, CLAIMS)}


def conform_frames(frames: Mapping[str, pl.DataFrame], fields: Sequence[str] = ()) -> dict[str, pl.DataFrame]:
    """Every stage table checked against its schema (by name; an unknown name is a bug too)."""
    out = {}
    for name, df in frames.items():
        if name not in STAGE_TABLES:
            raise SchemaMismatch(f"stage table {name!r} has no schema in workbench.common.schemas")
        out[name] = conform(df, STAGE_TABLES[name], fields)
    return out
