"""``workbench selftest``: the instrument must tell a known-good run from known-bad ones.

The analogue of a scripted always-correct policy and a flaky one: the built-in simulator
scenarios (:data:`workbench.sim.synth.SCENARIOS`) are written to a temporary directory, run through
the full pipeline (:func:`workbench.document.pipeline.run`, the same code as ``workbench analyze``), and
each expectation prints one line, ``PASS`` or ``FAIL``. Exit 1 when any expectation fails.

* ``clean`` (complete data, no judge offset, a real variant effect): the gate passes, the
  claim holds, the forensics names ``valid_mean``, no missingness finding;
* ``silent_zero`` (the post-mortem): judge-dependent missingness flagged, the forensics names
  ``zero_filled``, no claim holds, the gate fails (the preregistered minimum is above the
  worst cell);
* ``item_failures`` (MCAR whole-item failures, no effects): no missingness finding, no
  ``confounded`` flag, every "no difference" claim consistent with the data
  (``inconclusive`` or ``equivalent``, never ``refuted``/``holds``-with-a-sign);
* ``judge_biases`` (three judges of three families; anthropic/judge prefers its own family by
  +0.5, is lenient by +0.8 and rewards length; openai/judge is unbiased; google/judge, whose
  family writes nothing, is the neutral reference; a human labels 25 %): each judge diagnostic
  recovers the planted truth within its interval, flags the biased judge and not the unbiased
  one, and the prediction-powered mean covers the human truth where the judge-only mean misses;
* ``crosswise`` (each judge scored only the other family's outputs): self-preference is
  reported as not identifiable, by name, instead of a number.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbench.sim import synth

SEED = 20261201
RESAMPLES = 1000  # bootstrap resamples per cell here (the intervals checked are not bootstrap ones)

Expectation = tuple[str, Callable[[dict[str, Any]], tuple[bool, str]]]


def _missing_findings(doc: dict[str, Any]) -> list[str]:
    alpha = doc["config"]["alpha"]
    return [f"{t['factor']} p={t['p_value']:.3g}" for t in doc["missingness_tests"]
            if t["p_value"] is not None and t["p_value"] < alpha]


def _rules(doc: dict[str, Any]) -> list[list[str]]:
    return [sorted(r["reproduced_by"]) for r in doc.get("published_check", [])]


def _truth(name: str) -> dict[str, Any]:
    return synth.truth(synth.scenario(name))


def _own_family_truth(name: str, judge: str, reference: str) -> float:
    """The true own-family preference of ``judge`` against ``reference`` on the score scale: the
    mean over its family's variants of the true judge - reference offset minus the same over the
    other families' variants (the estimand of ``self_preference.judges``)."""
    model = synth.scenario(name)
    cells = {(c["variant"], c["judge"]): c["mean"] for c in _truth(name)["cells"]}
    fam = model.judge_family(judge)
    d = {v: cells[(v, judge)] - cells[(v, reference)] for v in model.variants if model.writers.get(v)}
    own = [x for v, x in d.items() if model.writers[v] == fam]
    other = [x for v, x in d.items() if model.writers[v] != fam]
    return sum(own) / len(own) - sum(other) / len(other)


def _judge_rec(doc: dict[str, Any], judge: str) -> dict[str, Any]:
    return next(r for r in doc["self_preference"]["judges"] if r["judge"] == judge)


def _covers(rec: dict[str, Any], value: float, lo: str = "ci_low", hi: str = "ci_high") -> bool:
    return rec.get(lo) is not None and rec[lo] <= value <= rec[hi]


def _ci_text(rec: dict[str, Any], est: str = "estimate", lo: str = "ci_low", hi: str = "ci_high",
             fmt: str = "+.3f") -> str:
    if rec.get(lo) is None:
        return f"{rec.get(est)} (no interval: {rec.get('why')})"
    return f"{rec[est]:{fmt}} [{rec[lo]:{fmt}}, {rec[hi]:{fmt}}]"


def _self_pref_check(judge: str, detected: bool) -> Callable[[dict[str, Any]], tuple[bool, str]]:
    def check(doc: dict[str, Any]) -> tuple[bool, str]:
        rec = _judge_rec(doc, judge)
        truth = _own_family_truth("judge_biases", judge, rec["reference"] or "")
        ok = rec["identified"] and _covers(rec, truth) and (rec["ci_low"] > 0) == detected
        return ok, f"{_ci_text(rec)} against {rec['reference']}; truth {truth:+.3f}"
    return check


def _slope_rec(doc: dict[str, Any], judge: str) -> dict[str, Any]:
    return next(r for r in (doc.get("length") or {}).get("slopes") or []
                if r.get("judge") == judge and r.get("variant") is None and r.get("baseline") is None)


def _slope_check(judge: str, detected: bool) -> Callable[[dict[str, Any]], tuple[bool, str]]:
    def check(doc: dict[str, Any]) -> tuple[bool, str]:
        rec = _slope_rec(doc, judge)
        truth = next(t["slope"] for t in _truth("judge_biases")["length"] if t["judge"] == judge)
        ok = rec["slope"] is not None and _covers(rec, truth) and (rec["ci_low"] > 0) == detected
        return ok, f"slope {_ci_text(rec, 'slope')} per unit of log length; truth {truth:+.3f}"
    return check


def _human_check(judge: str, est: str) -> Callable[[dict[str, Any]], tuple[bool, str]]:
    """``est`` ``ppi``: the prediction-powered mean covers the human truth in every variant;
    ``judge``: the judge-only mean misses it in every variant (a lenient judge, caught)."""
    def check(doc: dict[str, Any]) -> tuple[bool, str]:
        truth = {(t["variant"], t["judge"]): t["human_mean"] for t in _truth("judge_biases")["human"]}
        recs = [r for r in doc["human"]["records"] if r["judge"] == judge]
        hits = [_covers(r, truth[(r["variant"], judge)], f"{est}_ci_low", f"{est}_ci_high") for r in recs]
        ok = bool(recs) and (all(hits) if est == "ppi" else not any(hits))
        if not recs:
            return False, "no record"
        first = _ci_text(recs[0], f"{est}_mean", f"{est}_ci_low", f"{est}_ci_high", ".3f")
        return ok, (f"{sum(hits)} of {len(recs)} variants' {est} intervals cover the human mean; e.g. "
                    f"{recs[0]['variant']}: {first}, human {truth[(recs[0]['variant'], judge)]:.3f}")
    return check


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
    "judge_biases": [
        ("openai/judge's own-family preference covers its truth (0) and is not flagged",
         _self_pref_check("openai/judge", detected=False)),
        ("anthropic/judge's planted own-family preference (+0.5) is detected and covered",
         _self_pref_check("anthropic/judge", detected=True)),
        ("openai/judge's length slope covers its truth (0) and is not flagged", _slope_check("openai/judge", False)),
        ("anthropic/judge's planted length slope (0.8) is detected and covered", _slope_check("anthropic/judge", True)),
        ("the prediction-powered mean of the lenient anthropic/judge covers the human truth in every variant",
         _human_check("anthropic/judge", "ppi")),
        ("the judge-only mean of the lenient anthropic/judge misses the human truth in every variant",
         _human_check("anthropic/judge", "judge")),
    ],
    "crosswise": [
        ("self-preference under the crosswise design is reported not identifiable, with no number", lambda d: (
            d["self_preference"]["why"] == "crosswise" and not d["self_preference"]["identified"]
            and all(p["estimate"] is None for p in d["self_preference"]["pairs"]),
            f"why {d['self_preference']['why']}: {d['self_preference']['explanation'][:90]}")),
    ],
}


def run(seed: int | None = None, out: Any = None) -> tuple[int, list[dict[str, Any]]]:
    """Run every scenario and expectation; returns (failures, records) and prints one line each."""
    from workbench.common import config as config_mod
    from workbench.document import pipeline

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
    print(f"selftest passed: {total} of {total} expectations ({', '.join(EXPECTATIONS)})")
    return 0
