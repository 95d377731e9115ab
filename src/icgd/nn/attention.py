"""One attention module with a pluggable similarity kernel (sources 000, 002, 003).

For tokens E (B, T, D) and heads h, the update of token j is

    sum_h  P_h  sum_{i in keys(j)}  w_h(i, j)  W_V,h e_i,      w_h(i, j) = kappa(W_K,h e_i, W_Q,h e_j)

(normalised over i for a softmax-like kernel, divided by the number of keys when normalize="count").
With the linear kernel and one head this is LSA: `P W_V E (W_K E)^T W_Q E`.
keys(j): the first `n_context` tokens, plus the query tokens themselves when `query_in_keys`
(then every token attends to every token of the sequence), restricted to i <= j when `causal`.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from pydantic import BaseModel, ConfigDict, Field, model_validator
from torch import Tensor, nn

from icgd.core.episodes import ShapeError
from icgd.nn.hooks import HookPoints
from icgd.nn.kernels import KernelName, get_kernel


class AttentionOptions(BaseModel):
    """Every option of an attention module but its width (a model config's `attention` section).

    kernel_options: fixed numbers the kernel reads (e.g. {"degree": 3} for polynomial);
    kernel_init: initial values of the kernel's parameters (e.g. [0.5] for an RBF bandwidth s; default the
    kernel's own), learnt unless learn_kernel_params is false (then fixed at these values).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    n_heads: int = Field(1, ge=1)
    d_key: int | None = Field(None, ge=1, description="key/query width per head (default d_model)")
    d_value: int | None = Field(None, ge=1, description="value width per head (default d_model)")
    kernel: KernelName = "linear"
    kernel_options: dict[str, float] = Field(default_factory=dict)
    kernel_init: tuple[float, ...] | None = Field(None, description="initial kernel parameters (default the "
                                                                    "kernel's)")
    learn_kernel_params: bool = True
    normalize: Literal["none", "count"] = "none"
    query_in_keys: bool = False
    causal: bool = False
    momentum: float | None = Field(None, gt=0, lt=1, description="beta of momentum attention (source 003, sec. "
                                   "4): each token's head output gains sum_{i<t} beta^(t-i) v_i; needs causal")
    learn_momentum: bool = Field(False, description="learn beta (one per head, kept in (0, 1) by a sigmoid) "
                                                    "from the momentum value; default fixed")

    @model_validator(mode="after")
    def _kernel_settings(self) -> "AttentionOptions":
        k = get_kernel(self.kernel)
        unknown = sorted(set(self.kernel_options) - set(k.options))
        if unknown:
            allowed = ", ".join(k.options) if k.options else "none"
            raise ValueError(f"kernel_options {unknown} are not options of the {k.name} kernel (it has: {allowed})")
        degree = self.kernel_options.get("degree")
        if degree is not None and (degree != int(degree) or degree < 1):
            raise ValueError(f"kernel_options.degree must be a positive integer, got {degree}")
        if self.momentum is not None and not self.causal:
            raise ValueError("momentum attention averages the values of earlier tokens: it needs causal: true")
        if self.learn_momentum and self.momentum is None:
            raise ValueError("learn_momentum needs an initial momentum (e.g. momentum: 0.5)")
        if self.kernel_init is not None and len(self.kernel_init) != k.n_params:
            names = ", ".join(k.param_names) if k.param_names else "none"
            raise ValueError(f"kernel_init: the {k.name} kernel has {k.n_params} parameter(s) ({names}), "
                             f"got {len(self.kernel_init)} value(s)")
        return self

    def with_width(self, d_model: int) -> "AttentionConfig":
        """The full config of a module of width d_model with these options."""
        return AttentionConfig(d_model=d_model, **self.model_dump())


class AttentionConfig(AttentionOptions):
    """Options of one attention module, with its width (all heads' weights live in one tensor per projection)."""

    d_model: int = Field(ge=1)

    def options(self) -> AttentionOptions:
        """These options without the width."""
        return AttentionOptions(**self.model_dump(exclude={"d_model"}))

    @property
    def dk(self) -> int:
        return self.d_key or self.d_model

    @property
    def dv(self) -> int:
        return self.d_value or self.d_model


def attention_products(w_q: Tensor, w_k: Tensor, w_v: Tensor, w_o: Tensor) -> tuple[Tensor, Tensor]:
    """Each head's weights multiplied out: M = W_K^T W_Q (..., H, D, D) and U = P W_V (..., H, D, D),
    for weights (..., H, dk|dv|D, D|dv) with any leading dimensions (e.g. seeds). For linear attention
    a head's update of token e_j is U C M e_j with C the sum of the key tokens' outer products."""
    return w_k.transpose(-1, -2) @ w_q, w_o @ w_v


def past_ema(v: Tensor, beta: Tensor | float, chunk: int = 64) -> Tensor:
    """m_t = sum_{i<t} beta^(t-i) v_i for values v (..., T, d) -> (..., T, d); beta a float or a tensor of
    shape (..., 1, 1) broadcasting against v (e.g. one per head: (H, 1, 1) for v (B, H, T, d)).

    O(T * chunk): within a chunk of C tokens the sum is one product with the (C, C) decay matrix, and the
    state carries across chunks: m_{s+t} = beta^t m_s + (in-chunk sum), m_{s+C} = beta^C m_s +
    sum_{t<C} beta^(C-t) v_{s+t}. No negative power of beta appears, so it is stable for any T (a closed
    form through beta^-i overflows), and it is differentiable in beta."""
    t_len = v.shape[-2]
    b = torch.as_tensor(beta, dtype=v.dtype, device=v.device)
    lead = b.reshape(b.shape[:-2]) if b.dim() >= 2 else b  # beta without the (1, 1) tail: (...,) or ()
    bb = lead[..., None, None]
    c = min(chunk, t_len)
    idx = torch.arange(c, device=v.device)
    lag = (idx[:, None] - idx[None, :]).to(v.dtype)  # t - i
    decay = torch.where(lag > 0, bb ** lag.clamp_min(0), torch.zeros((), dtype=v.dtype, device=v.device))
    ahead = bb ** idx.to(v.dtype)[:, None]       # beta^t, (..., C, 1)
    tail = bb ** (c - idx).to(v.dtype)[:, None]  # beta^(C-t), (..., C, 1)
    out, state = [], None
    for s in range(0, t_len, c):
        blk = v[..., s:s + c, :]
        n = blk.shape[-2]
        m = decay[..., :n, :n] @ blk
        if state is not None:
            m = m + ahead[..., :n, :] * state[..., None, :]
        out.append(m)
        if s + c < t_len:  # m at the next chunk's start (this chunk is whole: n == c)
            nxt = (tail * blk).sum(-2)
            state = nxt if state is None else lead[..., None] ** c * state + nxt
    return torch.cat(out, dim=-2)


def associative_cheaper(t_len: int, n_keys: int, dk: int, dv: int) -> bool:
    """Whether a bilinear kernel's update is cheaper as (V^T K) Q, (n_keys + T) dk dv multiplications per head
    and task, than as (Q K^T) V, T n_keys (dk + dv). The first wins for narrow heads over long contexts, the
    second for wide heads over few tokens: the sine study's 40-wide embedding over 11 tokens is 4x fewer
    multiplications directly (its training step 277 -> 231 ms, 5 seeds, batch 2048, 2 cores, min of 3 x 3
    steps; benchmarks/mlp_speed.py times it)."""
    return (n_keys + t_len) * dk * dv < t_len * n_keys * (dk + dv)


class Attention(nn.Module):
    """Multi-head attention with kernel `config.kernel`; returns the update (no residual).

    Parameters: w_q, w_k (H, dk, D); w_v (H, dv, D); w_o (H, D, dv) (the projection P);
    kernel_params (H, n_params) when the kernel has parameters.
    Hook points (`icgd.nn.hooks`): `{name}.weights` (B, H, T, Tk), computed only when a hook asks for it,
    and `{name}.out` (B, T, D).
    """

    def __init__(self, config: AttentionConfig, init_std: float = 0.02,
                 dtype: torch.dtype = torch.float32, device: torch.device | str | None = None,
                 generator: torch.Generator | None = None) -> None:
        super().__init__()
        self.config = config
        self.kernel = get_kernel(config.kernel)
        c, kw = config, dict(dtype=dtype, device=device)
        self.w_q = nn.Parameter(torch.empty(c.n_heads, c.dk, c.d_model, **kw))
        self.w_k = nn.Parameter(torch.empty(c.n_heads, c.dk, c.d_model, **kw))
        self.w_v = nn.Parameter(torch.empty(c.n_heads, c.dv, c.d_model, **kw))
        self.w_o = nn.Parameter(torch.empty(c.n_heads, c.d_model, c.dv, **kw))
        for w in (self.w_q, self.w_k, self.w_v, self.w_o):
            nn.init.trunc_normal_(w, std=init_std, a=-2 * init_std, b=2 * init_std, generator=generator)
        if self.kernel.n_params:
            values = c.kernel_init if c.kernel_init is not None else self.kernel.param_init
            init = torch.tensor(values, **kw).expand(c.n_heads, -1).clone()
            self.kernel_params = nn.Parameter(init, requires_grad=c.learn_kernel_params)
        else:
            self.register_buffer("kernel_params", torch.zeros(c.n_heads, 0, **kw))
        if c.momentum is not None:  # stored as a logit: beta = sigmoid(momentum_logit) stays in (0, 1)
            logit = torch.full((c.n_heads,), math.log(c.momentum / (1 - c.momentum)), **kw)
            if c.learn_momentum:
                self.momentum_logit = nn.Parameter(logit)
            else:
                self.register_buffer("momentum_logit", logit)

    def forward(self, x: Tensor, n_context: int, hooks: HookPoints | dict[str, Tensor] | None = None,
                name: str = "attn", rows_from: int = 0) -> Tensor:
        """x (B, T, D) -> update (B, T, D); keys/values are the first `n_context` tokens (see module doc).
        hooks: the model's hook points (a dict instead reads every hook point into it). rows_from: the update
        of tokens rows_from.. only, (B, T - rows_from, D), for a model that reads out the queries alone (the
        context tokens' update costs T / Q times more and is not used there); not with hooks, whose points
        hold every token."""
        if isinstance(hooks, dict):
            registry = HookPoints()
            with registry.caching(hooks):
                return self.forward(x, n_context, registry, name, rows_from)
        if rows_from and hooks:
            raise ValueError("rows_from computes some tokens' update only; hook points hold every token's")
        c = self.config
        if x.dim() != 3 or x.shape[-1] != c.d_model:
            raise ShapeError(f"attention expects tokens (B, T, {c.d_model}), got {tuple(x.shape)}")
        t_len = x.shape[1]
        if not 0 < n_context <= t_len:
            raise ShapeError(f"n_context={n_context} must be in 1..{t_len}")
        n_keys = t_len if c.query_in_keys else n_context
        src = x[:, :n_keys]
        if not 0 <= rows_from < t_len:
            raise ShapeError(f"rows_from={rows_from} must be in 0..{t_len - 1}")
        q = torch.einsum("hkd,btd->bhtk", self.w_q, x[:, rows_from:] if rows_from else x)
        k = torch.einsum("hkd,btd->bhtk", self.w_k, src)
        v = torch.einsum("hvd,btd->bhtv", self.w_v, src)
        mask = self._mask(t_len, n_keys, n_context, x.device)
        if mask is not None and rows_from:
            mask = mask[rows_from:]
        want_weights = bool(hooks) and hooks.active(f"{name}.weights")
        linear_fast = (self.kernel.bilinear and mask is None and c.normalize == "none" and not want_weights
                       and associative_cheaper(t_len - rows_from, n_keys, c.dk, c.dv))
        if linear_fast:  # associativity: (V^T K) Q, fewer multiplications here than (Q K^T) V
            mixed = torch.einsum("bhvk,bhsk->bhsv", v.transpose(-1, -2) @ k, q)
        else:
            w = self.weights(q, k, mask, n_keys)
            if want_weights:
                w = hooks(f"{name}.weights", w)
            mixed = w @ v
        if c.momentum is not None:
            past = v if n_keys == t_len else torch.nn.functional.pad(v, (0, 0, 0, t_len - n_keys))
            mixed = mixed + past_ema(past, torch.sigmoid(self.momentum_logit)[:, None, None])[..., rows_from:, :]
        out = torch.einsum("hdv,bhtv->btd", self.w_o, mixed)
        return hooks(f"{name}.out", out) if hooks else out

    def weights(self, q: Tensor, k: Tensor, mask: Tensor | None, n_keys: int) -> Tensor:
        """Attention weights (B, H, Tq, Tk) from queries (B, H, Tq, dk) and keys (B, H, Tk, dk)."""
        s = self.kernel.fn(q, k, self.kernel_params, self.config.kernel_options)
        if self.kernel.normalized:
            if mask is not None:
                s = s.masked_fill(~mask, -math.inf)
            w = torch.softmax(s, dim=-1)
        else:
            w = s if mask is None else s * mask
        if self.config.normalize == "count":
            count = mask.sum(-1, keepdim=True).clamp_min(1) if mask is not None else n_keys
            w = w / count
        return w

    def _mask(self, t_len: int, n_keys: int, n_context: int, device: torch.device) -> Tensor | None:
        """Boolean (T, Tk) mask of allowed (query token, key token) pairs, or None when all are allowed."""
        if not self.config.causal:
            return None
        j = torch.arange(t_len, device=device)[:, None]
        i = torch.arange(n_keys, device=device)[None, :]
        return i <= j
