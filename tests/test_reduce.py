"""The reduction and the joint cluster bootstrap (workbench/reduce/sufficient.py), against naive loops.

The expected values are computed here independently: scenario weights drawn by the rule
the docs state (resample r: ``default_rng([seed, r]).integers(G, size=G)`` over the sorted
scenario list, counted in a Python loop), weighted means summed row by row over the raw
lines, percentiles by ``np.quantile``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import workbench as wb
from workbench import stats
from workbench.analysis import paired
from workbench.analysis import scorecard as sc
from workbench.common import schemas
from workbench.reduce import sufficient as reduce


def write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(ln) + "\n" for ln in lines), encoding="utf-8")
    return path


def cfg_of(**over: Any) -> wb.Config:
    base: dict[str, Any] = {"bootstrap": {"resamples": 300, "seed": 7}, "min_clusters": 1, "min_valid_n": 1}
    base.update(over)
    return wb.load_config(overrides=base)


def design(seed: int = 5, scenarios: int = 9) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    out = []
    for s in range(scenarios):
        base = rng.normal(6, 1.5)
        for v, eff in (("A", 0.0), ("B", 0.7)):
            for t in (1, 2):
                for j, off in (("j1", 0.0), ("j2", -0.4)):
                    if rng.random() < 0.15:  # a missing overall: never a number
                        out.append({"scenario": f"s{s}", "variant": v, "trial": t, "judge": j})
                        continue
                    x = int(np.clip(np.rint(base + eff + off + rng.normal(0, 1)), 1, 10))
                    out.append({"scenario": f"s{s}", "variant": v, "trial": t, "judge": j, "overall": x})
    return out


def naive_weights(scenarios: list[str], seed: int, resamples: int) -> list[dict[str, int]]:
    out = []
    rng = None
    for r in range(resamples):
        if r % 64 == 0:  # 64 resamples per generator, one after the other
            rng = np.random.default_rng([seed, r // 64])
        draws = rng.integers(len(scenarios), size=len(scenarios))
        w = dict.fromkeys(scenarios, 0)
        for i in draws.tolist():
            w[scenarios[i]] += 1
        out.append(w)
    return out


def naive_means(lines: list[dict[str, Any]], weights: list[dict[str, int]], keep: Any) -> list[float]:
    out = []
    for w in weights:
        num = den = 0.0
        for ln in lines:
            if keep(ln) and isinstance(ln.get("overall"), int):
                num += w[ln["scenario"]] * ln["overall"]
                den += w[ln["scenario"]]
        out.append(num / den if den > 0 else float("nan"))
    return out


def pct(x: list[float], c: float = 0.95) -> tuple[float, float]:
    a = np.array([v for v in x if v == v])
    lo, hi = np.quantile(a, [(1 - c) / 2, 1 - (1 - c) / 2])
    return float(lo), float(hi)


def test_weights_are_per_resample_multinomial_counts() -> None:
    w = stats.joint_bootstrap_weights(7, 0, 150, 3)
    assert w.shape == (150, 7) and np.all(w.sum(axis=1) == 7)
    for r in (0, 5, 63, 64, 149):
        rng = np.random.default_rng([3, r // 64])
        for _ in range(r % 64):
            rng.integers(7, size=7)
        draws = rng.integers(7, size=7)
        assert w[r].tolist() == [float(list(draws).count(g)) for g in range(7)]
    # a resample's weights do not depend on the block it is drawn in
    assert np.array_equal(stats.joint_bootstrap_weights(7, 5, 9, 3), w[5:9])
    assert np.array_equal(stats.joint_bootstrap_weights(7, 60, 131, 3), w[60:131])


def test_columns_after_their_pass_keep_clusters_and_identity_not_sums() -> None:
    """A drawn column releases its sums; its clusters, alone and with another column (the
    union of their scenarios, counted by hand), and its identity (the same sums register as
    the same column, other sums as a new one) stay. The uint8 weight cache, drawn block by
    block, holds exactly the weights of stats.joint_bootstrap_weights."""
    scen = [f"s{i:02d}" for i in range(21)]
    cfg = wb.load_config(overrides={"bootstrap": {"resamples": 150, "budget": None}})
    jb = reduce.JointBootstrap.for_scenarios(scen, cfg)
    a = jb.add_sums(np.array([0, 3, 9, 20]), np.array([1.0, 2.0, 1.0, 3.0]), np.array([4.0, 9.0, 2.0, 12.0]))
    b = jb.add_sums(np.array([20, 3, 5]), np.array([1.0, 1.0, 2.0]), np.array([7.0, 1.0, 6.0]))
    assert jb.add_sums(np.array([9, 0, 20, 3]), np.array([1.0, 1.0, 3.0, 2.0]),
                       np.array([2.0, 4.0, 12.0, 9.0])) == a  # the same column, listed in another order
    target: dict[str, Any] = {}
    jb.request(target, a, b)
    jb.run()
    assert jb.columns[a].s is None and jb.columns[b].n is None  # released
    assert jb.clusters(a) == 4 and jb.clusters(b) == 3
    assert jb.clusters(a, b) == len({0, 3, 9, 20} | {20, 3, 5}) == 5
    assert jb.add_sums(np.array([0, 3, 9, 20]), np.array([1.0, 2.0, 1.0, 3.0]),
                       np.array([4.0, 9.0, 2.0, 12.0])) == a
    assert jb.add_sums(np.array([0]), np.array([1.0]), np.array([5.0])) == 2
    assert jb._cache is not None and jb._cache.dtype == np.uint8
    assert np.array_equal(jb._cache, stats.joint_bootstrap_weights(21, 0, 150, jb.seed))


def test_weights_past_the_memory_cap_are_cached_in_a_mapped_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the in-memory cap the uint8 weights live in a nameless, memory-mapped file of
    WORKBENCH_SPILL_DIR: the same weights as stats.joint_bootstrap_weights (150 resamples,
    written in generator blocks of 64), the same draws (read in three blocks of resamples) as
    the in-memory cache and as no cache at all, and nothing left in the folder. A folder that
    cannot take the file (absent, or full in the middle of the writes), or
    WORKBENCH_SPILL=never, keeps the table in memory below 128 MiB and past that draws per
    pass: the same draws every way. An unknown WORKBENCH_SPILL is ingest's one-line error."""
    scen = [f"s{i:02d}" for i in range(21)]
    cfg = wb.load_config(overrides={"bootstrap": {"resamples": 150, "budget": None}})
    sums = [(np.array([0, 3, 9, 20]), np.array([1.0, 2.0, 1.0, 3.0]), np.array([4.0, 9.0, 2.5, 12.0])),
            (np.array([20, 3, 5]), np.array([1.0, 1.0, 2.0]), np.array([7.0, 1.0, 6.0]))]

    def draws() -> tuple[reduce.JointBootstrap, np.ndarray]:
        jb = reduce.JointBootstrap.for_scenarios(scen, cfg)
        cols = [jb.add_sums(*c) for c in sums]
        return jb, jb.draws(cols)

    def in_memory(jb: reduce.JointBootstrap) -> bool:
        return isinstance(jb._cache, np.ndarray) and not isinstance(jb._cache, np.memmap)

    memory, want = draws()
    assert in_memory(memory)
    monkeypatch.setattr(stats, "_JOINT_BLOCK_CELLS", 21 * 64)  # 64 resamples a block: three blocks
    monkeypatch.setattr(reduce, "_CACHE_WEIGHTS", 0)
    monkeypatch.setenv("WORKBENCH_SPILL_DIR", str(tmp_path))
    mapped, got = draws()
    assert isinstance(mapped._cache, np.memmap) and not mapped._cache.flags.writeable
    assert np.array_equal(np.asarray(mapped._cache), stats.joint_bootstrap_weights(21, 0, 150, mapped.seed))
    assert list(tmp_path.iterdir()) == []  # no name: the mapping holds it
    assert np.array_equal(got, want, equal_nan=True)
    monkeypatch.setenv("WORKBENCH_SPILL_DIR", str(tmp_path / "absent"))
    held, again = draws()
    assert in_memory(held)
    assert np.array_equal(again, want, equal_nan=True)
    monkeypatch.setenv("WORKBENCH_SPILL_DIR", str(tmp_path))
    real = reduce.tempfile.TemporaryFile

    class Full:  # the disk fills after the first block is written
        def __init__(self, **kw: Any) -> None:
            self.fh, self.writes = real(**kw), 0

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *exc: object) -> None:
            self.fh.close()

        def write(self, data: Any) -> int:
            self.writes += 1
            if self.writes > 1:
                raise OSError(28, "No space left on device")
            return self.fh.write(data)

    monkeypatch.setattr(reduce.tempfile, "TemporaryFile", Full)
    full, same = draws()
    assert in_memory(full)
    assert np.array_equal(same, want, equal_nan=True)
    monkeypatch.setattr(reduce.tempfile, "TemporaryFile", real)
    monkeypatch.setenv("WORKBENCH_SPILL", "never")
    kept, same = draws()
    assert in_memory(kept) and list(tmp_path.iterdir()) == []
    assert np.array_equal(same, want, equal_nan=True)
    monkeypatch.setattr(reduce, "_MEMORY_WEIGHTS", 0)  # past every cap: drawn per pass
    none, last = draws()
    assert none._cache is None and none._uncacheable
    assert np.array_equal(last, want, equal_nan=True)
    monkeypatch.setenv("WORKBENCH_SPILL", "nevr")
    with pytest.raises(wb.WorkbenchError, match="WORKBENCH_SPILL='nevr'"):
        draws()
    # a scenario drawn 256+ times does not fit uint8: found once (by the mapped file's first
    # block), no table in memory tried after it, and every pass draws float weights instead
    monkeypatch.setenv("WORKBENCH_SPILL", "auto")
    monkeypatch.setattr(reduce, "_MEMORY_WEIGHTS", 128 * 2**20)
    real_weights, tried = stats.joint_bootstrap_weights, []

    def no_uint8(g: int, start: int, stop: int, seed: int, out: Any = None) -> Any:
        if out is not None and out.dtype == np.uint8:
            tried.append(start)
            raise OverflowError("a cluster drawn 256 times does not fit uint8")
        return real_weights(g, start, stop, seed, out=out)

    monkeypatch.setattr(reduce.stats, "joint_bootstrap_weights", no_uint8)
    over, drawn = draws()
    assert over._cache is None and over._uncacheable and tried == [0]
    assert np.array_equal(drawn, want, equal_nan=True)


def test_joint_means_match_a_loop_and_undefined_is_nan() -> None:
    rng = np.random.default_rng(0)
    g, c = 6, 3
    n = rng.integers(0, 4, size=(g, c)).astype(float)
    n[:, 2] = 0.0
    n[1, 2] = 2.0  # column 2 lives in one scenario only: often undrawn
    s = n * rng.normal(5, 2, size=(g, c))
    got = stats.joint_bootstrap_means(s, n, 50, 9)
    w = stats.joint_bootstrap_weights(g, 0, 50, 9)
    for r in range(50):
        for j in range(c):
            num = sum(w[r, k] * s[k, j] for k in range(g))
            den = sum(w[r, k] * n[k, j] for k in range(g))
            if den == 0:
                assert np.isnan(got[r, j])
            else:
                assert got[r, j] == pytest.approx(num / den, rel=1e-12)
    assert np.isnan(got[:, 2]).sum() > 0  # never 0 for an undefined mean


@pytest.mark.parametrize(("sums", "dtype"), [
    ([0.0, 3.0, 255.0], np.uint8), ([0.0, 256.0, 65535.0], np.uint16), ([1.0, 65536.0], np.float32),
    ([-1.0, 4.0], np.float32), ([0.5, 2.0], np.float32), ([0.1, 2.0], np.float64),
    ([-0.0, 3.0], np.float32), ([np.nan, 3.0], np.float64), ([2.0**60], np.float32)])
def test_compact_sums_are_the_same_values_in_the_narrowest_exact_type(sums: list[float], dtype: type) -> None:
    """A waiting cell's per-scenario sums: non-negative integers up to 65,535 in a byte or
    two, others float32 when exact, else float64; the values back are the same bits (a -0.0
    keeps its sign: no integer type has one)."""
    s = np.array(sums, dtype=np.float64)
    got = reduce._compact_sums(s)
    assert got.dtype == dtype
    back = got.astype(np.float64)
    assert back.tobytes() == s.tobytes() or (np.isnan(s).any() and np.array_equal(back, s, equal_nan=True))


def test_integer_sums_in_a_byte_give_the_float64_draws() -> None:
    """Columns whose per-scenario sums are held in uint8/uint16 (integer scores) draw the same
    means as the loop of :func:`workbench.stats.joint_bootstrap_weights` over their float64 sums."""
    rng = np.random.default_rng(5)
    g = 40
    jb = reduce.JointBootstrap(scenarios=[f"s{i:02d}" for i in range(g)], seed=11, resamples=60,
                               resamples_requested=60, confidence=0.95)
    cols, ref = [], []
    for top in (3, 40, 900):  # sums up to 9, 120 (a byte) and 2,700 (16 bits)
        n = rng.integers(1, 4, size=g).astype(np.float64)
        s = np.array([float(rng.integers(0, top + 1, size=int(k)).sum()) for k in n])
        cols.append(jb.add_sums(np.arange(g), n, s))
        ref.append((n, s))
    assert [jb.columns[c].s.dtype for c in cols] == [np.uint8, np.uint8, np.uint16]
    got = jb.draws(cols)
    w = stats.joint_bootstrap_weights(g, 0, 60, 11)
    for j, (n, s) in enumerate(ref):
        want = (w @ s) / (w @ n)
        assert np.array_equal(got[:, j], want)


def test_scorecard_and_contrast_intervals_match_naive_joint_resampling(tmp_path: Path) -> None:
    lines = design()
    cfg = cfg_of(contrasts=[["B", "A"]])
    rows, _ = wb.read_rows([str(write(tmp_path / "r.jsonl", lines))], cfg)
    scen = sorted({ln["scenario"] for ln in lines})
    seed = stats.derive_seed(cfg.seed, "joint_bootstrap")
    weights = naive_weights(scen, seed, cfg.resamples)
    card = sc.scorecard(rows, cfg).to_dicts()
    draws = {}
    for v in ("A", "B"):
        for j in (None, "j1", "j2"):
            draws[v, j] = naive_means(lines, weights,
                                      lambda ln, v=v, j=j: ln["variant"] == v and (j is None or ln["judge"] == j))
            cell = next(c for c in card if c["variant"] == v and c["judge"] == j and c["field"] == "overall")
            lo, hi = pct(draws[v, j])
            assert cell["boot_low"] == pytest.approx(lo, abs=1e-12)
            assert cell["boot_high"] == pytest.approx(hi, abs=1e-12)
    # the contrast's unpaired bootstrap is the difference of the two cells' resampled means
    (con,) = paired.contrasts(rows, cfg).to_dicts()
    lo, hi = pct([b - a for a, b in zip(draws["A", None], draws["B", None], strict=True)])
    assert (con["boot_low"], con["boot_high"]) == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12))
    # paired: per (scenario, judge) unit, mean of valid trials of B minus that of A
    units: dict[tuple[str, str, str], list[int]] = {}
    for ln in lines:
        if isinstance(ln.get("overall"), int):
            units.setdefault((ln["scenario"], ln["judge"], ln["variant"]), []).append(ln["overall"])
    diffs = [(s, np.mean(units[s, j, "B"]) - np.mean(units[s, j, "A"]))
             for (s, j, v) in units if v == "A" and (s, j, "B") in units]
    pd = []
    for w in weights:
        den = sum(w[s] for s, _ in diffs)
        pd.append(sum(w[s] * d for s, d in diffs) / den if den else float("nan"))
    lo, hi = pct(pd)
    assert con["paired_boot_low"] == pytest.approx(lo, abs=1e-12)
    assert con["paired_boot_high"] == pytest.approx(hi, abs=1e-12)
    # judge offset j1 - j2 over items (scenario, variant, trial) both scored
    items: dict[tuple[str, str, int], dict[str, int]] = {}
    for ln in lines:
        if isinstance(ln.get("overall"), int):
            items.setdefault((ln["scenario"], ln["variant"], ln["trial"]), {})[ln["judge"]] = ln["overall"]
    od = [(k[0], d["j1"] - d["j2"]) for k, d in items.items() if len(d) == 2]
    off = schemas.records(paired.judge_offsets(rows, cfg), schemas.JUDGE_OFFSETS)[0]
    assert (off["judge_a"], off["judge_b"], off["variant"]) == ("j1", "j2", None)
    lo, hi = pct([sum(w[s] * d for s, d in od) / sum(w[s] for s, _ in od) for w in weights])
    assert (off["boot_low"], off["boot_high"]) == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12))


def test_intervals_do_not_depend_on_row_order_or_on_other_cells(tmp_path: Path) -> None:
    lines = design(seed=8)
    cfg = cfg_of()
    shuffled = lines[:]
    random.Random(4).shuffle(shuffled)
    a, _ = wb.read_rows([str(write(tmp_path / "a.jsonl", lines))], cfg)
    b, _ = wb.read_rows([str(write(tmp_path / "b.jsonl", shuffled))], cfg)
    ca, cb = sc.scorecard(a, cfg).to_dicts(), sc.scorecard(b, cfg).to_dicts()
    key = lambda c: (c["variant"], str(c["judge"]), c["field"])  # noqa: E731
    assert sorted(ca, key=key) == sorted(cb, key=key)
    # one cell alone on the run's weights gets exactly the interval it gets among all cells
    jb = reduce.JointBootstrap.for_rows(a, cfg)
    v = a.filter((a["variant"] == "B") & a["overall"].is_not_null() & (a["bucket"] == "valid"))
    rec: dict[str, Any] = {}
    jb.request(rec, jb.add_values(v["scenario"].to_numpy(), v["overall"].to_numpy()))
    jb.run()
    cell = next(c for c in ca if c["variant"] == "B" and c["judge"] is None and c["field"] == "overall")
    assert (rec["boot_low"], rec["boot_high"]) == (cell["boot_low"], cell["boot_high"])


def test_a_cell_in_few_scenarios_counts_its_undefined_resamples(tmp_path: Path) -> None:
    lines = design(scenarios=12)
    lines += [{"scenario": "s0", "variant": "C", "trial": 1, "judge": "j1", "overall": 4}]
    cfg = cfg_of()
    rows, _ = wb.read_rows([str(write(tmp_path / "r.jsonl", lines))], cfg)
    jb = reduce.JointBootstrap.for_rows(rows, cfg)
    card = sc.scorecard(rows, cfg, jb).to_dicts()
    c = next(c for c in card if c["variant"] == "C" and c["judge"] is None)
    assert c["boot_low"] is None and c["clusters"] == 1
    rec = next(u for u in jb.record()["undefined"] if u["where"] == "scorecard:C///overall")
    # P(s0 never drawn in 12 draws from 12) = (11/12)^12 = 0.352: about 106 of 300
    assert 70 < rec["undefined"] < 140 and rec["interval"] is False
    assert jb.record()["resamples"] == 300 and jb.record()["scenarios"] == 12


def test_budget_caps_resamples_and_is_recorded(tmp_path: Path) -> None:
    lines = design(scenarios=12)
    cfg = cfg_of(bootstrap={"resamples": 300, "seed": 7, "budget": 1200, "min_resamples": 150})
    assert reduce.bootstrap_resamples(cfg, 12) == 150  # 1200 / 12 = 100 < 150: the floor
    assert reduce.bootstrap_resamples(cfg, 3) == 300  # under the budget: as requested
    cfg2 = cfg_of(bootstrap={"resamples": 300, "seed": 7, "budget": 2400, "min_resamples": 100})
    assert reduce.bootstrap_resamples(cfg2, 12) == 200
    rows, _ = wb.read_rows([str(write(tmp_path / "r.jsonl", lines))], cfg2)
    jb = reduce.JointBootstrap.for_rows(rows, cfg2)
    assert (jb.resamples, jb.resamples_requested, jb.budget) == (200, 300, 2400)


def test_results_record_the_bootstrap_and_the_budget_is_applied(tmp_path: Path) -> None:
    from workbench.cli import main as cli

    path = write(tmp_path / "r.jsonl", design(scenarios=12))
    out = tmp_path / "out"
    # 12 scenarios x 300 resamples = 3600 > budget 1200: 1200 // 12 = 100, raised to the floor 150
    assert cli.main(["analyze", str(path), "--out", str(out), "--resamples", "300", "-q", "--no-gate",
                     "-p", "bootstrap.budget", "1200", "-p", "bootstrap.min_resamples", "150"]) == 0
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    boot = doc["bootstrap"]
    assert boot["method"] == stats.JOINT_BOOTSTRAP_METHOD
    assert (boot["resamples_requested"], boot["resamples"], boot["budget"], boot["scenarios"]) == (300, 150, 1200, 12)
    assert doc["config"]["bootstrap"]["budget"] == 1200
    n_cells = len(doc["scorecard"])
    assert boot["computed"]["scorecard"] == n_cells
    assert boot["computed"]["judge_offset"] == len(doc["judge_offsets"])
    assert boot["computed"]["contrast"] == len(doc["contrasts"])
    # the recorded resamples are the ones used: a run asking for exactly 150 gives the same intervals
    out2 = tmp_path / "out2"
    assert cli.main(["analyze", str(path), "--out", str(out2), "--resamples", "150", "-q", "--no-gate",
                     "-p", "bootstrap.budget", "null"]) == 0
    doc2 = json.loads((out2 / "results.json").read_text(encoding="utf-8"))
    assert [(c["boot_low"], c["boot_high"]) for c in doc["scorecard"]] == [
        (c["boot_low"], c["boot_high"]) for c in doc2["scorecard"]]
    assert doc2["bootstrap"]["budget"] is None and doc2["bootstrap"]["resamples"] == 150


def test_every_bootstrap_figure_is_independent_of_line_order(tmp_path: Path) -> None:
    lines = design(seed=2, scenarios=10)
    shuffled = lines[:]
    random.Random(9).shuffle(shuffled)
    cfg = cfg_of(subsets={"low": {"scenario": ["s1", "s2", "s3"]}})
    docs = [wb.run([str(write(tmp_path / f"{i}.jsonl", ls))], cfg).doc for i, ls in enumerate((lines, shuffled))]
    for key in ("scorecard", "judge_offsets", "contrasts", "bootstrap"):
        assert json.dumps(docs[0][key], sort_keys=True) == json.dumps(docs[1][key], sort_keys=True), key
    assert docs[0]["bootstrap"]["computed"]["contrast_paired"] == len(docs[0]["contrasts"])


def test_add_coded_integer_sums_are_the_sorted_sums(monkeypatch: pytest.MonkeyPatch) -> None:
    """Integer values are counted and summed by bincount (reduce._exact_integers): the same
    codes, counts and sums, byte for byte, as the lexsort and reduceat of other values."""
    from workbench.reduce import sufficient as rd

    rng = np.random.default_rng(5)
    for t in range(100):
        g, n = int(rng.integers(1, 400)), int(rng.integers(1, 5000))
        codes, x = rng.integers(0, g, n), rng.integers(-9, 10, n).astype(float)
        got: list[tuple[bytes, ...]] = []
        jb = rd.JointBootstrap(scenarios=[f"s{i:05d}" for i in range(g)], seed=1, resamples=10,
                               resamples_requested=10, confidence=0.95, budget=10**6)
        def record(c: Any, nn: Any, s: Any, got: list[tuple[bytes, ...]] = got) -> int:
            got.append(tuple(np.asarray(v, dt).tobytes()
                             for v, dt in ((c, np.intp), (nn, np.float64), (s, np.float64))))
            return 0
        monkeypatch.setattr(jb, "add_sums", record)
        jb.add_coded(codes, x)
        with monkeypatch.context() as m:
            m.setattr(rd, "_exact_integers", lambda x: False)
            jb.add_coded(codes, x)
        assert got[0] == got[1], t
    assert not rd._exact_integers(np.array([-0.0, 1.0])) and not rd._exact_integers(np.array([0.5]))
    # the size guard: near 2**53 the order of a sum matters (bincount's 2**53 against the sorted
    # sum's 2**53 + 4 for these five), so such values take the sorted path
    big = np.array([-1.0, 2.0**53, 1.0, 1.0, 1.0])
    assert not rd._exact_integers(big) and rd._exact_integers(big[:1])
    assert rd._exact_integers(np.array([2.0**50] * 7)) and not rd._exact_integers(np.array([2.0**50] * 8))


@pytest.mark.parametrize("kept", [True, False])
@pytest.mark.parametrize("big", [False, True])
def test_integer_columns_by_blocks_of_scenarios_are_the_exact_quotients(
        monkeypatch: pytest.MonkeyPatch, big: bool, kept: bool) -> None:
    """Integer columns (counts and sums) are drawn by blocks of scenarios, every column at once
    (``_draws_by_scenarios``): each draw is exactly sum_g w_rg S_gc / sum_g w_rg n_gc, the
    quotient of two integers summed here in Python integers from the weights drawn by the
    documented rule. The blocks are made small (several scenario blocks, several parts of
    columns); with ``big`` the sums pass 2**24, where float32 is not exact and the pass sums
    again in float64. Columns with a scenario missing, one scenario only, and two columns with
    equal counts (multiplied once) are among them; an undrawn column is NaN, never 0. Without a
    kept weight table (``kept`` False) the groups of columns give the same exact quotients (their
    float64 pass is built from the columns, not from the float32 matrix that rounded them)."""
    g, b = 23, 100
    cfg = wb.load_config(overrides={"bootstrap": {"resamples": b, "budget": None}})
    jb = reduce.JointBootstrap.for_scenarios([f"s{i:02d}" for i in range(g)], cfg)
    rng = np.random.default_rng(3)
    scale = 1_000_003 if big else 1  # odd: the totals need more than 24 bits
    specs = []
    for c in range(9):
        codes = np.arange(g) if c % 3 else np.sort(rng.choice(g, size=g - 5, replace=False))
        if c == 8:
            codes = np.array([4])
        n = rng.integers(1, 4, size=codes.size)
        s = n * rng.integers(1, 11, size=codes.size) * scale
        specs.append((codes, n, s))
    specs.append((specs[1][0], specs[1][1], specs[1][1] * 7))  # the counts of column 1 again
    cols = [jb.add_sums(c, n.astype(float), s.astype(float)) for c, n, s in specs]
    called = []
    real = reduce.JointBootstrap._draws_by_scenarios

    def spy(self: reduce.JointBootstrap, *args: Any) -> None:
        called.append(True)
        real(self, *args)

    monkeypatch.setattr(reduce.JointBootstrap, "_draws_by_scenarios", spy)
    monkeypatch.setattr(stats, "_JOINT_BLOCK_CELLS", 5 * b)  # 5 scenarios a block: 5 blocks
    monkeypatch.setattr(reduce, "_GROUP_BYTES", 8 * b * 4)  # 4 columns at a time: 3 parts
    if not kept:
        jb._uncacheable = True  # every pass draws its weights: the groups of columns
    got = jb.draws(cols)
    assert called == ([True] if kept else [])
    w = [[int(x) for x in row] for row in stats.joint_bootstrap_weights(g, 0, b, jb.seed)]
    undrawn = 0
    for j, (codes, n, s) in enumerate(specs):
        for r in range(b):
            num = sum(w[r][int(k)] * int(v) for k, v in zip(codes, s, strict=True))
            den = sum(w[r][int(k)] * int(v) for k, v in zip(codes, n, strict=True))
            if den == 0:
                undrawn += 1
                assert np.isnan(got[r, j])
            else:
                assert got[r, j] == num / den  # Python's correctly rounded int / int
    assert undrawn > 0  # column 8 (one scenario) is undrawn in some resamples
    if big:
        assert max(sum(w[r][int(k)] * int(v) for k, v in zip(*specs[0][::2], strict=True)) for r in range(b)) > 2**24


def test_a_float_column_keeps_every_column_in_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    """One column of non-integer sums sends every column of the pass down the groups of columns
    (whose float64 bits it was recorded with): the blocks of scenarios are for integer passes."""
    cfg = wb.load_config(overrides={"bootstrap": {"resamples": 100, "budget": None}})
    jb = reduce.JointBootstrap.for_scenarios([f"s{i}" for i in range(9)], cfg)
    ints = jb.add_sums(np.arange(9), np.ones(9), np.arange(9.0))
    half = jb.add_sums(np.arange(9), np.ones(9), np.arange(9.0) + 0.5)

    def forbidden(*args: Any) -> None:
        raise AssertionError("blocks of scenarios with a float column")

    monkeypatch.setattr(reduce.JointBootstrap, "_draws_by_scenarios", forbidden)
    got = jb.draws([ints, half])
    w = stats.joint_bootstrap_weights(9, 0, 100, jb.seed)
    want = (w @ (np.arange(9.0) + 0.5)) / w.sum(axis=1)
    assert np.allclose(got[:, 1], want, rtol=1e-13)
