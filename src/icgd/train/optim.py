"""Adam / AdamW on seed-stacked weights, the learning-rate schedule and per-seed gradient clipping.

Every weight is one tensor (S, ...) over the S seeds of a run; Adam's update is elementwise, so every seed
follows exactly the trajectory it would follow alone. Only the clipping of each seed's global gradient norm
needs the seed dimension.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


class Adam:
    """Adam / AdamW on stacked weights; elementwise, so every seed is optimised independently."""

    def __init__(self, params: dict[str, Tensor], names: list[str], cfg) -> None:
        self.cfg, self.names, self.t = cfg, names, 0
        self.m = {k: torch.zeros_like(params[k]) for k in names}
        self.v = {k: torch.zeros_like(params[k]) for k in names}

    def lr_at(self, step: int, total: int) -> float:
        c = self.cfg
        if c.warmup_steps and step < c.warmup_steps:
            return c.lr * (step + 1) / c.warmup_steps
        frac = (step - c.warmup_steps) / max(1, total - c.warmup_steps)
        if c.schedule == "cosine":
            return c.lr * 0.5 * (1 + math.cos(math.pi * frac))
        if c.schedule == "linear":
            return c.lr * (1 - frac)
        return c.lr

    @torch.no_grad()
    def step(self, params: dict[str, Tensor], grads: dict[str, Tensor], lr: float) -> None:
        c = self.cfg
        self.t += 1
        bc1, bc2 = 1 - c.beta1 ** self.t, 1 - c.beta2 ** self.t
        for k in self.names:
            p, g, m, v = params[k], grads[k], self.m[k], self.v[k]
            if c.weight_decay and c.name == "adam":
                g = g + c.weight_decay * p
            if c.weight_decay and c.name == "adamw":
                p.mul_(1 - lr * c.weight_decay)
            m.mul_(c.beta1).add_(g, alpha=1 - c.beta1)
            v.mul_(c.beta2).addcmul_(g, g, value=1 - c.beta2)
            p.addcdiv_(m / bc1, (v / bc2).sqrt_().add_(c.eps), value=-lr)

    def state(self) -> dict[str, Tensor]:
        return {f"optim.m.{k}": self.m[k] for k in self.names} | {f"optim.v.{k}": self.v[k] for k in self.names}

    def load_state(self, tensors: dict[str, Tensor], t: int) -> None:
        for k in self.names:
            self.m[k].copy_(tensors[f"optim.m.{k}"])
            self.v[k].copy_(tensors[f"optim.v.{k}"])
        self.t = t


def clip_per_seed(grads: dict[str, Tensor], max_norm: float | None) -> Tensor:
    """Scale each seed's gradients to global norm <= max_norm; returns the norms before clipping (S,)."""
    sq = sum(g.pow(2).reshape(g.shape[0], -1).sum(1) for g in grads.values())
    norms = sq.sqrt()
    if max_norm is not None:
        scale = (max_norm / (norms + 1e-6)).clamp(max=1.0)
        for g in grads.values():
            g.mul_(scale.view(-1, *([1] * (g.dim() - 1))))
    return norms
