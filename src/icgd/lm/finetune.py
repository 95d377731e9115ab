"""Finetuning of only the attention key and value projections on the demonstrations (source 003's FT
setting, as the authors' code does it; docs/sources/dai_lmops_code.md section 2).

One epoch over the examples in the order given (the ICL demonstrations' order), one example per plain SGD
step (no momentum, no weight decay, constant learning rate, no clipping), the causal-LM loss averaged over
every predicted token of the formatted example (text and label). Every parameter whose name contains
`k_proj` or `v_proj` is updated (weights, and biases where the model has them); nothing else. The model
stays in eval mode (no dropout: the authors' fairseq models probably trained with dropout 0.1; SmolLM2 has
none). `KVSnapshot` restores the original weights afterwards.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from icgd.lm.record import Recorder

KV_NAMES = ("k_proj", "v_proj")


def kv_parameters(model) -> dict[str, torch.nn.Parameter]:
    """The parameters FT updates: every one whose name contains k_proj or v_proj."""
    out = {n: p for n, p in model.named_parameters() if any(k in n for k in KV_NAMES)}
    if not out:
        raise ValueError(f"{type(model).__name__}: no parameter named k_proj / v_proj")
    return out


class KVSnapshot:
    """Context manager: the key/value projections as they were on entry are restored on exit."""

    def __init__(self, model):
        self.params = kv_parameters(model)

    def __enter__(self) -> "KVSnapshot":
        self.saved = {n: p.detach().clone() for n, p in self.params.items()}
        return self

    def __exit__(self, *exc) -> None:
        with torch.no_grad():
            for n, p in self.params.items():
                p.copy_(self.saved[n])


@dataclass
class FTResult:
    """losses: the loss of each step (before its update); queries[i]: (L, T_i, H*d) the query of example i's
    recorded tokens in the forward of its own step (before its update), when recorded."""

    losses: list[float]
    queries: list[Tensor] | None = None


@torch.no_grad()
def lm_loss(lm, examples: Sequence[list[int]]) -> float:
    """The loss FT minimises, on the model as it is: the causal-LM loss of each example (averaged over its
    predicted tokens), averaged over the examples. Before and after FT it tells whether FT converged."""
    total = 0.0
    for ids in examples:
        x = torch.tensor([ids], device=lm.device)
        total += float(torch.nn.functional.cross_entropy(lm.model(x).logits[0, :-1].float(), x[0, 1:]))
    return total / len(examples)


def finetune_kv(lm, examples: Sequence[list[int]], lr: float, record_from: int | None = None,
                progress: bool = False, query_point: str = "rotary") -> FTResult:
    """One epoch of SGD on the key/value projections, one example (token ids) per step, in order.

    record_from: record the query of each example's tokens from this position on (e.g. after the start
    tokens), for the Kendall metric; None records nothing. query_point: which query ("rotary": the one the
    attention scores with; "projection": before the rotary embedding; `icgd.lm.record`)."""
    from tqdm.auto import tqdm

    if not lr > 0:
        raise ValueError(f"the learning rate must be positive, got {lr}")
    model = lm.model
    kv = kv_parameters(model)
    frozen = {n: p.requires_grad for n, p in model.named_parameters()}
    for n, p in model.named_parameters():
        p.requires_grad_(n in kv)
    opt = torch.optim.SGD(list(kv.values()), lr=lr, momentum=0.0, weight_decay=0.0)
    losses, queries = [], []
    try:
        with torch.enable_grad():
            for ids in tqdm(examples, disable=not progress, desc="finetuning", leave=False):
                if len(ids) < 2:
                    raise ValueError("a finetuning example needs at least two tokens")
                x = torch.tensor([ids], device=lm.device)
                if record_from is not None:
                    with Recorder(model, scores=False, outputs=False, queries=query_point,
                                  implementation=lm.attn_implementation) as rec:
                        logits = model(x).logits
                        queries.append(rec.take()["q"][:, record_from:].cpu())
                else:
                    logits = model(x).logits
                loss = torch.nn.functional.cross_entropy(logits[0, :-1].float(), x[0, 1:])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                losses.append(loss.item())
    finally:
        for n, p in model.named_parameters():
            p.requires_grad_(frozen[n])
            p.grad = None
    return FTResult(losses, queries if record_from is not None else None)
