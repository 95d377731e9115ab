"""3-way 10-shot classification of held-out classes from real features (Fig. 5): the GD model with linear
and with softmax attention, over several class splits: `categorical-fewshot`."""

from __future__ import annotations

import numpy as np

from icgd.experiments.categorical.keys import (
    FEWSHOT_ACCURACY,
    FEWSHOT_SPREAD,
    FEWSHOT_STEPS_95,
)
from icgd.experiments.categorical.shared import GD_LR, SOURCE, cat_config
from icgd.experiments.common import (
    Size,
    curves,
    median,
)
from icgd.experiments.registry import ExperimentContext, register
from icgd.results.figures import band, label_axes, subplots

#: the feature set of each mode: quick and full need the `fewshot` extra; smoke uses scikit-learn's digits
FEWSHOT_DATA = {"smoke": ("digits", 4), "quick": ("glyphs-efficientnet", 15), "full": ("glyphs-efficientnet", 15)}

FEWSHOT_STEPS = Size(quick=500, full=5000, smoke=4)

FEWSHOT_EVAL_TASKS = Size(quick=1024, full=2048, smoke=32)


@register("categorical-fewshot", "few-shot classification of held-out classes from real features: GD model "
          "with linear vs softmax attention, accuracy over training steps, several class splits (Fig. 5)", SOURCE,
          quick_minutes=5, full_minutes=20)
def fewshot(ctx: ExperimentContext) -> None:
    name, test_classes = FEWSHOT_DATA[ctx.mode]
    from icgd.data.features import FEATURE_SETS

    rows, fig_data = [], {}
    for kernel in ("linear", "softmax"):
        accs, steps95, curves_k = [], [], []
        for split in ctx.seeds:
            label = f"cat-fewshot-{kernel}-split{split}"
            cfg = cat_config(ctx, label, {"kind": "kernel_gd", "kernel": kernel}, FEWSHOT_STEPS, seeds=[0], lr=GD_LR,
                             task_spec={"kind": "fewshot", "features": name, "test_classes": test_classes,
                                        "split_seed": split}, eval_tasks=FEWSHOT_EVAL_TASKS)
            res = ctx.train(label, cfg)
            steps, err = curves(res, "eval_loss")
            acc = 1 - err[0]
            final = float(acc[-1])
            reach = next((s for s, a in zip(steps, acc) if a >= 0.95 * final), steps[-1])
            accs.append(final)
            steps95.append(reach)
            curves_k.append(acc)
            rows.append({"kernel": kernel, "split_seed": split, "final_accuracy": final, "steps_to_95pct": reach,
                         "eta": res.learner(0).etas.detach().reshape(-1).tolist(),
                         "kernel_params": res.learner(0).kernel_params.detach().reshape(-1).tolist()})
        ctx.result(FEWSHOT_ACCURACY.format(kernel=kernel), median(accs))
        ctx.result(FEWSHOT_SPREAD.format(kernel=kernel), max(accs) - min(accs))
        ctx.result(FEWSHOT_STEPS_95.format(kernel=kernel), median(steps95))
        fig_data[kernel] = (steps, np.asarray(curves_k))
        ctx.report(f"{kernel}: held-out-class accuracy after training (source: 0.91, ImageNet + VGG)",
                   f"{median(accs):.3f} (splits {min(accs):.3f}-{max(accs):.3f}); "
                   f"95% of it at step {median(steps95):g}")
    ctx.table("fewshot", rows)
    ctx.note(f"Features: {name}: {FEATURE_SETS[name]}; {test_classes} classes held out per split; episodes of "
             "3 classes x 10 shots, 5 queries per class.")
    fig, (ax,) = subplots(1, width=5.0, height=3.6)
    for i, (kernel, (steps, ys)) in enumerate(fig_data.items()):
        band(ax, steps, ys, f"{kernel} attention (GD model)", f"C{i}")
    ax.axhline(1 / 3, color="grey", ls=":", label="chance")
    label_axes([ax], [f"3-way 10-shot, {name}"], ["accuracy on held-out classes"])
    ctx.figure("fewshot", fig)
