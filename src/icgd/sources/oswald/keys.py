"""The result keys the claims of source 000 read (`icgd.sources.oswald.claims`), as named constants: `{tag}`,
`{measure}` and the like are filled by `.format`."""

# ---- the linear study
GAP_MAX = "{tag}.relative_gap_max"  # oswald-1layer, tag a1 or a0.5
INTERPOLATED_FINAL_GAP = "{tag}.interpolated_final_gap_max"
COSINE_MIN = "{tag}.sensitivity_cosine_min"
KQ_ERROR_MEDIAN = "{tag}.kq_relative_error_median"
INTERPOLATION_MAX_INCREASE = "max_relative_increase"  # oswald-interpolation
OOD_MAX_DEVIATION = "max_relative_deviation_alpha_le_1_5"  # oswald-ood
OOD_OTHER_LAWS = "ood_other_laws_max_relative_deviation_alpha_le_1_5"  # the code's "other laws" columns
REPEAT_RATIO_WORST = "{key}.tf_final_over_first_worst_seed"  # oswald-repeat, key lambda_0_7 etc.
REPEAT_SWEEP_GAP = "sweep.y_only.max_relative_tf_gd_gap"
REPEAT_SWEEP_LOWERING = "sweep.y_only.fraction_of_lambdas_lowering"
REPEAT_Y_RATIO_MEDIAN = "{key}.y_only.tf_final_over_first_median"  # the official code's y-only roll-out
OOD_INTERP_MAX_DEVIATION = "max_relative_deviation_interpolated_alpha_le_1_5"
OOD_GD_DEGRADES = "gd_over_zero_input_scale_2_over_1"
DEEP_MEDIAN = "{tag}.{measure}_median"  # oswald-deep, tag rec2 or five; measure tf_loss, pd_gd, pd_gdpp, ...
DEEP_GD_LOSS = "{tag}.gd_loss"
DEEP_TF_PER_SEED = "{tag}.tf_loss_per_seed"  # oswald-deep: every seed's held-out loss, in seed order
# oswald-deep: a paired bootstrap over the held-out tasks, the median seed's loss and the claims' GD++'s per resample
DEEP_TF_MEDIAN_BOOT = "{tag}.tf_loss_median_boot"
DEEP_BOOT = "{key}_boot"  # of a reference's loss key, e.g. five.gdpp_loss_boot
DEEP_OOD = "{tag}.ood_max_relative_deviation_vs_gdpp_alpha_le_1_5"  # A2_FAMILIES, median seed
DEEP_OOD_ALL = "{tag}.ood_max_relative_deviation_vs_gdpp_alpha_le_1_5_all_families"
# A2_FAMILIES at the alphas where GD++ beats the zero predictor (None: at none), and the alphas left out
DEEP_OOD_LEARNT = "{tag}.ood_max_relative_deviation_vs_gdpp_alpha_le_1_5_where_gdpp_learns"
DEEP_OOD_LEFT_OUT = "{tag}.ood_alphas_left_out_gdpp_diverges"
REC2_INTERPOLATION = "rec2.interpolation_to_gdpp_max_increase_median"
REC2_INTERPOLATION_WORST = "rec2.interpolation_to_gdpp_max_increase_worst_seed"
FIVE_INTERPOLATION = "five.interpolation_to_gdpp_max_increase_median"
GAMMA_DERIVED_OVER_TF = "gamma_derived_over_gamma_tf"  # oswald-curvature
GROKKING_SEEDS = "grokking.seeds"  # oswald-fixed-data
LN_OOD = "layernorm.ood_loss_over_lsa_at_alpha_2_max"  # oswald-softmax
LN2_OOD = "layernorm-between.ood_ratio_at_alpha_2_max"
LN2_LOSS_OVER_GDPP = "layernorm-between.loss_over_gdpp_median"
DEPTH_MAX_TF_OVER_GD = "max_tf_over_gd_depths_2_4"  # oswald-depth
DEPTH_MAX_PD_RATIO = "max_pd_gdpp_over_pd_gd"
DEPTH_OOD_MAX = "ood_max_relative_deviation_vs_gdpp_alpha_le_1_5"
DEPTH_OOD_LEARNT_MAX = "ood_max_relative_deviation_vs_gdpp_alpha_le_1_5_where_gdpp_learns"  # None: nowhere
KAPPA_RATIO = "median_kappa_ratio_at_gamma_tf"  # oswald-curvature
GAMMA_TIMES_LAMBDA_MAX = "gamma_tf_times_lambda_max_p99"
N_SWEEP_GAMMA_TIMES_LAMBDA_MAX = "n_sweep.max_gamma_times_lambda_max_p99"
N_SWEEP_KAPPA_RATIO = "n_sweep.max_median_kappa_ratio"
KAPPA_EXPLODES = "n_sweep.min_kappa_p90_at_gamma_0_2_over_0"
SOFTMAX_LOSS_OVER_GD = "{variant}.loss_over_gd_median"  # oswald-softmax: softmax1, softmax2, layernorm
SOFTMAX_HEADS_CANCEL = "softmax2.offdiagonal_sum_over_heads_median"
SOFTMAX_LR_SPREAD = "softmax1.loss_over_gd_max_over_min_across_lr"
SOFTMAX_BEST_LR = "softmax1.loss_over_gd_best_lr"
LN_HEADS_CHANGE = "layernorm.two_heads_relative_change"
SLOWEST_TRANSITION = "h{heads}.slowest_transition"  # oswald-phase
TRANSITION_SPREAD = "h{heads}.slowest_over_fastest_transition"
FIXED_LOSS_OVER_GD = "size_{size}.loss_over_gd_median"  # oswald-fixed-data
FIXED_MIN_COSINE = "min_cosine_median_size_ge_512"

# ---- the sine and copy studies
SINE_MEDIAN = "{measure}_median"  # oswald-sine: tf_loss, initial_function_distance, final_function_distance, ...
SINE_LOSS_RATIO_MAX = "loss_ratio_max"
SINE_TF_OVER_CONTROL = "tf_over_control_loss_{stat}"  # median or max over seeds
SINE_PD_OVER_CONTROL_ERROR = "pd_over_control_error_median"  # |y_TF - y_control| / |y_control - y|, median seed
SINE_PARTIAL_COSINE_FINAL = "partial_cosine_final_median"  # Fig. 4 middle's last point, median seed
SINE_SEEDS = "{measure}_seeds"  # oswald-sine: the same measures seed by seed (the claims' sign test; `seeds_key`)
ZERO_LOSS = "zero_loss"  # oswald-sine and oswald-copy
COPY_LOSS_OVER_GD1 = "{first}.loss_over_gd1_median"  # oswald-copy, first softmax or linear
COPY_NEIGHBOUR_RATIO = "{first}.neighbour_over_others_final_median"
COPY_GRADIENT_FIRST = "softmax.grad_before_loss_ratio_median"  # halfway up / halfway down
COPY_ONSET_FIRST = "softmax.grad_onset_over_loss_halfway_median"  # neighbour / others >= 3 / halfway down
COPY_SPEED_SPREAD = "softmax.slowest_over_fastest_loss_halfway"
COPY_OWN_KEPT = "softmax.code_self_change_median"  # |own-token gradient final / initial - 1|, the code's measure
COPY_OTHERS_PEAK = "softmax.code_others_over_self_peak_median"  # largest others / own over training
COPY_CODE_NEIGHBOUR_RATIO = "softmax.code_neighbour_over_others_final_median"  # the code's measure, final


def seeds_key(median_key: str) -> str:
    """Where a median over seeds keeps its seeds' values, the claims' sign test: `x_median` -> `x_seeds`
    (SINE_MEDIAN's measures and SINE_SEEDS follow the same rule)."""
    if not median_key.endswith("_median"):
        raise ValueError(f"not a median's key: {median_key!r}")
    return median_key.removesuffix("_median") + "_seeds"
