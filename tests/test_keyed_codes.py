"""The coded keyed rows (``reduce_codes.KeyedCodes``) that census, its margins, the
missingness tests, the name check, the scorecard and the flag rates share: every stage gives
the table its row path gives (the path a table whose keys are not text takes, itself checked
by hand in test_census/test_scorecard/test_rates), on a generated file with every hazard
(duplicates, conflicts, partial rows, a plan's absent judgments) and a subset. Plus the
pieces under it: group_ids' table path against np.unique, the bootstrap weights written
into uint8 against the float64 ones, and the joint draws with shared count columns against
the float64 reference.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from workbench import load_config, stats
from workbench.analysis import names
from workbench.analysis.census import census, census_margins, missingness_tests
from workbench.analysis.scorecard import flag_rates, scorecard
from workbench.common import schemas
from workbench.document import pipeline
from workbench.ingest import selection
from workbench.reduce import codes as reduce_codes
from workbench.reduce import sufficient as reduce

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def _generate() -> Any:
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("generate", BENCH / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[pl.DataFrame, Any]:
    path = _generate().generate(6000, 5, path=tmp_path_factory.mktemp("keyed") / "rows.jsonl")
    cfg = load_config()
    rows, _, _ = pipeline.load([str(path)], cfg, plan="complete")
    rows = schemas.conform(rows, schemas.ROWS, cfg.score_names)
    scen = sorted(rows["scenario"].drop_nulls().unique().to_list())
    cfg = dataclasses.replace(cfg, subsets={"some": {"scenario": tuple(scen[::3])}})
    # a conflicting key: a second, different line of a key that has a valid line
    assert rows.filter(pl.col("bucket") == "conflict").height > 0
    assert rows.filter(pl.col("bucket") == "duplicate").height > 0
    assert rows.filter(pl.col("bucket") == "missing_planned").height > 0
    return rows, cfg


def _uncoded(rows: pl.DataFrame, cfg: Any) -> reduce_codes.KeyedCodes:
    view = reduce_codes.KeyedCodes(rows, cfg)
    view.usable = False  # what a table whose keys are not text gets: each stage's row path
    return view


def test_coded_stages_equal_their_row_paths(generated: tuple[pl.DataFrame, Any]) -> None:
    rows, cfg = generated
    view = reduce_codes.KeyedCodes(rows, cfg)
    assert view.usable
    plain = _uncoded(rows, cfg)
    for fn in (census, census_margins):
        got, want = fn(rows, cfg, view=view), fn(rows, cfg, view=plain)
        assert got.height > 0 and got.to_dicts() == want.to_dicts()
        assert fn(rows, cfg).to_dicts() == want.to_dicts()  # a view of its own
    for unit, methods in (("block", ["judge_block_permutation_within_scenario_variant",
                                      "block_permutation_within_scenario"]),
                          ("trial", ["judge_permutation_within_item", "item_permutation_within_scenario"])):
        ucfg = cfg.with_overrides(missingness_unit=unit)
        got = missingness_tests(rows, ucfg, view=view).to_dicts()
        assert got == missingness_tests(rows, ucfg, view=plain).to_dicts()
        assert [r["method"].removesuffix("_asymptotic").removesuffix("_exact") for r in got] == methods
        assert all(r["p_value"] is not None for r in got)
    assert names.name_warnings(rows, None, view=view) == names.name_warnings(rows, None, view=plain)
    got = flag_rates(rows, cfg, view=view)
    assert sorted(set(got["subset"].to_list()), key=str) == [None, "some"]
    assert got.to_dicts() == flag_rates(rows, cfg, view=plain).to_dicts() == flag_rates(rows, cfg).to_dicts()
    cards = []
    for v in (view, plain):
        jb = reduce.JointBootstrap.for_rows(rows, dataclasses.replace(cfg, resamples=300))
        cards.append(scorecard(rows, cfg, jb, view=v).to_dicts())
    assert len(cards[0]) > 0 and cards[0] == cards[1]
    assert any(c["subset"] == "some" for c in cards[0]) and all(c["boot_low"] is not None for c in cards[0]
                                                               if c["valid_n"] > 50)
    # the pipeline's last use of its view: the scorecard releases it (nothing cached is left)
    # and gives the same card; the view, asked again, builds its parts again, the same
    jb = reduce.JointBootstrap.for_rows(rows, dataclasses.replace(cfg, resamples=300))
    levels = view.cell_levels("variant")
    assert scorecard(rows, cfg, jb, view=view, release_view=True).to_dicts() == cards[0]
    assert view._parts == {}
    assert view.cell_levels("variant") == levels


def test_narrow_view_codes_give_the_row_paths_tables(tmp_path: Path) -> None:
    """The view codes variant, trial and judge in a byte (up to 256 labels) or 16 bits (up to
    65,536): with 300 variants x 3 trials x 2 judges (every combination past both a byte and
    the variants' own width, so a product taken in the narrow type would wrap) the census,
    its margins, the missingness tests, the flag rates and the scorecard equal the row paths'
    (int32 codes of their own), and a loop's count of the missing judgments."""
    rng = np.random.default_rng(29)
    variants = [f"v{i:03d}" for i in range(300)]
    lines = []
    for s in range(4):
        for v in variants:
            for t in (1, 2, 3):
                for j in ("ja", "jb"):
                    row = {"scenario": f"s{s}", "variant": v, "trial": t, "judge": j,
                           "overall": int(rng.integers(1, 11)) if rng.random() > 0.15 else None,
                           "fabrication_flags": ["x"] if rng.random() < 0.2 else []}
                    lines.append(row)
    lines.append(dict(lines[5]))  # an exact repeat
    path = tmp_path / "many.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    cfg = load_config()
    rows, _, _ = pipeline.load([str(path)], cfg)
    rows = schemas.conform(rows, schemas.ROWS, cfg.score_names)
    view = reduce_codes.KeyedCodes(rows, cfg)
    assert view.codes("variant").dtype == np.uint16
    assert view.codes("trial").dtype == np.uint8 and view.codes("judge").dtype == np.uint8
    assert view.codes("scenario").dtype == np.int32
    plain = _uncoded(rows, cfg)
    for fn in (census, census_margins):
        assert fn(rows, cfg, view=view).to_dicts() == fn(rows, cfg, view=plain).to_dicts()
    cen = census(rows, cfg, view=view)
    missing = sum(1 for r in lines[:-1] if r["overall"] is None)
    per = {(r["variant"], r["judge"]): r for r in cen.to_dicts()}
    for (v, j) in (("v000", "ja"), ("v299", "jb"), ("v256", "ja")):
        want = sum(1 for r in lines[:-1] if r["variant"] == v and r["judge"] == j and r["overall"] is None)
        assert per[(v, j)]["nulls__overall"] == want
    assert sum(r["nulls__overall"] for r in per.values()) == missing
    got = missingness_tests(rows, cfg, view=view).to_dicts()
    assert got == missingness_tests(rows, cfg, view=plain).to_dicts() and got
    assert flag_rates(rows, cfg, view=view).to_dicts() == flag_rates(rows, cfg, view=plain).to_dicts()
    cards = []
    for v in (view, plain):
        jb = reduce.JointBootstrap.for_rows(rows, dataclasses.replace(cfg, resamples=200))
        cards.append(scorecard(rows, cfg, jb, view=v).to_dicts())
    assert len(cards[0]) > 600 and cards[0] == cards[1]
    # a few cells against a loop over the lines (the repeat counted once)
    for v, j in (("v000", None), ("v256", "jb"), ("v299", "ja")):
        vals = [r["overall"] for r in lines[:-1] if r["variant"] == v and (j is None or r["judge"] == j)
                and r["overall"] is not None]
        (cell,) = [c for c in cards[0] if c["variant"] == v and c["judge"] == j and c["subset"] is None
                   and c["field"] == "overall"]
        assert cell["valid_n"] == len(vals) and cell["mean"] == pytest.approx(sum(vals) / len(vals), rel=1e-12)


def test_cell_levels_are_the_cell_rows_distinct_keys(generated: tuple[pl.DataFrame, Any]) -> None:
    """The variants and judges the paired stages compare, from the codes: those of the cell
    rows only (a label that only a repeat or a planned-but-absent row has is not one), as a
    loop over the rows and the rows' own path (selection.cell_values) find them."""
    rows, cfg = generated
    dup, planned = pl.col("bucket") == "duplicate", pl.col("bucket") == "missing_planned"
    assert rows.filter(dup).height and rows.filter(planned).height
    rows = rows.with_columns(
        pl.when(dup).then(pl.lit("zz-only-repeats")).otherwise("variant").alias("variant"),
        pl.when(planned).then(pl.lit("aa-only-planned")).otherwise("judge").alias("judge"))
    view = reduce_codes.KeyedCodes(rows, cfg)
    assert "zz-only-repeats" in view.levels("variant") and "aa-only-planned" in view.levels("judge")
    excluded = {"blank", "malformed", "duplicate", "missing_planned"}
    for col in ("variant", "judge", "scenario"):
        want = sorted({r[col] for r in rows.select(col, "bucket").iter_rows(named=True)
                       if r["bucket"] not in excluded and r[col] is not None})
        assert view.cell_levels(col) == want == selection.cell_values(rows, col)
        assert len(want) >= 2
    assert "zz-only-repeats" not in view.cell_levels("variant")
    assert "aa-only-planned" not in view.cell_levels("judge")


def test_flags_forgotten_are_read_again_the_same(generated: tuple[pl.DataFrame, Any]) -> None:
    """The census's per-row flags, dropped after the census (forget("flags")), are read again
    the same when asked for; each counts what a loop over the keyed rows counts."""
    rows, cfg = generated
    view = reduce_codes.KeyedCodes(rows, cfg)
    first = {k: v.copy() for k, v in view.flags().items()}
    view.forget("flags")
    assert "flags" not in view._parts and "base" in view._parts
    again = view.flags()
    assert list(again) == list(first) and len(first) == 2 + len(cfg.score_names)
    for k in first:
        np.testing.assert_array_equal(again[k], first[k])
    keyed = [r for r in rows.iter_rows(named=True) if r["bucket"] not in ("blank", "malformed")]
    for fld in cfg.score_names:
        want = sum(r[f"{fld}__status"] in ("absent", "null", "sentinel", "declared_missing")
                   and r["bucket"] not in ("duplicate", "missing_planned") for r in keyed)
        assert int(again[f"nulls__{fld}"].sum()) == want, fld
    assert int(again[f"nulls__{cfg.headline}"].sum()) > 0


def test_bucket_codes_are_positions_among_the_bucket_names(generated: tuple[pl.DataFrame, Any]) -> None:
    """Each keyed row's bucket code is its bucket's position among the names, -1 for a value
    that is none of them (a table that did not come from ingest): a loop's. A null bucket is
    not a keyed row (the keyed predicate is null there)."""
    rows, cfg = generated
    rows = rows.with_columns(pl.when(pl.int_range(pl.len()) == 3).then(pl.lit("weird"))
                             .when(pl.int_range(pl.len()) == 5).then(pl.lit(None, dtype=pl.String))
                             .otherwise("bucket").alias("bucket"))
    names = list(reduce_codes._BUCKET_NAMES)
    keyed = [b for b in rows["bucket"].to_list() if b is not None and b not in ("blank", "malformed")]
    want = [names.index(b) if b in names else -1 for b in keyed]
    got = reduce_codes.KeyedCodes(rows, cfg).bucket_codes()
    assert got.tolist() == want and -1 in want and len(set(want)) >= 4
    assert [reduce_codes.bucket_code(n) for n in names] == list(range(len(names)))


def test_name_counts_from_codes_count_the_rows() -> None:
    rows = pl.DataFrame({
        "bucket": ["valid", "valid", "partial", "malformed", "duplicate", "valid"],
        "scenario": ["s1", "s1 ", "s1", "s1 ", "s1 ", "caf\u00e9"],
        "variant": ["v", "v", "v", "v", "v", "v"], "trial": ["1", "1", "2", "1", "1", "1"],
        "judge": ["j", "j", "j", "j", "j", "j"],
    })
    cfg = load_config()
    rows = rows.with_columns(pl.lit(False).alias(f"{cfg.headline}__from_string"),
                             *[pl.lit("valid").alias(f"{n}__status") for n in cfg.score_names])
    view = reduce_codes.KeyedCodes(rows, cfg)
    assert view.usable
    got = names.lookalike_names(rows, view)
    # keyed rows: every bucket but malformed; "s1" twice, "s1 " twice (valid + duplicate)
    assert [(w["field"], [(v["text"], v["rows"]) for v in w["variants"]]) for w in got] == [
        ("scenario", [("s1", 2), ("s1 ", 2)])]
    assert got == names.lookalike_names(rows)


@pytest.mark.parametrize("sizes", [(3, 5, 7), (4000, 3000, 2),  # dense table; sparse: np.unique
                                   (70000, 70000), (2**21, 2**21, 2**21)])  # int64 identifiers; wider than 2**62
def test_group_ids_equal_np_unique_of_the_code_rows(sizes: tuple[int, ...]) -> None:
    rng = np.random.default_rng(3)
    codes = [rng.integers(0, s, 500).astype(np.int32) for s in sizes]
    keys, inv = reduce_codes.group_ids(*codes)
    want_keys, want_inv = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
    assert np.array_equal(keys, want_keys) and np.array_equal(inv, want_inv.reshape(-1))
    assert keys.dtype == np.int64 and inv.dtype == np.int64
    keys32, inv32 = reduce_codes.group_ids(*codes, key_dtype=np.int32, inv_dtype=np.int32)
    assert keys32.dtype == np.int32 and inv32.dtype == np.int32
    assert np.array_equal(keys32, want_keys) and np.array_equal(inv32, want_inv.reshape(-1))
    # counts of a mask's rows per group, a block at a time: the plain bincount's
    mask = rng.random(500) < 0.4
    g = keys.shape[0]
    want = np.bincount(want_inv.reshape(-1)[mask], minlength=g)
    assert np.array_equal(reduce_codes.count_where(inv32, mask, g), want) and want.sum() == mask.sum()


def test_bootstrap_weights_into_uint8_are_the_float64_weights() -> None:
    g = 37
    want = stats.joint_bootstrap_weights(g, 0, 200, 11)
    got = stats.joint_bootstrap_weights(g, 0, 200, 11, out=np.empty((200, g), dtype=np.uint8))
    assert got.dtype == np.uint8 and np.array_equal(got, want)
    assert np.array_equal(stats.joint_bootstrap_weights(g, 70, 130, 11, out=np.empty((60, g), np.uint8)),
                          want[70:130])
    assert np.all(want.sum(axis=1) == g)
    with pytest.raises(ValueError, match="shape"):
        stats.joint_bootstrap_weights(g, 0, 10, 11, out=np.empty((9, g), np.uint8))


def test_draws_with_shared_count_columns_equal_the_float64_reference() -> None:
    """Integer columns whose counts are equal share one count column in the product; the
    draws are those of stats.joint_bootstrap_means (float64, every column), bit for bit."""
    rng = np.random.default_rng(8)
    g = 40
    cfg = dataclasses.replace(load_config(), resamples=150)
    jb = reduce.JointBootstrap.for_scenarios([f"s{i:02d}" for i in range(g)], cfg)
    n = rng.integers(0, 4, size=g).astype(float)
    n2 = rng.integers(0, 3, size=g).astype(float)
    cols_n = [n, n, n2, n, n2]
    sums = [cn * rng.integers(1, 11, size=g) for cn in cols_n]
    ids = []
    for cn, s in zip(cols_n, sums, strict=True):
        codes = np.flatnonzero(cn > 0)
        ids.append(jb.add_sums(codes, cn[codes], s[codes]))
    assert len(set(ids)) == 5
    assert jb._distinct_counts(ids) == [0, 0, 1, 0, 1]
    got = jb.draws(ids)
    want = stats.joint_bootstrap_means(np.stack(sums, axis=1), np.stack(cols_n, axis=1), 150, jb.seed)
    assert np.array_equal(got, want, equal_nan=True)


@pytest.mark.parametrize("g", [7, 3_000_000])  # blocks of 2**20 rows; blocks as long as the groups
def test_count_where_by_blocks_is_the_bincount_of_the_selected_groups(g: int) -> None:
    rng = np.random.default_rng(9)
    groups = rng.integers(0, g, 3 * 2**20 + 17).astype(np.int32)
    mask = rng.random(groups.size) < 0.3
    assert np.array_equal(reduce_codes.count_where(groups, mask, g), np.bincount(groups[mask], minlength=g))
    assert np.array_equal(reduce_codes.count_where(groups, None, g), np.bincount(groups, minlength=g))
