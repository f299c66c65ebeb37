"""``workbench selftest``: the instrument must tell a known-good run from known-bad ones.

The analogue of a scripted always-correct policy and a flaky one: the built-in simulator
scenarios (:data:`workbench.synth.SCENARIOS`) are written to a temporary directory, run through
the full pipeline (:func:`workbench.pipeline.run`, the same code as ``workbench analyze``), and
each expectation prints one line, ``PASS`` or ``FAIL``. Exit 1 when any expectation fails.

* ``clean`` (complete data, no judge offset, a real variant effect): the gate passes, the
  claim holds, the forensics names ``valid_mean``, no missingness finding;
* ``silent_zero`` (the post-mortem): judge-dependent missingness flagged, the forensics names
  ``zero_filled``, no claim holds, the gate fails (the preregistered minimum is above the
  worst cell);
* ``item_failures`` (MCAR whole-item failures, no effects): no missingness finding, no
  ``confounded`` flag, every "no difference" claim consistent with the data
  (``inconclusive`` or ``equivalent``, never ``refuted``/``holds``-with-a-sign).
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import synth

SEED = 20261201
RESAMPLES = 1000  # bootstrap resamples per cell here (the intervals checked are not bootstrap ones)

Expectation = tuple[str, Callable[[dict[str, Any]], tuple[bool, str]]]


def _missing_findings(doc: dict[str, Any]) -> list[str]:
    alpha = doc["config"]["alpha"]
    return [f"{t['factor']} p={t['p_value']:.3g}" for t in doc["missingness_tests"]
            if t["p_value"] is not None and t["p_value"] < alpha]


def _rules(doc: dict[str, Any]) -> list[list[str]]:
    return [sorted(r["reproduced_by"]) for r in doc.get("published_check", [])]


EXPECTATIONS: dict[str, list[Expectation]] = {
    "clean": [
        ("the gate passes", lambda d: (d["gate"]["passed"], "passed" if d["gate"]["passed"]
                                       else "; ".join(f["why"] for f in d["gate"]["failing"]))),
        ("every claim holds", lambda d: (all(c["verdict"] == "holds" for c in d["claims"]),
                                         ", ".join(c["verdict"] for c in d["claims"]))),
        ("the forensics names valid_mean", lambda d: (
            bool(_rules(d)) and all("valid_mean" in r for r in _rules(d)), str(_rules(d)))),
        ("no missingness finding", lambda d: (not _missing_findings(d), ", ".join(_missing_findings(d)) or "none")),
    ],
    "silent_zero": [
        ("judge-dependent missingness is flagged", lambda d: (
            any(t["factor"] == "judge" and t["p_value"] is not None and t["p_value"] < d["config"]["alpha"]
                for t in d["missingness_tests"]),
            ", ".join(f"{t['factor']} p={t['p_value']}" for t in d["missingness_tests"]))),
        ("the forensics names zero_filled (and not valid_mean)", lambda d: (
            bool(_rules(d)) and all("zero_filled" in r and "valid_mean" not in r for r in _rules(d)),
            str(_rules(d)))),
        ("no claim holds", lambda d: (all(c["verdict"] != "holds" for c in d["claims"]),
                                      ", ".join(c["verdict"] for c in d["claims"]))),
        ("the gate fails (preregistered minimum above the worst cell)", lambda d: (
            not d["gate"]["passed"], "; ".join(f["why"] for f in d["gate"]["failing"]) or "passed")),
    ],
    "item_failures": [
        ("no missingness finding", lambda d: (not _missing_findings(d), ", ".join(_missing_findings(d)) or "none")),
        ("no claim is flagged confounded", lambda d: (not any(c["confounded"] for c in d["claims"]),
                                                       f"{sum(c['confounded'] for c in d['claims'])} flagged")),
        ("every 'no difference' claim is consistent with the data", lambda d: (
            all(c["verdict"] in ("inconclusive", "equivalent") for c in d["claims"]),
            ", ".join(c["verdict"] for c in d["claims"]))),
    ],
}


def run(seed: int | None = None, out: Any = None) -> tuple[int, list[dict[str, Any]]]:
    """Run every scenario and expectation; returns (failures, records) and prints one line each."""
    from . import config as config_mod
    from . import pipeline

    seed = SEED if seed is None else seed
    write = (out or sys.stdout).write
    records = []
    failures = 0
    with tempfile.TemporaryDirectory(prefix="workbench-selftest-") as tmp:
        for name, expectations in EXPECTATIONS.items():
            t0 = time.perf_counter()
            d = Path(tmp) / name
            paths = synth.write(synth.scenario(name), d, seed=seed)
            cfg = config_mod.load_config(str(paths["config"]), overrides={"bootstrap": {"resamples": RESAMPLES}})
            analysis = pipeline.run([str(paths["rows"])], cfg, plan=str(paths["plan"]),
                                    published=str(paths["published"]) if "published" in paths else None,
                                    claims=str(paths["claims"]) if "claims" in paths else None)
            doc = analysis.doc
            secs = time.perf_counter() - t0
            for what, test in expectations:
                try:
                    ok, detail = test(doc)
                except (KeyError, TypeError, ValueError) as exc:  # an expectation that cannot be read fails
                    ok, detail = False, f"could not evaluate: {exc!r}"
                failures += not ok
                records.append({"scenario": name, "expectation": what, "passed": bool(ok), "detail": detail})
                write(f"{'PASS' if ok else 'FAIL'}  {name}: {what} ({detail})\n")
            write(f"      {name}: {analysis.rows.height} rows in {secs:.1f} s\n")
    return failures, records


def main(seed: int | None = None) -> int:
    """``workbench selftest``: exit 0 when every expectation passes, 1 otherwise."""
    failures, records = run(seed)
    total = len(records)
    if failures:
        print(f"selftest FAILED: {failures} of {total} expectations missed; the instrument did not tell "
              "the known-good scenario from the known-bad ones")
        return 1
    print(f"selftest passed: {total} of {total} expectations (clean, silent_zero, item_failures)")
    return 0
