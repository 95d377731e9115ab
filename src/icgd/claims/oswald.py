"""Claims of von Oswald et al. 2023 (source 000), with the tolerance of each: the linear study (suite
`oswald`), the sine study in the official code's set-up (`oswald-nonlinear`, the default) and the paper
text's (`oswald-sine-text`), and the copy study (`oswald-copy`)."""

from __future__ import annotations

from icgd.claims.base import Claim, suite
from icgd.experiments.oswald import keys as X

ONE = "oswald-1layer"
DEEP = "oswald-deep"
REPEAT = "oswald-repeat"
SOFTMAX = "oswald-softmax"
FIXED = "oswald-fixed-data"
SINE = "oswald-sine"
SINE_CODE = "oswald-sine-code"
COPY = "oswald-copy"


def _loss_match_per_seed(r: dict, tag: str, ref_key: str) -> list[float]:
    """|TF / GD++ - 1| seed by seed (none in results written before the seeds' losses were kept)."""
    return [abs(t / r[DEEP][ref_key] - 1) for t in r[DEEP].get(X.DEEP_TF_PER_SEED.format(tag=tag), [])]


def _loss_match_replicates(r: dict, tag: str, ref_key: str) -> list[dict]:
    """The paired bootstrap over held-out tasks as results the loss-match measure reads: the median seed's
    loss and GD++'s per resample (a KeyError, so no interval, in results written before it was kept)."""
    med = X.DEEP_MEDIAN.format(tag=tag, measure="tf_loss")
    return [{DEEP: {med: a, ref_key: b}} for a, b in zip(r[DEEP][X.DEEP_TF_MEDIAN_BOOT.format(tag=tag)],
                                                          r[DEEP][X.DEEP_BOOT.format(key=ref_key)])]


@suite("oswald")
def claims() -> list[Claim]:
    return [
        Claim("1layer-loss", "trained 1-layer LSA loss within 1% of tuned one-step GD (x ~ U(-1, 1))",
              "Fig. 2", ONE, lambda r: r[ONE][X.GAP_MAX.format(tag="a1")], "<", 0.01,
              "the paper's curves overlap; 1% is the issue's tolerance; worst seed"),
        Claim("1layer-loss-code-range", "the same with the official code's inputs x ~ U(-0.5, 0.5)",
              "Fig. 2", ONE, lambda r: r[ONE][X.GAP_MAX.format(tag="a0.5")], "<", 0.01, "as above"),
        Claim("1layer-interpolated-over-training", "the interpolated model (midpoint of the GD construction and the "
              "rescaled trained layer) ends training within 1% of one GD step (x ~ U(-1, 1))", "Fig. 2 left", ONE,
              lambda r: r[ONE][X.INTERPOLATED_FINAL_GAP.format(tag="a1")], "<", 0.01,
              "as 1layer-loss: the figure's interpolated curve lies on GD's line; worst seed at the last evaluation"),
        Claim("1layer-cosine", "sensitivity cosine between trained LSA and GD > 0.99", "Fig. 2", ONE,
              lambda r: r[ONE][X.COSINE_MIN.format(tag="a1")], ">", 0.99,
              "the paper's Fig. 2 shows cosine reaching about 1; worst seed"),
        Claim("1layer-weights", "rescaled trained W_K^T W_Q equals the construction (relative error)",
              "Fig. 9", ONE, lambda r: r[ONE][X.KQ_ERROR_MEDIAN.format(tag="a1")], "<", 0.1,
              "Fig. 9 shows matching matrices up to small off-diagonal noise; 10% Frobenius error"),
        Claim("1layer-prediction-difference", "the prediction difference between trained LSA and GD is about 0 "
              "(mean |y_TF - y_GD| / GD's RMS error)", "Fig. 2", ONE,
              lambda r: r[ONE]["a1.prediction_difference_max"] / (2 * r[ONE]["a1.gd_loss"]) ** 0.5, "<", 0.1,
              "an order of magnitude below GD's own error; worst seed"),
        Claim("1layer-sensitivity-l2", "the L2 distance between the sensitivities of trained LSA and GD is about 0 "
              "(relative to the norm of GD's sensitivity)", "Fig. 2", ONE,
              lambda r: r[ONE]["a1.sensitivity_l2_max_over_gd_norm"], "<", 0.1,
              "as 1layer-prediction-difference: an order of magnitude below the quantity compared; worst seed"),
        Claim("1layer-pv-weights", "rescaled trained P W_V equals the construction, every row (relative error "
              "of the whole matrix)", "Fig. 9", ONE, lambda r: r[ONE]["a1.pv_matrix_relative_error_median"], "<", 0.1,
              "as 1layer-weights; Fig. 9 shows the whole P W_V, whose x rows the construction sets to 0 (a layer "
              "that moves x as well is not the construction, and its repeated application drifts: A.6). Before "
              "issue 33 this read the y row only, which such a layer passes"),
        Claim("interpolation", "the interpolation path stays within 1% of GD loss", "A.3, Fig. 2",
              "oswald-interpolation", lambda r: r["oswald-interpolation"][X.INTERPOLATION_MAX_INCREASE], "<", 0.01,
              "the paper reports no loss increase along the path; 1% allows evaluation noise"),
        Claim("ood", "TF loss equals GD loss out of distribution (alpha <= 1.5, Fig. 6's four columns)",
              "Fig. 2, Fig. 6", "oswald-ood", lambda r: r["oswald-ood"][X.OOD_MAX_DEVIATION],
              "<", 0.1, "curves overlap on log axes spanning two orders of magnitude; 10% relative"),
        Claim("ood-other-laws", "TF loss equals GD loss on input laws never seen in training (one of exponential, "
              "normal and Laplace per task, normalised as the authors' code does; input or teacher scaled, alpha <= "
              "1.5)", "Fig. 6, A.4", "oswald-ood", lambda r: r["oswald-ood"][X.OOD_OTHER_LAWS], "<", 0.1,
              "A.4: on these laws 'almost identical behavior' for recurrent (and 1-layer) models; the 10% of ood; "
              "seed mean, as ood"),
        Claim("ood-interpolated", "the interpolated model equals GD out of distribution as well (alpha <= 1.5)",
              "Fig. 2, Fig. 6", "oswald-ood", lambda r: r["oswald-ood"][X.OOD_INTERP_MAX_DEVIATION], "<", 0.1,
              "as ood"),
        Claim("ood-gd-degrades", "GD's own loss degrades quickly for larger inputs (GD / zero-predictor loss at "
              "input scale 2 over the same at 1)", "sec. 3", "oswald-ood",
              lambda r: r["oswald-ood"][X.OOD_GD_DEGRADES], ">", 2.0,
              "sec. 3: the eta tuned for the training range leads to 'a drastic increase in loss also for GD' on "
              "larger inputs; relative to the zero predictor, which grows with the targets; more than double"),
        Claim("repeat-0.75", "with dampening 0.75, 50 applications keep lowering the loss (the official code's "
              "roll-out: only the y channels move; every task counted)", "Fig. 1, A.6", "oswald-repeat",
              lambda r: r[REPEAT][X.REPEAT_Y_RATIO_MEDIAN.format(key="lambda_0_75")], "<", 1.0,
              "the official code repeats the layer with y_update=True and plots one seed's mean over all tasks "
              "(docs/reproduction-notes.md); median seed"),
        Claim("repeat-0.75-follows-gd", "with dampening 0.75 the roll-out follows GD with eta * 0.75 (largest "
              "|TF/GD - 1| of the mean loss over the 50 applications; only y moves)", "Fig. 1, A.6", "oswald-repeat",
              lambda r: r[REPEAT]["lambda_0_75.y_only.max_relative_tf_gd_difference"], "<", 0.1,
              "'an identical loss decrease of both GD and the Transformer': the 10% of the 'curves overlap' "
              "claims; mean over the tasks that stay finite, median seed per step"),
        Claim("repeat-0.75-all-tokens", "the same when every channel of the tokens moves, worst seed",
              "Fig. 1, A.6", "oswald-repeat",
              lambda r: r[REPEAT][X.REPEAT_RATIO_WORST.format(key="lambda_0_75")], "<", 1.0,
              "the full-token roll-out of source 001, every task counted, worst seed", role="stricter"),
        Claim("repeat-0.7", "with dampening 0.7 (the blog's value), every channel moving, the same holds",
              "source 001", "oswald-repeat",
              lambda r: r[REPEAT][X.REPEAT_RATIO_WORST.format(key="lambda_0_7")], "<", 1.0,
              "every task counted, worst seed (the blog shows one model: its measure is the blog suite's "
              "dampening-lowers-loss, median seed)", role="stricter"),
        Claim("repeat-undamped", "without dampening repeated application diverges", "Fig. 10",
              "oswald-repeat", lambda r: r[REPEAT][X.REPEAT_RATIO_WORST.format(key="lambda_1")], ">", 1.0,
              "loss after 50 applications above the loss after 1"),
        Claim("repeat-undamped-gd", "without dampening GD with the tuned eta diverges as well", "Fig. 10, A.6",
              "oswald-repeat", lambda r: r[REPEAT]["lambda_1.gd_final_over_first"], ">", 1.0,
              "A.6: the undamped roll-out diverges for the TF and for GD alike; loss after 50 steps above after 1"),
        Claim("repeat-sweep-like-gd", "across the dampening sweep (lambda 0.5 to 1) the repeated layer "
              "generalises like GD with eta * lambda (largest |TF/GD - 1| of the loss after 50 / after 1; only y "
              "moves)", "Fig. 10, A.6", "oswald-repeat", lambda r: r[REPEAT][X.REPEAT_SWEEP_GAP], "<", 0.1,
              "'both methods do generalize similarly well (or poorly) ... when changing lambda': every task counted "
              "(a lambda at which only one of them diverges counts as inf, both diverging as 0); the 10% of the "
              "'curves overlap' claims; median seed; the official code's roll-out"),
        Claim("repeat-sweep-not-every-lambda", "repeating the layer lowers the loss only for some dampening "
              "values (fraction of the sweep's lambdas at which the loss after 50 ends below after 1)",
              "source 001, Fig. 10", "oswald-repeat", lambda r: r[REPEAT][X.REPEAT_SWEEP_LOWERING], "<", 1.0,
              "the blog: the layer follows multi-step GD 'for a specific value of the dampening factor'; a "
              "fraction below 1 means some lambda of the sweep fails (repeat-0.75 shows that one works); only y "
              "moves, every task counted, median seed"),
        Claim("rec2-beats-gd", "recurrent 2-layer LSA loss below 2 steps of GD (ratio)", "Fig. 3",
              "oswald-deep", lambda r: r[DEEP][X.DEEP_MEDIAN.format(tag="rec2", measure="tf_loss")] / r[DEEP][X.DEEP_GD_LOSS.format(tag="rec2")],
              "<", 1.0, "median seed (a seed still on its plateau is reported in the tables)"),
        Claim("rec2-matches-gdpp", "recurrent 2-layer matches GD++ (one eta and gamma for both steps) better than "
              "2-step GD (prediction difference to GD++ / to GD)", "Fig. 3", "oswald-deep",
              lambda r: r[DEEP][X.DEEP_MEDIAN.format(tag="rec2", measure="pd_gdpp_shared")] / r[DEEP][X.DEEP_MEDIAN.format(tag="rec2", measure="pd_gd")], "<", 1.0,
              "sec. 3 tunes 'a single parameter' gamma and the official code shares eta and gamma over the "
              "recurrent steps (gd_deq); median seed"),
        Claim("rec2-matches-gdpp-per-step", "the same with GD++ tuned per step (prediction difference to GD++ / to "
              "GD)", "Fig. 3", "oswald-deep",
              lambda r: r[DEEP][X.DEEP_MEDIAN.format(tag="rec2", measure="pd_gdpp")] / r[DEEP][X.DEEP_MEDIAN.format(tag="rec2", measure="pd_gd")], "<", 1.0,
              "this claim's measure before issue 17: a GD++ with more freedom than a recurrent TF; median seed",
              role="stricter"),
        Claim("gdpp-speeds-up", "the data transformation of GD++ speeds up learning: 2-step GD++ / 2-step GD loss",
              "sec. 2, Fig. 3", "oswald-deep", lambda r: r[DEEP]["rec2.gdpp_loss"] / r[DEEP][X.DEEP_GD_LOSS.format(tag="rec2")],
              "<", 0.9, "sec. 2: 'substantial speed ups' for GD and the TF; at least 10% lower loss"),
        Claim("rec2-departs-from-gd", "the recurrent 2-layer LSA aligns better with GD++ than with GD (sensitivity "
              "cosine with GD / with GD++)", "Fig. 3a", "oswald-deep",
              lambda r: r[DEEP][X.DEEP_MEDIAN.format(tag="rec2", measure="cos_gd")]
              / r[DEEP][X.DEEP_MEDIAN.format(tag="rec2", measure="cos_gdpp_shared")], "<", 1.0,
              "Fig. 3a: the alignment with plain GD falls while the model realigns with GD++; median seed"),
        Claim("rec2-realigns-gdpp", "the recurrent 2-layer LSA realigns with GD++ (sensitivity cosine)", "Fig. 3a",
              "oswald-deep", lambda r: r[DEEP][X.DEEP_MEDIAN.format(tag="rec2", measure="cos_gdpp_shared")], ">", 0.99,
              "'realigns perfectly': the bar at which 1layer-cosine calls a cosine about 1; median seed"),
        Claim("rec2-matches-gdpp-loss", "the recurrent 2-layer LSA reaches GD++'s loss (|TF / GD++ - 1|)", "Fig. 3a",
              "oswald-deep", lambda r: abs(r[DEEP][X.DEEP_MEDIAN.format(tag="rec2", measure="tf_loss")]
                                           / r[DEEP]["rec2.gdpp_shared_loss"] - 1), "<", 0.1,
              "the loss curves overlap on a log axis: the 10% of every 'curves overlap' claim here (ood, "
              "dampening-matches-gd); GD++ with one eta and gamma, as the official code; median seed, "
              "inconclusive where the seeds, or the ends of its 95% interval over held-out tasks (paired "
              "bootstrap), fall on both sides of the bar",
              per_seed=lambda r: _loss_match_per_seed(r, "rec2", "rec2.gdpp_shared_loss"),
              replicates=lambda r: _loss_match_replicates(r, "rec2", "rec2.gdpp_shared_loss")),
        Claim("rec2-interpolates-to-gdpp", "the recurrent 2-layer weights interpolate to the GD++ construction "
              "with its gamma without a loss increase (largest loss on the path / larger endpoint - 1)",
              "A.3, Fig. 3", "oswald-deep", lambda r: r[DEEP][X.REC2_INTERPOLATION], "<", 0.01,
              "as interpolation (1%); median seed, as every claim on the deep models (a seed still on its "
              "plateau has no GD++ to interpolate to)"),
        Claim("five-interpolation-fails", "for 5 separate layers the same naive correction does not interpolate "
              "to per-layer GD++ without a loss increase (largest loss on the path / larger endpoint - 1)",
              "sec. 3, A.3", "oswald-deep", lambda r: r[DEEP][X.FIVE_INTERPOLATION], ">", 0.01,
              "'the naive correction ... is not enough to interpolate without a loss increase' ('only for some "
              "seeds' can it): the complement of rec2-interpolates-to-gdpp's 1%; each layer rescaled on its own; "
              "median seed"),
        Claim("rec2-interpolates-to-gdpp-worst-seed", "the same for every seed", "A.3, Fig. 3", "oswald-deep",
              lambda r: r[DEEP][X.REC2_INTERPOLATION_WORST], "<", 0.01, "worst seed", role="stricter"),
        Claim("rec2-ood-matches-gdpp", "out of distribution the recurrent 2-layer LSA equals its GD++ (alpha <= 1.5, "
              "input and teacher scale)", "Fig. 3a, Fig. 6b, A.2", "oswald-deep",
              lambda r: r[DEEP][X.DEEP_OOD.format(tag="rec2")], "<", 0.1,
              "A.2 'almost identical behaviour' for recurrent models, over its two families (input range, "
              "teacher scale): the 10% of ood; median seed"),
        Claim("rec2-ood-matches-gdpp-all-families", "the same over Fig. 6's four columns, the code's other laws "
              "included", "Fig. 6b", "oswald-deep",
              lambda r: r[DEEP][X.DEEP_OOD_ALL.format(tag="rec2")], "<", 0.1,
              "A.4 claims the match on the other laws for recurrent models too; stricter than A.2's two families, "
              "which rec2-ood-matches-gdpp reads; median seed", role="stricter"),
        Claim("rec2-interpolated-ood", "out of distribution the interpolated recurrent model (midpoint of its "
              "trained products and the GD++ construction) equals GD++ too (alpha <= 1.5, input and teacher scale)",
              "Fig. 6b, A.2", "oswald-deep", lambda r: r[DEEP][X.DEEP_OOD.format(tag="rec2-interpolated")], "<", 0.1,
              "Fig. 6b draws the interpolated model beside the recurrent TF and GD++; the bar of "
              "rec2-ood-matches-gdpp; median seed"),
        Claim("five-beats-gd5", "5-layer LSA loss below 5-step GD (ratio)", "Fig. 3b, sec. 3", "oswald-deep",
              lambda r: r[DEEP][X.DEEP_MEDIAN.format(tag="five", measure="tf_loss")] / r[DEEP][X.DEEP_GD_LOSS.format(tag="five")], "<", 1.0,
              "sec. 3: models with K layers 'generally outperform K steps of plain gradient descent' (this claim "
              "compared with 2-step GD before; see docs/reproduction-notes.md); median seed"),
        Claim("five-near-zero", "the 5-layer LSA reaches a loss close to 0 (loss / zero predictor)", "Fig. 3b",
              "oswald-deep", lambda r: r[DEEP][X.DEEP_MEDIAN.format(tag="five", measure="tf_loss")]
              / r[DEEP]["five.zero_loss"], "<", 0.1,
              "an order of magnitude below the zero predictor; median seed"),
        Claim("five-matches-gdpp-loss", "the 5-layer LSA reaches GD++'s loss (|TF / GD++ - 1|)", "Fig. 3b",
              "oswald-deep", lambda r: abs(r[DEEP][X.DEEP_MEDIAN.format(tag="five", measure="tf_loss")]
                                           / r[DEEP]["five.gdpp_loss"] - 1), "<", 0.1,
              "as rec2-matches-gdpp-loss; GD++ the best of three fits, the code's Adam fit among them; median "
              "seed, inconclusive where the seeds, or the ends of its 95% interval over held-out tasks (paired "
              "bootstrap; per-task losses are heavy-tailed under the token clip), fall on both sides of the bar",
              per_seed=lambda r: _loss_match_per_seed(r, "five", "five.gdpp_loss"),
              replicates=lambda r: _loss_match_replicates(r, "five", "five.gdpp_loss")),
        Claim("five-matches-gdpp", "5-layer LSA is well described by GD++ (per-layer eta, gamma), not by 5-step GD "
              "(prediction difference to GD++ / to GD)", "Fig. 3", "oswald-deep",
              lambda r: r[DEEP][X.DEEP_MEDIAN.format(tag="five", measure="pd_gdpp")] / r[DEEP][X.DEEP_MEDIAN.format(tag="five", measure="pd_gd")], "<", 0.5,
              "sec. 3: deep models are 'well described' by GD++: at least twice as close to GD++ as to GD. A ratio "
              "below 1 (the bar before issue 33) is met by any learner between the two that leans to GD++, e.g. "
              "0.4 GD + 0.6 GD++ (ratio 0.67: tests/test_bars.py); median seed"),
        Claim("five-ood-near-gdpp", "out of distribution the 5-layer LSA stays near its GD++ (alpha <= 1.5, input "
              "and teacher scale)", "Fig. 6c, A.2", "oswald-deep", lambda r: r[DEEP][X.DEEP_OOD.format(tag="five")], "<", 0.2,
              "A.2: 'remarkably similar' to GD++ though 'the match for deeper architectures starts to become "
              "worse': twice the 10% of ood; A.2's two families; median seed"),
        Claim("depths-closer-to-gdpp", "every depth variant is well described by GD++ with as many steps, not by GD "
              "(largest prediction difference to GD++ / to GD)", "Fig. 7, 8", "oswald-depth",
              lambda r: r["oswald-depth"][X.DEPTH_MAX_PD_RATIO], "<", 0.5,
              "sec. 3: their behaviour is 'well described' by GD++; the bar of five-matches-gdpp (at least twice as "
              "close to GD++ as to GD); median seed of each model"),
        Claim("depths-ood-near-gdpp", "out of distribution the depth 2-4 stacks stay near GD++ with as many steps "
              "(largest over models, alpha <= 1.5)", "Fig. 7, A.2", "oswald-depth",
              lambda r: r["oswald-depth"][X.DEPTH_OOD_MAX], "<", 0.2, "as five-ood-near-gdpp; median seeds"),
        Claim("depths-beat-gd", "LSA stacks of depth 2-4 (recurrent or not; in full mode also 4 heads with MLPs) "
              "beat GD with as many steps (largest TF / GD loss)", "Fig. 7, 8", "oswald-depth",
              lambda r: r["oswald-depth"][X.DEPTH_MAX_TF_OVER_GD], "<", 1.0, "median seed of each model"),
        Claim("curvature", "the gamma of trained recurrent TFs lowers the median condition number of the "
              "transformed Hessian (ratio to gamma = 0)", "Fig. 13", "oswald-curvature",
              lambda r: r["oswald-curvature"][X.KAPPA_RATIO], "<", 1.0,
              "any reduction supports the curvature-correction reading"),
        Claim("curvature-eigenvalues-in-range", "the observed eigenvalues of X X^T stay below 1 / gamma of the "
              "trained TFs (gamma * 99th percentile of the largest eigenvalue)", "Fig. 13", "oswald-curvature",
              lambda r: r["oswald-curvature"][X.GAMMA_TIMES_LAMBDA_MAX], "<", 1.0,
              "A.10: the spectrum stays inside [0, 1/gamma], where lambda (1 - gamma lambda)^2 is increasing"),
        Claim("curvature-derived-gamma-larger", "the gamma derived from the smallest and largest eigenvalue over "
              "all tasks is larger than the trained models' (ratio)", "A.10, Fig. 13", "oswald-curvature",
              lambda r: r["oswald-curvature"][X.GAMMA_DERIVED_OVER_TF], ">", 1.0,
              "'the optimal gamma based on our derivation ... obtains a slightly larger gamma as an optimal value': "
              "the direction only (the text gives no size for 'slightly'); smallest eigenvalue cut at 0.1 (the "
              "source's cut is lost); median seed's gamma"),
        Claim("curvature-explodes", "beyond gamma of about 0.1 the condition numbers explode (90th percentile over "
              "tasks at gamma = 0.2 / at gamma = 0; smallest over the N of the sweep)", "Fig. 13, A.10",
              "oswald-curvature", lambda r: r["oswald-curvature"][X.KAPPA_EXPLODES], ">", 10.0,
              "A.10: 'for values larger than 0.1 the distribution quickly exhibits exploding condition numbers': "
              "the upper tail of the distribution grows by an order of magnitude at twice that gamma; gamma = 0.1 "
              "itself (the edge) fails the bar at N = 10 (tests/test_bars.py). The bar before (median ratio > 1) "
              "passed a median that merely doubled"),
        Claim("curvature-in-range-every-n", "at every N of the sweep the eigenvalues stay below 1 / gamma of the "
              "models trained at that N (largest gamma * 99th percentile of lambda_max)", "Fig. 13, A.10",
              "oswald-curvature", lambda r: r["oswald-curvature"][X.N_SWEEP_GAMMA_TIMES_LAMBDA_MAX], "<", 1.0,
              "A.10: gammas read off models 'trained on different task distributions'; 'the observed eigenvalues "
              "stay within [0, 1/gamma]'; median seed's gamma at each N"),
        Claim("curvature-lowers-kappa-every-n", "at every N of the sweep the trained gamma lowers the median "
              "condition number (largest ratio to gamma = 0)", "Fig. 13, A.10", "oswald-curvature",
              lambda r: r["oswald-curvature"][X.N_SWEEP_KAPPA_RATIO], "<", 1.0,
              "as the claim curvature, at each N; the smallest eigenvalue cut at 0.1 as for curvature-explodes"),
        Claim("softmax-1head-worse", "one softmax head is worse than GD (loss / GD)", "Fig. 11, 12",
              "oswald-softmax", lambda r: r[SOFTMAX][X.SOFTMAX_LOSS_OVER_GD.format(variant="softmax1")], ">", 1.01,
              "worse by more than 1% (beyond evaluation noise)"),
        Claim("softmax-lr-no-help", "tuning the learning rate makes no significant difference to one softmax head "
              "(largest / smallest loss over Adam lr 3e-4, 1e-3, 3e-3)", "A.9", "oswald-softmax",
              lambda r: r[SOFTMAX][X.SOFTMAX_LR_SPREAD], "<", 1.05,
              "'no significant difference over the hyperparameters': within 5% (the tolerance of 'reaches GD' "
              "claims); median seed per lr"),
        Claim("softmax-1head-worse-any-lr", "at its best learning rate one softmax head is still worse than GD (loss "
              "/ GD)", "A.9", "oswald-softmax", lambda r: r[SOFTMAX][X.SOFTMAX_BEST_LR], ">", 1.01,
              "as softmax-1head-worse, for the best of the three learning rates"),
        Claim("softmax-2heads-closer", "two softmax heads come closer to GD than one (ratio of their losses)",
              "Fig. 11, 12", "oswald-softmax",
              lambda r: r[SOFTMAX][X.SOFTMAX_LOSS_OVER_GD.format(variant="softmax2")]
              / r[SOFTMAX][X.SOFTMAX_LOSS_OVER_GD.format(variant="softmax1")], "<", 1.0, "median seed"),
        Claim("softmax-2heads-still-worse", "two softmax heads still do not reach GD (loss / GD)", "Fig. 12b, A.9",
              "oswald-softmax", lambda r: r[SOFTMAX][X.SOFTMAX_LOSS_OVER_GD.format(variant="softmax2")], ">", 1.01,
              "A.9: 'difficulties to match the loss values' of GD; the threshold of softmax-1head-worse"),
        Claim("softmax-2heads-align-better", "two softmax heads align better with GD than one (cosine of one head "
              "/ of two)", "Fig. 12, A.9", "oswald-softmax",
              lambda r: r[SOFTMAX]["softmax1.cosine_median"] / r[SOFTMAX]["softmax2.cosine_median"], "<", 1.0,
              "A.9: 'very much improved alignment'; median seed"),
        Claim("softmax-heads-cancel", "in the two-head softmax layer the off-diagonal terms of the heads' scaled "
              "W_K^T W_Q cancel in their sum (norm of the sum's / mean of the heads')", "Fig. 11, A.9", "oswald-softmax",
              lambda r: r[SOFTMAX][X.SOFTMAX_HEADS_CANCEL], "<", 0.2,
              "'an almost perfect cancellation': the sum keeps less than a fifth of a head's off-diagonal mass; "
              "median seed", per_seed=lambda r: r[SOFTMAX][X.seeds_key(X.SOFTMAX_HEADS_CANCEL)]),
        Claim("phase-seed-dependent", "with one head the phase transition comes at a seed-dependent step (slowest "
              "/ fastest seed's step)", "Fig. 15, A.11", "oswald-phase",
              lambda r: r["oswald-phase"][X.TRANSITION_SPREAD.format(heads=1)], ">", 1.5,
              "A.11: the transitions depend on the seed; the slowest seed at least half as late again as the fastest"),
        Claim("two-heads-stabilise", "two heads make the slowest seed's phase transition earlier than one head "
              "(ratio of the slowest seeds' transition steps)", "Fig. 15", "oswald-phase",
              lambda r: r["oswald-phase"][X.SLOWEST_TRANSITION.format(heads=2)] / r["oswald-phase"][X.SLOWEST_TRANSITION.format(heads=1)],
              "<", 1.0, "the paper: two heads mitigate the seed-dependent instabilities"),
        Claim("phase-seed-dependent-training", "on the training loss too (Fig. 15's curves), the one-head "
              "transition comes at a seed-dependent step (slowest / fastest seed's step)", "Fig. 15, A.11",
              "oswald-phase", lambda r: r["oswald-phase"]["training." + X.TRANSITION_SPREAD.format(heads=1)], ">", 1.5,
              "as phase-seed-dependent, read where the figure reads it: each evaluation interval's mean training "
              "loss within 5% of GD"),
        Claim("two-heads-stabilise-training", "on the training loss too, two heads make the slowest seed's "
              "transition earlier than one head (ratio of the slowest seeds' steps)", "Fig. 15", "oswald-phase",
              lambda r: r["oswald-phase"]["training." + X.SLOWEST_TRANSITION.format(heads=2)]
              / r["oswald-phase"]["training." + X.SLOWEST_TRANSITION.format(heads=1)], "<", 1.0,
              "as two-heads-stabilise, on the training loss"),
        Claim("grokking", "one block (LSA + MLP) on 8192 fixed tasks grokks: the held-out loss rises to twice "
              "its first value, then ends within 20% of GD (seeds that do)", "Fig. 15 right, A.11", FIXED,
              lambda r: r[FIXED][X.GROKKING_SEEDS], ">", 0.5,
              "the source shows one run and says it needed 'carefully tuning the learning rate and batchsize' "
              "(values not given: full mode tries lr 3e-4, 1e-3 and 3e-3 at batch 2048, quick mode 1e-3); "
              "'drastically' read as 2x, 'almost matching' as 20%; at least one seed at the best learning rate"),
        Claim("fixed-data-more-is-better", "held-out loss with 8192 training tasks below that with 128 (ratio)",
              "Fig. 16", "oswald-fixed-data",
              lambda r: r[FIXED][X.FIXED_LOSS_OVER_GD.format(size=8192)]
              / r[FIXED][X.FIXED_LOSS_OVER_GD.format(size=128)], "<", 1.0, "median seed"),
        Claim("fixed-data-8192", "with 8192 training tasks the held-out loss is within 5% of GD", "Fig. 16",
              "oswald-fixed-data", lambda r: r[FIXED][X.FIXED_LOSS_OVER_GD.format(size=8192)], "<", 1.05,
              "the paper's 8192-task curve reaches GD; 5% for the reduced training"),
        Claim("fixed-data-aligns", "even with few fixed training tasks (512 and more) the trained layer aligns "
              "with GD (smallest sensitivity cosine)", "Fig. 16, A.12", "oswald-fixed-data",
              lambda r: r[FIXED][X.FIXED_MIN_COSINE], ">", 0.99,
              "A.12: weights that 'align remarkably well' with GD, as Fig. 2's layer does: the bar of 1layer-cosine "
              "(the authors' Fig. 2 reads 1.0). The bar before (0.9) passed two GD steps, whose cosine with one "
              "step is 0.91 (tests/test_bars.py); median seed per size"),
        Claim("layernorm-lower-alignment", "LayerNorm lowers the alignment with GD (sensitivity cosine)", "Fig. 14a",
              "oswald-softmax", lambda r: r[SOFTMAX]["layernorm.cosine_median"], "<", 0.99,
              "below the bar at which 1layer-cosine calls the alignment about 1; median seed"),
        Claim("layernorm-heads-no-help", "with LayerNorm a second head does not help substantially (|loss with 2 "
              "heads / with 1 - 1|)", "A.9", "oswald-softmax", lambda r: r[SOFTMAX][X.LN_HEADS_CHANGE], "<", 0.1,
              "'including more heads does not help substantially': less than 10% change; median seeds"),
        Claim("layernorm-between-worse", "two LSA layers with a LayerNorm between them lose against two GD steps "
              "(loss / GD)", "Fig. 14b, A.9", SOFTMAX,
              lambda r: r[SOFTMAX][X.SOFTMAX_LOSS_OVER_GD.format(variant="layernorm-between")], ">", 1.01,
              "'we overall see inferior performance to one or two steps of GD'; as layernorm-worse (1%); median "
              "seed"),
        Claim("layernorm-between-worse-gdpp", "two LSA layers with a LayerNorm between them lose against two steps "
              "of GD++ (loss / GD++, per-step eta and gamma)", "Fig. 14b, A.9", SOFTMAX,
              lambda r: r[SOFTMAX][X.LN2_LOSS_OVER_GDPP], ">", 1.01,
              "A.9: 'inferior performance to one or two steps of GD or two steps of GD++'; the bar of "
              "layernorm-worse (1%); median seed"),
        Claim("layernorm-between-ood-better", "with two layers too, LayerNorm generalises better to larger inputs "
              "and targets (LN model's loss / the plain 2-layer LSA's at twice the training scale, the larger of "
              "inputs and teacher)", "A.9, Fig. 14b", SOFTMAX, lambda r: r[SOFTMAX][X.LN2_OOD], "<", 1.0,
              "as layernorm-ood-better, for Fig. 14's two-layer OOD panel (speculative in the source)"),
        Claim("layernorm-ood-better", "LayerNorm generalises better to larger inputs and targets (LN + LSA loss / "
              "LSA loss at twice the training scale, the larger of inputs and teacher)", "A.9, Fig. 14",
              SOFTMAX, lambda r: r[SOFTMAX][X.LN_OOD], "<", 1.0,
              "the source only speculates ('we speculate that LayerNorm ... could act as some form of data "
              "normalization ... for larger inputs as well as targets'); A.2's two families, alpha = 2, median "
              "seeds"),
        Claim("layernorm-worse", "LayerNorm before attention loses performance against GD (loss / GD)", "Fig. 14",
              "oswald-softmax", lambda r: r[SOFTMAX][X.SOFTMAX_LOSS_OVER_GD.format(variant="layernorm")], ">", 1.01,
              "worse by more than 1%"),
    ]


@suite("oswald-nonlinear")
def nonlinear() -> list[Claim]:
    """Fig. 4's claims on the set-up of the code that made the figure (experiment oswald-sine-code; issue 33:
    the default follows the code): heavy on a CPU, about an hour in quick mode."""
    return _sine_claims(SINE_CODE)


@suite("oswald-sine-text")
def sine_text() -> list[Claim]:
    """The same claims on the paper text's task family (experiment oswald-sine; SPEC 2)."""
    return _sine_claims(SINE)


def _sine_claims(SINE: str) -> list[Claim]:  # noqa: N803 - the experiment, named as the module constant
    return [
        Claim("sine-similar-loss", "the TF (MLP + LSA) reaches the loss of GD on MLP features, or a lower one "
              "(TF / control loss)", "Fig. 4", SINE, lambda r: r[SINE][X.SINE_TF_OVER_CONTROL.format(stat="median")],
              "<", 1.25,
              "Fig. 4 compares the trained TF with the control it is explained by; the authors' own run ends with the "
              "TF 25% below the control (docs/calibration.md), so the bar is one-sided: no more than 25% above it "
              "(the symmetric larger / smaller bar this claim had before fails the authors' 1.33); median seed",
              per_seed=lambda r: r[SINE][X.SINE_SEEDS.format(measure="tf_over_control")]),
        Claim("sine-similar-loss-worst-seed", "the same for every seed (TF / control loss, worst seed)", "Fig. 4",
              SINE, lambda r: r[SINE][X.SINE_TF_OVER_CONTROL.format(stat="max")], "<", 1.25, "as above, worst seed",
              role="stricter"),
        Claim("sine-alignment", "the TF is nearer the control than the truth is (mean |y_TF - y_control| / mean "
              "|y_control - y|)", "Fig. 4", SINE, lambda r: r[SINE][X.SINE_PD_OVER_CONTROL_ERROR], "<", 0.8,
              "Fig. 4's 'Preds diff' says the TF computes what the control computes, errors included: a perfect "
              "predictor scores exactly 1 and fails, as does any learner whose errors are its own. The bar before "
              "(20% of RMS(y)) passed the perfect predictor (tests/test_bars.py); median seed",
              per_seed=lambda r: r[SINE][X.SINE_SEEDS.format(measure="pd_over_control_error")]),
        Claim("sine-partial-cosine", "the TF's and the control's slopes d y_hat / d x_query agree at the end of "
              "training (Fig. 4 middle's partial cosine)", "Fig. 4", SINE,
              lambda r: r[SINE][X.SINE_PARTIAL_COSINE_FINAL], ">", 0.9,
              "with Dx = 1 a task's cosine is +1 or -1, so the mean is 2p - 1 for p the share of tasks whose slopes "
              "agree in sign: 0.9 asks for 95% of tasks. An untrained TF (cosine about 0) fails; median seed",
              per_seed=lambda r: r[SINE][X.SINE_SEEDS.format(measure="partial_cosine_final")]),
        Claim("sine-beats-zero", "both learn in context: TF loss below a tenth of the zero predictor's",
              "Fig. 4", SINE, lambda r: r[SINE][X.SINE_MEDIAN.format(measure="tf_loss")] / r[SINE][X.ZERO_LOSS], "<", 0.1,
              "the fitted sines of Fig. 4 follow the targets closely; median seed",
              per_seed=lambda r: r[SINE][X.SINE_SEEDS.format(measure="tf_over_zero")]),
        Claim("sine-initial-functions", "their learnt initial functions (read out before the attention / GD "
              "step) agree: RMS distance / RMS of the control's initial function", "Fig. 4", SINE,
              lambda r: r[SINE][X.SINE_MEDIAN.format(measure="initial_function_relative")], "<", 0.6,
              "'almost identical' initial functions, measured against their own size: a zero function scores 1, "
              "two unrelated ones about 1.4 (two untrained models: 1.36, tests/test_bars.py). The authors' own "
              "pair is a half-radian phase shift apart (0.47). The bar before (distance / RMS(y) < 0.2) failed "
              "it (about 0.41); median seed",
              per_seed=lambda r: r[SINE][X.SINE_SEEDS.format(measure="initial_function_relative")]),
        Claim("sine-final-functions", "their functions after the update agree: RMS distance / RMS(y)",
              "Fig. 4", SINE, lambda r: r[SINE][X.SINE_MEDIAN.format(measure="final_function_distance")], "<", 0.2,
              "as above", per_seed=lambda r: r[SINE][X.SINE_SEEDS.format(measure="final_function_distance")]),
    ]


def _copy_seeds(key: str):
    """The oswald-copy median `key` seed by seed (`seeds_key`), for a claim's sign test."""
    return lambda r: r[COPY][X.seeds_key(key)]


@suite("oswald-copy")
def copying() -> list[Claim]:
    return [
        Claim("copy-reaches-gd1", "softmax-then-linear model on interleaved tokens matches one-step GD's loss "
              "(|loss / 1-step GD - 1|)", "Fig. 5", COPY,
              lambda r: abs(r[COPY][X.COPY_LOSS_OVER_GD1.format(first="softmax")] - 1), "<", 0.05,
              "'matches a single step of GD': equal within 5%, from either side. The one-sided loss / GD1 < 1.05 "
              "of before issue 33 passed a model at 2-step GD's loss (0.8 of GD1: tests/test_bars.py); median seed "
              "(training speed varies strongly with the seed, as the paper reports)",
              per_seed=lambda r: [abs(v - 1) for v in _copy_seeds(X.COPY_LOSS_OVER_GD1.format(first="softmax"))(r)]),
        Claim("copy-neighbour-gradient", "the first layer's output of token t depends on token t + 1 far more "
              "than on the others (final norm ratio)", "Fig. 5", COPY,
              lambda r: r[COPY][X.COPY_NEIGHBOUR_RATIO.format(first="softmax")], ">", 3.0,
              "Fig. 5: the neighbour gradient rises while the others stay near 0; a factor 3 is clearly apart",
              per_seed=_copy_seeds(X.COPY_NEIGHBOUR_RATIO.format(first="softmax"))),
        Claim("copy-neighbour-gradient-code", "the same with the official code's measure (norm of the task-mean "
              "gradient of the summed output; 'other' = every token but itself, per token; final ratio)", "Fig. 5", COPY,
              lambda r: r[COPY][X.COPY_CODE_NEIGHBOUR_RATIO], ">", 3.0,
              "the factor 3 of copy-neighbour-gradient, on the quantity the authors' Fig. 5 plots (their analyse_copy); "
              "median seed", per_seed=_copy_seeds(X.COPY_CODE_NEIGHBOUR_RATIO)),
        Claim("copy-own-token-kept", "the first layer keeps its own token: |d t(e_j) / d e_j| at the end over at "
              "initialisation (Fig. 5 right's own-token curve; |ratio - 1|)", "Fig. 5, A.5", COPY,
              lambda r: r[COPY][X.COPY_OWN_KEPT], "<", 0.25,
              "A.5's copy layer adds the neighbour's y to token j and leaves the token itself, so its own-token "
              "derivative stays the residual's identity (sqrt(10) = 3.16 in the code's measure); a layer that "
              "overwrites its token fails (|ratio - 1| near 1); median seed", per_seed=_copy_seeds(X.COPY_OWN_KEPT)),
        Claim("copy-others-small-throughout", "token j stays independent of the other tokens during all of training "
              "(largest |d t(e_j) / d e_other| / |d t(e_j) / d e_j| over the evaluations)", "Fig. 5", COPY,
              lambda r: r[COPY][X.COPY_OTHERS_PEAK], "<", 0.1,
              "sec. 3: 'staying independent on the others', read on the whole curve, the transition included (where "
              "the authors' others' curve peaks): under a tenth of the token's own dependence. A layer that mixes "
              "every token alike, without its residual, scores 1; median seed", per_seed=_copy_seeds(X.COPY_OTHERS_PEAK)),
        Claim("copy-gradient-first", "the first layer's output becomes notably dependent on the neighbour before "
              "the loss jumps (step where the neighbour gradient first reaches 3x the others' / step where the "
              "loss is halfway down to GD)", "Fig. 5", COPY,
              lambda r: r[COPY][X.COPY_ONSET_FIRST], "<", 1.0,
              "sec. 4: 'before the Transformer performance jumps to the one of GD' the token 'becomes notably "
              "dependant on the neighboring token while staying independent on the others': an onset, with the "
              "factor 3 of copy-neighbour-gradient; median over the seeds whose loss dropped",
              per_seed=_copy_seeds(X.COPY_ONSET_FIRST)),
        Claim("copy-gradient-halfway-first", "the neighbour gradient is halfway up before the loss is halfway down "
              "(ratio of the steps)", "Fig. 5", COPY, lambda r: r[COPY][X.COPY_GRADIENT_FIRST], "<", 1.0,
              "the midpoint of the whole rise, which goes on after the drop, before the midpoint of the drop: "
              "more than the source's onset (this was copy-gradient-first's measure before); median seed",
              role="stricter", per_seed=_copy_seeds(X.COPY_GRADIENT_FIRST)),
        Claim("copy-seeds-vary", "training speed varies strongly with the seed (slowest / fastest seed's step "
              "where the loss is halfway down)", "Fig. 5, sec. 4", COPY, lambda r: r[COPY][X.COPY_SPEED_SPREAD], ">",
              2.0, "'the training speeds are highly variant given different training seeds': at least twice"),
        Claim("copy-not-gd2", "the model matches one step of GD, not two (loss / 2-step GD)", "Fig. 5, sec. 4", COPY,
              lambda r: r[COPY][X.COPY_LOSS_OVER_GD1.format(first="softmax")] * r[COPY]["gd1_loss"]
              / r[COPY]["gd2_loss"], ">", 1.05, "'a single (not two) step'; the 5% of copy-reaches-gd1; median seed",
              per_seed=lambda r: [v * r[COPY]["gd1_loss"] / r[COPY]["gd2_loss"]
                                  for v in _copy_seeds(X.COPY_LOSS_OVER_GD1.format(first="softmax"))(r)]),
        Claim("copy-linear-fails", "with a linear first layer the model does not reach one-step GD "
              "(loss / 1-step GD)", "sec. 4", COPY, lambda r: r[COPY][X.COPY_LOSS_OVER_GD1.format(first="linear")], ">", 1.05,
              "the paper could not train it; same budget and threshold as the softmax model; median seed",
              per_seed=_copy_seeds(X.COPY_LOSS_OVER_GD1.format(first="linear"))),
    ]
