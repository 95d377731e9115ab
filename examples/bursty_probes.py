"""Probes of why the vanilla causal LM does not learn bursty few-shot classification from scratch.

    python examples/bursty_probes.py LAYOUT [--steps 2000] [--batch 64] [--shots 2] [--heads 2] [--layers 2]

trains one vanilla `CausalLM` (2 x 64, the quick shape of momentum-fewshot; Adam 1e-3, cosine with 5% warm-up,
clipping 10, seed 0) on sequences of 64 classes (one token each) and 16 labels drawn afresh per sequence, and
prints, every tenth of the run, the query accuracy on 1024 held-out bursty sequences of the same shots (each
item's class drawn among 4, as `BurstyFewShot`). The layouts of the training sequences:

- `bursty`: as the test (`BurstyFewShot(order="random")`);
- `blocks`: `shots` blocks, each every class once (`order="blocks"`: at one shot no class repeats);
- `first-block`: every class once, then the other items' classes drawn among the 4 (recall's layout);
- `mix-blocks`: half `bursty`, half `first-block`, sequence by sequence;
- `mix-iid`: half `bursty`, half 8 distinct classes once each (Chan et al.'s non-bursty sequences);
- `warm`: `blocks` at one shot for the first half of the steps, then `bursty` (momentum-fewshot's warm start).

This is a script for the docs' probe table (docs/sources/momentum.md), not the library: it draws its own batches so
that it can mix layouts within a batch, which `TrainConfig` does not do.
"""

from __future__ import annotations

import argparse
import math

import torch

from icgd.learners.causal_lm import CausalLM, lm_stack_config
from icgd.nn.attention import AttentionOptions
from icgd.tasks import BurstyFewShot

CLASSES, LABELS, WAYS = 64, 16, 4
LAYOUTS = ("bursty", "blocks", "first-block", "mix-blocks", "mix-iid", "warm")


def task(shots: int, order: str = "random", ways: int = WAYS, query_only: bool = False) -> BurstyFewShot:
    return BurstyFewShot(n_classes=CLASSES, exemplars=1, n_labels=LABELS, ways=ways, shots=shots, order=order,
                         score_context=not query_only)


def first_block(batch: int, shots: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Every class once, then the rest drawn among the `WAYS`; the query's class among them."""
    n = WAYS * shots
    classes = torch.rand(batch, CLASSES, generator=g).argsort(-1)[:, :WAYS]
    labels = torch.rand(batch, LABELS, generator=g).argsort(-1)[:, :WAYS] + CLASSES
    slots = torch.cat([torch.rand(batch, WAYS, generator=g).argsort(-1),
                       torch.randint(0, WAYS, (batch, n - WAYS + 1), generator=g)], 1)
    seq = torch.stack([classes.gather(1, slots), labels.gather(1, slots)], -1).reshape(batch, -1)
    x, y = seq[:, :-1], seq[:, 1:].clone()
    seen = (slots[:, :, None] == slots[:, None, :]).tril(-1).any(-1)
    scored = torch.zeros_like(y, dtype=torch.bool)
    scored[:, 0::2] = seen
    return x, torch.where(scored, y, -1)


def batch_of(layout: str, batch: int, shots: int, step: int, steps: int, g: torch.Generator):
    def ids(t: BurstyFewShot):
        ep = t.sample(batch, g)
        return ep.query_x[..., 0].long(), ep.query_y[..., 0].long()

    if layout == "warm":
        return ids(task(1, "blocks") if step < steps // 2 else task(shots))
    if layout == "blocks":
        return ids(task(shots, "blocks"))
    if layout == "first-block":
        return first_block(batch, shots, g)
    if layout.startswith("mix"):
        xb, yb = ids(task(shots))
        xo, yo = first_block(batch, shots, g) if layout == "mix-blocks" else ids(task(1, "blocks", WAYS * shots))
        keep = (torch.rand(batch, generator=g) < 0.5)[:, None]
        return torch.where(keep, xb, xo), torch.where(keep, yb, yo)
    return ids(task(shots))


def main(argv: list[str] | None = None) -> list[float]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("layout", choices=LAYOUTS)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--shots", type=int, default=2)
    p.add_argument("--heads", type=int, default=2)
    p.add_argument("--layers", type=int, default=2)
    a = p.parse_args(argv)
    g = torch.Generator().manual_seed(0)
    model = CausalLM(CLASSES + LABELS, lm_stack_config(64, a.layers, a.heads, 4, AttentionOptions()), generator=g)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    warm = max(1, a.steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(s, a.steps) / a.steps)))
    test = task(a.shots, query_only=True).sample(1024, torch.Generator().manual_seed(99))
    tx, ty = test.query_x[..., 0].long(), test.query_y[..., 0].long()
    accs = []
    for step in range(a.steps):
        x, y = batch_of(a.layout, a.batch, a.shots, step, a.steps, g)
        loss = torch.nn.functional.cross_entropy(model.logits(x).flatten(0, 1), y.flatten(), ignore_index=-1)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        opt.step()
        sched.step()
        if (step + 1) % max(1, a.steps // 10) == 0:
            with torch.no_grad():
                acc = float((model.logits(tx)[:, -1].argmax(-1) == ty[:, -1]).float().mean())
            accs.append(acc)
            print(f"{a.layout} step {step + 1}: train loss {loss.item():.3f}, held-out bursty query accuracy "
                  f"{acc:.3f}", flush=True)
    return accs


if __name__ == "__main__":
    main()
