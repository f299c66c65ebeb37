"""Methods true by construction (issue 26): every method name a run's results.json records is
described once in :mod:`workbench.common.methods`, and the report's Methods table lists exactly those
names, on the example and on every native preset's real files.

The recorded names are read here by a walker of this file's own (every string under a key
named ``method`` or ending in ``_method``, the sign-flip form and rank basis prefixed, the
``ignores_clustering`` lists, and the figures whose presence implies one method), not by
:func:`workbench.common.methods.recorded`; the Methods rows are read from the rendered HTML's
``data-method`` attributes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from test_real_data import NATIVE, files, require_real_data

from workbench.common import methods
from workbench.common.config import load_config
from workbench.document import pipeline
from workbench.report.model import Report
from workbench.report.tables import methods_table

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "example_results.json"

IMPLIED = {"wilson_low": "wilson", "pass_hat_k_cr1_ci_low": "cluster_t_clipped", "kappa_quadratic": "kappa_quadratic",
           "krippendorff_alpha": "krippendorff_alpha", "spearman": "spearman", "p_holm": "holm",
           "fisher_p": "fisher_exact", "mde": "mde", "scenarios_needed": "power_noncentral_t",
           "loo_min": "leave_one_cluster_out"}
IGNORES = {"t_ci_low": "paired_t_rows", "t_ci_high": "paired_t_rows", "wilcoxon_p": "wilcoxon_signed_rank"}
TABLES = ("scorecard", "census", "census_margins", "flag_rates", "pass_rates", "judge_offsets", "contrasts",
          "claims", "missingness_tests")


def walk(doc: dict[str, Any]) -> set[str]:
    """The method names a results document records, read independently of workbench.common.methods."""
    names: set[str] = set()
    boot = doc.get("bootstrap") or {}
    if boot.get("computed") and boot.get("method"):
        names.add(boot["method"])
    ranks = doc.get("ranks") or {}
    if ranks.get("measured"):
        names.add("ranks_" + ranks["basis"])
    for key in ("lc", "slopes"):  # results.json length (AlpacaEval: workbench.analysis.length)
        names.update(r["ci_method"] for r in (doc.get("length") or {}).get(key) or [] if r.get("ci_method"))
    for table in TABLES:
        for rec in doc.get(table) or []:
            for key, value in rec.items():
                if value is None or value == "undefined":
                    continue
                if key == "sign_flip_method":
                    names.add("sign_flip_" + value)
                elif key == "method" or key.endswith("_method"):
                    names.add(value)
                elif key == "ignores_clustering":
                    names.update(IGNORES[v] for v in value if v in IGNORES)
                elif key in IMPLIED:
                    names.add(IMPLIED[key])
                elif key == "boot_low":
                    names.add(boot["method"])
    return names


def html_methods(doc: dict[str, Any], analysis: Any, tmp_path: Path) -> list[str]:
    html = str(methods_table(Report(analysis=analysis, parameters={}, out_dir=tmp_path, command_line="")))
    return re.findall(r'data-method="([^"]+)"', html)


class _Doc:
    def __init__(self, doc: dict[str, Any], cfg: Any) -> None:
        self.doc, self.config = doc, cfg


def check_run(doc: dict[str, Any], analysis: Any, tmp_path: Path) -> set[str]:
    names = walk(doc)
    assert names, "no method recorded at all"
    missing = sorted(names - set(methods.VOCABULARY))
    assert not missing, f"recorded but not described: {missing}"
    shown = html_methods(doc, analysis, tmp_path)
    assert len(shown) == len(set(shown)), "a method described twice"
    assert set(shown) == names, (sorted(set(shown) - names), sorted(names - set(shown)))
    assert [m["name"] for m in doc["methods"]] == sorted(names)
    for m in doc["methods"]:
        assert m["description"] == methods.VOCABULARY[m["name"]].description
        assert all(p in methods.PLACES for p in m["used_in"]), m["used_in"]
    return names


def test_example_methods_are_the_recorded_ones(tmp_path: Path) -> None:
    doc = json.loads(GOLDEN.read_text("utf-8"))
    names = check_run(doc, _Doc(doc, load_config(path=str(ROOT / "data" / "example" / "config.yaml"))), tmp_path)
    # the methods the old Methods table named although the run did not record them are gone
    assert "wilson_design_effect_t" in names and "fisher_exact" in names
    assert "chi2_monte_carlo" not in names and "sign_flip_monte_carlo" not in names
    # the missing rates' method is the one the census records, not "Wilson score interval"
    assert {c["missing_rate_ci_method"] for c in doc["census"]} == {"wilson_design_effect_t"}


PRESET_FILES = [
    ("mt-bench", "wgm20__FastChat", "fastchat/llm_judge/data/mt_bench/model_judgment/gpt-4_single.jsonl"),
    ("mt-bench-pair", "lesnikow__fast-chat", "**/gpt-4-turbo_pair.jsonl"),
    ("arena-hard", "zeppombal__arena-hard-auto", "data/**/model_judgment/**/*.jsonl"),
    ("alpaca-eval", "tatsu-lab__alpaca_eval", "results/phi-2/**/annotations.json"),
    ("wildbench", "allenai__WildBench", "eval_results/**/reka-core*.json"),
    ("inspect", "UKGovernmentBEIS__inspect_ai", "tests/**/*.eval"),
]


@pytest.mark.parametrize("preset, folder, pattern", PRESET_FILES)
def test_real_data_methods_are_the_recorded_ones(preset: str, folder: str, pattern: str, tmp_path: Path) -> None:
    require_real_data()
    inputs = files(folder, pattern)
    assert inputs, f"no file matches {pattern} in {NATIVE / folder}"
    a = pipeline.run(inputs, load_config(preset=preset, overrides={"bootstrap": {"resamples": 200}}))
    check_run(a.doc, a, tmp_path)


def test_a_method_nobody_described_is_found_not_a_crash() -> None:
    doc = {"scorecard": [{"ci_method": "made_up_interval"}]}
    assert methods.undescribed(doc) == ["made_up_interval"]
    (m,) = methods.section(doc)
    assert m["name"] == "made_up_interval" and m["description"].startswith("not described")
    assert methods.recorded({"scorecard": [{"ci_method": None}], "missingness_tests": [{"method": "undefined"}]}) == {}
