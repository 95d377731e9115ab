"""Adam / AdamW on seed-stacked weights (`torch.optim`), the learning-rate schedule (`LambdaLR`) and
per-seed gradient clipping.

Every weight is one tensor (S, ...) over the S seeds of a run; Adam's update is elementwise, so every seed
follows exactly the trajectory it would follow alone. Only the clipping of each seed's global gradient norm
needs the seed dimension, so it is the one part written here.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def lr_factor(cfg, step: int, total: int) -> float:
    """The schedule: the learning rate of (0-based) step `step` of `total`, as a multiple of cfg.lr:
    linear warm-up over cfg.warmup_steps, then constant, cosine or linear decay to 0."""
    if cfg.warmup_steps and step < cfg.warmup_steps:
        return (step + 1) / cfg.warmup_steps
    frac = (step - cfg.warmup_steps) / max(1, total - cfg.warmup_steps)
    if cfg.schedule == "cosine":
        return 0.5 * (1 + math.cos(math.pi * frac))
    if cfg.schedule == "linear":
        return 1 - frac
    return 1.0


class Adam:
    """torch.optim.Adam (L2 weight decay) or AdamW (decoupled) on the stacked weights `params[k]` for k in
    `names`, with a LambdaLR schedule over `total` steps; `t` counts the steps taken. Its state is saved in a
    run's checkpoint as optim.m.* / optim.v.* (Adam's first and second moments) and optim_t."""

    def __init__(self, params: dict[str, Tensor], names: list[str], cfg, total: int = 1) -> None:
        self.cfg, self.names, self.total, self.t = cfg, names, total, 0
        self.tensors = [params[k] for k in names]
        kind = torch.optim.AdamW if cfg.name == "adamw" else torch.optim.Adam
        # foreach: the same arithmetic as the per-tensor loop (bit-identical, tested), one call for all
        # weights: 0.39 against 0.53 ms per step for 20 small weights on one CPU thread. fused=True
        # (0.10 ms) rounds differently (1 ulp) and would move every trained number, so it is not used.
        self.opt = kind(self.tensors, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps,
                        weight_decay=cfg.weight_decay, foreach=True)
        self.schedule = torch.optim.lr_scheduler.LambdaLR(self.opt, lambda i: lr_factor(cfg, i, total))

    def lr_at(self, step: int, total: int | None = None) -> float:
        """The learning rate of (0-based) step `step`."""
        return self.cfg.lr * lr_factor(self.cfg, step, self.total if total is None else total)

    @torch.no_grad()
    def step(self, grads: dict[str, Tensor]) -> None:
        """One update with these gradients (the learning rate of step `t`), then the schedule moves on."""
        for k, p in zip(self.names, self.tensors):
            p.grad = grads[k]
        self.opt.step()
        self.schedule.step()
        for p in self.tensors:
            p.grad = None
        self.t += 1

    def state(self) -> dict[str, Tensor]:
        out = {}
        for k, p in zip(self.names, self.tensors):
            st = self.opt.state.get(p, {})
            out[f"optim.m.{k}"] = st.get("exp_avg", torch.zeros_like(p))
            out[f"optim.v.{k}"] = st.get("exp_avg_sq", torch.zeros_like(p))
        return out

    def load_state(self, tensors: dict[str, Tensor], t: int) -> None:
        """Continue from step `t` with the saved moments."""
        for k, p in zip(self.names, self.tensors):
            self.opt.state[p] = {"step": torch.tensor(float(t)),
                                 "exp_avg": tensors[f"optim.m.{k}"].to(p).clone(),
                                 "exp_avg_sq": tensors[f"optim.v.{k}"].to(p).clone()}
        self.t = t
        self.schedule.last_epoch = t
        for group in self.opt.param_groups:
            group["lr"] = self.lr_at(t)


def clip_per_seed(grads: dict[str, Tensor], max_norm: float | None) -> Tensor:
    """Scale each seed's gradients to global norm <= max_norm; returns the norms before clipping (S,)."""
    sq = sum(g.pow(2).reshape(g.shape[0], -1).sum(1) for g in grads.values())
    norms = sq.sqrt()
    if max_norm is not None:
        scale = (max_norm / (norms + 1e-6)).clamp(max=1.0)
        for g in grads.values():
            g.mul_(scale.view(-1, *([1] * (g.dim() - 1))))
    return norms
