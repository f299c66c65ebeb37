"""Stage tables have named schemas (workbench.common.schemas): every frame of an Analysis of the
example is its schema, column for column and in order, and a table that is not raises an
internal error naming the table and the column."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import workbench as wb
from workbench.common import schemas

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "data" / "example"


@pytest.fixture(scope="module")
def example() -> wb.Analysis:
    cfg = wb.load_config(str(EX / "config.yaml"), overrides={"bootstrap": {"resamples": 200}})
    return wb.run([EX / "judge_rows.jsonl"], cfg, plan=str(EX / "plan.csv"),
                  published=str(EX / "published_scorecard.csv"), claims=str(EX / "claims.yaml"))


def test_every_frame_of_the_example_is_its_schema(example: wb.Analysis) -> None:
    fields = example.config.score_names
    assert set(example.frames) == set(schemas.STAGE_TABLES)  # the example exercises every stage
    for name, df in example.frames.items():
        want = schemas.STAGE_TABLES[name].expected(fields)
        assert dict(df.schema) == want, name  # names, order of the dict aside, and dtypes
        assert df.columns == list(want), name  # and the order
        # pass rates need a pass rule, provenance checks a cross_check: the example has neither
        assert df.height > 0 or (name == "pass_rates"
                                 or (name == "provenance_checks" and not example.config.cross_check)), name
    assert list(example.frame("census").columns).count("nulls__overall") == 1


def test_row_table_is_its_schema(example: wb.Analysis) -> None:
    rows = example.rows
    want = schemas.ROWS.expected(example.config.score_names)
    for col, dtype in rows.schema.items():
        if col.startswith(schemas.ROWS.open_prefixes):
            continue
        assert want[col] == dtype, col
    assert set(schemas.ROWS.required(example.config.score_names)) <= set(rows.columns)


def test_conform_names_table_and_column() -> None:
    card = schemas.SCORECARD.empty()
    with pytest.raises(schemas.SchemaMismatch, match=r"'scorecard'.*missing absent"):
        schemas.conform(card.drop("absent"), schemas.SCORECARD)
    with pytest.raises(schemas.SchemaMismatch, match=r"'scorecard'.*unexpected extra"):
        schemas.conform(card.with_columns(pl.lit(1).alias("extra")), schemas.SCORECARD)
    with pytest.raises(schemas.SchemaMismatch, match=r"'scorecard', column 'mean': String"):
        schemas.conform(card.with_columns(pl.col("mean").cast(pl.String)), schemas.SCORECARD)
    # a score read as text is a kind mismatch too, never a silent cast
    with pytest.raises(schemas.SchemaMismatch, match="'valid_n'"):
        schemas.conform(card.with_columns(pl.col("valid_n").cast(pl.Float64)), schemas.SCORECARD)
    with pytest.raises(schemas.SchemaMismatch, match="no schema"):
        schemas.conform_frames({"scorcard": card})


def test_conform_normalises_within_a_kind_only() -> None:
    # an all-null column gets its declared dtype; an integer column its declared width
    df = schemas.SCORECARD.empty().drop("judge", "valid_n").with_columns(
        pl.lit(None).alias("judge"), pl.lit(3, dtype=pl.UInt8).alias("valid_n"))
    out = schemas.conform(df, schemas.SCORECARD)
    assert out.schema["judge"] == pl.String and out.schema["valid_n"] == pl.Int64
    # records -> frame: a list stays a typed list (never its str); no records, typed columns
    recs = [{**dict.fromkeys(schemas.RANKS.columns), "variant": "a", "above": ["b", "c"], "rank_low": 1},
            {**dict.fromkeys(schemas.RANKS.columns), "variant": "b", "above": []}]
    ranks = schemas.frame(recs, schemas.RANKS)
    assert ranks["above"].to_list() == [["b", "c"], []] and ranks.schema["mean"] == pl.Float64
    assert ranks.schema["above"] == pl.List(pl.String) and ranks["below"].to_list() == [None, None]
    assert dict(schemas.frame([], schemas.RANKS).schema) == dict(schemas.RANKS.columns)


def test_a_map_is_a_list_of_key_value_structs_and_an_object_in_the_document() -> None:
    base = dict.fromkeys(schemas.JUDGE_OFFSETS.columns)
    recs = [{**base, "judge_a": "x", "diff_counts": {"-2": 1, "0": 5, "3": 2}, "ignores_clustering": ["p"]},
            {**base, "judge_a": "y", "diff_counts": {}, "ignores_clustering": []}]
    offs = schemas.frame(recs, schemas.JUDGE_OFFSETS)
    assert offs.schema["diff_counts"] == pl.List(pl.Struct({"diff": pl.Int64, "count": pl.Int64}))
    assert offs["diff_counts"].to_list()[0] == [{"diff": -2, "count": 1}, {"diff": 0, "count": 5},
                                                 {"diff": 3, "count": 2}]
    # the typed column answers questions a str could not: pairs with |diff| >= 2
    far = offs.select(pl.col("diff_counts").list.eval(
        pl.element().struct.field("count").filter(pl.element().struct.field("diff").abs() >= 2)).list.sum())
    assert far.to_series().to_list() == [3, 0]
    back = schemas.records(offs, schemas.JUDGE_OFFSETS)
    assert [r["diff_counts"] for r in back] == [{"-2": 1, "0": 5, "3": 2}, {}]
    assert [r["ignores_clustering"] for r in back] == [["p"], []]
    assert list(back[0]) == list(schemas.JUDGE_OFFSETS.columns)


def test_per_field_columns_follow_the_config() -> None:
    cols = schemas.CENSUS.expected(["overall", "depth"])
    assert [c for c in cols if c.startswith("nulls__")] == ["nulls__overall", "nulls__depth"]
    assert "{field}" not in "".join(cols)
