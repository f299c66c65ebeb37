"""One vocabulary of methods: every method name a results document records, described once.

A results document records the method behind each figure in ``*_method`` keys (``ci_method``,
``p_method``, ``missing_rate_ci_method``, ``sign_flip_method`` ...), in ``method`` keys (the
missingness tests, the bootstrap), in ``ignores_clustering`` lists (figures kept beside the
headline that treat rows as independent) and by the presence of a figure that has one method
only (``p_holm``, ``fisher_p``, ``kappa_quadratic`` ...). :func:`recorded` reads them all
from a document; :data:`VOCABULARY` describes each name once, with its reference. The report's
Methods section lists exactly :func:`recorded`'s names (``tests/test_methods.py`` checks both
directions on the example and on the real-data presets), so Methods is true by construction.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Method", "VOCABULARY", "PLACES", "recorded", "section", "describe", "place_label"]


@dataclass(frozen=True)
class Method:
    """A method: what it is (one sentence a reviewer can check) and where it comes from."""

    description: str
    reference: str


_PERM_REF = "Good (2005), Permutation, Parametric and Bootstrap Tests of Hypotheses, ch. 3"
_PERM_FORMS = (("", ", seeded Monte-Carlo p (2000 permutations)", ""),
               ("_exact", ", exact p by enumerating every arrangement", ""),
               ("_asymptotic", ", large-sample chi-squared form of the permutation distribution",
                "; Landis, Heyman & Koch (1978), Int. Stat. Rev. 46"))
_PERMUTATIONS = {
    "block_permutation_within_scenario":
        "chi-squared statistic; variant labels of whole (scenario, variant) blocks (every trial and "
        "judge) permuted within each scenario",
    "judge_block_permutation_within_scenario_variant":
        "chi-squared statistic; judge labels of whole (scenario, variant, judge) blocks (all trials) "
        "permuted within each scenario x variant",
    "item_permutation_within_scenario":
        "chi-squared statistic; variant labels of (scenario, variant, trial) items permuted within "
        "each scenario (config missingness.unit: trial; invalid when trials fail together)",
    "judge_permutation_within_item":
        "chi-squared statistic; judge labels permuted within each (scenario, variant, trial) item "
        "(config missingness.unit: trial)",
}

#: every method name a results document can record, described once
VOCABULARY: dict[str, Method] = {
    "cluster_cr2_bm": Method(
        "CR2 (bias-reduced) cluster-robust standard error, t with Bell-McCaffrey (Satterthwaite) "
        "degrees of freedom: its size holds when clusters keep unequal numbers of values",
        "Bell & McCaffrey (2002), Survey Methodology 28(2); Pustejovsky & Tipton (2018), JBES 36(4)"),
    "cluster_t": Method(
        "CR1 cluster-robust standard error, t with G - 1 degrees of freedom (G clusters)",
        "Cameron & Miller (2015), J. Human Resources 50(2); Miller (2024), arXiv:2411.00640"),
    "ols_fe_cluster_t": Method(
        "OLS slope with scenario and variant fixed effects (within scenario: both sides demeaned, "
        "Frisch-Waugh-Lovell), CR1 cluster-robust standard error with the dummy regression's "
        "small-sample factor, t with G - 1 degrees of freedom (G clusters)",
        "Cameron & Miller (2015), J. Human Resources 50(2); Frisch & Waugh (1933), Econometrica 1(4)"),
    "joint_cluster_bootstrap_multinomial": Method(
        "cluster bootstrap: whole clusters resampled with replacement (one multinomial weight "
        "draw per resample shared by every figure), percentile interval",
        "Field & Welsh (2007), JRSS B 69(3); Efron & Tibshirani (1993)"),
    "wilson": Method(
        "plain Wilson score interval, rows treated as independent (ignores clustering; kept beside "
        "the clustered interval, never headlined)", "Wilson (1927), JASA 22(158)"),
    "wilson_design_effect_t": Method(
        "Wilson score interval on the design-effect-adjusted n (CR1 variance over clusters) with a "
        "t(G - 1) correction; a rate of 0 or 1 takes the pooled design effect of its table's other "
        "cells", "Korn & Graubard (1998), Survey Methodology 24(2); Wilson (1927)"),
    "wilson_design_effect_cr2_4bm": Method(
        "Wilson score interval on the effective number of outcomes p(1 - p) / v (v the CR2 "
        "variance of the mean over items, clustered), capped at outcomes / k, with the t quantile "
        "at 4 x the Bell-McCaffrey df (chosen by simulation)",
        "Pustejovsky & Tipton (2018), JBES 36(4); Korn & Graubard (1998), Survey Methodology 24(2); "
        "Wilson (1927)"),
    "wilson_design_effect_cr2_bm": Method(
        "Wilson score interval on the effective number of outcomes from the CR2 variance, t quantile "
        "at the Bell-McCaffrey df", "Pustejovsky & Tipton (2018), JBES 36(4); Wilson (1927)"),
    "cluster_t_clipped": Method(
        "CR1 clustered t interval of the mean over items, clipped to [0, 1] (kept beside: it "
        "under-covered at 3-5 clusters)", "Cameron & Miller (2015), J. Human Resources 50(2)"),
    "chi2": Method("Pearson chi-squared test of the levels x [missing, scored] table, rows "
                   "treated as independent (kept beside the design-respecting test)",
                   "Pearson (1900); Agresti (2013), Categorical Data Analysis"),
    "chi2_monte_carlo": Method("chi-squared statistic with a seeded Monte-Carlo p-value (sparse tables), "
                               "rows treated as independent (kept beside)", "Hope (1968), JRSS B 30(3)"),
    "fisher_exact": Method("Fisher's exact test of the two sides' missing rates, two-sided, rows treated "
                           "as independent (kept beside the design-respecting test)",
                           "Fisher (1922), JRSS 85(1)"),
    "holm": Method("Holm step-down adjustment of the p-values within each family (one per subset)",
                   "Holm (1979), Scand. J. Statistics 6(2)"),
    "holm_stepdown_cr2_bm": Method(
        "each claim's CR2 Bell-McCaffrey t interval at its Holm step-down level (1 - alpha/(m - i + 1) "
        "for the claim rejected at step i; the stopping step's level for the rest): it excludes 0 "
        "exactly when the claim's Holm-adjusted p does, so a verdict and its p agree",
        "Holm (1979); Strassburger & Bretz (2008), Stat. Med. 27(24)"),
    "ranks_holm_contrasts": Method(
        "rank interval of each measured cell: 1 + cells significantly above it to N - cells "
        "significantly below it, from the Holm-adjusted contrasts (simultaneous); a single rank only "
        "when every pair is separated",
        "Mogstad, Romano, Shaikh & Wilhelm (2024), Rev. Economic Studies 91(1); Holm (1979)"),
    "mde": Method("minimum detectable effect: the difference detectable with the configured power at "
                  "alpha from the clustered SE", "Bloom (1995), Evaluation Review 19(5)"),
    "power_noncentral_t": Method(
        "power of the clustered test from the noncentral t with the design's between- and "
        "within-cluster variance; the scenarios and trials needed found by a search over the grid",
        "Hemming et al. (2011), BMC Med. Res. Methodol. 11:102; Donner & Klar (2000)"),
    "leave_one_cluster_out": Method("the contrast recomputed with each cluster left out (its range)",
                                    "Efron (1982), The Jackknife, the Bootstrap and Other Resampling Plans"),
    "kappa_quadratic": Method("quadratic-weighted kappa on the rubric's integer scale",
                              "Cohen (1968), Psych. Bulletin 70(4)"),
    "krippendorff_alpha": Method("Krippendorff's alpha, interval metric", "Krippendorff (2004), Content Analysis"),
    "spearman": Method("Spearman rank correlation of the two judges' scores on the same items",
                       "Spearman (1904), Am. J. Psychology 15(1)"),
    "paired_t_rows": Method("paired t interval over rows, treated as independent (ignores clustering; "
                            "kept beside the clustered interval)", "Student (1908), Biometrika 6(1)"),
    "wilcoxon_signed_rank": Method("Wilcoxon signed-rank test over rows, treated as independent (ignores "
                                   "clustering; kept beside)", "Wilcoxon (1945), Biometrics Bulletin 1(6)"),
    "sign_flip_exact": Method("sign-flip test: signs of whole clusters' summed within-item differences "
                              "flipped, all 2^G patterns", "Fisher (1935); Canay, Romano & Shaikh (2017), "
                              "Econometrica 85(3)"),
    "sign_flip_monte_carlo": Method("sign-flip test: signs of whole clusters' summed within-item differences "
                                    "flipped, a seeded Monte-Carlo sample of patterns",
                                    "Fisher (1935); Canay, Romano & Shaikh (2017), Econometrica 85(3)"),
    "sign_flip_asymptotic": Method("sign-flip test, large-sample normal form (above 200 clusters with none "
                                   "holding over 10% of the variance; size measured by simulation)",
                                   "Canay, Romano & Shaikh (2017), Econometrica 85(3)"),
    "lc_cluster_bootstrap_refit": Method(
        "AlpacaEval's length-controlled win rate (its GLM, the length term at 0): instructions "
        "resampled with replacement (one draw for every variant of the judge), the GLM refitted in each "
        "resample (length standardisation and fitted instruction difficulty included), percentile interval",
        "Dubois, Galambosi, Liang & Hashimoto (2024), arXiv:2404.04475; Field & Welsh (2007), JRSS B 69(3)"),
    "self_preference_did_cr2_bm": Method(
        "own-family preference of two judges of different families: within-item score differences "
        "(trials averaged per scenario x variant) contrasted between the two judges' writer families "
        "within each scenario (difference-in-differences: removes judge severity and item difficulty), "
        "mean over scenarios with a CR2 Bell-McCaffrey t interval and test over clusters; the two "
        "judges' combined preference",
        "Angrist & Pischke (2009), Mostly Harmless Econometrics, ch. 5; Bell & McCaffrey (2002); "
        "Panickssery, Bowman & Feng (2024), arXiv:2404.13076"),
    "self_preference_reference_did_cr2_bm": Method(
        "one judge's own-family preference against a reference judge of a family that wrote none of the "
        "outputs: within-item score differences judge - reference (trials averaged per scenario x "
        "variant) contrasted between outputs of the judge's family and of the other families within "
        "each scenario (difference-in-differences: severity, item difficulty and the reference's own "
        "leanings removed), mean over scenarios with a CR2 Bell-McCaffrey t interval and test over clusters",
        "Angrist & Pischke (2009), Mostly Harmless Econometrics, ch. 5; Bell & McCaffrey (2002); "
        "Panickssery, Bowman & Feng (2024), arXiv:2404.13076"),
    "ppi_mean_cr2_bm": Method(
        "prediction-powered mean of the human's score: the judge's mean over all its items plus the "
        "mean human-minus-judge difference (the rectifier) on the items the human labelled; CR2 "
        "Bell-McCaffrey t interval from the stacked judge scores and rectifiers clustered together (the "
        "covariance of the two terms, which share items, estimated from the cluster sums)",
        "Angelopoulos, Bates, Fannjiang, Jordan & Zrnic (2023), Science 382:669-674; Bell & McCaffrey "
        "(2002); Pustejovsky & Tipton (2018), JBES 36:672-683"),
    **{name + suffix: Method(how + form, _PERM_REF + ref)
       for name, how in _PERMUTATIONS.items() for suffix, form, ref in _PERM_FORMS},
}

#: where a method is recorded -> what it is used for there (a reader's words)
PLACES: dict[str, str] = {
    "scorecard.ci_method": "scorecard cell intervals (headline)",
    "scorecard.cr1_method": "scorecard cells, beside",
    "scorecard.boot_low": "scorecard bootstrap intervals",
    "bootstrap.method": "the joint bootstrap of every bootstrap interval",
    "census.missing_rate_ci_method": "missing-rate intervals (census cells)",
    "census_margins.missing_rate_ci_method": "missing-rate intervals (census margins)",
    "flag_rates.ci_method": "flag-rate intervals",
    "flag_rates.wilson_low": "flag rates, beside",
    "pass_rates.ci_method": "pass-rate intervals",
    "pass_rates.wilson_low": "pass rates, beside",
    "pass_rates.pass_hat_k_ci_method": "pass^k intervals",
    "pass_rates.pass_hat_k_cr1_ci_low": "pass^k, beside",
    "judge_offsets.ci_method": "judge offset intervals (headline)",
    "judge_offsets.p_method": "judge offset tests (headline)",
    "judge_offsets.cr1_method": "judge offsets, beside",
    "judge_offsets.sign_flip_method": "judge offset sign-flip p",
    "judge_offsets.boot_low": "judge offset bootstrap intervals",
    "judge_offsets.ignores_clustering": "judge offsets, beside (rows as independent)",
    "judge_offsets.kappa_quadratic": "judge agreement",
    "judge_offsets.krippendorff_alpha": "judge agreement",
    "judge_offsets.spearman": "judge agreement",
    "contrasts.ci_method": "contrast intervals and tests (headline)",
    "contrasts.cr1_method": "contrasts, beside",
    "contrasts.paired_ci_method": "paired contrasts",
    "contrasts.boot_low": "contrast bootstrap intervals",
    "contrasts.p_holm": "contrast p-values",
    "contrasts.fisher_p": "contrasts' confounding check, beside",
    "contrasts.missingness_method": "contrasts' confounding flag",
    "contrasts.mde": "minimum detectable effect",
    "contrasts.scenarios_needed": "power and the scenarios/trials needed",
    "contrasts.loo_min": "contrast sensitivity to one cluster",
    "claims.ci_method": "claim intervals",
    "claims.verdict_ci_method": "claim verdicts",
    "claims.p_holm": "claim p-values",
    "claims.fisher_p": "claims' confounding check, beside",
    "claims.missingness_method": "claims' confounding flag",
    "missingness_tests.method": "does the missing rate depend on the variant / judge? (design-respecting)",
    "missingness_tests.classic_method": "missingness tests, beside (rows as independent)",
    "ranks.basis": "scorecard ranks",
    "length.ci_method": "length-controlled win rate intervals (AlpacaEval)",
    "length_slopes.ci_method": "slope of the score on log answer length",
    "self_preference.ci_method": "self-preference (own-family) intervals",
    "self_preference.p_method": "self-preference (own-family) tests",
    "human.method": "prediction-powered means (judge versus human)",
    "human.kappa_quadratic": "judge agreement with the human",
    "human.krippendorff_alpha": "judge agreement with the human",
    "human.spearman": "judge agreement with the human",
}

#: keys whose value is a form of one method: the recorded name is the prefix + the value
_FORMS = {"sign_flip_method": "sign_flip_", "basis": "ranks_"}
#: figures whose presence (a non-null value) records their one method
_IMPLIED = {"boot_low": None, "wilson_low": "wilson", "pass_hat_k_cr1_ci_low": "cluster_t_clipped",
            "kappa_quadratic": "kappa_quadratic", "krippendorff_alpha": "krippendorff_alpha",
            "spearman": "spearman", "p_holm": "holm", "fisher_p": "fisher_exact", "mde": "mde",
            "scenarios_needed": "power_noncentral_t", "loo_min": "leave_one_cluster_out"}
#: ignores_clustering entries -> their method
_IGNORES = {"t_ci_low": "paired_t_rows", "t_ci_high": "paired_t_rows", "wilcoxon_p": "wilcoxon_signed_rank"}
#: the top-level tables whose records carry method names
_TABLES = ("scorecard", "census", "census_margins", "flag_rates", "pass_rates", "judge_offsets", "contrasts",
           "claims", "missingness_tests")
_NOT_A_METHOD = (None, "undefined")


def _records(doc: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for table in _TABLES:
        for rec in doc.get(table) or []:
            if isinstance(rec, Mapping):
                yield table, rec
    ranks = doc.get("ranks")
    for rec in ranks if isinstance(ranks, list) else [ranks] if ranks else []:
        if isinstance(rec, Mapping) and rec.get("measured"):
            yield "ranks", {"basis": rec.get("basis")}
    length = doc.get("length")
    if isinstance(length, Mapping):
        for name, key in (("length", "lc"), ("length_slopes", "slopes")):
            for rec in length.get(key) or []:
                if isinstance(rec, Mapping):
                    yield name, {"ci_method": rec.get("ci_method")}
    selfp = doc.get("self_preference")
    for rec in [*(selfp.get("pairs") or []), *(selfp.get("judges") or [])] if isinstance(selfp, Mapping) else []:
        if isinstance(rec, Mapping):
            yield "self_preference", {k: rec.get(k) for k in ("ci_method", "p_method")}
    hum = doc.get("human")
    if isinstance(hum, Mapping):
        for rec in [*(hum.get("agreement") or []), *(hum.get("records") or [])]:
            if isinstance(rec, Mapping):
                yield "human", {k: rec.get(k) for k in ("method", "kappa_quadratic", "krippendorff_alpha",
                                                        "spearman") if k in rec}
    boot = doc.get("bootstrap")
    if isinstance(boot, Mapping) and boot.get("computed"):
        yield "bootstrap", {"method": boot.get("method")}


def recorded(doc: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """Every method name ``doc`` records: name -> {place: records}, both sorted.

    A place is ``table.key`` (see :data:`PLACES`). Names are read from ``*_method`` and
    ``method`` values, the ``basis`` of the ranks and the sign-flip form (prefixed), the
    ``ignores_clustering`` lists and the figures that have one method (``p_holm`` -> ``holm``);
    a bootstrap interval records the bootstrap's method. ``undefined`` and null are no method.
    """
    boot = doc.get("bootstrap") if isinstance(doc.get("bootstrap"), Mapping) else {}
    out: dict[str, dict[str, int]] = {}

    def add(name: Any, place: str) -> None:
        if name in _NOT_A_METHOD or not isinstance(name, str):
            return
        places = out.setdefault(name, {})
        places[place] = places.get(place, 0) + 1

    for table, rec in _records(doc):
        for key, value in rec.items():
            place = f"{table}.{key}"
            if key in _FORMS and value not in _NOT_A_METHOD:
                add(_FORMS[key] + str(value), place)
            elif key == "method" or key.endswith("_method"):
                add(value, place)
            elif key == "ignores_clustering":
                for name in dict.fromkeys(_IGNORES[v] for v in value or [] if v in _IGNORES):
                    add(name, place)
            elif key in _IMPLIED and value is not None:
                add(_IMPLIED[key] if _IMPLIED[key] is not None else (boot or {}).get("method"), place)
    return {name: dict(sorted(places.items())) for name, places in sorted(out.items())}


def describe(name: str) -> Method:
    """The vocabulary's description of ``name`` (KeyError: a method nobody described)."""
    return VOCABULARY[name]


def place_label(place: str) -> str:
    """What a method is used for at ``place`` (``table.key``), in a reader's words."""
    return PLACES.get(place, place)


def section(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """results.json ``methods``: every method the run recorded, with its description, its
    reference and where it is used (``used_in``: place -> records). A method the vocabulary does
    not describe is listed as "not described" (a defect :func:`undescribed` finds)."""
    out = []
    for name, places in recorded(doc).items():
        m = VOCABULARY.get(name)
        # a name nobody described is a defect of the workbench (tests/test_methods.py fails on
        # it); the run still completes and says so rather than ending in a traceback
        out.append({"name": name, "description": m.description if m else "not described (a defect: "
                    "report it)", "reference": m.reference if m else None, "used_in": places})
    return out


def undescribed(doc: Mapping[str, Any]) -> list[str]:
    """The method names ``doc`` records that :data:`VOCABULARY` does not describe (a defect)."""
    return [name for name in recorded(doc) if name not in VOCABULARY]
