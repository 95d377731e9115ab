"""The training engine: one loop for every trainable transformer learner, several seeds at once.

Weights of all seeds live in one tensor per parameter with a leading seed dimension S. A step computes
the S per-seed losses in one batched computation (the fused linear-attention path, or `torch.func.vmap`
over the seeds for any other model), sums them (so each seed's gradient is its own), clips each seed's
global gradient norm, and applies Adam/AdamW elementwise: each seed follows exactly the trajectory it
would follow alone, up to float rounding.

Run directory (see `RunDir`): config.yaml, env.json, metrics.csv, checkpoint.safetensors (+ .json),
summary.json.
"""

from __future__ import annotations

import math
import platform
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
from torch import Tensor
from torch.func import functional_call, vmap

import icgd
from icgd.episodes import Episodes, make_generator
from icgd.learners.explicit import GD, GDPlusPlus, ZeroPredictor
from icgd.learners.tuning import tune_gd, tune_gdpp
from icgd.metrics import alignment, evaluate, query_loss
from icgd.perf import keep_freed_memory
from icgd.train.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from icgd.train.config import ModelConfig, TrainConfig, build_config, dump_config
from icgd.train.fast import compute_path, fast_supported, lsa_losses
from icgd.train.models import as_learner, build_module, param_prefix
from icgd.train.rundir import METRIC_COLUMNS, RunDir

DTYPES = {"float32": torch.float32, "float64": torch.float64}


class TrainingDiverged(RuntimeError):
    """A non-finite training loss; the last good checkpoint is kept."""


class TrainingInterrupted(RuntimeError):
    """SIGINT or SIGTERM: a checkpoint was saved first."""


# ------------------------------------------------------------------------------------------ weights
def init_params(config: TrainConfig, device: torch.device | str = "cpu") -> dict[str, Tensor]:
    """Stacked initial weights {name: (S, ...)}: seed s initialises its model from make_generator(s)."""
    dtype = DTYPES[config.dtype]
    states = [build_module(config, dtype=dtype, generator=make_generator(s)).state_dict() for s in config.seeds]
    return {k: torch.stack([st[k] for st in states]).to(device) for k in states[0]}


def trainable_names(config: TrainConfig) -> list[str]:
    template = build_module(config, device="meta")
    return [k for k, p in template.named_parameters() if p.requires_grad]


def seed_learner(config: TrainConfig, params: dict[str, Tensor], index: int) -> Any:
    """The trained model of seed number `index` (position in config.seeds) as a learner."""
    first = next(iter(params.values()))
    module = build_module(config, dtype=first.dtype, device=first.device)
    module.load_state_dict({k: v[index] for k, v in params.items()})
    return as_learner(config, module, name=f"trained_seed{config.seeds[index]}")


# --------------------------------------------------------------------------------------------- data
class TaskStream:
    """Training batches: one stream shared by all seeds (tensors (B, ...)) or one per seed ((S, B, ...)),
    fresh tasks every step or batches drawn from a fixed set of `train_set_size` tasks."""

    FIELDS = ("context_x", "context_y", "query_x", "query_y")

    def __init__(self, config: TrainConfig, device: torch.device | str) -> None:
        self.config, self.device = config, torch.device(device)
        self.dtype = DTYPES[config.dtype]
        if config.data == "shared":
            seeds = [config.data_seed]
        else:
            seeds = [config.data_seed * 1_000_003 + s for s in config.seeds]
        self.generators = [make_generator(s, self.device) for s in seeds]
        self.fixed: list[Episodes] | None = None
        if config.train_set_size is not None:
            self.fixed = [config.task.sample(config.train_set_size, g, dtype=self.dtype) for g in self.generators]

    def next(self) -> tuple[Tensor, ...]:
        cfg = self.config
        if self.fixed is None:
            eps = [cfg.task.sample(cfg.batch_size, g, dtype=self.dtype) for g in self.generators]
        else:
            eps = []
            for g, full in zip(self.generators, self.fixed):
                idx = torch.randint(full.batch_size, (cfg.batch_size,), generator=g, device=self.device)
                eps.append(full[idx])
        if cfg.data == "shared":
            return tuple(getattr(eps[0], f) for f in self.FIELDS)
        return tuple(torch.stack([getattr(e, f) for e in eps]) for f in self.FIELDS)

    def state(self) -> dict[str, Tensor]:
        return {f"rng.data.{i}": g.get_state() for i, g in enumerate(self.generators)}

    def load_state(self, tensors: dict[str, Tensor]) -> None:
        for i, g in enumerate(self.generators):
            g.set_state(tensors[f"rng.data.{i}"].to("cpu", torch.uint8))


# ------------------------------------------------------------------------------------------- losses
def make_loss_fn(config: TrainConfig, device: torch.device | str = "cpu") -> tuple[Callable[..., Tensor], str]:
    """(fn(params, cx, cy, qx, qy) -> per-seed losses (S,), name of the path: "kernel" (the compiled
    kernel, `icgd.train.kernel`), "fused" (fused PyTorch products) or "vmap" (any model))."""
    if isinstance(config.model, ModelConfig) and config.model.tokens == "concat" and config.fast:
        stack_cfg = config.stack_config()
        if fast_supported(stack_cfg):
            path = compute_path(stack_cfg, DTYPES[config.dtype], device)
            return (lambda params, *batch: lsa_losses(params, stack_cfg, *batch)), path
    template = as_learner(config, build_module(config, device="meta"))
    prefix = param_prefix(config)

    def one(p: dict[str, Tensor], cx: Tensor, cy: Tensor, qx: Tensor, qy: Tensor) -> Tensor:
        pred = functional_call(template, {prefix + k: v for k, v in p.items()}, (Episodes(cx, cy, qx, qy),))
        return query_loss(pred, qy).mean()

    shared = config.data == "shared"

    def losses(params: dict[str, Tensor], *batch: Tensor) -> Tensor:
        return vmap(one, in_dims=(0,) + ((None,) * 4 if shared else (0,) * 4))(params, *batch)

    return losses, "vmap"


# ---------------------------------------------------------------------------------------- optimiser
class Adam:
    """Adam / AdamW on stacked weights; elementwise, so every seed is optimised independently."""

    def __init__(self, params: dict[str, Tensor], names: list[str], cfg) -> None:
        self.cfg, self.names, self.t = cfg, names, 0
        self.m = {k: torch.zeros_like(params[k]) for k in names}
        self.v = {k: torch.zeros_like(params[k]) for k in names}

    def lr_at(self, step: int, total: int) -> float:
        c = self.cfg
        if c.warmup_steps and step < c.warmup_steps:
            return c.lr * (step + 1) / c.warmup_steps
        frac = (step - c.warmup_steps) / max(1, total - c.warmup_steps)
        if c.schedule == "cosine":
            return c.lr * 0.5 * (1 + math.cos(math.pi * frac))
        if c.schedule == "linear":
            return c.lr * (1 - frac)
        return c.lr

    @torch.no_grad()
    def step(self, params: dict[str, Tensor], grads: dict[str, Tensor], lr: float) -> None:
        c = self.cfg
        self.t += 1
        bc1, bc2 = 1 - c.beta1 ** self.t, 1 - c.beta2 ** self.t
        for k in self.names:
            p, g, m, v = params[k], grads[k], self.m[k], self.v[k]
            if c.weight_decay and c.name == "adam":
                g = g + c.weight_decay * p
            if c.weight_decay and c.name == "adamw":
                p.mul_(1 - lr * c.weight_decay)
            m.mul_(c.beta1).add_(g, alpha=1 - c.beta1)
            v.mul_(c.beta2).addcmul_(g, g, value=1 - c.beta2)
            p.addcdiv_(m / bc1, (v / bc2).sqrt_().add_(c.eps), value=-lr)

    def state(self) -> dict[str, Tensor]:
        return {f"optim.m.{k}": self.m[k] for k in self.names} | {f"optim.v.{k}": self.v[k] for k in self.names}

    def load_state(self, tensors: dict[str, Tensor], t: int) -> None:
        for k in self.names:
            self.m[k].copy_(tensors[f"optim.m.{k}"])
            self.v[k].copy_(tensors[f"optim.v.{k}"])
        self.t = t


def clip_per_seed(grads: dict[str, Tensor], max_norm: float | None) -> Tensor:
    """Scale each seed's gradients to global norm <= max_norm; returns the norms before clipping (S,)."""
    sq = sum(g.pow(2).reshape(g.shape[0], -1).sum(1) for g in grads.values())
    norms = sq.sqrt()
    if max_norm is not None:
        scale = (max_norm / (norms + 1e-6)).clamp(max=1.0)
        for g in grads.values():
            g.mul_(scale.view(-1, *([1] * (g.dim() - 1))))
    return norms


class Stepper:
    """The inner loop of training, for all seeds at once: sample a batch, per-seed losses, gradients,
    per-seed clipping, Adam. `step(i)` applies the update only when every loss is finite."""

    def __init__(self, config: TrainConfig, device: torch.device | str = "cpu") -> None:
        self.config = config
        self.params = init_params(config, device)
        self.names = trainable_names(config)
        for k in self.names:
            self.params[k].requires_grad_(True)
        self.opt = Adam(self.params, self.names, config.optim)
        self.stream = TaskStream(config, device)
        self.loss_fn, self.path = make_loss_fn(config, device)

    def step(self, i: int) -> tuple[Tensor, bool]:
        """(per-seed losses (S,), whether the update was applied) for optimisation step number i."""
        losses = self.loss_fn(self.params, *self.stream.next())
        if not bool(torch.isfinite(losses.detach()).all()):
            return losses.detach(), False
        grads = dict(zip(self.names, torch.autograd.grad(losses.sum(), [self.params[k] for k in self.names])))
        clip_per_seed(grads, self.config.optim.grad_clip)
        self.opt.step(self.params, grads, self.opt.lr_at(i, self.config.steps))
        return losses.detach(), True


# -------------------------------------------------------------------------------------- evaluation
@dataclass
class Reference:
    learner: Any
    loss: float
    ci95: tuple[float, float]


def reference_steps_of(config: TrainConfig) -> int:
    """GD steps of the reference learner: eval.reference_steps, else one per layer of an attention stack,
    else one."""
    return config.eval.reference_steps or config.model.gd_steps


def build_reference(config: TrainConfig, eval_eps: Episodes, tune_eps: Episodes) -> Reference:
    """The explicit learner every seed is scored against, tuned on separate tasks (float64, CPU)."""
    steps = reference_steps_of(config)
    kind = config.eval.reference
    learner: GD | GDPlusPlus | ZeroPredictor
    if kind == "zero":
        learner = ZeroPredictor()
    elif kind == "gdpp":
        learner = tune_gdpp(tune_eps, steps)
    else:
        learner = tune_gd(tune_eps, steps, per_step=kind == "gd_per_step")
    stat = evaluate(learner, eval_eps)
    return Reference(learner, stat.mean, stat.ci95)


def load_reference(run: RunDir, eval_eps: Episodes) -> Reference | None:
    """The reference learner saved in the run directory (None when there is none)."""
    d = run.read_reference()
    if d is None:
        return None
    if d["learner"] == "zero":
        learner: Any = ZeroPredictor()
    elif d["learner"] == "gdpp":
        learner = GDPlusPlus(d["eta"], d["gamma"])
    else:
        learner = GD(d["eta"], name=d["learner"])
    stat = evaluate(learner, eval_eps)
    return Reference(learner, stat.mean, stat.ci95)


def evaluate_seeds(config: TrainConfig, params: dict[str, Tensor], eval_eps: Episodes,
                   reference: Reference) -> list[dict[str, float]]:
    """Per-seed eval loss (+ CI) and alignment with the reference, on the same held-out tasks."""
    rows = []
    first = next(iter(params.values()))
    ev = eval_eps.to(first.device, first.dtype)
    n_align = 0 if config.eval.reference == "zero" else min(config.eval.alignment_tasks, ev.batch_size)
    ref_ep = eval_eps[:n_align]
    for i in range(len(config.seeds)):
        learner = seed_learner(config, {k: v.detach() for k, v in params.items()}, i)
        stat = evaluate(learner, ev)
        row = {"eval_loss": stat.mean, "eval_ci_low": stat.ci95[0], "eval_ci_high": stat.ci95[1]}
        if n_align:
            learner64 = seed_learner(config, {k: v.detach().to("cpu", torch.float64) for k, v in params.items()}, i)
            al = alignment(learner64, reference.learner, ref_ep)
            row |= {k: s.mean for k, s in al.items()}
        rows.append(row)
    return rows


# ------------------------------------------------------------------------------------------ progress
class Progress:
    """A one-line progress bar on stderr: step, %, steps/s, ETA, losses."""

    def __init__(self, total: int, start: int, quiet: bool) -> None:
        self.total, self.start, self.quiet = total, start, quiet
        self.t0 = time.perf_counter()
        self.last = 0.0
        self.tty = sys.stderr.isatty()

    def update(self, step: int, train: float, evl: float | None, force: bool = False) -> None:
        if self.quiet:
            return
        now = time.perf_counter()
        if not force and now - self.last < (0.2 if self.tty else 10.0):
            return
        self.last = now
        done = step - self.start
        rate = done / max(now - self.t0, 1e-9)
        eta = (self.total - step) / rate if rate > 0 else float("inf")
        width = 24
        fill = int(width * step / self.total)
        bar = "#" * fill + "." * (width - fill)
        ev = f" eval {evl:.4g}" if evl is not None else ""
        line = (f"[{bar}] {step}/{self.total} {100 * step / self.total:5.1f}% {rate:7.1f} steps/s "
                f"ETA {_hms(eta)} train {train:.4g}{ev}")
        print(("\r" + line) if self.tty else line, end="" if self.tty else "\n", file=sys.stderr, flush=True)

    def close(self) -> None:
        if not self.quiet and self.tty:
            print(file=sys.stderr)


def _hms(s: float) -> str:
    if not math.isfinite(s):
        return "--:--"
    s = int(s)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60:02d}:{s % 60:02d}"


# -------------------------------------------------------------------------------------------- train
@dataclass
class TrainResult:
    """What `train` returns: the run directory, its summary and the trained (stacked) weights."""

    run_dir: Path
    summary: dict[str, Any]
    config: TrainConfig
    params: dict[str, Tensor] = field(repr=False)

    def learner(self, seed: int) -> Any:
        """The trained model of `seed` (a value from config.seeds)."""
        return seed_learner(self.config, self.params, self.config.seeds.index(seed))


def environment(device: torch.device, config: TrainConfig, path: str = "") -> dict[str, Any]:
    import numpy

    from icgd.train import kernel

    return {"icgd": icgd.__version__, "torch": torch.__version__, "numpy": numpy.__version__,
            "python": platform.python_version(), "platform": platform.platform(), "device": str(device),
            "cuda": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
            "threads": torch.get_num_threads(), "seeds": config.seeds, "data_seed": config.data_seed,
            "compute_path": path, "kernel": kernel.status() if path == "kernel" else None,
            "command": " ".join(sys.argv)}


def train(config: TrainConfig | None = None, out: str | Path | None = None, device: str | torch.device = "cpu",
          resume: bool = False, quiet: bool = True, stop_after: int | None = None) -> TrainResult:
    """Train `config` into run directory `out` (or continue the run in `out` with resume=True).

    stop_after: stop (with a checkpoint) once this many total steps are done, as an interrupted run.
    Raises TrainingDiverged on a non-finite loss, TrainingInterrupted on SIGINT/SIGTERM (after saving).
    """
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device}: CUDA is not available")
    keep_freed_memory()
    ckpt: tuple[dict[str, Tensor], dict] | None = None
    if resume:  # validate everything before writing anything
        run = RunDir.open(out)
        config = build_config(run.read_config())
        if run.checkpoint.is_file():
            ckpt = load_checkpoint(run.checkpoint, device)
            _check_meta(ckpt[1], config, run.checkpoint)
    else:
        if config is None:
            raise ValueError("a config is needed to start a run")
        run = RunDir.create(out if out is not None else Path("runs") / config.name)
        run.write_config(dump_config(config))
    stepper = Stepper(config, device)
    run.write_env(environment(device, config, stepper.path))
    params, opt, stream = stepper.params, stepper.opt, stepper.stream

    g_eval = make_generator(config.eval.seed)
    eval_eps = config.task.sample(config.eval.n_tasks, g_eval, dtype=torch.float64)
    tune_eps = config.task.sample(config.eval.n_tune, g_eval, dtype=torch.float64)
    reference = load_reference(run, eval_eps) if resume else None
    if reference is None:
        reference = build_reference(config, eval_eps, tune_eps)
        run.write_reference(reference.learner.describe())

    n_seeds = len(config.seeds)
    step, rows = 0, []
    acc = torch.zeros(n_seeds, dtype=torch.float64)
    acc_n = 0
    if ckpt is not None:
        tensors, meta = ckpt
        with torch.no_grad():
            for k in params:
                params[k].copy_(tensors[f"param.{k}"])
        opt.load_state(tensors, meta["optim_t"])
        stream.load_state(tensors)
        step, rows = meta["step"], meta["rows"]
        acc = torch.tensor(meta["acc"], dtype=torch.float64)
        acc_n = meta["acc_n"]
    run.write_metrics(rows)
    saved_step: list[int | str] = [step if ckpt is not None else "none"]

    def checkpoint() -> None:
        meta = {"step": step, "optim_t": opt.t, "rows": rows, "acc": acc.tolist(), "acc_n": acc_n,
                "seeds": config.seeds, "config_name": config.name, "icgd": icgd.__version__}
        tensors = {f"param.{k}": v for k, v in params.items()} | opt.state() | stream.state()
        save_checkpoint(run.checkpoint, tensors, meta)
        saved_step[0] = step

    flag: dict[str, int] = {}
    old = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    can_handle = _in_main_thread()
    if can_handle:
        for sig in old:
            signal.signal(sig, lambda s, f: flag.setdefault("sig", s))
    progress = Progress(config.steps, step, quiet)
    t0, step0 = time.perf_counter(), step
    last_eval: float | None = rows[-1]["eval_loss"] if rows else None
    status = "completed"
    try:
        while step < config.steps:
            losses, applied = stepper.step(step)
            if not applied:
                bad = [config.seeds[i] for i in range(n_seeds) if not math.isfinite(float(losses[i]))]
                status = "diverged"
                raise TrainingDiverged(
                    f"training diverged at step {step + 1}: non-finite loss for seed(s) {bad}; "
                    f"the last good checkpoint (step {saved_step[0]}) is kept in {run.path}")
            step += 1
            acc += losses.to("cpu", torch.float64)
            acc_n += 1
            if step % config.eval.every == 0 or step == config.steps:
                ev_rows = evaluate_seeds(config, params, eval_eps, reference)
                for i, r in enumerate(ev_rows):
                    row = {"step": step, "seed": config.seeds[i], "train_loss": float(acc[i]) / acc_n,
                           "reference_loss": reference.loss, "lr": opt.lr_at(step - 1, config.steps)} | r
                    rows.append({k: row.get(k) for k in METRIC_COLUMNS})
                run.append_metrics(rows[-n_seeds:])
                acc.zero_()
                acc_n = 0
                last_eval = float(sum(r["eval_loss"] for r in ev_rows) / n_seeds)
            progress.update(step, float(losses.mean()), last_eval, force=step == config.steps)
            if step % config.checkpoint_every == 0 or step == config.steps:
                checkpoint()
            if flag or (stop_after is not None and step >= stop_after and step < config.steps):
                checkpoint()
                status = "interrupted"
                break
    finally:
        progress.close()
        if can_handle:
            for sig, h in old.items():
                signal.signal(sig, h)
        elapsed = time.perf_counter() - t0
        summary = _summary(config, rows, reference, step, status, elapsed, step - step0, stepper.path, device)
        run.write_summary(summary)
    if flag:
        raise TrainingInterrupted(f"interrupted by signal {flag['sig']} at step {step}; checkpoint saved in "
                                  f"{run.path} (continue with: icgd train --resume {run.path})")
    return TrainResult(run.path, summary, config, {k: v.detach() for k, v in params.items()})


def _in_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _check_meta(meta: dict, config: TrainConfig, path: Path) -> None:
    if meta.get("seeds") != config.seeds or not isinstance(meta.get("step"), int):
        raise CheckpointError(f"{path}: checkpoint does not match config.yaml (seeds {meta.get('seeds')} "
                              f"vs {config.seeds})")


def _summary(config: TrainConfig, rows: list[dict], reference: Reference, step: int, status: str,
             elapsed: float, steps_run: int, path: str, device: torch.device) -> dict[str, Any]:
    last = {r["seed"]: r for r in rows if r["step"] == max((x["step"] for x in rows), default=-1)}
    seeds = []
    for s in config.seeds:
        r = last.get(s, {})
        seeds.append({"seed": s, "steps": step, "final_eval_loss": r.get("eval_loss"),
                      "final_train_loss": r.get("train_loss"), "reference_loss": reference.loss,
                      "relative_gap": (r["eval_loss"] / reference.loss - 1) if r else None,
                      "prediction_difference": r.get("prediction_difference"),
                      "sensitivity_cosine": r.get("sensitivity_cosine"),
                      "sensitivity_l2": r.get("sensitivity_l2")})
    return {"name": config.name, "status": status, "steps": step, "total_steps": config.steps,
            "seeds": seeds, "reference": reference.learner.describe() | {
                "loss": reference.loss, "ci95": list(reference.ci95)},
            "compute_path": path, "device": str(device), "wall_seconds": round(elapsed, 3),
            "seed_steps_per_s": round(steps_run * len(config.seeds) / elapsed, 2) if elapsed > 0 else None}
