"""Read-offs of trained attention layers: the algorithm a one-head LSA implements (source 000, Prop. 1,
A.3, A.10; source 001), and repeated application of a layer beside repeated GD steps.

All work on one-head (or head-summed) products: W_KQ = sum_h W_K,h^T W_Q,h and W_PV = sum_h P_h W_V,h,
(D, D) each, D = Dx + Dy, in the dtype and device of the weights.
"""

from __future__ import annotations

import torch
from torch import Tensor

from icgd.core.episodes import Episodes
from icgd.core.metrics import query_loss
from icgd.learners.constructions import gd_weights, gdpp_weights
from icgd.learners.explicit import GD
from icgd.learners.transformer import TransformerLearner
from icgd.nn.attention import AttentionConfig, attention_products
from icgd.nn.stack import Stack, StackConfig


def products(stack: Stack, block: int = 0) -> tuple[Tensor, Tensor]:
    """(W_KQ, W_PV) of block `block`, summed over its heads: (D, D) each, detached."""
    a = stack.layers[block].attn
    kq, pv = attention_products(a.w_q, a.w_k, a.w_v, a.w_o)
    return kq.sum(0).detach(), pv.sum(0).detach()


def stack_from_products(kq: Tensor, pv: Tensor, n_layers: int = 1, recurrent: bool = False,
                        dampening: float = 1.0) -> Stack:
    """A one-head LSA (float64) whose products W_K^T W_Q and P W_V are `kq` and `pv` (W_K = P = I)."""
    d = kq.shape[0]
    cfg = StackConfig(attention=AttentionConfig(d_model=d), n_layers=n_layers, recurrent=recurrent,
                      dampening=dampening)
    st = Stack(cfg, dtype=torch.float64, device=kq.device)
    eye = torch.eye(d, dtype=torch.float64, device=kq.device)[None]
    with torch.no_grad():
        for blk in st.layers:
            blk.attn.w_q.copy_(kq[None])
            blk.attn.w_k.copy_(eye)
            blk.attn.w_v.copy_(pv[None])
            blk.attn.w_o.copy_(eye)
    return st


def with_layer_products(stack: Stack, layers: list[tuple[Tensor, Tensor]]) -> Stack:
    """A copy of a one-head stack (its clipping, dampening, everything else kept) whose block k has the
    products layers[k] = (W_KQ, W_PV), (D, D) each, with W_K = P = I."""
    import copy

    if len(layers) != len(stack.layers):
        raise ValueError(f"{len(layers)} products for a stack of {len(stack.layers)} blocks")
    out = copy.deepcopy(stack)
    with torch.no_grad():
        for blk, (kq, pv) in zip(out.layers, layers):
            a = blk.attn
            if a.w_q.shape[0] != 1 or a.w_q.shape[1] != kq.shape[0]:
                raise ValueError("with_layer_products needs one head with W_Q of shape (1, D, D)")
            eye = torch.eye(kq.shape[0], dtype=a.w_q.dtype, device=a.w_q.device)[None]
            a.w_q.copy_(kq[None])
            a.w_k.copy_(eye)
            a.w_v.copy_(pv[None])
            a.w_o.copy_(eye)
    return out


def rescaled(kq: Tensor, pv: Tensor, dx: int) -> tuple[Tensor, Tensor, float]:
    """(W_KQ / beta, W_PV * beta, beta), beta the mean of the first Dx diagonal entries of W_KQ (A.3):
    the scale the two products can trade without changing the layer."""
    beta = float(torch.diagonal(kq)[:dx].mean())
    return kq / beta, pv * beta, beta


def interpolated(stack: Stack, kq_gd: Tensor, pv_gd: Tensor, dx: int, alpha: float = 0.5) -> TransformerLearner:
    """Fig. 2's interpolated model: (1 - alpha) * the GD construction + alpha * the trained layer's products
    rescaled as Prop. 1's (`rescaled`); alpha = 0.5 is the authors' midpoint (constructed_token_setup.ipynb,
    interpolate_weights, raw lines 482-533)."""
    kq_r, pv_r, _ = rescaled(*products(stack), dx)
    return TransformerLearner(stack_from_products((1 - alpha) * kq_gd + alpha * kq_r,
                                                  (1 - alpha) * pv_gd + alpha * pv_r))


def _layer_products(w: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
    """(W_KQ, W_PV) of a constructed one-head layer's weights."""
    return w["w_k"][0].T @ w["w_q"][0], w["w_o"][0] @ w["w_v"][0]


def gd_products(dx: int, dy: int, eta: float, n_context: int) -> tuple[Tensor, Tensor]:
    """(W_KQ, W_PV) of the Prop. 1 construction of one GD step with learning rate eta (float64, CPU)."""
    return _layer_products(gd_weights(dx, dy, eta, n_context))


def gdpp_products(dx: int, dy: int, eta: float, gamma: float, n_context: int) -> tuple[Tensor, Tensor]:
    """(W_KQ, W_PV) of the A.10 construction of one GD++ step (float64, CPU)."""
    return _layer_products(gdpp_weights(dx, dy, eta, gamma, n_context))


def implicit_eta(kq: Tensor, pv: Tensor, dx: int, n_context: int) -> float:
    """The learning rate a trained 1-layer LSA implements: -N times the y-y entry of the rescaled P W_V
    (the construction's is -eta / N, Prop. 1)."""
    _, pv_r, _ = rescaled(kq, pv, dx)
    return float(-n_context * pv_r[dx, dx])


def implicit_preconditioner(stack: Stack, dx: int, n_context: int) -> Tensor:
    """The preconditioner P (Dx, Dx) of the one step a trained one-layer, one-output LSA implements,
    y_q = x_q^T P (1/N) sum_i y_i x_i, through both of the layer's paths that are linear in the context's y:

        P = -N (W_PV[y, y] W_KQ[x, x]^T + W_KQ[y, x]^T W_PV[y, x])

    (the first is Prop. 1's: -eta / N and I give eta I; the second, an outer product, is how a layer whose
    output reads the context's x carries y through its keys). Terms even in y (y_i^2, x_i x_i^T), which
    vanish at the optimum on centred tasks, are not read. Needs Dy = 1 (tokens of size Dx + 1)."""
    kq, pv = products(stack)
    if kq.shape[0] != dx + 1:
        raise ValueError(f"implicit_preconditioner reads one-output layers: tokens of size {dx + 1}, got {kq.shape[0]}")
    return -n_context * (pv[dx, dx] * kq[:dx, :dx].T + torch.outer(kq[dx, :dx], pv[dx, :dx]))


def gamma_of(stack: Stack, dx: int) -> float:
    """The GD++ gamma a trained one-head block implements: its x-update is about
    W_PV[x, x] (X X^T) W_KQ[x, x] x = -gamma X X^T x, so gamma = -mean diag(W_PV[x,x]) * mean diag(W_KQ[x,x])."""
    kq, pv = products(stack)
    return float(-torch.diagonal(pv)[:dx].mean() * torch.diagonal(kq)[:dx].mean())


# ------------------------------------------------------------------------------- repeated application
def divergence_cap(ep: Episodes) -> float:
    """A task's loss has diverged when it is not finite or above this: 1000 times the zero predictor's mean
    loss on `ep`."""
    return 1000 * float(0.5 * (ep.query_y ** 2).sum(-1).mean())


def tf_repeat_losses(kq: Tensor, pv: Tensor, lam: float, ep: Episodes, repeats: int,
                     update: str = "all") -> Tensor:
    """Per-task loss (repeats, B) after each of `repeats` applications of the layer with products
    (kq, pv), dampened by lam: E <- E + lam * LSA(E).

    update: "all" moves every channel of the tokens (source 001's roll-out); "y" moves only the y channels
    and keeps the x parts fixed, as the official code of source 000 does when it repeats the layer
    (`y_update=True` in its constructed_token_setup notebook): the x rows of P W_V are set to 0."""
    if update not in ("all", "y"):
        raise ValueError(f"update must be 'all' or 'y', not {update!r}")
    if update == "y":
        pv = pv.clone()
        pv[:ep.dx] = 0
    st = stack_from_products(kq, pv, n_layers=repeats, recurrent=True, dampening=lam)
    cache: dict[str, Tensor] = {}
    # only the residual stream is read: caching every hook point would also keep the attention weights of
    # every step (measured on 10,000 tasks, 50 steps, 1 thread: 3.0 s with them, 2.2 s without)
    with torch.no_grad(), st.hooks.caching(cache, "layers.*.resid_post"):
        TransformerLearner(st).predict(ep)
    n, dx = ep.n_context, ep.dx
    return torch.stack([query_loss(-cache[f"layers.{t}.resid_post"][:, n:, dx:], ep.query_y)
                        for t in range(repeats)])


def gd_repeat_losses(eta: float, ep: Episodes, repeats: int) -> Tensor:
    """Per-task loss (repeats, B) after each of `repeats` GD steps with learning rate eta from W0 = 0."""
    return torch.stack([query_loss(ep.query_x @ w.transpose(1, 2), ep.query_y)
                        for w in GD(eta, repeats).trajectory(ep)])
