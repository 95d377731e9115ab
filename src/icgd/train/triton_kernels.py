"""The Triton kernels of `icgd.train.triton_attention` (read its doc): one program per seed and task.

Not imported as a module of the package: `triton_attention` executes this file under the name it needs, once
with Triton's interpreter on (for CPU tensors: what TRITON_INTERPRET=1 selects, decided when `triton.jit`
runs) and once off (compiled for CUDA), so that both can live in one process.

Names: x the task's tokens (TP x DP, zero-padded), xc its context rows (rows >= N zeroed), mm = M, uu = U,
y_t = M x_t, z_t = the attended context (C y_t, or sum_i w_ti x_i), o_t = U z_t; `sel` (DP x GP) picks the
residual coordinates G0 .. G0 + G of a token (x @ sel, exact). consts holds scale, lam and clip in the
tokens' dtype (a scalar argument would be float32). Every product runs in IEEE precision (never TF32).
"""

import triton
import triton.language as tl


# the reductions by their combining functions (tl.max and tl.sum are Triton-library functions, compiled when
# triton.language was imported, which the interpreter cannot call from a kernel of its own)
@triton.jit
def _maximum(a, b):
    return tl.maximum(a, b)


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def load_task(tok, m, u, consts, B, T, D, G, N, G0, tok_seed_stride,
              TP: tl.constexpr, DP: tl.constexpr, GP: tl.constexpr, SOFTMAX: tl.constexpr):
    """The task's tokens and weights, and its forward pass up to o (before the residual)."""
    pid = tl.program_id(0)
    s = pid // B
    b = pid % B
    rows = tl.arange(0, TP)
    cols = tl.arange(0, DP)
    gcols = tl.arange(0, GP)
    x = tl.load(tok + s * tok_seed_stride + b * T * D + rows[:, None] * D + cols[None, :],
                mask=(rows[:, None] < T) & (cols[None, :] < D), other=0.0)
    mm = tl.load(m + s * D * D + cols[:, None] * D + cols[None, :],
                 mask=(cols[:, None] < D) & (cols[None, :] < D), other=0.0)
    uu = tl.load(u + s * G * D + gcols[:, None] * D + cols[None, :],
                 mask=(gcols[:, None] < G) & (cols[None, :] < D), other=0.0)
    scale = tl.load(consts)
    is_ctx = rows < N
    xc = tl.where(is_ctx[:, None], x, 0.0)
    y = tl.dot(x, tl.trans(mm), input_precision="ieee")  # (TP, DP)
    if SOFTMAX:
        e = tl.dot(y, tl.trans(xc), input_precision="ieee")  # (TP, TP): scores x_i . M x_t
        e = tl.where(is_ctx[None, :], e, float("-inf"))
        e = tl.exp(e - tl.reduce(e, 1, _maximum)[:, None])
        p = e / tl.reduce(e, 1, _add)[:, None]
        c = p  # the softmax weights, kept for the backward
        z = tl.dot(p * scale, xc, input_precision="ieee")
    else:
        c = tl.dot(tl.trans(xc), xc, input_precision="ieee") * scale  # (DP, DP), symmetric
        z = tl.dot(y, c, input_precision="ieee")
    o = tl.dot(z, tl.trans(uu), input_precision="ieee")  # (TP, GP)
    sel = ((cols[:, None] == gcols[None, :] + G0) & (gcols[None, :] < G)).to(x.dtype)
    return s, b, rows, cols, gcols, x, xc, is_ctx, mm, uu, scale, y, c, z, o, sel



@triton.jit
def forward(tok, m, u, out, consts, B, T, D, G, N, Q0, Q1, G0, tok_seed_stride,
            TP: tl.constexpr, DP: tl.constexpr, GP: tl.constexpr, SOFTMAX: tl.constexpr, RESIDUAL: tl.constexpr,
            CLIP: tl.constexpr):
    """out (S, B, Q1 - Q0, G): the query rows' attention output, or their whole residual layer."""
    s, b, rows, cols, gcols, x, xc, is_ctx, mm, uu, scale, y, c, z, o, sel = load_task(
        tok, m, u, consts, B, T, D, G, N, G0, tok_seed_stride, TP, DP, GP, SOFTMAX)
    if RESIDUAL:
        o = tl.dot(x, sel, input_precision="ieee") + tl.load(consts + 1) * o
        if CLIP:
            clip = tl.load(consts + 2)
            o = tl.minimum(tl.maximum(o, -clip), clip)
    is_q = (rows >= Q0) & (rows < Q1)
    tl.store(out + (s * B + b) * (Q1 - Q0) * G + (rows[:, None] - Q0) * G + gcols[None, :], o,
             mask=is_q[:, None] & (gcols[None, :] < G))



@triton.jit
def backward(tok, m, u, gout, gtok, gm, gu, consts, B, T, D, G, N, Q0, Q1, G0, tok_seed_stride,
             TP: tl.constexpr, DP: tl.constexpr, GP: tl.constexpr, SOFTMAX: tl.constexpr, RESIDUAL: tl.constexpr,
             CLIP: tl.constexpr, WANT_GTOK: tl.constexpr):
    """gtok (S, B, T, D) when WANT_GTOK; gm (S, B, D, D) and gu (S, B, G, D), each task's part of the weight
    gradients (the caller sums over tasks)."""
    s, b, rows, cols, gcols, x, xc, is_ctx, mm, uu, scale, y, c, z, o, sel = load_task(
        tok, m, u, consts, B, T, D, G, N, G0, tok_seed_stride, TP, DP, GP, SOFTMAX)
    is_q = (rows >= Q0) & (rows < Q1)
    task = s * B + b
    go = tl.load(gout + task * (Q1 - Q0) * G + (rows[:, None] - Q0) * G + gcols[None, :],
                 mask=is_q[:, None] & (gcols[None, :] < G), other=0.0)  # (TP, GP), 0 off the query rows
    gx = x * 0.0  # not tl.zeros: a Triton-library function (see _maximum)
    if RESIDUAL:
        lam = tl.load(consts + 1)
        if CLIP:
            clip = tl.load(consts + 2)
            v = tl.dot(x, sel, input_precision="ieee") + lam * o
            go = tl.where((v >= -clip) & (v <= clip), go, 0.0)  # torch.clamp's gradient
        gx += tl.dot(go, tl.trans(sel), input_precision="ieee")
        go = go * lam
    gu_task = tl.dot(tl.trans(go), z, input_precision="ieee")  # (GP, DP)
    gz = tl.dot(go, uu, input_precision="ieee")  # (TP, DP)
    if SOFTMAX:
        p = c
        gw = tl.dot(gz, tl.trans(xc), input_precision="ieee") * scale  # d loss / d p
        gxc = tl.dot(tl.trans(p * scale), gz, input_precision="ieee")
        ge = p * (gw - tl.reduce(gw * p, 1, _add)[:, None])
        gy = tl.dot(ge, xc, input_precision="ieee")
        gxc += tl.dot(tl.trans(ge), y, input_precision="ieee")
    else:
        gy = tl.dot(gz, c, input_precision="ieee")  # C is symmetric
        gc = tl.dot(tl.trans(y), gz, input_precision="ieee")
        gxc = tl.dot(xc, gc + tl.trans(gc), input_precision="ieee") * scale
    gm_task = tl.dot(tl.trans(gy), x, input_precision="ieee")  # (DP, DP)
    tl.store(gm + task * D * D + cols[:, None] * D + cols[None, :], gm_task,
             mask=(cols[:, None] < D) & (cols[None, :] < D))
    tl.store(gu + task * G * D + gcols[:, None] * D + cols[None, :], gu_task,
             mask=(gcols[:, None] < G) & (cols[None, :] < D))
    if WANT_GTOK:
        gx += tl.dot(gy, mm, input_precision="ieee") + tl.where(is_ctx[:, None], gxc, 0.0)
        tl.store(gtok + task * T * D + rows[:, None] * D + cols[None, :], gx,
                 mask=(rows[:, None] < T) & (cols[None, :] < D))
