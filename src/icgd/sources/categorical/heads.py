"""The Trained TF with 1-4 softmax heads against the 1-head GD model (Fig. 4 left): `categorical-heads`."""

from __future__ import annotations

from icgd.experiments.common import (
    curves,
    median,
    seed_learners,
)
from icgd.experiments.registry import ExperimentContext, register
from icgd.results.figures import COLORS, band, label_axes, subplots
from icgd.sources.categorical.keys import (
    GD_MSE,
    HEADS_MAX_CHANGE,
    HEADS_MAX_OVER_GD,
    HEADS_TF_MSE,
)
from icgd.sources.categorical.shared import (
    MSE_LABEL,
    SOURCE,
    TF_STEPS,
    cat_config,
    declared,
    gd_config,
    held_out,
    score,
    tf_model,
    train,
)
from icgd.train.config import TrainConfig

HEADS = (1, 2, 3, 4)


def _configs(ctx: ExperimentContext) -> dict[int, TrainConfig]:
    """{0: the 1-head GD model, h: the Trained TF with h softmax heads}."""
    return {0: gd_config(ctx, "softmax")} | {
        h: cat_config(ctx, "cat-tf-softmax" if h == 1 else f"cat-tf-softmax-h{h}", tf_model("softmax", heads=h),
                      TF_STEPS) for h in HEADS}


# ------------------------------------------------------------------------------------------ heads
@register("categorical-heads", "Trained TF with 1-4 softmax heads vs the 1-head GD model (Fig. 4 left)", SOURCE,
          quick_minutes=2, full_minutes=20, models=lambda ctx: declared(_configs(ctx).values()))
def heads(ctx: ExperimentContext) -> None:
    configs = _configs(ctx)
    ep = held_out(ctx)
    gd_res = train(ctx, configs[0])
    gd_mse = ctx.result(GD_MSE.format(kernel="softmax"), score(seed_learners(gd_res)[0], ep))
    rows, per_heads = [], {}
    fig, (ax,) = subplots(1, width=5.0, height=3.6)
    for h in HEADS:
        res = train(ctx, configs[h])
        mse = [score(tf, ep) for tf in seed_learners(res)]
        per_heads[h] = ctx.result(HEADS_TF_MSE.format(heads=h), median(mse))
        rows.append({"heads": h, "tf_mse_median": median(mse), "tf_mse_seeds": mse, "gd_1head_mse": gd_mse})
        steps, ys = curves(res, "eval_loss")
        band(ax, steps, ys, f"TF, {h} head{'s' if h > 1 else ''}", f"C{h - 1}")
    ax.axhline(gd_mse, color=COLORS["gd"], ls="--", label="GD model, 1 head")
    ax.set_yscale("log")
    label_axes([ax], ["Trained TF with 1-4 softmax heads vs the 1-head GD model"], [MSE_LABEL])
    ctx.figure("heads", fig)
    ctx.table("heads", rows)
    change = max(abs(v / per_heads[1] - 1) for v in per_heads.values())
    ctx.result(HEADS_MAX_CHANGE, change)
    ctx.result(HEADS_MAX_OVER_GD, max(abs(v / gd_mse - 1) for v in per_heads.values()))
    ctx.report("up to four heads perform very close to the 1-head GD model",
               ", ".join(f"{h} head(s) {v:.4f}" for h, v in per_heads.items()) + f"; GD {gd_mse:.4f}")
