"""Held-out evaluation during training: the tuned reference learner and each seed's loss and alignment."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from icgd.episodes import Episodes
from icgd.learners.references import reference_from, tune_reference
from icgd.metrics import alignment, evaluate
from icgd.train.config import TrainConfig
from icgd.train.models import seed_learner
from icgd.train.rundir import RunDir


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
    learner = tune_reference(config.eval.reference, tune_eps, reference_steps_of(config))
    stat = evaluate(learner, eval_eps, loss=config.task.evaluation_task().loss)
    return Reference(learner, stat.mean, stat.ci95)


def load_reference(run: RunDir, config: TrainConfig, eval_eps: Episodes) -> Reference | None:
    """The reference learner saved in the run directory (None when there is none)."""
    d = run.read_reference()
    if d is None:
        return None
    learner = reference_from(d)
    stat = evaluate(learner, eval_eps, loss=config.task.evaluation_task().loss)
    return Reference(learner, stat.mean, stat.ci95)


def evaluate_seeds(config: TrainConfig, params: dict[str, Tensor], eval_eps: Episodes,
                   reference: Reference) -> list[dict[str, float]]:
    """Per-seed eval loss (+ CI) and alignment with the reference, on the same held-out tasks, on the
    training device: the loss in the training dtype, the alignment in float64 (the sensitivities are
    differences of nearby predictions)."""
    rows = []
    first = next(iter(params.values()))
    ev = eval_eps.to(first.device, first.dtype)
    aligns = config.eval.reference != "zero" and getattr(config.task, "aligns", True)
    n_align = min(config.eval.alignment_tasks, ev.batch_size) if aligns else 0
    ref_ep = eval_eps[:n_align].to(first.device, torch.float64)
    for i in range(len(config.seeds)):
        learner = seed_learner(config, {k: v.detach() for k, v in params.items()}, i)
        stat = evaluate(learner, ev, loss=config.task.evaluation_task().loss)
        row = {"eval_loss": stat.mean, "eval_ci_low": stat.ci95[0], "eval_ci_high": stat.ci95[1]}
        if n_align:
            learner64 = seed_learner(config, {k: v.detach().to(torch.float64) for k, v in params.items()}, i)
            al = alignment(learner64, reference.learner, ref_ep)
            row |= {k: s.mean for k, s in al.items()}
        rows.append(row)
    return rows
