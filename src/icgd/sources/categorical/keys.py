"""The result keys the claims of source 002 read (`icgd.sources.categorical.claims`), as named constants: `{kernel}`,
`{heads}`, `{n}` and the like are filled by `.format`."""

GD_MSE = "{kernel}.gd_mse"
TF_MSE = "{kernel}.tf_mse_median"
TF_OVER_GD = "{kernel}.tf_over_gd_median"
SENS_COS = "{kernel}.sensitivity_cosine_median"  # {kernel}: the kernel, or kernel_h2 for 2 heads
SENS_COS_SEEDS = "{kernel}.sensitivity_cosine_seeds"
SENS_COS_UNTRAINED = "{kernel}.untrained_sensitivity_cosine_median"
PRED_DIFF = "{kernel}.prediction_difference_median"
PRED_DIFF_SEEDS = "{kernel}.prediction_difference_seeds"
PRED_DIFF_UNTRAINED = "{kernel}.untrained_prediction_difference_median"
TF_DIVERGED = "{kernel}.tf_diverged_seeds"  # the seeds train batched: a divergence stops them all, all count
PRIOR_MSE = "prior_mse"
HEADS_TF_MSE = "heads{heads}.tf_mse_median"
HEADS_MAX_CHANGE = "heads.max_relative_change"
HEADS_MAX_OVER_GD = "heads.max_abs_tf_over_gd_minus_1"
CONTEXT_MSE = "{model}.n{n}.mse"  # model: softmax_gd, softmax_tf, rbf_gd_fixed, rbf_gd_rescaled, ...
CONTEXT_MAX_RATIO = "{model}.max_consecutive_ratio"
CONTEXT_FIXED_OVER_RESCALED = "rbf_gd.fixed_over_rescaled_at_largest_n"
CONTEXT_TF_OVER_GD_MAX = "softmax.max_abs_tf_over_gd_minus_1"
CONTEXT_TF_OVER_GD_MAX_SEEDS = "softmax.max_abs_tf_over_gd_minus_1_seeds"
CONTEXT_INVARIANCE = "{model}.max_abs_unchanged_over_retrained_minus_1"  # trained at N = 20 vs trained at N'
CONTEXT_UNCHANGED_OVER_RETRAINED = "{model}.unchanged_over_retrained_at_largest_n"
CONTEXT_RETRAINED_LARGEST_N = "retrained.largest_n"  # the largest N the GD models are retrained at (quick 40)
DEPTH_UNSTABLE = "{kernel}.unstable_runs"
DEPTH_UNSTABLE_FRACTION = "{kernel}.l{layers}.unstable_fraction"
DEPTH_GD_MSE = "softmax_gd.l{layers}.mse"
DEPTH_GD_MAX_CHANGE = "softmax_gd.max_abs_relative_change_with_depth"
DEPTH_RUNS = "{kernel}.runs"
FEWSHOT_ACCURACY = "{kernel}.final_accuracy_median"
FEWSHOT_ACCURACY_SEEDS = "{kernel}.final_accuracy_splits"
FEWSHOT_UNTRAINED = "{kernel}.untrained_accuracy_median"
FEWSHOT_UNTRAINED_SEEDS = "{kernel}.untrained_accuracy_splits"
FEWSHOT_TUNED = "{kernel}.grid_tuned_accuracy_median"
FEWSHOT_TUNED_SEEDS = "{kernel}.grid_tuned_accuracy_splits"
FEWSHOT_SPREAD = "{kernel}.final_accuracy_spread"
FEWSHOT_TOP_PROBABILITY = "{kernel}.final_top_probability_median"  # the most probable label's predicted
FEWSHOT_TOP_PROBABILITY_SEEDS = "{kernel}.final_top_probability_splits"  # probability, mean over queries
FEWSHOT_STEPS_95 = "{kernel}.steps_to_95pct_median"
FEWSHOT_STEPS_95_SEEDS = "{kernel}.steps_to_95pct_splits"
FEWSHOT_RESOLUTION = "steps_to_95pct_resolution"  # the early curve's spacing: the first step it can show
TEMPLATE_GD_MSE = "{template}.{kernel}.gd_mse"
TEMPLATE_NONLINEAR_OVER_LINEAR = "{template}.nonlinear_over_linear_max"
