"""The paired records as they were computed before the prepared tables: a reference.

Each record filters and sorts the row table in polars with string keys and passes the
scenario names to the statistics, one record at a time (workbench/analysis/paired.py at dd2e2cf, with
two orders made canonical: judge pairs sorted by item, then a, then b, where an item has
several rows of a judge, and a scenario's mean of unit means summed over its units in key
order by :func:`workbench.analysis.paired._mean_by_scenario`). The power inputs are the product's
:func:`workbench.analysis.paired._power_inputs` (arrays in, numbers out), called here with scenario
names where the product passes codes.
``workbench.analysis.paired`` builds integer-coded tables once and must give the same records, value
for value (tests/test_paired_identity.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from workbench import stats
from workbench.analysis.paired import ITEM, UNIT_KEYS, _kappa_labels, _mean_by_scenario, _power_inputs
from workbench.common.config import Config
from workbench.ingest.selection import cell_rows, subset_filter
from workbench.reduce.sufficient import JointBootstrap, bootstrap_resamples, cluster_index


def _valid(rows: pl.DataFrame, field: str) -> pl.DataFrame:
    """The cell rows with a valid ``field``, every column (the reference's own, eager)."""
    return cell_rows(rows).filter(pl.col(field).is_not_null())


def _clusters(rows: pl.DataFrame, scenarios: np.ndarray) -> np.ndarray:
    """The cluster label of each scenario label (the rows' ``cluster`` column; a table without
    it: the scenario itself), by a plain dictionary."""
    if "cluster" not in rows.columns:
        return scenarios
    of = dict(rows.select("scenario", "cluster").drop_nulls().unique().iter_rows())
    return np.array([of[s] for s in scenarios.tolist()], dtype=object)


def judge_pairs(rows: pl.DataFrame, cfg: Config, judge_a: str, judge_b: str,
                field: str | None = None) -> pl.DataFrame:
    """Items (scenario, variant, trial) both judges scored validly: columns a, b, diff (a - b)."""
    fld = field or cfg.headline
    v = _valid(rows, fld).select(*ITEM, "judge", fld)
    a = v.filter(pl.col("judge") == judge_a).select(*ITEM, pl.col(fld).alias("a"))
    b = v.filter(pl.col("judge") == judge_b).select(*ITEM, pl.col(fld).alias("b"))
    return (a.join(b, on=ITEM, how="inner").with_columns((pl.col("a") - pl.col("b")).alias("diff"))
            .sort([*ITEM, "a", "b"]))


def _offset_record(rows: pl.DataFrame, cfg: Config, ja: str, jb: str, variant: str | None,
                   subset: str | None, seed_offset: int, joint: JointBootstrap | None = None) -> dict[str, Any]:
    fld = cfg.headline
    scope = cell_rows(rows).filter(subset_filter(cfg, subset))
    if variant is not None:
        scope = scope.filter(pl.col("variant") == variant)
    pairs = judge_pairs(scope, cfg, ja, jb)
    valid = scope.filter(pl.col(fld).is_not_null())
    items_a = valid.filter(pl.col("judge") == ja).select(ITEM).unique()
    items_b = valid.filter(pl.col("judge") == jb).select(ITEM).unique()
    only_a = items_a.join(items_b, on=ITEM, how="anti").height
    only_b = items_b.join(items_a, on=ITEM, how="anti").height
    a, b, d = pairs["a"].to_numpy(), pairs["b"].to_numpy(), pairs["diff"].to_numpy()
    sc = _clusters(rows, pairs["scenario"].to_numpy())
    ps = stats.paired_summary(d, sc, cfg.confidence, bootstrap=False)
    # the run's resample count: bootstrap.resamples cut to bootstrap.budget / run scenarios
    flips = bootstrap_resamples(cfg, len(cluster_index(rows)))
    p_cl = None
    if ps.se_clustered is not None and ps.se_clustered > 0 and ps.df_clustered is not None:
        from scipy import stats as _sps

        p_cl = float(2.0 * _sps.t.sf(abs(ps.mean / ps.se_clustered), ps.df_clustered))
    cr2 = stats.cluster_mean_cr2(d, sc, cfg.confidence)  # the headline since issue 24
    rec = {
        "judge_a": ja, "judge_b": jb, "variant": variant, "subset": subset, "field": fld,
        "pairs": ps.n, "clusters": ps.clusters, "cluster": cfg.cluster_name, "only_a": only_a, "only_b": only_b,
        "mean_diff": ps.mean, "ci_low": cr2.ci_low, "ci_high": cr2.ci_high,
        "ci_method": "cluster_cr2_bm" if cr2.ci_low is not None else None,
        "p": cr2.p_value, "p_method": "cluster_cr2_bm" if cr2.p_value is not None else None,
        "se": cr2.se, "df": cr2.df, "cr1_se": ps.se_clustered, "cr1_df": ps.df_clustered,
        "cr1_ci_low": ps.ci_low_clustered, "cr1_ci_high": ps.ci_high_clustered, "cr1_p": p_cl,
        "cr1_method": "cluster_t" if ps.ci_low_clustered is not None else None,
        "p_sign_flip": stats.sign_flip_test(d, sc, flips, stats.derive_seed(
            cfg.seed, "sign_flip", ja, jb, variant, subset, fld)) if ps.n else None,
        "sign_flip_method": None,
        "sign_flip_resamples": None,
        "boot_low": ps.boot_low, "boot_high": ps.boot_high,
        "t_ci_low": ps.ci_low, "t_ci_high": ps.ci_high,
        "clustered_ci_low": ps.ci_low_clustered, "clustered_ci_high": ps.ci_high_clustered,
        "ignores_clustering": ["t_ci_low", "t_ci_high", "wilcoxon_p"],
        "wilcoxon_p": ps.wilcoxon_p, "diff_counts": ps.diff_counts,
        "exact_agreement": stats.exact_agreement(a, b) if ps.n else None,
        "within_one": stats.within_one(a, b) if ps.n else None,
        "kappa_quadratic": stats.kappa_quadratic(a, b, _kappa_labels(a, b, cfg)) if ps.n else None,
        "krippendorff_alpha": stats.krippendorff_alpha(a, b) if ps.n else None,
        "spearman": stats.spearman(a, b) if ps.n else None,
    }
    if rec["p_sign_flip"] is not None:
        rec["sign_flip_method"] = "exact" if ps.clusters <= 12 else "monte_carlo"
        # the large-sample form: many clusters, none dominating sum_g S_g^2 (a loop over the
        # scenario names, scipy's normal tail)
        sums = np.array([float(np.sum(d[sc == name])) for name in sorted(set(sc.tolist()))])
        sq = sums ** 2
        if (ps.clusters > stats.SIGN_FLIP_ASYMPTOTIC_CLUSTERS and sq.sum() > 0
                and sq.max() <= stats.SIGN_FLIP_ASYMPTOTIC_SHARE * sq.sum()):
            from scipy import stats as _sps

            rec["sign_flip_method"] = "asymptotic"
            rec["p_sign_flip"] = float(min(1.0, 2.0 * _sps.norm.sf(abs(sums.sum()) / np.sqrt(sq.sum()))))
        if rec["sign_flip_method"] == "monte_carlo":
            rec["sign_flip_resamples"] = flips
    # boot_low/boot_high: the joint bootstrap of the per-scenario sums of within-item
    # differences (weighted mean difference), on the run's scenario weights
    boot = joint if joint is not None else JointBootstrap.for_rows(rows, cfg)
    boot.request(rec, boot.add_values(sc, d), where=f"judge_offset:{ja}-{jb}/{variant or ''}/{subset or ''}/{fld}")
    if joint is None:
        boot.run()
    return rec


def _clustered_components(both: pl.DataFrame, fld: str, a: str, b: str
                          ) -> tuple[float | None, float | None, int, float]:
    """Power's variance components with scenarios nested in clusters, by plain loops: per
    scenario and side the trial means (judges averaged), their mean and variance (ddof 1, at
    least 2 trials); D_s, w_s = var_a / T_a + var_b / T_b; per cluster the mean of D_s and
    sum(w_s) / m^2 over its scenarios with both sides; between = max(0, var(D_c) - mean(w_c))."""
    of = dict(both.select("scenario", "cluster").unique().iter_rows())
    per: dict[tuple[str, str], list[float]] = {}
    for (s, v, _t), g in sorted(both.partition_by(["scenario", "variant", "trial"], as_dict=True).items(),
                                key=lambda kv: str(kv[0])):
        per.setdefault((s, v), []).append(float(np.mean(g[fld].to_numpy())))
    d_s: dict[str, list[tuple[float, float, float]]] = {}
    for s in sorted({s for s, _ in per}):
        ta, tb = per.get((s, a), []), per.get((s, b), [])
        if len(ta) >= 2 and len(tb) >= 2:
            d_s.setdefault(of[s], []).append((
                float(np.mean(ta)) - float(np.mean(tb)),
                float(np.var(ta, ddof=1)) / len(ta) + float(np.var(tb, ddof=1)) / len(tb),
                (len(ta) + len(tb)) / 2.0))
    if not d_s:
        return None, None, 0, 0.0
    dc = [sum(x[0] for x in v) / len(v) for v in d_s.values()]
    wc = [sum(x[1] for x in v) / len(v) ** 2 for v in d_s.values()]
    t0 = float(np.mean([x[2] for v in d_s.values() for x in v]))
    if len(dc) < 2:
        return None, None, len(dc), t0
    within = float(np.mean(wc))
    return max(0.0, float(np.var(dc, ddof=1)) - within), within, len(dc), t0


def matched_units(rows: pl.DataFrame, a: str, b: str, field: str,
                  trials_matched: bool = False) -> tuple[pl.DataFrame, str]:
    """Paired units for a contrast: ``(frame with scenario, a, b, diff; unit)``.

    A trial number is an arbitrary label across variants, so by default units are
    (scenario, judge) pairs both variants have valid values for, each side the mean of its
    valid trials (unit ``scenario_judge``). With ``trials_matched`` (the config declares that
    trial k of a and of b share something, e.g. a sampling seed) units are (scenario, trial,
    judge) rows (unit ``row``). When there are none, scenario-level means of the valid values
    (unit ``scenario_mean``).
    """
    v = _valid(rows, field)
    key = ["scenario", "trial", "judge"] if trials_matched else ["scenario", "judge"]
    ra = v.filter(pl.col("variant") == a).group_by(key).agg(pl.col(field).mean().alias("a"))
    rb = v.filter(pl.col("variant") == b).group_by(key).agg(pl.col(field).mean().alias("b"))
    m = ra.join(rb, on=key, how="inner")
    if m.height:
        unit = "row" if trials_matched else "scenario_judge"
        return m.with_columns((pl.col("a") - pl.col("b")).alias("diff")).sort(key), unit
    sides = []
    for r, side in ((ra.sort(key), "a"), (rb.sort(key), "b")):
        names, means = _mean_by_scenario(r["scenario"].to_numpy(), r[side].to_numpy())
        sides.append(pl.DataFrame({"scenario": names, side: means},
                                  schema={"scenario": r.schema["scenario"], side: pl.Float64}))
    sa, sb = sides
    m = sa.join(sb, on="scenario", how="inner")
    return m.with_columns((pl.col("a") - pl.col("b")).alias("diff")).sort("scenario"), "scenario_mean"


def contrast_record(rows: pl.DataFrame, cfg: Config, a: str, b: str, field: str | None = None,
                    subset: str | None = None, judge: str | None = None,
                    seed_offset: int = 0, joint: JointBootstrap | None = None) -> dict[str, Any]:
    """One contrast a - b on valid values: unpaired, paired, leave-one-out range and power.

    ``boot_low``/``boot_high``: joint cluster bootstrap of mean_a - mean_b, the difference
    of the two cells' resampled means on the same scenario weights (so it is coherent with
    the cells' own ``boot_*``); ``paired_boot_low``/``paired_boot_high``: the same weights on
    the per-scenario sums of matched-unit differences. From ``joint`` (the run's; filled in
    when it runs), else a bootstrap over ``rows``'s scenarios run at once.
    """
    fld = field or cfg.headline
    scope = cell_rows(rows).filter(subset_filter(cfg, subset))
    if judge is not None:
        scope = scope.filter(pl.col("judge") == judge)
    # canonical row order: float sums do not depend on the order of input lines
    v = scope.filter(pl.col(fld).is_not_null()).sort(["scenario", "variant", "trial", "judge", fld])
    va = v.filter(pl.col("variant") == a)
    vb = v.filter(pl.col("variant") == b)
    xa, ca = va[fld].to_numpy(), _clusters(rows, va["scenario"].to_numpy())
    xb, cb = vb[fld].to_numpy(), _clusters(rows, vb["scenario"].to_numpy())
    ds = stats.diff_clustered(xa, ca, xb, cb, cfg.confidence)
    d2 = stats.diff_cr2(xa, ca, xb, cb, cfg.confidence)  # the headline since issue 24
    m, unit = matched_units(scope, a, b, fld, cfg.trials_matched)
    m_cl = _clusters(rows, m["scenario"].to_numpy())
    ps = stats.paired_summary(m["diff"].to_numpy(), m_cl, cfg.confidence, bootstrap=False)
    loo_min, loo_max = stats.leave_one_cluster_out_diff(xa, ca, xb, cb) if xa.size and xb.size else (None, None)
    power = _power_inputs(xa, ca, xb, cb, m, unit, m_clusters=m_cl)
    n_need = (stats.n_needed(power["sd"], cfg.target_effect, cfg.alpha, cfg.power, rho=power["rho"],
                             design_effect=max(power["deff"] or 1.0, 1.0), paired=power["paired"])
              if power["sd"] is not None else None)
    key = UNIT_KEYS[unit]
    matched_keys = m.select(key)
    both = pl.concat([va, vb])
    if cfg.cluster is not None and "cluster" in rows.columns:
        bv, wv, g_plan, t0 = (_clustered_components(both, fld, a, b) if va.height and vb.height
                              else (None, None, 0, 0.0))
    else:
        bv, wv, g_plan, t0 = (stats.contrast_variance_components(
            both[fld].to_numpy(), both["scenario"].to_numpy(), (both["variant"] == a).to_numpy(),
            (both["scenario"] + "\x1f" + both["variant"] + "\x1f" + both["trial"].cast(pl.String)).to_numpy())
            if va.height and vb.height else (None, None, 0, 0.0))
    plan = stats.cluster_power_plan(bv, wv, g_plan, t0, cfg.target_effect, cfg.alpha, cfg.power,
                                    unit="scenarios" if cfg.cluster is None else f"{cfg.cluster_name} clusters")
    rec = {
        "a": a, "b": b, "field": fld, "subset": subset, "judge": judge,
        "mean_a": float(xa.mean()) if xa.size else None, "valid_n_a": int(xa.size),
        "mean_b": float(xb.mean()) if xb.size else None, "valid_n_b": int(xb.size),
        "diff": ds.diff, "se": d2.se, "df": d2.df, "ci_low": d2.ci_low, "ci_high": d2.ci_high, "p": d2.p_value,
        "ci_method": "cluster_cr2_bm" if d2.ci_low is not None else None,
        "cr1_se": ds.se, "cr1_df": ds.df, "cr1_ci_low": ds.ci_low, "cr1_ci_high": ds.ci_high, "cr1_p": ds.p_value,
        "cr1_method": "cluster_t" if ds.ci_low is not None else None,
        "boot_low": None, "boot_high": None,
        "cluster": cfg.cluster_name, "clusters": ds.clusters, "paired_clusters": ps.clusters,
        "paired_unit": unit, "paired_diff": ps.mean,
        "paired_ci_low": ps.ci_low_cr2 if ps.ci_low_cr2 is not None else ps.ci_low,
        "paired_ci_high": ps.ci_high_cr2 if ps.ci_high_cr2 is not None else ps.ci_high,
        "paired_ci_method": ("cluster_cr2_bm" if ps.ci_low_cr2 is not None
                             else "paired_t" if ps.ci_low is not None else None),
        "paired_df": ps.df_cr2 if ps.ci_low_cr2 is not None else ps.df,
        "paired_cr1_ci_low": ps.ci_low_clustered, "paired_cr1_ci_high": ps.ci_high_clustered,
        "paired_boot_low": None, "paired_boot_high": None,
        "matched": ps.n,
        "unmatched_a": va.select(key).unique().join(matched_keys, on=key, how="anti").height,
        "unmatched_b": vb.select(key).unique().join(matched_keys, on=key, how="anti").height,
        "loo_min": loo_min, "loo_max": loo_max,
        "pairing_correlation": power["rho_pearson"], "pairing_spearman": power["rho_spearman"],
        "design_effect": power["deff"], "sd": power["sd"], "n_needed_paired": power["paired"],
        "mde": stats.mde(d2.se, d2.df, cfg.alpha, cfg.power) if d2.se is not None else None,
        # the same for the paired estimate: its clustered SE already carries the pairing
        # correlation and the clustering of matched units within scenarios
        "mde_paired": (stats.mde(ps.se_cr2, ps.df_cr2, cfg.alpha, cfg.power)
                       if ps.se_cr2 is not None else None),
        "target_effect": cfg.target_effect, "n_needed": n_need,
        "n_needed_assumes": ("valid n per side (pairs when n_needed_paired) with the extra values as "
                             "independent as new scenarios at the current design effect; more trials "
                             "on the same scenarios do not deliver it: see scenarios_needed"),
        "power_now": plan["power_now"], "scenarios_needed": plan["scenarios_needed"],
        "trials_per_scenario": t0 or None, "trials_needed": plan["trials_needed"],
        "trials_ceiling_power": plan["trials_ceiling_power"], "power_monotone": plan["power_monotone"],
        "power_statement": plan["statement"],
        "between_scenario_var": bv, "within_scenario_var": wv,
    }
    boot = joint if joint is not None else JointBootstrap.for_rows(rows, cfg)
    where = f"{a}-{b}/{fld}/{subset or ''}/{judge or ''}"
    if xa.size and xb.size:
        boot.request(rec, boot.add_values(ca, xa), boot.add_values(cb, xb), where="contrast:" + where)
    if ps.n:
        boot.request(rec, boot.add_values(m_cl, m["diff"].to_numpy()),
                     keys=("paired_boot_low", "paired_boot_high"), where="contrast_paired:" + where)
    if joint is None:
        boot.run()
    return rec


def repetition_consistency(rows: pl.DataFrame, cfg: Config) -> dict[str, Any]:
    """Trials within scenario: ICC per variant, and how often single-trial rankings disagree.

    ``per_variant``: ICC(1) of valid headline values with the (scenario, judge) pair as the
    cluster, i.e. agreement of repeated trials of the same item. ``slices``: for each trial
    number, the variant ranking using only that trial; ``inversions`` counts slices whose
    ranking differs from the ranking on all trials (variants with a mean in every slice only).
    """
    fld = cfg.headline
    v = _valid(rows, fld)
    per_variant = []
    for (variant,), g in sorted(v.partition_by(["variant"], as_dict=True).items()):
        trials = g["trial"].n_unique()
        icc = None
        if trials > 1:
            # in a canonical order (cluster label, trial, value): the ICC's float sums must
            # not depend on the order of the input lines
            g = (g.with_columns((pl.col("scenario") + "\x1f" + pl.col("judge")).alias("__cluster"))
                 .sort(["__cluster", "trial", fld], maintain_order=True))
            icc = stats.icc_oneway(g[fld].to_numpy(), g["__cluster"].to_numpy())
        per_variant.append({"variant": variant, "trials": int(trials), "icc_trials": icc})
    trial_ids = sorted(v["trial"].unique().to_list())
    overall = v.group_by("variant").agg(pl.col(fld).mean().alias("m"))
    slices = []
    if len(trial_ids) > 1:
        per_slice = {t: dict(v.filter(pl.col("trial") == t).group_by("variant").agg(pl.col(fld).mean())
                             .iter_rows()) for t in trial_ids}
        common = sorted(set.intersection(*(set(d) for d in per_slice.values())))
        base = dict(overall.iter_rows())
        ref = sorted(common, key=lambda x: (-base[x], x))
        for t in trial_ids:
            order = sorted(common, key=lambda x: (-per_slice[t][x], x))
            slices.append({"trial": t, "ranking": order, "differs": order != ref})
    return {"per_variant": per_variant, "reference_ranking": ref if slices else None,
            "slices": slices, "inversions": sum(s["differs"] for s in slices), "n_slices": len(slices),
            "order_statistic_n_95_95": stats.order_statistic_n(0.95, 0.95)}
