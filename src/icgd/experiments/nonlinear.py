"""Nonlinear in-context learning and copying (source 000, sec. 3 nonlinear part and sec. 4; SPEC 2, 3).

oswald-sine: sine-wave regression with an embedding + MLP + one LSA layer, against the control whose
last layer is the GD construction on the MLP features (eta learnt); both start from the same seed.
oswald-copy: interleaved tokens, a softmax layer then a linear layer, against one step of GD, with the
first layer's token-to-token gradients tracked over training; the same with a linear first layer.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from icgd.core.episodes import Episodes, make_generator
from icgd.core.metrics import alignment, evaluate, query_loss
from icgd.experiments.common import (
    CURVE_TASKS,
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
from icgd.experiments.registry import ExperimentContext, register
from icgd.learners.explicit import ZeroPredictor
from icgd.learners.tokens import interleaved_tokens
from icgd.learners.tuning import tune_gd
from icgd.results.figures import COLORS, band, heatmap, label_axes, subplots
from icgd.tasks import LinearRegression, SineRegression
from icgd.train.config import TrainConfig, build_config
from icgd.train.engine import TrainResult

# ---- result keys the claims read (icgd.claims.nonlinear); {measure}, {first} are filled by `.format`
SINE_MEDIAN = "{measure}_median"  # oswald-sine: tf_loss, initial_function_distance, final_function_distance, ...
SINE_LOSS_RATIO_MAX = "loss_ratio_max"
ZERO_LOSS = "zero_loss"  # oswald-sine and oswald-copy
COPY_LOSS_OVER_GD1 = "{first}.loss_over_gd1_median"  # oswald-copy, first softmax or linear
COPY_NEIGHBOUR_RATIO = "{first}.neighbour_over_others_final_median"
COPY_GRADIENT_FIRST = "softmax.grad_before_loss_ratio_median"  # halfway up / halfway down
COPY_ONSET_FIRST = "softmax.grad_onset_over_loss_halfway_median"  # neighbour / others >= 3 / halfway down
COPY_SPEED_SPREAD = "softmax.slowest_over_fastest_loss_halfway"
#: "notably dependent" on the neighbour: its gradient this many times the others' (as copy-neighbour-gradient)
NOTABLE_RATIO = 3.0

EVAL_SEED = 20_231_100
#: held-out tasks on the 201-point grid of the sine study's figures and distances
GRID_TASKS = Size(quick=256, full=256, smoke=16)
SINE_ALIGN_TASKS = Size(quick=1024, full=1024)
#: the copying study: probe tasks of the token gradients, held-out tasks behind its curves
COPY_PROBE_TASKS = Size(quick=16, full=32, smoke=4)
COPY_CURVE_TASKS = Size(quick=1024, full=4096)
COPY_CURVE_ALIGN_TASKS = Size(quick=256, full=256, smoke=16)
GRID = torch.linspace(-5, 5, 201, dtype=torch.float64)


# ---------------------------------------------------------------------------------------- sine waves
#: the sine task of the official code (data.py:103-105 at self-organising-systems 3d5547c): A ~ U(0.1, 0.5)
#: and the phase from the same uniform draw, a one-parameter family
CODE_SINE_TASK = {"kind": "sine", "coupled": True, "amplitude_high": 0.5}
CODE_SINE_STEPS = Size(quick=2000, full=20_000, smoke=4)


def sine_config(ctx: ExperimentContext, control: bool, code: bool = False) -> TrainConfig:
    """SPEC 2 model and control; batch 256 (a CPU-sized choice: the paper does not state its batch).

    code: the official code's set-up instead (non_linear_regression notebook, cells 3 and 6; train.py:290-296,
    545-579): its task family, batch 2048, 20,000 steps, every weight initialised with VarianceScaling(0.002);
    the TF trained by AdamW 1e-3 with beta2 0.98, the control (eta fixed at 0.1) by Adam 3e-4; clipping at 100."""
    if not code:
        n = size(ctx, Size(quick=2500, full=10_000, smoke=4))
        return build_config({
            "name": "sine-gd" if control else "sine-lsa", "task": {"kind": "sine"},
            "model": {"kind": "mlp_lsa", "gd_control": control}, "optim": {"lr": 1e-3}, "steps": n,
            "batch_size": 256, "seeds": ctx.seeds, "checkpoint_every": 500,
            "eval": {"every": eval_every(ctx, n, 40), "n_tasks": size(ctx, CURVE_TASKS), "reference": "zero"}})
    n = size(ctx, CODE_SINE_STEPS)
    optim = ({"name": "adam", "lr": 3e-4, "grad_clip": 100.0} if control else
             {"name": "adamw", "lr": 1e-3, "beta2": 0.98, "grad_clip": 100.0})
    return build_config({
        "name": "sine-code-gd" if control else "sine-code-lsa", "task": CODE_SINE_TASK,
        "model": {"kind": "mlp_lsa", "gd_control": control, "mlp_init_scale": 0.002, "learn_eta": False},
        "optim": optim, "steps": n, "batch_size": 2048 if ctx.mode != "smoke" else 64, "seeds": ctx.seeds,
        "checkpoint_every": 500,
        "eval": {"every": eval_every(ctx, n, 40), "n_tasks": size(ctx, CURVE_TASKS), "reference": "zero"}})


def _rms(x: Tensor) -> float:
    return float(x.pow(2).mean().sqrt())


def _sine_models(ctx: ExperimentContext, code: bool = False) -> dict[str, TrainConfig]:
    """The trained TF and its control (a GD layer on the same MLP features)."""
    tag = "sine-code" if code else "sine"
    return {f"{tag}-lsa": sine_config(ctx, False, code), f"{tag}-gd": sine_config(ctx, True, code)}


@register("oswald-sine", "sine waves: embedding + MLP + LSA vs the same with a GD layer on the MLP features "
          "(Fig. 4)", "source 000, sec. 3, Fig. 4, A.7-A.8", quick_minutes=8.0, full_minutes=40.0,
          models=_sine_models)
def sine(ctx: ExperimentContext) -> None:
    _sine_study(ctx, code=False)


@register("oswald-sine-code", "the sine study in the official code's set-up: A ~ U(0.1, 0.5) with a coupled "
          "phase, batch 2048, 20,000 steps, small init, the control's eta fixed at 0.1 (Fig. 4)",
          "source 000, Fig. 4; self-organising-systems non_linear_regression.ipynb", quick_minutes=60.0,
          full_minutes=1440.0, models=lambda ctx: _sine_models(ctx, code=True))
def sine_code(ctx: ExperimentContext) -> None:
    """The official set-up is heavy on a CPU (batch 2048, generic training path): 0.48 s per seed-step for the
    TF and 0.23 s for the control, measured on the 2-core machine while two other jobs ran, so about an hour
    in quick mode and a day in full mode there; meant for a GPU (`--device cuda`)."""
    _sine_study(ctx, code=True)


def _sine_study(ctx: ExperimentContext, code: bool) -> None:
    tag = "sine-code" if code else "sine"
    models = _sine_models(ctx, code)
    tf_run = ctx.train(f"{tag}-lsa", models[f"{tag}-lsa"])
    gd_run = ctx.train(f"{tag}-gd", models[f"{tag}-gd"])
    task = SineRegression(**{k: v for k, v in CODE_SINE_TASK.items() if k != "kind"}) if code else SineRegression()
    ev = eval_tasks(ctx, task, EVAL_SEED)
    on_grid = task.sample(size(ctx, GRID_TASKS), make_generator(EVAL_SEED + 1), dtype=torch.float64, query_x=GRID)
    scale = _rms(on_grid.query_y)
    rows = []
    for s, tf, gd in zip(ctx.seeds, seed_learners(tf_run), seed_learners(gd_run)):
        with torch.no_grad():
            f0_tf, f0_gd = tf.initial_prediction(on_grid), gd.initial_prediction(on_grid)
            f1_tf, f1_gd = tf.predict(on_grid), gd.predict(on_grid)
        al = alignment(tf, gd, ev[:size(ctx, SINE_ALIGN_TASKS)])
        rows.append({
            "seed": s, "tf_loss": evaluate(tf, ev).mean, "gd_loss": evaluate(gd, ev).mean,
            "tf_initial_loss": _initial_loss(tf, ev), "gd_initial_loss": _initial_loss(gd, ev),
            "eta_learnt": float(gd.eta.detach()),
            "initial_function_distance": _rms(f0_tf - f0_gd) / scale,
            "final_function_distance": _rms(f1_tf - f1_gd) / scale,
            "tf_final_error": _rms(f1_tf - on_grid.query_y) / scale,
            "gd_final_error": _rms(f1_gd - on_grid.query_y) / scale,
            "prediction_difference": al["prediction_difference"].mean,
            "sensitivity_cosine": al["sensitivity_cosine"].mean, "sensitivity_l2": al["sensitivity_l2"].mean})
    ctx.table("sine", rows)
    zero = evaluate(ZeroPredictor(), ev).mean
    for key in ("tf_loss", "gd_loss", "initial_function_distance", "final_function_distance",
                "prediction_difference", "sensitivity_cosine"):
        ctx.result(SINE_MEDIAN.format(measure=key), median([r[key] for r in rows]))
    ctx.result(SINE_LOSS_RATIO_MAX, max(max(r["tf_loss"] / r["gd_loss"], r["gd_loss"] / r["tf_loss"]) for r in rows))
    ctx.result("loss_ratio_median", median([max(r["tf_loss"] / r["gd_loss"], r["gd_loss"] / r["tf_loss"])
                                          for r in rows]))
    ctx.result(ZERO_LOSS, zero)
    ctx.result("query_y_rms", _rms(ev.query_y))
    _sine_figures(ctx, tf_run, gd_run, on_grid)
    med = {k: median([r[k] for r in rows]) for k in rows[0] if k != "seed"}
    ctx.report("TF and the GD-on-MLP-features control reach similar loss (Fig. 4)",
               f"loss TF {med['tf_loss']:.4f}, control {med['gd_loss']:.4f} (zero predictor {zero:.3f}); "
               f"median over seeds {ctx.seeds}")
    ctx.report("almost identical learnt initial functions",
               f"RMS distance of the initial functions {med['initial_function_distance']:.3f} x RMS(y)")
    ctx.report("almost identical functions after the update",
               f"RMS distance of the final functions {med['final_function_distance']:.3f} x RMS(y); each to the "
               f"truth: TF {med['tf_final_error']:.3f}, control {med['gd_final_error']:.3f}")
    ctx.report("alignment measures agree", f"prediction difference {med['prediction_difference']:.4f}, "
               f"sensitivity cosine {med['sensitivity_cosine']:.4f} (Dx = 1: each task's cosine is +1 or -1, "
               f"so this is 2 p - 1 for p the share of tasks whose slopes agree in sign), L2 {med['sensitivity_l2']:.4f}")
    if code:
        ctx.note(f"Set-up of the official code: batch {tf_run.config.batch_size}, TF AdamW 1e-3 (beta2 0.98), control "
                 f"Adam 3e-4 with eta fixed at 0.1, clipping 100, {tf_run.config.steps} steps, init VarianceScaling"
                 "(0.002), d = 40, MLP 160 GELU units, x ~ U(-5, 5), A ~ U(0.1, 0.5) with the phase from the same "
                 "draw. Distances are RMS over 256 held-out tasks x 201 grid points, divided by the RMS of the "
                 "true y on the grid.")
    else:
        ctx.note(f"Set-up: batch 256, Adam 1e-3, {tf_run.config.steps} steps, d = 40, MLP 160 GELU units, "
                 "x ~ U(-5, 5), A ~ U(0.1, 5), phi ~ U(0, pi) independent. Distances are RMS over 256 held-out "
                 "tasks x 201 grid points, divided by the RMS of the true y on the grid.")


def _initial_loss(learner: Any, ep: Episodes) -> float:
    with torch.no_grad():
        return float(query_loss(learner.initial_prediction(ep), ep.query_y).mean())


def _sine_figures(ctx: ExperimentContext, tf_run: TrainResult, gd_run: TrainResult, on_grid: Episodes) -> None:
    s0 = ctx.seeds[0]
    tf, gd = seed_learners(tf_run)[0], seed_learners(gd_run)[0]
    fig, axes = subplots(4, width=3.6, height=3.0)
    for run, name, color in ((tf_run, "TF (MLP + LSA)", COLORS["tf"]), (gd_run, "MLP + GD step", COLORS["gd"])):
        steps, ys = curves(run, "eval_loss")
        band(axes[0], steps, ys, name, color)
    axes[0].set_yscale("log")
    label_axes(axes[:1], ["held-out loss"], ["loss (0.5 MSE)"])
    x = GRID.numpy()
    with torch.no_grad():
        f0 = {"tf": tf.initial_prediction(on_grid)[..., 0], "gd": gd.initial_prediction(on_grid)[..., 0]}
        f1 = {"tf": tf.predict(on_grid)[..., 0], "gd": gd.predict(on_grid)[..., 0]}
    for k, ax in enumerate(axes[1:]):
        ax.plot(x, on_grid.query_y[k, :, 0], color="black", linewidth=2.2, alpha=0.35, label="true sine")
        ax.scatter(on_grid.context_x[k, :, 0], on_grid.context_y[k, :, 0], color="black", s=12, zorder=3,
                   label="context")
        ax.plot(x, f0["tf"][k], color=COLORS["tf"], linestyle=":", label="TF before attention")
        ax.plot(x, f0["gd"][k], color=COLORS["gd"], linestyle=":", label="control before GD step")
        ax.plot(x, f1["tf"][k], color=COLORS["tf"], label="TF")
        ax.plot(x, f1["gd"][k], color=COLORS["gd"], linestyle="--", label="control after GD step")
        a, ph = on_grid.teacher[k, 0].tolist()
        ax.set_title(f"task {k + 1}: A = {a:.2f}, phi = {ph:.2f}")
        ax.set_xlabel("x")
        ax.set_ylabel("y")
    axes[1].legend(fontsize=6)
    fig.suptitle(f"Sine-wave regression, seed {s0}: functions before and after the in-context update")
    ctx.figure("sine_functions", fig)
    # the kernel view (Prop. 2): k(x, x') between query-like tokens (y = 0)
    xs = torch.linspace(-5, 5, 81, dtype=torch.float64)[:, None]
    with torch.no_grad():
        k_gd = gd.kernel(xs).numpy() * float(gd.eta) / on_grid.n_context
        k_tf = tf.kernel(xs).numpy()
        pv = (tf.attn.w_o @ tf.attn.w_v).sum(0)[-1, -1].item()  # how the target entry is carried
        k_tf = -k_tf * pv  # the TF's update is not divided by N
    fig, axes = subplots(2, width=3.8, height=3.4)
    heatmap(axes[0], k_gd, "control: (eta/N) m(x)^T m(x')")
    heatmap(axes[1], k_tf, "TF: -(PW_V)_yy (W_K h(x))^T W_Q h(x')")
    for ax in axes:
        ticks = [0, 20, 40, 60, 80]
        ax.set_xticks(ticks, [f"{xs[i, 0]:.1f}" for i in ticks])
        ax.set_yticks(ticks, [f"{xs[i, 0]:.1f}" for i in ticks])
        ax.set_xlabel("x' (query)")
        ax.set_ylabel("x (context input, y = 0)")
    fig.suptitle("Kernel of the in-context update on the MLP features")
    ctx.figure("sine_kernels", fig)


# ------------------------------------------------------------------------------------------ copying
def copy_config(ctx: ExperimentContext, first: str, n_steps: int) -> TrainConfig:
    """SPEC 3: Dx = N = 10 interleaved tokens, layer 1 `first`, layer 2 linear, every token a key."""
    return build_config({
        "name": f"copy-{first}", "task": {"dx": 10, "n_context": 10},
        "model": {"n_layers": 2, "kernels": [first, "linear"], "tokens": "interleaved", "query_in_keys": True},
        "optim": {"lr": 1e-3}, "steps": n_steps, "batch_size": 512, "seeds": ctx.seeds, "checkpoint_every": 500,
        "eval": {"every": eval_every(ctx, n_steps, 40), "n_tasks": size(ctx, COPY_CURVE_TASKS), "reference": "gd",
                 "reference_steps": 1, "alignment_tasks": size(ctx, COPY_CURVE_ALIGN_TASKS)}
        | ({"n_tune": size(ctx, TUNE_TASKS)} if ctx.mode == "smoke" else {})})


def token_gradients(learner: Any, ep: Episodes) -> dict[str, float]:
    """Mean Frobenius norms of d(first-layer output of token t) / d(input token s), over the context's
    x-tokens t = 0, 2, ..., 2N - 2 and the tasks of `ep`: s = t (self, with the residual), s = t + 1
    (the neighbour, which holds y_t) and every other s (mean over those)."""
    block = learner.model.layers[0]
    tok = interleaved_tokens(ep).to(next(block.parameters()).dtype)
    n_keys = 2 * ep.n_context

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
    tok = interleaved_tokens(ep).to(next(block.parameters()).dtype)
    n_keys, d_data = 2 * ep.n_context, ep.dx + ep.dy

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


@register("oswald-copy", "interleaved tokens: a softmax layer learns to copy y next to x, then a linear layer "
          "does GD; first-layer token gradients over training; linear first layer as control (Fig. 5)",
          "source 000, sec. 4, Fig. 5, Prop. 3, A.5", quick_minutes=5.0, full_minutes=35.0)
def copy(ctx: ExperimentContext) -> None:
    n_steps = size(ctx, Size(quick=3000, full=12_000, smoke=4))
    task = LinearRegression(dx=10, n_context=10)
    probe = task.sample(size(ctx, COPY_PROBE_TASKS), make_generator(EVAL_SEED + 2), dtype=torch.float64)
    ev = eval_tasks(ctx, task, EVAL_SEED + 3)
    tune = tune_tasks(ctx, task, EVAL_SEED + 4)
    gd = tune_gd(tune, 1)
    gd_loss = evaluate(gd, ev).mean
    gd2_loss = evaluate(tune_gd(tune, 2), ev).mean
    zero = evaluate(ZeroPredictor(), ev).mean
    fig, axes = subplots(3, width=3.9, height=3.1)
    rows, summary = [], {}
    for first, color in (("softmax", COLORS["tf"]), ("linear", COLORS["other"])):
        cfg = copy_config(ctx, first, n_steps)

        def measure(res: TrainResult) -> dict[str, float]:
            out = {}
            for s, learner in zip(res.config.seeds, seed_learners(res)):
                g = token_gradients(learner, probe) | code_token_gradients(learner, probe)
                out |= {f"seed{s}.{k}": v for k, v in g.items()}
            return out

        res, track = ctx.train_tracked(f"copy-{first}", cfg, eval_every(ctx, n_steps, 30), measure)
        steps = [r["step"] for r in track]
        loss_steps, losses = curves(res, "eval_loss")
        band(axes[0], loss_steps, losses, f"{first} first layer", color, per_seed=True)
        for k, style in (("neighbour", "-"), ("others", ":"), ("self", "--")):
            ys = np.array([[r[f"seed{s}.{k}"] for r in track] for s in ctx.seeds])
            ax = axes[1] if first == "softmax" else axes[2]
            band(ax, steps, ys, "s = t + 1" if k == "neighbour" else ("s = t" if k == "self" else "other s"),
                 {"neighbour": COLORS["tf"], "others": COLORS["other"], "self": COLORS["gd"]}[k], per_seed=True,
                 linestyle=style)
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
                   "code_self_grad_final": code[f"seed{s}.code_self"]}
            rows.append(row)
            per_seed.append(row)
        summary[first] = per_seed
        ctx.result(COPY_LOSS_OVER_GD1.format(first=first), median([r["loss_over_gd1"] for r in per_seed]))
        ctx.result(COPY_NEIGHBOUR_RATIO.format(first=first),
                   median([r["neighbour_grad_final"] / r["others_grad_final"] for r in per_seed]))
        learnt = [r for r in per_seed if r["loss_over_gd1"] < 1.05]
        ctx.result(f"{first}.seeds_reaching_gd1", len(learnt))
        if first == "softmax":
            ratios = [r["neighbour_grad_halfway_step"] / r["loss_halfway_step"] for r in per_seed
                      if r["loss_halfway_step"] <= n_steps]
            ctx.result(COPY_GRADIENT_FIRST, median(ratios) if ratios else float("nan"))
            dropped = [r for r in per_seed if r["loss_halfway_step"] <= n_steps]
            ctx.result(COPY_ONSET_FIRST, median([r["neighbour_notable_step"] / r["loss_halfway_step"] for r in dropped])
                       if dropped else float("nan"))
            halfway = [r["loss_halfway_step"] for r in per_seed]
            ctx.result(COPY_SPEED_SPREAD, max(halfway) / min(halfway))
            ctx.result("softmax.code_neighbour_over_others_final_median",
                       median([r["code_neighbour_grad_final"] / r["code_others_grad_final"] for r in per_seed]))
    for ax in axes:
        ax.set_xlabel("training step")
    axes[0].axhline(gd_loss, color=COLORS["gd"], linestyle="--", label="1 step of GD")
    axes[0].axhline(gd2_loss, color=COLORS["gdpp"], linestyle=":", label="2 steps of GD")
    axes[0].set_ylabel("held-out loss")
    axes[0].set_title("loss (one line per seed)")
    axes[0].legend(fontsize=6)
    axes[1].set_title("softmax first layer: |d out_t / d in_s|")
    axes[2].set_title("linear first layer: |d out_t / d in_s|")
    for ax in axes[1:]:
        ax.set_ylabel("mean Frobenius norm")
        ax.set_yscale("log")
        ax.legend(fontsize=6)
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
    ctx.report("a linear first layer could not be trained",
               f"loss / 1-step GD with a linear first layer: median {median([r['loss_over_gd1'] for r in li]):.3f}")
    ctx.note(f"Set-up: Dx = N = 10, interleaved tokens [x or 0; y or 0; one-hot position] (T = 21, D = 32), every "
             f"token a key, batch 512, Adam 1e-3, {n_steps} steps, seeds {ctx.seeds}. Gradients: mean Frobenius "
             f"norm of d(layer-1 output of x-token t)/d(input token s) over {probe.batch_size} probe tasks.")

