"""The embedded example: committed files are reproducible and their planted counts are true.

The counts are re-derived here from the raw lines with plain ``json.loads``, independently of
the generator's own bookkeeping, so a README that drifts from the file fails a test.
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from pathlib import Path

import pytest
import yaml

from workbench.sim import example

DATA = Path(__file__).resolve().parents[1] / "data" / "example"
FILES = ("judge_rows.jsonl", "plan.csv", "config.yaml", "published_scorecard.csv",
         "claims.yaml", "README.md")
KEY = ("scenario", "variant", "trial", "judge")
SUBS = ("correctness", "completeness", "depth", "citations", "honesty")


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, int]:
    return example.generate(tmp_path_factory.mktemp("example"))


@pytest.fixture(scope="module")
def lines() -> list[str]:
    text = (DATA / "judge_rows.jsonl").read_bytes().decode("utf-8")
    assert text.endswith("\n")
    return text[:-1].split("\n")


def _is_score(x: object) -> bool:
    """A usable rubric value: a real number (not a bool, not NaN) in [1, 10]."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return False
    return not math.isnan(x) and 1 <= x <= 10


def _parsed(lines: list[str]) -> list[tuple[str, dict]]:
    out = []
    for line in lines:
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            out.append((line, obj))
    return out


def test_regenerating_gives_the_committed_files_byte_for_byte(tmp_path: Path) -> None:
    example.generate(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(FILES)
    for name in FILES:
        assert (tmp_path / name).read_bytes() == (DATA / name).read_bytes(), name


def test_same_seed_same_bytes_other_seed_other_rows() -> None:
    a, b = example.build(), example.build()
    assert a.files == b.files
    assert example.build(seed=1).files["judge_rows.jsonl"] != a.files["judge_rows.jsonl"]


def test_ledger_counts_match_a_hand_count(lines: list[str], planted: dict[str, int]) -> None:
    n = Counter()
    malformed_kinds = Counter()
    objs: list[tuple[str, dict]] = []
    for line in lines:
        if not line.strip():
            n["blank"] += 1
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            n["malformed"] += 1
            malformed_kinds["truncated" if line.startswith("{") else "not_json"] += 1
            continue
        if not isinstance(obj, dict):
            n["malformed"] += 1
            malformed_kinds["array" if isinstance(obj, list) else "other"] += 1
            continue
        objs.append((line, obj))

    by_key: dict[tuple, list[str]] = {}
    for line, obj in objs:
        by_key.setdefault(tuple(obj[k] for k in KEY), []).append(line)
    first: list[dict] = []
    conflicting_keys = 0
    for key_lines in by_key.values():
        if len(set(key_lines)) > 1:
            conflicting_keys += 1
            n["conflict"] += len(key_lines)
        else:
            n["duplicate"] += len(key_lines) - 1
            first.append(json.loads(key_lines[0]))

    partial_by_judge, empty_by_judge = Counter(), Counter()
    for obj in first:
        if "overall" in obj:
            x = obj["overall"]
            if isinstance(x, str):
                n["non_numeric"] += 1
            elif isinstance(x, float) and math.isnan(x):
                n["invalid_number"] += 1
            elif not _is_score(x):
                n["out_of_range"] += 1
            else:
                n["valid"] += 1
        elif all(s in obj for s in SUBS) and "fabrication_flags" in obj and "verdict" in obj:
            n["partial"] += 1
            partial_by_judge[obj["judge"]] += 1
        elif set(obj) == set(KEY):
            n["empty"] += 1
            empty_by_judge[obj["judge"]] += 1
        else:
            n["unclassified"] += 1

    with (DATA / "plan.csv").open(newline="") as fh:
        plan = {(r["scenario"], r["variant"], int(r["trial"]), r["judge"])
                for r in csv.DictReader(fh)}
    judged = set(by_key)

    assert n["unclassified"] == 0
    assert judged <= plan
    for bucket in example.LEDGER_BUCKETS:
        assert n[bucket] == planted[bucket], bucket
    assert sum(n[b] for b in example.LEDGER_BUCKETS) == len(lines) == planted["lines"]
    assert len(plan) == planted["planned"]
    assert len(plan - judged) == planted["missing_planned"]
    assert malformed_kinds == Counter(truncated=planted["malformed_truncated_json"],
                                      not_json=planted["malformed_not_json"],
                                      array=planted["malformed_json_array"])
    assert conflicting_keys == planted["conflicting_keys"]
    assert partial_by_judge["claude-opus-4.8"] == planted["partial_claude"]
    assert partial_by_judge["glm-5.2"] == planted["partial_glm"]
    assert empty_by_judge["glm-5.2"] == planted["empty_glm"] == planted["empty"]
    assert sum(k[3] == "claude-opus-4.8" for k in judged) == planted["judgments_claude"]
    assert sum(k[3] == "glm-5.2" for k in judged) == planted["judgments_glm"]


def test_planted_pathologies_are_the_ones_asked_for(planted: dict[str, int]) -> None:
    assert planted["blank"] == 2
    assert planted["malformed"] == 3
    assert planted["duplicate"] == 1 and planted["conflicting_keys"] == 1
    assert planted["non_numeric"] == planted["out_of_range"] == planted["invalid_number"] == 1
    assert 6 <= planted["empty"] <= 10
    assert 13 <= planted["missing_planned"] <= 17
    assert 0.22 <= planted["partial_claude"] / planted["judgments_claude"] <= 0.25
    glm_no_overall = planted["partial_glm"] + planted["empty_glm"]
    assert 0.06 <= glm_no_overall / planted["judgments_glm"] <= 0.10


def test_special_lines_are_written_literally(lines: list[str]) -> None:
    raw = "\n".join(lines)
    assert sum('"overall": NaN' in line for line in lines) == 1
    assert sum('"overall": "8/10"' in line for line in lines) == 1
    assert sum('"overall": 0,' in line for line in lines) == 1
    assert raw.count("<script>alert(1)</script>") == 1
    assert sum("Débil en citas — revisar" in line for line in lines) == 1


def _half_up(x: Fraction) -> Decimal:
    return (Decimal(x.numerator) / Decimal(x.denominator)).quantize(
        Decimal("0.01"), rounding=ROUND_HALF_UP)


def _zero_filled(objs: list[dict], field: str) -> Decimal:
    vals = [Fraction(o[field]) if _is_score(o.get(field)) else Fraction(0) for o in objs]
    return _half_up(sum(vals, Fraction(0)) / len(vals))


def test_published_card_and_claims_are_the_zero_filled_means(lines: list[str]) -> None:
    seen: set[str] = set()
    rows = []
    for line, obj in _parsed(lines):  # every parsed row but the exact duplicate
        if line not in seen:
            seen.add(line)
            rows.append(obj)
    with (DATA / "published_scorecard.csv").open(newline="") as fh:
        card = {r["variant"]: r for r in csv.DictReader(fh)}
    assert list(card) == list(example.VARIANTS)
    for v, printed in card.items():
        mine = [o for o in rows if o["variant"] == v]
        assert Decimal(printed["overall"]) == _zero_filled(mine, "overall"), v
        assert Decimal(printed["honesty"]) == _zero_filled(mine, "honesty"), v

    config = yaml.safe_load((DATA / "config.yaml").read_text(encoding="utf-8"))
    subsets = config["subsets"]
    claims = yaml.safe_load((DATA / "claims.yaml").read_text(encoding="utf-8"))
    assert len(claims) == 3
    for c in claims:
        if "subset" in c:
            scen = set(subsets[c["subset"]]["scenario"])
            za, zb = (_zero_filled([o for o in rows if o["variant"] == x
                                    and o["scenario"] in scen], c["field"])
                      for x in (c["a"], c["b"]))
        else:
            za, zb = Decimal(card[c["a"]][c["field"]]), Decimal(card[c["b"]][c["field"]])
        assert Decimal(str(c["claimed"])) == za - zb, c["name"]


def test_readme_states_the_generated_counts(planted: dict[str, int]) -> None:
    readme = (DATA / "README.md").read_text(encoding="utf-8")
    assert f"{planted['lines']} physical lines" in readme
    for bucket in example.LEDGER_BUCKETS:
        assert f"{bucket} {planted[bucket]}" in readme
    assert f"{planted['missing_planned']} planned judgments with no line" in readme
    assert "make example" in readme and "python -m workbench.sim.example data/example" in readme
