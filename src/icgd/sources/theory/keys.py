"""The result keys that the claims of the theory suite read (`icgd.sources.theory.claims`)."""

#: theory-preconditioner: each seed's relative Frobenius distance ||P_trained - P*|| / ||P*||, and the median
PRECOND_DISTANCE_SEEDS = "distance_seeds"
PRECOND_DISTANCE_MEDIAN = "distance_median"
#: theory-preconditioner: each seed's loss over the closed form's minus 1, on the same held-out tasks, and the median
PRECOND_GAP_SEEDS = "loss_gap_seeds"
PRECOND_GAP_MEDIAN = "loss_gap_median"
#: theory-noise: each seed's relative distance to P* with the noise term
NOISE_DISTANCE_SEEDS = "distance_seeds"
#: every experiment: each seed's held-out loss over the zero predictor's (the premise: the model learnt)
LEARNT_SEEDS = "loss_over_zero_seeds"

#: theory-isotropic: each seed's largest distance ||P_trained - s I|| / ||s I||, s = N / (N + d + 1), over the
#: (N, d) settings, and the median over seeds
ISO_DISTANCE_SEEDS = "distance_seeds"
ISO_DISTANCE_MEDIAN = "distance_median"

#: theory-nonlinear: each seed's |loss / (one tuned GD step's loss) - 1|, and the median
NONLIN_GAP_SEEDS = "gd_gap_seeds"
NONLIN_GAP_MEDIAN = "gd_gap_median"
#: theory-nonlinear: each seed's distance ||P_trained - eta I|| / ||eta I|| to the tuned GD step, and the median
NONLIN_DISTANCE_SEEDS = "gd_distance_seeds"
NONLIN_DISTANCE_MEDIAN = "gd_distance_median"

#: theory-ridge: at the deepest model with noise, each seed's SPD(model, Bayes ridge) / SPD(model, GD with as many
#: steps as layers), and at one layer with noise the same ratio (SPD: mean squared prediction difference over
#: the mean squared target)
RIDGE_RATIO_DEEP_SEEDS = "ridge_over_gd_deep_noisy_seeds"
RIDGE_RATIO_SHALLOW_SEEDS = "ridge_over_gd_one_layer_noisy_seeds"
#: theory-ridge: each seed's held-out loss over the zero predictor's, worst over the models a claim reads
RIDGE_LEARNT_DEEP_SEEDS = "loss_over_zero_deep_noisy_seeds"
RIDGE_LEARNT_SHALLOW_SEEDS = "loss_over_zero_one_layer_noisy_seeds"

#: theory-probes: for each (probe, target) -- probes "linear" and "mlp", targets "xty" (X^T Y) and "w_ols" --
#: each seed's best-layer R^2 of the trained model minus the better of the two controls' (untrained model,
#: fixed-teacher task)
PROBE_MARGIN_SEEDS = {(p, t): f"margin_{p}_{t}_seeds" for p in ("linear", "mlp") for t in ("xty", "w_ols")}
