"""Seeded synthetic example: a compliance-writing ablation with the silent zero planted in it.

``python -m workbench.sim.example OUTDIR`` writes the embedded example (the repository keeps it in
``data/example/``): ``judge_rows.jsonl``, ``plan.csv``, ``config.yaml``,
``published_scorecard.csv``, ``claims.yaml`` and a ``README.md`` that states every planted
pathology with its exact count. The same seed gives byte-identical files.

The rows imitate the post-mortem in ``shared/seeds/002``: nine GRC writing scenarios, six
generation variants, up to three trials, two LLM judges scoring a 1-10 rubric. The true effects
are small (scenario random effects with sd 0.6; variant means on valid rows within half a point;
GLM about 0.1 more lenient than Claude on the same document). The pathologies are the point:
the Claude judge drops ``overall`` about four times as often as GLM, at a rate that depends on
the variant; some rows are empty objects; some planned judgments never produced a row; and a
handful of lines are damaged in the ways real logs are. The published scorecard and the claims
are computed from these rows with the zero-filling reducer the post-mortem describes, so they
are wrong in exactly its way.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_SEED = 20260719

SCENARIOS: tuple[str, ...] = (
    "soc2_gap_analysis",
    "iso42001_ai_policy",
    "eu_ai_act_classification",
    "gdpr_art30_ropa",
    "internal_audit_report",
    "policy_pack",
    "workspace_policy",
    "twelve_doc_run",
    "ambiguous_brief",
)
FRAMEWORK: tuple[str, ...] = SCENARIOS[:3]
VARIANTS: tuple[str, ...] = (
    "stepwise_brief",
    "single_pass_brief",
    "single_pass_reflect",
    "freeform_task",
    "freeform_reflect",
    "regen_brief",
)
JUDGES: tuple[str, ...] = ("claude-opus-4.8", "glm-5.2")
CLAUDE, GLM = JUDGES
SUBSCORES: tuple[str, ...] = ("correctness", "completeness", "depth", "citations", "honesty")
RUBRIC_MIN, RUBRIC_MAX = 1, 10

# The thin variant, like the post-mortem's partially rendered regenerated-brief variant: six
# scenarios (all three framework ones) and two trials, so its framework cell sits at the gate.
THIN_VARIANT = "regen_brief"
THIN_SCENARIOS: tuple[str, ...] = FRAMEWORK + ("gdpr_art30_ropa", "internal_audit_report",
                                               "policy_pack")
THIN_TRIALS = 2

# --- true effects -------------------------------------------------------------------------
# Latent scale: a judge's score is the latent rounded and clipped to [1, 10]. The ceiling, the
# low tail (botched renders, harsh readings) and the fabrication penalty bring the realized
# valid mean down to about 8.3, clustered at 8-9 as in the post-mortem.
MU = 9.02
SCENARIO_SD = 0.6
DOC_SD = 0.25
BOTCH_P = 0.04  # a render that went badly wrong (truncated, off-brief): both judges see it
BOTCH_DROP = (2.0, 3.5)
HARSH_P = 0.05  # one judge reads one document very harshly: the rest of the low tail
HARSH_DROP = (2.0, 4.0)
JUDGE_OFFSET = {CLAUDE: 0.0, GLM: 0.08}
JUDGE_DOC_SD = 0.3  # a judge's overall impression of one document, shared by its sub-scores
FIELD_SD = 0.6
OVERALL_SD = 0.35
# Latent variant offsets, set so that under the default seed the realized valid-row means of
# `overall` land within about 0.4 of each other and single_pass_brief vs stepwise_brief is a
# no clear difference (stepwise's offset also pays for the overall penalty of its frequent fabrications).
VARIANT_EFFECT = {
    "stepwise_brief": 0.47,
    "single_pass_brief": -0.09,
    "single_pass_reflect": -0.35,
    "freeform_task": 0.38,
    "freeform_reflect": -0.46,
    "regen_brief": 0.07,
}
# Stepwise rendering is thorough but invents sources; free writing from the task is honest.
FIELD_OFFSET: dict[str, dict[str, float]] = {
    "stepwise_brief": {"completeness": 0.5, "depth": 0.4, "honesty": -1.0},
    "single_pass_brief": {"honesty": 0.1},
    "single_pass_reflect": {"honesty": 0.2},
    "freeform_task": {"completeness": -0.3, "honesty": 2.2},
    "freeform_reflect": {"honesty": 0.6},
    "regen_brief": {"honesty": 0.0},
}
FABRICATION_P = {
    "stepwise_brief": 0.85,
    "single_pass_brief": 0.20,
    "single_pass_reflect": 0.15,
    "freeform_task": 0.03,
    "freeform_reflect": 0.08,
    "regen_brief": 0.25,
}
FLAG_DETECT_P = 0.9
FLAG_FALSE_P = 0.03
FLAG_HONESTY_PENALTY = 2.6
FLAG_CITATIONS_PENALTY = 0.8
FLAG_OVERALL_PENALTY = 0.3

# --- pathologies ----------------------------------------------------------------------------
# Share of a (variant, judge) cell's rows whose `overall` key the judge dropped (all other
# fields kept): about a quarter of Claude's rows and half of its stepwise_brief rows; a few
# percent of GLM's, whose other failures are the empty objects.
DROP_RATE = {
    CLAUDE: {"stepwise_brief": 0.50, "single_pass_brief": 0.10, "single_pass_reflect": 0.30,
             "freeform_task": 0.10, "freeform_reflect": 0.20, "regen_brief": 0.20},
    GLM: {"stepwise_brief": 0.08, "single_pass_brief": 0.04, "single_pass_reflect": 0.04,
          "freeform_task": 0.0, "freeform_reflect": 0.0, "regen_brief": 0.0},
}
# Claude's drops lean toward the long framework-heavy documents (its longer critiques are the
# ones that lose a key): within a cell a framework row is this many times as likely to lose it.
FRAMEWORK_DROP_WEIGHT = {CLAUDE: 2.5, GLM: 1.0}
N_EMPTY = 8  # GLM rows that are a JSON object with the key fields only
N_MISSING_DOCS = 2  # renders that failed: both judgments absent
N_MISSING_SINGLE = 11  # single judge calls that left no row
CONFLICT_VARIANT = "freeform_reflect"  # kept out of every claim, so no claim hinges on it

SCRIPT_VERDICT = ("Renders raw markup <script>alert(1)</script> in the appendix; "
                  "strip before release.")
NON_ASCII_VERDICT = "Débil en citas — revisar antes de enviar al cliente."

DOC_NAMES = {
    "soc2_gap_analysis": "SOC 2 gap analysis",
    "iso42001_ai_policy": "ISO/IEC 42001 AI policy",
    "eu_ai_act_classification": "EU AI Act classification",
    "gdpr_art30_ropa": "Art. 30 record of processing",
    "internal_audit_report": "internal audit report",
    "policy_pack": "policy pack",
    "workspace_policy": "workspace policy",
    "twelve_doc_run": "twelve-document run",
    "ambiguous_brief": "response to the ambiguous brief",
}
GAPS = ("evidence mapping", "control owners", "retention periods", "risk ratings",
        "scope statement", "review cadence", "exception handling", "vendor coverage")
FLAG_BANK = (
    "cites ISO/IEC 42001 clause 11.3 (does not exist)",
    "invented EDPB guideline 07/2025",
    "SOC 2 criterion CC10.4 does not exist",
    "quotes an EU AI Act article that is not in the regulation",
    "audit evidence reference with no source",
    "retention period attributed to GDPR without basis",
    "unsupported breach-cost statistic",
    "fictional DPA approval date",
    "named a certification body that was not engaged",
    "cites an internal policy not in the workspace",
)

KEY_NAMES = ("scenario", "variant", "trial", "judge")
LEDGER_BUCKETS: tuple[str, ...] = ("blank", "valid", "partial", "empty", "non_numeric",
                                   "out_of_range", "invalid_number", "malformed", "duplicate",
                                   "conflict")
Key = tuple[str, str, int, str]


@dataclass
class _Row:
    key: Key
    scores: dict[str, int]
    overall: Any  # int, or the planted bad value; absent when kind is partial/empty
    flags: list[str]
    verdict: str
    kind: str = "valid"  # valid | partial | empty | non_numeric | out_of_range | invalid_number

    def to_json(self) -> str:
        obj: dict[str, Any] = dict(zip(KEY_NAMES, self.key, strict=True))
        if self.kind != "empty":
            obj.update(self.scores)
            if self.kind != "partial":
                obj["overall"] = self.overall
            obj["fabrication_flags"] = self.flags
            obj["verdict"] = self.verdict
        # allow_nan writes the float NaN as the bare token NaN: the invalid_number line.
        return json.dumps(obj, ensure_ascii=False, allow_nan=True)


@dataclass
class Example:
    """The generated files (name -> text) and the planted counts they contain."""

    files: dict[str, str]
    planted: dict[str, int]
    published: dict[str, dict[str, Fraction]] = field(default_factory=dict)
    claims: list[dict[str, Any]] = field(default_factory=list)
    conflict_key: Key | None = None


def plan_keys() -> list[Key]:
    """Return the full design in harness order: scenario, variant, trial, judge."""
    keys: list[Key] = []
    for s in SCENARIOS:
        for v in VARIANTS:
            if v == THIN_VARIANT and s not in THIN_SCENARIOS:
                continue
            trials = THIN_TRIALS if v == THIN_VARIANT else 3
            for t in range(1, trials + 1):
                for j in JUDGES:
                    keys.append((s, v, t, j))
    return keys


def _clip_round(x: float) -> int:
    """Round half up and clip to the rubric: how a latent becomes an integer score."""
    return int(min(RUBRIC_MAX, max(RUBRIC_MIN, np.floor(x + 0.5))))


def _verdict(rng: np.random.Generator, scenario: str, overall_latent: float,
             flags: list[str]) -> str:
    doc = DOC_NAMES[scenario]
    gap = GAPS[int(rng.integers(len(GAPS)))]
    if flags:
        return f"{doc[0].upper()}{doc[1:]} reads well but cites sources that do not exist."
    if overall_latent >= 8.5:
        return f"Strong {doc}; only minor gaps in {gap}."
    if overall_latent >= 7.0:
        return f"Usable {doc}; {gap} needs work before sign-off."
    if overall_latent >= 5.0:
        return f"Weak {doc}: thin on {gap} and generic throughout."
    return f"Not fit for audit: the {doc} misses the brief."


def _judge_rows(rng: np.random.Generator, keys: list[Key]) -> dict[Key, _Row]:
    """Score every planned judgment (absent ones are removed later).

    Every document and judgment takes the same number of draws whatever the parameters, so
    changing a probability or an effect does not reshuffle the rest of the stream.
    """
    scen_eff = dict(zip(SCENARIOS, rng.normal(0.0, SCENARIO_SD, len(SCENARIOS)), strict=True))
    rows: dict[Key, _Row] = {}
    docs = sorted({k[:3] for k in keys}, key=lambda d: keys.index((*d, CLAUDE)))
    for s, v, t in docs:
        q = MU + scen_eff[s] + VARIANT_EFFECT[v] + rng.normal(0.0, DOC_SD)
        botch, botch_size = rng.random(), rng.uniform(*BOTCH_DROP)
        q -= botch_size if botch < BOTCH_P else 0.0
        fabricated = bool(rng.random() < FABRICATION_P[v])
        for j in JUDGES:
            base = q + JUDGE_OFFSET[j] + rng.normal(0.0, JUDGE_DOC_SD)
            harsh, harsh_size = rng.random(), rng.uniform(*HARSH_DROP)
            base -= harsh_size if harsh < HARSH_P else 0.0
            flagged = rng.random() < (FLAG_DETECT_P if fabricated else FLAG_FALSE_P)
            n_flags = int(rng.integers(1, 4))
            picks = rng.choice(len(FLAG_BANK), size=3, replace=False)[:n_flags]
            flags = [FLAG_BANK[int(i)] for i in sorted(picks)] if flagged else []
            noise = rng.normal(0.0, FIELD_SD, len(SUBSCORES))
            scores: dict[str, int] = {}
            for f, e in zip(SUBSCORES, noise, strict=True):
                x = base + FIELD_OFFSET[v].get(f, 0.0) + e
                if flagged and f == "honesty":
                    x -= FLAG_HONESTY_PENALTY
                if flagged and f == "citations":
                    x -= FLAG_CITATIONS_PENALTY
                scores[f] = _clip_round(x)
            # The judge's holistic score tracks the document, not the arithmetic mean of its
            # sub-scores, so a fabrication costs honesty far more than it costs overall.
            overall_latent = base + rng.normal(0.0, OVERALL_SD)
            overall_latent -= FLAG_OVERALL_PENALTY if flagged else 0.0
            overall = _clip_round(overall_latent)
            verdict = _verdict(rng, s, overall_latent, flags)
            rows[(s, v, t, j)] = _Row((s, v, t, j), scores, overall, flags, verdict)
    return rows


def _pick(rng: np.random.Generator, pool: list[Key], n: int,
          weights: np.ndarray | None = None) -> list[Key]:
    p = None if weights is None else weights / weights.sum()
    idx = rng.choice(len(pool), size=n, replace=False, p=p)
    return [pool[int(i)] for i in sorted(idx)]


def _silent_zero_reducer(rows: list[_Row], fld: str) -> Fraction:
    """Return the mean of ``fld`` over ``rows`` with every unusable value counted as 0.

    This reproduces the post-mortem's bug ON PURPOSE: its TypeScript reducer coerced each value
    with ``Number(...)`` and replaced anything falsy by zero, so a row without a score (absent
    key, empty object, ``"8/10"``, ``NaN``) entered the mean as a 0. Here a value counts only
    if it is a number in [1, 10]; everything else is 0. Never use this for analysis: it exists
    so the published card and the claims are wrong in exactly the documented way.
    """
    total = Fraction(0)
    for r in rows:
        if r.kind == "empty":
            value = None
        elif fld == "overall":
            value = None if r.kind == "partial" else r.overall
        else:
            value = r.scores[fld]
        ok = (isinstance(value, int | float) and not isinstance(value, bool)
              and RUBRIC_MIN <= value <= RUBRIC_MAX)  # NaN fails both comparisons
        total += Fraction(value) if ok else 0
    return total / len(rows)


def _round2(x: Fraction) -> Fraction:
    """Round half up to two decimals, exactly (the card is printed this way)."""
    return Fraction(int((x * 100 + Fraction(1, 2)) // 1), 100)


def _fmt2(x: Fraction) -> str:
    """Print a value already rounded to cents as ``d.dd``."""
    cents = int(x * 100)
    if x * 100 != cents:
        raise ValueError(f"{x} is not a whole number of cents")
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    return f"{sign}{cents // 100}.{cents % 100:02d}"


def _valid_mean(rows: list[_Row], fld: str) -> tuple[float | None, int]:
    vals: list[int] = []
    for r in rows:
        if r.kind == "empty":
            continue
        if fld == "overall":
            if r.kind == "valid":
                vals.append(int(r.overall))
        else:
            vals.append(r.scores[fld])
    return (float(np.mean(vals)) if vals else None), len(vals)


def build(seed: int = DEFAULT_SEED) -> Example:
    """Generate the example in memory; :func:`generate` writes it."""
    rng = np.random.default_rng(seed)
    keys = plan_keys()
    rows = _judge_rows(rng, keys)

    # 1. Planned judgments with no row: whole failed renders, then single judge calls.
    docs = sorted({k[:3] for k in keys}, key=lambda d: keys.index((*d, CLAUDE)))
    failed_docs = [docs[int(i)] for i in sorted(rng.choice(len(docs), N_MISSING_DOCS,
                                                            replace=False))]
    missing = {(*d, j) for d in failed_docs for j in JUDGES}
    pool = [k for k in keys if k not in missing]
    missing |= set(_pick(rng, pool, N_MISSING_SINGLE))
    present = [k for k in keys if k not in missing]

    # 2. Empty objects (GLM, as in the post-mortem), then dropped overalls per cell.
    for k in _pick(rng, [k for k in present if k[3] == GLM], N_EMPTY):
        rows[k].kind = "empty"
    for j in JUDGES:
        for v in VARIANTS:
            cell = [k for k in present if k[1] == v and k[3] == j and rows[k].kind == "valid"]
            n_drop = int(np.floor(DROP_RATE[j][v] * len(cell) + 0.5))
            w = np.array([FRAMEWORK_DROP_WEIGHT[j] if k[0] in FRAMEWORK else 1.0 for k in cell])
            for k in _pick(rng, cell, n_drop, w):
                rows[k].kind = "partial"

    # 3. One bad value of each kind, on otherwise complete rows.
    complete = [k for k in present if rows[k].kind == "valid"]
    bad_keys = _pick(rng, [k for k in complete if k[3] == GLM], 2)
    bad_keys.insert(1, _pick(rng, [k for k in complete if k[3] == CLAUDE], 1)[0])
    for k, (kind, value) in zip(bad_keys, (("non_numeric", "8/10"), ("out_of_range", 0),
                                           ("invalid_number", float("nan"))), strict=True):
        rows[k].kind, rows[k].overall = kind, value

    # 4. Rows to repeat (exact duplicate, conflicting re-judgment, truncated-then-retried) and
    #    the two rows carrying the escaping / UTF-8 verdicts.
    complete = [k for k in present if rows[k].kind == "valid"]
    dup_key, trunc_key = _pick(rng, [k for k in complete if k[1] != CONFLICT_VARIANT], 2)
    conflict_key = _pick(rng, [k for k in complete if k[1] == CONFLICT_VARIANT
                               and rows[k].overall <= 8], 1)[0]
    spare = [k for k in complete if k not in (dup_key, trunc_key, conflict_key)]
    script_key = _pick(rng, spare, 1)[0]
    weak_citations = [k for k in spare if k != script_key and rows[k].scores["citations"] <= 7]
    utf8_key = _pick(rng, weak_citations, 1)[0]
    rows[script_key].verdict = SCRIPT_VERDICT
    rows[utf8_key].verdict = NON_ASCII_VERDICT

    # 5. Lines in harness order, extras slotted in by position. Each line carries the ledger
    #    bucket it must land in, so the counts below are read off the lines actually written.
    order = {k: i for i, k in enumerate(keys)}
    lines: list[tuple[float, str, str]] = [
        (float(order[k]), "conflict" if k == conflict_key else rows[k].kind, rows[k].to_json())
        for k in present]
    lines.append((order[dup_key] + float(rng.integers(20, 120)) + 0.5, "duplicate",
                  rows[dup_key].to_json()))
    c = rows[conflict_key]
    rejudged = _Row(c.key, dict(c.scores), int(c.overall) + 2, list(c.flags),
                    "Re-judged: stronger than first scored; evidence mapping is adequate.")
    lines.append((order[conflict_key] + float(rng.integers(30, 150)) + 0.5, "conflict",
                  rejudged.to_json()))
    full = rows[trunc_key].to_json()  # the harness died mid-write, then the retry landed
    lines.append((order[trunc_key] - 0.5, "malformed_truncated_json",
                  full[: int(len(full) * 0.55)]))
    s, v, t, j = _pick(rng, sorted(missing, key=order.__getitem__), 1)[0]
    lines.append((float(order[(s, v, t, j)]), "malformed_not_json",
                  f"ERROR judge call failed after 3 retries: scenario={s} variant={v} "
                  f"trial={t} judge={j} status=504"))
    lines.append((float(rng.integers(len(keys))) + 0.25, "malformed_json_array",
                  json.dumps(["judge_error", "rate_limited", 429])))
    for pos in sorted(rng.choice(len(keys), 2, replace=False)):
        lines.append((float(pos) + 0.75, "blank", ""))
    lines.sort(key=lambda p: p[0])
    jsonl = "".join(text + "\n" for _, _, text in lines)

    # 6. The published card, with the bug, over every non-duplicate parsed row.
    card_rows = [rows[k] for k in present] + [rejudged]
    published: dict[str, dict[str, Fraction]] = {}
    for v in VARIANTS:
        vr = [r for r in card_rows if r.key[1] == v]
        published[v] = {f: _round2(_silent_zero_reducer(vr, f)) for f in ("overall", "honesty")}
    card = "variant,overall,honesty\n" + "".join(
        f"{v},{_fmt2(published[v]['overall'])},{_fmt2(published[v]['honesty'])}\n"
        for v in VARIANTS)

    # 7. Claims as the report made them: differences of zero-filled, printed means.
    clean = [rows[k] for k in present if k != conflict_key]  # conflicting key held out
    claim_specs = [
        ("Single-pass rendering beats stepwise rendering", "overall",
         "single_pass_brief", "stepwise_brief", None),
        ("Free writing beats brief+reflection on framework tasks", "overall",
         "freeform_task", "single_pass_reflect", "framework"),
        ("Free writing is more honest than stepwise rendering", "honesty",
         "freeform_task", "stepwise_brief", None),
    ]
    claims: list[dict[str, Any]] = []
    for name, fld, a, b, subset in claim_specs:
        def cell(variant: str, rs: list[_Row], subset: str | None = subset) -> list[_Row]:
            return [r for r in rs if r.key[1] == variant
                    and (subset is None or r.key[0] in FRAMEWORK)]
        if subset is None:
            za, zb = published[a][fld], published[b][fld]
        else:
            za = _round2(_silent_zero_reducer(cell(a, card_rows), fld))
            zb = _round2(_silent_zero_reducer(cell(b, card_rows), fld))
        (ma, na), (mb, nb) = _valid_mean(cell(a, clean), fld), _valid_mean(cell(b, clean), fld)
        claims.append({"name": name, "field": fld, "a": a, "b": b, "subset": subset,
                       "claimed": za - zb, "zero_a": za, "zero_b": zb,
                       "valid_a": ma, "valid_b": mb, "n_a": na, "n_b": nb})

    # 8. Counts, from the lines actually written.
    tags = Counter(tag for _, tag, _ in lines)
    partial_by_judge = Counter(k[3] for k in present if rows[k].kind == "partial")
    planted = {
        "lines": len(lines),
        # ledger buckets: every physical line lands in exactly one of these
        "blank": tags["blank"],
        "valid": tags["valid"],
        "partial": tags["partial"],
        "empty": tags["empty"],
        "non_numeric": tags["non_numeric"],
        "out_of_range": tags["out_of_range"],
        "invalid_number": tags["invalid_number"],
        "malformed": sum(n for t, n in tags.items() if t.startswith("malformed_")),
        "duplicate": tags["duplicate"],
        "conflict": tags["conflict"],
        # planned judgments with no line at all
        "missing_planned": len(missing),
        # detail
        "planned": len(keys),
        "malformed_truncated_json": tags["malformed_truncated_json"],
        "malformed_not_json": tags["malformed_not_json"],
        "malformed_json_array": tags["malformed_json_array"],
        "conflicting_keys": 1,
        "judgments_claude": sum(1 for k in present if k[3] == CLAUDE),
        "judgments_glm": sum(1 for k in present if k[3] == GLM),
        "partial_claude": partial_by_judge[CLAUDE],
        "partial_glm": partial_by_judge[GLM],
        "empty_glm": sum(1 for k in present if k[3] == GLM and rows[k].kind == "empty"),
    }
    if sum(planted[b] for b in LEDGER_BUCKETS) != planted["lines"]:
        raise RuntimeError("example generator: ledger buckets do not add up to the lines")
    files = {
        "judge_rows.jsonl": jsonl,
        "plan.csv": "scenario,variant,trial,judge\n" + "".join(
            f"{s},{v},{t},{j}\n" for s, v, t, j in keys),
        "config.yaml": CONFIG_YAML,
        "published_scorecard.csv": card,
        "claims.yaml": _claims_yaml(claims),
    }
    ex = Example(files=files, planted=planted, published=published, claims=claims,
                 conflict_key=conflict_key)
    ex.files["README.md"] = _readme(ex, rows, present, seed)
    return ex


CONFIG_YAML = """\
# Config for the embedded example (data/example/judge_rows.jsonl). The rows are in the default
# format, so keys, scores and flags need no mapping; this only names the framework-heavy subset
# the published report quoted and the preregistered gate. See docs/config.md.
subsets:
  framework: {scenario: [soc2_gap_analysis, iso42001_ai_policy, eu_ai_act_classification]}
min_valid_n: 10
min_clusters: 3
bootstrap: {resamples: 10000, seed: 20260819}
"""


def _claims_yaml(claims: list[dict[str, Any]]) -> str:
    out = [
        "# Headline claims as the report printed them. Each `claimed` is a - b of the printed,",
        "# zero-filled means (published_scorecard.csv, or the same reducer on the subset).",
    ]
    for c in claims:
        out.append(f"- name: {json.dumps(c['name'])}")
        out.append(f"  field: {c['field']}")
        out.append(f"  a: {c['a']}")
        out.append(f"  b: {c['b']}")
        if c["subset"]:
            out.append(f"  subset: {c['subset']}")
        out.append(f"  claimed: {_fmt2(c['claimed'])}")
    return "\n".join(out) + "\n"


def _readme(ex: Example, rows: dict[Key, _Row], present: list[Key], seed: int) -> str:
    p = ex.planted
    clean = [k for k in present if k != ex.conflict_key]
    cell_lines = []
    for v in VARIANTS:
        cells = []
        for j in JUDGES:
            ks = [k for k in present if k[1] == v and k[3] == j]
            cells.append(f"{sum(rows[k].kind in ('partial', 'empty') for k in ks)}/{len(ks)}")
        valid = [k for k in clean if k[1] == v and rows[k].kind == "valid"]
        fw = [k for k in valid if k[0] in FRAMEWORK]
        cell_lines.append(f"| `{v}` | {cells[0]} | {cells[1]} | {len(valid)} | {len(fw)} "
                          f"({len({k[0] for k in fw})}) |")
    ledger = " | ".join(f"{b} {p[b]}" for b in LEDGER_BUCKETS)
    card = "\n".join(
        f"| `{v}` | {_fmt2(ex.published[v]['overall'])} | {_fmt2(ex.published[v]['honesty'])} |"
        for v in VARIANTS)
    claim_lines = []
    for c in ex.claims:
        where = f" ({c['subset']} subset)" if c["subset"] else ""
        claim_lines.append(
            f"| {c['name']}{where} | `{c['field']}` | {_fmt2(c['claimed'])} | "
            f"{c['valid_a'] - c['valid_b']:+.2f} ({c['n_a']} vs {c['n_b']} valid rows) |")
    pc = 100 * p["partial_claude"] / p["judgments_claude"]
    pg = 100 * (p["partial_glm"] + p["empty_glm"]) / p["judgments_glm"]
    return f"""\
# Embedded example: a synthetic compliance-writing ablation

Synthetic judge rows in the shape of the "silent zero" post-mortem: {len(SCENARIOS)} GRC
writing scenarios, {len(VARIANTS)} generation variants, up to 3 trials, two LLM judges
(`claude-opus-4.8`, `glm-5.2`) scoring a 1-10 rubric (`correctness`, `completeness`, `depth`,
`citations`, `honesty`, `overall`, plus `fabrication_flags` and a one-line `verdict`).
`{THIN_VARIANT}` is thinner ({len(THIN_SCENARIOS)} scenarios, {THIN_TRIALS} trials), so its
cells sit near the gate. Nothing here is real data.

| file | what it is |
|---|---|
| `judge_rows.jsonl` | the judge rows, one JSON object per line, with the pathologies below |
| `plan.csv` | the full design: {p['planned']} planned judgments, including those with no row |
| `config.yaml` | the `framework` subset and the preregistered gate (valid n >= 10, 3 scenarios) |
| `published_scorecard.csv` | the card as "published": zero-filled means, as printed |
| `claims.yaml` | three headline claims read off that card |

## Planted pathologies (exact counts)

{p['lines']} physical lines, each in exactly one ledger bucket: {ledger}; plus
{p['missing_planned']} planned judgments with no line (`missing_planned`).

- Malformed ({p['malformed']}): {p['malformed_truncated_json']} truncated JSON object (its retry \
follows intact), {p['malformed_not_json']} log line that is not JSON, \
{p['malformed_json_array']} JSON array.
- Blank ({p['blank']}).
- Repeats: {p['duplicate']} exact duplicate line (counted once); {p['conflicting_keys']} key \
with two rows that differ in `overall` ({p['conflict']} lines, both held out).
- Missing planned ({p['missing_planned']} of {p['planned']}): {N_MISSING_DOCS} failed renders \
with both judgments absent and {N_MISSING_SINGLE} single judge calls; one of them left the \
non-JSON error line.
- Empty objects ({p['empty']}): the four key fields only, all from `glm-5.2`.
- Partial rows ({p['partial']}): all five sub-scores, flags and verdict present, `overall` \
absent. Claude dropped it in {p['partial_claude']} of its {p['judgments_claude']} judgments \
({pc:.1f}%); GLM in {p['partial_glm']} of {p['judgments_glm']}, or \
{p['partial_glm'] + p['empty_glm']} ({pg:.1f}%) counting its empty objects.
- `overall` present but unusable: {p['non_numeric']} `"8/10"` (non_numeric), \
{p['out_of_range']} `0` (out_of_range), {p['invalid_number']} bare `NaN` (invalid_number).
- One verdict contains `<script>alert(1)</script>` and one is Spanish with non-ASCII characters
  (`{NON_ASCII_VERDICT}`), to test escaping and UTF-8.

Rows without `overall` (partial or empty) by judge, and valid `overall` judgments by variant
(conflicting key excluded), over all scenarios and in the `framework` subset (scenarios):

| variant | claude-opus-4.8 | glm-5.2 | valid n | valid n, framework |
|---|---|---|---|---|
{chr(10).join(cell_lines)}

## Published scorecard (zero-filled: the bug, reproduced on purpose)

Every parsed, non-duplicate row of a variant counted, a row without a valid value as 0, rounded
half up to 2 decimals (`_silent_zero_reducer` in `workbench/sim/example.py`).

| variant | overall | honesty |
|---|---|---|
{card}

## Claims

| claim | field | claimed (zero-filled) | on valid rows |
|---|---|---|---|
{chr(10).join(claim_lines)}

## Regenerate

    make example
    # or
    python -m workbench.sim.example data/example

The generator is seeded (`numpy.random.default_rng({seed})`) and writes byte-identical files;
`tests/test_example.py` checks that the committed files match and that these counts are true.
"""


def generate(outdir: str | Path, seed: int = DEFAULT_SEED) -> dict[str, int]:
    """Write the example files into ``outdir`` and return the planted counts."""
    ex = build(seed)
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    for name, text in ex.files.items():
        (out / name).write_bytes(text.encode("utf-8"))
    return dict(ex.planted)


def main(argv: list[str] | None = None) -> int:
    """``python -m workbench.sim.example OUTDIR``: write the example, print a one-line summary."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m workbench.sim.example OUTDIR", file=sys.stderr)
        return 2
    planted = generate(args[0])
    print(f"wrote {args[0]}: {planted['lines']} lines, "
          f"{planted['missing_planned']} planned judgments without a row")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
