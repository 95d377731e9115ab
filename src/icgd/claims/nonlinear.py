"""Claims of source 000's nonlinear (sec. 3) and copying (sec. 4) studies, with the tolerance of each."""

from __future__ import annotations

from icgd.claims.base import Claim, suite
from icgd.experiments import nonlinear as X

SINE = "oswald-sine"
COPY = "oswald-copy"


@suite("oswald-nonlinear")
def nonlinear() -> list[Claim]:
    return [
        Claim("sine-similar-loss", "TF (MLP + LSA) and GD on MLP features reach similar loss "
              "(larger / smaller loss, worst seed)", "Fig. 4", SINE, lambda r: r[SINE][X.SINE_LOSS_RATIO_MAX], "<", 1.25,
              "Fig. 4's two loss curves lie on top of each other; 25% is a visible gap on its log axis"),
        Claim("sine-beats-zero", "both learn in context: TF loss below a tenth of the zero predictor's",
              "Fig. 4", SINE, lambda r: r[SINE][X.SINE_MEDIAN.format(measure="tf_loss")] / r[SINE][X.ZERO_LOSS], "<", 0.1,
              "the fitted sines of Fig. 4 follow the targets closely; median seed"),
        Claim("sine-initial-functions", "their learnt initial functions (read out before the attention / GD "
              "step) agree: RMS distance / RMS(y)", "Fig. 4", SINE,
              lambda r: r[SINE][X.SINE_MEDIAN.format(measure="initial_function_distance")], "<", 0.2,
              "'almost identical' curves: a distance below 20% of the targets' size; median seed"),
        Claim("sine-final-functions", "their functions after the update agree: RMS distance / RMS(y)",
              "Fig. 4", SINE, lambda r: r[SINE][X.SINE_MEDIAN.format(measure="final_function_distance")], "<", 0.2, "as above"),
    ]


@suite("oswald-copy")
def copying() -> list[Claim]:
    return [
        Claim("copy-reaches-gd1", "softmax-then-linear model on interleaved tokens reaches one-step-GD loss "
              "(loss / 1-step GD)", "Fig. 5", COPY, lambda r: r[COPY][X.COPY_LOSS_OVER_GD1.format(first="softmax")], "<", 1.05,
              "'matches a single step of GD'; 5% for CPU-length training; median seed (training speed varies "
              "strongly with the seed, as the paper reports)"),
        Claim("copy-neighbour-gradient", "the first layer's output of token t depends on token t + 1 far more "
              "than on the others (final norm ratio)", "Fig. 5", COPY,
              lambda r: r[COPY][X.COPY_NEIGHBOUR_RATIO.format(first="softmax")], ">", 3.0,
              "Fig. 5: the neighbour gradient rises while the others stay near 0; a factor 3 is clearly apart"),
        Claim("copy-gradient-first", "the neighbour gradient rises before the loss drops (step where it is "
              "halfway up / step where the loss is halfway down to GD)", "Fig. 5", COPY,
              lambda r: r[COPY][X.COPY_GRADIENT_FIRST], "<", 1.0,
              "the paper: 'before the Transformer performance jumps to the one of GD' the neighbour dependence "
              "appears; median over the seeds whose loss dropped"),
        Claim("copy-linear-fails", "with a linear first layer the model does not reach one-step GD "
              "(loss / 1-step GD)", "sec. 4", COPY, lambda r: r[COPY][X.COPY_LOSS_OVER_GD1.format(first="linear")], ">", 1.05,
              "the paper could not train it; same budget and threshold as the softmax model; median seed"),
    ]
