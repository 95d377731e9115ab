"""Held-out evaluation during training: the tuned reference learner and each seed's loss and alignment."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from icgd.core.episodes import Episodes
from icgd.core.metrics import Stat, alignment, evaluate
from icgd.learners.references import reference_from, tune_reference
from icgd.train.config import TrainConfig
from icgd.train.models import seed_learner
from icgd.train.rundir import RunDir


@dataclass
class TunedReference:
    """The reference learner a run is scored against (`eval.reference`: GD, GD++, the zero predictor, ...),
    tuned on separate tasks, with its held-out loss. Not the authors' number of a claim
    (`icgd.claims.references.Reference`)."""

    learner: Any
    loss: float
    ci95: tuple[float, float]


def reference_steps_of(config: TrainConfig) -> int:
    """GD steps of the reference learner: eval.reference_steps, else one per layer of an attention stack,
    else one."""
    return config.eval.reference_steps or config.model.gd_steps


def build_reference(config: TrainConfig, eval_eps: Episodes, tune_eps: Episodes) -> TunedReference:
    """The explicit learner every seed is scored against, tuned on separate tasks (float64, CPU)."""
    learner = tune_reference(config.eval.reference, tune_eps, reference_steps_of(config))
    stat = evaluate(learner, eval_eps, loss=config.task.evaluation_task().loss)
    return TunedReference(learner, stat.mean, stat.ci95)


def load_reference(run: RunDir, config: TrainConfig, eval_eps: Episodes) -> TunedReference | None:
    """The reference learner saved in the run directory (None when there is none)."""
    d = run.read_reference()
    if d is None:
        return None
    learner = reference_from(d)
    stat = evaluate(learner, eval_eps, loss=config.task.evaluation_task().loss)
    return TunedReference(learner, stat.mean, stat.ci95)


def evaluate_seeds(config: TrainConfig, params: dict[str, Tensor], eval_eps: Episodes,
                   reference: TunedReference) -> list[dict[str, float]]:
    """Per-seed eval loss (+ CI) and alignment with the reference, on the same held-out tasks, on the
    training device: the loss in the training dtype, the alignment in float64 (the sensitivities are
    differences of nearby predictions)."""
    rows = []
    first = next(iter(params.values()))
    ev = eval_eps.to(first.device, first.dtype)
    aligns = config.eval.reference != "zero" and config.task.aligns
    n_align = min(config.eval.alignment_tasks, ev.batch_size) if aligns else 0
    ref_ep = eval_eps[:n_align].to(first.device, torch.float64)
    stats = fused_losses(config, params, ev)
    for i in range(len(config.seeds)):
        if stats is None:
            learner = seed_learner(config, {k: v.detach() for k, v in params.items()}, i)
            stat = evaluate(learner, ev, loss=config.task.evaluation_task().loss)
        else:
            stat = stats[i]
        row = {"eval_loss": stat.mean, "eval_ci_low": stat.ci95[0], "eval_ci_high": stat.ci95[1]}
        if n_align:
            learner64 = seed_learner(config, {k: v.detach().to(torch.float64) for k, v in params.items()}, i)
            al = alignment(learner64, reference.learner, ref_ep)
            row |= {k: s.mean for k, s in al.items()}
        rows.append(row)
    return rows


def fused_predictions(config: TrainConfig, params: dict[str, Tensor], ev: Episodes, chunk: int = 4096
                      ) -> Iterator[tuple[Episodes, Tensor]] | None:
    """(tasks, predictions (S, B, Q, Dy)) of every seed at once by the fused training path, `chunk` tasks at a
    time, in the dtype and on the device of `params` and `ev`; None where that path does not compute the
    model (`backends.fused_ineligible`: other models, objectives or tokens)."""
    from icgd.train.backends import fused_ineligible

    if fused_ineligible(config) is not None:
        return None
    return _fused_chunks(config, {k: v.detach() for k, v in params.items()}, ev, chunk)


def _fused_chunks(config: TrainConfig, weights: dict[str, Tensor], ev: Episodes, chunk: int
                  ) -> Iterator[tuple[Episodes, Tensor]]:
    from icgd.core.metrics import chunks
    from icgd.train.fused import lsa_predictions

    stack = config.stack_config()
    for e in chunks(ev, chunk):
        with torch.no_grad():
            yield e, lsa_predictions(weights, stack, e.context_x, e.context_y, e.query_x)


def fused_losses(config: TrainConfig, params: dict[str, Tensor], ev: Episodes, chunk: int = 4096
                 ) -> list[Stat] | None:
    """Every seed's held-out loss (a Stat per seed) computed for all seeds at once by the fused training path
    (`fused_predictions`); None where that path does not compute the model (or `ev` has no targets), and the
    losses are taken seed by seed. Equal to each seed's module to float rounding (tests/integration/test_train.py). Why:
    one evaluation of 5 seeds of the 4-head MLP stack took 0.309 s seed by seed against 0.081 s for all seeds'
    predictions at once (`benchmarks/eval_cost.py`)."""
    from icgd.core.metrics import query_loss

    preds = fused_predictions(config, params, ev, chunk) if ev.query_y is not None else None
    if preds is None:
        return None
    # the squared error: fused_ineligible refuses other objectives
    losses = torch.cat([query_loss(pred, e.query_y.expand_as(pred)) for e, pred in preds], dim=-1)  # (S, B)
    return [Stat.of(row) for row in losses]
