"""Statistics for the workbench: the single home for every estimator.

Depends only on numpy, scipy, the ``krippendorff`` package and ``threadpoolctl`` (one BLAS
thread, so that no result depends on the number of cores: :func:`one_blas_thread`).

Conventions used throughout
---------------------------
* Inputs are 1-D arrays.  ``values`` are floats (bools/ints accepted and cast to
  float); a NaN or infinite entry raises ``ValueError`` -- callers pass only valid
  values, and nothing here ever fills a missing value with a number.
* ``clusters`` are labels of any hashable type (one per value), coded with
  ``np.unique(..., return_inverse=True)``.  A missing label (``None`` or NaN)
  raises ``ValueError``.
* Undefined results are Python ``None`` -- never 0 and never NaN.  Returned
  scalars are plain Python ``float``/``int``.
* Every random draw takes an ``int`` seed and uses ``numpy.random.default_rng``;
  the global RNG is never touched.  Results are deterministic for fixed inputs
  and seed.
* Units: estimates, standard errors and interval bounds are in the units of the
  input values (e.g. judge score points); p-values and proportions are in [0, 1].
"""

from __future__ import annotations

from workbench.stats.agreement import (  # noqa: F401
    _average_ranks,
    _krippendorff_two_raters,
    _unique_inverse,
    average_ranks,
    exact_agreement,
    kappa_quadratic,
    krippendorff_alpha,
    small_integers,
    spearman,
    spearman_ranked,
    within_one,
)
from workbench.stats.base import (  # noqa: F401
    _CHUNK_CELLS,
    CellStats,
    DiffStats,
    PairedStats,
    TestResult,
    _any_missing_label,
    _as_text,
    _check_confidence,
    _check_resamples,
    _chunks,
    _codes,
    _dense_int_codes,
    _f,
    _flush,
    _is_missing_label,
    _labels,
    _norm_ppf,
    _pair,
    _percentile_interval,
    _t_ppf,
    _values,
    derive_seed,
    one_blas_thread,
)
from workbench.stats.bootstrap import (  # noqa: F401
    _JOINT_BLOCK_CELLS,
    JOINT_BOOTSTRAP_METHOD,
    JOINT_SEED_BLOCK,
    joint_bootstrap_means,
    joint_bootstrap_weights,
    joint_percentile,
)
from workbench.stats.components import (  # noqa: F401
    SideComponents,
    _between_within,
    combine_variance_components,
    combine_variance_components_clustered,
    contrast_variance_components,
    side_variance_components,
)
from workbench.stats.contingency import (  # noqa: F401
    _chi2_stat,
    contingency_test,
    fisher_exact_2x2,
    leave_one_cluster_out_diff,
)
from workbench.stats.cr2 import (  # noqa: F401
    CR2_METHOD,
    PPI_METHOD,
    ClusterInference,
    _cr2_groups,
    _cr2_result,
    cluster_mean_cr2,
    diff_cr2,
    diff_cr2_sides,
    ppi_mean_cr2,
)
from workbench.stats.differences import (  # noqa: F401
    ClusterSide,
    _shared_codes,
    cluster_bootstrap_diff,
    cluster_side,
    diff_clustered,
    diff_clustered_sides,
    leave_one_cluster_out_sides,
)
from workbench.stats.means import (  # noqa: F401
    _NO_CR2,
    _cell_clustered,
    _clustered_se_codes,
    _cr1_from_sums,
    _icc_codes,
    _resid_sums,
    cell_summary,
    cell_summary_sorted,
    cluster_bootstrap_mean,
    clustered_se,
    cr2_mean_from_sums,
    design_effect,
    icc_oneway,
    mean_se,
    t_interval,
    wilson_interval,
)
from workbench.stats.multiplicity import (  # noqa: F401
    holm,
    holm_stepdown_levels,
)
from workbench.stats.paired import (  # noqa: F401
    _WILCOXON_ENUMERATE,
    diff_counts,
    paired_summary,
    wilcoxon_p,
)
from workbench.stats.passk import (  # noqa: F401
    PASS_K_DF_MULTIPLE,
    PASS_K_METHOD,
    PASS_K_METHODS,
    PassKInterval,
    pass_hat_k,
    pass_k_interval,
)
from workbench.stats.permutation import (  # noqa: F401
    _PLUS_MINUS,
    PERMUTATION_ENUMERATION_LIMIT,
    PERMUTATION_EXACT_BUDGET,
    PERMUTATION_MIN_BLOCKS,
    SIGN_FLIP_ASYMPTOTIC_CLUSTERS,
    SIGN_FLIP_ASYMPTOTIC_SHARE,
    _block_exceed,
    _block_permutation_asymptotic,
    _block_permutation_moments,
    _cluster_sums,
    _CoinFlips,
    _integral,
    _multiset_permutations,
    _pearson_rows,
    _permutation_inputs,
    _sign_flip_monte_carlo,
    _sign_flip_normal_p,
    block_permutation_asymptotic,
    block_permutation_enumerated,
    block_permutation_min_p,
    block_permutation_test,
    sign_flip,
    sign_flip_asymptotic,
    sign_flip_test,
)
from workbench.stats.power import (  # noqa: F401
    _check_alpha_power,
    _monotone_visits,
    cluster_power_plan,
    mde,
    n_needed,
    order_statistic_n,
    power_t,
)
from workbench.stats.proportions import (  # noqa: F401
    ClusteredProportion,
    _cluster_counts,
    _wilson_real,
    clustered_proportion,
    clustered_proportion_detail,
    pooled_design_effect,
    proportion_design_effect,
)

__all__ = [
    "CellStats",
    "DiffStats",
    "PairedStats",
    "TestResult",
    "wilson_interval",
    "mean_se",
    "clustered_se",
    "t_interval",
    "cell_summary",
    "cell_summary_sorted",
    "cluster_bootstrap_mean",
    "icc_oneway",
    "design_effect",
    "diff_clustered",
    "ClusterInference",
    "CR2_METHOD",
    "cluster_mean_cr2",
    "cr2_mean_from_sums",
    "diff_cr2",
    "diff_cr2_sides",
    "cluster_side",
    "ClusterSide",
    "diff_clustered_sides",
    "cluster_bootstrap_diff",
    "paired_summary",
    "diff_counts",
    "exact_agreement",
    "within_one",
    "kappa_quadratic",
    "krippendorff_alpha",
    "spearman",
    "holm",
    "holm_stepdown_levels",
    "mde",
    "n_needed",
    "order_statistic_n",
    "contingency_test",
    "fisher_exact_2x2",
    "leave_one_cluster_out_diff",
    "derive_seed",
    "clustered_proportion",
    "clustered_proportion_detail",
    "ClusteredProportion",
    "pooled_design_effect",
    "proportion_design_effect",
    "combine_variance_components_clustered",
    "block_permutation_test",
    "block_permutation_asymptotic",
    "PERMUTATION_EXACT_BUDGET",
    "PERMUTATION_MIN_BLOCKS",
    "PERMUTATION_ENUMERATION_LIMIT",
    "block_permutation_enumerated",
    "block_permutation_min_p",
    "sign_flip_test",
    "sign_flip",
    "sign_flip_asymptotic",
    "SIGN_FLIP_ASYMPTOTIC_CLUSTERS",
    "SIGN_FLIP_ASYMPTOTIC_SHARE",
    "power_t",
    "cluster_power_plan",
    "pass_hat_k",
    "pass_k_interval",
    "PassKInterval",
    "PASS_K_METHOD",
    "PASS_K_METHODS",
    "contrast_variance_components",
    "joint_bootstrap_weights",
    "joint_bootstrap_means",
    "joint_percentile",
]
