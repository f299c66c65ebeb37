"""The closed vocabularies (workbench.common.vocab): one spelling of each name, and every mapping
keyed by a vocabulary covers it exactly (a bucket the report has no meaning for is a bucket
the report would silently leave out of its ledger table)."""

from __future__ import annotations

import json
from pathlib import Path

from workbench.analysis import check, scorecard
from workbench.cli import terminal
from workbench.common import vocab
from workbench.ingest import reader as ingest
from workbench.report import model

GOLDEN = Path(__file__).parent / "golden" / "example_results.json"


def test_exported_tuples_are_the_documented_names_in_order():
    # spelled out here, independently of vocab.py: the ledger's and results.json's order
    assert ingest.BUCKETS == ("blank", "valid", "partial", "empty", "unscored", "errored", "non_numeric",
                              "out_of_range", "invalid_number", "malformed", "duplicate", "conflict")
    assert ingest.FIELD_STATUSES == ("valid", "absent", "null", "sentinel", "declared_missing", "non_numeric",
                                     "out_of_range", "invalid_number")
    assert check.VERDICTS == ("holds", "shrinks", "reverses", "refuted", "inconclusive", "equivalent",
                              "insufficient")
    assert check.RULES[:2] == ("valid_mean", "zero_filled") and len(check.RULES) == 10
    assert check.RULES[-2:] == ("harness", "harness_rescaled")
    assert (scorecard.STATUS_MEASURED, scorecard.STATUS_INSUFFICIENT, scorecard.STATUS_NOT_MEASURED) == (
        "measured", "insufficient", "not_measured")
    # plain strings, not members: what polars columns and messages receive is unchanged
    assert all(type(b) is str for b in ingest.BUCKETS + check.VERDICTS + check.RULES)


def test_members_are_their_strings():
    assert vocab.Bucket.VALID == "valid" and f"{vocab.Bucket.CONFLICT}" == "conflict"
    assert json.dumps({"b": vocab.Verdict.HOLDS}) == '{"b": "holds"}'
    assert json.dumps({vocab.CellStatus.MEASURED: 1}) == '{"measured": 1}'


def test_mappings_cover_their_vocabulary():
    assert set(terminal.VERDICT_KIND) == set(vocab.Verdict)
    assert set(model.VERDICT_CLASS) == set(vocab.Verdict)
    assert set(model.STATUS_CLASS) == set(vocab.CellStatus)
    assert list(model.BUCKET_MEANING) == [*vocab.Bucket, vocab.MISSING_PLANNED]


def test_results_document_speaks_the_vocabulary():
    doc = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert set(doc["ledger"]) == {"lines", *vocab.Bucket, vocab.MISSING_PLANNED}
    assert {c["status"] for c in doc["scorecard"]} <= set(vocab.CellStatus)
    assert {c["verdict"] for c in doc["claims"]} <= set(vocab.Verdict)
    assert {r for p in doc["published_check"] for r in p["reproduced_by"]} <= set(vocab.Rule)
    assert doc["plan"]["mode"] in set(vocab.PlanMode)
    assert doc["contrast_selection"]["variant_contrasts"]["mode"] in set(vocab.SelectionMode)
