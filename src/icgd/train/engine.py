"""The training engine: one loop for every trainable learner, several seeds at once.

Weights of all seeds live in one tensor per parameter with a leading seed dimension S. A step computes
the S per-seed losses in one batched computation (the backend `icgd.train.backends.select` picks), sums
them (so each seed's gradient is its own), clips each seed's global gradient norm, and applies
Adam/AdamW elementwise (`icgd.train.optim`): each seed follows exactly the trajectory it would follow
alone, up to float rounding.

Run directory (see `RunDir`): config.yaml, env.json, metrics.parquet, checkpoint.safetensors (+ .json),
summary.json.
"""

from __future__ import annotations

import math
import os
import platform
import signal
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from icgd.core.episodes import make_generator
from icgd.core.perf import keep_freed_memory
from icgd.core.profiling import section
from icgd.core.version import __version__, code_commit
from icgd.train import graphed
from icgd.train.backends import select
from icgd.train.checkpoint import CheckpointError, checkpoint_params, load_checkpoint, save_checkpoint
from icgd.train.config import TrainConfig, build_config, dump_config
from icgd.train.data import TaskStream
from icgd.train.evaluation import (
    TunedReference,
    build_reference,
    evaluate_seeds,
    load_reference,
)
from icgd.train.models import init_params, seed_learner, trainable_names
from icgd.train.optim import Adam, clip_per_seed
from icgd.train.progress import Progress
from icgd.train.rundir import METRIC_COLUMNS, RunDir


class TrainingDiverged(RuntimeError):
    """A non-finite training loss; the last good checkpoint is kept. `step`: the step (1-based) where it was
    found; `seeds`: the seeds with a non-finite loss (None when not known, on an accelerator)."""

    def __init__(self, message: str, step: int, seeds: list[int] | None = None) -> None:
        super().__init__(message)
        self.step, self.seeds = step, seeds


class TrainingInterrupted(RuntimeError):
    """SIGINT or SIGTERM: a checkpoint was saved first. `run` is the run folder, `step` the step saved; the
    message names the command that continues it (`icgd train --resume RUN`; a study that trained it through its
    cache replaces it by its own: rerun the same command, `resumed_by`)."""

    def __init__(self, message: str, run: Path | None = None, step: int | None = None) -> None:
        super().__init__(message)
        self.run, self.step = run, step

    def resumed_by(self, command: str) -> "TrainingInterrupted":
        """The same interruption with `command` as the way to continue it."""
        return TrainingInterrupted(f"interrupted at step {self.step}; checkpoint saved in {self.run} (continue with: "
                                   f"{command})", self.run, self.step)


class Stepper:
    """The inner loop of training, for all seeds at once: sample a batch, per-seed losses, gradients,
    per-seed clipping, Adam.

    On the CPU `step(i)` checks the losses and applies the update only when every loss is finite. On an
    accelerator it does not wait for the device: it records on the device whether a loss was non-finite,
    and `diverged()` (called before every evaluation and checkpoint) reads that flag, so a divergence is
    found at the next such point and no checkpoint holds the diverged weights.

    On a CUDA device, for the configs `graphed.ineligible` takes, the step is `graphed.GraphStep`: all state in
    static tensors, the batch drawn on the device, captured as a CUDA graph after `GRAPH_WARMUP` eager steps.
    graph: None picks it where it applies (ICGD_CUDA_GRAPH=0 in the environment turns it off), False never,
    True insists (ValueError where it cannot). `step_path` says which step runs and why. Should the capture fail
    (an op the CPU checks of tests/unit/test_graphed.py did not foresee), the same static step goes on eagerly on the
    device, with a RuntimeWarning, and `step_path` (in the run's summary.json) says so."""

    #: eager steps of the graph step before its capture (the allocator and cuBLAS settle)
    GRAPH_WARMUP = 3

    def __init__(self, config: TrainConfig, device: torch.device | str = "cpu", graph: bool | None = None) -> None:
        self.config = config
        self.device = torch.device(device)
        self.params = init_params(config, device)
        self.names = trainable_names(config)
        for k in self.names:
            self.params[k].requires_grad_(True)
        self.backend = select(config, device)
        self.sync_free = self.device.type != "cpu"
        self._bad = torch.zeros((), dtype=torch.bool, device=self.device)
        no_graph = graphed.ineligible(config, self.backend, self.device)
        if graph is None and no_graph is None and os.environ.get("ICGD_CUDA_GRAPH", "1") == "0":
            no_graph, graph = "ICGD_CUDA_GRAPH=0", False
        if graph and no_graph is not None:
            raise ValueError(f"the CUDA graph step cannot train this config: {no_graph}")
        self.graph_step: graphed.GraphStep | None = None
        self.capture_error: str | None = None  # why the capture failed, where it did (the step then runs eagerly)
        if no_graph is None and graph is not False:
            self.graph_step = graphed.GraphStep(config, self.params, self.names, self.backend, self.device)
            self.opt: Adam | graphed.StaticAdam = self.graph_step.opt
            self.stream: TaskStream | graphed.DeviceStream = graphed.DeviceStream(
                self.graph_step.generator, config.data_seed)
            self.step_path = "CUDA graph (sampling, losses, gradients, clipping and Adam replayed as one graph)"
        else:
            self.opt = Adam(self.params, self.names, config.optim, config.steps)
            self.stream = TaskStream(config, device)
            self.step_path = f"eager ({no_graph or 'graph: False'})"

    @property
    def path(self) -> str:
        """The backend's name ("compiled", "fused" or "generic")."""
        return self.backend.name

    def step(self, i: int) -> tuple[Tensor, bool]:
        """(per-seed losses (S,), whether the update was applied) for optimisation step number i."""
        gs = self.graph_step
        if gs is not None:
            if gs.graph is None and gs.eager_steps >= self.GRAPH_WARMUP and self.capture_error is None:
                try:
                    gs.capture()
                except RuntimeError as err:  # an op the CPU checks did not foresee: go on without the graph
                    self.capture_error = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
                    self.step_path = ("the graph step run eagerly on the device (its CUDA graph capture failed: "
                                      f"{self.capture_error})")
                    warnings.warn(f"{self.config.name}: {self.step_path}", RuntimeWarning, stacklevel=2)
            return gs.run().clone(), True
        losses = self.backend.loss_fn(self.params, *self.stream.next(i))
        if self.sync_free:
            self._bad |= ~torch.isfinite(losses.detach()).all()
        elif not bool(torch.isfinite(losses.detach()).all()):
            return losses.detach(), False
        grads = dict(zip(self.names, torch.autograd.grad(losses.sum(), [self.params[k] for k in self.names])))
        clip_per_seed(grads, self.config.optim.grad_clip)
        self.opt.step(grads)
        return losses.detach(), True

    def diverged(self) -> bool:
        """Whether a loss was non-finite since the start (always False on the CPU, where `step` refuses it)."""
        return bool(self.graph_step.bad if self.graph_step is not None else self._bad)


@dataclass
class TrainResult:
    """What `train` returns: the run directory, its summary and the trained (stacked) weights."""

    run_dir: Path
    summary: dict[str, Any]
    config: TrainConfig
    params: dict[str, Tensor] = field(repr=False)
    #: True where `train(resume=True)` found the run finished and returned it as it was, writing nothing
    finished_before: bool = False

    def learner(self, seed: int) -> Any:
        """The trained model of `seed` (a value from config.seeds)."""
        if seed not in self.config.seeds:
            raise ValueError(f"seed {seed!r} is not in run {self.config.name}: its seeds are {self.config.seeds}")
        return seed_learner(self.config, self.params, self.config.seeds.index(seed))

    def __repr__(self) -> str:
        s = self.summary
        loss = [r.get("final_eval_loss") for r in s.get("seeds", [])]
        shown = ", ".join("n/a" if v is None else f"{v:.4g}" for v in loss)
        return (f"TrainResult({self.config.name!r}: {s.get('status')} after {s.get('steps')} of "
                f"{self.config.steps} steps, seeds {self.config.seeds}, eval loss [{shown}], {str(self.run_dir)!r})")

    def metrics_frame(self) -> Any:
        """The run's metrics as a pandas DataFrame: one row per evaluation step and seed (`RunDir.metrics_frame`)."""
        return RunDir(self.run_dir).metrics_frame()


def environment(device: torch.device, config: TrainConfig, backend: Any = None) -> dict[str, Any]:
    import numpy

    from icgd.train import compiled

    name = getattr(backend, "name", "")
    return {"icgd": __version__, "torch": torch.__version__, "numpy": numpy.__version__,
            "python": platform.python_version(), "platform": platform.platform(), "device": str(device),
            "cuda": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
            "threads": torch.get_num_threads(), "seeds": config.seeds, "data_seed": config.data_seed,
            "compute_path": name, "backend": name, "backend_reason": getattr(backend, "reason", ""),
            "compiled": compiled.status() if name == "compiled" else None, "command": " ".join(sys.argv),
            "commit": code_commit()}


def train(config: TrainConfig | None = None, out: str | Path | None = None, device: str | torch.device = "cpu",
          resume: bool = False, quiet: bool = True, stop_after: int | None = None,
          new_stream: bool = False, desc: str | None = None) -> TrainResult:
    """Train `config` into run directory `out` (or continue the run in `out` with resume=True).

    stop_after: stop (with a checkpoint) once this many total steps are done, as an interrupted run.
    desc: the progress bar's name (default the config's name; a study passes "model i/n: NAME").
    new_stream (with resume): continue a checkpoint whose task stream this device cannot continue (the CUDA
    graph step's device generator on the CPU, or CPU streams in the graph step), drawing the tasks from the
    checkpoint's step on from a stream seeded anew (`TaskStream.restart`). The result is then not the
    uninterrupted run's; the summary's "segments" (kept across resumes) say on which device each stretch of
    steps ran and where the stream was restarted.
    Raises TrainingDiverged on a non-finite loss, TrainingInterrupted on SIGINT/SIGTERM (after saving).
    """
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device}: CUDA is not available")
    keep_freed_memory()
    ckpt: tuple[dict[str, Tensor], dict] | None = None
    no_checkpoint = "a new task stream continues a checkpoint: use it to resume a run that has one"
    if new_stream and not resume:
        raise ValueError(no_checkpoint)
    earlier = "cpu"  # the device type of the run's steps so far (env.json), for a checkpoint without segments
    if resume:  # validate everything before writing anything
        run = RunDir.open(out)
        config = build_config(run.read_config())
        if run.checkpoint.is_file():
            ckpt = load_checkpoint(run.checkpoint, device)
            _check_meta(ckpt[1], config, run.checkpoint)
            earlier = torch.device(run.read_env().get("device", "cpu")).type
            done = run.read_summary()
            if ckpt[1]["step"] >= config.steps and done and done.get("status") == "completed" \
                    and done.get("steps") == config.steps:  # finished: nothing to resume, nothing rewritten
                return TrainResult(run.path, done, config, checkpoint_params(ckpt[0]), finished_before=True)
        elif new_stream:
            raise ValueError(no_checkpoint)
    else:
        if config is None:
            raise ValueError("a config is needed to start a run")
        run = RunDir.create(out if out is not None else Path("runs") / config.name)
        run.write_config(dump_config(config))
    stepper = Stepper(config, device)
    if ckpt is not None:  # before anything is written: a stream this device cannot continue, or can
        try:
            stepper.stream.load_state(ckpt[0])
        except CheckpointError:
            if not new_stream:
                raise
        else:
            if new_stream:
                raise ValueError(f"{run.path}: --new-task-stream is not needed here: this device continues the run's "
                                 "task stream exactly; resume without it for the uninterrupted run's result")
    run.write_env(environment(device, config, stepper.backend) | {"step_path": stepper.step_path})
    if not quiet:
        print(f"backend: {stepper.backend.describe()}; step: {stepper.step_path}", file=sys.stderr)
    params, opt, stream = stepper.params, stepper.opt, stepper.stream

    g_eval = make_generator(config.eval.seed)
    # a task may score models against other targets than it trains them on (categorical: the true
    # probabilities instead of sampled labels)
    eval_task = config.task.evaluation_task()
    eval_eps = eval_task.sample(config.eval.n_tasks, g_eval, dtype=torch.float64)
    tune_eps = config.task.sample(config.eval.n_tune, g_eval, dtype=torch.float64)
    reference = load_reference(run, config, eval_eps) if resume else None
    if reference is None:
        with section("train reference", config.name):
            reference = build_reference(config, eval_eps, tune_eps)
        run.write_reference(reference.learner.describe())

    n_seeds = len(config.seeds)
    step, rows = 0, []
    segments: list[dict[str, Any]] = [{"device": device.type, "from_step": 0}]
    acc = torch.zeros(n_seeds, dtype=torch.float64, device=device)
    acc_n = 0
    if ckpt is not None:
        tensors, meta = ckpt
        with torch.no_grad():
            for k in params:
                params[k].copy_(tensors[f"param.{k}"])
        opt.load_state(tensors, meta["optim_t"])
        step, rows = meta["step"], meta["rows"]
        if new_stream:
            stream.restart(step)
        segments = meta.get("segments") or [{"device": earlier, "from_step": 0}]
        if new_stream or segments[-1]["device"] != device.type:
            segments.append({"device": device.type, "from_step": step, "new_stream": new_stream})
        acc = torch.tensor(meta["acc"], dtype=torch.float64, device=device)
        acc_n = meta["acc_n"]
    run.write_metrics(rows)
    # the weights at each evaluation (eval.keep_weights); a resumed run keeps those up to its checkpoint
    history = {k: v for k, v in run.read_weights().items() if k <= step} if config.eval.keep_weights else {}
    saved_step: list[int | str] = [step if ckpt is not None else "none"]
    # the training time of the steps before the checkpoint resumed (None: not recorded for it), so that a
    # resumed run's summary, and the model store, give the whole training's time
    earlier_s: float | None = 0.0 if ckpt is None else run.read_timing(step)

    def checkpoint() -> None:
        meta = {"step": step, "optim_t": opt.t, "rows": rows, "acc": acc.tolist(), "acc_n": acc_n,
                "seeds": config.seeds, "config_name": config.name, "icgd": __version__, "segments": segments}
        tensors = {f"param.{k}": v for k, v in params.items()} | opt.state() | stream.state()
        save_checkpoint(run.checkpoint, tensors, meta)
        if earlier_s is not None:
            run.write_timing(step, earlier_s + time.perf_counter() - t0)
        saved_step[0] = step

    flag: dict[str, int] = {}
    old = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    can_handle = _in_main_thread()
    if can_handle:
        for sig in old:
            signal.signal(sig, lambda s, f: flag.setdefault("sig", s))
    progress = Progress(config.steps, step, quiet, desc or config.name)
    t0, step0 = time.perf_counter(), step
    last_eval: float | None = rows[-1]["eval_loss"] if rows else None
    status = "completed"
    diverged: dict[str, Any] | None = None  # where and for which seeds, kept in the summary (`diverged_at`)
    try:
        while step < config.steps:
            losses, applied = stepper.step(step)
            if not applied:
                bad = [config.seeds[i] for i in range(n_seeds) if not math.isfinite(float(losses[i]))]
                status, diverged = "diverged", {"step": step + 1, "seeds": bad}
                raise TrainingDiverged(
                    f"training diverged at step {step + 1}: non-finite loss for seed(s) {bad}; "
                    f"the last good checkpoint (step {saved_step[0]}) is kept in {run.path}", step + 1, bad)
            step += 1
            acc += losses.to(torch.float64)
            acc_n += 1
            evaluating = step % config.eval.every == 0 or step == config.steps
            saving = step % config.checkpoint_every == 0 or step == config.steps or bool(flag) or (
                stop_after is not None and step >= stop_after)
            if (evaluating or saving) and stepper.diverged():
                status, diverged = "diverged", {"step": step, "seeds": None}
                raise TrainingDiverged(
                    f"training diverged between steps {saved_step[0]} and {step}: a non-finite loss; "
                    f"the last good checkpoint (step {saved_step[0]}) is kept in {run.path}", step)
            if evaluating:
                with section("train evaluation", config.name):
                    ev_rows = evaluate_seeds(config, params, eval_eps, reference)
                for i, r in enumerate(ev_rows):
                    row = {"step": step, "seed": config.seeds[i], "train_loss": float(acc[i]) / acc_n,
                           "reference_loss": reference.loss, "lr": opt.lr_at(step - 1)} | r
                    rows.append({k: row.get(k) for k in METRIC_COLUMNS})
                run.write_metrics(rows)
                if config.eval.keep_weights:
                    history[step] = {k: v.detach().to("cpu", copy=True) for k, v in params.items()}
                    run.write_weights(history)
                acc.zero_()
                acc_n = 0
                last_eval = float(sum(r["eval_loss"] for r in ev_rows) / n_seeds)
            progress.update(step, lambda: float(losses.mean()), last_eval, force=step == config.steps)
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
        summary = _summary(config, rows, reference, step, status, elapsed, step - step0, stepper.backend, device) \
            | {"step_path": stepper.step_path, "segments": segments} | ({"diverged": diverged} if diverged else {})
        if step0:  # resumed: the whole training's time where the checkpoint knew the earlier part
            summary |= {"wall_seconds": None if earlier_s is None else round(earlier_s + elapsed, 3),
                        "wall_seconds_this_call": round(elapsed, 3)}
        run.write_summary(summary)
    if flag:
        raise TrainingInterrupted(f"interrupted by signal {flag['sig']} at step {step}; checkpoint saved in "
                                  f"{run.path} (continue with: icgd train --resume {run.path})", run.path, step)
    return TrainResult(run.path, summary, config, {k: v.detach() for k, v in params.items()})


def trained_on(summary: dict[str, Any]) -> str:
    """The device types that trained a run, in order ("cuda", or "cuda+cpu" for a run stopped on a GPU and
    finished on the CPU), from its summary's segments (older summaries: their "device")."""
    kinds: list[str] = []
    for seg in summary.get("segments") or [{"device": str(summary.get("device", "cpu"))}]:
        kind = torch.device(seg["device"]).type
        if not kinds or kinds[-1] != kind:
            kinds.append(kind)
    return "+".join(kinds)


def diverged_at(summary: dict[str, Any]) -> TrainingDiverged | None:
    """The divergence a run's summary records (step and seeds, as training raised it), or None: a run that
    diverged is a result (the categorical depth study reads where and for which seeds), kept like a finished
    one. Summaries written before the record was kept have none: such a run trains again."""
    rec = summary.get("diverged") if summary.get("status") == "diverged" else None
    if not isinstance(rec, dict) or not isinstance(rec.get("step"), int):
        return None
    seeds = rec.get("seeds")
    return TrainingDiverged(f"training diverged at step {rec['step']}" + (
        f": non-finite loss for seed(s) {seeds}" if seeds else "") + " (recorded in the run's summary)",
        rec["step"], seeds)


def _in_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _check_meta(meta: dict, config: TrainConfig, path: Path) -> None:
    if meta.get("seeds") != config.seeds or not isinstance(meta.get("step"), int):
        raise CheckpointError(f"{path}: checkpoint does not match config.yaml (seeds {meta.get('seeds')} "
                              f"vs {config.seeds})")


def _summary(config: TrainConfig, rows: list[dict], reference: TunedReference, step: int, status: str,
             elapsed: float, steps_run: int, backend: Any, device: torch.device) -> dict[str, Any]:
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
            "compute_path": backend.name, "backend": backend.name, "backend_reason": backend.reason,
            "device": str(device), "wall_seconds": round(elapsed, 3),
            "seed_steps_per_s": round(steps_run * len(config.seeds) / elapsed, 2) if elapsed > 0 else None}
