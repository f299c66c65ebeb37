"""``workbench analyze`` under a hard memory limit (a cgroup), on a generated file.

    sudo .venv/bin/python benchmarks/memory_cap.py --rows 1000000 --limit 1G
    .venv/bin/python benchmarks/memory_cap.py --rows 5000000 --limit 1.5G --resamples 1000

The issue-12 question "is memory bounded by cells and scenarios, not rows?" answered by the
kernel: the run is put in its own memory cgroup (v2 ``memory.max``, or v1
``memory.limit_in_bytes`` + ``memory.memsw.limit_in_bytes``), so it is killed when it needs
more than the limit (page cache is charged too, but the kernel reclaims it before killing).
Prints the input's size, the limit, their ratio, the exit status (``-9``: killed by the
kernel's OOM killer), wall time and the process's own peak RSS (``VmHWM``, 20 Hz), and writes
the record as JSON (``--json``). Needs a writable cgroup hierarchy (root in a container with
its cgroup mounted read-write); says so and exits 2 otherwise. A measurement, never a test
pass/fail: ``tests/`` do not time or cap anything.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import gb, measure, workbench_cmd  # noqa: E402
from generate import cache_path, generate  # noqa: E402

V2 = Path("/sys/fs/cgroup")
V1 = Path("/sys/fs/cgroup/memory")


def parse_size(text: str) -> int:
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    t = text.strip().upper().rstrip("B")
    if t and t[-1] in units:
        return int(float(t[:-1]) * units[t[-1]])
    return int(t)


def make_cgroup(limit: int) -> tuple[Path, str]:
    """A fresh memory cgroup limited to ``limit`` bytes (no swap): its folder and version."""
    name = f"workbench-memcap-{os.getpid()}"
    if (V2 / "cgroup.controllers").is_file() and "memory" in (V2 / "cgroup.controllers").read_text():
        d = V2 / name
        d.mkdir()
        (d / "memory.max").write_text(str(limit))
        if (d / "memory.swap.max").exists():
            (d / "memory.swap.max").write_text("0")
        return d, "v2"
    d = V1 / name
    d.mkdir()
    (d / "memory.limit_in_bytes").write_text(str(limit))
    if (d / "memory.memsw.limit_in_bytes").exists():
        (d / "memory.memsw.limit_in_bytes").write_text(str(limit))
    return d, "v1"


def cgroup_peak(d: Path, version: str) -> int | None:
    """The cgroup's own peak charge (RSS + page cache), when the kernel keeps one."""
    f = d / ("memory.peak" if version == "v2" else "memory.max_usage_in_bytes")
    try:
        return int(f.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="lines of the generated file")
    ap.add_argument("--limit", default="1G", help="memory limit, e.g. 800M, 1.5G")
    ap.add_argument("--resamples", type=int, default=None, help="cap the bootstrap (default: the default run)")
    ap.add_argument("--timeout", type=float, default=7200.0)
    ap.add_argument("--json", default=None, help="write the record here")
    ap.add_argument("--input", type=Path, default=None, help="this file instead of the generated one")
    ap.add_argument("--spill", choices=("auto", "always", "never"), default=None,
                    help="WORKBENCH_SPILL for the run (default: as the environment has it)")
    args = ap.parse_args(argv)
    limit = parse_size(args.limit)
    if args.input is not None:
        path = args.input
        with open(path, "rb") as fh:
            args.rows = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 24), b""))
    else:
        path = cache_path(args.rows)
        if not path.exists():
            generate(args.rows)
    if args.spill is not None:
        os.environ["WORKBENCH_SPILL"] = args.spill
    try:
        cg, version = make_cgroup(limit)
    except OSError as e:
        print(f"memory_cap: cannot make a memory cgroup ({e}); run as root with a writable cgroup mount",
              file=sys.stderr)
        return 2
    out = Path(f"/tmp/workbench-memcap-{os.getpid()}")
    cmd = [*workbench_cmd(), "analyze", str(path), "--out", str(out), "--no-gate", "-q"]
    if args.resamples is not None:
        cmd += ["--resamples", str(args.resamples)]
    # the shell joins the cgroup, then becomes the workbench (same pid: VmHWM is the workbench's)
    wrapped = ["sh", "-c", f'echo $$ > "{cg}/cgroup.procs" && exec "$@"', "sh", *cmd]
    try:
        m = measure(wrapped, args.timeout)
        peak_cg = cgroup_peak(cg, version)
    finally:
        try:
            cg.rmdir()
        except OSError:
            pass
    size = path.stat().st_size
    rec: dict[str, Any] = {
        "rows": args.rows, "input": str(path), "spill": os.environ.get("WORKBENCH_SPILL", "auto"),
        "input_bytes": size, "limit_bytes": limit, "input_over_limit": size / limit,
        "cgroup": version, "rc": m["rc"], "killed": m["rc"] == -9, "wall": m["wall"], "cpu": m["cpu"],
        "rss_max": m["rss_max"], "cgroup_peak": peak_cg, "cmd": cmd, "stderr_tail": m["stderr_tail"],
        "load_at_start": m["load_at_start"],
    }
    verdict = ("killed by the OOM killer (needs more than the limit)" if rec["killed"]
               else "completed" if m["rc"] == 0 else f"exit {m['rc']}")
    print(f"{args.rows:,} rows, input {gb(size)} (WORKBENCH_SPILL={rec['spill']}) "
          f"under a {gb(limit)} cgroup {version} limit "
          f"(input {size / limit:.2f}x the limit): {verdict}; wall {m['wall']:.1f} s, "
          f"CPU {m['cpu']:.1f} s, peak RSS {gb(m['rss_max'])}, cgroup peak {gb(peak_cg)}")
    if m["rc"] not in (0, -9):
        print("\n".join(m["stderr_tail"]), file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n", "utf-8")
    return 0 if m["rc"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
