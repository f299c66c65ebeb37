"""Per-stage wall and CPU seconds of ``workbench analyze FILE --resamples N``, in one process.

    nice -n 19 .venv/bin/python benchmarks/stage_profile.py FILE OUTDIR RESAMPLES

Finer than ``bench_scale.py --only stages``: every function ``pipeline.run`` calls is timed
on its own (the missingness tests, the contrasts' missingness tests in
``contrast_confounding``...), with CPU time (``time.process_time``: all threads of this
process), which moves much less than wall time on a shared machine, and the peak anonymous
memory while the stage ran (``RssAnon`` of ``/proc/self/status``, sampled at 50 Hz by a thread:
the mapped row table and page cache are not in it). Names in parentheses are nested inside the
stages (the bootstrap, the block permutation tests). Prints a table and writes
``OUTDIR.timing.json`` (per label: wall, CPU, calls, peak RSS so far, peak anonymous GB).
Run it with ``PYTHONPATH=<an older checkout>`` to time older code on the same file.
"""
import contextlib
import io
import json
import resource
import sys
import threading
import time
from pathlib import Path

path, out, resamples = sys.argv[1], sys.argv[2], sys.argv[3]
from workbench import stats  # noqa: E402
from workbench.analysis import names, paired, provenance, ranks  # noqa: E402
from workbench.cli import main as cli  # noqa: E402
from workbench.document import build as document  # noqa: E402
from workbench.document import pipeline  # noqa: E402
from workbench.ingest import ledger  # noqa: E402

timing = {}
def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
samples = []  # (perf_counter, RssAnon GB)
def anon():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 2**20
    return float("nan")
def sample():
    while True:
        samples.append((time.perf_counter(), anon()))
        time.sleep(0.02)
threading.Thread(target=sample, daemon=True).start()
def peak_anon(t0, t1):
    seen = [a for t, a in samples if t0 <= t <= t1]
    return max(seen + [anon()])
depth = [0]
def wrap(mod, name, label):
    fn = getattr(mod, name)
    def timed(*a, **k):
        depth[0] += 1
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return fn(*a, **k)
        finally:
            depth[0] -= 1
            t1 = time.perf_counter()
            r = timing.setdefault(label, [0.0, 0.0, 0, 0.0, 0.0])
            r[0] += t1 - t0
            r[1] += time.process_time() - c0
            r[2] += 1
            r[3] = rss()
            r[4] = max(r[4], peak_anon(t0, t1))
    setattr(mod, name, timed)
for mod, name, label in [
    (pipeline, "load", "ingest+plan"),
    (pipeline, "check_names", "check_names"),
    (ledger, "count_ledger", "ledger"),
    (pipeline, "census_table", "census"), (pipeline, "census_margins", "census_margins"),
    (pipeline, "missingness_tests", "missingness_tests"), (pipeline, "scale_checks", "scale_checks"),
    (names, "name_warnings", "name_warnings"), (provenance, "provenance_checks", "provenance"),
    (document, "census_records", "census_records"),
    (pipeline, "scorecard_table", "scorecard"), (pipeline, "flag_rates", "flag_rates"),
    (pipeline, "pass_rates", "pass_rates"), (pipeline, "consistency", "consistency"),
    (paired.PairedTables, "prepare", "paired_tables"),
    (paired, "judge_offsets", "judge_offsets"), (paired, "contrasts", "contrasts"),
    (paired, "contrast_confounding", "contrast_confounding"), (ranks, "rank_intervals", "ranks"),
    (paired, "repetition_consistency", "repetition"),
    (stats, "cluster_bootstrap_mean", "(bootstrap mean)"), (stats, "cluster_bootstrap_diff", "(bootstrap diff)"),
    (stats, "block_permutation_test", "(block permutation)"),
]:
    if hasattr(mod, name):
        wrap(mod, name, label)
argv = ["analyze", path, "--out", out, "--quiet", "--no-gate", "--resamples", resamples]
args = cli.build_parser().parse_args(argv)
args.argv = ["workbench", *argv]
cfg = cli.config_from_args(args)
t0, c0 = time.perf_counter(), time.process_time()
an = pipeline.run(args.inputs, cfg, plan=args.plan)
run_w, run_c = time.perf_counter() - t0, time.process_time() - c0
t0, c0 = time.perf_counter(), time.process_time()
cli.write_outputs(an, Path(out), argv=args.argv)
timing["write outputs"] = [time.perf_counter() - t0, time.process_time() - c0, 1, rss(),
                           peak_anon(t0, time.perf_counter())]
t0, c0 = time.perf_counter(), time.process_time()
from workbench.cli import terminal  # noqa: E402

with contextlib.redirect_stdout(io.StringIO()):
    terminal.print_analysis(an)
timing["terminal output"] = [time.perf_counter() - t0, time.process_time() - c0, 1, rss(),
                             peak_anon(t0, time.perf_counter())]
outer = [v for k, v in timing.items() if not k.startswith("(") and k not in ("write outputs", "terminal output")]
named, namedc = sum(v[0] for v in outer), sum(v[1] for v in outer)
timing["other inline in run"] = [run_w - named, run_c - namedc, 1, rss(), float("nan")]
load = open("/proc/loadavg").read().split()[0]
print(f"pipeline.run wall {run_w:.1f} s cpu {run_c:.1f} s; peak RSS {rss():.2f} GB; "
      f"peak anonymous {max(a for _, a in samples):.2f} GB; load {load}")
for k, (w, c, n, r, a) in timing.items():
    print(f"  {k:28s} wall {w:8.2f} s  cpu {c:8.2f} s  calls {n:4d}  peak RSS so far {r:.2f} GB"
          f"  peak anon in stage {a:.2f} GB")
json.dump(timing, open(out + ".timing.json", "w"))
