"""The training set-up of source 000's code for linear self-attention stacks, and its one-layer model: what
sources 000 (von Oswald et al.) and 001 (the replication study, which trains with the same code's set-up)
both train with, so that neither source imports the other. Every value is cited by file and line of the
authors' code (google-research/self-organising-systems, `transformers_learn_icl_by_gd`)."""

from __future__ import annotations

from typing import Any

from icgd.experiments.common import (
    CURVE_ALIGN_TASKS,
    CURVE_TASKS,
    TUNE_TASKS,
    Size,
    eval_every,
    size,
)
from icgd.experiments.registry import ExperimentContext
from icgd.train.config import TrainConfig, build_config
from icgd.train.engine import TrainResult

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
                 lr: float | None = None, input_range: float = 1.0, reference: str = "gd",
                 task: dict[str, Any] | None = None, **extra: Any) -> TrainConfig:
    """Source 000's code's training set-up (`authors_setup` for the model's depth) for `model`; steps =
    (quick, full); `lr` overrides the set-up's learning rate, `task` the task (default: source 000's linear
    regression with inputs U(-input_range, input_range)), `extra` any top-level key (a dict is merged)."""
    n = Size(*steps, smoke=4).of(ctx.mode)
    setup = authors_setup(int(model.get("n_layers", 1)))
    optim = setup["optim"] | ({"lr": lr} if lr is not None else {})
    raw = {"name": name, "task": {"input_range": input_range} if task is None else task, "model": setup["model"] | model, "optim": optim,
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
    """{label: config} of the 1-layer LSA of source 000, sec. 2 (one cached model for every experiment of sources 000
    and 001)."""
    label = f"lsa1-a{input_range:g}"
    # its weights at each evaluation: the interpolated model over training (Fig. 2 left)
    return {label: train_config(ctx, label, {"n_layers": 1}, (1500, 5000), input_range=input_range,
                                eval={"keep_weights": True})}


def one_layer_run(ctx: ExperimentContext, input_range: float = 1.0) -> TrainResult:
    """The trained 1-layer LSA of source 000, sec. 2 (`one_layer_model`)."""
    ((label, config),) = one_layer_model(ctx, input_range).items()
    return ctx.train(label, config)
