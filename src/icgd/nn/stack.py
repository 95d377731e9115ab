"""A stack of attention layers (+ optional LayerNorm and MLP), recurrent or not, with clipping and dampening.

One layer (block) maps tokens E (B, T, D) to

    E <- E + lambda * Attn(LN(E))          (LN only when layer_norm)
    E <- E + lambda * MLP(LN(E))           (only when mlp)
    E <- clip(E, -c, c)                    (only when clip is set)

lambda is the dampening factor (source 000, A.6; 1 = none). A recurrent stack applies one block n_layers times.
`layers` gives each layer its own attention options (e.g. softmax then linear, source 000's copying study).
"""

from __future__ import annotations

import math
from typing import Any, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field, model_validator
from torch import Tensor, nn

from icgd.nn.attention import Attention, AttentionConfig, AttentionOptions
from icgd.nn.hooks import HookPoints

LayerOverrides = tuple[dict[str, Any], ...]


def _legacy_kernels(data: Any) -> Any:
    """Accept the shorthand `kernels: [softmax, linear]` for `layers: [{kernel: softmax}, {kernel: linear}]`."""
    if isinstance(data, dict) and data.get("kernels") is not None:
        if data.get("layers") is not None:
            raise ValueError("give per-layer attention as layers or as kernels, not both")
        data = {k: v for k, v in data.items() if k != "kernels"} | {
            "layers": [{"kernel": k} for k in data["kernels"]]}
    elif isinstance(data, dict) and "kernels" in data:
        data = {k: v for k, v in data.items() if k != "kernels"}
    return data


def check_layers(layers: LayerOverrides | None, attention: AttentionOptions, n_layers: int,
                 recurrent: bool) -> None:
    """Raise ValueError unless `layers` is None or one valid set of attention overrides per layer of a
    non-recurrent stack."""
    if layers is None:
        return
    if recurrent:
        raise ValueError("layers: a recurrent stack has one block, so one attention (attention)")
    if len(layers) != n_layers:
        raise ValueError(f"layers: {len(layers)} given for n_layers={n_layers}")
    for i, over in enumerate(layers):
        bad = sorted(set(over) - set(AttentionOptions.model_fields))
        if bad:
            raise ValueError(f"layers.{i}: {bad} are not attention options")
        AttentionOptions(**(attention.options().model_dump() if isinstance(attention, AttentionConfig)
                            else attention.model_dump()) | over)


class StackOptions(BaseModel):
    """Every option of a stack but its attention. `init_scale` sets the truncated-normal init of attention
    weights: std = sqrt(init_scale / d_model) (fan-in variance scaling), default init_scale = 0.002 / n_layers
    (the official code's choice for source 000). `layers` overrides attention options per layer (e.g.
    [{kernel: softmax}, {kernel: linear}]; `kernels: [softmax, linear]` is the short form)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    n_layers: int = Field(1, ge=1)
    recurrent: bool = False
    layer_norm: bool | Literal["between"] = Field(
        False, description="LayerNorm before each attention (and MLP); 'between': only before the attention of "
                           "layers 2.. (source 000, A.9: 'we skip the first LayerNorm')")
    mlp: bool = False
    mlp_ratio: int = Field(4, ge=1)
    clip: float | None = Field(None, gt=0, description="clip token values to [-clip, clip] after each layer")
    dampening: float = 1.0
    init_scale: float | None = Field(None, gt=0)
    layers: LayerOverrides | None = Field(
        None, description="attention options of each layer, over `attention` (not for recurrent stacks)")

    _kernels = model_validator(mode="before")(_legacy_kernels)

    @model_validator(mode="after")
    def _layers(self) -> "StackOptions":
        check_layers(self.layers, self.attention, self.n_layers, self.recurrent)  # type: ignore[attr-defined]
        if self.layer_norm == "between" and (self.recurrent or self.n_layers < 2):
            raise ValueError("layer_norm: 'between' needs 2 or more separate (not recurrent) layers")
        return self

    def has_ln1(self, index: int) -> bool:
        """Whether block `index` normalises the tokens before its attention."""
        return self.layer_norm is True or (self.layer_norm == "between" and index > 0)

    def stack_options(self) -> dict[str, Any]:
        """The fields of StackOptions, as keyword arguments."""
        return {k: getattr(self, k) for k in StackOptions.model_fields}


class StackConfig(StackOptions):
    """A stack of identical-shaped blocks: the stack options and the attention config (with its width)."""

    attention: AttentionConfig

    def layer_attention(self, index: int) -> AttentionConfig:
        """The attention config of layer `index`."""
        if self.layers is None or not self.layers[index]:
            return self.attention
        return AttentionConfig(**(self.attention.model_dump() | self.layers[index]))

    @property
    def uniform(self) -> bool:
        """True when every layer has the same attention options."""
        return self.layers is None or all(self.layer_attention(i) == self.attention for i in range(self.n_layers))

    @property
    def d_model(self) -> int:
        return self.attention.d_model

    @property
    def attention_init_std(self) -> float:
        scale = self.init_scale if self.init_scale is not None else 0.002 / self.n_layers
        return math.sqrt(scale / self.d_model)


class Block(nn.Module):
    """Attention (+ MLP) with residual connections; hook points `{name}.attn.*`, `{name}.resid_post`
    (`hooks`: the stack's registry)."""

    def __init__(self, config: StackConfig, dtype: torch.dtype = torch.float32,
                 device: torch.device | str | None = None, generator: torch.Generator | None = None,
                 index: int = 0) -> None:
        super().__init__()
        d, kw = config.d_model, dict(dtype=dtype, device=device)
        self.attn = Attention(config.layer_attention(index), init_std=config.attention_init_std,
                              generator=generator, **kw)
        self.ln1 = nn.LayerNorm(d, **kw) if config.has_ln1(index) else None
        self.mlp = None
        if config.mlp:
            self.ln2 = nn.LayerNorm(d, **kw) if config.layer_norm is True else None
            self.mlp = nn.Sequential(nn.Linear(d, config.mlp_ratio * d, **kw), nn.GELU(),
                                     nn.Linear(config.mlp_ratio * d, d, **kw))
            with torch.no_grad():  # torch's default init, but from `generator`
                for lin in (self.mlp[0], self.mlp[2]):
                    bound = 1 / math.sqrt(lin.in_features)
                    lin.weight.uniform_(-bound, bound, generator=generator)
                    lin.bias.uniform_(-bound, bound, generator=generator)

    def forward(self, x: Tensor, n_context: int, dampening: float = 1.0, clip: float | None = None,
                hooks: HookPoints | None = None, name: str = "layers.0") -> Tensor:
        h = self.ln1(x) if self.ln1 is not None else x
        x = x + dampening * self.attn(h, n_context, hooks, f"{name}.attn")
        if self.mlp is not None:
            h = self.ln2(x) if self.ln2 is not None else x
            x = x + dampening * self.mlp(h)
        if clip is not None:
            x = x.clamp(-clip, clip)
        return hooks(f"{name}.resid_post", x) if hooks else x


class Stack(nn.Module):
    """Tokens (B, T, D) -> tokens (B, T, D) through `n_layers` blocks (one shared block if recurrent).

    `dampening` and `n_layers` may be changed at inference (`stack.dampening = 0.7`,
    `stack.with_steps(50)` for a recurrent stack) to study repeated application.

    Hook points (`stack.hooks`, `icgd.nn.hooks`), per application step i (a recurrent stack's one block
    gives one name per step): `resid_pre`, `layers.{i}.attn.weights`, `layers.{i}.attn.out`,
    `layers.{i}.resid_post`.
    """

    def __init__(self, config: StackConfig, dtype: torch.dtype = torch.float32,
                 device: torch.device | str | None = None, generator: torch.Generator | None = None) -> None:
        """Weights are drawn from `generator` (torch's global generator when None)."""
        super().__init__()
        self.config = config
        n_blocks = 1 if config.recurrent else config.n_layers
        self.layers = nn.ModuleList([Block(config, dtype, device, generator, i) for i in range(n_blocks)])
        self.n_steps = config.n_layers
        self.dampening = config.dampening
        self.clip = config.clip
        self.hooks = HookPoints()

    @property
    def queries_are_keys(self) -> bool:
        """True when query tokens attend to each other, so Q queries need Q separate sequences."""
        return self.config.attention.query_in_keys

    def forward(self, x: Tensor, n_context: int, cache: dict[str, Tensor] | None = None) -> Tensor:
        """Tokens (B, T, D) -> (B, T, D). `cache` (a dict) reads every hook point into it, the attention
        weights included (a shortcut for `with stack.hooks.caching(cache): ...`)."""
        if cache is not None:
            with self.hooks.caching(cache):
                return self.forward(x, n_context)
        hooks = self.hooks if self.hooks else None
        if hooks:
            x = hooks("resid_pre", x)
        for step in range(self.n_steps):
            block = self.layers[0 if self.config.recurrent else step]
            x = block(x, n_context, self.dampening, self.clip, hooks, f"layers.{step}")
        return x

    def with_steps(self, n_steps: int) -> "Stack":
        """Set how many times a recurrent stack applies its block (returns self)."""
        if not self.config.recurrent and n_steps != self.config.n_layers:
            raise ValueError("only a recurrent stack can be applied a different number of times")
        self.n_steps = int(n_steps)
        return self
