"""Validated, declarative training configs (YAML or Python), presets, and `key=value` overrides."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Union

import torch
import yaml
from pydantic import (
    BaseModel,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo

from icgd.core.io import fingerprint
from icgd.core.seeds import TRAIN_SEEDS, check_seeds
from icgd.nn.stack import StackConfig
from icgd.tasks import TASKS, LinearRegression, on_task_change
from icgd.train.kinds import MODEL_KINDS, StrictSection, model_kind, on_change
from icgd.train.models import (  # noqa: F401  (the model kinds' sections, registered on import; re-exported)
    DTYPES,
    CausalLMConfig,
    FeatureLSAConfig,
    KernelGDConfig,
    LSTMConfig,
    ModelConfig,
)


class ConfigError(ValueError):
    """A bad config: the message is one line naming the key and the value."""


#: the kinds a config section may name (`model.kind`, `task.kind`); the first is the default. Model kinds
#: register in `icgd.train.kinds` (the built-in ones in `icgd.train.models`, imported above), task kinds in
#: `icgd.tasks` (`register_task`)
TASK_KINDS: dict[str, type[BaseModel]] = TASKS


def _tagged_union(kinds: dict[str, type[BaseModel]]) -> Any:
    """A pydantic union of `kinds` chosen by the `kind` key, which defaults to the first kind."""
    default = next(iter(kinds))

    def kind_of(v: Any) -> str:
        return v.get("kind", default) if isinstance(v, dict) else getattr(v, "kind", default)

    return Annotated[Union[tuple(Annotated[c, Tag(k)] for k, c in kinds.items())], Discriminator(kind_of)]


def _model_union() -> Any:
    return _tagged_union({name: kind.config for name, kind in MODEL_KINDS.items()})


def _task_union() -> Any:
    return _tagged_union(TASK_KINDS)


AnyModelConfig = _model_union()
AnyTask = _task_union()


class OptimConfig(StrictSection):
    """Adam / AdamW with a learning-rate schedule and per-seed global-norm gradient clipping."""

    name: Literal["adam", "adamw"] = "adam"
    lr: float = Field(1e-3, gt=0)
    beta1: float = Field(0.9, ge=0, lt=1)
    beta2: float = Field(0.999, ge=0, lt=1)
    eps: float = Field(1e-8, gt=0)
    weight_decay: float = Field(0.0, ge=0)
    grad_clip: float | None = Field(10.0, gt=0, description="global gradient norm per seed; null disables")
    schedule: Literal["constant", "cosine", "linear"] = "constant"
    warmup_steps: int = Field(0, ge=0)


class EvalConfig(StrictSection):
    """Held-out evaluation, on the same fixed tasks for every seed and for the reference learner."""

    every: int = Field(100, ge=1, description="evaluate every k steps (and at the last step)")
    n_tasks: int = Field(4096, ge=2)
    seed: int = Field(1_000_003, description="seed of the held-out and tuning tasks")
    reference: str = Field(
        "gd", description="tuned explicit learner to score against, one of the task's reference_kinds "
                          "(`icgd.learners.references`); zero: the zero predictor (no alignment)")
    reference_steps: int | None = Field(None, ge=1, description="default: the model's number of layers "
                                                                "(stack), else 1")
    n_tune: int = Field(10_000, ge=2, description="tasks to tune the reference's learning rates on")
    alignment_tasks: int = Field(1024, ge=0, description="tasks for the alignment metrics (0 = skip)")
    keep_weights: bool = Field(False, description="also save every seed's weights at each evaluation "
                                                  "(weights.safetensors: the trajectory over training)")


class WarmStart(StrictSection):
    """A curriculum's first phase: optimisation steps 1 to `steps` draw their batches from `task` (an easier
    version of the run's task, of the same kind and vocabulary), the later steps from the run's task. The
    learning-rate schedule and the evaluation are the run's own throughout."""

    task: AnyTask
    steps: int = Field(..., ge=1, description="steps drawn from the warm-up task")


class TrainConfig(StrictSection):
    """Everything a training run needs; `icgd train` writes it back, resolved, into the run directory."""

    name: str = "run"
    task: AnyTask = LinearRegression()
    model: AnyModelConfig = ModelConfig()  # rebuilt when a kind registers (`_rebuild_model_union`)
    optim: OptimConfig = OptimConfig()
    eval: EvalConfig = EvalConfig()
    steps: int = Field(5000, ge=1)
    batch_size: int = Field(2048, ge=1)
    seeds: list[int] = Field(default_factory=lambda: list(TRAIN_SEEDS), min_length=1)
    data: Literal["shared", "per_seed"] = Field(
        "shared", description="shared: all seeds see one task stream (from data_seed); per_seed: one each")
    data_seed: int = 0
    train_set_size: int | None = Field(None, ge=1, description="a fixed training set of M tasks (null = fresh)")
    checkpoint_every: int = Field(500, ge=1)
    dtype: Literal["float32", "float64"] = "float32"
    fast: bool = Field(True, description="use the fused linear-attention path when the model allows it")
    warm_start: WarmStart | None = Field(None, description="a first phase of training on another task of the "
                                                           "same kind (null: none)")

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, v: list[int]) -> list[int]:
        return check_seeds(v)

    @model_validator(mode="after")
    def _consistent(self) -> "TrainConfig":
        if self.train_set_size is not None and self.train_set_size < self.batch_size:
            raise ValueError(f"train_set_size={self.train_set_size} is smaller than batch_size={self.batch_size}")
        kinds = self.task.reference_kinds
        if self.eval.reference not in kinds:
            raise ValueError(f"eval.reference={self.eval.reference!r} does not apply to task kind "
                             f"{self.task.kind!r} (it has: {', '.join(kinds)})")
        reads = model_kind(self.model).tasks
        if reads is not None and self.task.kind not in reads and self.task.variant_of not in reads:
            raise ValueError(f"model kind {self.model.kind!r} reads tasks of kind {', '.join(reads)}, not "
                             f"task.kind={self.task.kind!r}")
        check = getattr(self.model, "check_task", None)  # a model kind's own limits on the task (e.g. its length)
        if check is not None:
            check(self.task)
        if self.warm_start is not None:
            self._check_warm_start(check)
        return self

    def _check_warm_start(self, check: Any) -> None:
        warm = self.warm_start.task
        if self.warm_start.steps >= self.steps:
            raise ValueError(f"warm_start.steps={self.warm_start.steps} leaves no step of the run's task "
                             f"(steps={self.steps})")
        if self.train_set_size is not None:
            raise ValueError("warm_start draws fresh tasks: it cannot be combined with train_set_size")
        if warm.kind != self.task.kind:
            raise ValueError(f"warm_start.task is of kind {warm.kind!r}, the run's task of kind {self.task.kind!r}")
        for attr in ("vocab", "dx", "dy", "n_categories"):  # what the model is built for
            if getattr(warm, attr, None) != getattr(self.task, attr, None):
                raise ValueError(f"warm_start.task has {attr}={getattr(warm, attr, None)}, the run's task "
                                 f"{attr}={getattr(self.task, attr, None)}: one model reads both")
        width = getattr(self.model, "width", None)
        if width is not None and width(warm) != width(self.task):
            raise ValueError(f"warm_start.task gives tokens of width {width(warm)}, the run's task "
                             f"{width(self.task)}: one model reads both")
        if check is not None:
            check(warm)

    def stack_config(self) -> StackConfig:
        """The attention stack of a model whose kind describes one (`stack`); TypeError for the others."""
        if not hasattr(self.model, "stack_config"):
            raise TypeError(f"model kind {self.model.kind!r} is not an attention stack")
        return self.model.stack_config(self.model.width(self.task))


def _rebuild_model_union() -> None:
    """Let `TrainConfig.model` take the kinds registered now (called by `icgd.train.kinds` on a change)."""
    TrainConfig.model_fields["model"] = FieldInfo.from_annotated_attribute(_model_union(), ModelConfig())
    TrainConfig.model_rebuild(force=True)


on_change(_rebuild_model_union)


def _rebuild_task_union() -> None:
    """Let `TrainConfig.task` (and a warm start's task) take the task kinds registered now (called by
    `icgd.tasks` on a change)."""
    WarmStart.model_fields["task"] = FieldInfo.from_annotated_attribute(_task_union(), ...)
    WarmStart.model_rebuild(force=True)
    TrainConfig.model_fields["task"] = FieldInfo.from_annotated_attribute(_task_union(), LinearRegression())
    TrainConfig.model_rebuild(force=True)


on_task_change(_rebuild_task_union)


# ------------------------------------------------------------------------------------------- presets
PRESETS: dict[str, dict[str, Any]] = {
    "lsa-1": {"name": "lsa-1", "model": {"n_layers": 1}, "optim": {"lr": 1e-3}, "steps": 5000},
    "lsa-2-recurrent": {"name": "lsa-2-recurrent", "model": {"n_layers": 2, "recurrent": True},
                        "optim": {"lr": 1e-3}, "steps": 10000},
    "lsa-5": {"name": "lsa-5", "model": {"n_layers": 5, "clip": 10.0}, "optim": {"lr": 5e-4}, "steps": 20000,
              "eval": {"reference": "gdpp"}},
    "softmax-2": {"name": "softmax-2", "model": {"n_layers": 2, "attention": {"kernel": "softmax"}},
                  "optim": {"lr": 1e-3},
                  "steps": 10000},
    "sine-lsa": {"name": "sine-lsa", "task": {"kind": "sine"}, "model": {"kind": "mlp_lsa"},
                 "optim": {"lr": 1e-3}, "steps": 10000, "eval": {"reference": "zero"}},
    "sine-gd": {"name": "sine-gd", "task": {"kind": "sine"}, "model": {"kind": "mlp_lsa", "gd_control": True},
                "optim": {"lr": 1e-3}, "steps": 10000, "eval": {"reference": "zero"}},
    "copy-2": {"name": "copy-2", "model": {"n_layers": 2, "layers": [{"kernel": "softmax"}, {"kernel": "linear"}],
                                           "tokens": "interleaved", "attention": {"query_in_keys": True}},
               "optim": {"lr": 1e-3}, "steps": 20000, "eval": {"reference": "gd", "reference_steps": 1}},
    "lstm-2": {"name": "lstm-2", "model": {"kind": "lstm", "n_layers": 2}, "optim": {"lr": 3e-3}, "steps": 4000,
               "batch_size": 256},
    "bilstm-2": {"name": "bilstm-2", "model": {"kind": "lstm", "n_layers": 2, "bidirectional": True},
                 "optim": {"lr": 3e-3}, "steps": 4000, "batch_size": 256},
}
PRESET_DOCS = {
    "lsa-1": "1-layer linear self-attention (source 000's defaults: Adam 1e-3, batch 2048, fresh tasks)",
    "lsa-2-recurrent": "one LSA layer applied twice (recurrent 2-layer)",
    "lsa-5": "5 separate LSA layers, Adam 5e-4, token clipping at 10, reference GD++",
    "softmax-2": "2 layers of 1-head softmax attention",
    "sine-lsa": "sine waves: embedding + MLP + one LSA layer (source 000, Fig. 4)",
    "sine-gd": "sine waves: embedding + MLP + the GD construction with a learnt eta (the control)",
    "copy-2": "interleaved tokens: softmax layer then linear layer, vs one GD step (source 000, Fig. 5)",
    "lstm-2": "2-layer LSTM (32 units) read out at the query token, Adam 3e-3, batch 256, vs one GD step "
              "(source 001)",
    "bilstm-2": "2-layer bidirectional LSTM (32 units per direction), vs one GD step (source 001)",
}


def _set(tree: dict[str, Any], dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    node = tree
    for k in keys[:-1]:
        nxt = node.setdefault(k, {})
        if not isinstance(nxt, dict):
            raise ConfigError(f"{dotted}: {k!r} is not a section")
        node = nxt
    node[keys[-1]] = value


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """['optim.lr=5e-4', 'seeds=[0,1]'] -> nested dict (values parsed as YAML scalars/lists)."""
    tree: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"override {item!r} is not key=value")
        try:
            value = yaml.safe_load(raw) if raw.strip() else None
        except yaml.YAMLError:
            raise ConfigError(f"override {item!r}: cannot parse the value") from None
        _set(tree, key.strip(), value)
    return tree


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in extra.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def validation_message(err: ValidationError, prefix: str = "invalid config") -> str:
    """One line naming each bad key and its value."""
    parts = []
    tags = {"model": MODEL_KINDS, "task": TASK_KINDS}
    for e in err.errors():
        keys = [str(x) for x in e["loc"]]
        if len(keys) > 1 and keys[1] in tags.get(keys[0], ()):
            keys.pop(1)  # the union member's tag is not a key of the config
        loc = ".".join(keys) or "config"
        inp = e.get("input")
        if e["type"] == "union_tag_invalid" and len(keys) == 1:
            kind = inp.get("kind") if isinstance(inp, dict) else inp
            parts.append(f"{loc}.kind={kind!r}: must be one of {', '.join(tags.get(keys[0], ()))}")
            continue
        shown = "" if isinstance(inp, dict) else f"={inp!r}"
        msg = e["msg"].removeprefix("Value error, ")  # pydantic's wording around a validator's own message
        parts.append(msg if loc == "config" else f"{loc}{shown}: {msg}")
    return f"{prefix}: " + "; ".join(parts)


def build_config(raw: dict[str, Any]) -> TrainConfig:
    try:
        return TrainConfig(**raw)
    except ValidationError as e:
        raise ConfigError(validation_message(e)) from None
    except TypeError as e:  # e.g. a section given as a scalar
        raise ConfigError(f"invalid config: {e}") from None


def load_config(source: str | Path, overrides: list[str] | None = None) -> TrainConfig:
    """A preset name or a YAML file, with `key=value` overrides applied on top."""
    source = str(source)
    if source in PRESETS:
        raw: Any = PRESETS[source]
    else:
        path = Path(source)
        if not path.is_file():
            raise ConfigError(f"{source}: no such config file or preset (presets: {', '.join(PRESETS)})")
        try:
            raw = yaml.safe_load(path.read_text())
        except yaml.YAMLError as e:
            line = getattr(getattr(e, "problem_mark", None), "line", None)
            where = f" (line {line + 1})" if line is not None else ""
            raise ConfigError(f"{source}: malformed YAML{where}") from None
        if raw is None:  # an empty file would silently train the defaults
            raise ConfigError(f"{source}: the file is empty: a config needs its keys (or start from a preset: "
                              f"{', '.join(PRESETS)})")
        if not isinstance(raw, dict):
            raise ConfigError(f"{source}: a config must be a mapping of keys to values, got {type(raw).__name__}")
    return build_config(_merge(raw, parse_overrides(overrides or [])))


def dump_config(config: TrainConfig) -> str:
    """The resolved config as YAML (every default written out)."""
    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False)


#: the first releases' model section, in its order: a config whose model section can be written this way
#: (new options at their defaults) keeps the fingerprint it had then, so that cached runs stay valid
_V1_MODEL = ("kind", "n_layers", "recurrent", "n_heads", "kernel", "d_key", "d_value", "normalize", "query_in_keys",
             "layer_norm", "mlp", "clip", "init_scale", "tokens", "kernels")
_V1_DEFAULTS = {"mlp_ratio": 4, "dampening": 1.0, "causal": False, "kernel_options": {}, "kernel_init": None,
                "learn_kernel_params": True}


def _v1_model(model: dict[str, Any]) -> dict[str, Any] | None:
    """The model section as the first releases wrote it, or None when it uses a newer option."""
    flat = {k: v for k, v in model.items() if k != "attention"} | model["attention"]
    layers = flat.pop("layers")
    if layers is not None and any(set(over) != {"kernel"} for over in layers):
        return None
    flat["kernels"] = None if layers is None else [over["kernel"] for over in layers]
    if any(flat.pop(k) != v for k, v in _V1_DEFAULTS.items()):
        return None
    out = {k: flat[k] for k in _V1_MODEL}
    if out["kind"] == "stack":
        del out["kind"]
    if out["kernels"] is None:
        del out["kernels"]
    return out


def config_fingerprint(config: TrainConfig, device: str | torch.device = "cpu") -> str:
    """A short hash of the resolved config and of the device type when it is not the CPU (what experiment
    caches are keyed by: a GPU run is not mixed with a CPU run)."""
    data = config.model_dump(mode="json")
    if not data["eval"]["keep_weights"]:  # added later: configs without it keep their fingerprints
        del data["eval"]["keep_weights"]
    if data.get("warm_start", 0) is None:  # added later, as keep_weights
        del data["warm_start"]
    if data["model"].get("kind", "stack") == "stack":
        v1 = _v1_model(data["model"])
        if v1 is not None:
            data["model"] = v1
    text = yaml.safe_dump(data, sort_keys=False)
    kind = torch.device(device).type
    if kind != "cpu":
        text += f"device: {kind}\n"
    return fingerprint(text)
