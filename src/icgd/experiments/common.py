"""The shared experiments layer: what several sources' experiments use, so that no source module imports
another. Held-out and tuning task sets, the training set-up of source 000's code and its one-layer model,
every seed's trained learner, metric curves from a run, medians, and the named sizes that depend on the run
mode.

Modes: "full" (the authors' set-up and budget: `authors_setup`, `authors_steps`), "quick" (the same set-up,
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
from icgd.train.config import TrainConfig, build_config
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


#: what every experiment of source 001 does differently from the post, each with its reason
BLOG_DEVIATIONS = (
    "the post's code is not public: its LSAs train with source 000's code's set-up (`authors_setup`: AdamW "
    "b2 0.98, lr 1e-3, batch 2048, clip 0.001 up to 2 layers); the post states Adam, batch 2048 and lr 1e-4 "
    "(its draft only). Reason: the set-up of the study it replicates.",
    "Dx = N = 10 throughout; the post's learning-curve and scaling figures are at D = 5 (their zero level "
    "0.832 and GD / zero ratios fit D = 5 only). Reason: the claims' numbers are ratios; D = 10 is source "
    "000's.",
)

#: haiku's truncated-normal VarianceScaling divides its std by this (the std of a unit normal truncated at +-2),
#: so that the truncated draw has the std asked for; torch's trunc_normal_ does not (`icgd.nn.attention`)
HAIKU_TRUNCATION = 0.87962566103423978


def authors_setup(n_layers: int) -> dict[str, Any]:
    """Source 000's training set-up for an LSA stack of `n_layers` layers, as its code trains every linear
    figure (google-research/self-organising-systems 3d5547c, transformers_learn_icl_by_gd; CTS =
    constructed_token_setup.ipynb, line of the raw file):

    - Adam with decoupled weight decay 0, b1 0.9, b2 0.98 (src/config.py:22-23, 85; passed at src/train.py:
      292-296). The eps is optax's default 1e-8: `config.adam_eps` (1e-9, src/config.py:24) is never passed.
    - learning rate 1e-3, 5e-4 above 3 layers (CTS:150); global gradient-norm clip 0.001 up to 2 layers, 10
      above (CTS:148); token clipping at +-10 above 3 layers (CTS:157, src/transformer.py:196-199).
    - attention init VarianceScaling(0.002 / layers), fan-in, truncated normal (CTS:153, src/transformer.py:
      246): the same std as ours at init_scale 0.002 / layers / 0.8796^2 (`HAIKU_TRUNCATION`).
    - batch 2048 of fresh tasks (CTS:154); each seed draws its own task stream as well as its own init
      (src/train.py:280-281, CTS:552-554): data "per_seed".
    """
    return {"optim": {"name": "adamw", "lr": 5e-4 if n_layers > 3 else 1e-3, "beta1": 0.9, "beta2": 0.98,
                      "eps": 1e-8, "weight_decay": 0.0, "grad_clip": 10.0 if n_layers > 2 else 0.001},
            "model": {"init_scale": 0.002 / n_layers / HAIKU_TRUNCATION ** 2} | ({"clip": 10.0} if n_layers > 3 else {}),
            "batch_size": 2048, "data": "per_seed"}


#: source 000's training steps (CTS:130): 5000 for one layer or a recurrent stack, 50000 for separate layers
STEPS_RECURRENT, STEPS_SEPARATE = 5000, 50_000


def authors_steps(model: dict[str, Any]) -> int:
    """Source 000's training steps for `model` (`STEPS_RECURRENT` or `STEPS_SEPARATE`)."""
    return STEPS_RECURRENT if model.get("recurrent") or int(model.get("n_layers", 1)) == 1 else STEPS_SEPARATE


def train_config(ctx: ExperimentContext, name: str, model: dict[str, Any], steps: tuple[int, int],
                 lr: float | None = None, input_range: float = 1.0, reference: str = "gd", **extra: Any
                 ) -> TrainConfig:
    """Source 000's code's training set-up (`authors_setup` for the model's depth) for `model`; steps =
    (quick, full); `lr` overrides the set-up's learning rate, `extra` any top-level key (a dict is merged)."""
    n = Size(*steps, smoke=4).of(ctx.mode)
    setup = authors_setup(int(model.get("n_layers", 1)))
    optim = setup["optim"] | ({"lr": lr} if lr is not None else {})
    raw = {"name": name, "task": {"input_range": input_range}, "model": setup["model"] | model, "optim": optim,
           "steps": n, "seeds": ctx.seeds, "checkpoint_every": 500, "batch_size": setup["batch_size"],
           "data": setup["data"],
           "eval": {"every": eval_every(ctx, n, 40), "n_tasks": size(ctx, CURVE_TASKS), "reference": reference,
                    "alignment_tasks": size(ctx, CURVE_ALIGN_TASKS)}}
    for key, value in extra.items():
        raw[key] = raw[key] | value if isinstance(value, dict) and isinstance(raw.get(key), dict) else value
    if ctx.mode == "smoke":
        raw["eval"]["n_tune"] = size(ctx, TUNE_TASKS)
        raw["batch_size"] = min(raw["batch_size"], 64)
        if raw.get("train_set_size") is not None:
            raw["train_set_size"] = max(raw["train_set_size"], raw["batch_size"])
    return build_config(raw)


def one_layer_model(ctx: ExperimentContext, input_range: float = 1.0) -> dict[str, TrainConfig]:
    """{label: config} of the 1-layer LSA of SPEC 1 (one cached model for every experiment of sources 000
    and 001)."""
    label = f"lsa1-a{input_range:g}"
    # its weights at each evaluation: the interpolated model over training (Fig. 2 left)
    return {label: train_config(ctx, label, {"n_layers": 1}, (1500, 5000), input_range=input_range,
                                eval={"keep_weights": True})}


def one_layer_run(ctx: ExperimentContext, input_range: float = 1.0) -> TrainResult:
    """The trained 1-layer LSA of SPEC 1 (`one_layer_model`)."""
    ((label, config),) = one_layer_model(ctx, input_range).items()
    return ctx.train(label, config)


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
    float64 rounding: tests/test_experiments.py)."""
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
