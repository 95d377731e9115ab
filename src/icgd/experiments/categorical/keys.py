"""The result keys the claims of source 002 read (`icgd.claims.categorical`), as named constants: `{kernel}`,
`{heads}`, `{n}` and the like are filled by `.format`."""

GD_MSE = "{kernel}.gd_mse"
TF_MSE = "{kernel}.tf_mse_median"
TF_OVER_GD = "{kernel}.tf_over_gd_median"
TF_DIVERGED = "{kernel}.tf_diverged_seeds"  # the seeds train batched: a divergence stops them all, all count
PRIOR_MSE = "prior_mse"
HEADS_TF_MSE = "heads{heads}.tf_mse_median"
HEADS_MAX_CHANGE = "heads.max_relative_change"
HEADS_MAX_OVER_GD = "heads.max_abs_tf_over_gd_minus_1"
CONTEXT_MSE = "{model}.n{n}.mse"  # model: softmax_gd, softmax_tf, rbf_gd_fixed, rbf_gd_rescaled, ...
CONTEXT_MAX_RATIO = "{model}.max_consecutive_ratio"
CONTEXT_FIXED_OVER_RESCALED = "rbf_gd.fixed_over_rescaled_at_largest_n"
CONTEXT_TF_OVER_GD_MAX = "softmax.max_abs_tf_over_gd_minus_1"
DEPTH_UNSTABLE = "{kernel}.unstable_runs"
DEPTH_RUNS = "{kernel}.runs"
FEWSHOT_ACCURACY = "{kernel}.final_accuracy_median"
FEWSHOT_SPREAD = "{kernel}.final_accuracy_spread"
FEWSHOT_STEPS_95 = "{kernel}.steps_to_95pct_median"
