"""``workbench batch MANIFEST.yaml --out DIR``: one report per manifest entry, in parallel.

The manifest is a YAML list of entries (or a mapping with an ``entries`` list). Each entry
has a ``name`` (the folder ``DIR/<name>/``), ``inputs`` (a path or a list) and any of
``config``, ``preset``, ``plan``, ``published``, ``claims``, ``no_gate`` (true: report a failed
gate without failing) and ``params`` (a mapping of config keys to values; ``min_valid_n``,
``min_clusters``, ``seed`` and ``resamples`` become the matching flags). Relative paths are
resolved against the manifest's folder.

Every entry runs as its own ``workbench report`` process, so one bad input fails its entry
and nothing else. ``DIR/index.html`` links every report with its status (ok, gate failed, gate failed (no_gate),
or error with the error's line) and headline numbers. Exit 1 when any entry errored or
failed its preregistered gate (as ``workbench report`` would for that entry), else 0; an
entry with ``no_gate: true`` shows its gate without failing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from workbench.cli import terminal
from workbench.common import outdir
from workbench.common.errors import WorkbenchError
from workbench.common.text import gate_summary
from workbench.common.vocab import BatchStatus
from workbench.document import cliargs
from workbench.report import CSS, esc, num

ENTRY_KEYS = {"name", "inputs", "config", "preset", "plan", "published", "claims", "params", "no_gate"}
PATH_KEYS = ("config", "plan", "published", "claims")
FLAG_PARAMS = {
    "min_valid_n": "--min-valid-n",
    "min_clusters": "--min-clusters",
    "seed": "--seed",
    "resamples": "--resamples",
}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
RESERVED = frozenset({"index.html", outdir.BATCH_MANIFEST})


@dataclass
class Entry:
    """One manifest entry, paths resolved."""

    name: str
    inputs: list[str]
    options: dict[str, str] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    no_gate: bool = False

    def argv(self, out: Path) -> list[str]:
        """The ``workbench report`` arguments for this entry."""
        args = ["report", *self.inputs, "--out", str(out), "--quiet"]
        if self.no_gate:
            args.append("--no-gate")
        for key, value in self.options.items():
            args += [f"--{key}", value]
        for key, value in self.params.items():
            if key in FLAG_PARAMS:
                args += [FLAG_PARAMS[key], str(value)]
            else:
                args += ["-p", key, json.dumps(value)]
        return args


@dataclass
class Outcome:
    """What one entry's run produced."""

    entry: Entry
    status: str  # ok | gate failed | gate failed (no_gate) | error
    code: int
    error: str | None
    seconds: float
    headline: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None  # why a failed gate failed (the short cells and their counts)


def read_manifest(path: str | Path) -> list[Entry]:
    """Parse and check a manifest; raises :class:`WorkbenchError` naming the entry and key."""
    from workbench.common.config import NUMBER_KEYS, read_text_file, safe_yaml

    p = Path(path)
    data = safe_yaml(read_text_file(str(p), "manifest"), str(p), NUMBER_KEYS)
    if isinstance(data, Mapping):
        data = data.get("entries")
    if not isinstance(data, list) or not data:
        raise WorkbenchError(
            f"{p}: expected a non-empty list of entries (or a mapping with 'entries:')"
        )
    base = p.parent
    entries: list[Entry] = []
    seen: set[str] = set()
    for i, raw in enumerate(data, start=1):
        where = f"{p}: entry {i}"
        if not isinstance(raw, Mapping):
            raise WorkbenchError(f"{where}: expected a mapping with name and inputs")
        unknown = set(raw) - ENTRY_KEYS
        if unknown:
            raise WorkbenchError(
                f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}; "
                f"allowed: {', '.join(sorted(ENTRY_KEYS))}"
            )
        name = raw.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise WorkbenchError(
                f"{where}: 'name' must be a folder name (letters, digits, . _ -), got {name!r}"
            )
        if name.lower() in RESERVED or name.startswith(outdir.TMP_PREFIX):
            raise WorkbenchError(f"{where}: name {name!r} is reserved for the batch's own files "
                                 f"({', '.join(sorted(RESERVED))}); choose another")
        if name.lower() in seen:
            raise WorkbenchError(f"{where}: duplicate name {name!r} (names are compared "
                                 "ignoring case, as some file systems do)")
        seen.add(name.lower())
        inputs = raw.get("inputs")
        if isinstance(inputs, str):
            inputs = [inputs]
        if (
            not isinstance(inputs, list)
            or not inputs
            or not all(isinstance(x, str) for x in inputs)
        ):
            raise WorkbenchError(f"{where} ({name}): 'inputs' must be a path or a list of paths")
        options: dict[str, str] = {}
        for key in (*PATH_KEYS, "preset"):
            value = raw.get(key)
            if value is None:
                continue
            if not isinstance(value, str):
                raise WorkbenchError(f"{where} ({name}): '{key}' must be a string")
            options[key] = (
                value
                if key == "preset" or (key == "plan" and value == "complete")
                else str(_resolve(base, value))
            )
        no_gate = raw.get("no_gate", False)
        if not isinstance(no_gate, bool):
            raise WorkbenchError(f"{where} ({name}): 'no_gate' must be true or false")
        params = raw.get("params") or {}
        if not isinstance(params, Mapping):
            raise WorkbenchError(
                f"{where} ({name}): 'params' must be a mapping of config keys to values"
            )
        entries.append(
            Entry(
                name=name,
                inputs=[str(_resolve(base, x)) for x in inputs],
                options=options,
                params=dict(params),
                no_gate=no_gate,
            )
        )
    return entries


def _resolve(base: Path, value: str) -> Path:
    path = Path(value)
    return path if path.is_absolute() else base / path


def headline_numbers(results_path: Path) -> dict[str, Any]:
    """From a results.json: the pooled headline cells' range, valid/rows totals, claim verdicts."""
    try:
        doc = json.loads(results_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    hl = doc.get("config", {}).get("headline", "overall")
    cells = [
        c
        for c in doc.get("scorecard", [])
        if c.get("judge") is None and c.get("subset") is None and c.get("field") == hl
    ]
    means = [
        c["mean"] for c in cells if c.get("mean") is not None and c.get("status") == "measured"
    ]
    out: dict[str, Any] = {
        "field": hl,
        "variants": len(cells),
        "measured": len(means),
        "low": min(means) if means else None,
        "high": max(means) if means else None,
        "valid": sum(int(c["valid_n"]) for c in cells),
        "rows": sum(int(c["rows"]) for c in cells),
        "lines": (doc.get("ledger") or {}).get("lines"),
    }
    claims = doc.get("claims")
    if claims:
        verdicts: dict[str, int] = {}
        for c in claims:
            verdicts[c["verdict"]] = verdicts.get(c["verdict"], 0) + 1
        out["claims"] = verdicts
    return out


def _last_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if ln.startswith("workbench: error:"):
            return ln[len("workbench: error:") :].strip()
    return lines[-1] if lines else "failed with no message"


#: Statuses that fail the batch (an entry with ``no_gate: true`` shows its failed gate as
#: ``gate failed (no_gate)`` and does not).
FAILING = (BatchStatus.ERROR.value, BatchStatus.GATE_FAILED.value)


def entry_status(returncode: int, out: Path, no_gate: bool) -> tuple[str, None]:
    """``ok``, ``gate failed``, ``gate failed (no_gate)`` or ``error`` for a finished entry.

    The gate is read from the entry's own ``results.json``, so an entry whose exit code
    ``no_gate`` kept at 0 still shows the gate its report shows.
    """
    if not (out / "report.html").is_file():
        return "error", None
    if returncode == cliargs.EXIT_GATE:
        return "gate failed", None
    if returncode != cliargs.EXIT_OK:
        return "error", None
    try:
        gate = json.loads((out / "results.json").read_text(encoding="utf-8")).get("gate") or {}
    except (OSError, ValueError):
        return "error", None
    if not gate.get("passed", True):
        return ("gate failed (no_gate)" if no_gate else "gate failed"), None
    return "ok", None


def run_entry(entry: Entry, out_root: Path, overwrite: bool = False) -> Outcome:
    """Run ``workbench report`` for one entry in its own process; never raises."""
    out = out_root / entry.name
    t0 = time.monotonic()
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.log").unlink(missing_ok=True)  # the batch's own (checked by run())
    except OSError as exc:
        return Outcome(entry, "error", -1, f"{out}: cannot write: {exc.strerror or exc}",
                       time.monotonic() - t0)
    cmd = [sys.executable, "-m", "workbench.cli.main", *entry.argv(out)]
    if overwrite:
        cmd.append("--overwrite")
    env = dict(os.environ)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    except OSError as exc:
        return Outcome(entry, "error", -1, f"could not start: {exc}", time.monotonic() - t0)
    try:
        outdir.write_atomic(out / "report.log", proc.stdout + proc.stderr)
        outdir.add_files(out, ["report.log"])
    except OSError:
        pass
    seconds = time.monotonic() - t0
    status, error = entry_status(proc.returncode, out, entry.no_gate)
    if status == "error":
        error = _last_error(proc.stderr or proc.stdout)
    head = headline_numbers(out / "results.json") if status != "error" else {}
    reason = gate_reason(out / "results.json") if status.startswith("gate failed") else None
    return Outcome(entry, status, proc.returncode, error, seconds, head, reason)


def gate_reason(results_path: Path) -> str | None:
    """From a results.json whose gate failed: the failing cells and their counts, one line."""
    try:
        gate = json.loads(results_path.read_text(encoding="utf-8")).get("gate")
    except (OSError, ValueError, AttributeError):
        return None
    return gate_summary(gate) or None


def outcome_line(o: Outcome) -> str:
    """The terminal line for a finished entry: status and name, then why it failed or errored."""
    why = o.error or o.reason
    return terminal.safe(f"{o.status:<11} {o.entry.name}" + (f": {why}" if why else ""))


def _headline_text(h: Mapping[str, Any]) -> str:
    if not h:
        return "-"
    parts = []
    if h.get("low") is not None:
        rng = num(h["low"]) if h["low"] == h["high"] else f"{num(h['low'])} to {num(h['high'])}"
        parts.append(f"{h['field']} {rng} ({h['measured']} of {h['variants']} variants measured)")
    else:
        parts.append(f"no measured {h['field']} cell ({h['variants']} variants)")
    parts.append(f"valid {h['valid']}/{h['rows']} rows")
    if h.get("claims"):
        parts.append("claims: " + ", ".join(f"{n} {v}" for v, n in sorted(h["claims"].items())))
    return "; ".join(parts)


def index_html(outcomes: Sequence[Outcome], manifest: str) -> str:
    """The batch index page: every entry, its status and headline numbers; all text escaped."""
    kinds = {"ok": "good", "gate failed": "warn", "gate failed (no_gate)": "warn", "error": "bad"}
    rows = []
    for o in outcomes:
        link = (
            esc(o.entry.name)
            if o.status == "error"
            else f'<a href="{esc(quote(o.entry.name))}/report.html">{esc(o.entry.name)}</a>'
        )
        detail = esc(o.error) if o.error else esc(_headline_text(o.headline))
        log = f' <a class="wb-dim" href="{esc(quote(o.entry.name))}/report.log">log</a>'
        rows.append(
            f'<tr><td>{link}</td><td><span class="wb-badge '
            f'wb-{kinds[o.status]}">{esc(o.status)}</span></td>'
            f'<td>{detail}</td><td class="num">{o.seconds:.0f}s{log}</td></tr>'
        )
    counts = {s: sum(1 for o in outcomes if o.status == s) for s in kinds}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1.0">'
        f"<title>workbench batch: {esc(Path(manifest).name)}</title><style>{CSS}</style></head>"
        '<body class="wb-body"><main class="wb-page"><div class="wb-kicker">workbench batch</div>'
        f'<h1>{esc(Path(manifest).name)}</h1><p class="wb-sub">{len(outcomes)} reports: '
        f"{esc(summary)}</p>"
        '<div class="wb-table-wrap"><table '
        'class="wb-table"><thead><tr><th>report</th><th>status</th>'
        "<th>headline numbers / error</th><th "
        f'class="num">time</th></tr></thead><tbody>{"".join(rows)}'
        "</tbody></table></div></main></body></html>\n"
    )


def _batch_entries(out: Path) -> set[str]:
    """Entry folders a previous batch recorded in ``batch.json``."""
    try:
        doc = json.loads((out / outdir.BATCH_MANIFEST).read_text(encoding="utf-8"))
        return {str(n) for n in doc["entries"]} if isinstance(doc.get(outdir.MARK), dict) else set()
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return set()


def _own_entry_files(out: Path) -> set[str]:
    """Files under entry folders the workbench wrote: folders listed in ``batch.json`` or
    holding a run manifest. Each entry's own ``workbench report`` checks its folder's files."""
    own: set[str] = set()
    if not out.is_dir():
        return own
    listed = _batch_entries(out)
    for d in sorted(out.iterdir()):
        if d.is_dir() and not d.is_symlink() and (d.name in listed or outdir.own_files(d) is not None):
            own |= {f"{d.name}/{f}" for f in outdir._listing(d)}
    return own


def run(args: argparse.Namespace) -> int:
    """Run every entry (``--jobs`` at a time), write ``index.html``; exit 1 if any entry errored."""
    entries = read_manifest(args.manifest)
    out = Path(args.out)
    overwrite = bool(getattr(args, "overwrite", False))
    outdir.prepare(out, [args.manifest, *(x for e in entries for x in e.inputs),
                         *(v for e in entries for k, v in e.options.items() if k != "preset")],
                   overwrite=overwrite, writes=["index.html", outdir.BATCH_MANIFEST],
                   manifest=outdir.BATCH_MANIFEST, also_own=_own_entry_files(out))
    jobs = max(1, int(args.jobs))
    quiet = bool(getattr(args, "quiet", False))
    bar = None
    if not quiet and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=len(entries), desc="reports", unit=" report", file=sys.stderr)
    done: dict[str, Outcome] = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_entry, e, out, overwrite): e for e in entries}
        for fut in as_completed(futures):
            o = fut.result()
            done[o.entry.name] = o
            line = outcome_line(o)
            if bar is not None:
                bar.write(line, file=sys.stderr)
                bar.update(1)
            elif not quiet or o.status != "ok":  # --quiet drops progress, never a failure's reason
                print(f"[{len(done)}/{len(entries)}] {line}", file=sys.stderr, flush=True)
    if bar is not None:
        bar.close()
    outcomes = [done[e.name] for e in entries]
    index = outdir.write_atomic(out / "index.html", index_html(outcomes, args.manifest))
    old = _batch_entries(out)
    outdir.record(out, ["index.html"], {"entries": sorted(old | {e.name for e in entries})},
                  manifest=outdir.BATCH_MANIFEST)
    print(terminal.safe(index))
    # Exit codes as for a single report: a failed gate fails its entry (and so the batch),
    # as an error does; an entry with `no_gate: true` reports the gate without failing.
    return 1 if any(o.status in FAILING for o in outcomes) else 0
