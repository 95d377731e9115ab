"""Seed-dependent phase transitions of training, 1 against 2 heads (A.11, Fig. 15): `oswald-phase`."""

from __future__ import annotations

import numpy as np

from icgd.experiments.common import curves
from icgd.experiments.linear_setup import STEPS_RECURRENT, train_config
from icgd.experiments.registry import ExperimentContext, register
from icgd.results.figures import COLORS, subplots
from icgd.sources.oswald.keys import SLOWEST_TRANSITION, TRANSITION_SPREAD
from icgd.sources.oswald.shared import LINEAR_DEVIATIONS
from icgd.train.config import TrainConfig


# ------------------------------------------------------------------------------- phase transitions
def _transition(steps: list[int], losses: np.ndarray, refs: np.ndarray) -> float:
    """First evaluated step with loss within 5% of the reference (inf when never)."""
    hit = np.nonzero(losses <= 1.05 * refs)[0]
    return float(steps[hit[0]]) if len(hit) else float("inf")


def _phase_models(ctx: ExperimentContext) -> dict[str, TrainConfig]:
    """1 and 2 heads, evaluated every 25 steps."""
    out = {}
    for heads in (1, 2):
        cfg = train_config(ctx, f"phase-h{heads}", {"n_layers": 1, "n_heads": heads}, (1500, STEPS_RECURRENT))
        out[f"phase-h{heads}"] = cfg.model_copy(update={"seeds": ctx.seeds,
                                                       "eval": cfg.eval.model_copy(update={"every": 25})})
    return out


@register("oswald-phase", "seed-dependent phase transitions of training, 1 vs 2 heads (Fig. 15)",
          "source 000, A.11, Fig. 15", quick_minutes=1.5, full_minutes=4.0,
          n_seeds={"smoke": 2, "quick": 4, "full": 8}, models=_phase_models,
          deviations=LINEAR_DEVIATIONS)
def phase(ctx: ExperimentContext) -> None:
    """Seeds: 4 (quick) or 8 (full) by default, as the paper's figure compares many seeds' transitions. The
    transitions are read on the held-out loss and on the training loss (Fig. 15 left and centre plot the
    training loss; ours is each evaluation interval's mean over its batches of fresh tasks)."""
    seeds = ctx.seeds
    configs = _phase_models(ctx)
    fig, axes = subplots(4, sharey=True)
    rows = []
    for col, heads in enumerate((1, 2)):
        res = ctx.train(f"phase-h{heads}", configs[f"phase-h{heads}"])
        _, ref = curves(res, "reference_loss")
        for ax, key, what in ((axes[col], "eval_loss", "held-out"), (axes[2 + col], "train_loss", "training")):
            steps, ys = curves(res, key)
            trans = [_transition(steps, y, r) for y, r in zip(ys, ref)]
            for s, y, t in zip(seeds, ys, trans):
                ax.plot(steps, y, linewidth=1, label=f"seed {s}")
                if key == "eval_loss":
                    rows.append({"heads": heads, "seed": s, "transition_step": t})
                else:
                    next(r for r in rows if r["heads"] == heads and r["seed"] == s)["training_transition_step"] = t
            ax.plot(steps, ref[0], color=COLORS["gd"], linestyle="--", label="GD")
            ax.set_yscale("log")
            ax.set_title(f"{heads} head{'s' if heads > 1 else ''}: {what} loss per seed")
            ax.set_xlabel("training step")
            ax.set_ylabel("loss")
            ax.legend(fontsize=6, ncol=2)
            prefix = "" if key == "eval_loss" else "training."
            ctx.result(f"{prefix}h{heads}.transition_steps", trans)
            ctx.result(prefix + SLOWEST_TRANSITION.format(heads=heads), max(trans))
            ctx.result(prefix + TRANSITION_SPREAD.format(heads=heads),
                       max(trans) / min(trans) if np.isfinite(min(trans)) else float("nan"))
            ctx.report(f"{heads} head(s): the {what} loss drops to GD at a seed-dependent step (Fig. 15)",
                       "first step within 5% of GD per seed: " + ", ".join(f"{t:g}" for t in trans))
    ctx.figure("phase", fig)
    ctx.table("phase", rows)
