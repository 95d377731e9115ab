"""The shared experiments layer: what several sources' experiments use, so that no source module imports
another. Held-out and tuning task sets, every seed's trained learner, metric curves from a run, medians, and
the named sizes that depend on the run mode. The training set-up of source 000's code, which sources 000 and 001
both train with, is `icgd.experiments.linear_setup`.

Modes: "full" (the authors' set-up and budget), "quick" (the same set-up,
shorter training, fewer tasks) and "smoke" (a handful of steps and tasks: checks that every experiment runs
and produces every result a claim reads; its numbers mean nothing).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from icgd.core.episodes import Episodes, TaskDistribution, make_generator
from icgd.experiments.registry import ExperimentContext
from icgd.train.engine import TrainResult
from icgd.train.rundir import RunDir

#: seeds of the held-out and the tuning tasks of the linear study (sources 000 and 001 share them)
EVAL_SEED = 20_231_000
TUNE_SEED = 20_231_001


@dataclass(frozen=True)
class Size:
    """A count (tasks, steps, repetitions) for each run mode."""

    quick: int
    full: int
    smoke: int = 64

    def of(self, mode: str) -> int:
        return {"quick": self.quick, "full": self.full, "smoke": self.smoke}[mode]


#: held-out tasks of an analysis (every learner scored on the same ones)
EVAL_TASKS = Size(quick=4096, full=10_000)
#: tasks the explicit references' learning rates are tuned on
TUNE_TASKS = Size(quick=10_000, full=10_000, smoke=64)
#: held-out tasks of the alignment metrics (a prefix of the evaluation tasks)
ALIGN_TASKS = Size(quick=2048, full=2048)
#: held-out tasks behind the training curves (the run's metrics) and their alignment metrics
CURVE_TASKS = Size(quick=2048, full=4096)
CURVE_ALIGN_TASKS = Size(quick=512, full=1024, smoke=16)


def size(ctx: ExperimentContext, s: Size) -> int:
    """`s` for the context's run mode."""
    return s.of(ctx.mode)


def eval_every(ctx: ExperimentContext, steps: int, points: int) -> int:
    """Evaluate a run of `steps` steps at about `points` points (only at the end in smoke mode)."""
    return steps if ctx.mode == "smoke" else max(steps // points, 1)


def eval_tasks(ctx: ExperimentContext, task: TaskDistribution, seed: int = EVAL_SEED,
               n: Size = EVAL_TASKS) -> Episodes:
    """Held-out tasks (float64, CPU), the same for every learner of an experiment."""
    return task.sample(size(ctx, n), make_generator(seed), dtype=torch.float64)


def tune_tasks(ctx: ExperimentContext, task: TaskDistribution, seed: int = TUNE_SEED) -> Episodes:
    """Tasks the references' learning rates are tuned on (float64, CPU), apart from the held-out ones."""
    return task.sample(size(ctx, TUNE_TASKS), make_generator(seed), dtype=torch.float64)


def weights_over_training(res: TrainResult) -> list[tuple[int, list[Any]]]:
    """(step, [each seed's learner]) at every evaluation of a run that kept its weights (eval.keep_weights;
    empty for one that did not)."""
    from icgd.train.models import seed_learner

    n = len(res.config.seeds)
    return [(step, [seed_learner(res.config, params, i) for i in range(n)])
            for step, params in RunDir(res.run_dir).read_weights().items()]


def curve_tasks(res: TrainResult) -> Episodes:
    """The held-out tasks behind a training run's curves (its metrics), for reference lines drawn on them."""
    c = res.config
    return c.task.evaluation_task().sample(c.eval.n_tasks, make_generator(c.eval.seed), dtype=torch.float64)


def seed_learners(res: TrainResult) -> list[Any]:
    """Every seed's trained model, in float64 on the CPU (the analyses' precision)."""
    return [res.learner(s).to("cpu", torch.float64) for s in res.config.seeds]


def seed_predictions(res: TrainResult, ev: Episodes, chunk: int = 4096) -> Iterator[tuple[Episodes, Tensor]]:
    """(tasks, predictions (S, B, Q, Dy)) of every seed of `res` (float64, CPU), `chunk` tasks at a time:
    all seeds at once by the fused training path where it computes the model
    (`icgd.train.evaluation.fused_predictions`), else `seed_learners(res)` one by one (the same numbers to
    float64 rounding: tests/integration/test_experiments.py)."""
    from icgd.core.metrics import chunks
    from icgd.train.evaluation import fused_predictions

    fast = fused_predictions(res.config, _params64(res), ev, chunk)
    if fast is not None:
        yield from fast
        return
    learners = seed_learners(res)
    for e in chunks(ev, chunk):
        with torch.no_grad():
            yield e, torch.stack([lr.predict(e) for lr in learners])


def _params64(res: TrainResult) -> dict[str, Tensor]:
    return {k: v.detach().to("cpu", torch.float64) for k, v in res.params.items()}


def seed_losses(res: TrainResult, ev: Episodes, chunk: int = 4096) -> list[float]:
    """`evaluate(learner, ev).mean` for each of `seed_learners(res)` (float64, CPU), computed for all seeds at
    once by the fused training path where it computes the model (`icgd.train.evaluation.fused_losses`, the
    training evaluation's), else seed by seed. Measured: the module path's per-seed einsums took 134 s of
    oswald-depth's 188 s of analyses (cProfile of `icgd reproduce oswald-depth` on cached models)."""
    from icgd.core.metrics import evaluate
    from icgd.core.profiling import section
    from icgd.train.evaluation import fused_losses

    with section("evaluate"):
        stats = fused_losses(res.config, _params64(res), ev, chunk)
    if stats is None:
        return [evaluate(lr, ev).mean for lr in seed_learners(res)]
    return [s.mean for s in stats]


def seed_task_losses(res: TrainResult, ev: Episodes, chunk: int = 4096) -> Tensor:
    """Every seed's loss on every task of `ev`, (S, B) (float64, CPU; `query_loss` of `seed_predictions`)."""
    from icgd.core.metrics import query_loss
    from icgd.core.profiling import section

    with section("evaluate"):
        return torch.cat([query_loss(pred, e.query_y.expand_as(pred)) for e, pred in seed_predictions(res, ev, chunk)],
                         dim=-1)


def seed_prediction_differences(res: TrainResult, refs: list[Any], ev: Episodes, chunk: int = 4096
                                ) -> list[list[float]]:
    """`alignment(learner, ref, ev)["prediction_difference"].mean` for each reference learner (outer list) and
    each of `seed_learners(res)` (inner), without the sensitivities that `alignment` also computes: the
    per-task mean over queries of ||y_hat - y_ref||, averaged over tasks."""
    from icgd.core.metrics import Stat
    from icgd.core.profiling import section

    with section("evaluate"):
        parts: list[list[Tensor]] = [[] for _ in refs]
        for e, pred in seed_predictions(res, ev, chunk):
            for i, ref in enumerate(refs):
                with torch.no_grad():
                    parts[i].append((pred - ref.predict(e)).norm(dim=-1).mean(-1))  # (S, B)
    return [[Stat.of(row).mean for row in torch.cat(p, dim=-1)] for p in parts]


def curves(res: TrainResult, key: str) -> tuple[list[int], np.ndarray]:
    """(steps, seeds x steps) of metric `key` from a run's metrics (`RunDir.metrics_frame`)."""
    table = RunDir(res.run_dir).metrics_frame().pivot(index="seed", columns="step", values=key)
    table = table.loc[res.config.seeds].sort_index(axis=1)
    return [int(s) for s in table.columns], table.to_numpy(dtype=float)


def median(x: list[float]) -> float:
    return float(np.median(np.asarray(x, dtype=float)))
