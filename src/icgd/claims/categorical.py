"""Claims of source 002 (categorical in-context learning with kernel attention), with the tolerance of each.

The first set was written before the first quick run; the agreement, invariance, depth, template and
`-vs-untrained` claims of issue 35 were written, with their bars argued, before the run that first measured
them. The source's text gives no number for any of them (its figures are lost in the text we have, and the
authors' public code implements the later ICML 2025 version: see docs/sources/categorical.md), so each bar is
argued from the source's wording and calibrated where the docs say so: it must fail an untrained model.
"""

from __future__ import annotations

from icgd.claims.base import Claim, suite
from icgd.experiments.categorical import keys as X

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

#: sensitivity cosine of the Trained TF to its GD model, the source's "same function" (Fig. 2: the maps of the
#: two rows agree; von Oswald et al. measure agreement by this cosine)
AGREE_COSINE = 0.9

#: |TF / GD - 1| for "near exact agreement" at every N (Fig. 4 right): two curves on a log axis whose markers
#: overlap. Read at matplotlib's defaults (6-point markers on an axis about 3 inches tall spanning the 0.8
#: decade of the MSEs plotted), one marker is 0.022 decade, a 5% relative difference; wider apart, the curves
#: are visibly two. Argued before the issue-35 run; the earlier 10% was not argued from the figure.
NEAR_EXACT = 0.05


def _agreement(r):
    return max(abs(r[GVT][X.TF_OVER_GD.format(kernel=k)] - 1) for k in AGREE_KERNELS)


def _agree_claim(kernel: str) -> Claim:
    k = X.SENS_COS.format(kernel=kernel)
    return Claim(
        f"agree-{kernel}", f"{kernel}: the Trained TF computes the GD model's function, 1 layer, 1 head (sensitivity "
        "cosine, median seed; untrained TF and prediction differences beside it)",
        "Fig. 2, 6-9" if kernel in FIGURE_KERNELS else "App. (kernels)", GVT, lambda r: r[GVT][k], ">", AGREE_COSINE,
        "'close agreement between the GD and Trained TF, for a single attention layer and one attention head': the "
        "same function, not only the same loss; 0.9 leaves room for the categorical outputs' noise, and the "
        "untrained TF (the same seeds' initial weights) must fail it (its value beside the measure)",
        role="source" if kernel in FIGURE_KERNELS else "stricter",
        per_seed=lambda r: r[GVT][X.SENS_COS_SEEDS.format(kernel=kernel)],
        values=lambda r: {"untrained": r[GVT][X.SENS_COS_UNTRAINED.format(kernel=kernel)],
                          "pred. diff.": r[GVT][X.PRED_DIFF.format(kernel=kernel)],
                          "untrained pred. diff.": r[GVT][X.PRED_DIFF_UNTRAINED.format(kernel=kernel)]})


def _fewshot_vs_untrained(kernel: str) -> Claim:
    acc, before = X.FEWSHOT_ACCURACY_SEEDS.format(kernel=kernel), X.FEWSHOT_UNTRAINED_SEEDS.format(kernel=kernel)
    return Claim(
        f"fewshot-{kernel}-vs-untrained", f"{kernel} attention: training the GD model on the training classes raises "
        "its accuracy on held-out classes (trained minus untrained, median split; the grid-tuned baseline beside)",
        "Fig. 5", FEW,
        lambda r: r[FEW][X.FEWSHOT_ACCURACY.format(kernel=kernel)] - r[FEW][X.FEWSHOT_UNTRAINED.format(kernel=kernel)],
        ">", 0.1,
        "Fig. 5 plots accuracy rising over training steps: learning the rates on training classes is what "
        "makes the held-out accuracy; 10 points (against chance 1/3) is a rise a curve shows, and the untrained "
        "model (the authors' initial rates) scores 0 by construction",
        per_seed=lambda r: [a - b for a, b in zip(r[FEW][acc], r[FEW][before])],
        values=lambda r: {"trained": r[FEW][X.FEWSHOT_ACCURACY.format(kernel=kernel)],
                          "untrained": r[FEW][X.FEWSHOT_UNTRAINED.format(kernel=kernel)],
                          "grid-tuned": r[FEW][X.FEWSHOT_TUNED.format(kernel=kernel)]})


@suite("categorical")
def categorical() -> list[Claim]:
    return [
        Claim("gd-tf-agree", "GD model and Trained TF reach the same MSE, 1 layer, 1 head (largest |TF/GD - 1| "
              "over softmax, RBF, linear; median seed)", "Fig. 3", GVT, _agreement, "<", 0.1,
              "'very close agreement with the GD-designed Transformer' (Fig. 3, MSE over training); 10% relative, "
              "the tolerance of source 000's agreement claims"),
        *[_agree_claim(k) for k in ALL_KERNELS],
        Claim("nonlinear-beats-linear-xor", "on the XOR-like templates, every nonlinear kernel's GD model beats the "
              "linear one (largest MSE ratio nonlinear / linear)", "Fig. 3, 7", TEMPLATES,
              lambda r: r[TEMPLATES][X.TEMPLATE_NONLINEAR_OVER_LINEAR.format(template="xor")], "<", 1.0,
              "'the linear kernel cannot model the nonlinear decision surfaces ... slightly less accurate'; any "
              "margin counts. Stated for the XOR-like templates only: on the near-linear ones (also measured, "
              "docs) the statement need not hold"),
        Claim("heads-change-little", "1-4 Trained TF softmax heads perform very close to the 1-head GD model "
              "(largest |TF/GD - 1| over head counts, median seeds)", "Fig. 4 left", HEADS,
              lambda r: r[HEADS][X.HEADS_MAX_OVER_GD], "<", 0.1, "'very close'; the same 10% as above"),
        Claim("softmax-improves-with-n", "a softmax GD model trained at N = 20 applied unchanged at N = 5..160: "
              "the MSE falls at every step (largest consecutive ratio)", "Fig. 4 right", CONTEXT,
              lambda r: r[CONTEXT][X.CONTEXT_MAX_RATIO.format(model="softmax_gd")], "<", 1.0,
              "'as N increases the accuracy of the model improves'"),
        Claim("softmax-tf-improves-with-n", "the same for the softmax Trained TF (largest consecutive ratio)",
              "Fig. 4 right", CONTEXT, lambda r: r[CONTEXT][X.CONTEXT_MAX_RATIO.format(model="softmax_tf")], "<",
              1.0, "as above"),
        Claim("softmax-tf-gd-every-n", "softmax Trained TF and GD model agree at every N = 5..160 (largest |TF/GD - 1| "
              "over N, median seed)", "Fig. 4 right", CONTEXT, lambda r: r[CONTEXT][X.CONTEXT_TF_OVER_GD_MAX], "<",
              NEAR_EXACT, "'near exact agreement': markers that overlap on the figure's log axis (NEAR_EXACT in "
              "icgd.claims.categorical)", per_seed=lambda r: r[CONTEXT][X.CONTEXT_TF_OVER_GD_MAX_SEEDS]),
        Claim("softmax-invariant", "the softmax GD model trained at N = 20, applied unchanged at N = 5..40 (full "
              "5..160), scores as the same model trained at each N (largest |unchanged / retrained - 1|)",
              "Fig. 4 right", CONTEXT,
              lambda r: r[CONTEXT][X.CONTEXT_INVARIANCE.format(model="softmax_gd")], "<", 0.1,
              "'a model trained with context size N can be applied without change for arbitrary context size': "
              "nothing is lost against retraining at N'; 10%, the tolerance of 'the same performance' above"),
        Claim("rbf-unchanged-not-invariant", "an unnormalised kernel is not: the RBF GD model trained at N = 20 "
              "applied unchanged at N = 40 (full 160), over the same model trained there (MSE ratio)", "Fig. 4 right",
              CONTEXT, lambda r: r[CONTEXT][X.CONTEXT_UNCHANGED_OVER_RETRAINED.format(model="rbf_gd")], ">", 1.1,
              "'for all attention kernels other than softmax ... as long as the scaling in the code is adjusted': "
              "without it the model is clearly worse than retrained; 10%"),
        Claim("rbf-needs-rescaling", "RBF GD model trained at N = 20 and applied at N = 160 with eta/20 unchanged "
              "/ with eta/160 (MSE ratio)", "Fig. 4 right", CONTEXT,
              lambda r: r[CONTEXT][X.CONTEXT_FIXED_OVER_RESCALED], ">", 1.1,
              "'as long as the scaling in the code is adjusted': the rescaling is what repairs it; 10%"),
        Claim("laplacian-tf-unstable", "the Laplacian Trained TF (1 layer, 1 head, every weight trained) trains "
              "unstably: seeds whose training diverged", "App. C", GVT,
              lambda r: r[GVT][X.TF_DIVERGED.format(kernel="laplacian")], ">", 0,
              "'the training of all model parameters (Trained TF) was unstable when considering attention with "
              "the Laplacian kernel': at least one seed; a divergence is the instability the engine can see"),
        Claim("softmax-trains-stably", "softmax attention, every weight trained, 1-3 layers (full 1-4): runs that "
              "diverged or ended above the prior's MSE", "App. C", DEPTH,
              lambda r: r[DEPTH][X.DEPTH_UNSTABLE.format(kernel="softmax")], "<", 1,
              "'the softmax-based attention ... trained in a very stable manner, with increasing layer number'"),
        Claim("exponential-unstable", "exponential attention, same set-up: runs that diverged or ended above the "
              "prior's MSE", "App. C", DEPTH, lambda r: r[DEPTH][X.DEPTH_UNSTABLE.format(kernel="exponential")],
              ">", 0, "'the training process ... could become unstable numerically when the number of "
              "attention layers increased': at least one run"),
        Claim("exponential-instability-grows", "exponential attention: the fraction of seeds that diverge or end "
              "above the prior grows with depth (deepest minus 1 layer)", "App. C", DEPTH,
              lambda r: r[DEPTH][X.DEPTH_UNSTABLE_FRACTION.format(kernel="exponential", layers=_deepest(r))]
              - r[DEPTH][X.DEPTH_UNSTABLE_FRACTION.format(kernel="exponential", layers=1)], ">", 0,
              "'could become unstable ... when the number of attention layers increased': more unstable seeds at "
              "the deepest stack than at one layer; any increase counts (5 seeds quick, 8 full)"),
        Claim("gd-depth-changes-little", "the softmax GD model with 2-3 layers (full 2-4) scores about as with 1 "
              "(largest |MSE(L) / MSE(1) - 1|)", "Sec. 4 (depth)", DEPTH,
              lambda r: r[DEPTH][X.DEPTH_GD_MAX_CHANGE], "<", 0.15,
              "'the results did not change significantly with more than one attention layer'; 15% relative: the "
              "authors' later code's saved output (GD loss 1.058 at 1 layer, 0.971 / 0.943 / 0.924 at 2-4 on "
              "their other data) passes at 0.13, while one layer against none (the prior) changes the MSE by over "
              "40% here"),
        Claim("fewshot-accurate", "few-shot classification of held-out classes from real features: softmax GD "
              "model accuracy (3-way 10-shot, median split)", "Fig. 5", FEW,
              lambda r: r[FEW][X.FEWSHOT_ACCURACY.format(kernel="softmax")], ">", 0.8,
              "the source reaches 0.91 on ImageNet + VGG features; our features and classes differ (see the "
              "README), so the claim checked is 'high accuracy on classes never seen', 0.8 against chance 1/3",
              per_seed=lambda r: r[FEW][X.FEWSHOT_ACCURACY_SEEDS.format(kernel="softmax")]),
        _fewshot_vs_untrained("linear"),
        _fewshot_vs_untrained("softmax"),
        Claim("fewshot-linear-like-softmax", "linear and softmax attention reach about the same accuracy "
              "(|difference|, median splits)", "Fig. 5", FEW,
              lambda r: abs(r[FEW][X.FEWSHOT_ACCURACY.format(kernel="linear")]
                            - r[FEW][X.FEWSHOT_ACCURACY.format(kernel="softmax")]), "<", 0.03,
              "'the linear and softmax attention Transformers perform almost identically'; 3 points"),
        Claim("fewshot-softmax-faster", "softmax converges faster: steps to 95% of the final accuracy, softmax / "
              "linear (median splits; splits on both sides give inconclusive)", "Fig. 5", FEW,
              lambda r: _steps95(r, "softmax") / _steps95(r, "linear"), "<", 1.0,
              "'the softmax attention converges much faster'; any speed-up counts",
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
