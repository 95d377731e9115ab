"""Finetuning of only the attention key and value projections on the demonstrations (source 003's FT
setting, as the authors' code does it; docs/sources/dai_lmops_code.md section 2).

One epoch over the examples in the order given (the ICL demonstrations' order), one example per plain SGD
step (no momentum, no weight decay, constant learning rate, no clipping), the causal-LM loss averaged over
every predicted token of the formatted example (text and label). Every parameter whose name contains
`k_proj` or `v_proj` is updated (weights, and biases where the model has them); nothing else. The model
stays in eval mode (no dropout: the authors' fairseq models probably trained with dropout 0.1; SmolLM2 has
none). `KVSnapshot` restores the original weights afterwards.

Two variants for the critics' controls (Deutch et al. 2024; Shen et al. 2024), the same parameters and loss:
- `batch="full"`: full-batch GD, one step on the sum of every example's loss (the first-order equivalent of
  the one-pass SGD above: the same lr times the same gradients, all taken at the starting weights), so the
  order of the examples cannot matter but for the order of a floating-point sum.
- `layer_causal=True`: layer-causal GD (Deutch et al.'s "LCGD", GiilDe/ft-vs-icl
  `struprompting/models/gpt.py` lines 244-282 and `criterions/fs_ft.py` lines 80-92): every layer's input
  is detached, every layer's output is read out through the model's final norm and unembedding (a logit
  lens), and the loss is the sum over layers of these read-outs' losses; so each layer is updated from its
  own read-out only, as information flows in a forward pass.
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
def lm_loss(lm, examples: Sequence[list[int]], layer_causal: bool = False) -> float:
    """The loss FT minimises, on the model as it is: the causal-LM loss of each example (averaged over its
    predicted tokens), averaged over the examples. Before and after FT it tells whether FT converged.
    layer_causal: LCGD's loss instead (the sum over layers of each layer's read-out loss)."""
    loss_of = _layer_causal_loss if layer_causal else _loss
    total = 0.0
    for ids in examples:
        total += float(loss_of(lm.model, torch.tensor([ids], device=lm.device)))
    return total / len(examples)


BATCHES = ("example", "full")


def finetune_kv(lm, examples: Sequence[list[int]], lr: float, record_from: int | None = None,
                progress: bool = False, query_point: str = "rotary", batch: str = "example",
                layer_causal: bool = False) -> FTResult:
    """One epoch of SGD on the key/value projections, one example (token ids) per step, in order
    (batch="full": one step on the summed loss of all the examples; layer_causal: LCGD; see the module doc).

    record_from: record the query of each example's tokens from this position on (e.g. after the start
    tokens), for the Kendall metric; None records nothing. query_point: which query ("rotary": the one the
    attention scores with; "projection": before the rotary embedding; `icgd.lm.record`)."""
    from tqdm.auto import tqdm

    if not lr > 0:
        raise ValueError(f"the learning rate must be positive, got {lr}")
    if batch not in BATCHES:
        raise ValueError(f"batch must be one of {BATCHES}, got {batch!r}")
    model = lm.model
    kv = kv_parameters(model)
    frozen = {n: p.requires_grad for n, p in model.named_parameters()}
    for n, p in model.named_parameters():
        p.requires_grad_(n in kv)
    opt = torch.optim.SGD(list(kv.values()), lr=lr, momentum=0.0, weight_decay=0.0)
    losses, queries = [], []
    if any(len(ids) < 2 for ids in examples):
        raise ValueError("a finetuning example needs at least two tokens")
    loss_of = _layer_causal_loss if layer_causal else _loss
    try:
        with torch.enable_grad():
            opt.zero_grad(set_to_none=True)
            for ids in tqdm(examples, disable=not progress, desc="finetuning", leave=False):
                x = torch.tensor([ids], device=lm.device)
                if record_from is not None:
                    with Recorder(model, scores=False, outputs=False, queries=query_point,
                                  implementation=lm.attn_implementation) as rec:
                        loss = loss_of(model, x)
                        queries.append(rec.take()["q"][:, record_from:].cpu())
                else:
                    loss = loss_of(model, x)
                loss.backward()  # full batch: the gradients add up over the examples
                losses.append(loss.item())
                if batch == "example":
                    opt.step()
                    opt.zero_grad(set_to_none=True)
            if batch == "full":
                opt.step()
    finally:
        for n, p in model.named_parameters():
            p.requires_grad_(frozen[n])
            p.grad = None
    return FTResult(losses, queries if record_from is not None else None)


def _loss(model, x: Tensor) -> Tensor:
    """The causal-LM loss of one example (1, T), averaged over its predicted tokens."""
    return torch.nn.functional.cross_entropy(model(x).logits[0, :-1].float(), x[0, 1:])


def _readout(model):
    """The model's own read-out of a residual stream: its final norm, unembedding and logit soft-cap."""
    norm, head = model.get_decoder().norm, model.get_output_embeddings()
    cap = getattr(model.config, "final_logit_softcapping", None)

    def read(h: Tensor) -> Tensor:
        logits = head(norm(h))
        return logits if cap is None else torch.tanh(logits / cap) * cap
    return read


def _layer_causal_loss(model, x: Tensor) -> Tensor:
    """LCGD's loss of one example: the sum over layers of the loss of each layer's read-out, every layer's
    input detached (so a layer's gradient comes from its own read-out alone)."""
    layers = model.get_decoder().layers
    outputs: list[Tensor] = []

    def detach_input(module, args, kwargs):
        if args:
            return (args[0].detach(), *args[1:]), kwargs
        return args, kwargs | {"hidden_states": kwargs["hidden_states"].detach()}

    def keep_output(module, args, kwargs, output):
        outputs.append(output[0] if isinstance(output, tuple) else output)

    hooks = [h for layer in layers for h in (
        layer.register_forward_pre_hook(detach_input, with_kwargs=True),
        layer.register_forward_hook(keep_output, with_kwargs=True))]
    try:
        model(x)
    finally:
        for h in hooks:
            h.remove()
    if len(outputs) != len(layers):
        raise RuntimeError(f"layer-causal GD saw {len(outputs)} layer outputs for {len(layers)} layers")
    read = _readout(model)
    return sum(torch.nn.functional.cross_entropy(read(h)[0, :-1].float(), x[0, 1:]) for h in outputs)
