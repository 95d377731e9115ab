"""The result keys the claims of source 001 read (`icgd.sources.blog.claims`), as named constants: `{tag}`,
`{key}` and the like are filled by `.format`."""

ETA_MAX_DIFFERENCE = "{tag}.max_relative_difference"  # blog-eta, tag a1 or a0.5
ETA_SPEEDUP = "{tag}.speedup"
TF_ETA_ERROR = "{tag}.tf_eta_relative_error_median"
ETA_OFF_GAP = "{tag}.gd_eta_halved_or_doubled_over_tf_min"
DAMPING_MEDIAN = "{key}.{measure}_median"  # blog-dampening, key lambda_0_7 or lambda_1
LSTM_BEST_COSINE_OVER_LSA = "lstm.best_cosine_over_lsa"  # blog-lstm
BILSTM_COSINE_GAIN = "bilstm.cosine_gain_deepest_vs_1"
BILSTM_OVER_LSTM = "bilstm_over_lstm.max_loss_ratio_depth_ge_2"
BEST_LSTM_OVER_LSA = "best_lstm_loss_over_lsa"  # best of the LSTMs and BiLSTMs
BEST_UNI_LSTM_OVER_LSA = "best_unidirectional_lstm_loss_over_lsa"
BILSTM_GAIN_DEEPEST_OVER_1 = "bilstm_over_lstm.deepest_over_1_layer"
BILSTM_COSINE_GAIN_FROM_2 = "bilstm.cosine_gain_deepest_vs_2"
BILSTM_BEST_COSINE = "bilstm.best_cosine"
LSTM_SEEDS = "{model}.{measure}_seeds"  # every seed's value, in seed order (model lsa-1, lstm-K, bilstm-K)
LSTM_DEPTHS = "depths"
RATIO_CONTEXT = "max_consecutive_ratio_context"  # blog-scaling
RATIO_DEPTH = "max_consecutive_ratio_depth"
TF_GD_GAP_ACROSS_N = "max_relative_gap_tf_gd_over_context_sizes"
TF_OVER_ZERO_N10 = "n10.tf_over_zero_loss"
