"""Constructions: plain functions returning attention weights that implement an algorithm (source 000, sec. 2).

Token layout: concatenated tokens e = [x; y] of width D = Dx + Dy (see `icgd.learners.tokens`).

GD (Prop. 1), one LSA head:
    W_K = W_Q = [[I_Dx, 0], [0, 0]],   W_V = [[0, 0], [W0, -I_Dy]],   P = (eta / N) I_D
so every token gets y_j <- y_j - dW x_j, dW = -(eta / N) sum_i (W0 x_i - y_i) x_i^T: one GD step on
L(W) = 1/(2N) sum_i ||W x_i - y_i||^2. Stacking K such layers (each with W0 in W_V, each its own eta)
gives K GD steps from W0, read out as -(query y-entry) when the query starts at [x_q; -W0 x_q].

GD++ (A.10) adds the input transform x_j <- x_j - gamma X X^T x_j, X X^T = sum_i x_i x_i^T over the
context (not divided by N, so gamma is on the paper's scale), in the same head:
    W_K = W_Q as above,   W_V = [[-gamma I_Dx, 0], [(eta/N) W0, -(eta/N) I_Dy]],   P = I_D.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from icgd.core.episodes import ShapeError
from icgd.nn.attention import AttentionConfig
from icgd.nn.kernels import get_kernel, kernel_names
from icgd.nn.stack import Stack, StackConfig

LayerWeights = dict[str, Tensor]


def _w0(w0: Tensor | None, dx: int, dy: int) -> Tensor:
    if w0 is None:
        return torch.zeros(dy, dx, dtype=torch.float64)
    w0 = torch.as_tensor(w0, dtype=torch.float64).cpu()
    if w0.shape != (dy, dx):
        raise ValueError(f"w0 must have shape (Dy, Dx) = ({dy}, {dx}), got {tuple(w0.shape)}")
    return w0


def _kq(dx: int, dy: int) -> Tensor:
    m = torch.zeros(1, dx + dy, dx + dy, dtype=torch.float64)
    m[0, :dx, :dx] = torch.eye(dx, dtype=torch.float64)
    return m


def gd_weights(dx: int, dy: int, eta: float, n_context: int, w0: Tensor | None = None) -> LayerWeights:
    """One LSA layer (1 head, float64) doing one GD step with learning rate `eta` from W0 (Prop. 1).

    Returns {"w_q", "w_k": (1, D, D), "w_v": (1, D, D), "w_o": (1, D, D)}, D = dx + dy.
    """
    d = dx + dy
    w_v = torch.zeros(1, d, d, dtype=torch.float64)
    w_v[0, dx:, :dx] = _w0(w0, dx, dy)
    w_v[0, dx:, dx:] = -torch.eye(dy, dtype=torch.float64)
    w_o = (float(eta) / n_context) * torch.eye(d, dtype=torch.float64).unsqueeze(0)
    return {"w_q": _kq(dx, dy), "w_k": _kq(dx, dy), "w_v": w_v, "w_o": w_o}


def gdpp_weights(dx: int, dy: int, eta: float, gamma: float, n_context: int,
                 w0: Tensor | None = None) -> LayerWeights:
    """One LSA layer (1 head, float64) doing one GD++ step: GD with `eta` and x <- (I - gamma X X^T) x."""
    d = dx + dy
    s = float(eta) / n_context
    w_v = torch.zeros(1, d, d, dtype=torch.float64)
    w_v[0, :dx, :dx] = -float(gamma) * torch.eye(dx, dtype=torch.float64)
    w_v[0, dx:, :dx] = s * _w0(w0, dx, dy)
    w_v[0, dx:, dx:] = -s * torch.eye(dy, dtype=torch.float64)
    return {"w_q": _kq(dx, dy), "w_k": _kq(dx, dy), "w_v": w_v,
            "w_o": torch.eye(d, dtype=torch.float64).unsqueeze(0)}


@dataclass(frozen=True)
class Construction:
    """A stack configuration and the per-layer weights that implement an algorithm."""

    config: StackConfig
    layers: tuple[LayerWeights, ...]

    def state_dict(self) -> dict[str, Tensor]:
        """Weights named as in `Stack.state_dict()`."""
        return {f"layers.{i}.attn.{k}": v for i, lw in enumerate(self.layers) for k, v in lw.items()}

    def build(self, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None) -> Stack:
        """A Stack holding these weights."""
        stack = Stack(self.config, dtype=dtype, device=device)
        load_layer_weights(stack, self.layers)
        return stack


def load_layer_weights(stack: Stack, layers: Sequence[LayerWeights]) -> Stack:
    """Copy per-layer attention weights into `stack` (shapes must match; cast to the stack's dtype)."""
    if len(layers) != len(stack.layers):
        raise ValueError(f"{len(layers)} layer weight sets for a stack of {len(stack.layers)} blocks")
    with torch.no_grad():
        for block, lw in zip(stack.layers, layers):
            for name, value in lw.items():
                param = getattr(block.attn, name)
                if param.shape != value.shape:
                    raise ValueError(f"weight {name}: shape {tuple(value.shape)} != model {tuple(param.shape)}")
                param.copy_(value)
    return stack


def _per_layer(values: float | Sequence[float], n: int | None, what: str) -> list[float]:
    vals = [float(values)] * (n or 1) if isinstance(values, (int, float)) else [float(v) for v in values]
    if n is not None and len(vals) != n:
        raise ValueError(f"{what}: {len(vals)} values for {n} layers")
    if not vals:
        raise ValueError(f"{what}: need at least one layer")
    return vals


def lsa_config(dx: int, dy: int, n_layers: int, **stack_options) -> StackConfig:
    """Config of an n-layer, 1-head linear self-attention stack on concatenated tokens.

    Options naming an AttentionConfig field (e.g. query_in_keys) go to the attention, the rest to the stack.
    """
    attn = {k: stack_options.pop(k) for k in list(stack_options) if k in AttentionConfig.model_fields}
    return StackConfig(attention=AttentionConfig(d_model=dx + dy, **attn), n_layers=n_layers, **stack_options)


def gd_construction(dx: int, dy: int, n_context: int, etas: float | Sequence[float], steps: int | None = None,
                    w0: Tensor | None = None, gammas: float | Sequence[float] | None = None,
                    **stack_options) -> Construction:
    """K-step GD (gammas None) or GD++ stack: one layer per step, per-layer eta (and gamma).

    etas: one value (repeated `steps` times) or one per layer. Extra keyword options go to StackConfig.
    """
    eta_list = _per_layer(etas, steps, "etas")
    k = len(eta_list)
    if gammas is None:
        layers = tuple(gd_weights(dx, dy, e, n_context, w0) for e in eta_list)
    else:
        gamma_list = _per_layer(gammas, k, "gammas")
        layers = tuple(gdpp_weights(dx, dy, e, g, n_context, w0) for e, g in zip(eta_list, gamma_list))
    return Construction(lsa_config(dx, dy, k, **stack_options), layers)


# ------------------------------------------------------------------------------ copying (Prop. 3)
def _interleaved_width(dx: int, dy: int, n_context: int) -> tuple[int, int]:
    t_len = 2 * n_context + 1
    return dx + dy + t_len, t_len


def copy_attention_config(dx: int, dy: int, n_context: int, kernel: str = "linear") -> AttentionConfig:
    """The attention shape of the copy construction: 2 heads, keys = all 2N + 1 interleaved tokens."""
    d, t_len = _interleaved_width(dx, dy, n_context)
    return AttentionConfig(d_model=d, n_heads=2, d_key=max(t_len, dx), d_value=dy, kernel=kernel,
                           query_in_keys=True)


def copy_weights(dx: int, dy: int, n_context: int, scale: float = 1.0) -> LayerWeights:
    """One 2-head attention layer on interleaved tokens (source 000, sec. 4) that builds the tokens of Prop. 1
    (Prop. 3).

    Tokens [x or 0; y or 0; p_t] (width D = Dx + Dy + T, T = 2N + 1), every token a key.
    Head 1 (keys/queries on positions, a shifted identity): token t attends to token t + 1 (the query,
    which has no successor, to itself) and adds that token's y-slot to its own: x-token 2i gets y_i.
    Head 2 (identity on positions): every token subtracts its own y-slot, which zeroes the y-tokens
    (the paper's suggestion for the odd tokens) and leaves the x-tokens, whose y-slot was 0, alone.
    Result: x-tokens [x_i; y_i; p_2i], y-tokens [0; 0; p_2i+1], query [x_q; 0; p_2N], exactly.
    `scale` multiplies the query weights: 1 for linear attention; for softmax a large value (e.g. 100)
    makes every attention row one-hot to float rounding (the other weights are below exp(-scale)).
    Returns float64 {"w_q", "w_k": (2, dk, D), "w_v": (2, Dy, D), "w_o": (2, D, Dy)}, dk = max(T, Dx).
    """
    d, t_len = _interleaved_width(dx, dy, n_context)
    dk = max(t_len, dx)
    f = dict(dtype=torch.float64)
    pos = slice(dx + dy, d)
    w_q = torch.zeros(2, dk, d, **f)
    w_k = torch.zeros(2, dk, d, **f)
    eye_t = torch.eye(t_len, **f)
    w_q[:, :t_len, pos] = float(scale) * eye_t
    # score(t, s) = scale * shift[t, s]: 1 for s = t + 1, and for the query token (t = s = T - 1)
    shift = torch.diag(torch.ones(t_len - 1, **f), 1)
    shift[t_len - 1, t_len - 1] = 1.0
    w_k[0, :t_len, pos] = shift
    w_k[1, :t_len, pos] = eye_t
    w_v = torch.zeros(2, dy, d, **f)
    w_v[:, :, dx:dx + dy] = torch.eye(dy, **f)
    w_o = torch.zeros(2, d, dy, **f)
    w_o[0, dx:dx + dy] = torch.eye(dy, **f)
    w_o[1, dx:dx + dy] = -torch.eye(dy, **f)
    return {"w_q": w_q, "w_k": w_k, "w_v": w_v, "w_o": w_o}


def copy_gd_construction(dx: int, dy: int, n_context: int, eta: float, kernel: str = "linear",
                         scale: float | None = None) -> Construction:
    """Two layers on interleaved tokens: the copy layer (`kernel`: linear or softmax) then one GD step
    (linear, W0 = 0): predictions equal one step of GD with learning rate `eta`. Build with `.build()`
    and read out with `InterleavedTokens`. scale: default 1 (linear) or 100 (softmax)."""
    k = get_kernel(kernel)
    if not (k.bilinear or k.normalized):
        raise ValueError(f"the copy construction needs linear attention or a kernel normalised over the keys "
                         f"(softmax), not {kernel!r}")
    if scale is None:
        scale = 100.0 if k.normalized else 1.0
    d, _ = _interleaved_width(dx, dy, n_context)
    attn = copy_attention_config(dx, dy, n_context, kernel)
    copy = copy_weights(dx, dy, n_context, scale)
    gd = {k: torch.zeros_like(v) for k, v in copy.items()}
    gd["w_q"][0, :dx, :dx] = torch.eye(dx, dtype=torch.float64)
    gd["w_k"][0, :dx, :dx] = torch.eye(dx, dtype=torch.float64)
    gd["w_v"][0, :, dx:dx + dy] = -torch.eye(dy, dtype=torch.float64)  # value -y (W0 = 0)
    gd["w_o"][0, dx:dx + dy] = (float(eta) / n_context) * torch.eye(dy, dtype=torch.float64)
    layers: list[LayerWeights] = [copy, gd]
    if k.n_params:  # the kernel's own parameters at their initial values (softmax: s = 1)
        layers[0] = copy | {"kernel_params": torch.tensor([k.param_init] * 2, dtype=torch.float64)}
    config = StackConfig(attention=attn, n_layers=2, kernels=(kernel, "linear"))
    return Construction(config, tuple(layers))


# ------------------------------------------------------------------ kernel functional GD (source 002)
def rates_per_layer(values, n_layers: int, dy: int, what: str) -> Tensor:
    """Learning rates as (L, Dy) float64 from a number, one per layer (L,), or one per layer and output
    entry (L, Dy)."""
    t = torch.as_tensor(values, dtype=torch.float64)
    if t.dim() == 0:
        t = t.expand(n_layers, dy)
    elif t.dim() == 1:
        if t.shape[0] != n_layers:
            raise ShapeError(f"{what}: {t.shape[0]} values for {n_layers} layers")
        t = t[:, None].expand(n_layers, dy)
    if t.shape != (n_layers, dy):
        raise ShapeError(f"{what} must be a number, (L,) or (L, Dy) = ({n_layers}, {dy}), got {tuple(t.shape)}")
    return t.clone()


def constant_head_rates(biases, n_layers: int, dy: int) -> Tensor | str | None:
    """The constant head's learning rates: None (no constant head), "tied" (the kernel head's rates,
    eq. 1) or (L, Dy) float64 from `rates_per_layer`; ValueError for any other string."""
    if isinstance(biases, str):
        if biases != "tied":
            raise ValueError(f"biases must be None, 'tied' or learning rates, got {biases!r}")
        return biases
    return None if biases is None else rates_per_layer(biases, n_layers, dy, "biases")


def constant_kernel_value(kernel: str, params: Sequence[float] | None = None,
                          options: dict[str, float] | None = None, dk: int = 1) -> float:
    """kappa(0, 0): the similarity a head with zero key and query weights gives every pair (for a
    normalised kernel, 1: the softmax then weighs every key 1/N). 0 means no constant head is possible."""
    k = get_kernel(kernel)
    if k.normalized:
        return 1.0
    p = torch.tensor(k.param_init if params is None else tuple(params), dtype=torch.float64).reshape(1, -1)
    z = torch.zeros(1, 1, dk, dtype=torch.float64)
    return float(k.fn(z, z, p, dict(options or {})).reshape(-1)[0])


def kernel_gd_weights(dx: int, dy: int, etas: Sequence[float], n_scale: int | None, normalized: bool,
                      biases: Sequence[float] | None = None, constant: float = 1.0) -> LayerWeights:
    """One attention layer (float64) doing one step of kernel functional GD on tokens [x; y - p] (source 002).

    Head 1 (kernel head): W_K = W_Q = [I_Dx 0] (dk = Dx), W_V = [0 I_Dy] (the residual y_i - p(x_i)),
    P = -diag(etas) / n (no 1/n for a normalised kernel). Head 2 (constant head, when `biases` is given):
    W_K = W_Q = 0, so every pair gets kappa(0, 0) = `constant` (1/N after a softmax); the same W_V and
    P = -diag(biases) / (n * constant) (-diag(biases) for a normalised kernel). Every token's y-slot then
    falls by the update, so the query's holds -p_{l+1}(x_q).
    Returns {"w_q", "w_k": (H, Dx, D), "w_v": (H, Dy, D), "w_o": (H, D, Dy)}, H = 1 or 2, D = Dx + Dy.
    """
    d, h = dx + dy, 1 if biases is None else 2
    f = {"dtype": torch.float64}
    w_q = torch.zeros(h, dx, d, **f)
    w_q[0, :, :dx] = torch.eye(dx, **f)
    w_v = torch.zeros(h, dy, d, **f)
    w_v[:, :, dx:] = torch.eye(dy, **f)
    w_o = torch.zeros(h, d, dy, **f)
    scale = 1.0 if normalized else 1.0 / n_scale
    w_o[0, dx:] = -scale * torch.diag(torch.as_tensor(etas, **f))
    if biases is not None:
        w_o[1, dx:] = -(scale / constant) * torch.diag(torch.as_tensor(biases, **f))
    return {"w_q": w_q, "w_k": w_q.clone(), "w_v": w_v, "w_o": w_o}


def kernel_gd_construction(dx: int, dy: int, n_scale: int, kernel: str, etas, n_layers: int = 1,
                           biases=None, kernel_params: Sequence[float] | None = None,
                           kernel_options: dict[str, float] | None = None,
                           constant_params: Sequence[float] | None = None) -> Construction:
    """An L-layer attention stack doing L steps of kernel functional GD (`icgd.learners.KernelGD` with the
    same arguments), read out through `ConcatTokens(prior=p_0)`.

    etas, biases: a number, (L,) or (L, Dy) learning rates (biases None: kernel head only; "tied": the
    constant head uses etas, eq. 1). kernel_params: the kernel head's parameters (default the kernel's);
    constant_params: the constant head's (default the kernel's; a sigmoid needs c != 0, a polynomial
    c != 0). A kernel whose kappa(0, 0) is 0 (linear, cosine) cannot have a constant head: ValueError.
    """
    k = get_kernel(kernel)
    eta_t = rates_per_layer(etas, n_layers, dy, "etas")
    bias_t = constant_head_rates(biases, n_layers, dy)
    if isinstance(bias_t, str):
        bias_t = eta_t
    constant = 1.0
    if bias_t is not None:
        if not k.constant_head:
            without = ", ".join(n for n in kernel_names() if not get_kernel(n).constant_head)
            raise ValueError(f"the {kernel} kernel cannot make a constant head: with zero key/query weights it "
                             f"gives kappa = 0 whatever its parameters (kernels without one: {without})")
        constant = constant_kernel_value(kernel, constant_params, kernel_options, dx)
        if abs(constant) < 1e-12:
            raise ValueError(f"the {kernel} kernel cannot make a constant head with these parameters: with zero "
                             f"key/query weights it gives kappa = {constant:g} (a constant needs a nonzero value)")
    heads = 1 if bias_t is None else 2
    attn = AttentionConfig(d_model=dx + dy, n_heads=heads, d_key=dx, d_value=dy, kernel=kernel,
                           kernel_options=dict(kernel_options or {}))
    layers = []
    for layer in range(n_layers):
        w = kernel_gd_weights(dx, dy, eta_t[layer].tolist(), n_scale, k.normalized,
                              None if bias_t is None else bias_t[layer].tolist(), constant)
        if k.n_params:
            head1 = k.param_init if kernel_params is None else tuple(kernel_params)
            rows = [head1] + ([k.param_init if constant_params is None else tuple(constant_params)]
                              if heads == 2 else [])
            w["kernel_params"] = torch.tensor(rows, dtype=torch.float64)
        layers.append(w)
    return Construction(StackConfig(attention=attn, n_layers=n_layers), tuple(layers))
