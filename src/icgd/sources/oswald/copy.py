"""Interleaved tokens (Fig. 5, Prop. 3): a softmax layer learns to copy y next to x, then a linear layer
does GD; the first layer's token gradients over training; a linear first layer as control: `oswald-copy`."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from icgd.core.episodes import Episodes, make_generator
from icgd.core.metrics import evaluate
from icgd.experiments.common import (
    TUNE_TASKS,
    Size,
    curves,
    eval_every,
    eval_tasks,
    median,
    seed_learners,
    size,
    tune_tasks,
)
from icgd.experiments.linear_setup import HAIKU_TRUNCATION
from icgd.experiments.registry import ExperimentContext, register
from icgd.learners.explicit import ZeroPredictor
from icgd.learners.tuning import tune_gd
from icgd.results.figures import COLORS, band, subplots
from icgd.sources.oswald.keys import (
    COPY_CODE_NEIGHBOUR_RATIO,
    COPY_GRADIENT_FIRST,
    COPY_LOSS_OVER_GD1,
    COPY_NEIGHBOUR_RATIO,
    COPY_ONSET_FIRST,
    COPY_OTHERS_PEAK,
    COPY_OWN_KEPT,
    COPY_SPEED_SPREAD,
    ZERO_LOSS,
    seeds_key,
)
from icgd.sources.oswald.shared import NONLINEAR_EVAL_SEED
from icgd.tasks import LinearRegression
from icgd.train.config import TrainConfig, build_config
from icgd.train.engine import TrainResult

#: "notably dependent" on the neighbour: its gradient this many times the others' (as copy-neighbour-gradient)
NOTABLE_RATIO = 3.0

#: the copying study: probe tasks of the token gradients, held-out tasks behind its curves
COPY_PROBE_TASKS = Size(quick=16, full=32, smoke=4)

COPY_CURVE_TASKS = Size(quick=1024, full=4096)

COPY_CURVE_ALIGN_TASKS = Size(quick=256, full=256, smoke=16)


# ------------------------------------------------------------------------------------------ copying
#: the copy study's set-ups: the authors' code ("code", the default) and sec. 4's one-hot layout ("onehot")
COPY_SETUPS = ("code", "onehot")
#: the code's softmax divides the logits by sqrt(key_size), fixed (src/attn.py:176-178), key_size = 20
#: (normal_token_construct.ipynb cell 4: `config.key_size = 20`): our softmax kernel's s, not learnt
CODE_SOFTMAX_S = 20 ** 0.5


def copy_config(ctx: ExperimentContext, first: str, n_steps: int, setup: str = "code") -> TrainConfig:
    """Dx = N = 10 interleaved tokens, layer 1 `first` (softmax or linear), layer 2 linear.

    "code": as the authors' code trains Fig. 5 (normal_token_construct.ipynb cell 4; src/data.py:165-194;
    src/train.py:160-165, 290-296): x ~ U(-0.5, 0.5); Dx-wide tokens with y in x's last slot and a 10-dim
    sinusoidal position code concatenated; read-out from the last coordinate; the query not a key
    (include_query False); the softmax's logits divided by a fixed sqrt(20) (`CODE_SOFTMAX_S`); init
    VarianceScaling(0.02 / 2 layers); AdamW lr 1e-3, b2 0.98, gradient clip 10; batch 2048; 10,000 steps in full
    mode; a task stream per seed.
    "onehot": the paper's sec. 4: tokens [x; y; one-hot position], every token a key, x ~ U(-1, 1),
    Adam b2 0.999, batch 512, one shared task stream."""
    if setup not in COPY_SETUPS:
        raise ValueError(f"copy set-up must be one of {COPY_SETUPS}, got {setup!r}")
    ev = {"every": eval_every(ctx, n_steps, 40), "n_tasks": size(ctx, COPY_CURVE_TASKS), "reference": "gd",
          "reference_steps": 1, "alignment_tasks": size(ctx, COPY_CURVE_ALIGN_TASKS)} \
        | ({"n_tune": size(ctx, TUNE_TASKS)} if ctx.mode == "smoke" else {})
    if setup == "onehot":
        return build_config({
            "name": f"copy-{first}", "task": {"dx": 10, "n_context": 10},
            "model": {"n_layers": 2, "kernels": [first, "linear"], "tokens": "interleaved", "query_in_keys": True},
            "optim": {"lr": 1e-3}, "steps": n_steps, "batch_size": 512, "seeds": ctx.seeds, "checkpoint_every": 500,
            "eval": ev})
    layer1 = {"kernel": first} | (
        {"kernel_init": [CODE_SOFTMAX_S], "learn_kernel_params": False} if first == "softmax" else {})
    return build_config({
        "name": f"copy-code-{first}", "task": {"dx": 10, "n_context": 10, "input_range": 0.5},
        "model": {"n_layers": 2, "layers": [layer1, {"kernel": "linear"}], "tokens": "interleaved_code",
                  "query_in_keys": False, "init_scale": 0.02 / 2 / HAIKU_TRUNCATION ** 2},
        "optim": {"name": "adamw", "lr": 1e-3, "beta1": 0.9, "beta2": 0.98, "eps": 1e-8, "weight_decay": 0.0,
                  "grad_clip": 10.0},
        "steps": n_steps, "batch_size": 64 if ctx.mode == "smoke" else 2048, "data": "per_seed", "seeds": ctx.seeds,
        "checkpoint_every": 500, "eval": ev})


def token_gradients(learner: Any, ep: Episodes) -> dict[str, float]:
    """Mean Frobenius norms of d(first-layer output of token t) / d(input token s), over the context's
    x-tokens t = 0, 2, ..., 2N - 2 and the tasks of `ep`: s = t (self, with the residual), s = t + 1
    (the neighbour, which holds y_t) and every other s (mean over those)."""
    block = learner.model.layers[0]
    tok, n_keys = learner.tokens.encode(ep)
    tok = tok.to(next(block.parameters()).dtype)

    def layer(t: Tensor) -> Tensor:
        return block(t.unsqueeze(0), n_keys)[0]

    jac = torch.vmap(torch.func.jacrev(layer))(tok)  # (B, T, D, T, D)
    norms = jac.pow(2).sum((2, 4)).sqrt()  # (B, T, T): [b, t, s]
    t_idx = torch.arange(0, n_keys, 2)
    self_ = norms[:, t_idx, t_idx].mean()
    neigh = norms[:, t_idx, t_idx + 1].mean()
    other = torch.ones(len(t_idx), norms.shape[2], dtype=torch.bool)  # (x-token t, key s)
    other[torch.arange(len(t_idx)), t_idx] = False
    other[torch.arange(len(t_idx)), t_idx + 1] = False
    others = norms[:, t_idx][:, other].mean()
    return {"self": float(self_.detach()), "neighbour": float(neigh.detach()), "others": float(others.detach())}


def code_token_gradients(learner: Any, ep: Episodes) -> dict[str, float]:
    """The official code's version of the same measure (its `analyse_copy`, read at google-research/
    self-organising-systems 3d5547c, src/train.py:307-323): for every context token k but the last, the
    gradient of the sum of layer 1's output at k with respect to the data part of every input token s
    (x and y, not the position code), averaged over the tasks of `ep` before its norm is taken; "self"
    is s = k, "neighbour" s = k + 1, "others" the sum over every s != k divided by T - 2."""
    block = learner.model.layers[0]
    tok, n_keys = learner.tokens.encode(ep)
    tok = tok.to(next(block.parameters()).dtype)
    d_data = learner.tokens.data_width(ep.dx, ep.dy)

    def summed(t: Tensor) -> Tensor:
        return block(t.unsqueeze(0), n_keys)[0].sum(-1)  # (T,)

    jac = torch.vmap(torch.func.jacrev(summed))(tok)[..., :d_data]  # (B, T, T, data)
    norms = jac.mean(0).pow(2).sum(-1).sqrt()  # (T, T): [k, s], norm of the task-mean gradient
    n_tok = norms.shape[0]
    k = torch.arange(n_keys - 1)
    self_ = norms[k, k].mean()
    neigh = norms[k, k + 1].mean()
    others = ((norms[k].sum(1) - norms[k, k]) / (n_tok - 2)).mean()
    return {"code_self": float(self_.detach()), "code_neighbour": float(neigh.detach()),
            "code_others": float(others.detach())}


def _first_crossing(steps: list[int], values: list[float], level: float, below: bool) -> int:
    for st, v in zip(steps, values):
        if (v <= level) if below else (v >= level):
            return st
    return steps[-1] + 1


#: training steps of the copying models, by set-up (the code's full budget: 10,000, normal_token_construct cell
#: 4). In the code's set-up the authors' own run makes its transition between steps 4000 and 4500 (the saved
#: gradient figure, cell 9), and quick mode's first run at 3000 steps ended before it on every seed (loss 1.8x
#: one GD step): quick mode trains 6000, past the authors' transition
COPY_STEPS = {"code": Size(quick=6000, full=10_000, smoke=4), "onehot": Size(quick=3000, full=12_000, smoke=4)}


def _copy_models(ctx: ExperimentContext, setup: str = "code") -> dict[str, TrainConfig]:
    """The softmax-first model and its linear-first control."""
    n_steps = size(ctx, COPY_STEPS[setup])
    return {_copy_label(first, setup): copy_config(ctx, first, n_steps, setup) for first in ("softmax", "linear")}


def _copy_label(first: str, setup: str) -> str:
    """copy-code-softmax, ...; the one-hot set-up keeps its older labels (copy-softmax), so models
    cached by older versions stay valid."""
    return f"copy-code-{first}" if setup == "code" else f"copy-{first}"


@register("oswald-copy", "interleaved tokens as the authors' code builds them: a softmax layer learns to copy y "
          "next to x, then a linear layer does GD; first-layer token gradients over training; linear first layer "
          "as control (Fig. 5)",
          "source 000, sec. 4, Fig. 5, Prop. 3, A.5", quick_minutes=20.0, full_minutes=120.0, models=_copy_models,
          pretrain=False, deviations=(
              "held-out tasks: 10,000 of our generator in full mode (4096 quick); the code evaluates 10,000 tasks "
              "from PRNGKey(10) every 500 steps (cell 7). torch instead of JAX: other random streams.",
              "quick mode trains 6000 of the code's 10,000 steps (past the authors' transition at 4000-4500). "
              "Reason: CPU time."))
def copy(ctx: ExperimentContext) -> None:
    _copy_study(ctx, "code")


@register("oswald-copy-onehot", "the copy study in the layout of the paper's sec. 4: tokens [x; y; one-hot "
          "position], every token a key", "source 000, sec. 4, Fig. 5", quick_minutes=5.0,
          full_minutes=35.0, models=lambda ctx: _copy_models(ctx, "onehot"), pretrain=False, deviations=(
              "tokens [x; y; one-hot position] with y in its own slot and every token a key, the query too; the "
              "code concatenates a sinusoidal position code to 10-dim tokens with y in x's last slot and keeps "
              "the query out of the keys (normal_token_construct.ipynb cells 4, 7-9; src/data.py:165-194). "
              "Reason: the layout of the paper's sec. 4, kept by name; oswald-copy is the code's.",
              "x ~ U(-1, 1), batch 512, 3000 / 12,000 steps, Adam b2 0.999, one task stream for all seeds; the "
              "code: U(-0.5, 0.5), AdamW b2 0.98, clip 10, batch 2048, 10,000 steps, a stream per seed."))
def copy_onehot(ctx: ExperimentContext) -> None:
    _copy_study(ctx, "onehot")


def _copy_study(ctx: ExperimentContext, setup: str) -> None:
    n_steps = size(ctx, COPY_STEPS[setup])
    task = LinearRegression(dx=10, n_context=10, input_range=0.5 if setup == "code" else 1.0)
    probe = task.sample(size(ctx, COPY_PROBE_TASKS), make_generator(NONLINEAR_EVAL_SEED + 2), dtype=torch.float64)
    ev = eval_tasks(ctx, task, NONLINEAR_EVAL_SEED + 3)
    tune = tune_tasks(ctx, task, NONLINEAR_EVAL_SEED + 4)
    gd = tune_gd(tune, 1)
    gd_loss = evaluate(gd, ev).mean
    gd2_loss = evaluate(tune_gd(tune, 2), ev).mean
    zero = evaluate(ZeroPredictor(), ev).mean
    fig, axes = subplots(4, width=3.6, height=2.9)  # 2 x 2
    rows, summary = [], {}

    def by_seed(key: str, values: list[float]) -> None:
        """The median seed's value (what a claim reads) and every seed's (its sign test)."""
        ctx.result(key, median(values) if values else float("nan"))
        ctx.result(seeds_key(key), values)

    for first, color in (("softmax", COLORS["tf"]), ("linear", COLORS["other"])):
        cfg = _copy_models(ctx, setup)[_copy_label(first, setup)]

        def measure(res: TrainResult) -> dict[str, float]:
            out = {}
            for s, learner in zip(res.config.seeds, seed_learners(res)):
                g = token_gradients(learner, probe) | code_token_gradients(learner, probe)
                out |= {f"seed{s}.{k}": v for k, v in g.items()}
            return out

        res, track = ctx.train_tracked(_copy_label(first, setup), cfg, eval_every(ctx, n_steps, 30), measure)
        steps = [r["step"] for r in track]
        loss_steps, losses = curves(res, "eval_loss")
        band(axes[0], loss_steps, losses, f"{first} first layer", color, per_seed=True, note=False)
        for k, style in (("neighbour", "-"), ("others", ":"), ("self", "--")):
            ys = np.array([[r[f"seed{s}.{k}"] for r in track] for s in ctx.seeds])
            ax = axes[1] if first == "softmax" else axes[2]
            band(ax, steps, ys, "s = t + 1" if k == "neighbour" else ("s = t" if k == "self" else "other s"),
                 {"neighbour": COLORS["tf"], "others": COLORS["other"], "self": COLORS["gd"]}[k], per_seed=True,
                 note=False, linestyle=style)
            if first == "softmax":  # Fig. 5 right: the authors' own measure (analyse_copy)
                ys = np.array([[r[f"seed{s}.code_{k}"] for r in track] for s in ctx.seeds])
                band(axes[3], steps, ys, {"neighbour": "d t(e_j) / d e_j+1", "others": "d t(e_j) / d e_other",
                                          "self": "d t(e_j) / d e_j"}[k],
                     {"neighbour": COLORS["tf"], "others": COLORS["other"], "self": COLORS["gd"]}[k], per_seed=True,
                     note=False, linestyle=style)
        per_seed = []
        for i, (s, learner) in enumerate(zip(ctx.seeds, seed_learners(res))):
            loss = evaluate(learner, ev).mean
            neigh = [r[f"seed{s}.neighbour"] for r in track]
            l0 = float(losses[i][0])
            t_loss = _first_crossing(loss_steps, list(losses[i]), (l0 + gd_loss) / 2, below=True)
            t_grad = _first_crossing(steps, neigh, neigh[0] + (neigh[-1] - neigh[0]) / 2, below=False)
            notable = [r[f"seed{s}.neighbour"] / r[f"seed{s}.others"] for r in track]
            t_onset = _first_crossing(steps, notable, NOTABLE_RATIO, below=False)
            code = track[-1]
            row = {"first_layer": first, "seed": s, "loss": loss, "loss_over_gd1": loss / gd_loss,
                   "neighbour_grad_final": neigh[-1], "others_grad_final": track[-1][f"seed{s}.others"],
                   "self_grad_final": track[-1][f"seed{s}.self"], "loss_halfway_step": t_loss,
                   "neighbour_grad_halfway_step": t_grad, "neighbour_over_others_initial": notable[0],
                   "neighbour_notable_step": t_onset,
                   "code_neighbour_grad_final": code[f"seed{s}.code_neighbour"],
                   "code_others_grad_final": code[f"seed{s}.code_others"],
                   "code_self_grad_final": code[f"seed{s}.code_self"],
                   "code_self_grad_initial": track[0][f"seed{s}.code_self"],
                   "code_others_over_self_peak": max(r[f"seed{s}.code_others"] / r[f"seed{s}.code_self"]
                                                     for r in track)}
            rows.append(row)
            per_seed.append(row)
        summary[first] = per_seed
        by_seed(COPY_LOSS_OVER_GD1.format(first=first), [r["loss_over_gd1"] for r in per_seed])
        by_seed(COPY_NEIGHBOUR_RATIO.format(first=first),
                [r["neighbour_grad_final"] / r["others_grad_final"] for r in per_seed])
        learnt = [r for r in per_seed if r["loss_over_gd1"] < 1.05]
        ctx.result(f"{first}.seeds_reaching_gd1", len(learnt))
        if first == "softmax":
            dropped = [r for r in per_seed if r["loss_halfway_step"] <= n_steps]
            by_seed(COPY_GRADIENT_FIRST, [r["neighbour_grad_halfway_step"] / r["loss_halfway_step"] for r in dropped])
            by_seed(COPY_ONSET_FIRST, [r["neighbour_notable_step"] / r["loss_halfway_step"] for r in dropped])
            halfway = [r["loss_halfway_step"] for r in per_seed]
            ctx.result(COPY_SPEED_SPREAD, max(halfway) / min(halfway))
            by_seed(COPY_OWN_KEPT, [abs(r["code_self_grad_final"] / r["code_self_grad_initial"] - 1) for r in per_seed])
            by_seed(COPY_OTHERS_PEAK, [r["code_others_over_self_peak"] for r in per_seed])
            by_seed(COPY_CODE_NEIGHBOUR_RATIO,
                    [r["code_neighbour_grad_final"] / r["code_others_grad_final"] for r in per_seed])
    for ax in axes:
        ax.set_xlabel("training step")
    axes[0].axhline(gd_loss, color=COLORS["gd"], linestyle="--", label="1 step of GD")
    axes[0].axhline(gd2_loss, color=COLORS["gdpp"], linestyle=":", label="2 steps of GD")
    axes[0].set_ylabel("held-out loss")
    axes[0].set_title("loss")
    axes[0].legend()
    axes[1].set_title("softmax first layer: |d out_t / d in_s|")
    axes[2].set_title("linear first layer: |d out_t / d in_s|")
    axes[3].set_title("softmax first layer, the code's measure\n(Fig. 5 right)")
    axes[3].set_ylabel("norm of the task-mean gradient")
    axes[3].legend()
    for ax in axes[1:3]:
        ax.set_ylabel("mean Frobenius norm")
        ax.set_yscale("log")
        ax.legend()
    fig.suptitle(f"the copy layer over training (thick: median of {len(ctx.seeds)} seeds; thin: each seed)")
    ctx.figure("copy", fig)
    ctx.table("copy", rows)
    ctx.result("gd1_loss", gd_loss)
    ctx.result("gd2_loss", gd2_loss)
    ctx.result(ZERO_LOSS, zero)
    sm, li = summary["softmax"], summary["linear"]
    ctx.report("the softmax-then-linear model matches one step of GD (not two)",
               f"loss / 1-step GD: median {median([r['loss_over_gd1'] for r in sm]):.3f} "
               f"(1-step GD {gd_loss:.4f}, 2-step GD {gd2_loss:.4f}, zero {zero:.4f}); "
               f"{sum(r['loss_over_gd1'] < 1.05 for r in sm)} of {len(sm)} seeds within 5%")
    ctx.report("before the loss drops, token t depends on its neighbour t + 1, not on others",
               f"final |d out_t/d in_t+1| / |d out_t/d in_other| median "
               f"{median([r['neighbour_grad_final'] / r['others_grad_final'] for r in sm]):.1f}; halfway steps "
               f"(gradient, loss) per seed: {[(r['neighbour_grad_halfway_step'], r['loss_halfway_step']) for r in sm]}")
    ctx.report("the neighbour dependence becomes notable before the loss jumps to GD's",
               f"step where |d out_t/d in_t+1| first reaches {NOTABLE_RATIO:g}x the others' (initial ratio) / step "
               f"where the loss is halfway down, per seed: "
               + ", ".join(f"{r['neighbour_notable_step']} ({r['neighbour_over_others_initial']:.2f}) / "
                           f"{r['loss_halfway_step']}" for r in sm))
    ctx.report("the official code's gradient measure (norm of the task-mean gradient of the summed output)",
               "final neighbour / others per seed: "
               + ", ".join(f"{r['code_neighbour_grad_final'] / r['code_others_grad_final']:.1f}" for r in sm)
               + "; self " + ", ".join(f"{r['code_self_grad_final']:.2f}" for r in sm))
    ctx.report("the first layer keeps its own token and stays independent of the others (Fig. 5 right)",
               "own-token gradient (the code's measure) initial -> final per seed: "
               + ", ".join(f"{r['code_self_grad_initial']:.2f} -> {r['code_self_grad_final']:.2f}" for r in sm)
               + "; largest others / own over training: "
               + ", ".join(f"{r['code_others_over_self_peak']:.3f}" for r in sm))
    ctx.report("a linear first layer could not be trained",
               f"loss / 1-step GD with a linear first layer: median {median([r['loss_over_gd1'] for r in li]):.3f}")
    layout = ("the authors' code's interleaved tokens (Dx wide, y in x's last slot, a 10-dim sinusoidal position "
              "code; T = 21, D = 20), the query not a key, x ~ U(-0.5, 0.5), batch 2048, AdamW 1e-3 (b2 0.98, "
              "clip 10)" if setup == "code" else
              "interleaved tokens [x or 0; y or 0; one-hot position] (T = 21, D = 32), every token a key, "
              "x ~ U(-1, 1), batch 512, Adam 1e-3")
    ctx.note(f"Set-up: Dx = N = 10, {layout}, {n_steps} steps, seeds {ctx.seeds}. Gradients: mean Frobenius "
             f"norm of d(layer-1 output of x-token t)/d(input token s) over {probe.batch_size} probe tasks.")
