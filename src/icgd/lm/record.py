"""Named hook points inside a Hugging Face causal LM's attention layers (source 003), captured through
`transformers`' own mechanisms: an attention function registered with `AttentionInterface` (it records
the pre-softmax scores, then calls the model's own attention) and forward hooks on each attention module
and its query projection. The model itself is not re-implemented.

Hook points, for layer l (what `Recorder.take()` returns, one tensor per point stacked over layers):
- `scores_last`: (L, H, K) pre-softmax scaled scores q_t . k_j * scaling of the forward's last token t to
  every key j (the cached prefix included), before the causal mask, as the source's code records them;
- `out_last`: (L, D) the attention module's output (after the output projection, before the residual) at
  the last token;
- `q`: (L, T, H*d) the query projection's output, before rotary position embedding, at every position of
  the forward (only when `queries=True`).
Batch size 1.
"""

from __future__ import annotations

import sys
from typing import Any

import torch
from torch import Tensor

IMPLEMENTATION = "icgd_record"


def _recording_attention(module, query: Tensor, key: Tensor, value: Tensor, attention_mask, scaling: float,
                         dropout: float = 0.0, **kw: Any):
    """query (B, H, T, d), key (B, H_kv, K, d): records the last row of scores, then runs the model's own
    attention function on the same arguments."""
    rec = getattr(module, "_icgd_recorder", None)
    if rec is not None and rec.scores:
        k = key.repeat_interleave(query.shape[1] // key.shape[1], dim=1)
        rec._scores[module.layer_idx] = (query[0, :, -1:] @ k[0].transpose(-1, -2))[:, 0].detach() * scaling
    impl = getattr(module, "_icgd_inner", "eager")
    if impl == "eager":
        fn = sys.modules[type(module).__module__].eager_attention_forward
    else:
        from transformers import AttentionInterface

        fn = AttentionInterface()[impl]
    return fn(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kw)


def attention_modules(model) -> list[Any]:
    """The self-attention modules of a decoder LM (those with q/k/v projections), in layer order."""
    mods = [m for _, m in model.named_modules()
            if hasattr(m, "layer_idx") and all(hasattr(m, p) for p in ("q_proj", "k_proj", "v_proj"))]
    if not mods:
        raise ValueError(f"{type(model).__name__}: no attention module with q_proj/k_proj/v_proj and layer_idx")
    return sorted(mods, key=lambda m: m.layer_idx)


class Recorder:
    """Context manager: while active, every forward of `model` records the hook points (see module doc);
    `take()` returns those of the latest forward.

    scores / outputs / queries: which points to record (each costs memory and a little time)."""

    def __init__(self, model, scores: bool = True, outputs: bool = True, queries: bool = False):
        self.model, self.scores, self.outputs, self.queries = model, scores, outputs, queries
        self.mods = attention_modules(model)
        self._scores: dict[int, Tensor] = {}
        self._out: dict[int, Tensor] = {}
        self._q: dict[int, Tensor] = {}
        self._handles: list[Any] = []
        self._impl: str | None = None

    def __enter__(self) -> "Recorder":
        from transformers import AttentionInterface, AttentionMaskInterface

        self._impl = self.model.config._attn_implementation
        if IMPLEMENTATION not in AttentionInterface():
            AttentionInterface.register(IMPLEMENTATION, _recording_attention)
        if IMPLEMENTATION not in AttentionMaskInterface():  # masks as the eager implementation builds them
            AttentionMaskInterface.register(IMPLEMENTATION, AttentionMaskInterface()["eager"])
        for m in self.mods:
            m._icgd_recorder, m._icgd_inner = self, self._impl
            if self.outputs:
                self._handles.append(m.register_forward_hook(self._out_hook))
            if self.queries:
                self._handles.append(m.q_proj.register_forward_hook(self._q_hook(m.layer_idx)))
        self.model.set_attn_implementation(IMPLEMENTATION)
        return self

    def __exit__(self, *exc: Any) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()
        for m in self.mods:
            m._icgd_recorder = None
        self.model.set_attn_implementation(self._impl)

    def _out_hook(self, module, args, output) -> None:
        self._out[module.layer_idx] = output[0][0, -1].detach()

    def _q_hook(self, layer: int):
        def hook(module, args, output) -> None:
            self._q[layer] = output[0].detach()
        return hook

    def take(self) -> dict[str, Tensor]:
        """The hook points of the latest forward, stacked over layers (float32, on the model's device)."""
        n = len(self.mods)
        out: dict[str, Tensor] = {}
        for name, store, on in (("scores_last", self._scores, self.scores), ("out_last", self._out, self.outputs),
                                ("q", self._q, self.queries)):
            if on:
                if len(store) != n:
                    raise RuntimeError(f"recorded {name} for {len(store)} of {n} layers: no forward ran while "
                                       "recording, or the model does not call its attention interface")
                out[name] = torch.stack([store[i].float() for i in range(n)])
                store.clear()
        return out
