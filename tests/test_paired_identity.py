"""The paired records from the prepared tables equal a plain per-record reference.

``workbench.analysis.paired`` codes the cell rows once (integer scenario, variant, trial and judge
codes in the names' order), sorts each scope once and computes every judge offset, contrast
and repetition figure on slices of numpy arrays. tests/reference_paired.py computes each
record on its own, filtering and sorting the row table in polars and passing scenario names
to the statistics (the code before the prepared tables). The two must agree exactly: every
value, bootstrap interval and p-value, on a generated file built to hit the cases the coding
has to get right: scenario and trial names whose string order is not their numeric order, a
judge present in some variants only, a variant pair with no judge in common (scenario means),
missing scores, non-dyadic fractional scores in shuffled line order (float sums depend on the
order of their terms), subsets, and claims-style records for one judge and a variant absent
from a subset. Ingest never leaves two valid rows of one judgment (conflicting re-runs lose
their scores), but the offsets must not depend on that: a second table adds such rows.
"""

from __future__ import annotations

import importlib
import json
import math
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
import reference_paired as ref

import workbench as wb
from workbench import stats
from workbench.common import schemas
from workbench.document import build as document
from workbench.reduce import codes as reduce_codes
from workbench.reduce.sufficient import JointBootstrap

paired = importlib.import_module("workbench.analysis.paired")


def _lines(seed: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    # "s10" < "s2" and trial "10" < "2" as strings: codes must follow the names' order
    scenarios = [f"s{i}" for i in range(14)] + ["é-accent", "S-upper", "s1-1"]
    plan = {"A": ("j1", "j2"), "B": ("j1", "j2"), "C": ("j1", "j2", "j3"), "D": ("j3",)}
    out: list[dict[str, Any]] = []
    for s in scenarios:
        level = rng.normal(0, 1)
        for v, judges in plan.items():
            trials = (1, 2, 10) if v != "D" else (1, 2)
            for t in trials:
                for j in judges:
                    if rng.random() < 0.08:
                        continue  # no line at all
                    r: dict[str, Any] = {"scenario": s, "variant": v, "trial": t, "judge": j}
                    if rng.random() > 0.15:
                        # tenths: not exact in binary, so a different summation order shows
                        r["overall"] = round(float(np.clip(6 + level + rng.normal(0, 1.5), 1, 10)), 1)
                    out.append(r)
    # conflicting re-runs: a second row of the same judgment with another score (both lose it)
    for r in [r for r in out if "overall" in r][::17]:
        out.append({**r, "overall": round(min(10.0, r["overall"] + 1.3), 1)})
    order = rng.permutation(len(out))
    return [out[i] for i in order]


def _read(lines: list[dict[str, Any]], cfg: wb.Config) -> pl.DataFrame:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "rows.jsonl"
        p.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
        rows, _ = wb.read_rows([str(p)], cfg)
    return rows


def _same(x: Any, y: Any, where: str) -> None:
    """Exact equality, NaN equal to NaN, dict key order included."""
    if isinstance(x, dict):
        assert isinstance(y, dict) and list(x) == list(y), where
        for k in x:
            _same(x[k], y[k], f"{where}.{k}")
    elif isinstance(x, list | tuple):
        assert type(x) is type(y) and len(x) == len(y), where
        for i, (u, v) in enumerate(zip(x, y, strict=True)):
            _same(u, v, f"{where}[{i}]")
    elif isinstance(x, float) and math.isnan(x):
        assert isinstance(y, float) and math.isnan(y), where
    else:
        assert type(x) is type(y) and x == y, f"{where}: {x!r} != {y!r}"


@pytest.fixture(scope="module", params=[False, True], ids=["scenario_judge", "trials_matched"])
def data(request: pytest.FixtureRequest) -> dict[str, Any]:
    cfg = wb.load_config(overrides={
        "bootstrap": {"resamples": 400, "seed": 11}, "scores": {"overall": "overall"},
        "subsets": {"low": {"scenario": ["s0", "s1", "s10", "s2", "é-accent"]},
                    "abd": {"variant": ["A", "B", "D"]}},
        "trials_matched": request.param})
    rows = _read(_lines(7), cfg)
    # two valid rows of some judgments: an item then pairs every row of a with every row of b
    extra = (rows.filter((pl.col("bucket") == "valid") & pl.col("overall").is_not_null()).gather_every(7)
             .with_columns((pl.col("overall") + 0.3).clip(upper_bound=10.0)))
    return {"cfg": cfg, "rows": rows, "rows_dup": pl.concat([rows, extra])}


def test_the_generated_file_has_the_cases(data: dict[str, Any]) -> None:
    rows = data["rows"]
    assert rows.filter(pl.col("bucket") == "conflict").height > 5
    assert data["rows_dup"].height - rows.height > 10
    assert rows["overall"].null_count() > 20
    assert {"1", "2", "10"} <= set(rows["trial"].drop_nulls().to_list())


@pytest.mark.parametrize("table", ["rows", "rows_dup"])
def test_judge_offsets_equal_the_reference(data: dict[str, Any], table: str) -> None:
    cfg, rows = data["cfg"], data[table]
    new_boot, ref_boot = JointBootstrap.for_rows(rows, cfg), JointBootstrap.for_rows(rows, cfg)
    got = schemas.records(paired.judge_offsets(rows, cfg, joint=new_boot), schemas.JUDGE_OFFSETS)
    want = []
    for rec in got:  # the same records, each computed on its own by the reference
        want.append(ref._offset_record(rows, cfg, rec["judge_a"], rec["judge_b"], rec["variant"],
                                       rec["subset"], 0, ref_boot))
    ref_boot.run()
    assert len(got) == 3 * (1 + 4 + 2)  # 3 judge pairs x (pooled + 4 variants + 2 subsets)
    # a judge in some variants only: j1-j3 pairs exist in C only
    assert [r["pairs"] for r in got if r["judge_b"] == "j3" and r["variant"] == "D"] == [0, 0]
    assert any(r["pairs"] for r in got if r["judge_b"] == "j3" and r["variant"] == "C")
    assert any(r["only_a"] and r["only_b"] for r in got)
    for g, w in zip(got, want, strict=True):
        _same(g, w, f"{g['judge_a']}-{g['judge_b']}/{g['variant']}/{g['subset']}")
    _same(new_boot.record(), ref_boot.record(), "bootstrap")


def test_contrasts_equal_the_reference(data: dict[str, Any]) -> None:
    cfg, rows = data["cfg"], data["rows"]
    new_boot, ref_boot = JointBootstrap.for_rows(rows, cfg), JointBootstrap.for_rows(rows, cfg)
    got = schemas.records(paired.contrasts(rows, cfg, joint=new_boot), schemas.PAIRED_CONTRASTS)
    want = [ref.contrast_record(rows, cfg, r["a"], r["b"], None, r["subset"], None, 0, ref_boot) for r in got]
    ref_boot.run()
    units = {r["paired_unit"] for r in got}
    assert "scenario_mean" in units  # D has only j3, A and B never: no (scenario, judge) in common
    assert {"row" if cfg.trials_matched else "scenario_judge"} < units
    assert any(r["valid_n_a"] == 0 for r in got if r["subset"] == "abd")  # C is not in subset abd
    for g, w in zip(got, want, strict=True):
        extra = {k: g.pop(k) for k in ("p_holm", "higher", "holm_significant", "underpowered")}
        assert set(extra) <= {"p_holm", "higher", "holm_significant", "underpowered"}
        _same(g, w, f"{g['a']}-{g['b']}/{g['subset']}")
    _same(new_boot.record(), ref_boot.record(), "bootstrap")


@pytest.mark.parametrize("field,subset,judge", [
    ("overall", None, "j1"), ("overall", "low", "j3"), ("overall", None, "nobody"), ("overall", "abd", None)])
def test_single_contrast_records_equal_the_reference(data: dict[str, Any], field: str, subset: str | None,
                                                      judge: str | None) -> None:
    """contrast_record as check.py calls it for a claim: one judge, a subset, its own bootstrap."""
    cfg, rows = data["cfg"], data["rows"]
    for a, b in (("A", "B"), ("C", "D"), ("D", "A"), ("A", "nope")):
        got = paired.contrast_record(rows, cfg, a, b, field, subset, judge)
        want = ref.contrast_record(rows, cfg, a, b, field, subset, judge)
        _same(got, want, f"{a}-{b}/{subset}/{judge}")


def test_single_offset_records_equal_the_reference(data: dict[str, Any]) -> None:
    cfg, rows = data["cfg"], data["rows"]
    for ja, jb, variant, subset in (("j1", "j2", "A", None), ("j2", "j1", None, "low"),
                                    ("j1", "j3", "C", None), ("j3", "j2", None, None)):
        _same(paired._offset_record(rows, cfg, ja, jb, variant, subset, 0),
              ref._offset_record(rows, cfg, ja, jb, variant, subset, 0), f"{ja}-{jb}/{variant}/{subset}")


def test_judge_pairs_order_every_combination_by_value(data: dict[str, Any]) -> None:
    cfg, rows = data["cfg"], data["rows_dup"]
    jp = paired.judge_pairs(rows, cfg, "j1", "j2")
    keys = jp.select("scenario", "variant", "trial").rows()
    assert len(keys) > len(set(keys))  # conflicting re-runs: items with several pairs
    assert jp.select("scenario", "variant", "trial", "a", "b").rows() == sorted(
        jp.select("scenario", "variant", "trial", "a", "b").rows())


def test_repetition_equals_the_reference(data: dict[str, Any]) -> None:
    cfg, rows = data["cfg"], data["rows"]
    got = document.repetition_section(paired.repetition_consistency(rows, cfg))
    assert [r["variant"] for r in got["per_variant"]] == ["A", "B", "C", "D"]
    assert all(r["icc_trials"] is not None for r in got["per_variant"])
    _same(got, ref.repetition_consistency(rows, cfg), "repetition")


def test_contrast_missingness_tests_equal_the_units_of_the_two_variants(data: dict[str, Any]) -> None:
    """The confounding test of each variant pair (items of every variant found once, then
    selected per pair) is the design test on the judgment units of those two variants alone,
    built again from the rows; a variant the units lack selects nothing of it."""
    from workbench.analysis import census as census_mod

    cfg, rows = data["cfg"], data["rows"]
    units = census_mod.judgment_units(rows, cfg)
    variants = ["A", "B", "C", "D", "absent"]
    for unit in census_mod.UNITS:
        items = paired._PairItems(census_mod.VariantItems(units, unit))
        cfg_u = cfg.with_overrides(missingness_unit=unit)
        coded = paired._PairItems(census_mod.VariantItems.of_rows(rows, cfg_u))
        view = reduce_codes.KeyedCodes(rows, cfg_u)
        viewed = paired._PairItems(census_mod.VariantItems.of_view(view, cfg_u))
        assert census_mod._dense_state(view) is not None  # the dense judgment table was used
        for i, a in enumerate(variants):
            for b in variants[i + 1:]:
                seed = stats.derive_seed(cfg.seed, "contrast_confounding", a, b)
                want = census_mod.design_missingness_test(units.filter(pl.col("variant").is_in([a, b])), "variant",
                                                          seed, unit)
                _same(items.test(seed, [a, b]), want, f"{a}-{b}")
                _same(coded.test(seed, [a, b]), want, f"{a}-{b} coded")
                _same(viewed.test(seed, [a, b]), want, f"{a}-{b} from the view")


def test_key_codes_are_np_unique_codes_of_the_cell_rows() -> None:
    """The paired tables' key codes (whole-column Enum casts, then the cell rows kept) are
    np.unique's codes of the cell rows' names and its sorted labels, with names whose code
    point order is not their numeric or case order, and with names seen only on rows that are
    no cell row (a malformed or duplicate line) left out of the labels."""
    from workbench.ingest.selection import CELL_ROW_EXCLUDE

    rng = np.random.default_rng(4)
    words = np.array(["s10", "s2", "S-upper", "é-accent", "e\u0301", "s1-1", " z", "\U0001f600", "s\x1fv", "10", "9"],
                     dtype=object)
    buckets = np.array(["valid", "partial", *sorted(CELL_ROW_EXCLUDE)], dtype=object)
    cfg = wb.load_config()
    for n in (1, 7, 5000):
        cols = {k: words[rng.integers(0, words.size, n)].tolist() for k in paired.KEYS}
        bucket = buckets[rng.integers(0, buckets.size, n)]
        bucket[0] = "valid"  # at least one cell row
        rows = pl.DataFrame({"bucket": bucket.tolist(), **cols, cfg.headline: rng.random(n)})
        coded = paired._Coded(rows, cfg, [cfg.headline])
        cell = ~np.isin(bucket, sorted(CELL_ROW_EXCLUDE))
        for k in paired.KEYS:
            uniq, inv = np.unique(np.array(cols[k], dtype=object)[cell], return_inverse=True)
            assert coded.names[k] == uniq.tolist(), k
            got = coded.frame[paired._CODE[k]]
            # the scenario's codes int32; the variant's, trial's and judge's a byte (few labels)
            assert got.dtype == (pl.Int32 if k == "scenario" else pl.UInt8), k
            assert got.to_list() == inv.reshape(-1).tolist(), k
        assert coded.frame[cfg.headline].to_list() == rows[cfg.headline].to_numpy()[cell].tolist()


def test_one_key_sort_is_numpys_lexsort() -> None:
    """The scopes' row order (a stable sort of one mixed-radix key, values sorted within runs
    of equal keys) is np.lexsort's permutation of the keys and values, ties included."""
    rng = np.random.default_rng(8)
    for n, width in ((0, 3), (1, 3), (2, 1), (50, 4), (5000, 40), (5000, 10**9)):
        key = rng.integers(0, width, n)
        x = rng.integers(0, 4, n).astype(float) / 10
        assert paired._lexsort(x, [key]).tolist() == np.lexsort((x, key)).tolist(), (n, width)
    a, b = rng.integers(0, 5, 300), rng.integers(0, 5, 300)  # several keys: lexsort itself
    x = rng.random(300)
    assert paired._lexsort(x, [a, b]).tolist() == np.lexsort((x, a, b)).tolist()


def test_shared_tables_give_the_same_tables(data: dict[str, Any]) -> None:
    """The paired stages given one PairedTables (coded once, as the pipeline passes them) give
    exactly the tables each gives on its own, also with a variant that has no valid value
    (in the shared coding, not in the repetition's own); tables of other rows are refused."""
    cfg = data["cfg"]
    extra = [{"scenario": "s3", "variant": "E", "trial": t, "judge": "j1"} for t in (1, 2)]
    rows = _read(_lines(7) + extra, cfg)
    assert rows.filter(pl.col("variant") == "E")["overall"].null_count() == 2
    tables = paired.PairedTables(rows, cfg)
    for stage in (paired.judge_offsets, paired.contrasts):
        alone, shared = stage(rows, cfg), stage(rows, cfg, tables=tables)
        assert shared.equals(alone) and shared.height > 0
    alone, shared = paired.repetition_consistency(rows, cfg), paired.repetition_consistency(rows, cfg, tables)
    assert shared.per_variant.equals(alone.per_variant) and shared.slices.equals(alone.slices)
    assert alone.per_variant["variant"].to_list() == ["A", "B", "C", "D"]
    with pytest.raises(ValueError, match="other rows"):
        paired.contrasts(data["rows"], cfg, tables=tables)
    # prepared (every scope built, the coded frame released), as the pipeline passes them:
    # the same tables, subsets included; the repetition stage codes the rows itself
    prepared = paired.PairedTables(rows, cfg).prepare()
    assert prepared.coded().frame is None and set(prepared._scopes) == {None, *cfg.subsets} == {None, "low", "abd"}
    for stage in (paired.judge_offsets, paired.contrasts):
        assert stage(rows, cfg, tables=prepared).equals(stage(rows, cfg))
    assert paired.repetition_consistency(rows, cfg, prepared).per_variant.equals(alone.per_variant)
    with pytest.raises(RuntimeError, match="released"):
        paired._Scope(prepared.coded(), cfg, cfg.headline, "low", judge="j1")


def test_integer_cluster_codes_are_np_unique_codes() -> None:
    """The statistics code integer labels in O(n); the codes are np.unique's."""
    rng = np.random.default_rng(3)
    for n in (1, 5, 300, 5000):
        for dtype in (np.int64, np.int32, np.int8, np.uint16, np.uint64):
            info = np.iinfo(dtype)
            lo, hi = max(info.min, -100), min(info.max, 20 * n)
            lab = rng.integers(lo, hi, n, endpoint=True).astype(dtype)
            codes, g = stats._codes(lab, n)
            u, inv = np.unique(lab, return_inverse=True)
            assert g == u.size and codes.tolist() == inv.reshape(-1).tolist(), (n, dtype)
    wide = np.array([0, 2**40, 5, 2**40], dtype=np.int64)  # a sparse range: np.unique itself
    assert stats._codes(wide, 4)[0].tolist() == [0, 2, 1, 2]


def test_krippendorff_two_raters_is_the_package_bit_for_bit() -> None:
    import krippendorff

    rng = np.random.default_rng(5)
    for trial in range(120):
        n = int(rng.integers(1, 300))
        domain = rng.choice(np.r_[np.arange(11.0), [0.1, 0.7, 2.5, -3.3]], size=int(rng.integers(2, 9)),
                            replace=False)
        x = rng.choice(domain, n)
        y = np.where(rng.random(n) < 0.6, x, rng.choice(domain, n))
        for level in ("interval", "nominal", "ordinal", "ratio"):
            got = stats.krippendorff_alpha(x, y, level)
            if np.unique(np.r_[x, y]).size < 2:
                assert got is None
                continue
            with np.errstate(divide="ignore", invalid="ignore"):
                want = float(krippendorff.alpha(reliability_data=np.vstack([x, y]), level_of_measurement=level))
            assert (got is None and math.isnan(want)) or got == want, (trial, level, got, want)


@pytest.fixture(scope="module")
def clustered() -> dict[str, Any]:
    """The same file with a cluster of its own field: scenarios grouped so that the clusters'
    order is not the scenarios' (s0, s6, s12 share G0...; the accented and upper-case names
    each sit with others)."""
    cfg = wb.load_config(overrides={
        "bootstrap": {"resamples": 400, "seed": 11}, "scores": {"overall": "overall"},
        "subsets": {"abd": {"variant": ["A", "B", "D"]}}, "cluster": "grp"})
    lines = _lines(7)
    names = sorted({r["scenario"] for r in lines})
    for r in lines:
        r["grp"] = f"G{(5 - names.index(r['scenario'])) % 6}"
    return {"cfg": cfg, "rows": _read(lines, cfg)}


def test_clustered_offsets_and_contrasts_equal_the_reference(clustered: dict[str, Any]) -> None:
    cfg, rows = clustered["cfg"], clustered["rows"]
    assert rows["cluster"].drop_nulls().n_unique() == 6 and rows["scenario"].drop_nulls().n_unique() == 17
    new_boot, ref_boot = JointBootstrap.for_rows(rows, cfg), JointBootstrap.for_rows(rows, cfg)
    assert len(new_boot.scenarios) == 6 and new_boot.record()["scenarios"] == 17
    got = schemas.records(paired.judge_offsets(rows, cfg, joint=new_boot), schemas.JUDGE_OFFSETS)
    want = [ref._offset_record(rows, cfg, r["judge_a"], r["judge_b"], r["variant"], r["subset"], 0, ref_boot)
            for r in got]
    got_c = schemas.records(paired.contrasts(rows, cfg, joint=new_boot), schemas.PAIRED_CONTRASTS)
    want_c = [ref.contrast_record(rows, cfg, r["a"], r["b"], None, r["subset"], None, 0, ref_boot) for r in got_c]
    ref_boot.run()
    assert {r["clusters"] for r in got if r["pairs"]} <= set(range(1, 7))
    assert any(r["clusters"] == 6 for r in got) and all(r["cluster"] == "grp" for r in got)
    for g, w in zip(got, want, strict=True):
        _same(g, w, f"{g['judge_a']}-{g['judge_b']}/{g['variant']}/{g['subset']}")
    assert any(r["between_scenario_var"] is not None for r in got_c)
    for g, w in zip(got_c, want_c, strict=True):
        for k in ("p_holm", "higher", "holm_significant", "underpowered"):
            g.pop(k)
        for k in ("between_scenario_var", "within_scenario_var", "trials_per_scenario"):
            # the reference's loops sum in another order: equal to the last bits
            assert (g[k] is None) == (w[k] is None) and (g[k] is None or math.isclose(g[k], w[k], rel_tol=1e-12,
                                                                                      abs_tol=1e-15)), k
            g[k] = w[k]
        for k in ("power_now", "trials_ceiling_power"):
            assert (g[k] is None) == (w[k] is None) and (g[k] is None or math.isclose(g[k], w[k], rel_tol=1e-9)), k
            g[k] = w[k]
        _same(g, w, f"{g['a']}-{g['b']}/{g['subset']}")
    _same(new_boot.record(), ref_boot.record(), "bootstrap")


def test_many_variants_narrow_codes_give_the_reference_records() -> None:
    """300 variants (their codes need 16 bits, past a byte) and 2 judges: the offsets of
    variants coded above 255 and the contrasts' pairs equal the reference's records."""
    rng = np.random.default_rng(8)
    names = [f"v{i:03d}" for i in range(300)]
    lines = [{"scenario": f"s{s}", "variant": v, "trial": t, "judge": j,
              "overall": int(rng.integers(1, 11)) if rng.random() > 0.1 else None}
             for s in range(5) for v in names for t in (1, 2) for j in ("ja", "jb")]
    cfg = wb.load_config(overrides={"bootstrap": {"resamples": 200, "seed": 3}, "scores": {"overall": "overall"}})
    rows = _read(lines, cfg)
    tables = paired.PairedTables(rows, cfg).prepare()
    assert tables.scope(None).vr.dtype == np.uint16 and tables.scope(None).jd.dtype == np.uint8
    boot, ref_boot = JointBootstrap.for_rows(rows, cfg), JointBootstrap.for_rows(rows, cfg)
    scope = tables.scope(None)
    got = [paired._offset_from(scope, cfg, "ja", "jb", v, None, boot) for v in (None, "v007", "v256", "v299")]
    want = [ref._offset_record(rows, cfg, "ja", "jb", v, None, 0, ref_boot) for v in (None, "v007", "v256", "v299")]
    got_c = [paired._contrast_from(scope, cfg, a, b, cfg.headline, None, None, boot)
             for a, b in (("v000", "v299"), ("v256", "v257"))]
    want_c = [ref.contrast_record(rows, cfg, a, b, None, None, None, 0, ref_boot)
              for a, b in (("v000", "v299"), ("v256", "v257"))]
    # the judge orders freed (the pipeline does so after the offsets) are made again, the same
    tables.forget_judge_orders()
    assert scope._by_judge is None and scope._judges_sorted is None
    again = paired._offset_from(scope, cfg, "ja", "jb", None, None, boot)
    boot.run()
    ref_boot.run()
    assert all(r["pairs"] > 0 for r in got)
    for g, w in zip([*got, *got_c], [*want, *want_c], strict=True):
        _same(g, w, "many variants")
    _same(again, want[0], "judge orders made again")
