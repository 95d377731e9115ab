"""Claims of von Oswald et al. 2023 (source 000), sec. 3-4: the sine study in the official code's set-up
(suite `oswald-nonlinear`, the default) and the paper text's (`oswald-sine-text`), and the copy study
(`oswald-copy`); one row per claim."""

from __future__ import annotations

from icgd.claims.base import Claim, suite
from icgd.sources.oswald import keys as X
from icgd.sources.oswald.references import REFERENCES

SINE = "oswald-sine"
SINE_CODE = "oswald-sine-code"
COPY = "oswald-copy"


@suite("oswald-nonlinear", references=REFERENCES["oswald-nonlinear"])
def nonlinear() -> list[Claim]:
    """Fig. 4's claims on the set-up of the code that made the figure (experiment oswald-sine-code;
    the default follows the code): heavy on a CPU, about an hour in quick mode."""
    return _sine_claims(SINE_CODE)


@suite("oswald-sine-text", references=REFERENCES["oswald-sine-text"])
def sine_text() -> list[Claim]:
    """The same claims on the paper text's task family (experiment oswald-sine; sec. 3 and A.7)."""
    return _sine_claims(SINE)


def _sine_claims(SINE: str) -> list[Claim]:  # noqa: N803 - the experiment, named as the module constant
    return [
        Claim(id="sine-similar-loss", source="Fig. 4", experiment=SINE,
              claim="the TF (MLP + LSA) reaches the loss of GD on MLP features, or a lower one "
                    "(TF / control loss)",
              measure=lambda r: r[SINE][X.SINE_TF_OVER_CONTROL.format(stat="median")], op="<", threshold=1.25,
              why="Fig. 4 compares the trained TF with the control it is explained by; the authors' own run ends with the "
                  "TF 25% below the control (docs/calibration.md), so the bar is one-sided: no more than 25% above it "
                  "(the symmetric larger / smaller bar this claim had before fails the authors' 1.33); median seed",
              per_seed=lambda r: r[SINE][X.SINE_SEEDS.format(measure="tf_over_control")]),
        Claim(id="sine-similar-loss-worst-seed", source="Fig. 4", experiment=SINE,
              claim="the same for every seed (TF / control loss, worst seed)",
              measure=lambda r: r[SINE][X.SINE_TF_OVER_CONTROL.format(stat="max")], op="<", threshold=1.25,
              why="as above, worst seed",
              role="stricter"),
        Claim(id="sine-alignment", source="Fig. 4", experiment=SINE,
              claim="the TF is nearer the control than the truth is (mean |y_TF - y_control| / mean "
                    "|y_control - y|)",
              measure=lambda r: r[SINE][X.SINE_PD_OVER_CONTROL_ERROR], op="<", threshold=0.8,
              why="Fig. 4's 'Preds diff' says the TF computes what the control computes, errors included: a perfect "
                  "predictor scores exactly 1 and fails, as does any learner whose errors are its own. The bar before "
                  "(20% of RMS(y)) passed the perfect predictor (tests/suites/test_bars.py); median seed",
              per_seed=lambda r: r[SINE][X.SINE_SEEDS.format(measure="pd_over_control_error")]),
        Claim(id="sine-partial-cosine", source="Fig. 4", experiment=SINE,
              claim="the TF's and the control's slopes d y_hat / d x_query agree at the end of "
                    "training (Fig. 4 middle's partial cosine)",
              measure=lambda r: r[SINE][X.SINE_PARTIAL_COSINE_FINAL], op=">", threshold=0.9,
              why="with Dx = 1 a task's cosine is +1 or -1, so the mean is 2p - 1 for p the share of tasks whose slopes "
                  "agree in sign: 0.9 asks for 95% of tasks. An untrained TF (cosine about 0) fails; median seed",
              per_seed=lambda r: r[SINE][X.SINE_SEEDS.format(measure="partial_cosine_final")]),
        Claim(id="sine-beats-zero", source="Fig. 4", experiment=SINE,
              claim="both learn in context: TF loss below a tenth of the zero predictor's",
              measure=lambda r: r[SINE][X.SINE_MEDIAN.format(measure="tf_loss")] / r[SINE][X.ZERO_LOSS],
              op="<", threshold=0.1,
              why="the fitted sines of Fig. 4 follow the targets closely; median seed",
              per_seed=lambda r: r[SINE][X.SINE_SEEDS.format(measure="tf_over_zero")]),
        Claim(id="sine-initial-functions", source="Fig. 4", experiment=SINE,
              claim="their learnt initial functions (read out before the attention / GD "
                    "step) agree: RMS distance / RMS of the control's initial function",
              measure=lambda r: r[SINE][X.SINE_MEDIAN.format(measure="initial_function_relative")],
              op="<", threshold=0.6,
              why="'almost identical' initial functions, measured against their own size: a zero function scores 1, "
                  "two unrelated ones about 1.4 (two untrained models: 1.36, tests/suites/test_bars.py). The authors' own "
                  "pair is a half-radian phase shift apart (0.47). The bar before (distance / RMS(y) < 0.2) failed "
                  "it (about 0.41); median seed",
              per_seed=lambda r: r[SINE][X.SINE_SEEDS.format(measure="initial_function_relative")]),
        Claim(id="sine-final-functions", source="Fig. 4", experiment=SINE,
              claim="their functions after the update agree: RMS distance / RMS(y)",
              measure=lambda r: r[SINE][X.SINE_MEDIAN.format(measure="final_function_distance")], op="<", threshold=0.2,
              why="as above",
              per_seed=lambda r: r[SINE][X.SINE_SEEDS.format(measure="final_function_distance")]),
    ]


def _copy_seeds(key: str):
    """The oswald-copy median `key` seed by seed (`seeds_key`), for a claim's sign test."""
    return lambda r: r[COPY][X.seeds_key(key)]


@suite("oswald-copy", references=REFERENCES["oswald-copy"])
def copying() -> list[Claim]:
    return [
        Claim(id="copy-reaches-gd1", source="Fig. 5", experiment=COPY,
              claim="softmax-then-linear model on interleaved tokens matches one-step GD's loss "
                    "(|loss / 1-step GD - 1|)",
              measure=lambda r: abs(r[COPY][X.COPY_LOSS_OVER_GD1.format(first="softmax")] - 1), op="<", threshold=0.05,
              why="'matches a single step of GD': equal within 5%, from either side. A one-sided loss / GD1 < 1.05 "
                  "would pass a model at 2-step GD's loss (0.8 of GD1: tests/suites/test_bars.py); median seed "
                  "(training speed varies strongly with the seed, as the paper reports)",
              per_seed=lambda r: [abs(v - 1) for v in _copy_seeds(X.COPY_LOSS_OVER_GD1.format(first="softmax"))(r)]),
        Claim(id="copy-neighbour-gradient", source="Fig. 5", experiment=COPY,
              claim="the first layer's output of token t depends on token t + 1 far more "
                    "than on the others (final norm ratio)",
              measure=lambda r: r[COPY][X.COPY_NEIGHBOUR_RATIO.format(first="softmax")], op=">", threshold=3.0,
              why="Fig. 5: the neighbour gradient rises while the others stay near 0; a factor 3 is clearly apart",
              per_seed=_copy_seeds(X.COPY_NEIGHBOUR_RATIO.format(first="softmax"))),
        Claim(id="copy-neighbour-gradient-code", source="Fig. 5", experiment=COPY,
              claim="the same with the official code's measure (norm of the task-mean "
                    "gradient of the summed output; 'other' = every token but itself, per token; final ratio)",
              measure=lambda r: r[COPY][X.COPY_CODE_NEIGHBOUR_RATIO], op=">", threshold=3.0,
              why="the factor 3 of copy-neighbour-gradient, on the quantity the authors' Fig. 5 plots (their analyse_copy); "
                  "median seed",
              per_seed=_copy_seeds(X.COPY_CODE_NEIGHBOUR_RATIO)),
        Claim(id="copy-own-token-kept", source="Fig. 5, A.5", experiment=COPY,
              claim="the first layer keeps its own token: |d t(e_j) / d e_j| at the end over at "
                    "initialisation (Fig. 5 right's own-token curve; |ratio - 1|)",
              measure=lambda r: r[COPY][X.COPY_OWN_KEPT], op="<", threshold=0.25,
              why="A.5's copy layer adds the neighbour's y to token j and leaves the token itself, so its own-token "
                  "derivative stays the residual's identity (sqrt(10) = 3.16 in the code's measure); a layer that "
                  "overwrites its token fails (|ratio - 1| near 1); median seed",
              per_seed=_copy_seeds(X.COPY_OWN_KEPT)),
        Claim(id="copy-others-small-throughout", source="Fig. 5", experiment=COPY,
              claim="token j stays independent of the other tokens during all of training "
                    "(largest |d t(e_j) / d e_other| / |d t(e_j) / d e_j| over the evaluations)",
              measure=lambda r: r[COPY][X.COPY_OTHERS_PEAK], op="<", threshold=0.1,
              why="sec. 3: 'staying independent on the others', read on the whole curve, the transition included (where "
                  "the authors' others' curve peaks): under a tenth of the token's own dependence. A layer that mixes "
                  "every token alike, without its residual, scores 1; median seed",
              per_seed=_copy_seeds(X.COPY_OTHERS_PEAK)),
        Claim(id="copy-gradient-first", source="Fig. 5", experiment=COPY,
              claim="the first layer's output becomes notably dependent on the neighbour before "
                    "the loss jumps (step where the neighbour gradient first reaches 3x the others' / step where the "
                    "loss is halfway down to GD)",
              measure=lambda r: r[COPY][X.COPY_ONSET_FIRST], op="<", threshold=1.0,
              why="sec. 4: 'before the Transformer performance jumps to the one of GD' the token 'becomes notably "
                  "dependant on the neighboring token while staying independent on the others': an onset, with the "
                  "factor 3 of copy-neighbour-gradient; median over the seeds whose loss dropped",
              per_seed=_copy_seeds(X.COPY_ONSET_FIRST)),
        Claim(id="copy-gradient-halfway-first", source="Fig. 5", experiment=COPY,
              claim="the neighbour gradient is halfway up before the loss is halfway down "
                    "(ratio of the steps)",
              measure=lambda r: r[COPY][X.COPY_GRADIENT_FIRST], op="<", threshold=1.0,
              why="the midpoint of the whole rise, which goes on after the drop, before the midpoint of the drop: "
                  "more than the source's onset (this was copy-gradient-first's measure before); median seed",
              role="stricter",
              per_seed=_copy_seeds(X.COPY_GRADIENT_FIRST)),
        Claim(id="copy-seeds-vary", source="Fig. 5, sec. 4", experiment=COPY,
              claim="training speed varies strongly with the seed (slowest / fastest seed's step "
                    "where the loss is halfway down)",
              measure=lambda r: r[COPY][X.COPY_SPEED_SPREAD], op=">", threshold=2.0,
              why="'the training speeds are highly variant given different training seeds': at least twice"),
        Claim(id="copy-not-gd2", source="Fig. 5, sec. 4", experiment=COPY,
              claim="the model matches one step of GD, not two (loss / 2-step GD)",
              measure=lambda r: r[COPY][X.COPY_LOSS_OVER_GD1.format(first="softmax")] * r[COPY]["gd1_loss"]
                      / r[COPY]["gd2_loss"], op=">", threshold=1.05,
              why="'a single (not two) step'; the 5% of copy-reaches-gd1; median seed",
              per_seed=lambda r: [v * r[COPY]["gd1_loss"] / r[COPY]["gd2_loss"]
                       for v in _copy_seeds(X.COPY_LOSS_OVER_GD1.format(first="softmax"))(r)]),
        Claim(id="copy-linear-fails", source="sec. 4", experiment=COPY,
              claim="with a linear first layer the model does not reach one-step GD "
                    "(loss / 1-step GD)",
              measure=lambda r: r[COPY][X.COPY_LOSS_OVER_GD1.format(first="linear")], op=">", threshold=1.05,
              why="the paper could not train it; same budget and threshold as the softmax model; median seed",
              per_seed=_copy_seeds(X.COPY_LOSS_OVER_GD1.format(first="linear"))),
    ]
