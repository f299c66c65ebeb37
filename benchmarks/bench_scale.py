"""Scale benchmark (issue 12): the workbench and its anchors, side by side, in one run.

For each size (default 1M and 5M physical lines) the seeded generator (``generate.py``)
writes, once, a damaged file and its clean copy into ``benchmarks/.cache/``. Then, one after
the other in this process tree, each measurement runs as its own child process (whole
process: interpreter start, imports, reading, computing, writing, exit):

==================  ==========================================================================
``duckdb``          DuckDB ``read_ndjson(..., ignore_errors=true)`` + ``GROUP BY judge, variant``
                    (count, non-null overall, mean): the fastest robust parse, no ledger; run
                    first and again last, the faster of the two is the reference figure
``polars``          ``polars.scan_ndjson`` + the same group-by on the damaged file, with and
                    without ``ignore_errors`` (it fails on the first truncated line: reported),
                    then on the clean copy
``pandas``          ``pandas.read_json(lines=True)`` + groupby on the clean copy
``ingest``          ``workbench.read_rows`` + ``ledger.count_ledger`` (the full ledger only)
``analyze``         ``workbench analyze FILE --out DIR``, default options (exit 1 when the gate
                    fails is expected and reported)
``analyze-nogate``  the same with ``--no-gate``
``stages``          the same analysis in one child with each pipeline stage and the cluster
                    bootstrap timed (RSS at each stage's end): where time and memory go
``floor``           three children that do only what a design on this stack (DuckDB, polars,
                    scipy) meeting the issue must do, none of the workbench's own work: the
                    interpreter and the imports of
                    ``workbench analyze``; DuckDB reading the file's lines and parsing each
                    once with one ``json_extract`` of every configured path (no ledger, no
                    Python per line); and writing the run's ``rows.parquet`` as ``analyze``
                    does. Their sum is a lower bound for ``analyze`` (see :func:`print_floor`)
==================  ==========================================================================

Each line prints wall time, rows/s, the ratio to the DuckDB figure, CPU time and peak RSS.
Peak RSS is measured two ways, both per child process:

* ``rss_max``: the kernel's high-water mark of the largest single process in the child's
  tree, from ``os.wait4(pid)``'s ``ru_maxrss`` (Linux: the max over the child and every
  descendant it reaped). This is ``getrusage(RUSAGE_CHILDREN)`` for that one child alone
  (``RUSAGE_CHILDREN`` itself is a running max over all children, so it cannot separate
  successive measurements) and is exact: no sampling can miss a short peak.
* ``anon_max``: the peak of the largest process's *anonymous* resident memory (``RssAnon``:
  its own heap, not file pages), sampled at 20 Hz. RSS also counts the pages of files a
  process maps, which the kernel can drop and read again: the row table on disk
  (``workbench.ingest.spill``) is such a mapping, so under a memory limit what must fit is
  about ``anon_max``, not ``rss_max`` (``benchmarks/memory_cap.py`` shows it).
* ``rss_tree``: the peak of the *sum* of RSS over the child and its live descendants,
  sampled every 0.1 s with psutil. It matters where processes run at once (the workbench's
  ingest workers); it can miss a peak shorter than the sampling period.

The machine is shared: run the script under ``nice -n 19``; each line records the 1-minute
load average when it started. A JSON record of the run goes to ``benchmarks/.cache/``.

Usage::

    nice -n 19 .venv/bin/python benchmarks/bench_scale.py                 # 1M and 5M rows
    nice -n 19 .venv/bin/python benchmarks/bench_scale.py --sizes 1000000
    .venv/bin/python benchmarks/bench_scale.py --smoke                    # 60k rows, seconds
    ... --resamples 2000          # cap the bootstrap of the analyze runs (said in the output)
    ... --only duckdb,ingest      # a subset of the measurements
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402

MEASUREMENTS = ("duckdb", "polars", "pandas", "ingest", "analyze", "analyze-nogate", "stages", "bootstrap", "floor")
SMOKE_ROWS = 60_000


# --------------------------------------------------------------------------- children
# Each child prints one JSON object as its last stdout line.

def child_duckdb(path: str) -> dict[str, Any]:
    import duckdb

    con = duckdb.connect()
    q = ("SELECT judge, variant, count(*) AS n_rows, count(overall) AS n_overall, "
         "avg(TRY_CAST(overall AS DOUBLE)) AS mean_overall "
         "FROM read_ndjson(?, ignore_errors=true, "
         "columns={'judge': 'VARCHAR', 'variant': 'VARCHAR', 'overall': 'VARCHAR'}) "
         "GROUP BY judge, variant ORDER BY judge, variant")
    res = con.execute(q, [path]).fetchall()
    seen = sum(r[2] for r in res)
    keyed = [r for r in res if r[0] is not None and r[1] is not None]
    return {"groups": len(keyed), "rows_seen": seen, "rows_keyed": sum(r[2] for r in keyed),
            "duckdb": duckdb.__version__}


def _polars_query(path: str, ignore_errors: bool) -> Any:
    import polars as pl

    return (pl.scan_ndjson(path, ignore_errors=ignore_errors,
                           schema_overrides={"overall": pl.String})
            .group_by("judge", "variant")
            .agg(pl.len().alias("n_rows"), pl.col("overall").count().alias("n_overall"),
                 pl.col("overall").cast(pl.Float64, strict=False).mean().alias("mean_overall"))
            .collect())


def child_polars(path: str, ignore_errors: bool) -> dict[str, Any]:
    import polars as pl

    try:
        df = _polars_query(path, ignore_errors)
    except Exception as exc:  # noqa: BLE001 - the failure is the result
        text = " ".join(str(exc).split())
        return {"failed": f"{type(exc).__name__}: {text[:160]}", "polars": pl.__version__}
    keyed = df.filter(pl.col("judge").is_not_null() & pl.col("variant").is_not_null())
    return {"groups": keyed.height, "rows_seen": int(df["n_rows"].sum()),
            "rows_keyed": int(keyed["n_rows"].sum()), "polars": pl.__version__}


def child_pandas(path: str) -> dict[str, Any]:
    import pandas as pd

    df = pd.read_json(path, lines=True)
    # a string score is not coerced silently here either: to_numeric marks it NaN, counted below
    df["overall_num"] = pd.to_numeric(df["overall"], errors="coerce")
    g = df.groupby(["judge", "variant"])["overall_num"].agg(["size", "count", "mean"])
    return {"groups": len(g), "rows_seen": len(df), "rows_keyed": int(g["size"].sum()),
            "pandas": pd.__version__}


def child_ingest(path: str) -> dict[str, Any]:
    import workbench
    from workbench.ingest.ledger import count_ledger

    cfg = workbench.load_config()
    rows, _ = workbench.read_rows([path], cfg)
    return {"ledger": count_ledger(rows, planned=False)}


def _rss_now() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child_stages(path: str, out: str, resamples: int | None) -> dict[str, Any]:
    """``workbench analyze`` as the CLI runs it, with every stage and the bootstrap timed."""
    import resource

    t_start = time.perf_counter()
    import workbench  # noqa: F401
    from workbench import stats
    from workbench.analysis import paired
    from workbench.cli import main as cli
    from workbench.document import build as document
    from workbench.document import pipeline
    from workbench.ingest import ledger

    t_imported = time.perf_counter()
    timing: dict[str, dict[str, float]] = {}

    def record(label: str, secs: float) -> None:
        r = timing.setdefault(label, {"seconds": 0.0, "calls": 0})
        r["seconds"] += secs
        r["calls"] += 1
        r["rss_after"] = _rss_now()
        r["peak_rss_so_far"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    def wrap(mod: Any, name: str, label: str) -> None:
        fn = getattr(mod, name, None)
        if fn is None or not callable(fn):
            return

        def timed(*a: Any, **k: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                record(label, time.perf_counter() - t0)

        setattr(mod, name, timed)

    # stage -> functions pipeline.run calls (looked up at call time, so wrapping works);
    # names another helper renamed are skipped, never an error
    stages = {
        "ingest": [(pipeline, "load")],
        "census": [(ledger, "count_ledger"), (pipeline, "census_table"), (pipeline, "census_margins"),
                   (pipeline, "missingness_tests"), (pipeline, "scale_checks"), (pipeline, "check_names"),
                   (document, "census_records")],
        "scorecard": [(pipeline, "scorecard_table"), (pipeline, "flag_rates"), (pipeline, "pass_rates"),
                      (pipeline, "consistency"), (pipeline, "gate")],
        "paired: judge offsets": [(paired, "judge_offsets")],
        "paired: contrasts": [(paired, "contrasts")],
        "paired: repetition": [(paired, "repetition_consistency")],
    }
    for label, fns in stages.items():
        for mod, name in fns:
            wrap(mod, name, label)
    # nested inside the stages above: reported as "of which"
    for name in ("cluster_bootstrap_mean", "cluster_bootstrap_diff"):
        wrap(stats, name, "of which: cluster bootstrap")
    try:  # the joint bootstrap (issue 12): one pass per stage over per-scenario sums
        from workbench.reduce import sufficient as _reduce

        wrap(_reduce.JointBootstrap, "run", "of which: cluster bootstrap")
    except ImportError:  # before workbench/reduce/sufficient.py
        pass
    wrap(stats, "contingency_test", "of which: permutation tests")

    argv = ["analyze", path, "--out", out, "--quiet", "--no-gate"]
    if resamples is not None:
        argv += ["--resamples", str(resamples)]
    args = cli.build_parser().parse_args(argv)
    args.argv = ["workbench", *argv]
    cfg = cli.config_from_args(args)
    t0 = time.perf_counter()
    analysis = pipeline.run(args.inputs, cfg, plan=args.plan)
    t_run = time.perf_counter() - t0
    t0 = time.perf_counter()
    cli.write_outputs(analysis, Path(out), argv=args.argv)
    record("writing (results.json, rows.parquet)", time.perf_counter() - t0)
    wrapped = sum(v["seconds"] for k, v in timing.items()
                  if not k.startswith("of which") and not k.startswith("writing"))
    timing["other (inline in pipeline.run)"] = {"seconds": max(0.0, t_run - wrapped), "calls": 1}
    key = "of which: cluster bootstrap"
    before = dict(timing.get(key, {"seconds": 0.0, "calls": 0}))
    timing.update(_time_check(analysis, cfg, Path(out), record, timing))
    if key in timing and timing[key]["calls"] > before["calls"]:
        # the check's own bootstrap calls are its cost, not the analysis': keep them apart
        timing["check, of which: cluster bootstrap"] = {
            "seconds": timing[key]["seconds"] - before["seconds"], "calls": timing[key]["calls"] - before["calls"]}
        timing[key] = before
    return {
        "imports_seconds": t_imported - t_start,
        "run_seconds": t_run,
        "resamples": analysis.doc.get("bootstrap", {}).get("resamples", cfg.resamples),
        "resamples_requested": cfg.resamples,
        "cells": len(analysis.doc.get("scorecard", [])),
        "contrasts": len(analysis.doc.get("contrasts", [])),
        "judge_offsets": len(analysis.doc.get("judge_offsets", [])),
        "ledger": analysis.doc.get("ledger"),
        "stages": timing,
        "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def child_bootstrap(path: str, resamples: int) -> dict[str, Any]:
    """The joint cluster bootstrap alone at ``resamples`` (budget off): the statistics a run
    bootstraps (every scorecard cell, judge offset and contrast) on the file's scenarios.
    Only ``JointBootstrap.run`` is timed (wall and CPU); the stages around it run as usual."""
    import resource

    import workbench as wb
    from workbench.analysis import paired
    from workbench.analysis import scorecard as sc
    from workbench.reduce import sufficient as reduce

    cfg = wb.load_config(overrides={"bootstrap": {"resamples": resamples, "budget": None}})
    rows, _ = wb.read_rows([path], cfg)
    spent = {"wall": 0.0, "cpu": 0.0, "passes": 0}
    run = reduce.JointBootstrap.run

    def timed(self: Any) -> None:
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            run(self)
        finally:
            spent["wall"] += time.perf_counter() - t0
            spent["cpu"] += time.process_time() - c0
            spent["passes"] += 1

    reduce.JointBootstrap.run = timed  # type: ignore[method-assign]
    jb = reduce.JointBootstrap.for_rows(rows, cfg)
    t0 = time.perf_counter()
    sc.scorecard(rows, cfg, jb)
    paired.judge_offsets(rows, cfg, joint=jb)
    paired.contrasts(rows, cfg, joint=jb)
    return {"bootstrap": {"resamples": jb.resamples, "scenarios": len(jb.scenarios), "columns": len(jb.columns),
                          "intervals": jb.computed, "seconds": spent["wall"], "cpu_seconds": spent["cpu"],
                          "passes": spent["passes"], "stages_seconds": time.perf_counter() - t0},
            "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


# the floor: what a design on this stack that meets the issue must do, without the workbench's own work

def child_floor_imports() -> dict[str, Any]:
    """The interpreter and the modules ``workbench analyze`` imports before it reads a byte
    (the CLI, the pipeline and its stages: polars, DuckDB, numpy, scipy.stats)."""
    t0 = time.perf_counter()
    import workbench.cli.main  # noqa: F401
    import workbench.document.pipeline  # noqa: F401

    return {"seconds": time.perf_counter() - t0}


def child_floor_parse(path: str) -> dict[str, Any]:
    """DuckDB reads the file's lines itself (its parallel CSV reader, one text column), keeps
    those that are JSON objects (``json_valid``) and parses each once for every configured
    path (one ``json_extract`` of the list, as the workbench's query does), then counts per
    judge and variant. Every classifying reader must at least split the lines, test them and
    read each configured field; this does nothing else (no line numbers, no ledger, no
    decoding of the values, no Python per line): a lower bound for such a reader built on DuckDB.
    DuckDB's default ``max_line_size`` is kept: a larger one made the same query slower
    (1M lines: 1.23 s against 0.70 s, measured)."""
    import duckdb

    import workbench
    from workbench.ingest import engine

    cfg = workbench.load_config()
    plan = engine.Plan(cfg, [])
    texts = "[" + ", ".join(engine._sql_str(engine._jsonpath(p)) for p in plan.paths) + "]"
    judge, variant = (plan.index[tuple(cfg.keys[k][0])] + 1 for k in ("judge", "variant"))
    src = ("read_csv(?, columns={'line': 'VARCHAR'}, delim=chr(1), quote='', escape='', header=false, "
           "auto_detect=false, strict_mode=false)")
    q = (f"SELECT J[{judge}] AS judge, J[{variant}] AS variant, count(*) AS n FROM ("
         f" SELECT json_extract(line, {texts}) AS J FROM {src}"
         "  WHERE starts_with(line, '{') AND json_valid(line)) GROUP BY ALL")
    t0, c0 = time.perf_counter(), time.process_time()
    res = duckdb.connect().execute(q, [path]).fetchall()
    return {"seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0,
            "paths": len(plan.paths), "groups": len(res),
            "rows_seen": sum(r[2] for r in res), "duckdb": duckdb.__version__}


def child_floor_write(rows_parquet: str, out: str) -> dict[str, Any]:
    """The row table written as ``workbench analyze`` writes it (``DataFrame.write_parquet``
    with polars' defaults); only the write is timed (``seconds``), not reading the table."""
    import polars as pl

    df = pl.read_parquet(rows_parquet)
    t0 = time.perf_counter()
    c0 = time.process_time()
    df.write_parquet(out)
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    size = os.path.getsize(out)
    os.unlink(out)
    return {"seconds": secs, "cpu_seconds": cpu, "rows": df.height, "columns": df.width, "bytes": size}


def _time_check(analysis: Any, cfg: Any, out: Path, record: Any, timing: dict) -> dict[str, Any]:
    """The headline check is not part of a default ``analyze`` (no --published/--claims): time
    it after the run on a printed card and three claims written here, so its cost is known."""
    from workbench.analysis import check

    variants = sorted(set(analysis.rows["variant"].drop_nulls().to_list()))
    card = out / "published_scorecard.csv"
    card.write_text("variant,overall,honesty\n" + "".join(
        f"{v},{5.0 + 0.1 * i:.2f},{5.5 + 0.1 * i:.2f}\n" for i, v in enumerate(variants)), encoding="utf-8")
    claims = out / "claims.yaml"
    claims.write_text("".join(
        f"- name: \"{a} beats {b} on {f}\"\n  field: {f}\n  a: {a}\n  b: {b}\n  claimed: 0.5\n"
        for f, a, b in (("overall", variants[2], variants[0]), ("overall", variants[4], variants[1]),
                        ("honesty", variants[2], variants[0]))), encoding="utf-8")
    extra: dict[str, Any] = {}
    try:
        t0 = time.perf_counter()
        check.published_check(analysis.rows, cfg, check.read_published(str(card), cfg), source=str(card))
        record("check: published card (not in a default run)", time.perf_counter() - t0)
        t0 = time.perf_counter()
        check.check_claims(analysis.rows, cfg, check.read_claims(str(claims)))
        record("check: 3 claims (not in a default run)", time.perf_counter() - t0)
    except Exception as exc:  # noqa: BLE001 - another helper may have changed the check API
        extra["check: not measured"] = {"seconds": 0.0, "calls": 0, "error": f"{type(exc).__name__}: {exc}"}
    return extra


def child_main(argv: list[str]) -> int:
    kind, *rest = argv
    if kind == "duckdb":
        out = child_duckdb(rest[0])
    elif kind == "polars":
        out = child_polars(rest[0], rest[1] == "1")
    elif kind == "pandas":
        out = child_pandas(rest[0])
    elif kind == "ingest":
        out = child_ingest(rest[0])
    elif kind == "bootstrap":
        out = child_bootstrap(rest[0], int(rest[1]))
    elif kind == "stages":
        out = child_stages(rest[0], rest[1], int(rest[2]) if rest[2] != "-" else None)
    elif kind == "floor-imports":
        out = child_floor_imports()
    elif kind == "floor-parse":
        out = child_floor_parse(rest[0])
    elif kind == "floor-write":
        out = child_floor_write(rest[0], rest[1])
    else:
        raise SystemExit(f"unknown child {kind}")
    sys.stdout.write("\n" + json.dumps(out, default=str) + "\n")
    return 0


# --------------------------------------------------------------------------- measuring

def measure(cmd: list[str], timeout: float) -> dict[str, Any]:
    """Run ``cmd`` as one child; wall, CPU, exit code, peak RSS (both ways), last JSON line."""
    import psutil

    load0 = os.getloadavg()[0]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, start_new_session=True)
        peak_tree = 0
        peak_hwm = 0
        peak_anon = 0
        done = threading.Event()

        def poll() -> None:
            nonlocal peak_tree, peak_hwm, peak_anon
            try:
                root = psutil.Process(proc.pid)
            except psutil.Error:
                return
            while not done.is_set():
                total = 0
                try:
                    for p in [root, *root.children(recursive=True)]:
                        try:
                            total += p.memory_info().rss
                        except psutil.Error:
                            pass
                        peak_hwm = max(peak_hwm, _vm_hwm(p.pid))
                        peak_anon = max(peak_anon, _vm_hwm(p.pid, b"RssAnon:"))
                except psutil.Error:
                    break
                peak_tree = max(peak_tree, total)
                done.wait(0.05)

        th = threading.Thread(target=poll, daemon=True)
        th.start()
        timed_out = False
        deadline = time.monotonic() + timeout
        while True:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                timed_out = True
                os.killpg(proc.pid, 9)  # the child's own session: only what this run started
            time.sleep(0.05)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        done.set()
        th.join()
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    result: dict[str, Any] = {}
    for line in reversed(stdout.strip().splitlines()):
        if line.startswith("{"):
            try:
                result = json.loads(line)
            except ValueError:
                pass
            break
    return {
        "cmd": cmd, "wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rc": proc.returncode,
        # largest process: the kernel's high-water mark of each process's own memory (VmHWM,
        # which exec resets), read at 20 Hz. Not ru_maxrss from wait4: the kernel folds the
        # spawning process's pre-exec memory into it (fork and vfork share or copy the parent's
        # pages until exec), so a child of a large benchmark or pytest process reported the
        # parent's size (0.46 GB for DuckDB's 1.4 s run). ru_maxrss only when no sample came.
        "rss_max": peak_hwm or ru.ru_maxrss * 1024,
        "rss_tree": max(peak_tree, peak_hwm) if peak_tree else None,
        "anon_max": peak_anon or None,
        "load_at_start": load0, "timed_out": timed_out, "result": result,
        "stderr_tail": stderr.strip().splitlines()[-3:],
        "stdout_tail": [ln for ln in stdout.strip().splitlines() if not ln.startswith("{")][-3:],
    }


def _vm_hwm(pid: int, key: bytes = b"VmHWM:") -> int:
    """Peak resident bytes of a live process's current program (``VmHWM``), 0 if unreadable;
    another ``key`` of ``/proc/PID/status`` (``RssAnon:``) in bytes likewise."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def gb(n: float | None) -> str:
    return "-" if n is None else f"{n / 2**30:.2f} GB"


def workbench_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("workbench")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "workbench.cli.main"]


def run_size(rows: int, args: argparse.Namespace, only: set[str], record: dict[str, Any],
             save: Any) -> dict[str, Any]:
    t0 = time.perf_counter()
    path = generate.generate(rows, args.seed)
    clean = generate.generate(rows, args.seed, clean=True)
    meta = generate.read_meta(path)
    gen_s = time.perf_counter() - t0
    n = meta["rows"]
    print(f"\n== {n:,} lines, {meta['bytes'] / 1e6:.0f} MB ({meta['bytes_per_row']} bytes a row), "
          f"{meta['design']['scenarios']:,} scenarios x 10 variants x 3 trials x 2 judges; "
          f"planted: {json.dumps({k: v for k, v in meta['planted'].items() if k != 'base'})} "
          f"(file ready in {gen_s:.1f} s)", flush=True)
    me = [sys.executable, str(Path(__file__).resolve()), "--child"]
    outdir = generate.CACHE / f"out_{n}"
    from workbench.common.files import MAX_INPUT_BYTES

    if meta["bytes"] > MAX_INPUT_BYTES and "WORKBENCH_MAX_INPUT_BYTES" not in os.environ:
        # a 20M-line file (6 GB) is over the default per-file limit, which refuses it in a line
        os.environ["WORKBENCH_MAX_INPUT_BYTES"] = str(meta["bytes"])
        print(f"(the file is over the default limit of {MAX_INPUT_BYTES:,} bytes per input file: "
              f"the children run with WORKBENCH_MAX_INPUT_BYTES={meta['bytes']})", flush=True)
    cap = [] if args.resamples is None else ["--resamples", str(args.resamples)]
    boot = "default 10,000" if args.resamples is None else f"CAPPED at {args.resamples:,}"
    plan: list[tuple[str, str, list[str]]] = []
    if "duckdb" in only:
        plan.append(("duckdb", "DuckDB read_ndjson(ignore_errors) + GROUP BY", [*me, "duckdb", str(path)]))
    if "polars" in only:
        plan += [("polars", "polars.scan_ndjson + group_by", [*me, "polars", str(path), "0"]),
                 ("polars", "polars.scan_ndjson(ignore_errors=True)", [*me, "polars", str(path), "1"]),
                 ("polars", "polars.scan_ndjson, clean copy", [*me, "polars", str(clean), "0"])]
    if "pandas" in only:
        if n <= args.pandas_max_rows:
            plan.append(("pandas", "pandas read_json(lines) + groupby, clean copy", [*me, "pandas", str(clean)]))
        else:
            print(f"(pandas skipped above --pandas-max-rows {args.pandas_max_rows:,}: "
                  "read_json(lines=True) holds every row as Python objects)")
    if "ingest" in only:
        plan.append(("ingest", "workbench ingest alone (read_rows + ledger)", [*me, "ingest", str(path)]))
    if "analyze" in only:
        plan.append(("analyze", f"workbench analyze (bootstrap {boot})",
                     [*workbench_cmd(), "analyze", str(path), "--out", str(outdir / "default"), *cap]))
    if "analyze-nogate" in only:
        plan.append(("analyze-nogate", f"workbench analyze --no-gate (bootstrap {boot})",
                     [*workbench_cmd(), "analyze", str(path), "--out", str(outdir / "nogate"), "--no-gate",
                      *cap]))
    if "stages" in only:
        st = "-" if args.stage_resamples is None else str(args.stage_resamples)
        plan.append(("stages", "analyze, stages timed in-process", [*me, "stages", str(path),
                                                                     str(outdir / "stages"), st]))
    if "bootstrap" in only:
        full = args.bootstrap_resamples
        plan.append(("bootstrap", f"joint cluster bootstrap alone, {full:,} resamples (no budget)",
                     [*me, "bootstrap", str(path), str(full)]))
    if "floor" in only:
        plan += [("floor", "floor: interpreter + imports of analyze", [*me, "floor-imports"]),
                 ("floor", "floor: DuckDB lines + json_valid + json_extract", [*me, "floor-parse", str(path)]),
                 ("floor", "floor: writing rows.parquet (of the analyze run)",
                  [*me, "floor-write", str(outdir / "default" / "rows.parquet"), str(outdir / "floor.parquet")])]
    if "duckdb" in only and len(plan) > 1:
        plan.append(("duckdb", "DuckDB again (after the others)", [*me, "duckdb", str(path)]))

    records: list[dict[str, Any]] = []
    partial = {"rows": n, "file": str(path), "meta": meta, "records": records, "resamples_cap": args.resamples,
               "incomplete": True}
    record["runs"].append(partial)
    for kind, label, cmd in plan:
        if cmd[len(me)] == "floor-write" and not Path(cmd[-2]).exists():
            print(f"-- {label}: skipped, no {cmd[-2]} (measure analyze first)", flush=True)
            continue
        print(f"-- {label} ...", flush=True)
        rec = measure(cmd, args.timeout)
        rec.update(kind=kind, label=label)
        records.append(rec)
        save()
        note = _note(rec, meta)
        print(f"   {rec['wall']:8.2f} s  cpu {rec['cpu']:7.1f} s  rss_max {gb(rec['rss_max'])}  "
              f"anon {gb(rec['anon_max'])}  "
              f"rss_tree {gb(rec['rss_tree'])}  load {rec['load_at_start']:.1f}  rc {rec['rc']}  {note}",
              flush=True)
    duck = [r["wall"] for r in records if r["kind"] == "duckdb" and r["rc"] == 0]
    ref = min(duck) if duck else None
    record["runs"].remove(partial)
    a, b = outdir / "default" / "results.json", outdir / "nogate" / "results.json"
    same = None
    if {"analyze", "analyze-nogate"} <= only and a.exists() and b.exists():
        same = a.read_bytes() == b.read_bytes()
        print(f"results.json of analyze and analyze --no-gate byte-identical: {'yes' if same else 'NO'}")
    summary = {"rows": n, "file": str(path), "meta": meta, "duckdb_ref": ref, "records": records,
               "cores": cores_now(),
               "resamples_cap": args.resamples, "results_identical": same}
    print_table(summary)
    print_floor(summary)
    stages = next((r for r in records if r["kind"] == "stages" and r["rc"] == 0), None)
    if stages:
        print_stages(stages)
    return summary


def _note(rec: dict[str, Any], meta: dict[str, Any]) -> str:
    res = rec["result"]
    if rec["timed_out"]:
        return "TIMED OUT (killed)"
    if "failed" in res:
        return "FAILED: " + res["failed"]
    if rec["kind"] == "floor" and "seconds" in res:
        what = {"paths": "configured paths", "groups": "groups", "rows_seen": "objects parsed",
                "rows": "rows", "columns": "columns", "bytes": "bytes"}
        parts = [f"{res[k]:,} {v}" for k, v in what.items() if k in res]
        return f"timed inside: {res['seconds']:.2f} s" + (f" ({', '.join(parts)})" if parts else "")
    if "ledger" in res:
        led = {k: v for k, v in res["ledger"].items() if v}
        exp = meta["expected_ledger"]
        ok = all(res["ledger"].get(k) == v for k, v in exp.items()) and all(
            v in (0, None) for k, v in res["ledger"].items() if k not in exp)
        return f"ledger {'= planted' if ok else '!= planted'}: {led}"
    if "rows_seen" in res:
        gone = meta["rows"] - res["rows_seen"]
        unkeyed = res["rows_seen"] - res["rows_keyed"]
        return (f"{res.get('groups')} keyed groups; of {meta['rows']:,} lines: {res['rows_keyed']:,} rows "
                f"with keys, {unkeyed:,} without keys, {gone:,} dropped; no line numbers, no reasons")
    if "bootstrap" in res:
        b = res["bootstrap"]
        return (f"joint bootstrap {b['seconds']:.1f} s wall, {b['cpu_seconds']:.1f} s CPU ({b['passes']} passes): "
                f"{b['resamples']:,} resamples x {b['scenarios']:,} scenarios x {b['columns']} columns; "
                f"intervals {b['intervals']}; the stages around it {b['stages_seconds']:.1f} s")
    if rec["kind"].startswith("analyze"):
        return " | ".join(rec["stdout_tail"][-1:] + rec["stderr_tail"][-1:])
    return " | ".join(rec["stderr_tail"])


def print_table(summary: dict[str, Any]) -> None:
    n = summary["rows"]
    duck = [r for r in summary["records"] if r["kind"] == "duckdb" and r["rc"] == 0]
    ref = min((r["wall"] for r in duck), default=None)
    ref_cpu = min((r["cpu"] for r in duck), default=None)
    print(f"\n{n:,} rows; x DuckDB = wall (CPU) time / DuckDB's, the faster of its runs: "
          f"{'-' if ref is None else f'{ref:.2f} s ({ref_cpu:.2f} s CPU)'}")
    print(f"| {'measurement':<56} | {'wall':>9} | {'rows/s':>9} | {'x DuckDB':>8} | {'CPU':>8} | "
          f"{'CPU x DuckDB':>12} | {'peak RSS (largest)':>18} | {'peak anon':>9} | {'peak RSS (tree)':>15} | "
          f"{'load':>4} |")
    print("|" + "|".join("-" * w for w in (58, 11, 11, 10, 10, 14, 20, 11, 17, 6)) + "|")
    for r in summary["records"]:
        failed = r["timed_out"] or "failed" in r["result"] or r["rc"] not in (0, 1)
        wall = f"{r['wall']:.2f} s"
        rate = "-" if failed else f"{n / r['wall']:,.0f}"
        ratio = "-" if failed or ref is None else f"{r['wall'] / ref:.1f}x"
        cratio = "-" if failed or not ref_cpu else f"{r['cpu'] / ref_cpu:.1f}x"
        label = r["label"] + (" (failed)" if failed else "")
        print(f"| {label:<56} | {wall:>9} | {rate:>9} | {ratio:>8} | {r['cpu']:>6.1f} s | {cratio:>12} | "
              f"{gb(r['rss_max']):>18} | {gb(r.get('anon_max')):>9} | {gb(r['rss_tree']):>15} | "
              f"{r['load_at_start']:>4.1f} |")


def cores_now() -> int:
    """The cores this process may run on (its affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def cores_of(machine: str) -> int | None:
    """The core count a saved record's ``machine`` text names (``..., 2 cores, ...``)."""
    import re

    m = re.search(r"(\d+) cores", machine)
    return int(m.group(1)) if m else None


def floor_of(summary: dict[str, Any]) -> dict[str, float] | None:
    """The floor's parts (seconds): the imports child whole (interpreter start, imports,
    exit), the parse query and the write as timed inside their children; None without all
    three. ``serial`` is their sum; ``cpu_2`` their CPU seconds over the cores of the machine
    that made the record (``summary["cores"]``), the wall time of a perfectly parallel run of
    the same work."""
    got = {}
    for r in summary["records"]:
        if r["kind"] != "floor" or r["rc"] != 0 or "seconds" not in r["result"]:
            continue
        part = r["cmd"][r["cmd"].index("--child") + 1]
        if part == "floor-imports":
            got[part] = (r["wall"], r["cpu"])
        else:
            got[part] = (r["result"]["seconds"], r["result"]["cpu_seconds"])
    if len(got) < 3:
        return None
    out = {k.removeprefix("floor-"): v[0] for k, v in got.items()}
    out.update({f"{k.removeprefix('floor-')}_cpu": v[1] for k, v in got.items()})
    out["serial"] = sum(v[0] for v in got.values())
    out["cpu"] = sum(v[1] for v in got.values())
    out["cores"] = summary.get("cores") or cores_now()  # the recording machine's, when saved
    out["cpu_2"] = out["cpu"] / out["cores"]
    return out


def print_floor(summary: dict[str, Any]) -> None:
    """The floor against the issue's targets: 2.5x DuckDB's time, and a tenth of pandas'."""
    f = floor_of(summary)
    duck = [r["wall"] for r in summary["records"] if r["kind"] == "duckdb" and r["rc"] == 0]
    if f is None or not duck:
        return
    ref = min(duck)
    pandas = [r["wall"] for r in summary["records"] if r["kind"] == "pandas" and r["rc"] == 0]
    print(f"floor of analyze (what a design on this stack must do; none of the workbench's own work): imports "
          f"{f['imports']:.2f} s + DuckDB parse {f['parse']:.2f} s + rows.parquet {f['write']:.2f} s = "
          f"{f['serial']:.2f} s serial ({f['serial'] / ref:.1f}x DuckDB); {f['cpu']:.1f} s CPU, "
          f"{f['cpu_2']:.2f} s if spread perfectly over {f['cores']} cores ({f['cpu_2'] / ref:.1f}x DuckDB)")
    print(f"  target 2.5x DuckDB = {2.5 * ref:.2f} s: the floor is "
          f"{'BELOW' if f['cpu_2'] < 2.5 * ref else 'ABOVE'} it (parallel floor {f['cpu_2']:.2f} s)")
    # the most generous floor: a parse that cost no more than the anchor's whole process
    # (which accounts for no line), with the imports and the write
    ref_cpu = min(r["cpu"] for r in summary["records"] if r["kind"] == "duckdb" and r["rc"] == 0)
    alt = (f["imports_cpu"] + ref_cpu + f["write_cpu"]) / f["cores"]
    print(f"  with the anchor itself as the parse (no line accounted for): imports {f['imports_cpu']:.1f} + "
          f"anchor {ref_cpu:.1f} + rows.parquet {f['write_cpu']:.1f} s CPU = {alt:.2f} s on "
          f"{f['cores']} cores ({alt / ref:.1f}x DuckDB): {'BELOW' if alt < 2.5 * ref else 'ABOVE'} the target")
    if pandas:
        tenth = min(pandas) / 10
        print(f"  target a tenth of pandas = {tenth:.2f} s: the floor is "
              f"{'BELOW' if f['cpu_2'] < tenth else 'ABOVE'} it (parallel floor {f['cpu_2']:.2f} s)")


def print_stages(rec: dict[str, Any]) -> None:
    res = rec["result"]
    print(f"\nstages of one analysis ({res['resamples']:,} resamples, {res['cells']} scorecard cells, "
          f"{res['judge_offsets']} judge offsets, {res['contrasts']} contrasts); imports "
          f"{res['imports_seconds']:.1f} s, pipeline.run {res['run_seconds']:.1f} s, peak RSS {gb(res['peak_rss'])}")
    boot = res["stages"].get("of which: cluster bootstrap")
    if boot and res["resamples"] != 10_000:
        full = boot["seconds"] * 10_000 / res["resamples"]
        print(f"  full 10,000-resample cluster bootstrap: ~{full:.0f} s, EXTRAPOLATED linearly from "
              f"{res['resamples']:,} resamples (its cost is resamples x scenarios per cell)")
    elif boot:
        print(f"  full 10,000-resample cluster bootstrap: {boot['seconds']:.1f} s (measured)")
    order = sorted(res["stages"].items(), key=lambda kv: (kv[0].startswith("check"), "of which" in kv[0]))
    for label, v in order:
        rss = f"  RSS after {gb(v.get('rss_after'))}, peak so far {gb(v.get('peak_rss_so_far'))}" \
            if "rss_after" in v else ""
        err = f"  {v['error']}" if "error" in v else ""
        print(f"  {label:<46} {v['seconds']:8.1f} s  ({v['calls']} calls){rss}{err}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        return child_main(argv[1:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000000,5000000", help="comma-separated line counts")
    ap.add_argument("--smoke", action="store_true", help=f"one small size ({SMOKE_ROWS:,} lines)")
    ap.add_argument("--seed", type=int, default=generate.SEED)
    ap.add_argument("--only", default=",".join(MEASUREMENTS),
                    help=f"comma-separated subset of {','.join(MEASUREMENTS)}")
    ap.add_argument("--resamples", type=int, help="cap the bootstrap of the analyze runs (default: none)")
    ap.add_argument("--stage-resamples", type=int,
                    help="resamples of the stage-timed run (default: the workbench default, 10,000)")
    ap.add_argument("--bootstrap-resamples", type=int, default=10_000,
                    help="resamples of the `bootstrap` measurement: the joint bootstrap alone, budget off "
                         "(default 10,000, the full bootstrap beside the default run's budgeted one)")
    ap.add_argument("--pandas-max-rows", type=int, default=1_000_000)
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per measurement")
    ap.add_argument("--show", metavar="RECORD.json", help="print the tables of a saved record and exit")
    args = ap.parse_args(argv)
    if args.show:
        saved = json.loads(Path(args.show).read_text(encoding="utf-8"))
        print(f"started {saved['started']} on {saved['machine']}\ncommand: {' '.join(saved['argv'])}")
        for run in saved["runs"]:
            run.setdefault("cores", cores_of(saved.get("machine", "")))  # records before 2026-12-03 11:20
            print_table(run)
            print_floor(run)
            st = next((r for r in run["records"] if r["kind"] == "stages" and r["rc"] == 0), None)
            if st:
                print_stages(st)
        return 0
    sizes = [SMOKE_ROWS] if args.smoke else [int(s) for s in args.sizes.split(",")]
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    bad = only - set(MEASUREMENTS)
    if bad:
        ap.error(f"unknown measurement(s): {', '.join(sorted(bad))}")
    from importlib import metadata

    import duckdb
    import pandas
    import polars

    started = _dt.datetime.now(_dt.UTC)
    try:
        cpu = next(ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name"))
    except (OSError, StopIteration):
        cpu = platform.processor()
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    machine = (f"{cpu}, {os.cpu_count()} cores, {mem / 2**30:.0f} GB RAM, {platform.system()} "
               f"{platform.release()}; Python {platform.python_version()}, duckdb {duckdb.__version__}, "
               f"polars {polars.__version__}, pandas {pandas.__version__}, "
               f"workbench {metadata.version('workbench')}; nice {os.nice(0)}")
    print(f"started {started:%Y-%m-%d %H:%M} UTC on {machine}; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("command: " + " ".join([Path(sys.executable).name, *sys.argv]))
    generate.CACHE.mkdir(parents=True, exist_ok=True)
    out = generate.CACHE / f"bench_scale_{started:%Y%m%dT%H%M%S}.json"
    record: dict[str, Any] = {"started": started.isoformat(), "finished": None, "machine": machine,
                              "argv": sys.argv, "runs": []}

    def save() -> None:  # after every measurement, so an interrupted run keeps what it measured
        out.write_text(json.dumps(record, indent=1, default=str) + "\n", encoding="utf-8")

    for n in sizes:
        record["runs"].append(run_size(n, args, only, record, save))
    finished = _dt.datetime.now(_dt.UTC)
    print(f"\nfinished {finished:%H:%M} UTC; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    record["finished"] = finished.isoformat()
    save()
    print(f"record: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
