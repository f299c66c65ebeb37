"""The closed vocabularies of the workbench, each one :class:`enum.StrEnum`.

Every name a row table, a stage table or ``results.json`` carries from a fixed set (a
ledger bucket, a field status, a cell's evidence status, a claim verdict, an aggregation
rule, a plan mode, a contrast-selection mode, a batch entry's status) is a member here.
A member *is* its string (``Bucket.VALID == "valid"``, ``json.dumps`` writes ``"valid"``,
polars compares it as the string), so code may use either; the members are the one place a
name is spelled, and the tuples the modules export (``ingest.BUCKETS``,
``ingest.FIELD_STATUSES``, ``check.VERDICTS``, ``check.RULES``...) are derived from them.

The order of members is meaningful: it is the ledger's, the report's and results.json's order.
"""

from __future__ import annotations

from enum import StrEnum


class Bucket(StrEnum):
    """Ledger bucket of one input line; every physical line lands in exactly one."""

    BLANK = "blank"
    VALID = "valid"
    PARTIAL = "partial"
    EMPTY = "empty"
    UNSCORED = "unscored"
    ERRORED = "errored"
    NON_NUMERIC = "non_numeric"
    OUT_OF_RANGE = "out_of_range"
    INVALID_NUMBER = "invalid_number"
    MALFORMED = "malformed"
    DUPLICATE = "duplicate"
    CONFLICT = "conflict"


class ConflictKind(StrEnum):
    """Why the rows of one key are a ``conflict`` (every copy held out): ``different_answer``,
    the rows judged different answers (``answer:`` names the field; a stale or overwritten
    run), whatever their scores; ``different_content``, the same answer (or none recorded)
    with differing scores, flags or verdict."""

    DIFFERENT_ANSWER = "different_answer"
    DIFFERENT_CONTENT = "different_content"


MISSING_PLANNED = "missing_planned"
"""The ``bucket`` of a planned judgment with no row in any input: a row the plan adds beside
the lines (never a line, so not a :class:`Bucket`; counted beside the ledger's sum)."""


class FieldStatus(StrEnum):
    """Per-field status of a rubric value (``NAME__status``). Only ``valid`` enters a mean."""

    VALID = "valid"
    ABSENT = "absent"
    NULL = "null"
    SENTINEL = "sentinel"
    DECLARED_MISSING = "declared_missing"  # a ``missing_when:`` condition held: a failure written as a score
    NON_NUMERIC = "non_numeric"
    OUT_OF_RANGE = "out_of_range"
    INVALID_NUMBER = "invalid_number"


#: Field statuses that mean "no score was given" (the census's per-field nulls): a declared
#: failure too, whatever number it was written as.
NULL_STATUSES: tuple[FieldStatus, ...] = (FieldStatus.ABSENT, FieldStatus.NULL, FieldStatus.SENTINEL,
                                          FieldStatus.DECLARED_MISSING)


class CellStatus(StrEnum):
    """Evidence status of a scorecard cell (``status``): only ``measured`` cells are ranked."""

    MEASURED = "measured"
    INSUFFICIENT = "insufficient"
    NOT_MEASURED = "not_measured"


class Verdict(StrEnum):
    """A headline claim checked against the rows (``claims[].verdict``)."""

    HOLDS = "holds"
    SHRINKS = "shrinks"
    REVERSES = "reverses"
    REFUTED = "refuted"
    INCONCLUSIVE = "inconclusive"
    EQUIVALENT = "equivalent"
    INSUFFICIENT = "insufficient"


class Rule(StrEnum):
    """Candidate aggregation rules of the published-scorecard forensics, in report order
    (see :data:`workbench.analysis.check.RULES` for what each computes)."""

    VALID_MEAN = "valid_mean"
    ZERO_FILLED = "zero_filled"
    MIN_FILLED = "min_filled"
    ITEM_MEAN = "item_mean"
    ALL_ROWS = "all_rows"
    ZERO_FILLED_PLANNED = "zero_filled_planned"
    DROP_SENTINELS_ONLY = "drop_sentinels_only"
    RAW_NUMERIC_MEAN = "raw_numeric_mean"
    HARNESS = "harness"
    HARNESS_RESCALED = "harness_rescaled"


class PlanMode(StrEnum):
    """Where the plan came from (``plan.mode``; None when no plan was given)."""

    COMPLETE = "complete"
    FILE = "file"
    TASKS = "tasks"


class SelectionMode(StrEnum):
    """How the variant contrasts were chosen (``contrast_selection.variant_contrasts.mode``)."""

    CONFIGURED = "configured"
    BASELINE = "baseline"
    ALL_PAIRS = "all_pairs"
    OVER_CAP = "over_cap"


class BatchStatus(StrEnum):
    """A ``workbench batch`` entry's outcome on the index page and the terminal."""

    OK = "ok"
    GATE_FAILED = "gate failed"
    GATE_FAILED_NO_GATE = "gate failed (no_gate)"
    ERROR = "error"


def names(vocabulary: type[StrEnum]) -> tuple[str, ...]:
    """The plain strings of a vocabulary, in its order (what the exported tuples hold)."""
    return tuple(m.value for m in vocabulary)
