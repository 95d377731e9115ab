"""Validated, declarative training configs (YAML or Python), presets, and `key=value` overrides."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Union

import torch
import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from icgd.core.io import fingerprint
from icgd.core.seeds import TRAIN_SEEDS, check_seeds
from icgd.nn.attention import AttentionOptions
from icgd.nn.kernels import KernelName
from icgd.nn.stack import StackConfig, StackOptions
from icgd.tasks import TASKS, LinearRegression

#: the dtype names a config may give
DTYPES = {"float32": torch.float32, "float64": torch.float64}


class ConfigError(ValueError):
    """A bad config: the message is one line naming the key and the value."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


#: attention options a model section may also give at its top level (the first releases' flat form)
_FLAT_ATTENTION_KEYS = ("n_heads", "kernel", "d_key", "d_value", "normalize", "query_in_keys", "causal",
                        "kernel_options", "kernel_init", "learn_kernel_params")


class ModelConfig(StackOptions):
    """A transformer learner (a `Stack`) on concatenated or interleaved tokens: the stack options, its
    `attention` section (every option of `AttentionOptions`) and the token construction. d_model comes from
    the task (Dx + Dy, or Dx + Dy + 2N + 1 for interleaved tokens). Attention keys given at the top level
    of the section (`model.kernel: softmax`) are read as `model.attention.kernel`."""

    kind: Literal["stack"] = "stack"
    attention: AttentionOptions = AttentionOptions()
    tokens: Literal["concat", "interleaved"] = "concat"

    @model_validator(mode="before")
    @classmethod
    def _flat_attention(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not any(k in data for k in _FLAT_ATTENTION_KEYS):
            return data
        flat = {k: data[k] for k in _FLAT_ATTENTION_KEYS if k in data}
        attn = data.get("attention", {})
        attn = attn.model_dump(exclude_unset=True) if isinstance(attn, BaseModel) else dict(attn or {})
        both = sorted(set(flat) & set(attn))
        if both:
            raise ValueError(f"{both} given both in model and in model.attention")
        return {k: v for k, v in data.items() if k not in flat} | {"attention": attn | flat}

    @property
    def gd_steps(self) -> int:
        """GD steps of the default reference: one per layer."""
        return self.n_layers

    def stack_config(self, d_model: int) -> StackConfig:
        return StackConfig(attention=self.attention.with_width(d_model), **self.stack_options())


class FeatureLSAConfig(_Strict):
    """Embedding (no bias) + residual MLP (GELU) + one LSA layer, or, with gd_control, the GD construction
    on the MLP features with a learnt eta (SPEC 2; `icgd.learners.deep.FeatureLSA`)."""

    kind: Literal["mlp_lsa"]
    d_embed: int = Field(40, ge=2)
    mlp_ratio: int = Field(4, ge=1)
    gd_control: bool = False
    eta_init: float = Field(0.1, description="initial eta of the GD control")
    init_scale: float | None = Field(None, gt=0, description="attention init std = sqrt(init_scale / d_embed); "
                                                             "default 0.002")
    mlp_init_scale: float | None = Field(
        None, gt=0, description="embedding and MLP init: null = torch's default uniform; s = truncated normal with "
                                "std sqrt(s / fan_in) and zero biases (the official code's VarianceScaling(s))")
    learn_eta: bool = Field(True, description="the GD control learns its eta (false: eta stays at eta_init)")

    @property
    def n_layers(self) -> int:
        return 1

    @property
    def gd_steps(self) -> int:
        return 1


class LSTMConfig(_Strict):
    """An LSTM or bidirectional LSTM over the concatenated tokens, read out linearly at the query token
    (SPEC 4; `icgd.learners.recurrent.LSTMLearner`). It is compared with one GD step by default."""

    kind: Literal["lstm"]
    hidden: int = Field(32, ge=1, description="units per direction and layer")
    n_layers: int = Field(1, ge=1)
    bidirectional: bool = False

    @property
    def gd_steps(self) -> int:
        return 1


class KernelGDConfig(_Strict):
    """The source's "GD" model (SPEC 5; `icgd.learners.KernelGD`): kernel functional GD whose only learnt
    weights are the learning rates (one per layer and output entry) and the kernel's parameters. The rates
    are divided by the task's N (`task.n_context`, fixed at training) except for a normalised kernel."""

    kind: Literal["kernel_gd"]
    kernel: KernelName = "softmax"
    n_layers: int = Field(1, ge=1)
    constant_head: Literal["none", "tied", "free"] = Field(
        "none", description="none: kernel head only; tied: a constant head with the kernel head's rates (eq. 1); "
                            "free: its own rates")
    eta_init: float = Field(1.0, description="initial learning rate of every layer and entry")
    kernel_init: tuple[float, ...] | None = Field(None, description="initial kernel parameters (default the kernel's)")
    kernel_options: dict[str, float] = Field(default_factory=dict)
    learn_kernel_params: bool = True

    @model_validator(mode="after")
    def _kernel(self) -> "KernelGDConfig":
        AttentionOptions(kernel=self.kernel, kernel_options=self.kernel_options, kernel_init=self.kernel_init)
        return self

    @property
    def gd_steps(self) -> int:
        return self.n_layers


class CausalLMConfig(_Strict):
    """A small decoder-only LM for a text task (`icgd.learners.causal_lm.CausalLM`): byte embedding, sinusoidal
    positions, pre-norm blocks of causal softmax attention + MLP, tied output. `attention` takes the
    attention options that apply (e.g. {momentum: 0.5} for momentum attention, source 003 sec. 4)."""

    kind: Literal["causal_lm"]
    d_model: int = Field(64, ge=2)
    n_layers: int = Field(2, ge=1)
    n_heads: int = Field(2, ge=1)
    mlp_ratio: int = Field(4, ge=1)
    init_std: float = Field(0.02, gt=0, description="std of the attention weights at initialisation")
    attention: AttentionOptions = AttentionOptions(causal=True)

    @model_validator(mode="before")
    @classmethod
    def _causal(cls, data: Any) -> Any:
        """The attention of a causal LM is causal: `attention: {momentum: 0.5}` needs no `causal: true`."""
        if isinstance(data, dict) and isinstance(data.get("attention"), dict):
            data = data | {"attention": {"causal": True} | data["attention"]}
        return data

    @model_validator(mode="after")
    def _width(self) -> "CausalLMConfig":
        if self.d_model % self.n_heads or self.d_model % 2:
            raise ValueError(f"d_model={self.d_model} must be even and a multiple of n_heads={self.n_heads}")
        return self

    @property
    def gd_steps(self) -> int:
        return 1


#: the kinds a config section may name (`model.kind`, `task.kind`); the first is the default
MODEL_KINDS: dict[str, type[BaseModel]] = {"stack": ModelConfig, "mlp_lsa": FeatureLSAConfig, "lstm": LSTMConfig,
                                           "kernel_gd": KernelGDConfig, "causal_lm": CausalLMConfig}
TASK_KINDS: dict[str, type[BaseModel]] = TASKS


def _tagged_union(kinds: dict[str, type[BaseModel]]) -> Any:
    """A pydantic union of `kinds` chosen by the `kind` key, which defaults to the first kind."""
    default = next(iter(kinds))

    def kind_of(v: Any) -> str:
        return v.get("kind", default) if isinstance(v, dict) else getattr(v, "kind", default)

    return Annotated[Union[tuple(Annotated[c, Tag(k)] for k, c in kinds.items())], Discriminator(kind_of)]


AnyModelConfig = _tagged_union(MODEL_KINDS)
AnyTask = _tagged_union(TASK_KINDS)


class OptimConfig(_Strict):
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


class EvalConfig(_Strict):
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


class TrainConfig(_Strict):
    """Everything a training run needs; `icgd train` writes it back, resolved, into the run directory."""

    name: str = "run"
    task: AnyTask = LinearRegression()
    model: AnyModelConfig = ModelConfig()
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

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, v: list[int]) -> list[int]:
        return check_seeds(v)

    @model_validator(mode="after")
    def _consistent(self) -> "TrainConfig":
        if self.train_set_size is not None and self.train_set_size < self.batch_size:
            raise ValueError(f"train_set_size={self.train_set_size} is smaller than batch_size={self.batch_size}")
        kinds = getattr(self.task, "reference_kinds", ())
        if self.eval.reference not in kinds:
            raise ValueError(f"eval.reference={self.eval.reference!r} does not apply to task kind "
                             f"{self.task.kind!r} (it has: {', '.join(kinds)})")
        return self

    @property
    def d_model(self) -> int:
        """Token width of a stack model."""
        d = self.task.dx + self.task.dy
        if isinstance(self.model, ModelConfig) and self.model.tokens == "interleaved":
            d += 2 * self.task.n_context + 1
        return d

    def stack_config(self) -> StackConfig:
        if not isinstance(self.model, ModelConfig):
            raise TypeError(f"model kind {self.model.kind!r} is not an attention stack")
        return self.model.stack_config(self.d_model)


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
    "lsa-1": "1-layer linear self-attention (SPEC 1 defaults: Adam 1e-3, batch 2048, fresh tasks)",
    "lsa-2-recurrent": "one LSA layer applied twice (recurrent 2-layer)",
    "lsa-5": "5 separate LSA layers, Adam 5e-4, token clipping at 10, reference GD++",
    "softmax-2": "2 layers of 1-head softmax attention",
    "sine-lsa": "sine waves: embedding + MLP + one LSA layer (SPEC 2)",
    "sine-gd": "sine waves: embedding + MLP + the GD construction with a learnt eta (the control)",
    "copy-2": "interleaved tokens: softmax layer then linear layer, vs one GD step (SPEC 3)",
    "lstm-2": "2-layer LSTM (32 units) read out at the query token, Adam 3e-3, batch 256, vs one GD step (SPEC 4)",
    "bilstm-2": "2-layer bidirectional LSTM (32 units per direction), vs one GD step (SPEC 4)",
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
        parts.append(f"{loc}{shown}: {e['msg']}")
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
            raw = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as e:
            line = getattr(getattr(e, "problem_mark", None), "line", None)
            where = f" (line {line + 1})" if line is not None else ""
            raise ConfigError(f"{source}: malformed YAML{where}") from None
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
    if data["model"].get("kind", "stack") == "stack":
        v1 = _v1_model(data["model"])
        if v1 is not None:
            data["model"] = v1
    text = yaml.safe_dump(data, sort_keys=False)
    kind = torch.device(device).type
    if kind != "cpu":
        text += f"device: {kind}\n"
    return fingerprint(text)
