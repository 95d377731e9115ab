"""Functional gradient descent with a kernel (source 002, eqs. 1 and 4), as an explicit learner.

From a constant start p_0 (0 for real-valued outcomes, eq. 1; 1/C for categorical ones, eq. 4), layer l
updates the prediction at every point x, the context points included:

    p_{l+1}(x) = p_l(x) + (eta_l / n) * sum_i (y_i - p_l(x_i)) kappa(x_i, x)          (kernel head)
                        + (beta_l / n) * sum_i (y_i - p_l(x_i))                       (constant head)

with eta_l, beta_l one learning rate per output entry (per category). n is the context size the rates
were set for (`n_scale`; None: the episodes' own N). For a normalised kernel (softmax) the kernel weights
are exp(x_i.x / s) normalised over the context and the constant head is the mean over the context, so
neither divides by n: that is what makes softmax invariant to the context size. `icgd.learners.constructions.
kernel_gd_construction` builds the attention stack that computes exactly this.

The learning rates and the kernel parameters are nn.Parameters: as a model (config kind "kernel_gd",
the source's "GD" model) only they are learnt.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from icgd.core.episodes import Episodes, ShapeError, require_episodes
from icgd.learners.constructions import constant_head_rates, rates_per_layer
from icgd.nn.kernels import get_kernel


class KernelGD(nn.Module):
    """L steps of kernel functional GD on the C-1 (or Dy) outputs, learning rates per layer and entry.

    etas, biases: a number, (L,) or (L, Dy) (biases None: no constant head; "tied": the constant head uses
    the kernel head's rates, as in eq. 1); kernel_params: the kernel's
    parameters (e.g. [s]), shared by the layers; prior: p_0; n_scale: the n of eta / n (None: the
    episodes' N; ignored by normalised kernels). predict(episodes) -> (B, Q, Dy).
    """

    def __init__(self, kernel: str, etas: Any, n_layers: int = 1, dy: int = 1, biases: Any = None,
                 kernel_params: Sequence[float] | None = None, kernel_options: dict[str, float] | None = None,
                 prior: float = 0.0, n_scale: int | None = None, learn_kernel_params: bool = True,
                 dtype: torch.dtype = torch.float64, device: torch.device | str | None = None,
                 name: str = "kernel_gd") -> None:
        super().__init__()
        self.kernel = get_kernel(kernel)
        self.kernel_options = dict(kernel_options or {})
        self.n_layers, self.dy, self.prior, self.n_scale, self.name = n_layers, dy, float(prior), n_scale, name
        kw = {"dtype": dtype, "device": device}
        self.etas = nn.Parameter(rates_per_layer(etas, n_layers, dy, "etas").to(**kw))
        rates = constant_head_rates(biases, n_layers, dy)
        self.tied = isinstance(rates, str)
        self.biases = nn.Parameter(rates.to(**kw)) if isinstance(rates, torch.Tensor) else None
        values = self.kernel.param_init if kernel_params is None else tuple(float(v) for v in kernel_params)
        if len(values) != self.kernel.n_params:
            raise ValueError(f"the {self.kernel.name} kernel has {self.kernel.n_params} parameter(s), "
                             f"got {len(values)}")
        self.kernel_params = nn.Parameter(torch.tensor(values, **kw).reshape(1, -1),
                                          requires_grad=learn_kernel_params and self.kernel.n_params > 0)

    def similarities(self, query_x: Tensor, context_x: Tensor) -> Tensor:
        """Kernel weights (B, T, N) of points query_x (B, T, Dx) on the context (B, N, Dx): kappa(x_i, x),
        normalised over the context for a softmax-like kernel."""
        s = self.kernel.fn(query_x.unsqueeze(1), context_x.unsqueeze(1), self.kernel_params.to(query_x),
                           self.kernel_options).squeeze(1)
        return torch.softmax(s, dim=-1) if self.kernel.normalized else s

    def trajectory(self, ep: Episodes) -> list[Tensor]:
        """Query predictions (B, Q, Dy) after each of the L layers."""
        if ep.dy != self.dy:
            raise ShapeError(f"episodes have Dy={ep.dy}, the learner was built for Dy={self.dy}")
        cx, cy = ep.context_x, ep.context_y
        n = ep.n_context if (self.n_scale is None or self.kernel.normalized) else self.n_scale
        k_ctx, k_q = self.similarities(cx, cx), self.similarities(ep.query_x, cx)
        etas = self.etas.to(cx)
        biases = etas if self.tied else (None if self.biases is None else self.biases.to(cx))
        p_ctx = cx.new_full(cy.shape, self.prior)
        p_q = cx.new_full((ep.batch_size, ep.n_queries, self.dy), self.prior)
        out = []
        for layer in range(self.n_layers):
            r = cy - p_ctx                                                      # (B, N, Dy) residuals
            scale = 1.0 if self.kernel.normalized else 1.0 / n
            d_ctx, d_q = scale * (k_ctx @ r) * etas[layer], scale * (k_q @ r) * etas[layer]
            if biases is not None:
                const = r.mean(1, keepdim=True) if self.kernel.normalized else r.sum(1, keepdim=True) / n
                d_ctx, d_q = d_ctx + biases[layer] * const, d_q + biases[layer] * const
            p_ctx, p_q = p_ctx + d_ctx, p_q + d_q
            out.append(p_q)
        return out

    def predict(self, ep: Episodes) -> Tensor:
        """Predictions (B, Q, Dy) after the L layers."""
        require_episodes(ep, f"{self.name}.predict")
        return self.trajectory(ep)[-1]

    def forward(self, ep: Episodes) -> Tensor:
        return self.predict(ep)

    def describe(self) -> dict[str, Any]:
        return {"learner": self.name, "kernel": self.kernel.name, "steps": self.n_layers,
                "etas": self.etas.detach().cpu().tolist(),
                "biases": "tied" if self.tied else (None if self.biases is None
                                                    else self.biases.detach().cpu().tolist()),
                "kernel_params": self.kernel_params.detach().reshape(-1).cpu().tolist(),
                "prior": self.prior, "n_scale": self.n_scale}
