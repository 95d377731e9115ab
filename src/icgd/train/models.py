"""The built-in model kinds: each config section beside the network it describes, registered once.

Every kind (`icgd.train.kinds.ModelKind`) builds an nn.Module whose state_dict holds the weights the engine
stacks over seeds:
- "stack": a `Stack` (weights named as in `Stack.state_dict()`), read through concatenated or interleaved
  tokens by a `TransformerLearner`; the only kind the fused and compiled backends compute;
- "mlp_lsa": a `FeatureLSA` (embedding + MLP + LSA, or the GD control), itself a learner;
- "lstm": an `LSTMLearner` (LSTM or BiLSTM read out at the query token), itself a learner;
- "kernel_gd": a `KernelGD` (kernel functional GD with learnt rates and kernel parameters), a learner;
- "causal_lm": a `CausalLM` (a small byte-level decoder) for text tasks, a learner;
- "decoder": a `RegressionDecoder` (a GPT-style regression transformer on interleaved x and y tokens), a
  learner.

A task with a constant prior p_0 (categorical) starts a stack's predictions there: tokens [x; y - p_0].
The functions at the end (`build_module`, `as_learner`, `param_prefix`, `init_params`, ...) work for any
registered kind through the registry.
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from pydantic import BaseModel, Field, model_validator
from torch import Tensor, nn

from icgd.core.episodes import make_generator
from icgd.learners.deep import FeatureLSA
from icgd.learners.kernel_gd import KernelGD
from icgd.learners.recurrent import LSTMLearner
from icgd.learners.tokens import TOKEN_LAYOUTS, ConcatTokens
from icgd.learners.transformer import TransformerLearner
from icgd.nn.attention import AttentionOptions
from icgd.nn.kernels import KernelName
from icgd.nn.stack import Stack, StackConfig, StackOptions
from icgd.train.kinds import ModelKind, ModelSection, model_kind, register_model_kind

#: the type of the `config` arguments below: an `icgd.train.config.TrainConfig` (config.py imports this
#: module to register the kinds, so this module does not import it back)
TrainConfigLike = Any

#: the dtype names a config may give
DTYPES = {"float32": torch.float32, "float64": torch.float64}

#: attention options a model section may also give at its top level (the first releases' flat form)
_FLAT_ATTENTION_KEYS = ("n_heads", "kernel", "d_key", "d_value", "normalize", "query_in_keys", "causal",
                        "kernel_options", "kernel_init", "learn_kernel_params")


class ModelConfig(StackOptions, ModelSection):
    """A transformer learner (a `Stack`) on concatenated or interleaved tokens: the stack options, its
    `attention` section (every option of `AttentionOptions`) and the token construction. d_model comes from
    the task (Dx + Dy, or Dx + Dy + 2N + 1 for interleaved tokens). Attention keys given at the top level
    of the section (`model.kernel: softmax`) are read as `model.attention.kernel`."""

    kind: Literal["stack"] = "stack"
    attention: AttentionOptions = AttentionOptions()
    tokens: Literal["concat", "interleaved", "interleaved_code"] = "concat"

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

    def width(self, task: Any) -> int:
        """Token width: Dx + Dy, Dx + Dy + 2N + 1 for interleaved tokens (positions one-hot), Dx + 10 for the
        code's interleaved tokens (`icgd.learners.tokens.TOKEN_LAYOUTS`)."""
        return TOKEN_LAYOUTS[self.tokens]().width(task.dx, task.dy, task.n_context)

    def stack_config(self, d_model: int) -> StackConfig:
        return StackConfig(attention=self.attention.with_width(d_model), **self.stack_options())


def _build_stack(config: TrainConfigLike, dtype: torch.dtype, device: Any, generator: torch.Generator | None) -> nn.Module:
    return Stack(config.stack_config(), dtype=dtype, device=device, generator=generator)


def _stack_learner(config: TrainConfigLike, module: nn.Module, name: str) -> Any:
    layout = TOKEN_LAYOUTS[config.model.tokens]
    tokens = layout(prior=config.task.prior) if layout is ConcatTokens else layout()
    return TransformerLearner(module, tokens, name=name)


register_model_kind(ModelKind(
    "stack", ModelConfig, _build_stack, _stack_learner, prefix="model.", backends=("compiled", "fused", "generic"),
    tasks=("linear", "sine", "categorical", "fewshot"), graph_capturable=True,
    example={"task": {"kind": "linear", "dx": 3, "n_context": 6}, "model": {"kind": "stack", "n_layers": 1}},
    doc="attention layers (any kernel, heads, MLP, LayerNorm) on concatenated or interleaved tokens"))


class FeatureLSAConfig(ModelSection):
    """Embedding (no bias) + residual MLP (GELU) + one LSA layer, or, with gd_control, the GD construction
    on the MLP features with a learnt eta (source 000, Fig. 4; `icgd.learners.deep.FeatureLSA`)."""

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



def _build_feature_lsa(config: TrainConfigLike, dtype: torch.dtype, device: Any,
                       generator: torch.Generator | None) -> nn.Module:
    m = config.model
    std = None if m.init_scale is None else (m.init_scale / m.d_embed) ** 0.5
    return FeatureLSA(config.task.dx, config.task.dy, m.d_embed, m.mlp_ratio, m.gd_control, m.eta_init, std,
                      dtype=dtype, device=device, generator=generator, mlp_init_scale=m.mlp_init_scale,
                      learn_eta=m.learn_eta)


register_model_kind(ModelKind(
    "mlp_lsa", FeatureLSAConfig, _build_feature_lsa, tasks=("linear", "sine"), graph_capturable=True,
    example={"task": {"kind": "sine", "n_context": 6}, "model": {"kind": "mlp_lsa", "d_embed": 8},
             "eval": {"reference": "zero"}},
    doc="embedding + MLP + one LSA layer on its features, or the GD control (source 000, Fig. 4)"))


class LSTMConfig(ModelSection):
    """An LSTM or bidirectional LSTM over the concatenated tokens, read out linearly at the query token
    (source 001; `icgd.learners.recurrent.LSTMLearner`). It is compared with one GD step by default."""

    kind: Literal["lstm"]
    hidden: int = Field(32, ge=1, description="units per direction and layer")
    n_layers: int = Field(1, ge=1)
    bidirectional: bool = False



def _build_lstm(config: TrainConfigLike, dtype: torch.dtype, device: Any, generator: torch.Generator | None) -> nn.Module:
    m = config.model
    return LSTMLearner(config.task.dx, config.task.dy, m.hidden, m.n_layers, m.bidirectional, dtype=dtype,
                       device=device, generator=generator)


register_model_kind(ModelKind(
    "lstm", LSTMConfig, _build_lstm, tasks=("linear", "sine"), graph_capturable=True,
    example={"task": {"kind": "linear", "dx": 3, "n_context": 6}, "model": {"kind": "lstm", "hidden": 8}},
    doc="an LSTM or BiLSTM read out at the query token (source 001)"))


class KernelGDConfig(ModelSection):
    """The source's "GD" model (source 002; `icgd.learners.KernelGD`): kernel functional GD whose only learnt
    weights are the learning rates (one per layer and output entry) and the kernel's parameters. The rates
    are divided by the task's N (`task.n_context`, fixed at training) except for a normalised kernel."""

    kind: Literal["kernel_gd"]
    kernel: KernelName = "softmax"
    n_layers: int = Field(1, ge=1)
    constant_head: Literal["none", "tied", "free"] = Field(
        "none", description="none: kernel head only; tied: a constant head with the kernel head's rates (eq. 1); "
                            "free: its own rates")
    eta_init: float = Field(1.0, description="initial learning rate of every layer and entry")
    eta_init_std: float = Field(0.0, ge=0, description="plus this times N(0, 1), drawn per layer and entry from the "
                                "seed's generator (the authors' later code: 0.002 / L around 0)")
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


def _build_kernel_gd(config: TrainConfigLike, dtype: torch.dtype, device: Any,
                     generator: torch.Generator | None) -> nn.Module:
    m = config.model
    biases = {"none": None, "tied": "tied", "free": m.eta_init}[m.constant_head]
    etas: Any = m.eta_init
    if m.eta_init_std > 0:
        dy = config.task.dy
        etas = m.eta_init + m.eta_init_std * torch.randn(m.n_layers, dy, generator=generator, dtype=torch.float64)
    return KernelGD(m.kernel, etas, m.n_layers, config.task.dy, biases=biases, kernel_params=m.kernel_init,
                    kernel_options=m.kernel_options, prior=config.task.prior or 0.0,
                    n_scale=config.task.n_context, learn_kernel_params=m.learn_kernel_params, dtype=dtype,
                    device=device, name="kernel_gd")


register_model_kind(ModelKind(
    "kernel_gd", KernelGDConfig, _build_kernel_gd, tasks=("categorical", "fewshot"),
    example={"task": {"kind": "categorical", "n_context": 8}, "model": {"kind": "kernel_gd", "kernel": "rbf"},
             "eval": {"reference": "zero"}},
    doc="kernel functional GD with learnt rates and kernel parameters (source 002's GD model)"))


def _check_heads(d_model: int, n_heads: int) -> None:
    """ValueError unless d_model is even (sine/cosine or learnt positions) and a multiple of n_heads."""
    if d_model % n_heads or d_model % 2:
        raise ValueError(f"d_model={d_model} must be even and a multiple of n_heads={n_heads}")


class CausalLMConfig(ModelSection):
    """A small decoder-only LM for a text task (`icgd.learners.causal_lm.CausalLM`): byte embedding, sinusoidal
    positions, pre-norm blocks of causal softmax attention + MLP, tied output. `attention` takes the
    attention options that apply (e.g. {momentum: 0.5} for momentum attention, source 003 sec. 4)."""

    kind: Literal["causal_lm"]
    d_model: int = Field(64, ge=2)
    n_layers: int = Field(2, ge=1)
    n_heads: int = Field(2, ge=1)
    mlp_ratio: int = Field(4, ge=1)
    init_std: float | None = Field(None, gt=0, description="std of the attention weights at initialisation "
                                   "(null: 1 / sqrt(2 d_model), the source's fairseq models')")
    max_len: int | None = Field(None, ge=2, description="the longest sequence the model reads (null: any); "
                                                        "training windows must fit")
    embed_scale: float | None = Field(None, gt=0, description="the token embeddings' factor before the positions "
                                      "are added (null: sqrt(d_model), the source's fairseq models'; 1: unscaled)")
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
        _check_heads(self.d_model, self.n_heads)
        return self

    def check_task(self, task: Any) -> None:
        """ValueError where the task's sequences are longer than the model reads."""
        t_len = getattr(task, "seq_len", 0)
        if self.max_len is not None and t_len > self.max_len:
            raise ValueError(f"task sequences of {t_len} tokens are longer than model.max_len={self.max_len}")



def _build_causal_lm(config: TrainConfigLike, dtype: torch.dtype, device: Any,
                     generator: torch.Generator | None) -> nn.Module:
    from icgd.learners.causal_lm import CausalLM, lm_stack_config

    m = config.model
    return CausalLM(config.task.vocab, lm_stack_config(m.d_model, m.n_layers, m.n_heads, m.mlp_ratio, m.attention,
                                                       m.init_std), dtype=dtype, device=device, generator=generator,
                    max_len=m.max_len, embed_scale=m.embed_scale)


register_model_kind(ModelKind(
    "causal_lm", CausalLMConfig, _build_causal_lm, tasks=("text", "recall", "bursty"), graph_capturable=True,
    example={"task": {"kind": "text", "corpus": ["bbc-news"], "seq_len": 32},
             "model": {"kind": "causal_lm", "d_model": 16, "n_heads": 2, "n_layers": 1},
             "eval": {"reference": "unigram"}},
    doc="a small byte-level decoder-only LM, optionally with momentum attention (source 003, sec. 4)"))


class DecoderConfig(ModelSection):
    """A GPT-style in-context regression transformer (`icgd.learners.decoder.RegressionDecoder`; Garg et al.
    2022, Akyuerek et al. 2023): x and y tokens interleaved, learnt read-in and positions, pre-norm blocks of
    causal softmax attention + MLP, learnt read-out at the query; wide enough to probe its hidden states."""

    kind: Literal["decoder"]
    d_model: int = Field(64, ge=2)
    n_layers: int = Field(2, ge=1)
    n_heads: int = Field(4, ge=1)
    mlp_ratio: int = Field(4, ge=1)
    init_std: float | None = Field(None, gt=0, description="std of the attention weights at initialisation "
                                   "(null: 1 / sqrt(2 d_model), as the causal LMs')")

    @model_validator(mode="after")
    def _width(self) -> "DecoderConfig":
        _check_heads(self.d_model, self.n_heads)
        return self

    @property
    def gd_steps(self) -> int:
        """Steps of the GD reference a run is scored against by default: one per layer."""
        return self.n_layers


def _build_decoder(config: TrainConfigLike, dtype: torch.dtype, device: Any,
                   generator: torch.Generator | None) -> nn.Module:
    from icgd.learners.causal_lm import lm_stack_config
    from icgd.learners.decoder import RegressionDecoder

    m, t = config.model, config.task
    stack = lm_stack_config(m.d_model, m.n_layers, m.n_heads, m.mlp_ratio, AttentionOptions(causal=True), m.init_std)
    return RegressionDecoder(t.dx, t.dy, stack, 2 * t.n_context + 1, dtype=dtype, device=device, generator=generator)


register_model_kind(ModelKind(
    "decoder", DecoderConfig, _build_decoder, tasks=("linear", "gaussian"), graph_capturable=True,
    example={"task": {"kind": "gaussian", "dx": 3, "n_context": 6},
             "model": {"kind": "decoder", "d_model": 16, "n_heads": 2, "n_layers": 2}},
    doc="a GPT-style regression transformer on interleaved x and y tokens (Akyuerek et al. 2023's model family)"))


# ------------------------------------------------------------------------------ any registered kind
def build_module(config: TrainConfigLike, dtype: torch.dtype = torch.float32, device: torch.device | str | None = None,
                 generator: torch.Generator | None = None) -> nn.Module:
    """The module whose state_dict is one seed's weights (initialised from `generator`)."""
    return model_kind(config.model).build(config, dtype, device, generator)


def as_learner(config: TrainConfigLike, module: nn.Module, name: str = "transformer") -> Any:
    """The learner (Episodes -> predictions (B, Q, Dy)) around `module`."""
    adapt = model_kind(config.model).learner
    if adapt is not None:
        return adapt(config, module, name)
    module.name = name
    return module


def param_prefix(config: TrainConfigLike) -> str:
    """Prefix of the weights' names inside the learner (for torch.func.functional_call)."""
    return model_kind(config.model).prefix


# ------------------------------------------------------------------------------- seed-stacked weights
def init_params(config: TrainConfigLike, device: torch.device | str = "cpu") -> dict[str, Tensor]:
    """Stacked initial weights {name: (S, ...)}: seed s initialises its model from make_generator(s)."""
    dtype = DTYPES[config.dtype]
    states = [build_module(config, dtype=dtype, generator=make_generator(s)).state_dict() for s in config.seeds]
    return {k: torch.stack([st[k] for st in states]).to(device) for k in states[0]}


def trainable_names(config: TrainConfigLike) -> list[str]:
    template = build_module(config, device="meta")
    return [k for k, p in template.named_parameters() if p.requires_grad]


def seed_learner(config: TrainConfigLike, params: dict[str, Tensor], index: int) -> Any:
    """The trained model of seed number `index` (position in config.seeds) as a learner."""
    first = next(iter(params.values()))
    module = build_module(config, dtype=first.dtype, device=first.device)
    module.load_state_dict({k: v[index] for k, v in params.items()})
    return as_learner(config, module, name=f"trained_seed{config.seeds[index]}")
