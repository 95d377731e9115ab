"""Claims of von Oswald et al. 2023 (source 000), with the tolerance of each: the linear study (suite
`oswald`), one row per claim, grouped by figure. The sine and copy studies' suites are in
`claims_nonlinear`."""

from __future__ import annotations

from typing import Any

from icgd.claims.base import Claim, PremiseNotMet, suite
from icgd.sources.oswald import keys as X
from icgd.sources.oswald.references import REFERENCES

ONE = "oswald-1layer"
DEEP = "oswald-deep"
REPEAT = "oswald-repeat"
SOFTMAX = "oswald-softmax"
FIXED = "oswald-fixed-data"

#: "keep lowering the loss" over 50 applications: the loss after the last at most half the loss after the first.
#: Argued before the full runs (2026-11-28), from the authors' numbers, not ours: their trained layer ends at
#: 0.22 of its first loss (Fig. 1, references.py) and source 001's at 0.21; a layer that does nothing stays at
#: 1. The old bar (< 1) let untrained layers pass by chance: of 20 draws at the init scale 0.0025, 5 end below
#: 1 (0.999 at best; tests/suites/test_bars.py). 0.5 is about the geometric mean of 0.22 and 1. The ratio does
#: not test the step size (GD with a tenth of the tuned eta ends at 0.31): repeat-0.75-follows-gd does
REPEAT_LOWERS = 0.5
REPEAT_LOWERS_WHY = ("Bar: at most half the first application's loss, about the geometric mean of the authors' "
                     "0.22 and the 1 of a layer that does nothing (the bar before, < 1, passed untrained layers "
                     "by chance)")


def _depths_ood_where_gdpp_learns(r: dict[str, Any]) -> float:
    """depths-ood-near-gdpp's measure: PremiseNotMet where GD++ beats the zero predictor at no alpha."""
    v = r["oswald-depth"][X.DEPTH_OOD_LEARNT_MAX]
    if v is None:
        raise PremiseNotMet("GD++ beats the zero predictor at no alpha <= 1.5 of A.2's families: there is no "
                            "learner out of distribution to stay near")
    return v


#: the L-BFGS fits of a deep model's GD++ (`icgd.sources.oswald.shared.gdpp_reference`): from the tuned GD rates
#: and from the code's Adam fit; the Adam fit alone stops where its steps end, so it is no witness of convergence
CONVERGED_FITS = ("lbfgs", "adam+lbfgs")
#: a fit is at a stationary point where its loss's relative gradient (`icgd.learners.tuning.gdpp_gradient`, on
#: the tuning tasks) is below this. Why 1e-3, written before it was applied (docs/lab-notes/oswald-deep-
#: references.md): the loss-match claims judge the reference to 10%; a unit move in the fit's coordinates (eta
#: by a factor e, gamma by one over the inputs' mean eigenvalue) then changes the loss, to first order, by less
#: than 1% of that bar. The fits it was argued from (2026-11-29): 5.6e-5 at the five-layer best fit, 0.12 at
#: the L-BFGS stop beside it; any tolerance from 1e-4 to 1e-2 parts them.
GDPP_STATIONARY = 1e-3
_GDPP_MINIMUM_WHY = ("; inconclusive too where GD++ is no known minimum: the fit used not at a stationary point "
                     f"(relative gradient {GDPP_STATIONARY:g} or more), or two fits at stationary points more than "
                     "10% apart")


def _fit_used(r: dict[str, Any], key: str) -> str | None:
    """The name of the GD++ fit the claims read: "five.gdpp_fits" -> result "five.gdpp_fit"."""
    return r[DEEP].get(key.removesuffix("s"))


def _gdpp_fits(r: dict[str, Any], key: str) -> tuple[dict[str, float], dict[str, float] | None]:
    """The L-BFGS fits' held-out losses, and their relative gradients (None in results written before they
    were kept: then both fits count, the rule before 2026-11-29)."""
    fits = r[DEEP].get(key) or {}
    grads = r[DEEP].get(f"{key}_gradient")
    return {k: fits[k] for k in CONVERGED_FITS if k in fits}, grads


def _gdpp_fit_spread(r: dict[str, Any], key: str) -> float | None:
    """How far apart the L-BFGS fits of GD++ that reached a stationary point end on the held-out tasks: larger
    loss / smaller - 1 (None where fewer than two did, or the results do not hold both)."""
    losses, grads = _gdpp_fits(r, key)
    kept = [v for k, v in losses.items() if grads is None or grads.get(k, float("inf")) < GDPP_STATIONARY]
    return max(kept) / min(kept) - 1 if len(kept) == 2 else None


def _gdpp_fit_values(r: dict[str, Any], key: str) -> dict[str, float]:
    spread = _gdpp_fit_spread(r, key)
    out = {} if spread is None else {"GD++ fits' spread": spread}
    _, grads = _gdpp_fits(r, key)
    best = _fit_used(r, key)
    if grads is not None and best in grads:
        out["GD++ fit's relative gradient"] = grads[best]
    return out


def _gdpp_unconverged(r: dict[str, Any], key: str) -> str | None:
    """The loss-match claims judge |TF / GD++ - 1| against 10%, so the reference must be a minimum of GD++'s
    loss known to that precision: the fit used must have reached a stationary point (`GDPP_STATIONARY`), and
    two fits that did (two starts, the same tuning tasks) must not end more than 10% apart (two minima).
    A fit that stopped elsewhere (an L-BFGS stop at a kink of the clipped loss) is no minimum and sets no
    precision."""
    _, grads = _gdpp_fits(r, key)
    best = _fit_used(r, key)
    if grads is not None and best in grads and not grads[best] < GDPP_STATIONARY:
        return (f"the GD++ reference is not converged: its best fit ({best}) stops where the loss's relative "
                f"gradient is {grads[best]:.2g}, above {GDPP_STATIONARY:g}")
    spread = _gdpp_fit_spread(r, key)
    if spread is not None and spread > 0.1:
        return (f"the GD++ reference is not converged: its two L-BFGS fits end {spread:.0%} apart on the held-out "
                "tasks, more than the claim's 10% bar" + (" (both at stationary points: two minima)"
                                                           if grads is not None else ""))
    return None


def _loss_match_per_seed(r: dict, tag: str, ref_key: str) -> list[float]:
    """|TF / GD++ - 1| seed by seed (none in results written before the seeds' losses were kept)."""
    return [abs(t / r[DEEP][ref_key] - 1) for t in r[DEEP].get(X.DEEP_TF_PER_SEED.format(tag=tag), [])]


def _loss_match_replicates(r: dict, tag: str, ref_key: str) -> list[dict]:
    """The paired bootstrap over held-out tasks as results the loss-match measure reads: the median seed's
    loss and GD++'s per resample (a KeyError, so no interval, in results written before it was kept)."""
    med = X.DEEP_MEDIAN.format(tag=tag, measure="tf_loss")
    return [{DEEP: {med: a, ref_key: b}} for a, b in zip(r[DEEP][X.DEEP_TF_MEDIAN_BOOT.format(tag=tag)],
                                                          r[DEEP][X.DEEP_BOOT.format(key=ref_key)])]


@suite("oswald", references=REFERENCES["oswald"])
def claims() -> list[Claim]:
    return [
        # ---- Fig. 2 and 9: one trained layer against one GD step
        Claim(id="1layer-loss", source="Fig. 2", experiment=ONE,
              claim="trained 1-layer LSA loss within 1% of tuned one-step GD (x ~ U(-1, 1))",
              measure=lambda r: r[ONE][X.GAP_MAX.format(tag="a1")], op="<", threshold=0.01,
              why="the paper's curves overlap: equal within 1%; worst seed"),
        Claim(id="1layer-loss-code-range", source="Fig. 2", experiment=ONE,
              claim="the same with the official code's inputs x ~ U(-0.5, 0.5)",
              measure=lambda r: r[ONE][X.GAP_MAX.format(tag="a0.5")], op="<", threshold=0.01,
              why="as above"),
        Claim(id="1layer-interpolated-over-training", source="Fig. 2 left", experiment=ONE,
              claim="the interpolated model (midpoint of the GD construction and the "
                    "rescaled trained layer) ends training within 1% of one GD step (x ~ U(-1, 1))",
              measure=lambda r: r[ONE][X.INTERPOLATED_FINAL_GAP.format(tag="a1")], op="<", threshold=0.01,
              why="as 1layer-loss: the figure's interpolated curve lies on GD's line; worst seed at the last evaluation"),
        Claim(id="1layer-cosine", source="Fig. 2", experiment=ONE,
              claim="sensitivity cosine between trained LSA and GD > 0.99",
              measure=lambda r: r[ONE][X.COSINE_MIN.format(tag="a1")], op=">", threshold=0.99,
              why="the paper's Fig. 2 shows cosine reaching about 1; worst seed"),
        Claim(id="1layer-weights", source="Fig. 9", experiment=ONE,
              claim="rescaled trained W_K^T W_Q equals the construction (relative error)",
              measure=lambda r: r[ONE][X.KQ_ERROR_MEDIAN.format(tag="a1")], op="<", threshold=0.1,
              why="Fig. 9 shows matching matrices up to small off-diagonal noise; 10% Frobenius error"),
        Claim(id="1layer-prediction-difference", source="Fig. 2", experiment=ONE,
              claim="the prediction difference between trained LSA and GD is about 0 "
                    "(mean |y_TF - y_GD| / GD's RMS error)",
              measure=lambda r: r[ONE]["a1.prediction_difference_max"] / (2 * r[ONE]["a1.gd_loss"]) ** 0.5,
              op="<", threshold=0.1,
              why="an order of magnitude below GD's own error; worst seed"),
        Claim(id="1layer-sensitivity-l2", source="Fig. 2", experiment=ONE,
              claim="the L2 distance between the sensitivities of trained LSA and GD is about 0 "
                    "(relative to the norm of GD's sensitivity)",
              measure=lambda r: r[ONE]["a1.sensitivity_l2_max_over_gd_norm"], op="<", threshold=0.1,
              why="as 1layer-prediction-difference: an order of magnitude below the quantity compared; worst seed"),
        Claim(id="1layer-pv-weights", source="Fig. 9", experiment=ONE,
              claim="rescaled trained P W_V equals the construction, every row (relative error "
                    "of the whole matrix)",
              measure=lambda r: r[ONE]["a1.pv_matrix_relative_error_median"], op="<", threshold=0.1,
              why="as 1layer-weights; Fig. 9 shows the whole P W_V, whose x rows the construction sets to 0 (a layer "
                  "that moves x as well is not the construction, and its repeated application drifts: A.6). The y "
                  "row alone would pass such a layer"),
        # ---- A.3 and Fig. 2 right, 6: the interpolated model, and out of distribution
        Claim(id="interpolation", source="A.3, Fig. 2", experiment="oswald-interpolation",
              claim="the interpolation path stays within 1% of GD loss",
              measure=lambda r: r["oswald-interpolation"][X.INTERPOLATION_MAX_INCREASE], op="<", threshold=0.01,
              why="the paper reports no loss increase along the path; 1% allows evaluation noise"),
        Claim(id="ood", source="Fig. 2, Fig. 6", experiment="oswald-ood",
              claim="TF loss equals GD loss out of distribution (alpha <= 1.5, Fig. 6's four columns)",
              measure=lambda r: r["oswald-ood"][X.OOD_MAX_DEVIATION], op="<", threshold=0.1,
              why="curves overlap on log axes spanning two orders of magnitude; 10% relative"),
        Claim(id="ood-other-laws", source="Fig. 6, A.4", experiment="oswald-ood",
              claim="TF loss equals GD loss on input laws never seen in training (one of exponential, "
                    "normal and Laplace per task, normalised as the authors' code does; input or teacher scaled, alpha <= "
                    "1.5)",
              measure=lambda r: r["oswald-ood"][X.OOD_OTHER_LAWS], op="<", threshold=0.1,
              why="A.4: on these laws 'almost identical behavior' for recurrent (and 1-layer) models; the 10% of ood; "
                  "seed mean, as ood"),
        Claim(id="ood-interpolated", source="Fig. 2, Fig. 6", experiment="oswald-ood",
              claim="the interpolated model equals GD out of distribution as well (alpha <= 1.5)",
              measure=lambda r: r["oswald-ood"][X.OOD_INTERP_MAX_DEVIATION], op="<", threshold=0.1,
              why="as ood"),
        Claim(id="ood-gd-degrades", kind="check", source="sec. 3", experiment="oswald-ood",
              claim="GD's own loss degrades quickly for larger inputs (GD / zero-predictor loss at "
                    "input scale 2 over the same at 1)",
              measure=lambda r: r["oswald-ood"][X.OOD_GD_DEGRADES], op=">", threshold=2.0,
              why="sec. 3: the eta tuned for the training range leads to 'a drastic increase in loss also for GD' on "
                  "larger inputs; relative to the zero predictor, which grows with the targets; more than double"),
        # ---- Fig. 1 and 10: the trained layer applied again and again, beside GD
        Claim(id="repeat-0.75", source="Fig. 1, A.6", experiment="oswald-repeat",
              claim="with dampening 0.75, 50 applications keep lowering the loss (the official code's "
                    "roll-out: only the y channels move; every task counted)",
              measure=lambda r: r[REPEAT][X.REPEAT_Y_RATIO_MEDIAN.format(key="lambda_0_75")], op="<",
              threshold=REPEAT_LOWERS,
              why="the official code repeats the layer with y_update=True and plots one seed's mean over all tasks "
                  "(docs/reproduction-notes.md); median seed. " + REPEAT_LOWERS_WHY),
        Claim(id="repeat-0.75-follows-gd", source="Fig. 1, A.6", experiment="oswald-repeat",
              claim="with dampening 0.75 the roll-out follows GD with eta * 0.75 (largest "
                    "|TF/GD - 1| of the mean loss over the 50 applications; only y moves)",
              measure=lambda r: r[REPEAT]["lambda_0_75.y_only.max_relative_tf_gd_difference"], op="<", threshold=0.1,
              why="'an identical loss decrease of both GD and the Transformer': the 10% of the 'curves overlap' "
                  "claims; mean over the tasks that stay finite, median seed per step"),
        Claim(id="repeat-0.75-all-tokens", source="Fig. 1, A.6", experiment="oswald-repeat",
              claim="the same when every channel of the tokens moves, worst seed",
              measure=lambda r: r[REPEAT][X.REPEAT_RATIO_WORST.format(key="lambda_0_75")], op="<",
              threshold=REPEAT_LOWERS,
              why="the full-token roll-out of source 001, every task counted, worst seed; the bar as repeat-0.75's",
              role="stricter"),
        Claim(id="repeat-0.7", source="source 001", experiment="oswald-repeat",
              claim="with dampening 0.7 (the blog's value), every channel moving, the same holds",
              measure=lambda r: r[REPEAT][X.REPEAT_RATIO_WORST.format(key="lambda_0_7")], op="<",
              threshold=REPEAT_LOWERS,
              why="every task counted, worst seed (the blog shows one model: its measure is the blog suite's "
                  "dampening-lowers-loss, median seed); the bar as repeat-0.75's",
              role="stricter"),
        Claim(id="repeat-undamped", source="Fig. 10", experiment="oswald-repeat",
              claim="without dampening repeated application diverges",
              measure=lambda r: r[REPEAT][X.REPEAT_RATIO_WORST.format(key="lambda_1")], op=">", threshold=1.0,
              why="loss after 50 applications above the loss after 1"),
        Claim(id="repeat-undamped-gd", kind="check", source="Fig. 10, A.6", experiment="oswald-repeat",
              claim="without dampening GD with the tuned eta diverges as well",
              measure=lambda r: r[REPEAT]["lambda_1.gd_final_over_first"], op=">", threshold=1.0,
              why="A.6: the undamped roll-out diverges for the TF and for GD alike; loss after 50 steps above after 1"),
        Claim(id="repeat-sweep-like-gd", source="Fig. 10, A.6", experiment="oswald-repeat",
              claim="across the dampening sweep (lambda 0.5 to 1) the repeated layer "
                    "generalises like GD with eta * lambda (largest |TF/GD - 1| of the loss after 50 / after 1; only y "
                    "moves)",
              measure=lambda r: r[REPEAT][X.REPEAT_SWEEP_GAP], op="<", threshold=0.1,
              why="'both methods do generalize similarly well (or poorly) ... when changing lambda': every task counted "
                  "(a lambda at which only one of them diverges counts as inf, both diverging as 0); the 10% of the "
                  "'curves overlap' claims; median seed; the official code's roll-out"),
        Claim(id="repeat-sweep-not-every-lambda", source="source 001, Fig. 10", experiment="oswald-repeat",
              claim="repeating the layer lowers the loss only for some dampening "
                    "values (fraction of the sweep's lambdas at which the loss after 50 ends below after 1)",
              measure=lambda r: r[REPEAT][X.REPEAT_SWEEP_LOWERING], op="<", threshold=1.0,
              why="the blog: the layer follows multi-step GD 'for a specific value of the dampening factor'; a "
                  "fraction below 1 means some lambda of the sweep fails (repeat-0.75 shows that one works); only y "
                  "moves, every task counted, median seed"),
        # ---- Fig. 3 and 6: recurrent 2-layer and 5-layer models against GD and GD++
        Claim(id="rec2-beats-gd", source="Fig. 3", experiment="oswald-deep",
              claim="recurrent 2-layer LSA loss below 2 steps of GD (ratio)",
              measure=lambda r: r[DEEP][X.DEEP_MEDIAN.format(tag="rec2", measure="tf_loss")] / r[DEEP][X.DEEP_GD_LOSS.format(tag="rec2")],
              op="<", threshold=1.0,
              why="median seed (a seed still on its plateau is reported in the tables)"),
        Claim(id="rec2-matches-gdpp", source="Fig. 3", experiment="oswald-deep",
              claim="recurrent 2-layer matches GD++ (one eta and gamma for both steps) better than "
                    "2-step GD (prediction difference to GD++ / to GD)",
              measure=lambda r: r[DEEP][X.DEEP_MEDIAN.format(tag="rec2", measure="pd_gdpp_shared")] / r[DEEP][X.DEEP_MEDIAN.format(tag="rec2", measure="pd_gd")],
              op="<", threshold=1.0,
              why="sec. 3 tunes 'a single parameter' gamma and the official code shares eta and gamma over the "
                  "recurrent steps (gd_deq); median seed"),
        Claim(id="rec2-matches-gdpp-per-step", source="Fig. 3", experiment="oswald-deep",
              claim="the same with GD++ tuned per step (prediction difference to GD++ / to "
                    "GD)",
              measure=lambda r: r[DEEP][X.DEEP_MEDIAN.format(tag="rec2", measure="pd_gdpp")] / r[DEEP][X.DEEP_MEDIAN.format(tag="rec2", measure="pd_gd")],
              op="<", threshold=1.0,
              why="stricter than rec2-matches-gdpp: a per-step GD++ has more freedom than a recurrent TF; median seed",
              role="stricter"),
        Claim(id="gdpp-speeds-up", source="sec. 2, Fig. 3", experiment="oswald-deep",
              claim="the data transformation of GD++ speeds up learning: 2-step GD++ / 2-step GD loss",
              measure=lambda r: r[DEEP]["rec2.gdpp_loss"] / r[DEEP][X.DEEP_GD_LOSS.format(tag="rec2")],
              op="<", threshold=0.9,
              why="sec. 2: 'substantial speed ups' for GD and the TF; at least 10% lower loss"),
        Claim(id="rec2-departs-from-gd", source="Fig. 3a", experiment="oswald-deep",
              claim="the recurrent 2-layer LSA aligns better with GD++ than with GD (sensitivity "
                    "cosine with GD / with GD++)",
              measure=lambda r: r[DEEP][X.DEEP_MEDIAN.format(tag="rec2", measure="cos_gd")]
                                                                                 / r[DEEP][X.DEEP_MEDIAN.format(tag="rec2", measure="cos_gdpp_shared")],
                                                                                 op="<", threshold=1.0,
              why="Fig. 3a: the alignment with plain GD falls while the model realigns with GD++; median seed"),
        Claim(id="rec2-realigns-gdpp", source="Fig. 3a", experiment="oswald-deep",
              claim="the recurrent 2-layer LSA realigns with GD++ (sensitivity cosine)",
              measure=lambda r: r[DEEP][X.DEEP_MEDIAN.format(tag="rec2", measure="cos_gdpp_shared")],
              op=">", threshold=0.99,
              why="'realigns perfectly': the bar at which 1layer-cosine calls a cosine about 1; median seed"),
        Claim(id="rec2-matches-gdpp-loss", source="Fig. 3a", experiment="oswald-deep",
              claim="the recurrent 2-layer LSA reaches GD++'s loss (|TF / GD++ - 1|)",
              measure=lambda r: abs(r[DEEP][X.DEEP_MEDIAN.format(tag="rec2", measure="tf_loss")]
                                                                                     / r[DEEP]["rec2.gdpp_shared_loss"] - 1), op="<", threshold=0.1,
              why="the loss curves overlap on a log axis: the 10% of every 'curves overlap' claim here (ood, "
                  "dampening-matches-gd); GD++ with one eta and gamma, as the official code; median seed, "
                  "inconclusive where the seeds, or the ends of its 95% interval over held-out tasks (paired "
                  "bootstrap), fall on both sides of the bar" + _GDPP_MINIMUM_WHY,
              per_seed=lambda r: _loss_match_per_seed(r, "rec2", "rec2.gdpp_shared_loss"),
              replicates=lambda r: _loss_match_replicates(r, "rec2", "rec2.gdpp_shared_loss"),
              values=lambda r: _gdpp_fit_values(r, "rec2.gdpp_shared_fits"),
              unresolved=lambda r: _gdpp_unconverged(r, "rec2.gdpp_shared_fits")),
        Claim(id="rec2-interpolates-to-gdpp", source="A.3, Fig. 3", experiment="oswald-deep",
              claim="the recurrent 2-layer weights interpolate to the GD++ construction "
                    "with its gamma without a loss increase (largest loss on the path / larger endpoint - 1)",
              measure=lambda r: r[DEEP][X.REC2_INTERPOLATION], op="<", threshold=0.01,
              why="as interpolation (1%); median seed, as every claim on the deep models (a seed still on its "
                  "plateau has no GD++ to interpolate to)"),
        Claim(id="five-interpolation-fails", source="sec. 3, A.3", experiment="oswald-deep",
              claim="for 5 separate layers the same naive correction does not interpolate "
                    "to per-layer GD++ without a loss increase (largest loss on the path / larger endpoint - 1)",
              measure=lambda r: r[DEEP][X.FIVE_INTERPOLATION], op=">", threshold=0.01,
              why="'the naive correction ... is not enough to interpolate without a loss increase' ('only for some "
                  "seeds' can it): the complement of rec2-interpolates-to-gdpp's 1%; each layer rescaled on its own; "
                  "median seed"),
        Claim(id="rec2-interpolates-to-gdpp-worst-seed", source="A.3, Fig. 3", experiment="oswald-deep",
              claim="the same for every seed",
              measure=lambda r: r[DEEP][X.REC2_INTERPOLATION_WORST], op="<", threshold=0.01,
              why="worst seed",
              role="stricter"),
        Claim(id="rec2-ood-matches-gdpp", source="Fig. 3a, Fig. 6b, A.2", experiment="oswald-deep",
              claim="out of distribution the recurrent 2-layer LSA equals its GD++ (alpha <= 1.5, "
                    "input and teacher scale)",
              measure=lambda r: r[DEEP][X.DEEP_OOD.format(tag="rec2")], op="<", threshold=0.1,
              why="A.2 'almost identical behaviour' for recurrent models, over its two families (input range, "
                  "teacher scale): the 10% of ood; median seed"),
        Claim(id="rec2-ood-matches-gdpp-all-families", source="Fig. 6b", experiment="oswald-deep",
              claim="the same over Fig. 6's four columns, the code's other laws "
                    "included",
              measure=lambda r: r[DEEP][X.DEEP_OOD_ALL.format(tag="rec2")], op="<", threshold=0.1,
              why="A.4 claims the match on the other laws for recurrent models too; stricter than A.2's two families, "
                  "which rec2-ood-matches-gdpp reads; median seed",
              role="stricter"),
        Claim(id="rec2-interpolated-ood", source="Fig. 6b, A.2", experiment="oswald-deep",
              claim="out of distribution the interpolated recurrent model (midpoint of its "
                    "trained products and the GD++ construction) equals GD++ too (alpha <= 1.5, input and teacher scale)",
              measure=lambda r: r[DEEP][X.DEEP_OOD.format(tag="rec2-interpolated")], op="<", threshold=0.1,
              why="Fig. 6b draws the interpolated model beside the recurrent TF and GD++; the bar of "
                  "rec2-ood-matches-gdpp; median seed"),
        Claim(id="five-beats-gd5", source="Fig. 3b, sec. 3", experiment="oswald-deep",
              claim="5-layer LSA loss below 5-step GD (ratio)",
              measure=lambda r: r[DEEP][X.DEEP_MEDIAN.format(tag="five", measure="tf_loss")] / r[DEEP][X.DEEP_GD_LOSS.format(tag="five")],
              op="<", threshold=1.0,
              why="sec. 3: models with K layers 'generally outperform K steps of plain gradient descent' (this claim "
                  "compared with 2-step GD before; see docs/reproduction-notes.md); median seed"),
        Claim(id="five-near-zero", source="Fig. 3b", experiment="oswald-deep",
              claim="the 5-layer LSA reaches a loss close to 0 (loss / zero predictor)",
              measure=lambda r: r[DEEP][X.DEEP_MEDIAN.format(tag="five", measure="tf_loss")]
                                                                                 / r[DEEP]["five.zero_loss"], op="<", threshold=0.1,
              why="an order of magnitude below the zero predictor; median seed"),
        Claim(id="five-matches-gdpp-loss", source="Fig. 3b", experiment="oswald-deep",
              claim="the 5-layer LSA reaches GD++'s loss (|TF / GD++ - 1|)",
              measure=lambda r: abs(r[DEEP][X.DEEP_MEDIAN.format(tag="five", measure="tf_loss")]
                                                                                     / r[DEEP]["five.gdpp_loss"] - 1), op="<", threshold=0.1,
              why="as rec2-matches-gdpp-loss; GD++ the best of three fits, the code's Adam fit among them; median "
                  "seed, inconclusive where the seeds, or the ends of its 95% interval over held-out tasks (paired "
                  "bootstrap; per-task losses are heavy-tailed under the token clip), fall on both sides of the bar"
                  + _GDPP_MINIMUM_WHY,
              per_seed=lambda r: _loss_match_per_seed(r, "five", "five.gdpp_loss"),
              replicates=lambda r: _loss_match_replicates(r, "five", "five.gdpp_loss"),
              values=lambda r: _gdpp_fit_values(r, "five.gdpp_fits"),
              unresolved=lambda r: _gdpp_unconverged(r, "five.gdpp_fits")),
        Claim(id="five-matches-gdpp", source="Fig. 3", experiment="oswald-deep",
              claim="5-layer LSA is well described by GD++ (per-layer eta, gamma), not by 5-step GD "
                    "(prediction difference to GD++ / to GD)",
              measure=lambda r: r[DEEP][X.DEEP_MEDIAN.format(tag="five", measure="pd_gdpp")] / r[DEEP][X.DEEP_MEDIAN.format(tag="five", measure="pd_gd")],
              op="<", threshold=0.5,
              why="sec. 3: deep models are 'well described' by GD++: at least twice as close to GD++ as to GD. A ratio "
                  "below 1 is met by any learner between the two that leans to GD++, e.g. "
                  "0.4 GD + 0.6 GD++ (ratio 0.67: tests/suites/test_bars.py); median seed"),
        Claim(id="five-ood-near-gdpp", source="Fig. 6c, A.2", experiment="oswald-deep",
              claim="out of distribution the 5-layer LSA stays near its GD++ (alpha <= 1.5, input "
                    "and teacher scale)",
              measure=lambda r: r[DEEP][X.DEEP_OOD.format(tag="five")], op="<", threshold=0.2,
              why="A.2: 'remarkably similar' to GD++ though 'the match for deeper architectures starts to become "
                  "worse': twice the 10% of ood; A.2's two families; median seed"),
        # ---- Fig. 7 and 8: stacks of depth 2 to 4
        Claim(id="depths-closer-to-gdpp", source="Fig. 7, 8", experiment="oswald-depth",
              claim="every depth variant is well described by GD++ with as many steps, not by GD "
                    "(largest prediction difference to GD++ / to GD)",
              measure=lambda r: r["oswald-depth"][X.DEPTH_MAX_PD_RATIO], op="<", threshold=0.5,
              why="sec. 3: their behaviour is 'well described' by GD++; the bar of five-matches-gdpp (at least twice as "
                  "close to GD++ as to GD); median seed of each model"),
        Claim(id="depths-ood-near-gdpp", source="Fig. 7, A.2", experiment="oswald-depth",
              claim="out of distribution the depth 2-4 stacks stay near GD++ with as many steps (largest over "
                    "models, alpha <= 1.5, where GD++ beats the zero predictor)",
              measure=_depths_ood_where_gdpp_learns, op="<", threshold=0.2,
              why="as five-ood-near-gdpp (bar unchanged); median seeds. The measure changed after it FAILed: over "
                  "every alpha <= 1.5 it gave 1.09e11 in full mode (2026-11-27), at input scale 1.5 where the "
                  "unclipped stacks and their GD++ both diverge (layers-3: loss 2.8e14 against GD++'s 2.5e3, the "
                  "zero predictor's about 4); it now reads the alphas where the reference is still a learner "
                  "(its loss below the zero predictor's), lists those left out, and is untested where none is "
                  "left; the measure before stays in the results"),
        Claim(id="depths-ood-near-gdpp-every-alpha", source="Fig. 7, A.2", experiment="oswald-depth",
              claim="the same at every alpha <= 1.5, GD++ diverging or not (largest over models)",
              measure=lambda r: r["oswald-depth"][X.DEPTH_OOD_MAX], op="<", threshold=0.2,
              why="depths-ood-near-gdpp's measure before it FAILed (1.09e11, 2026-11-27); median seeds",
              role="stricter"),
        Claim(id="depths-beat-gd", source="Fig. 7, 8", experiment="oswald-depth",
              claim="LSA stacks of depth 2-4 (recurrent or not; in full mode also 4 heads with MLPs) "
                    "beat GD with as many steps (largest TF / GD loss)",
              measure=lambda r: r["oswald-depth"][X.DEPTH_MAX_TF_OVER_GD], op="<", threshold=1.0,
              why="median seed of each model"),
        # ---- Fig. 13: GD++'s curvature correction
        Claim(id="curvature", source="Fig. 13", experiment="oswald-curvature",
              claim="the gamma of trained recurrent TFs lowers the median condition number of the "
                    "transformed Hessian (ratio to gamma = 0)",
              measure=lambda r: r["oswald-curvature"][X.KAPPA_RATIO], op="<", threshold=1.0,
              why="any reduction supports the curvature-correction reading"),
        Claim(id="curvature-eigenvalues-in-range", source="Fig. 13", experiment="oswald-curvature",
              claim="the observed eigenvalues of X X^T stay below 1 / gamma of the "
                    "trained TFs (gamma * 99th percentile of the largest eigenvalue)",
              measure=lambda r: r["oswald-curvature"][X.GAMMA_TIMES_LAMBDA_MAX], op="<", threshold=1.0,
              why="A.10: the spectrum stays inside [0, 1/gamma], where lambda (1 - gamma lambda)^2 is increasing"),
        Claim(id="curvature-derived-gamma-larger", source="A.10, Fig. 13", experiment="oswald-curvature",
              claim="the gamma derived from the smallest and largest eigenvalue over "
                    "all tasks is larger than the trained models' (ratio)",
              measure=lambda r: r["oswald-curvature"][X.GAMMA_DERIVED_OVER_TF], op=">", threshold=1.0,
              why="'the optimal gamma based on our derivation ... obtains a slightly larger gamma as an optimal value': "
                  "the direction only (the text gives no size for 'slightly'); smallest eigenvalue cut at 0.1 (the "
                  "source's cut is lost); median seed's gamma"),
        Claim(id="curvature-explodes", kind="check", source="Fig. 13, A.10", experiment="oswald-curvature",
              claim="beyond gamma of about 0.1 the condition numbers explode (90th percentile over "
                    "tasks at gamma = 0.2 / at gamma = 0; smallest over the N of the sweep)",
              measure=lambda r: r["oswald-curvature"][X.KAPPA_EXPLODES], op=">", threshold=10.0,
              why="A.10: 'for values larger than 0.1 the distribution quickly exhibits exploding condition numbers': "
                  "the upper tail of the distribution grows by an order of magnitude at twice that gamma; gamma = 0.1 "
                  "itself (the edge) fails the bar at N = 10 (tests/suites/test_bars.py). The bar before (median ratio > 1) "
                  "passed a median that merely doubled"),
        Claim(id="curvature-in-range-every-n", source="Fig. 13, A.10", experiment="oswald-curvature",
              claim="at every N of the sweep the eigenvalues stay below 1 / gamma of the "
                    "models trained at that N (largest gamma * 99th percentile of lambda_max)",
              measure=lambda r: r["oswald-curvature"][X.N_SWEEP_GAMMA_TIMES_LAMBDA_MAX], op="<", threshold=1.0,
              why="A.10: gammas read off models 'trained on different task distributions'; 'the observed eigenvalues "
                  "stay within [0, 1/gamma]'; median seed's gamma at each N"),
        Claim(id="curvature-lowers-kappa-every-n", source="Fig. 13, A.10", experiment="oswald-curvature",
              claim="at every N of the sweep the trained gamma lowers the median "
                    "condition number (largest ratio to gamma = 0)",
              measure=lambda r: r["oswald-curvature"][X.N_SWEEP_KAPPA_RATIO], op="<", threshold=1.0,
              why="as the claim curvature, at each N; the smallest eigenvalue cut at 0.1 as for curvature-explodes"),
        # ---- Fig. 11 and 12: softmax attention
        Claim(id="softmax-1head-worse", source="Fig. 11, 12", experiment="oswald-softmax",
              claim="one softmax head is worse than GD (loss / GD)",
              measure=lambda r: r[SOFTMAX][X.SOFTMAX_LOSS_OVER_GD.format(variant="softmax1")], op=">", threshold=1.01,
              why="worse by more than 1% (beyond evaluation noise)"),
        Claim(id="softmax-lr-no-help", source="A.9", experiment="oswald-softmax",
              claim="tuning the learning rate makes no significant difference to one softmax head "
                    "(largest / smallest loss over Adam lr 3e-4, 1e-3, 3e-3)",
              measure=lambda r: r[SOFTMAX][X.SOFTMAX_LR_SPREAD], op="<", threshold=1.05,
              why="'no significant difference over the hyperparameters': within 5% (the tolerance of 'reaches GD' "
                  "claims); median seed per lr"),
        Claim(id="softmax-1head-worse-any-lr", source="A.9", experiment="oswald-softmax",
              claim="at its best learning rate one softmax head is still worse than GD (loss "
                    "/ GD)",
              measure=lambda r: r[SOFTMAX][X.SOFTMAX_BEST_LR], op=">", threshold=1.01,
              why="as softmax-1head-worse, for the best of the three learning rates"),
        Claim(id="softmax-2heads-closer", source="Fig. 11, 12", experiment="oswald-softmax",
              claim="two softmax heads come closer to GD than one (ratio of their losses)",
              measure=lambda r: r[SOFTMAX][X.SOFTMAX_LOSS_OVER_GD.format(variant="softmax2")]
                      / r[SOFTMAX][X.SOFTMAX_LOSS_OVER_GD.format(variant="softmax1")], op="<", threshold=1.0,
              why="median seed"),
        Claim(id="softmax-2heads-still-worse", source="Fig. 12b, A.9", experiment="oswald-softmax",
              claim="two softmax heads still do not reach GD (loss / GD)",
              measure=lambda r: r[SOFTMAX][X.SOFTMAX_LOSS_OVER_GD.format(variant="softmax2")], op=">", threshold=1.01,
              why="A.9: 'difficulties to match the loss values' of GD; the threshold of softmax-1head-worse"),
        Claim(id="softmax-2heads-align-better", source="Fig. 12, A.9", experiment="oswald-softmax",
              claim="two softmax heads align better with GD than one (cosine of one head "
                    "/ of two)",
              measure=lambda r: r[SOFTMAX]["softmax1.cosine_median"] / r[SOFTMAX]["softmax2.cosine_median"],
              op="<", threshold=1.0,
              why="A.9: 'very much improved alignment'; median seed"),
        Claim(id="softmax-heads-cancel", source="Fig. 11, A.9", experiment="oswald-softmax",
              claim="in the two-head softmax layer the off-diagonal terms of the heads' scaled "
                    "W_K^T W_Q cancel in their sum (norm of the sum's / mean of the heads')",
              measure=lambda r: r[SOFTMAX][X.SOFTMAX_HEADS_CANCEL], op="<", threshold=0.2,
              why="'an almost perfect cancellation': the sum keeps less than a fifth of a head's off-diagonal mass; "
                  "median seed",
              per_seed=lambda r: r[SOFTMAX][X.seeds_key(X.SOFTMAX_HEADS_CANCEL)]),
        # ---- Fig. 15: phase transitions of training
        Claim(id="phase-seed-dependent", source="Fig. 15, A.11", experiment="oswald-phase",
              claim="with one head the phase transition comes at a seed-dependent step (slowest "
                    "/ fastest seed's step)",
              measure=lambda r: r["oswald-phase"][X.TRANSITION_SPREAD.format(heads=1)], op=">", threshold=1.5,
              why="A.11: the transitions depend on the seed; the slowest seed at least half as late again as the fastest"),
        Claim(id="two-heads-stabilise", source="Fig. 15", experiment="oswald-phase",
              claim="two heads make the slowest seed's phase transition earlier than one head "
                    "(ratio of the slowest seeds' transition steps)",
              measure=lambda r: r["oswald-phase"][X.SLOWEST_TRANSITION.format(heads=2)] / r["oswald-phase"][X.SLOWEST_TRANSITION.format(heads=1)],
              op="<", threshold=1.0,
              why="the paper: two heads mitigate the seed-dependent instabilities"),
        Claim(id="phase-seed-dependent-training", source="Fig. 15, A.11", experiment="oswald-phase",
              claim="on the training loss too (Fig. 15's curves), the one-head "
                    "transition comes at a seed-dependent step (slowest / fastest seed's step)",
              measure=lambda r: r["oswald-phase"]["training." + X.TRANSITION_SPREAD.format(heads=1)],
              op=">", threshold=1.5,
              why="as phase-seed-dependent, read where the figure reads it: each evaluation interval's mean training "
                  "loss within 5% of GD"),
        Claim(id="two-heads-stabilise-training", source="Fig. 15", experiment="oswald-phase",
              claim="on the training loss too, two heads make the slowest seed's "
                    "transition earlier than one head (ratio of the slowest seeds' steps)",
              measure=lambda r: r["oswald-phase"]["training." + X.SLOWEST_TRANSITION.format(heads=2)]
                      / r["oswald-phase"]["training." + X.SLOWEST_TRANSITION.format(heads=1)], op="<", threshold=1.0,
              why="as two-heads-stabilise, on the training loss"),
        # ---- Fig. 15 right and 16: a fixed training set
        Claim(id="grokking", source="Fig. 15 right, A.11", experiment=FIXED,
              claim="one block (LSA + MLP) on 8192 fixed tasks grokks: the held-out loss rises to twice "
                    "its first value, then ends within 20% of GD (seeds that do)",
              measure=lambda r: r[FIXED][X.GROKKING_SEEDS], op=">", threshold=0.5,
              why="the source shows one run and says it needed 'carefully tuning the learning rate and batchsize' "
                  "(values not given: full mode tries lr 3e-4, 1e-3 and 3e-3 at batch 2048, quick mode 1e-3); "
                  "'drastically' read as 2x, 'almost matching' as 20%; at least one seed at the best learning rate"),
        Claim(id="fixed-data-more-is-better", source="Fig. 16", experiment="oswald-fixed-data",
              claim="held-out loss with 8192 training tasks below that with 128 (ratio)",
              measure=lambda r: r[FIXED][X.FIXED_LOSS_OVER_GD.format(size=8192)]
                      / r[FIXED][X.FIXED_LOSS_OVER_GD.format(size=128)], op="<", threshold=1.0,
              why="median seed"),
        Claim(id="fixed-data-8192", source="Fig. 16", experiment="oswald-fixed-data",
              claim="with 8192 training tasks the held-out loss is within 5% of GD",
              measure=lambda r: r[FIXED][X.FIXED_LOSS_OVER_GD.format(size=8192)], op="<", threshold=1.05,
              why="the paper's 8192-task curve reaches GD; 5% for the reduced training"),
        Claim(id="fixed-data-aligns", source="Fig. 16, A.12", experiment="oswald-fixed-data",
              claim="even with few fixed training tasks (512 and more) the trained layer aligns "
                    "with GD (smallest sensitivity cosine)",
              measure=lambda r: r[FIXED][X.FIXED_MIN_COSINE], op=">", threshold=0.99,
              why="A.12: weights that 'align remarkably well' with GD, as Fig. 2's layer does: the bar of 1layer-cosine "
                  "(the authors' Fig. 2 reads 1.0). The bar before (0.9) passed two GD steps, whose cosine with one "
                  "step is 0.91 (tests/suites/test_bars.py); median seed per size"),
        # ---- Fig. 14: LayerNorm
        Claim(id="layernorm-lower-alignment", source="Fig. 14a", experiment="oswald-softmax",
              claim="LayerNorm lowers the alignment with GD (sensitivity cosine)",
              measure=lambda r: r[SOFTMAX]["layernorm.cosine_median"], op="<", threshold=0.99,
              why="below the bar at which 1layer-cosine calls the alignment about 1; median seed"),
        Claim(id="layernorm-heads-no-help", source="A.9", experiment="oswald-softmax",
              claim="with LayerNorm a second head does not help substantially (|loss with 2 "
                    "heads / with 1 - 1|)",
              measure=lambda r: r[SOFTMAX][X.LN_HEADS_CHANGE], op="<", threshold=0.1,
              why="'including more heads does not help substantially': less than 10% change; median seeds"),
        Claim(id="layernorm-between-worse", source="Fig. 14b, A.9", experiment=SOFTMAX,
              claim="two LSA layers with a LayerNorm between them lose against two GD steps "
                    "(loss / GD)",
              measure=lambda r: r[SOFTMAX][X.SOFTMAX_LOSS_OVER_GD.format(variant="layernorm-between")],
              op=">", threshold=1.01,
              why="'we overall see inferior performance to one or two steps of GD'; as layernorm-worse (1%); median "
                  "seed"),
        Claim(id="layernorm-between-worse-gdpp", source="Fig. 14b, A.9", experiment=SOFTMAX,
              claim="two LSA layers with a LayerNorm between them lose against two steps "
                    "of GD++ (loss / GD++, per-step eta and gamma)",
              measure=lambda r: r[SOFTMAX][X.LN2_LOSS_OVER_GDPP], op=">", threshold=1.01,
              why="A.9: 'inferior performance to one or two steps of GD or two steps of GD++'; the bar of "
                  "layernorm-worse (1%); median seed"),
        Claim(id="layernorm-between-ood-better", source="A.9, Fig. 14b", experiment=SOFTMAX,
              claim="with two layers too, LayerNorm generalises better to larger inputs "
                    "and targets (LN model's loss / the plain 2-layer LSA's at twice the training scale, the larger of "
                    "inputs and teacher)",
              measure=lambda r: r[SOFTMAX][X.LN2_OOD], op="<", threshold=1.0,
              why="as layernorm-ood-better, for Fig. 14's two-layer OOD panel (speculative in the source)"),
        Claim(id="layernorm-ood-better", source="A.9, Fig. 14", experiment=SOFTMAX,
              claim="LayerNorm generalises better to larger inputs and targets (LN + LSA loss / "
                    "LSA loss at twice the training scale, the larger of inputs and teacher)",
              measure=lambda r: r[SOFTMAX][X.LN_OOD], op="<", threshold=1.0,
              why="the source only speculates ('we speculate that LayerNorm ... could act as some form of data "
                  "normalization ... for larger inputs as well as targets'); A.2's two families, alpha = 2, median "
                  "seeds"),
        Claim(id="layernorm-worse", source="Fig. 14", experiment="oswald-softmax",
              claim="LayerNorm before attention loses performance against GD (loss / GD)",
              measure=lambda r: r[SOFTMAX][X.SOFTMAX_LOSS_OVER_GD.format(variant="layernorm")], op=">", threshold=1.01,
              why="worse by more than 1%"),
    ]
