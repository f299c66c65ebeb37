"""Every case of issue 14's list: one line and exit 2, or a correct result, in bounded time.

Each test names the case it reproduces. Runs are in-process (tests/fuzz_support.py), with
the minimum bootstrap, so the whole module takes well under a minute.
"""

from __future__ import annotations

import gzip
import html as htmlmod
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from fuzz_support import check_outcome, run_cli, snapshot

from workbench import load_config
from workbench.common.config import DEFAULTS
from workbench.ingest.reader import composite_key

FAST = ["--resamples", "100", "-q"]


def rows(n_scen: int = 12, variants: tuple[str, ...] = ("a", "b"), **extra) -> list[dict]:
    return [{"scenario": f"s{s}", "variant": v, "trial": 1, "judge": "j", "overall": 4 + (s * 7 + i) % 5,
             **extra} for s in range(n_scen) for i, v in enumerate(variants)]


def write_jsonl(path: Path, items: list[dict]) -> str:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in items), encoding="utf-8")
    return str(path)


@pytest.fixture
def good(tmp_path: Path) -> str:
    return write_jsonl(tmp_path / "rows.jsonl", rows())


def expect_refusal(argv: list[str], *fragments: str, root: Path | None = None) -> str:
    before = snapshot(root) if root is not None else None
    o = run_cli(argv)
    assert check_outcome(o, before=before, root=root) == []
    assert o.code == 2, (o.code, o.err)
    for f in fragments:
        assert f in o.err, o.err
    return o.err


# --------------------------------------------------------------------------- data loss


def test_input_called_results_json_is_not_replaced(tmp_path: Path) -> None:
    d = tmp_path / "D"
    d.mkdir()
    (d / "results.json").write_text(json.dumps(rows()), encoding="utf-8")
    before = (d / "results.json").read_bytes()
    expect_refusal(["analyze", str(d / "results.json"), "--out", str(d), *FAST],
                   "is an input and --out", root=tmp_path)
    assert (d / "results.json").read_bytes() == before


@pytest.mark.parametrize("name", ["results.json", "run.json", "report.html", "figures/x.png"])
def test_users_own_files_need_overwrite(good: str, tmp_path: Path, name: str) -> None:
    d = tmp_path / "D"
    (d / name).parent.mkdir(parents=True)
    (d / name).write_text("mine", encoding="utf-8")
    expect_refusal(["analyze", good, "--out", str(d), *FAST], "did not write", "--overwrite")
    assert (d / name).read_text(encoding="utf-8") == "mine"
    o = run_cli(["analyze", good, "--out", str(d), "--overwrite", *FAST])
    assert o.code == 0, o.err


def test_rerun_into_own_output_is_fine_and_stale_report_goes(good: str, tmp_path: Path) -> None:
    d = tmp_path / "out"
    assert run_cli(["analyze", good, "--out", str(d), *FAST]).code == 0
    manifest = json.loads((d / "run.json").read_text(encoding="utf-8"))
    assert manifest["workbench_outputs"]["files"] == ["results.json", "rows.parquet", "run.json"]
    # pretend a report run wrote report.html: a later analyze must not leave it beside new results
    (d / "report.html").write_text("old", encoding="utf-8")
    manifest["workbench_outputs"]["files"].append("report.html")
    (d / "run.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert run_cli(["analyze", good, "--out", str(d), *FAST]).code == 0
    assert not (d / "report.html").exists()
    assert not [p for p in os.listdir(d) if p.startswith(".wb-tmp-")]


def _full_disk(*_a, **_k):
    raise OSError(28, "No space left on device")


def _first_report(good: str, d: Path) -> dict[str, str]:
    """An analyze run then a hand-made report beside it, as a report run leaves the folder."""
    assert run_cli(["analyze", good, "--out", str(d), *FAST]).code == 0
    manifest = json.loads((d / "run.json").read_text(encoding="utf-8"))
    (d / "figures").mkdir()
    for name, text in (("report.html", "old page"), ("report.ipynb", "{}"), ("figures/scorecard.png", "png")):
        (d / name).write_text(text, encoding="utf-8")
        manifest["workbench_outputs"]["files"].append(name)
    (d / "run.json").write_text(json.dumps(manifest), encoding="utf-8")
    return snapshot(d)


def test_a_full_disk_during_analyze_leaves_the_folder_as_it_was(good: str, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 28: results.json was replaced before rows.parquet failed (new results beside old
    rows) and the previous report was already deleted."""
    import polars as pl

    d = tmp_path / "out"
    before = _first_report(good, d)
    other = write_jsonl(tmp_path / "other.jsonl", rows(n_scen=9))
    monkeypatch.setattr(pl.DataFrame, "write_parquet", _full_disk)
    o = run_cli(["analyze", other, "--out", str(d), *FAST])
    assert o.code == 2 and o.traceback is None, o.err
    assert "No space left on device" in o.err and o.err.count("\n") == 1, o.err
    assert snapshot(d) == before
    assert sorted(os.listdir(d)) == ["figures", "report.html", "report.ipynb", "results.json", "rows.parquet",
                                     "run.json"]
    # and a run that succeeds replaces the lot: no report of the older results is left
    monkeypatch.undo()
    assert run_cli(["analyze", other, "--out", str(d), "--no-gate", *FAST]).code == 0
    assert sorted(os.listdir(d)) == ["results.json", "rows.parquet", "run.json"]
    assert json.loads((d / "results.json").read_text(encoding="utf-8"))["ledger"]["lines"] == 18


def test_rows_parquet_is_written_while_the_stages_run(good: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 29: rows.parquet is written in a thread of its own from the final row table (to the
    system's temporary folder, then moved into --out), and is the file the row table writes."""
    import tempfile
    import threading

    import polars as pl

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    original = pl.DataFrame.write_parquet
    calls: list[tuple[str, str]] = []

    def recording(self: pl.DataFrame, file: object, *a: object, **k: object) -> object:
        calls.append((threading.current_thread().name, str(file)))
        return original(self, file, *a, **k)

    monkeypatch.setattr(pl.DataFrame, "write_parquet", recording)
    d = tmp_path / "out"
    o = run_cli(["analyze", good, "--out", str(d), *FAST])
    assert o.code in (0, 1) and o.traceback is None, o.err
    assert [name for name, _ in calls] == ["workbench-rows-parquet"]
    assert calls[0][1].startswith(str(tmp_path / "tmp"))
    assert os.listdir(tmp_path / "tmp") == []  # moved, not copied and left
    # the mode a file written in place gets (mkstemp's 0600 would hide it from other users)
    assert (d / "rows.parquet").stat().st_mode & 0o777 == (d / "results.json").stat().st_mode & 0o777
    monkeypatch.setattr(pl.DataFrame, "write_parquet", original)
    from workbench import load_config as load
    from workbench import run

    rows = run([good], load(None, overrides={"bootstrap": {"resamples": 100}})).rows
    direct = tmp_path / "direct.parquet"
    rows.write_parquet(direct)
    assert (d / "rows.parquet").read_bytes() == direct.read_bytes()


def test_rows_parquet_across_file_systems_leaves_no_temporary_file(good: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A TMPDIR on another file system (tmpfs): the rename fails with EXDEV, the file is copied
    into --out and the temporary one removed (the reviewer's case: it was left behind)."""
    import errno
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    real = os.replace

    def no_cross_device(src: object, dst: object) -> None:
        if str(src).startswith(str(tmp_path / "tmp")):
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        real(src, dst)

    monkeypatch.setattr(os, "replace", no_cross_device)
    d = tmp_path / "out"
    o = run_cli(["analyze", good, "--out", str(d), *FAST])
    assert o.code in (0, 1) and o.traceback is None, o.err
    assert os.listdir(tmp_path / "tmp") == []
    import polars as pl

    assert pl.read_parquet(d / "rows.parquet").height == json.loads((d / "results.json").read_text())["ledger"]["lines"]
    assert not [n for n in os.listdir(d) if n.startswith(".wb-tmp-")]


def test_a_run_that_fails_after_the_rows_leaves_no_temporary_file(good: str, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    from workbench.common.errors import WorkbenchError
    from workbench.document import pipeline

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()

    def broken(*_a: object, **_k: object) -> None:
        raise WorkbenchError("the scorecard failed")

    monkeypatch.setattr(pipeline, "scorecard_table", broken)
    o = run_cli(["analyze", good, "--out", str(tmp_path / "out"), *FAST])
    assert o.code == 2 and "the scorecard failed" in o.err, o.err
    assert os.listdir(tmp_path / "tmp") == []


@pytest.mark.parametrize("failure", ["disk", "signal"])
def test_a_report_that_fails_midway_leaves_the_folder_as_it_was(good: str, tmp_path: Path, failure: str,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 28: a full disk during ``report`` left report.ipynb and figures beside the new
    results with no HTML. The render here writes what a kernel writes before the disk fills
    (a figure, the notebook's temporary, the notebook), then fails."""
    from workbench import report
    from workbench.cli import main as cli

    d = tmp_path / "out"
    before = _first_report(good, d)
    other = write_jsonl(tmp_path / "other.jsonl", rows(n_scen=9))
    nb_home = tmp_path / "tmp"
    nb_home.mkdir()
    monkeypatch.setenv("TMPDIR", str(nb_home))
    monkeypatch.setattr("tempfile.tempdir", None)

    def render(out, params, **_k):
        out = Path(out)
        (out / "figures" / "census.png").write_bytes(b"new")
        (out / "figures" / "scorecard.png").write_bytes(b"new")
        (out / f".wb-tmp-{os.getpid()}-report.ipynb").write_text("partial", encoding="utf-8")
        (out / "report.ipynb").write_text("new, failed", encoding="utf-8")
        if failure == "signal":
            raise cli.Terminated(15)
        from workbench.common.errors import WorkbenchError

        raise WorkbenchError(f"report notebook failed in cell 30: OSError: [Errno 28] No space left on device "
                             f"(see {out / 'report.ipynb'})")

    monkeypatch.setattr(report, "render", render)
    o = run_cli(["report", other, "--out", str(d), *FAST])
    assert o.traceback is None, o.traceback
    assert snapshot(d) == before, sorted(set(snapshot(d)) ^ set(before))
    assert not [n for n in os.listdir(d) if n.startswith(".wb-tmp-")]
    if failure == "signal":
        assert o.code == 128 + 15 and "stopped by SIGTERM" in o.err, o.err
        return
    assert o.code == 2 and o.err.count("\n") == 1, o.err
    assert f"{d} was left as it was before this run" in o.err, o.err
    kept = [p for p in nb_home.iterdir() if p.name.startswith("workbench-failed-report-")]
    assert len(kept) == 1 and (kept[0] / "report.ipynb").read_text(encoding="utf-8") == "new, failed"
    assert str(kept[0] / "report.ipynb") in o.err and f"(see {d}" not in o.err


def test_a_failed_first_report_leaves_no_folder(good: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench import report

    monkeypatch.setattr(report, "render", _full_disk)
    d = tmp_path / "new" / "out"
    o = run_cli(["report", good, "--out", str(d), *FAST])
    assert o.code == 2 and o.traceback is None and "No space left on device" in o.err, o.err
    assert not d.exists()


def test_users_files_beside_a_failed_run_are_untouched(good: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench import report

    d = tmp_path / "out"
    before = _first_report(good, d)
    (d / "notes.txt").write_text("mine", encoding="utf-8")
    (d / "figures" / "notes.txt").write_text("mine too", encoding="utf-8")
    before = snapshot(d)
    monkeypatch.setattr(report, "render", _full_disk)
    o = run_cli(["report", good, "--out", str(d), "--overwrite", *FAST])
    assert o.code == 2 and o.traceback is None, o.err
    assert snapshot(d) == before
    monkeypatch.undo()
    assert run_cli(["analyze", good, "--out", str(d), "--overwrite", *FAST]).code == 0
    assert (d / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert (d / "figures" / "notes.txt").read_text(encoding="utf-8") == "mine too"
    assert not (d / "figures" / "scorecard.png").exists() and not (d / "report.html").exists()


@pytest.mark.parametrize("link", ["figures", "figures/scorecard.png", "results.json", "report.html"])
def test_no_write_through_a_link_under_out(good: str, tmp_path: Path, link: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 28: a symlink inside an output folder the workbench owns (figures/, a figure, a
    result file) used to be followed: report wrote its 8 figures wherever figures/ pointed."""
    d = tmp_path / "out"
    assert run_cli(["analyze", good, "--out", str(d), *FAST]).code == 0
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # a failed notebook is kept in a temporary folder
    monkeypatch.setattr("tempfile.tempdir", None)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere if link == "figures" else elsewhere / "victim"
    if link != "figures":
        target.write_text("keep", encoding="utf-8")
    entry = d / link
    entry.parent.mkdir(parents=True, exist_ok=True)
    if entry.exists() or entry.is_symlink():
        entry.unlink()
    entry.symlink_to(target)
    err = expect_refusal(["report", good, "--out", str(d), *FAST], f"{entry}: is a symbolic link (to {target})",
                         "never through a link")
    assert err.count("\n") <= 1
    assert sorted(os.listdir(elsewhere)) == ([] if link == "figures" else ["victim"])
    if link != "figures":
        assert target.read_text(encoding="utf-8") == "keep"


def test_a_fifo_where_an_output_goes_is_refused(good: str, tmp_path: Path) -> None:
    d = tmp_path / "out"
    assert run_cli(["analyze", good, "--out", str(d), *FAST]).code == 0
    (d / "rows.parquet").unlink()
    os.mkfifo(d / "rows.parquet")
    expect_refusal(["analyze", good, "--out", str(d), *FAST], "rows.parquet: is a FIFO")


def test_plots_never_follow_a_link_made_after_the_check(tmp_path: Path) -> None:
    from matplotlib.figure import Figure

    from workbench.common.errors import WorkbenchError
    from workbench.report import plots

    folder = tmp_path / "figures"
    folder.mkdir()
    victim = tmp_path / "victim.png"
    victim.write_bytes(b"keep")
    (folder / "x.png").symlink_to(victim)
    with pytest.raises(WorkbenchError, match="is a symbolic link"):
        plots.save(Figure(), folder, "x")
    assert victim.read_bytes() == b"keep"
    paths = plots.save(Figure(), tmp_path / "real", "y")
    assert paths["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert paths["svg"].read_text().lstrip().startswith("<?xml")


def test_out_not_writable_fails_before_the_analysis(good: str, tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root can write anywhere: the permission check cannot fail here")
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o500)
    try:
        expect_refusal(["analyze", good, "--out", str(d / "x"), *FAST], "not writable")
    finally:
        d.chmod(0o700)


def test_batch_out_existing_file_and_reserved_name(good: str, tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("keep", encoding="utf-8")
    m = tmp_path / "m.yaml"
    m.write_text(yaml.safe_dump([{"name": "one", "inputs": good}]), encoding="utf-8")
    expect_refusal(["batch", str(m), "--out", str(f)], "must be a directory")
    assert f.read_text(encoding="utf-8") == "keep"
    m.write_text(yaml.safe_dump([{"name": "index.html", "inputs": good}]), encoding="utf-8")
    expect_refusal(["batch", str(m), "--out", str(tmp_path / "b")], "reserved")


# --------------------------------------------------------------------------- hangs


def test_many_variants_are_capped_and_say_so(tmp_path: Path) -> None:
    p = write_jsonl(tmp_path / "many.jsonl", rows(4, tuple(f"v{i:03d}" for i in range(60))))
    out = tmp_path / "o"
    t0 = time.monotonic()
    o = run_cli(["analyze", p, "--out", str(out), "-p", "min_clusters", "1", "--no-gate", *FAST])
    assert o.code == 0, o.err
    assert time.monotonic() - t0 < 120
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    sel = doc["contrast_selection"]["variant_contrasts"]
    assert sel["mode"] == "over_cap" and sel["pairs"] == 60 * 59 // 2 and sel["computed"] == 0
    assert doc["contrasts"] == []
    assert any("max_contrast_pairs" in w for w in doc["config_warnings"])
    # a baseline: 59 contrasts, each variant minus the baseline
    out2 = tmp_path / "o2"
    o = run_cli(["analyze", p, "--out", str(out2), "-p", "contrast_baseline", "v000",
                 "-p", "min_clusters", "1", "--no-gate", *FAST])
    assert o.code == 0, o.err
    doc = json.loads((out2 / "results.json").read_text(encoding="utf-8"))
    assert doc["contrast_selection"]["variant_contrasts"]["mode"] == "baseline"
    assert {(c["a"], c["b"]) for c in doc["contrasts"]} == {(f"v{i:03d}", "v000") for i in range(1, 60)}


def test_billion_laughs_is_refused_quickly(good: str, tmp_path: Path) -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    cfg = tmp_path / "bomb.yaml"
    cfg.write_text("\n".join(lines) + "\nbootstrap: {resamples: *i}\n", encoding="utf-8")
    c0 = time.process_time()  # CPU seconds (the CLI runs in this process): load-independent
    expect_refusal(["analyze", good, "--config", str(cfg), "--out", str(tmp_path / "o"), *FAST],
                   "alias")
    assert time.process_time() - c0 < 10


def test_backtracking_regex_cannot_hang(tmp_path: Path) -> None:
    d = tmp_path / ("a" * 60 + "!")
    d.mkdir()
    p = write_jsonl(d / "rows.jsonl", rows())
    cfg = tmp_path / "c.yaml"
    cfg.write_text("path_fields: '(?P<judge>(a+)+)$'\n", encoding="utf-8")
    # in a subprocess with a timeout: a backtracking engine would run for ages here
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "workbench.cli.main", "analyze", p, "--config", str(cfg),
                           "--out", str(tmp_path / "o"), *FAST], capture_output=True, text=True,
                          timeout=120, check=False)
    assert time.monotonic() - t0 < 120
    assert proc.returncode == 2 and "does not match path_fields" in proc.stderr, proc.stderr
    cfg.write_text("path_fields: '(?P<judge>x)(?=y)'\n", encoding="utf-8")
    expect_refusal(["analyze", p, "--config", str(cfg), "--out", str(tmp_path / "o"), *FAST],
                   "look-around")


# --------------------------------------------------------------------------- tracebacks


@pytest.mark.parametrize(("text", "fragment"), [
    ("confidence: .nan", "confidence: must be a finite number"),
    ("alpha: .nan", "alpha: must be a finite number"),
    ("power: .nan", "power: must be a finite number"),
    ("target_effect: .nan", "target_effect: must be a finite number"),
    ("rubric: {min: -.inf, max: .inf}", "must be a finite number"),
    ("path_fields: 5", "path_fields must be a string"),
    ("subsets: {x: {scenario: [2024-01-01]}}", "subsets.x.scenario[0]: a YAML date"),
    ("consistency: {honesty_high: !!binary aGVsbG8=}", "consistency.honesty_high: YAML binary"),
    ("constants: !!set {a, b}", "constants: a YAML set"),
    ("1: 2", "key 1 is a number; keys must be strings"),
    ("a: " + "[" * 5000 + "]" * 5000, "nested too deeply"),
    ("bootstrap: {resample: 200, seeds: 5}", "bootstrap.resample: unknown key; did you mean 'resamples'?"),
    ("rubric: {minimum: 0}", "rubric.minimum: unknown key; did you mean 'min'?"),
    ("pass: {treshold: 7}", "pass.treshold: unknown key; did you mean 'threshold'?"),
    ("pass: {threshold: .nan}", "pass.threshold: must be a finite number"),
])
def test_bad_config_values_are_one_line(good: str, tmp_path: Path, text: str, fragment: str) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(text + "\n", encoding="utf-8")
    expect_refusal(["analyze", good, "--config", str(cfg), "--out", str(tmp_path / "o"), *FAST], fragment)


@pytest.mark.parametrize(("extra", "fragment"), [
    (["--resamples", "1000000000"], "bootstrap.resamples must be an integer in [100, 200000]"),
    (["-p", "bootstrap", "5", "--seed", "3"], "bootstrap is already set to 5"),
    (["-p", "bootstrap.resampels", "200"], "did you mean 'resamples'?"),
    (["-p", "confidence", ".nan"], "finite"),
    (["-p", "x..y", "1"], "key path"),
])
def test_bad_flags_are_one_line(good: str, tmp_path: Path, extra: list[str], fragment: str) -> None:
    argv = ["analyze", good, "--out", str(tmp_path / "o"), "-q", *extra]
    if "--resamples" not in extra:
        argv += ["--resamples", "100"]
    expect_refusal(argv, fragment)


def test_non_utf8_file_name(tmp_path: Path) -> None:
    raw = os.fsencode(str(tmp_path)) + b"/bad\xff.jsonl"
    with open(raw, "wb") as fh:
        fh.write(json.dumps(rows()[0]).encode() + b"\n")
    err = expect_refusal(["analyze", os.fsdecode(raw), "--out", str(tmp_path / "o"), *FAST],
                         "not valid UTF-8", "bad\\xff.jsonl")
    assert "\udcff" not in err


def test_gzip_bomb_is_refused_with_bounded_memory(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("WORKBENCH_MAX_INPUT_BYTES", str(8 << 20))
    p = tmp_path / "bomb.jsonl.gz"
    with gzip.open(p, "wb") as fh:
        for _ in range(4):
            fh.write(b" " * (4 << 20))
    expect_refusal(["analyze", str(p), "--out", str(tmp_path / "o"), *FAST],
                   "over the limit of 8388608 bytes")
    # a multi-member file hides its size from the trailer: the capped read still stops it
    with open(p, "wb") as fh:
        for _ in range(3):
            fh.write(gzip.compress(b" " * (4 << 20)))
    expect_refusal(["analyze", str(p), "--out", str(tmp_path / "o"), *FAST], "over the limit")


# --------------------------------------------------------------------------- wrong, no message


def test_composite_keys_do_not_collide() -> None:
    assert composite_key(["x:1", "2"]) != composite_key(["x", "1:2"])
    assert composite_key(["81", "1"]) == "81:1"
    assert json.loads(composite_key(["x:1", "2"])) == ["x:1", "2"]


def test_composite_keys_end_to_end(tmp_path: Path) -> None:
    items = rows()
    items += [{"q": "x:1", "t": "2", "variant": "a", "trial": 1, "judge": "j", "overall": 5},
              {"q": "x", "t": "1:2", "variant": "a", "trial": 1, "judge": "j", "overall": 6}]
    for r in items[:-2]:
        r["q"], r["t"] = r.pop("scenario"), "0"
    p = write_jsonl(tmp_path / "k.jsonl", items)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("keys: {scenario: [q, t]}\n", encoding="utf-8")
    out = tmp_path / "o"
    o = run_cli(["analyze", p, "--config", str(cfg), "--out", str(out), "--no-gate", *FAST])
    assert o.code == 0, o.err
    led = json.loads((out / "results.json").read_text(encoding="utf-8"))["ledger"]
    assert led["conflict"] == 0 and led["valid"] == len(items)


def test_duplicate_json_key_is_its_own_reason(tmp_path: Path) -> None:
    lines = [json.dumps(r) for r in rows()]
    lines.append('{"scenario": "s1", "variant": "c", "trial": 1, "judge": "j", "overall": 8, "overall": 2}')
    lines.append('{"scenario": "s2", "variant": "c", "trial": 1, "judge": "j", "overall": 8, '
                 '"verdict": "cites \\"overall\\" twice: \\"overall\\""}')
    p = tmp_path / "d.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "o"
    o = run_cli(["analyze", str(p), "--out", str(out), "--no-gate", *FAST])
    assert o.code == 0, o.err
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert doc["ledger"]["malformed"] == 1 and doc["ledger_notes"]["duplicate_json_key"] == 1
    [bad] = doc["malformed_lines"]
    assert bad["line"] == len(lines) - 1 and "duplicate key 'overall'" in bad["reason"]
    assert "values 8 and 2" in bad["reason"]


def test_recorded_config_is_the_one_used_on_every_route(good: str, tmp_path: Path) -> None:
    # file
    cfg = tmp_path / "c.yaml"
    cfg.write_text("confidence: 0.8\nbootstrap: {resamples: 300}\n", encoding="utf-8")
    c = load_config(str(cfg))
    assert c.to_dict()["confidence"] == 0.8 and c.to_dict()["bootstrap"]["resamples"] == 300
    # preset
    c = load_config(preset="mt-bench")
    assert c.to_dict()["rubric"] == {"min": c.rubric_min, "max": c.rubric_max}
    # overrides (-p and flags use this)
    c = load_config(overrides={"min_valid_n": 3, "bootstrap": {"seed": 7}})
    assert (c.min_valid_n, c.seed) == (3, 7)
    assert c.to_dict()["min_valid_n"] == 3 and c.to_dict()["bootstrap"]["seed"] == 7
    # with_overrides
    c2 = load_config().with_overrides(confidence=0.8, min_clusters=3, resamples=200, pass_gate=0.5)
    d = c2.to_dict()
    assert (d["confidence"], d["min_clusters"], d["bootstrap"]["resamples"], d["pass"]["gate"]) == (
        0.8, 3, 200, 0.5)
    assert (c2.confidence, c2.min_clusters, c2.resamples, c2.pass_gate) == (0.8, 3, 200, 0.5)
    with pytest.raises(Exception, match="did you mean 'confidence'"):
        load_config().with_overrides(confidnce=0.9)
    with pytest.raises(Exception, match="finite"):
        load_config().with_overrides(confidence=float("nan"))
    # flags, end to end
    out = tmp_path / "o"
    o = run_cli(["analyze", good, "--out", str(out), "--min-valid-n", "5", "--seed", "9",
                 "-p", "confidence", "0.9", "--resamples", "100", "-q"])
    assert o.code == 0, o.err
    rec = json.loads((out / "results.json").read_text(encoding="utf-8"))["config"]
    # the bootstrap's budget and floor (issue 12) are recorded with their defaults beside the flags'
    assert (rec["min_valid_n"], rec["bootstrap"], rec["confidence"]) == (
        5, {"resamples": 100, "seed": 9, "budget": 50_000_000, "min_resamples": 1000}, 0.9)


def test_schema_is_derived_from_defaults() -> None:
    """A key added to DEFAULTS is known at once, at any depth; its neighbours' typos are not."""
    DEFAULTS["bootstrap"]["new_knob"] = 1
    try:
        assert load_config(overrides={"bootstrap": {"new_knob": 2}}).to_dict()["bootstrap"]["new_knob"] == 2
        with pytest.raises(Exception, match="did you mean 'new_knob'"):
            load_config(overrides={"bootstrap": {"new_knb": 2}})
    finally:
        del DEFAULTS["bootstrap"]["new_knob"]


def test_name_warnings(tmp_path: Path) -> None:
    items = []
    for s in range(12):
        for v in ("v0", "v0 ", "caf\u00e9", "cafe\u0301"):
            items.append({"scenario": f"s{s}", "variant": v, "trial": 1 if s % 2 else "1",
                          "judge": "j", "overall": 5})
    p = write_jsonl(tmp_path / "n.jsonl", items)
    out = tmp_path / "o"
    o = run_cli(["analyze", p, "--out", str(out), "--resamples", "100", "--no-gate"])
    assert o.code == 0, o.err
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    w = {(x["field"], x["kind"], x["value"]): x for x in doc["name_warnings"]}
    assert [v["rows"] for v in w[("variant", "lookalike", "v0")]["variants"]] == [12, 12]
    assert len(w[("variant", "lookalike", "caf\u00e9")]["variants"]) == 2
    assert w[("trial", "json_type", "1")]["variants"] == [
        {"json_type": "number", "rows": 24}, {"json_type": "string", "rows": 24}]
    # separate variants (never merged), one trial (merged, with the note)
    variants = {c["variant"] for c in doc["census"]}
    assert variants == {"v0", "v0 ", "caf\u00e9", "cafe\u0301"}
    assert "differ only by surrounding whitespace" in o.out and "'cafe\\u0301'" in o.out


# --------------------------------------------------------------------------- terminal


def test_control_characters_never_reach_the_terminal(tmp_path: Path) -> None:
    items = rows(12, ("ok", "\x1b[2J\x1b]0;title\x07x", "x\nFAKE gate: passed (every cell measured)"))
    p = write_jsonl(tmp_path / "inj\x1b[31m.jsonl", items)
    o = run_cli(["analyze", p, "--out", str(tmp_path / "o"), "--resamples", "100"])
    assert check_outcome(o) == []
    assert "\nFAKE gate" not in o.out and "x\\nFAKE gate" in o.out
    o = run_cli(["analyze", str(tmp_path / "missing\x1b]0;t\x07.jsonl"), "--out", str(tmp_path / "o2")])
    assert o.code == 2 and "\x1b" not in o.err and "\\x1b]0;t\\x07" in o.err


# --------------------------------------------------------------------------- odd inputs


def test_odd_inputs_each_named(good: str, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    u16 = tmp_path / "u16.jsonl"
    u16.write_text(Path(good).read_text(encoding="utf-8"), encoding="utf-16")
    cases = {str(fifo): "FIFO", "-": "stdin", str(tmp_path / "dangling"): "dangling symlink",
             str(tmp_path / "loop"): "symlink loop", str(tmp_path): "is a directory",
             str(u16): "UTF-16"}
    for path, fragment in cases.items():
        expect_refusal(["analyze", path, "--out", str(tmp_path / "o"), *FAST], fragment)
    expect_refusal(["analyze", good, "--config", str(fifo), "--out", str(tmp_path / "o"), *FAST], "FIFO")


def test_url_in_verdict_does_not_stop_the_offline_check() -> None:
    from workbench.report import external_references

    page = ('<html><body><p>see url(http://example.com/x) and &lt;img src="http://e.com/a.png"&gt;'
            '</p><pre>@import url(//cdn.example/x.css)</pre></body></html>')
    assert external_references(page) == []
    assert external_references('<img src="https://e.com/a.png">')
    assert external_references('<div style="background: url(http://e.com/a.png)">x</div>')
    assert external_references('<style>@import url("//cdn.example/x.css");</style>')
    assert external_references('<script src="//cdn.example/x.js"></script>')
    assert external_references('<link rel="stylesheet" href="http://e.com/s.css">')


def test_report_with_urls_in_text_renders_and_reruns(tmp_path: Path) -> None:
    """A verdict citing ``url(http://...)`` or an ``<img src=http://...>`` is text: the report
    is written; a re-run into the same directory is fine and lists what it wrote."""
    items = rows(12, ("a", "a ", "b"), verdict='see url(http://example.com/x) <img src="http://e.com/a.png">')
    p = write_jsonl(tmp_path / "rows.jsonl", items)
    out = tmp_path / "rep"
    for _ in range(2):
        o = run_cli(["report", p, "--out", str(out), *FAST])
        assert o.code == 0, o.err
        assert (out / "report.html").is_file()
    html = (out / "report.html").read_text(encoding="utf-8")
    text = htmlmod.unescape(html)
    assert "Names that print alike (1)" in text and "'a ': 12 rows" in text
    files = json.loads((out / "run.json").read_text(encoding="utf-8"))["workbench_outputs"]["files"]
    assert {"report.html", "report.ipynb", "results.json", "rows.parquet", "run.json"} <= set(files)
    assert not [f for f in os.listdir(out) if f.startswith(".wb-tmp-")]


@pytest.mark.parametrize(("text", "line"), [
    ("min_valid_n: 30\nheadline: overall\nmin_valid_n: 3\n",
     "line 3, column 1: key 'min_valid_n' given twice (first on line 1)"),
    ("rubric:\n  min: 1\n  max: 10\n  max: 100\n", "line 4, column 3: key 'max' given twice (first on line 3)"),
])
def test_a_yaml_key_given_twice_is_refused(good: str, tmp_path: Path, text: str, line: str) -> None:
    """Issue 28: PyYAML keeps the last of two equal keys silently (a gate of 3, not 30)."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text(text, encoding="utf-8")
    expect_refusal(["analyze", good, "--config", str(cfg), "--out", str(tmp_path / "o"), *FAST],
                   f"{cfg}: not valid YAML: {line}; the second would silently replace the first")


def test_yaml_12_floats_are_numbers_and_a_huge_rubric_runs(good: str, tmp_path: Path) -> None:
    """``rubric: {max: 1e308}`` used to be "must be a number" (YAML 1.1 reads 1e308 as text);
    read as a number it then ended in a traceback (weighted kappa enumerated 1e308 categories)."""
    from workbench.common.config import safe_yaml

    assert safe_yaml("a: 1e308\nb: 1.0e3\nc: 7\nd: .5\ne: 1e\nf: -2E-3", "x") == {
        "a": 1e308, "b": 1000.0, "c": 7, "d": 0.5, "e": "1e", "f": -0.002}
    two = write_jsonl(tmp_path / "two.jsonl", [
        {"scenario": f"s{s}", "variant": v, "trial": 1, "judge": j, "overall": 3 + (s * 5 + i + k) % 6}
        for s in range(12) for i, v in enumerate(("a", "b")) for k, j in enumerate(("j1", "j2"))])
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rubric:\n  max: 1e308\n", encoding="utf-8")
    out = tmp_path / "o"
    o = run_cli(["analyze", two, "--config", str(cfg), "--out", str(out), "--no-gate", *FAST])
    assert o.code == 0 and o.traceback is None, o.err
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert doc["value_range"] == [1, 1e308]
    cfg.write_text("rubric:\n  max: 10\n", encoding="utf-8")
    assert run_cli(["analyze", two, "--config", str(cfg), "--out", str(tmp_path / "p"), "--no-gate", *FAST]).code == 0
    ten = json.loads((tmp_path / "p" / "results.json").read_text(encoding="utf-8"))
    # the same kappa on the observed integer range as on the rubric's 1..10
    assert [o["kappa_quadratic"] for o in doc["judge_offsets"]] == [o["kappa_quadratic"] for o in ten["judge_offsets"]]


def _cli_process(args: list[str], tmpdir: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "TMPDIR": str(tmpdir), "NO_COLOR": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.Popen([sys.executable, "-c", "import sys; from workbench.cli.main import main; sys.exit(main())",
                             *args], env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_sigterm_during_the_report_leaves_nothing_partial(tmp_path: Path) -> None:
    """Issue 28: SIGTERM used to leave a partial report.ipynb and an empty workbench-rows-*
    folder in the temporary directory; Ctrl-C in the first seconds printed a traceback."""
    import signal

    root = Path(__file__).resolve().parents[1]
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    out = tmp_path / "out"
    p = _cli_process(["report", str(root / "data/example/judge_rows.jsonl"), "--config",
                      str(root / "data/example/config.yaml"), "--resamples", "200", "--no-gate", "--out", str(out)],
                     tmpdir)
    assert p.stderr is not None
    seen = []
    for line in p.stderr:
        seen.append(line)
        if "rendering the report notebook" in line:
            break
    time.sleep(3.0)  # the kernel is running the notebook
    p.send_signal(signal.SIGTERM)
    rest, err = p.communicate(timeout=120)
    err = "".join(seen) + err
    assert p.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err and err.rstrip().splitlines()[-1].startswith("workbench: stopped by SIGTERM")
    # the folder is left as before the run: this run created it, so it is gone (no results
    # without their report, no partial report.ipynb, no temporary)
    assert not out.exists(), sorted(os.listdir(out))
    assert not [n for n in os.listdir(tmpdir) if n.startswith("workbench-rows-")], os.listdir(tmpdir)


@pytest.mark.slow
def test_a_real_report_whose_writes_fail_leaves_the_folder_as_it_was(good: str, tmp_path: Path) -> None:
    """Issue 28, with a real kernel: a file-size limit of 1 MB (as a full disk: results.json
    and the figures fit, the growing report.ipynb does not) used to leave new results and 8
    figures beside no report.html, exit 2."""
    import resource

    root = Path(__file__).resolve().parents[1]
    d = tmp_path / "out"
    before = _first_report(good, d)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1_000_000, 1_000_000))

    env = {**os.environ, "TMPDIR": str(tmp_path), "NO_COLOR": "1", "PYTHONPATH": str(root)}
    p = subprocess.run([sys.executable, "-c", "import sys; from workbench.cli.main import main; sys.exit(main())",
                        "report", str(root / "data/example/judge_rows.jsonl"), "--config",
                        str(root / "data/example/config.yaml"), "--resamples", "200", "--no-gate", "--out", str(d),
                        "-q"], env=env, capture_output=True, text=True, preexec_fn=limit, timeout=300)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert "File too large" in p.stderr and f"{d} was left as it was before this run" in p.stderr, p.stderr
    assert snapshot(d) == before, sorted(set(snapshot(d)) ^ set(before))


def test_ctrl_c_at_the_start_is_one_line(tmp_path: Path) -> None:
    import signal

    root = Path(__file__).resolve().parents[1]
    p = _cli_process(["analyze", str(root / "data/example/judge_rows.jsonl"), "--out", str(tmp_path / "o"),
                      "--resamples", "20000"], tmp_path)
    time.sleep(0.8)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    if p.returncode == 0:  # pragma: no cover - a very fast machine finished first
        pytest.skip("the run ended before the signal")
    assert p.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "workbench: interrupted"


# --------------------------------------------------------------------------- issue 28: readers

DEEP = 100_000


def _deep_array() -> str:
    return "[" * DEEP + "]" * DEEP


def _deep_object() -> str:
    return '{"a":' * DEEP + "1" + "}" * DEEP


def _one_line_refusal(argv: list[str], *fragments: str) -> str:
    o = run_cli(argv)
    assert o.traceback is None, o.traceback[-800:]
    assert check_outcome(o) == [], check_outcome(o)
    assert o.code == 2, (o.code, o.err)
    for f in fragments:
        assert f in o.err, o.err
    return o.err


def _multi_member_gzip(path: Path, chunk: int, members: int, first: bytes = b"") -> None:
    """``members`` gzip members of ``chunk`` newlines each, then one small member (so the
    trailer's ISIZE, the last member's size, says 1 byte); ``first``: a member before them."""
    one = gzip.compress(b"\n" * chunk, compresslevel=9)
    with open(path, "wb") as fh:
        if first:
            fh.write(gzip.compress(first))
        for _ in range(members):
            fh.write(one)
        fh.write(gzip.compress(b"\n"))


@pytest.mark.parametrize(("name", "first"), [("bomb.jsonl.gz", b""), ("bomb.json.gz", b"[\n"),
                                             ("bomb.csv.gz", b"scenario,variant,trial,judge,overall\n")])
def test_multi_member_gzip_is_counted_before_a_row_is_read(tmp_path: Path, monkeypatch, name: str,
                                                           first: bytes) -> None:
    # before: the capped read went through 32 MiB of lines first (JSONL 13 s and 1.5 GB RSS,
    # CSV 59 s and 1.0 GB: --preset auto's look read the CSV to its first record, no limit)
    monkeypatch.setenv("WORKBENCH_MAX_INPUT_BYTES", str(32 << 20))
    p = tmp_path / name
    _multi_member_gzip(p, 4 << 20, 10, first)  # 40 MiB of newlines, trailer 1 byte
    # CPU seconds of this process (the CLI runs in it), not wall time: a loaded machine
    # stretches the wall clock, not the work; reading the 40 MiB took 13 s and more
    c0 = time.process_time()
    err = _one_line_refusal(["analyze", str(p), "--out", str(tmp_path / "o"), *FAST],
                            name, "over the limit of 33554432 bytes", "all its gzip members")
    assert time.process_time() - c0 < 8
    assert "\n" not in err.rstrip("\n")


@pytest.mark.slow
def test_multi_member_gzip_bomb_of_2_7_gb_is_refused_fast_with_bounded_memory(tmp_path: Path) -> None:
    p = tmp_path / "bomb.jsonl.gz"
    _multi_member_gzip(p, 64 << 20, 41)  # 2.75 GB of newlines in 2.6 MB
    assert p.stat().st_size < 4 << 20
    code = ("import resource, sys\nfrom workbench.cli.main import main\nc = main()\n"
            "u = resource.getrusage(resource.RUSAGE_SELF)\n"
            "print('MAXRSS', u.ru_maxrss, 'CPU', u.ru_utime + u.ru_stime)\nsys.exit(c)")
    r = subprocess.run([sys.executable, "-c", code, "analyze", str(p), "--out", str(tmp_path / "o"), *FAST],
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert r.returncode == 2, (r.returncode, r.stderr[-800:])
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr[-800:]
    assert "over the limit" in r.stderr
    rss_mb = int(r.stdout.split("MAXRSS")[1].split()[0]) / 1024
    # the child's CPU seconds, not wall time (which a loaded machine stretched to 21 s once):
    # refused before the members are read; reading them ran for over 93 s
    cpu = float(r.stdout.split("CPU")[1].split()[0])
    assert cpu < 10, cpu
    # bounded: about 230 MB alone, 660 MB seen under the full suite's load; before, over 2.8 GB
    # and still running after 93 s
    assert rss_mb < 1000, rss_mb


def _raw_zip(path: Path, entries: list[tuple[str, bytes, int, int, int]], method: int = 8,
             central: list[int] | None = None) -> None:
    """A zip written by hand: entries (name, compressed data, crc, uncompressed size, flags);
    ``central`` lists which entry each central-directory record points at (duplicates allowed)."""
    import struct

    out = bytearray()
    offsets = []
    for name, data, crc, usize, flags in entries:
        nb = name.encode()
        offsets.append(len(out))
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, flags, method, 0, 0, crc, len(data), usize, len(nb), 0)
        out += nb + data
    cd = bytearray()
    order = central if central is not None else list(range(len(entries)))
    for i in order:
        name, data, crc, usize, flags = entries[i]
        nb = name.encode()
        cd += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, flags, method, 0, 0, crc, len(data), usize,
                          len(nb), 0, 0, 0, 0, 0, offsets[i])
        cd += nb
    start = len(out)
    out += cd
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(order), len(order), len(cd), start, 0)
    path.write_bytes(bytes(out))


def _deflate_repeated(chunk: bytes, times: int) -> bytes:
    """One raw deflate stream of ``chunk`` repeated ``times`` times, built from one compressed
    copy (a full flush makes every copy's bytes the same), so a 4 GB member costs a second."""
    import zlib

    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    one = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    return one * times + zlib.compressobj(9, zlib.DEFLATED, -15).flush()


def _inspect_header() -> dict:
    return {"version": 2, "status": "success", "eval": {"task": "t", "model": "m", "run_id": "r"},
            "results": {"scores": [{"name": "g", "metrics": {}}]}}


def _inspect_sample(i: int = 1, value: object = "C") -> dict:
    return {"id": i, "epoch": 1, "scores": {"g": {"value": value}}}


def _write_eval(path: Path, header: dict | str, members: dict[str, str]) -> str:
    import zipfile

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", header if isinstance(header, str) else json.dumps(header))
        for name, text in members.items():
            z.writestr(name, text)
    return str(path)


def test_eval_bomb_of_4_gb_is_refused_from_its_declared_size(tmp_path: Path) -> None:
    import zlib

    hdr = json.dumps(_inspect_header()).encode()
    chunk = b" " * (10 << 20)
    data = _deflate_repeated(chunk, 400)  # 4.19 GB of spaces in 4 MB
    entries = [("header.json", zlib.compress(hdr, 9)[2:-4], zlib.crc32(hdr), len(hdr), 0),
               ("samples/1_epoch_1.json", data, 0, 0xFFFF0000, 0)]
    p = tmp_path / "bomb.eval"
    _raw_zip(p, entries)
    assert p.stat().st_size < 8 << 20
    c0 = time.process_time()  # CPU seconds (the CLI runs in this process): load-independent
    _one_line_refusal(["analyze", str(p), "--preset", "inspect", "--out", str(tmp_path / "o"), *FAST],
                      "bomb.eval", "samples/1_epoch_1.json", "over the limit")
    assert time.process_time() - c0 < 10


def test_eval_member_over_the_limit_and_total_over_the_limit(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("WORKBENCH_MAX_INPUT_BYTES", str(8 << 20))
    p = _write_eval(tmp_path / "big.eval", _inspect_header(), {"samples/1_epoch_1.json": " " * (9 << 20)})
    _one_line_refusal(["analyze", p, "--preset", "inspect", "--out", str(tmp_path / "o"), *FAST],
                      "samples/1_epoch_1.json", "over the limit of 8388608 bytes")
    members = {f"samples/{i}_epoch_1.json": json.dumps(_inspect_sample(i)) + " " * (2 << 20) for i in range(1, 6)}
    p = _write_eval(tmp_path / "many.eval", _inspect_header(), members)
    _one_line_refusal(["analyze", p, "--preset", "inspect", "--out", str(tmp_path / "o2"), *FAST],
                      "many.eval", "over the limit of 8388608 bytes", "members")


def test_eval_with_a_member_listed_twice_is_refused(tmp_path: Path) -> None:
    import zlib

    hdr = json.dumps(_inspect_header()).encode()
    s = json.dumps(_inspect_sample()).encode()
    entries = [("header.json", zlib.compress(hdr, 9)[2:-4], zlib.crc32(hdr), len(hdr), 0),
               ("samples/1_epoch_1.json", zlib.compress(s, 9)[2:-4], zlib.crc32(s), len(s), 0)]
    p = tmp_path / "dup.eval"
    _raw_zip(p, entries, central=[0, 1, 1, 1, 1, 1, 1, 1, 1])
    _one_line_refusal(["analyze", str(p), "--preset", "inspect", "--out", str(tmp_path / "o"), *FAST],
                      "dup.eval", "samples/1_epoch_1.json", "more than once")


@pytest.mark.parametrize(("flags", "method", "fragment"), [(1, 8, "encrypted"), (0, 9, "compression method")])
def test_eval_member_encrypted_or_deflate64_is_one_line(tmp_path: Path, flags: int, method: int,
                                                        fragment: str) -> None:
    import zlib

    hdr = json.dumps(_inspect_header()).encode()
    s = json.dumps(_inspect_sample()).encode()
    p = tmp_path / "odd.eval"
    _raw_zip(p, [("header.json", zlib.compress(hdr, 9)[2:-4], zlib.crc32(hdr), len(hdr), flags),
                 ("samples/1_epoch_1.json", zlib.compress(s, 9)[2:-4], zlib.crc32(s), len(s), flags)],
             method=method)
    for preset in ("inspect", "auto"):
        _one_line_refusal(["analyze", str(p), "--preset", preset, "--out", str(tmp_path / preset), *FAST],
                          "odd.eval", fragment)


def test_eval_member_named_with_5000_digits_is_read(tmp_path: Path) -> None:
    members = {f"samples/{'7' * 5000}_epoch_1.json": json.dumps(_inspect_sample(1)),
               "samples/2_epoch_1.json": json.dumps(_inspect_sample(2, "I"))}
    p = _write_eval(tmp_path / "long.eval", _inspect_header(), members)
    o = run_cli(["analyze", p, "--preset", "inspect", "--out", str(tmp_path / "o"), *FAST])
    assert check_outcome(o) == [], check_outcome(o)
    assert o.code in (0, 1, 2) and "Exceeds the limit" not in o.err


def _deep_cases(tmp_path: Path) -> list[tuple[str, list[str], tuple[str, ...]]]:
    cases = []
    f = tmp_path / "deep.json"
    f.write_text(_deep_array(), encoding="utf-8")
    cases.append(("array, no preset", [str(f)], ("deep.json", "nested too deeply")))
    f = tmp_path / "deep.jsonl"
    f.write_text(_deep_object() + "\n", encoding="utf-8")
    cases.append(("object, --preset auto", [str(f), "--preset", "auto"], ("deep.jsonl",)))
    f = tmp_path / "deepobj.json"
    f.write_text(_deep_object(), encoding="utf-8")
    cases.append(("object .json, no preset", [str(f)], ("deepobj.json",)))
    f = tmp_path / "log.json"
    f.write_text(json.dumps({**_inspect_header(), "samples": ["X"]}).replace('"X"', _deep_array()), encoding="utf-8")
    cases.append(("inspect .json", [str(f), "--preset", "inspect"], ("log.json", "nested too deeply")))
    cases.append(("inspect .json auto", [str(f), "--preset", "auto"], ("log.json",)))
    p = _write_eval(tmp_path / "deep.eval", _inspect_header(), {"samples/1_epoch_1.json": _deep_array()})
    cases.append((".eval member", [p, "--preset", "inspect"], ("deep.eval", "samples/1_epoch_1.json",
                                                               "nested too deeply")))
    p = _write_eval(tmp_path / "deephdr.eval", _deep_object(), {})
    cases.append((".eval header", [p, "--preset", "inspect"], ("deephdr.eval", "header.json", "nested too deeply")))
    cases.append((".eval header auto", [p, "--preset", "auto"], ("deephdr.eval",)))
    d = tmp_path / "data" / "arena-hard-v0.1"
    (d / "model_judgment" / "j").mkdir(parents=True)
    judg = d / "model_judgment" / "j" / "m.jsonl"
    judg.write_text(json.dumps({"question_id": "q1", "model": "m", "judge": "j",
                                "games": [{"score": "A>B"}, {"score": "B>A"}]}) + "\n", encoding="utf-8")
    (d / "question.jsonl").write_text('{"question_id": "q1"}\n' + _deep_object() + "\n", encoding="utf-8")
    cases.append(("arena-hard question.jsonl", [str(judg), "--preset", "arena-hard"],
                  ("question.jsonl:2", "nested too deeply")))
    f = tmp_path / "annotations.json"
    f.write_text("[" + _deep_object() + "]", encoding="utf-8")
    cases.append(("alpaca-eval", [str(f), "--preset", "alpaca-eval"], ("annotations.json",)))
    f = tmp_path / "ws.json"
    f.write_text("[" + _deep_array() + "]", encoding="utf-8")
    cases.append(("wildbench", [str(f), "--preset", "wildbench"], ("ws.json",)))
    return cases


def test_deep_nesting_is_one_line_in_every_reader(tmp_path: Path) -> None:
    broken = []
    for i, (label, args, fragments) in enumerate(_deep_cases(tmp_path)):
        o = run_cli(["analyze", *args, "--out", str(tmp_path / f"o{i}"), *FAST])
        problems = check_outcome(o)
        if o.code != 2 or problems or not all(f in o.err for f in fragments):
            broken.append((label, o.code, problems[:1] or o.err[:200]))
    assert broken == []


@pytest.mark.parametrize(("change", "fragment"), [
    ({"samples": 5}, "'samples'"),
    ({"eval": [1]}, "'eval'"),
    ({"results": {"scores": [5]}}, "results.scores"),
    ({"results": {"scores": [{"name": "g", "metrics": [1]}]}}, "metrics"),
    ({"results": 3}, "'results'"),
    ({"eval": {"task": "t", "model": "m", "dataset": [1]}}, "eval.dataset"),
    ({"eval": {"task": "t", "model": "m", "scorers": "g"}}, "eval.scorers"),
])
@pytest.mark.parametrize("suffix", [".json", ".eval"])
def test_mistyped_inspect_logs_are_one_line(tmp_path: Path, change: dict, fragment: str, suffix: str) -> None:
    head = {**_inspect_header(), **change}
    samples = head.pop("samples", [_inspect_sample(1), _inspect_sample(2, "I")])
    if suffix == ".json":
        p = tmp_path / "log.json"
        p.write_text(json.dumps({**head, "samples": samples}), encoding="utf-8")
        path = str(p)
    else:
        if not isinstance(samples, list):
            return  # an .eval log's samples are its members
        path = _write_eval(tmp_path / "log.eval", head,
                           {f"samples/{i}_epoch_1.json": json.dumps(s) for i, s in enumerate(samples, 1)})
    _one_line_refusal(["analyze", path, "--preset", "inspect", "--out", str(tmp_path / "o"), *FAST],
                      "log" + suffix, fragment)


@pytest.mark.parametrize("suffix", [".json", ".eval"])
def test_inspect_sample_that_is_not_an_object_is_a_malformed_row(tmp_path: Path, suffix: str) -> None:
    samples: list = [_inspect_sample(i, "C" if i % 2 else "I") for i in range(1, 9)]
    samples[2] = 5
    samples[4] = {"id": 5, "epoch": 1, "scores": [1]}
    if suffix == ".json":
        p = tmp_path / "log.json"
        p.write_text(json.dumps({**_inspect_header(), "samples": samples}), encoding="utf-8")
        path = str(p)
    else:
        path = _write_eval(tmp_path / "log.eval", _inspect_header(),
                           {f"samples/{i}_epoch_1.json": json.dumps(s) for i, s in enumerate(samples, 1)})
    out = tmp_path / "o"
    o = run_cli(["analyze", path, "--preset", "inspect", "--out", str(out), *FAST])
    assert check_outcome(o, out_dir=out) == [], check_outcome(o, out_dir=out)
    assert o.code in (0, 1), o.err
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert doc["ledger"]["malformed"] == 2, doc["ledger"]


def test_a_file_of_cr_line_ends_says_so(tmp_path: Path) -> None:
    p = tmp_path / "mac.jsonl"
    p.write_bytes(b"".join(json.dumps(r).encode() + b"\r" for r in rows()))
    _one_line_refusal(["analyze", str(p), "--out", str(tmp_path / "o"), *FAST], "mac.jsonl", "CR")
    p.write_bytes(b"\r\r\r")
    _one_line_refusal(["analyze", str(p), "--out", str(tmp_path / "o2"), *FAST], "mac.jsonl", "CR")


def test_huge_integers_are_out_of_range_with_a_true_reason(tmp_path: Path) -> None:
    items = rows()
    items[0]["overall"] = "BIG"
    items[1]["overall"] = 2**80
    p = tmp_path / "big.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in items).replace('"BIG"', "9" * 5000), encoding="utf-8")
    out = tmp_path / "o"
    o = run_cli(["analyze", str(p), "--out", str(out), *FAST])
    assert check_outcome(o, out_dir=out) == [], o.err
    import polars as pl

    df = pl.read_parquet(out / "rows.parquet")
    got = df.filter(pl.col("line").is_in([1, 2])).sort("line")
    assert got["bucket"].to_list() == ["out_of_range", "out_of_range"], got.to_dicts()
    reasons = got["reason"].to_list()
    assert "inf" not in reasons[0] and "5000 digits" in reasons[0], reasons


def _arena_lines(n: int = 6) -> list[str]:
    return [json.dumps({"question_id": f"q{i}", "model": "m", "judge": "j",
                        "games": [{"score": "A>B"}, {"score": "B>A" if i % 2 else "A=B"}]}) for i in range(n)]


def test_a_deep_jsonl_line_is_malformed_with_its_reason_on_every_path(tmp_path: Path) -> None:
    lines = [json.dumps(r) for r in rows()]
    lines.insert(3, '{"scenario": "s0", "variant": "a", "trial": 9, "judge": "j", "overall": ' + _deep_array() + "}")
    arena = _arena_lines()
    arena.insert(2, '{"question_id": "qx", "model": "m", "judge": "j", "games": ' + _deep_array() + "}")
    for name, text, extra, line in (("rows.jsonl", lines, [], 4), ("m.jsonl", arena, ["--preset", "arena-hard"], 3)):
        p = tmp_path / name
        p.write_text("\n".join(text) + "\n", encoding="utf-8")
        out = tmp_path / f"o-{name}"
        o = run_cli(["analyze", str(p), "--out", str(out), *extra, *FAST, "--no-gate"])
        # (an exploded row is two judgments: the ledger check of check_outcome counts lines)
        assert check_outcome(o, out_dir=None if extra else out) == [] and o.code in (0, 1), o.err
        import polars as pl

        bad = pl.read_parquet(out / "rows.parquet").filter(pl.col("bucket") == "malformed")
        assert bad.select("line", "reason").rows() == [(line, "not JSON: nested too deeply")]


def test_native_readers_read_gzip_within_the_same_budget(tmp_path: Path, monkeypatch) -> None:
    p = tmp_path / "m.jsonl.gz"
    p.write_bytes(gzip.compress(("\n".join(_arena_lines()) + "\n").encode()))
    out = tmp_path / "o"
    o = run_cli(["analyze", str(p), "--preset", "arena-hard", "--out", str(out), *FAST, "--no-gate"])
    assert check_outcome(o) == [] and o.code in (0, 1), o.err
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert doc["ledger"]["valid"] == 12, doc["ledger"]
    monkeypatch.setenv("WORKBENCH_MAX_INPUT_BYTES", str(8 << 20))
    _multi_member_gzip(p, 4 << 20, 3)
    _one_line_refusal(["analyze", str(p), "--preset", "arena-hard", "--out", str(tmp_path / "o2"), *FAST],
                      "m.jsonl.gz", "over the limit of 8388608 bytes")


def test_two_runs_into_one_out_cannot_mix(good: str, tmp_path: Path) -> None:
    """Issue 28: two runs into one --out could leave one run's report beside the other's
    results; the folder is locked for the run (flock on the folder itself, no lock file)."""
    from workbench.common import outdir

    d = tmp_path / "out"
    assert run_cli(["analyze", good, "--out", str(d), *FAST]).code == 0
    before = sorted(os.listdir(d))
    outdir.lock(d)  # another run holds it (this test process)
    try:
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        r = subprocess.run([sys.executable, "-c", "import sys; from workbench.cli.main import main; sys.exit(main())",
                            "analyze", good, "--out", str(d), *FAST], capture_output=True, text=True, env=env,
                           timeout=120, check=False)
        assert r.returncode == 2, r.stderr
        assert r.stderr.strip().endswith(f"{d}: another workbench run is writing into this --out directory; "
                                         "wait for it to finish or choose another directory"), r.stderr
        assert "Traceback" not in r.stderr
    finally:
        outdir.release()
    assert sorted(os.listdir(d)) == before  # no lock file left, nothing written by the refused run
    assert run_cli(["analyze", good, "--out", str(d), *FAST]).code == 0  # free again


def test_preset_auto_samples_through_the_file_and_refuses_a_mixed_one(tmp_path: Path) -> None:
    """Issue 28: --preset auto decided from the first row only: a first Arena-Hard row then 72
    default rows gave 72 malformed and exit 0. Rows are now sampled through the file."""
    arena = {"question_id": "q1", "model": "m", "judge": "j", "games": [{"score": "A>B"}, {"score": "B>A"}]}
    plain = [{"scenario": f"s{i}", "variant": "v", "trial": 1, "judge": "j", "overall": 5} for i in range(72)]
    mixed = write_jsonl(tmp_path / "mixed.jsonl", [arena, *plain])
    expect_refusal(["analyze", mixed, "--preset", "auto", "--out", str(tmp_path / "o"), *FAST],
                   "the 32 rows sampled through the file fit different formats (default 31, arena-hard 1): "
                   "a mixed file")
    # a large file whose late rows change format: the spread sample sees them
    big = [*plain * 300, *([arena] * 20000)]
    far = write_jsonl(tmp_path / "far.jsonl", big)
    assert os.path.getsize(far) > (1 << 20)
    from workbench.ingest import detect

    preset, why = detect.classify(far)
    assert preset == "?" and "a mixed file" in why and "arena-hard" in why and "default" in why
    # rows no format fits (a broken row) are not a second format
    broken = write_jsonl(tmp_path / "broken.jsonl", [*plain, {"error": "timeout"}])
    assert detect.classify(broken)[0] is None


def test_preset_auto_note_is_silenced_by_quiet(tmp_path: Path) -> None:
    """Issue 28: ``--preset auto -q`` printed its note before the error (2 stderr lines on exit
    2); -q silences the note, the error stays one line; without -q the note comes first."""
    log = tmp_path / "log.json"
    log.write_text(json.dumps({**_inspect_header(), "samples": 5}), encoding="utf-8")
    quiet = run_cli(["analyze", str(log), "--preset", "auto", "--out", str(tmp_path / "o1"), *FAST])
    assert quiet.code == 2 and check_outcome(quiet) == [], quiet.err
    assert len(quiet.err.strip().splitlines()) == 1 and "log.json" in quiet.err and "preset auto" not in quiet.err
    loud = run_cli(["analyze", str(log), "--preset", "auto", "--out", str(tmp_path / "o2"), "--resamples", "100"])
    lines = loud.err.strip().splitlines()
    assert loud.code == 2 and len(lines) == 2, loud.err
    assert lines[0].startswith("workbench: preset auto -> inspect (") and lines[1] == quiet.err.strip()


def test_one_file_under_two_names_is_refused_by_both_names(good: str, tmp_path: Path) -> None:
    """Issue 28 (first campaign): a hard-linked copy of an input was read twice, every row of
    the second name a duplicate: "no valid row at all (duplicate 24)", naming one file. The
    policy for a file given twice (symlink, repeated path) is a one-line refusal; hard links now
    meet it, and the line names both names."""
    a = Path(good)
    try:
        os.link(a, tmp_path / "hard.jsonl")
    except OSError as exc:  # pragma: no cover - a filesystem without hard links
        pytest.skip(f"no hard links here: {exc}")
    (tmp_path / "soft.jsonl").symlink_to(a)
    cases = [([good, str(tmp_path / "hard.jsonl")], "hard.jsonl: is the same file as ",
              "rows.jsonl (a hard link to it)"),
             ([str(tmp_path / "soft.jsonl"), good], "rows.jsonl: is the same file as ", "(through a symlink)"),
             ([good, good], "(the same path twice)"),
             ([good, str(tmp_path / "*.jsonl")], "is the same file as")]
    for i, (inputs, *fragments) in enumerate(cases):
        err = expect_refusal(["analyze", *inputs, "--out", str(tmp_path / f"o{i}"), *FAST], *fragments)
        assert len(err.strip().splitlines()) == 1, err
    # a copy with its own inode is another file: read, and its rows are the duplicates they are
    (tmp_path / "copy").mkdir()
    copy = tmp_path / "copy" / "rows.jsonl"
    copy.write_bytes(a.read_bytes())
    o = run_cli(["analyze", good, str(copy), "--out", str(tmp_path / "oc"), *FAST])
    assert o.code == 2 and "duplicate 24" in o.err, o.err
