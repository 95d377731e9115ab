"""The fused backend: stacks of linear or softmax attention on concatenated tokens, several seeds at once.

Same math as `Stack` + `ConcatTokens` (tested equal in value and gradient). Linear attention: for each
layer and head, token e_j <- e_j + lambda * sum_h U_h C M_h e_j with M_h = W_K,h^T W_Q,h, U_h = P_h W_V,h
and C = sum_{i <= N} e_i e_i^T (divided by N with normalize="count"); tokens clipped after each layer.
What changes is only the order of the products: weights are multiplied out once per step (D x D),
products with weights run as large matrix multiplications over all tasks and seeds, C is computed once
per task (once for all seeds while the tokens are still the shared data), and the last layer computes
only the query's y-entries, the only thing the loss reads (all of the query's entries when an MLP
follows, since it mixes them; the MLP runs on every token as large products). Softmax attention uses
the same multiplied-out weights: scores x M^T ctx^T and output (w ctx) U^T, so that its per-task
products read the tokens themselves (shared by all seeds in the first layer: one product per task for
every seed and head), with the same savings in the last layer. LayerNorm, when the stack has it, is
applied to what attention (and the MLP) read, over the unpadded coordinates. Widths are zero-padded to
multiples of 4 (exact: padded coordinates stay 0), which doubles MKL's speed on these small products.

Parameters are a dict of stacked tensors named as in `Stack.state_dict()`, each with a leading seed
dimension S. Data are (B, ...) tensors shared by all seeds or (S, B, ...) tensors, one batch per seed.
"""

from __future__ import annotations

import torch
from torch import Tensor

from icgd.nn.attention import attention_products
from icgd.nn.kernels import get_kernel, kernel_names
from icgd.nn.stack import StackConfig
from icgd.train import compiled, triton_attention


def ineligible(config: StackConfig) -> str | None:
    """Why the fused backend cannot compute this stack exactly, or None when it can (linear or softmax
    attention, the same in every layer, no causal mask, queries not among the keys)."""
    a = config.attention
    if not config.uniform:
        return "layers with different attention"
    if get_kernel(a.kernel).fused is None:
        covered = " and ".join(n for n in kernel_names() if get_kernel(n).fused is not None)
        return f"attention kernel {a.kernel!r} (it covers {covered})"
    if a.causal or a.query_in_keys:
        return "a causal mask or queries among the keys"
    return None


def use_compiled(config: StackConfig, dtype: torch.dtype, device: torch.device | str, n_tokens: int,
                 width: int) -> bool:
    """Whether `lsa_predictions` hands this stack to the compiled backend (`compiled.ineligible`)."""
    return compiled.ineligible(config, dtype, device, n_tokens, width) is None


def _multiplied_out(params: dict[str, Tensor], p: str, softmax: bool, d_pad: int | None = None
                    ) -> tuple[Tensor, Tensor]:
    """The layer's weights multiplied out, (S, H, D, D) each: M = W_K^T W_Q (divided by the softmax
    temperature tau for softmax attention) and U = P W_V; zero-padded to d_pad x d_pad when given."""
    m, u = attention_products(params[p + "w_q"], params[p + "w_k"], params[p + "w_v"], params[p + "w_o"])
    if softmax:
        m = m / params[p + "kernel_params"][..., 0, None, None]
    pad = 0 if d_pad is None else d_pad - m.shape[-1]
    if pad:
        m = torch.nn.functional.pad(m, (0, pad, 0, pad))
        u = torch.nn.functional.pad(u, (0, pad, 0, pad))
    return m, u


def _pad_to(w: Tensor, dims: dict[int, int]) -> Tensor:
    """Zero-pad dimensions (negative indices) of `w` up to the given sizes."""
    spec = [0] * (2 * w.dim())
    for dim, size in dims.items():
        spec[2 * (-dim - 1) + 1] = size - w.shape[dim]
    return torch.nn.functional.pad(w, spec) if any(spec) else w


def _softmax_update(params: dict[str, Tensor], p: str, x: Tensor, ctx: Tensor, d_pad: int,
                    normalize: str, rows: tuple[int, int] | None = None) -> Tensor:
    """Softmax attention update (S, B, T, Dp) of tokens x (queries) over context tokens ctx (both (B, T, Dp)
    shared by the seeds, or both (S, B, T, Dp)); only the output coordinates rows[0]:rows[1] when `rows`.

    Scores q k^T / tau = x M^T ctx^T with M = W_K^T W_Q / tau, and the output P (w V) = (w ctx) U^T with
    U = P W_V (D x D per seed and head): the per-task products then read the tokens themselves, which are
    shared by all seeds in the first layer, so that one product per task serves every seed and head."""
    m, u = _multiplied_out(params, p, True, d_pad)  # (S, H, Dp, Dp)
    if rows is not None:
        u = u[..., rows[0]:rows[1], :]
    s_n, h_n, g = u.shape[0], u.shape[1], u.shape[-2]
    mt = m.transpose(-1, -2)  # (S, H, Dp, Dp): y = x @ mt
    if x.dim() != ctx.dim():  # one of them per seed: both per seed
        x, ctx = (x.expand(s_n, *x.shape), ctx) if x.dim() == 3 else (x, ctx.expand(s_n, *ctx.shape))
    if x.dim() == 3:  # shared tokens: (B, T, Dp) -> (B, T*S*H, Dp), rows ordered (t, s, h)
        b, t, _ = x.shape
        y = (x.reshape(b * t, d_pad) @ mt.permute(2, 0, 1, 3).reshape(d_pad, s_n * h_n * d_pad))
        y = y.view(b, t * s_n * h_n, d_pad)
    else:  # per-seed tokens: (S, B, T, Dp) -> (S*B, T*H, Dp), rows ordered (t, h)
        _, b, t, _ = x.shape
        y = torch.bmm(x.reshape(s_n, b * t, d_pad), mt.permute(0, 2, 1, 3).reshape(s_n, d_pad, h_n * d_pad))
        y = y.view(s_n * b, t * h_n, d_pad)
        ctx = ctx.reshape(s_n * b, -1, d_pad)
    # softmax written out: torch.softmax over a last dimension of size ~10 is six times slower on CPU
    e = torch.bmm(y, ctx.transpose(-1, -2))
    e = (e - e.amax(-1, keepdim=True).detach()).exp()
    w = e / e.sum(-1, keepdim=True)
    if normalize == "count":
        w = w / ctx.shape[-2]
    z = torch.bmm(w, ctx)  # (B, T*S*H, Dp) or (S*B, T*H, Dp)
    if x.dim() == 3:
        return torch.einsum("btshe,shge->sbtg", z.view(b, t, s_n, h_n, d_pad), u)
    ut = u.transpose(-1, -2).reshape(s_n, h_n * d_pad, g)
    return torch.bmm(z.view(s_n, b * t, h_n * d_pad), ut).view(s_n, b, t, g)


def lsa_predictions(params: dict[str, Tensor], config: StackConfig, context_x: Tensor, context_y: Tensor,
                    query_x: Tensor, n_steps: int | None = None, dampening: float | None = None,
                    compiled_ok: bool | None = None, heads_compiled: bool | None = None,
                    triton_ok: bool | None = None) -> Tensor:
    """Query predictions (S, B, Q, Dy) of S seed-stacked LSA stacks.

    context_x (B, N, Dx) or (S, B, N, Dx); context_y (..., N, Dy); query_x (..., Q, Dx).
    compiled_ok: run the compiled backend (None: where `use_compiled` says it can). Otherwise triton_ok:
    compute attention with the Triton kernels (`icgd.train.triton_attention`; None: where `use_triton` says
    they can; True on CPU tensors runs Triton's interpreter), a whole residual layer per call for one-head
    attention-only stacks, else per head. heads_compiled: otherwise, compute each head's attention with
    the compiled kernel (None: where `compiled_heads` says it can; False: PyTorch products only).
    """
    reason = ineligible(config)
    if reason is not None:
        raise ValueError(f"the fused backend cannot compute this stack: {reason}")
    n_steps = config.n_layers if n_steps is None else n_steps
    if n_steps < 1:
        raise ValueError(f"n_steps must be >= 1, got {n_steps}")
    lam = config.dampening if dampening is None else dampening
    if compiled_ok is None:
        compiled_ok = use_compiled(config, context_x.dtype, context_x.device,
                                   context_x.shape[-2] + query_x.shape[-2], context_x.shape[-1] + context_y.shape[-1])
    if compiled_ok:
        return _kernel_predictions(compiled, params, config, context_x, context_y, query_x, n_steps, lam)
    dx, dy, n = context_x.shape[-1], context_y.shape[-1], context_x.shape[-2]
    # zero-pad the token width to a multiple of 4: the padded coordinates stay exactly 0 (their rows and
    # columns of M and U are 0) and small matrix products of width 12 run twice as fast as width 11
    d = dx + dy
    pad = padded_width(d) - d
    if triton_ok is None:
        triton_ok = use_triton(context_x.dtype, context_x.device, n + query_x.shape[-2], d + pad)
    if triton_ok and triton_attention.not_whole_layers(config) is None:
        return _kernel_predictions(triton_attention, params, config, context_x, context_y, query_x, n_steps, lam)
    zeros = [context_x.new_zeros(*context_x.shape[:-1], pad), query_x.new_zeros(*query_x.shape[:-1], dy + pad)]
    ctx = torch.cat([context_x, context_y, zeros[0]], -1)
    qry = torch.cat([query_x, zeros[1]], -1)
    # each head's attention by a kernel (Triton's, or the compiled C code), the rest (heads summed, residual,
    # LayerNorm, MLP) here
    if triton_ok:
        per_head = triton_attention
    elif heads_compiled or (heads_compiled is None
                            and compiled_heads(config, ctx.dtype, ctx.device, ctx.shape[-2] + qry.shape[-2], d + pad)):
        per_head = compiled
    else:
        per_head = None
    x = None  # all tokens (context then queries) once a layer has mixed them
    for step in range(n_steps):
        blk = 0 if config.recurrent else step
        p = f"layers.{blk}.attn."
        last = step == n_steps - 1
        y_only = last and not config.mlp  # an MLP reads every coordinate of the query tokens
        if x is None:
            x_in = qry if last else torch.cat([ctx, qry], -2)
        else:
            x_in = x[..., n:, :] if last else x
        h_in, h_ctx = x_in, ctx  # what attention reads: the tokens, or their LayerNorm
        if config.has_ln1(blk):
            h_in = _layer_norm(params, f"layers.{blk}.ln1.", x_in, d)
            h_ctx = _layer_norm(params, f"layers.{blk}.ln1.", ctx, d) if last else h_in.split(
                [n, h_in.shape[-2] - n], -2)[0]
        # one linear head on tokens shared by the seeds (data) stays on `_SharedLinearAttention`, which
        # computes C once for all seeds
        form = get_kernel(config.attention.kernel).fused
        shared_one = h_in.dim() == 3 and h_ctx.dim() == 3 and form == "linear" and config.attention.n_heads == 1
        if per_head is not None and not shared_one:
            upd = _kernel_heads_update(per_head, params, p, config, h_in, h_ctx, n, last, (dx, d) if y_only else None,
                                       d + pad)
        elif form == "softmax":
            upd = _softmax_update(params, p, h_in, h_ctx, d + pad, config.attention.normalize,
                                  (dx, d) if y_only else None)
        else:
            upd = _linear_update(params, p, h_ctx, h_in, n, y_only, dx, d, pad, config.attention.normalize)
        if lam != 1.0:
            upd = lam * upd
        if y_only:
            return -_clip(x_in[..., dx:d] + upd, config.clip)
        x = x_in + upd
        if config.mlp:
            h = _layer_norm(params, f"layers.{blk}.ln2.", x, d) if config.layer_norm is True else x
            upd = _mlp(params, f"layers.{blk}.mlp.", h, d + pad)
            x = x + (lam * upd if lam != 1.0 else upd)
        if last:
            return -_clip(x[..., dx:d], config.clip)
        x = _clip(x, config.clip)
        # split (not slicing): its backward concatenates instead of filling zeros
        ctx = x.split([n, x.shape[-2] - n], -2)[0]
    raise AssertionError("unreachable")


def _kernel_predictions(kernel, params: dict[str, Tensor], config: StackConfig, context_x: Tensor,
                        context_y: Tensor, query_x: Tensor, n_steps: int, lam: float) -> Tensor:
    """`lsa_predictions` of one-head linear or softmax attention stacks by a kernel module (`compiled`: the
    compiled backend, `triton_attention`: the Triton kernels): the tokens stay in its layout (`to_blocks`:
    the C code's tasks in groups of `compiled.lanes()`, task index last) through all layers, and each layer
    (residual, dampening and clipping included) is one call."""
    dx, dy, n = context_x.shape[-1], context_y.shape[-1], context_x.shape[-2]
    d = dx + dy
    tokens = torch.cat([torch.cat([context_x, context_y], -1),
                        torch.cat([query_x, query_x.new_zeros(*query_x.shape[:-1], dy)], -1)], -2)
    b, t = tokens.shape[-3], tokens.shape[-2]
    tok = kernel.to_blocks(tokens)  # (NB, T, D, L) shared by the seeds, or (S, NB, T, D, L)
    scale = 1.0 / n if config.attention.normalize == "count" else 1.0
    kind = get_kernel(config.attention.kernel).fused
    for step in range(n_steps):
        p = f"layers.{0 if config.recurrent else step}.attn."
        m, u = (w[:, 0] for w in _multiplied_out(params, p, kind == "softmax"))  # (S, D, D): one head
        if step == n_steps - 1:  # the query rows' y-entries only: all the loss reads
            y = kernel.attention(tok, m, u[:, dx:d], n, n, t, scale, residual=dx, lam=lam, clip=config.clip,
                                 kind=kind)
            return -kernel.from_blocks(y, b)
        tok = kernel.attention(tok, m, u, n, 0, t, scale, residual=0, lam=lam, clip=config.clip, kind=kind)
    raise AssertionError("unreachable")


def padded_width(d: int) -> int:
    """The token width the fused path computes with: d zero-padded to a multiple of 4."""
    return d + (-d % 4)


def compiled_heads(config: StackConfig, dtype: torch.dtype, device: torch.device | str, n_tokens: int,
                   width: int) -> bool:
    """Whether the fused path computes each head's attention with the compiled kernel (tokens of the padded
    `width`): where `compiled.unavailable` says it can, for the stacks the compiled backend does not take
    whole (several heads, MLP or LayerNorm). Its speed against the PyTorch products: README, "Speed"
    (`benchmarks/compute_paths.py` times both)."""
    return compiled.unavailable(dtype, device, n_tokens, width) is None


def use_triton(dtype: torch.dtype, device: torch.device | str, n_tokens: int, width: int) -> bool:
    """Whether the fused path computes attention with the Triton kernels (`triton_attention.unavailable`):
    float32 on a CUDA device, Triton installed, tiles that fit."""
    return triton_attention.unavailable(dtype, device, n_tokens, width) is None


def _kernel_heads_update(kernel, params: dict[str, Tensor], p: str, config: StackConfig, h_in: Tensor,
                         h_ctx: Tensor, n: int, last: bool, rows: tuple[int, int] | None, d_pad: int) -> Tensor:
    """The attention update (S, B, T, G) of the tokens h_in over the context h_ctx, one call of the kernel
    module (`compiled` or `triton_attention`) per head (heads summed): h_in holds every token (context first)
    except in the last layer, where it holds the queries only; output coordinates rows[0]:rows[1] when
    `rows`."""
    kind = get_kernel(config.attention.kernel).fused
    if last:  # the kernel reads the context as the first n rows of one token tensor
        if h_in.dim() != h_ctx.dim():
            s_n = max(h_in.shape[0] if h_in.dim() == 4 else 1, h_ctx.shape[0] if h_ctx.dim() == 4 else 1)
            h_in, h_ctx = (t if t.dim() == 4 else t.expand(s_n, *t.shape) for t in (h_in, h_ctx))
        tokens, q0 = torch.cat([h_ctx, h_in], -2), n
    else:
        tokens, q0 = h_in, 0
    b, t = tokens.shape[-3], tokens.shape[-2]
    tok = kernel.to_blocks(tokens)
    m, u = _multiplied_out(params, p, kind == "softmax", d_pad)  # (S, H, Dp, Dp)
    if rows is not None:
        u = u[..., rows[0]:rows[1], :]
    scale = 1.0 / n if config.attention.normalize == "count" else 1.0
    out = None
    for h in range(m.shape[1]):
        o = kernel.attention(tok, m[:, h], u[:, h], n, q0, t, scale, kind=kind)
        out = o if out is None else out + o
    return kernel.from_blocks(out, b)


def _layer_norm(params: dict[str, Tensor], p: str, x: Tensor, d: int, eps: float = 1e-5) -> Tensor:
    """torch's LayerNorm over the first d (unpadded) coordinates with per-seed weight and bias (S, d);
    x (B, T, Dp) or (S, B, T, Dp) -> (S, B, T, Dp), padded coordinates 0."""
    h = torch.nn.functional.layer_norm(x[..., :d], (d,), eps=eps)  # the affine part differs per seed
    w, b = params[p + "weight"], params[p + "bias"]
    return _pad_to(h * w[:, None, None, :] + b[:, None, None, :], {-1: x.shape[-1]})


def _mlp(params: dict[str, Tensor], p: str, x: Tensor, d_pad: int) -> Tensor:
    """Linear -> GELU -> Linear on every token: x (S, B, T, Dp) -> (S, B, T, Dp); weights (S, out, in)."""
    w1 = _pad_to(params[p + "0.weight"], {-1: d_pad})
    w2 = _pad_to(params[p + "2.weight"], {-2: d_pad})
    b2 = _pad_to(params[p + "2.bias"], {-1: d_pad})
    s_n, b, t, _ = x.shape
    h = torch.baddbmm(params[p + "0.bias"].unsqueeze(1), x.reshape(s_n, b * t, d_pad), w1.transpose(-1, -2))
    out = torch.baddbmm(b2.unsqueeze(1), torch.nn.functional.gelu(h), w2.transpose(-1, -2))
    return out.view(s_n, b, t, d_pad)


def _clip(x: Tensor, clip: float | None) -> Tensor:
    """x clamped to [-clip, clip]; the clamp (and its backward) is skipped when no entry is outside, which
    changes neither value nor gradient. Under a CUDA graph's capture (`icgd.train.graphed`) the clamp is always
    applied: the check reads a value back to the host, which a capture forbids."""
    if clip is None:
        return x
    if x.is_cuda and torch.cuda.is_current_stream_capturing():
        return x.clamp(-clip, clip)
    lo, hi = torch.aminmax(x.detach())
    return x.clamp(-clip, clip) if bool(hi > clip) or bool(lo < -clip) else x


def _linear_update(params: dict[str, Tensor], p: str, ctx: Tensor, x: Tensor, n: int, last: bool, dx: int,
                   d: int, pad: int, normalize: str) -> Tensor:
    """Linear attention update of the tokens x over the context ctx (y-entries only when `last`)."""
    m, u = _multiplied_out(params, p, False, d + pad)  # (S, H, Dp, Dp)
    if last:
        u = u[..., dx:d, :]  # only the y-rows of the update are read out
    scale = 1.0 / n if normalize == "count" else 1.0
    if m.shape[1] == 1:  # one head: products written out with hand-picked layouts, forward and backward
        if x.dim() == 3 and ctx.dim() == 3 and not (x.requires_grad or ctx.requires_grad):
            return _SharedLinearAttention.apply(x, ctx, m[:, 0], u[:, 0], scale)
        s_n = m.shape[0]
        x = x.expand(s_n, *x.shape) if x.dim() == 3 else x
        ctx = ctx.expand(s_n, *ctx.shape) if ctx.dim() == 3 else ctx
        return _LinearAttention.apply(x, ctx, m[:, 0], u[:, 0], scale)
    c = ctx.transpose(-1, -2) @ ctx  # (B, D, D) or (S, B, D, D)
    if scale != 1.0:
        c = c * scale
    # (x M^T) for every seed and head: one large product when x is shared
    if x.dim() == 3:
        y = torch.einsum("btd,shed->shbte", x, m)
        z = torch.einsum("shbte,bef->shbtf", y, c)
    else:
        y = torch.einsum("sbtd,shed->shbte", x, m)
        z = torch.einsum("shbte,sbef->shbtf", y, c)
    return torch.einsum("shbtf,shgf->sbtg", z, u)


class _LinearAttention(torch.autograd.Function):
    """One head of linear attention per seed, O = x M^T C U^T with C = scale * ctx^T ctx per task.

    x (S, B, T, D), ctx (S, B, N, D), m (S, D, D), u (S, G, D) -> (S, B, T, G). The backward is written
    out: it uses that C is symmetric (d ctx = ctx (dC + dC^T), one product) and keeps every operand in a
    layout that MKL's small products handle fast; autograd's generic backward of the same products is
    three times slower than the forward."""

    @staticmethod
    def forward(fctx, x: Tensor, ctx: Tensor, m: Tensor, u: Tensor, scale: float) -> Tensor:  # type: ignore[override]
        s_n, b, t, d = x.shape
        n, g = ctx.shape[-2], u.shape[-2]
        cf = ctx.reshape(s_n * b, n, d)
        c = torch.bmm(cf.transpose(1, 2), cf)  # (S*B, D, D)
        if scale != 1.0:
            c = c * scale
        xf = x.reshape(s_n, b * t, d)
        y = torch.bmm(xf, m.transpose(1, 2))  # (S, B*T, D)
        z = torch.bmm(y.view(s_n * b, t, d), c)  # (S*B, T, D)
        o = torch.bmm(z.view(s_n, b * t, d), u.transpose(1, 2))  # (S, B*T, G)
        fctx.save_for_backward(xf, cf, m, u, c, y, z)
        fctx.scale = scale
        return o.view(s_n, b, t, g)

    @staticmethod
    def backward(fctx, grad: Tensor):  # type: ignore[override]
        xf, cf, m, u, c, y, z = fctx.saved_tensors
        s_n, bt, d = xf.shape
        sb, n, _ = cf.shape
        b, t = sb // s_n, bt // (sb // s_n)
        go = grad.reshape(s_n, bt, -1)
        gu = torch.bmm(go.transpose(1, 2), z.view(s_n, bt, d))
        gz = torch.bmm(go, u).view(sb, t, d)
        gy = torch.bmm(gz, c.transpose(1, 2)).view(s_n, bt, d)
        gm = torch.bmm(gy.transpose(1, 2), xf)
        gx = gc = None
        if fctx.needs_input_grad[0]:
            gx = torch.bmm(gy, m).view(s_n, b, t, d)
        if fctx.needs_input_grad[1]:
            gcs = torch.bmm(y.view(sb, t, d).transpose(1, 2), gz)  # dC (S*B, D, D)
            gcs = gcs + gcs.transpose(1, 2)
            if fctx.scale != 1.0:
                gcs = gcs * fctx.scale
            gc = torch.bmm(cf, gcs).view(s_n, b, n, d)
        return gx, gc, gm, gu, None


class _SharedLinearAttention(torch.autograd.Function):
    """`_LinearAttention` for tokens shared by all seeds (data, no gradient): x (B, T, D), ctx (B, N, D).
    C is computed once per task, x M^T for all seeds in one product, and (x M^T) C for all seeds in one
    product per task."""

    @staticmethod
    def forward(fctx, x: Tensor, ctx: Tensor, m: Tensor, u: Tensor, scale: float) -> Tensor:  # type: ignore[override]
        b, t, d = x.shape
        s_n, g = m.shape[0], u.shape[-2]
        c = torch.bmm(ctx.transpose(1, 2), ctx)  # (B, D, D)
        if scale != 1.0:
            c = c * scale
        xf = x.reshape(b * t, d)
        y = xf @ m.transpose(1, 2).permute(1, 0, 2).reshape(d, s_n * d)  # (B*T, S*D): y[bt, s] = M_s x_bt
        z = torch.bmm(y.view(b, t * s_n, d), c)  # (B, T*S, D)
        zs = z.view(b * t, s_n, d).transpose(0, 1).contiguous()  # (S, B*T, D)
        o = torch.bmm(zs, u.transpose(1, 2))  # (S, B*T, G)
        fctx.save_for_backward(xf, u, c, zs)
        return o.view(s_n, b, t, g)

    @staticmethod
    def backward(fctx, grad: Tensor):  # type: ignore[override]
        xf, u, c, zs = fctx.saved_tensors
        s_n, bt, d = zs.shape
        b = c.shape[0]
        go = grad.reshape(s_n, bt, -1)
        gu = torch.bmm(go.transpose(1, 2), zs)
        gz = torch.bmm(go, u).transpose(0, 1).reshape(b, -1, d)  # (B, T*S, D)
        gy = torch.bmm(gz, c.transpose(1, 2)).view(bt, s_n * d)
        gm = (gy.t() @ xf).view(s_n, d, d)  # dM_s = (dy_s)^T x
        return None, None, gm, gu, None


def lsa_losses(params: dict[str, Tensor], config: StackConfig, context_x: Tensor, context_y: Tensor,
               query_x: Tensor, query_y: Tensor, compiled_ok: bool | None = None,
               heads_compiled: bool | None = None, triton_ok: bool | None = None) -> Tensor:
    """Per-seed training losses (S,): mean over tasks and queries of 0.5 * ||y_hat - y||^2 (the squared-error
    objective of the regression tasks, `icgd.tasks.base`)."""
    pred = lsa_predictions(params, config, context_x, context_y, query_x, compiled_ok=compiled_ok,
                           heads_compiled=heads_compiled, triton_ok=triton_ok)
    return 0.5 * ((pred - query_y) ** 2).sum(-1).mean((-1, -2))
