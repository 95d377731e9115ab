"""Claims of source 002 (categorical in-context learning with kernel attention), with the tolerance of each.

The first set was written before the first quick run; the agreement, invariance, depth, template and
`-vs-untrained` claims were written, with their bars argued, before the run that first measured
them. The source's text gives no number for any of them (its figures are lost in the text we have, and the
authors' public code implements the later ICML 2025 version: see docs/sources/categorical.md), so each bar is
argued from the source's wording and calibrated where the docs say so: it must fail an untrained model.
"""

from __future__ import annotations

from icgd.claims.base import Claim, suite
from icgd.sources.categorical import keys as X
from icgd.sources.categorical.references import REFERENCES

GVT = "categorical-gd-vs-tf"
HEADS = "categorical-heads"
CONTEXT = "categorical-context"
DEPTH = "categorical-depth"
FEW = "categorical-fewshot"
TEMPLATES = "categorical-templates"
AGREE_KERNELS = ("softmax", "rbf", "linear")  # the kernels whose Trained TF the source shows beside GD (Fig. 3)
#: the kernels whose GD and Trained TF maps the source shows (Fig. 2, 6-9); the other four are stricter checks
FIGURE_KERNELS = ("softmax", "rbf", "linear", "exponential", "laplacian")
ALL_KERNELS = FIGURE_KERNELS + ("sigmoid", "polynomial", "cosine", "chi_squared")
NONLINEAR = ("softmax", "rbf", "exponential", "laplacian")
#: kernels whose agreement claim is a reading of ours, not the source's: the source draws Laplacian maps but
#: states the agreement for the kernels of Fig. 3 and calls training with the Laplacian kernel unstable (App. C)
OUR_READING = ("laplacian",)

#: sensitivity cosine of the Trained TF to its GD model, the source's "same function" (Fig. 2: the maps of the
#: two rows agree; von Oswald et al. measure agreement by this cosine)
AGREE_COSINE = 0.9

#: |TF / GD - 1| for "near exact agreement" at every N (Fig. 4 right): two curves on a log axis whose markers
#: overlap. Read at matplotlib's defaults (6-point markers on an axis about 3 inches tall spanning the 0.8
#: decade of the MSEs plotted), one marker is 0.022 decade, a 5% relative difference; wider apart, the curves
#: are visibly two. Argued before the run that first measured it.
NEAR_EXACT = 0.05


def _agreement(r):
    return max(abs(r[GVT][X.TF_OVER_GD.format(kernel=k)] - 1) for k in AGREE_KERNELS)


def _agree_claim(kernel: str) -> Claim:
    k = X.SENS_COS.format(kernel=kernel)
    return Claim(id=f"agree-{kernel}", source="Fig. 2, 6-9" if kernel in FIGURE_KERNELS else "App. (kernels)", experiment=GVT,
                 claim=f"{kernel}: the Trained TF computes the GD model's function, 1 layer, 1 head (sensitivity "
                       "cosine, median seed; untrained TF and prediction differences beside it)",
                 measure=lambda r: r[GVT][k], op=">", threshold=AGREE_COSINE,
                 why="'close agreement between the GD and Trained TF, for a single attention layer and one attention head': the "
                     "same function, not only the same loss; 0.9 leaves room for the categorical outputs' noise, and the "
                     "untrained TF (the same seeds' initial weights) must fail it (its value beside the measure)",
                 role="source" if kernel in FIGURE_KERNELS and kernel not in OUR_READING else "stricter",
                 per_seed=lambda r: r[GVT][X.SENS_COS_SEEDS.format(kernel=kernel)],
                 values=lambda r: {"untrained": r[GVT][X.SENS_COS_UNTRAINED.format(kernel=kernel)],
                        "pred. diff.": r[GVT][X.PRED_DIFF.format(kernel=kernel)],
                        "untrained pred. diff.": r[GVT][X.PRED_DIFF_UNTRAINED.format(kernel=kernel)]})


def _fewshot_vs_untrained(kernel: str) -> Claim:
    acc, before = X.FEWSHOT_ACCURACY_SEEDS.format(kernel=kernel), X.FEWSHOT_UNTRAINED_SEEDS.format(kernel=kernel)
    return Claim(id=f"fewshot-{kernel}-vs-untrained", source="Fig. 5", experiment=FEW,
                 claim=f"{kernel} attention: training the GD model on the training classes raises "
                       "its accuracy on held-out classes (trained minus untrained, median split; the grid-tuned baseline beside)",
                 measure=lambda r: r[FEW][X.FEWSHOT_ACCURACY.format(kernel=kernel)] - r[FEW][X.FEWSHOT_UNTRAINED.format(kernel=kernel)],
                 op=">", threshold=0.1,
                 why="Fig. 5 plots accuracy rising over training steps: learning the rates on training classes is what "
                     "makes the held-out accuracy; 10 points (against chance 1/3) is a rise a curve shows, and the untrained "
                     "model (the authors' initial rates) scores 0 by construction",
                 per_seed=lambda r: [a - b for a, b in zip(r[FEW][acc], r[FEW][before])],
                 values=lambda r: {"trained": r[FEW][X.FEWSHOT_ACCURACY.format(kernel=kernel)],
                        "untrained": r[FEW][X.FEWSHOT_UNTRAINED.format(kernel=kernel)],
                        "grid-tuned": r[FEW][X.FEWSHOT_TUNED.format(kernel=kernel)]})


#: the probability the source reports for the most probable label (sec. 4, ImageNet paragraph)
NEAR_PROBABILITY = 0.9


@suite("categorical", references=REFERENCES)
def categorical() -> list[Claim]:
    return [
        Claim(id="gd-tf-agree", source="Fig. 3", experiment=GVT,
              claim="GD model and Trained TF reach the same MSE, 1 layer, 1 head (largest |TF/GD - 1| "
                    "over softmax, RBF, linear; median seed)",
              measure=_agreement, op="<", threshold=0.1,
              why="'very close agreement with the GD-designed Transformer' (Fig. 3, MSE over training); 10% relative, "
                  "the tolerance of source 000's agreement claims"),
        *[_agree_claim(k) for k in ALL_KERNELS],
        Claim(id="nonlinear-beats-linear-xor", source="Fig. 3, 7", experiment=TEMPLATES,
              claim="on the XOR-like templates, every nonlinear kernel's GD model beats the "
                    "linear one (largest MSE ratio nonlinear / linear)",
              measure=lambda r: r[TEMPLATES][X.TEMPLATE_NONLINEAR_OVER_LINEAR.format(template="xor")],
              op="<", threshold=1.0,
              why="'the linear kernel cannot model the nonlinear decision surfaces ... slightly less accurate'; any "
                  "margin counts. Stated for the XOR-like templates only: on the near-linear ones (also measured, "
                  "docs) the statement need not hold"),
        Claim(id="heads-change-little", source="Fig. 4 left", experiment=HEADS,
              claim="1-4 Trained TF softmax heads perform very close to the 1-head GD model "
                    "(largest |TF/GD - 1| over head counts, median seeds)",
              measure=lambda r: r[HEADS][X.HEADS_MAX_OVER_GD], op="<", threshold=0.1,
              why="'very close'; the same 10% as above"),
        Claim(id="softmax-improves-with-n", source="Fig. 4 right", experiment=CONTEXT,
              claim="a softmax GD model trained at N = 20 applied unchanged at N = 5..160: "
                    "the MSE falls at every step (largest consecutive ratio)",
              measure=lambda r: r[CONTEXT][X.CONTEXT_MAX_RATIO.format(model="softmax_gd")], op="<", threshold=1.0,
              why="'as N increases the accuracy of the model improves'"),
        Claim(id="softmax-tf-improves-with-n", source="Fig. 4 right", experiment=CONTEXT,
              claim="the same for the softmax Trained TF (largest consecutive ratio)",
              measure=lambda r: r[CONTEXT][X.CONTEXT_MAX_RATIO.format(model="softmax_tf")], op="<", threshold=1.0,
              why="as above"),
        Claim(id="softmax-tf-gd-every-n", source="Fig. 4 right", experiment=CONTEXT,
              claim="softmax Trained TF and GD model agree at every N = 5..160 (largest |TF/GD - 1| "
                    "over N, median seed)",
              measure=lambda r: r[CONTEXT][X.CONTEXT_TF_OVER_GD_MAX], op="<", threshold=NEAR_EXACT,
              why="'near exact agreement': markers that overlap on the figure's log axis (NEAR_EXACT in "
                  "icgd.sources.categorical.claims)",
              per_seed=lambda r: r[CONTEXT][X.CONTEXT_TF_OVER_GD_MAX_SEEDS]),
        Claim(id="softmax-invariant", source="Fig. 4 right", experiment=CONTEXT,
              claim="the softmax GD model trained at N = 20, applied unchanged at N = 5..40 (full "
                    "5..160), scores as the same model trained at each N (largest |unchanged / retrained - 1|)",
              measure=lambda r: r[CONTEXT][X.CONTEXT_INVARIANCE.format(model="softmax_gd")], op="<", threshold=0.1,
              why="'a model trained with context size N can be applied without change for arbitrary context size': "
                  "our reading, stricter than the source's, is that nothing is lost against retraining at N' (the "
                  "source says only that it can be applied; softmax-improves-with-n reads that); 10%, the tolerance "
                  "of 'the same performance' above",
              role="stricter"),
        Claim(id="rbf-unchanged-not-invariant", source="Fig. 4 right", experiment=CONTEXT,
              claim="an unnormalised kernel is not: the RBF GD model trained at N = 20 "
                    "applied unchanged at N = 40 (full 160), over the same model trained there (MSE ratio)",
              measure=lambda r: r[CONTEXT][X.CONTEXT_UNCHANGED_OVER_RETRAINED.format(model="rbf_gd")],
              op=">", threshold=1.1,
              why="'for all attention kernels other than softmax ... as long as the scaling in the code is adjusted': "
                  "without it the model is clearly worse than retrained; 10%"),
        Claim(id="rbf-needs-rescaling", source="Fig. 4 right", experiment=CONTEXT,
              claim="RBF GD model trained at N = 20 and applied at N = 160 with eta/20 unchanged "
                    "/ with eta/160 (MSE ratio)",
              measure=lambda r: r[CONTEXT][X.CONTEXT_FIXED_OVER_RESCALED], op=">", threshold=1.1,
              why="'as long as the scaling in the code is adjusted': the rescaling is what repairs it; 10%"),
        Claim(id="laplacian-tf-unstable", source="App. C", experiment=GVT,
              claim="the Laplacian Trained TF (1 layer, 1 head, every weight trained) trains "
                    "unstably: seeds whose training diverged",
              measure=lambda r: r[GVT][X.TF_DIVERGED.format(kernel="laplacian")], op=">", threshold=0,
              why="'the training of all model parameters (Trained TF) was unstable when considering attention with "
                  "the Laplacian kernel': at least one seed; a divergence is the instability the engine can see"),
        Claim(id="softmax-trains-stably", source="App. C", experiment=DEPTH,
              claim="softmax attention, every weight trained, 1-3 layers (full 1-4): runs that "
                    "diverged or ended above the prior's MSE",
              measure=lambda r: r[DEPTH][X.DEPTH_UNSTABLE.format(kernel="softmax")], op="<", threshold=1,
              why="'the softmax-based attention ... trained in a very stable manner, with increasing layer number'"),
        Claim(id="exponential-unstable", source="App. C", experiment=DEPTH,
              claim="exponential attention, same set-up: runs that diverged or ended above the "
                    "prior's MSE",
              measure=lambda r: r[DEPTH][X.DEPTH_UNSTABLE.format(kernel="exponential")], op=">", threshold=0,
              why="'the training process ... could become unstable numerically when the number of "
                  "attention layers increased': at least one run"),
        Claim(id="exponential-instability-grows", source="App. C", experiment=DEPTH,
              claim="exponential attention: the fraction of seeds that diverge or end "
                    "above the prior grows with depth (deepest minus 1 layer)",
              measure=lambda r: r[DEPTH][X.DEPTH_UNSTABLE_FRACTION.format(kernel="exponential", layers=_deepest(r))]
                      - r[DEPTH][X.DEPTH_UNSTABLE_FRACTION.format(kernel="exponential", layers=1)], op=">", threshold=0,
              why="'could become unstable ... when the number of attention layers increased': more unstable seeds at "
                  "the deepest stack than at one layer; any increase counts (5 seeds quick, 8 full)"),
        Claim(id="gd-depth-changes-little", source="Sec. 4 (depth)", experiment=DEPTH,
              claim="the softmax GD model with 2-3 layers (full 2-4) scores about as with 1 "
                    "(largest |MSE(L) / MSE(1) - 1|)",
              measure=lambda r: r[DEPTH][X.DEPTH_GD_MAX_CHANGE], op="<", threshold=0.15,
              why="'the results did not change significantly with more than one attention layer'; 15% relative: the "
                  "authors' later code's saved output (GD loss 1.058 at 1 layer, 0.971 / 0.943 / 0.924 at 2-4 on "
                  "their other data) passes at 0.13, while one layer against none (the prior) changes the MSE by over "
                  "40% here"),
        Claim(id="fewshot-accurate", source="Fig. 5", experiment=FEW,
              claim="few-shot classification of held-out classes from real features: softmax GD "
                    "model accuracy (3-way 10-shot, median split)",
              measure=lambda r: r[FEW][X.FEWSHOT_ACCURACY.format(kernel="softmax")], op=">", threshold=0.8,
              why="the source reaches 0.91 on ImageNet + VGG features; our features and classes differ (see the "
                  "README), so the claim checked is 'high accuracy on classes never seen', 0.8 against chance 1/3",
              per_seed=lambda r: r[FEW][X.FEWSHOT_ACCURACY_SEEDS.format(kernel="softmax")]),
        _fewshot_vs_untrained("linear"),
        _fewshot_vs_untrained("softmax"),
        Claim(id="fewshot-linear-like-softmax", source="Fig. 5", experiment=FEW,
              claim="linear and softmax attention reach about the same accuracy "
                    "(|difference|, median splits)",
              measure=lambda r: abs(r[FEW][X.FEWSHOT_ACCURACY.format(kernel="linear")]
                      - r[FEW][X.FEWSHOT_ACCURACY.format(kernel="softmax")]), op="<", threshold=0.03,
              why="'the linear and softmax attention Transformers perform almost identically'; 3 points"),
        Claim(id="fewshot-confident", source="sec. 4, ImageNet paragraph", experiment=FEW,
              claim="after training the most probable label's predicted probability is near 0.9 (softmax GD model, "
                    "|mean over held-out queries - 0.9|, median split)",
              measure=lambda r: abs(r[FEW][X.FEWSHOT_TOP_PROBABILITY.format(kernel="softmax")] - NEAR_PROBABILITY),
              op="<", threshold=0.1,
              why="'the most-probable label typically had a probability near 0.9': two-sided, 0.1 either way (a "
                  "tenth is where the text would say 'near 0.8' or 'near 1'). Argued before any run: the untrained "
                  "model (the authors' initial rates) predicts about the prior, 1/3, and fails by 0.57 "
                  "(tests/suites/test_bars.py)",
              per_seed=lambda r: [abs(v - NEAR_PROBABILITY)
                                  for v in r[FEW][X.FEWSHOT_TOP_PROBABILITY_SEEDS.format(kernel="softmax")]],
              values=lambda r: {"top probability": r[FEW][X.FEWSHOT_TOP_PROBABILITY.format(kernel="softmax")]}),
        Claim(id="fewshot-splits-agree", source="sec. 4, ImageNet paragraph", experiment=FEW,
              claim="the held-out accuracy hardly varies over the class splits (softmax GD model, largest minus "
                    "smallest)",
              measure=lambda r: r[FEW][X.FEWSHOT_SPREAD.format(kernel="softmax")], op="<", threshold=0.01,
              why="'with variation less than 0.001 on different splits of train and test'. Argued before any run: our "
                  "held-out accuracy is a mean over 2048 episodes x 15 queries, whose sampling error (0.0017 at "
                  "0.9) spreads five splits by about 0.004 alone, and our features are a substitute; 0.01 leaves "
                  "room for both and is still a tenth of the rise training gives (fewshot-*-vs-untrained, > 0.1): "
                  "splits of which one learnt less (a model left untrained on one split) fail it"),
        Claim(id="fewshot-softmax-faster", source="Fig. 5", experiment=FEW,
              claim="softmax converges faster: steps to 95% of the final accuracy, softmax / "
                    "linear (median splits; splits on both sides give inconclusive)",
              measure=lambda r: _steps95(r, "softmax") / _steps95(r, "linear"), op="<", threshold=1.0,
              why="'the softmax attention converges much faster'; any speed-up counts",
              per_seed=lambda r: [s / lin for s, lin in zip(r[FEW][X.FEWSHOT_STEPS_95_SEEDS.format(kernel="softmax")],
                       r[FEW][X.FEWSHOT_STEPS_95_SEEDS.format(kernel="linear")])],
              values=lambda r: {"softmax steps": _steps95(r, "softmax"), "linear steps": _steps95(r, "linear")},
              unresolved=_fewshot_unresolved),
    ]


def _steps95(r, kernel: str) -> float:
    return r[FEW][X.FEWSHOT_STEPS_95.format(kernel=kernel)]


def _fewshot_unresolved(r) -> str | None:
    """Both models at 95% of their final accuracy by the first evaluation: the measure is its spacing."""
    first = r[FEW][X.FEWSHOT_RESOLUTION]
    if max(_steps95(r, "softmax"), _steps95(r, "linear")) <= first:
        return f"both reach 95% of their final accuracy by the first evaluation (step {first:g})"
    return None


def _deepest(r) -> int:
    """The deepest stack the depth study trained (3 quick, 4 full)."""
    prefix = "exponential.l"
    return max(int(k[len(prefix):].split(".")[0]) for k in r[DEPTH] if k.startswith(prefix))
