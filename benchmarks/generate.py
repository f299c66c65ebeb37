"""Seeded generator of realistic judge rows for the scale benchmark (issue 12).

One file of ``N`` physical lines in the workbench's default format, ~300 bytes a row::

    {"scenario": "scn_000017", "variant": "rag_rerank", "trial": 2, "judge": "gpt-4o-2024-08-06",
     "correctness": 7, "completeness": 6, "depth": 8, "citations": 5, "honesty": 9, "overall": 7,
     "fabrication_flags": ["wrong_article"], "verdict": "...", "latency_ms": 4312}

Design (distinct keys): ``ceil(B / 60)`` scenarios x 10 variants x 3 trials x 2 judges, where
``B = N - R`` base rows and ``R = round(0.0005 N)`` appended re-runs; rows are written
scenario by scenario (the last scenario may be incomplete when 60 does not divide ``B``).
Scores are realistic rather than uniform: a scenario difficulty, a variant effect, a judge
offset and noise, clipped to the 1-10 rubric; the sub-scores are correlated with the headline.

Planted hazards, exact counts of the ``N`` physical lines (disjoint sets of base rows, drawn
with a seeded permutation), so the ledger of a generated file is known in advance:

=====================  ========  ===============================  ======================
hazard                 rate      what the line is                 ledger bucket
=====================  ========  ===============================  ======================
truncated line         0.1%      a row cut mid-object             ``malformed``
``{}``                 3%        an empty object (no key fields)  ``malformed``
no ``overall``         18%       headline key absent, sub-scores  ``partial``
string score           0.2%      ``"overall": "8"`` / ``"8/10"``  ``non_numeric``
out of range           0.1%      ``"overall": 0`` / ``11`` / 85   ``out_of_range``
appended re-run        0.05%     copy of an earlier valid row     half ``duplicate``,
                                 (half identical, half with a     half ``conflict`` (both
                                 different ``overall``)           sides: 2 lines each)
=====================  ========  ===============================  ======================

The rows without ``overall`` are not missing at random: one judge drops the headline more
often than the other (about 22% against 14%), as judge failures do in practice.

The file and a ``.meta.json`` beside it (planted counts, the expected ledger, design) are
cached in ``benchmarks/.cache/`` (git ignores it). ``clean=True`` writes the same rows with
the truncated lines written whole (the copy pandas and polars can parse).

Usage::

    .venv/bin/python benchmarks/generate.py --rows 1000000          # prints the path
    .venv/bin/python benchmarks/generate.py --rows 60000 --clean
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

CACHE = Path(__file__).resolve().parent / ".cache"
SEED = 20261201

VARIANTS = ("baseline", "rag", "rag_rerank", "cot", "cot_rag", "fewshot", "fewshot_rag", "tools",
            "tools_rag", "long_context")
VARIANT_EFFECT = (0.0, 0.35, 0.5, 0.15, 0.45, 0.1, 0.4, -0.1, 0.3, -0.25)
JUDGES = ("gpt-4o-2024-08-06", "claude-3-5-sonnet-20241022")
JUDGE_OFFSET = (0.0, -0.3)
TRIALS = 3
PER_SCENARIO = len(VARIANTS) * TRIALS * len(JUDGES)  # 60
SUBS = ("correctness", "completeness", "depth", "citations", "honesty")
FLAGS = ("invented_citation", "wrong_article", "made_up_number", "fake_standard")
VERDICTS = (
    "Solid gap analysis; cites the right controls and their evidence.",
    "Misses two Annex A controls and invents a clause number.",
    "Adequate but shallow; no evidence for the risk ratings given.",
    "Refused to classify; asks for more context about the scope.",
    "Correct on the law, but the remediation plan has no owner.",
)

# planted rates (fractions of the N physical lines)
RATES = {
    "truncated": 0.001,
    "empty_object": 0.03,
    "no_overall": 0.18,
    "string_score": 0.002,
    "out_of_range": 0.001,
    "rerun": 0.0005,
}
NO_OVERALL_BY_JUDGE = (0.22, 0.14)  # relative weights; the total is exactly RATES["no_overall"]


def _count(rate: float, n: int) -> int:
    return int(round(rate * n))


def plan_counts(rows: int) -> dict[str, int]:
    """Exact planted counts for a file of ``rows`` physical lines."""
    c = {k: _count(v, rows) for k, v in RATES.items()}
    c["rerun_identical"] = c["rerun"] // 2 + c["rerun"] % 2
    c["rerun_conflicting"] = c["rerun"] // 2
    c["base"] = rows - c["rerun"]
    return c


def expected_ledger(c: dict[str, int]) -> dict[str, int]:
    """The ledger the workbench must report for a generated file (default config, no plan)."""
    damaged = c["truncated"] + c["empty_object"] + c["no_overall"] + c["string_score"] + c["out_of_range"]
    return {
        "lines": c["base"] + c["rerun"],
        "blank": 0,
        # an original with a conflicting re-run leaves "valid": both sides are conflicts
        "valid": c["base"] - damaged - c["rerun_conflicting"],
        "partial": c["no_overall"],
        "empty": 0,
        "non_numeric": c["string_score"],
        "out_of_range": c["out_of_range"],
        "invalid_number": 0,
        "malformed": c["truncated"] + c["empty_object"],
        "duplicate": c["rerun_identical"],
        "conflict": 2 * c["rerun_conflicting"],
    }


def cache_path(rows: int, seed: int = SEED, clean: bool = False) -> Path:
    return CACHE / f"judge_rows_{rows}_{seed}{'_clean' if clean else ''}.jsonl"


def _scores(rng: np.random.Generator, b: int, n_scen: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    k = np.arange(b)
    scen = k // PER_SCENARIO
    within = k % PER_SCENARIO
    var = within // (TRIALS * len(JUDGES))
    judge = within % len(JUDGES)
    difficulty = rng.normal(0.0, 1.2, n_scen)
    latent = (6.2 + difficulty[scen] + np.asarray(VARIANT_EFFECT)[var] + np.asarray(JUDGE_OFFSET)[judge]
              + rng.normal(0.0, 1.0, b))
    overall = np.clip(np.rint(latent), 1, 10).astype(np.int64)
    subs = np.clip(np.rint(latent[:, None] + rng.normal(0.0, 1.1, (b, len(SUBS)))), 1, 10).astype(np.int64)
    return overall, subs, judge


def generate(rows: int, seed: int = SEED, clean: bool = False, path: Path | None = None) -> Path:
    """Write the file (if not cached) and its ``.meta.json``; return its path."""
    if rows < 120:
        raise ValueError("rows must be >= 120 (two scenarios)")
    path = path or cache_path(rows, seed, clean)
    meta_path = path.with_suffix(".meta.json")
    if path.exists() and meta_path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.parent == CACHE:
        (CACHE / ".gitignore").write_text("*\n", encoding="utf-8")
    t0 = time.perf_counter()
    c = plan_counts(rows)
    b = c["base"]
    n_scen = math.ceil(b / PER_SCENARIO)
    rng = np.random.default_rng(seed)
    overall, subs, judge = _scores(rng, b, n_scen)

    # disjoint hazard sets, exact sizes, from one permutation of the base rows
    perm = rng.permutation(b)
    kind = np.zeros(b, dtype=np.int8)  # 0 clean, 1 truncated, 2 {}, 3 no overall, 4 string, 5 out of range
    pos = 0
    for code, name in ((1, "truncated"), (2, "empty_object")):
        kind[perm[pos:pos + c[name]]] = code
        pos += c[name]
    rest = perm[pos:]
    # rows without overall: exact total, split between judges by NO_OVERALL_BY_JUDGE
    w = np.asarray(NO_OVERALL_BY_JUDGE)
    n_j0 = int(round(c["no_overall"] * w[0] / w.sum()))
    taken = []
    for j, need in ((0, n_j0), (1, c["no_overall"] - n_j0)):
        cand = rest[judge[rest] == j][:need]
        if len(cand) < need:
            raise ValueError("file too small for the planted rates")
        taken.append(cand)
    no_ov = np.concatenate(taken)
    kind[no_ov] = 3
    rest = rest[kind[rest] == 0]
    pos = 0
    for code, name in ((4, "string_score"), (5, "out_of_range")):
        kind[rest[pos:pos + c[name]]] = code
        pos += c[name]
    clean_rows = rest[pos:]
    reruns = np.sort(clean_rows[rng.permutation(len(clean_rows))[:c["rerun"]]])
    conflicting = np.zeros(b, dtype=bool)
    conflicting[reruns[rng.permutation(len(reruns))[:c["rerun_conflicting"]]]] = True

    flag_draw = rng.random((b, len(FLAGS))) < 0.06
    verdict = rng.integers(0, len(VERDICTS), b)
    latency = rng.integers(300, 9000, b)
    cut = rng.random(b)
    str_form = rng.integers(0, 2, b)
    oor_val = rng.choice(np.array([0, 11, 85]), b)

    flag_text = {}
    for mask in range(1 << len(FLAGS)):
        flag_text[mask] = json.dumps([f for i, f in enumerate(FLAGS) if mask >> i & 1])
    flag_mask = (flag_draw * (1 << np.arange(len(FLAGS)))).sum(axis=1)
    verdict_text = [json.dumps(v) for v in VERDICTS]
    judge_text = [json.dumps(j) for j in JUDGES]
    variant_text = [json.dumps(v) for v in VARIANTS]
    ov_l, subs_l, lat_l = overall.tolist(), subs.tolist(), latency.tolist()
    kind_l, fm_l, vd_l = kind.tolist(), flag_mask.tolist(), verdict.tolist()

    def line(i: int, headline: str | None) -> str:
        s = i // PER_SCENARIO
        w_ = i % PER_SCENARIO
        v, t, j = w_ // (TRIALS * len(JUDGES)), (w_ // len(JUDGES)) % TRIALS + 1, w_ % len(JUDGES)
        sc = subs_l[i]
        ov = "" if headline is None else f', "overall": {headline}'
        return (f'{{"scenario": "scn_{s:06d}", "variant": {variant_text[v]}, "trial": {t}, '
                f'"judge": {judge_text[j]}, "correctness": {sc[0]}, "completeness": {sc[1]}, '
                f'"depth": {sc[2]}, "citations": {sc[3]}, "honesty": {sc[4]}{ov}, '
                f'"fabrication_flags": {flag_text[fm_l[i]]}, "verdict": {verdict_text[vd_l[i]]}, '
                f'"latency_ms": {lat_l[i]}}}')

    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        buf: list[str] = []
        for i in range(b):
            k = kind_l[i]
            if k == 2:
                buf.append("{}")
            elif k == 3:
                buf.append(line(i, None))
            elif k == 4:
                buf.append(line(i, f'"{ov_l[i]}"' if str_form[i] else f'"{ov_l[i]}/10"'))
            elif k == 5:
                buf.append(line(i, str(int(oor_val[i]))))
            else:
                text = line(i, str(ov_l[i]))
                if k == 1 and not clean:
                    # cut inside the object: never a complete JSON value
                    text = text[: 5 + int(cut[i] * (len(text) - 8))]
                buf.append(text)
            if len(buf) >= 20000:
                fh.write("\n".join(buf) + "\n")
                buf.clear()
        # appended re-runs, in file order of their originals
        for i in reruns.tolist():
            ov = ov_l[i]
            if conflicting[i]:
                ov = ov + 1 if ov < 10 else ov - 1
            buf.append(line(i, str(ov)))
        if buf:
            fh.write("\n".join(buf) + "\n")
    os.replace(tmp, path)
    size = path.stat().st_size
    meta: dict[str, Any] = {
        "rows": rows, "seed": seed, "clean": clean, "bytes": size, "bytes_per_row": round(size / rows, 1),
        "design": {"scenarios": n_scen, "variants": len(VARIANTS), "trials": TRIALS, "judges": len(JUDGES)},
        "planted": c, "rates": RATES, "expected_ledger": expected_ledger(c),
        "generated_seconds": round(time.perf_counter() - t0, 1),
    }
    if clean:
        # truncated lines are written whole: they are valid rows in the clean copy
        led = meta["expected_ledger"]
        led["valid"] += c["truncated"]
        led["malformed"] -= c["truncated"]
    meta_path.write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def read_meta(path: Path) -> dict[str, Any]:
    return json.loads(path.with_suffix(".meta.json").read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="physical lines (default 1,000,000)")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--clean", action="store_true", help="write the truncated lines whole")
    ap.add_argument("--out", type=Path, help="write here instead of benchmarks/.cache/")
    args = ap.parse_args(argv)
    path = generate(args.rows, args.seed, args.clean, args.out)
    meta = read_meta(path)
    print(path)
    print(json.dumps({k: meta[k] for k in ("bytes", "bytes_per_row", "design", "expected_ledger")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
