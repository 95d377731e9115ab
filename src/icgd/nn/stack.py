"""A stack of attention layers (+ optional LayerNorm and MLP), recurrent or not, with clipping and dampening.

One layer (block) maps tokens E (B, T, D) to

    E <- E + lambda * Attn(LN(E))          (LN only when layer_norm)
    E <- E + lambda * MLP(LN(E))           (only when mlp)
    E <- clip(E, -c, c)                    (only when clip is set)

lambda is the dampening factor (SPEC 1, A.6; 1 = none). A recurrent stack applies one block n_layers times.
`kernels` gives each layer its own attention kernel (e.g. softmax then linear, the copying study, SPEC 3).
"""

from __future__ import annotations

import math

import torch
from pydantic import BaseModel, ConfigDict, Field, model_validator
from torch import Tensor, nn

from icgd.nn.attention import Attention, AttentionConfig
from icgd.nn.kernels import KernelName


def check_layer_kernels(kernels: tuple[str, ...] | list[str] | None, n_layers: int, recurrent: bool) -> None:
    """Raise ValueError unless `kernels` is None or one kernel per layer of a non-recurrent stack."""
    if kernels is None:
        return
    if recurrent:
        raise ValueError("kernels: a recurrent stack has one block, so one kernel (attention.kernel)")
    if len(kernels) != n_layers:
        raise ValueError(f"kernels: {len(kernels)} given for n_layers={n_layers}")


class StackConfig(BaseModel):
    """A stack of identical-shaped blocks. `init_scale` sets the truncated-normal init of attention weights:
    std = sqrt(init_scale / d_model) (fan-in variance scaling), default init_scale = 0.002 / n_layers
    (the official code's choice, SPEC 1)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    attention: AttentionConfig
    n_layers: int = Field(1, ge=1)
    recurrent: bool = False
    layer_norm: bool = False
    mlp: bool = False
    mlp_ratio: int = Field(4, ge=1)
    clip: float | None = Field(None, gt=0, description="clip token values to [-clip, clip] after each layer")
    dampening: float = 1.0
    init_scale: float | None = Field(None, gt=0)
    kernels: tuple[KernelName, ...] | None = Field(
        None, description="kernel of each layer (overrides attention.kernel; not for recurrent stacks)")

    @model_validator(mode="after")
    def _kernels(self) -> "StackConfig":
        check_layer_kernels(self.kernels, self.n_layers, self.recurrent)
        return self

    def layer_attention(self, index: int) -> AttentionConfig:
        """The attention config of layer `index`."""
        if self.kernels is None or self.kernels[index] == self.attention.kernel:
            return self.attention
        return self.attention.model_copy(update={"kernel": self.kernels[index], "kernel_options": {}})

    @property
    def d_model(self) -> int:
        return self.attention.d_model

    @property
    def attention_init_std(self) -> float:
        scale = self.init_scale if self.init_scale is not None else 0.002 / self.n_layers
        return math.sqrt(scale / self.d_model)


class Block(nn.Module):
    """Attention (+ MLP) with residual connections; hook points `{name}.attn.*`, `{name}.resid_post`."""

    def __init__(self, config: StackConfig, dtype: torch.dtype = torch.float32,
                 device: torch.device | str | None = None, generator: torch.Generator | None = None,
                 index: int = 0) -> None:
        super().__init__()
        d, kw = config.d_model, dict(dtype=dtype, device=device)
        self.attn = Attention(config.layer_attention(index), init_std=config.attention_init_std,
                              generator=generator, **kw)
        self.ln1 = nn.LayerNorm(d, **kw) if config.layer_norm else None
        self.mlp = None
        if config.mlp:
            self.ln2 = nn.LayerNorm(d, **kw) if config.layer_norm else None
            self.mlp = nn.Sequential(nn.Linear(d, config.mlp_ratio * d, **kw), nn.GELU(),
                                     nn.Linear(config.mlp_ratio * d, d, **kw))
            with torch.no_grad():  # torch's default init, but from `generator`
                for lin in (self.mlp[0], self.mlp[2]):
                    bound = 1 / math.sqrt(lin.in_features)
                    lin.weight.uniform_(-bound, bound, generator=generator)
                    lin.bias.uniform_(-bound, bound, generator=generator)

    def forward(self, x: Tensor, n_context: int, dampening: float = 1.0, clip: float | None = None,
                cache: dict[str, Tensor] | None = None, name: str = "layers.0") -> Tensor:
        h = self.ln1(x) if self.ln1 is not None else x
        x = x + dampening * self.attn(h, n_context, cache, f"{name}.attn")
        if self.mlp is not None:
            h = self.ln2(x) if self.ln2 is not None else x
            x = x + dampening * self.mlp(h)
        if clip is not None:
            x = x.clamp(-clip, clip)
        if cache is not None:
            cache[f"{name}.resid_post"] = x
        return x


class Stack(nn.Module):
    """Tokens (B, T, D) -> tokens (B, T, D) through `n_layers` blocks (one shared block if recurrent).

    `dampening` and `n_layers` may be changed at inference (`stack.dampening = 0.7`,
    `stack.with_steps(50)` for a recurrent stack) to study repeated application.
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

    @property
    def queries_are_keys(self) -> bool:
        """True when query tokens attend to each other, so Q queries need Q separate sequences."""
        return self.config.attention.query_in_keys

    def forward(self, x: Tensor, n_context: int, cache: dict[str, Tensor] | None = None) -> Tensor:
        if cache is not None:
            cache["resid_pre"] = x
        for step in range(self.n_steps):
            block = self.layers[0 if self.config.recurrent else step]
            x = block(x, n_context, self.dampening, self.clip, cache, f"layers.{step}")
        return x

    def with_steps(self, n_steps: int) -> "Stack":
        """Set how many times a recurrent stack applies its block (returns self)."""
        if not self.config.recurrent and n_steps != self.config.n_layers:
            raise ValueError("only a recurrent stack can be applied a different number of times")
        self.n_steps = int(n_steps)
        return self
