"""Named hook points inside a Hugging Face causal LM's attention layers (source 003), captured through
`transformers`' own mechanisms: an attention function registered with `AttentionInterface` (it records
the pre-softmax scores, then calls the model's own attention) and forward hooks on each attention module
and its query projection. The model itself is not re-implemented.

Hook points, for layer l (what `Recorder.take()` returns, one tensor per point stacked over layers):
- `scores_last`: (L, H, K) pre-softmax scaled scores q_t . k_j * scaling of the forward's last token t to
  every key j (the cached prefix included), as the source's code records them (the last token's causal mask
  hides nothing); keys outside a sliding window, which the layer cannot attend, are -inf, whether the mask
  hides them (a whole sequence) or the layer's cache no longer holds them (a cached prefix past the window);
- `out_last`: (L, D) the attention module's output (after the output projection, before the residual) at
  the last token;
- `q`: (L, T, H*d) the query at every position of the forward, heads side by side (only when `queries` is
  set): "rotary", the query the attention computes its scores with (after the rotary position embedding and
  any query norm: what the attention function receives); "projection", the query projection's output before
  them.
`take()` reads a forward of batch size 1 at its last token. A forward of several sequences side by side,
padded on the right, is read per row with `take_rows()` after setting `Recorder.positions` to each row's
analysed position (the scores then stop at that position: the keys after it are the row's padding).
"""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch import Tensor

IMPLEMENTATION = "icgd_record"
#: where the query is read (`Recorder(queries=...)`): after the rotary embedding, or the projection's output
QUERY_POINTS = ("rotary", "projection")
#: attention module -> the Recorder recording it (held weakly: a dropped model leaves nothing behind)
_RECORDING: "weakref.WeakKeyDictionary[Any, tuple[Recorder, str]]" = weakref.WeakKeyDictionary()


def eager_attention(module, query: Tensor, key: Tensor, value: Tensor, attention_mask: Tensor | None,
                    scaling: float | None = None, dropout: float = 0.0, softcap: float | None = None,
                    **kw: Any) -> tuple[Tensor, Tensor]:
    """The eager attention of an `AttentionInterface` function, on the interface's documented arguments:
    query (B, H, T, d), key and value (B, H_kv, K, d) (each of H / H_kv query heads reads one key head),
    an additive mask (B, 1, T, K) as the eager mask interface builds it, `scaling`, attention dropout and
    an optional logit soft-cap; returns (output (B, T, H, d), weights (B, H, T, K)). It is the same
    computation, in the same order, as the eager functions of the Llama, Qwen2 and Gemma-3 modelling code
    of the pinned transformers (tests/unit/test_lm_interface.py checks it against them), written here so that
    icgd reads no model module's private function."""
    if scaling is None:
        scaling = module.head_dim ** -0.5
    groups = query.shape[1] // key.shape[1]
    if groups > 1:  # repeat each key/value head for its group of query heads
        b, h_kv, k_len, d = key.shape
        key = key[:, :, None].expand(b, h_kv, groups, k_len, d).reshape(b, h_kv * groups, k_len, d)
        value = value[:, :, None].expand(b, h_kv, groups, k_len, value.shape[-1]).reshape(b, h_kv * groups, k_len, -1)
    weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if softcap is not None:
        weights = torch.tanh(weights / softcap) * softcap
    if attention_mask is not None:
        weights = weights + attention_mask
    weights = torch.nn.functional.softmax(weights, dim=-1, dtype=torch.float32).to(query.dtype)
    weights = torch.nn.functional.dropout(weights, p=dropout, training=module.training)
    return torch.matmul(weights, value).transpose(1, 2).contiguous(), weights


def _recording_attention(module, query: Tensor, key: Tensor, value: Tensor, attention_mask, scaling: float,
                         dropout: float = 0.0, **kw: Any):
    """query (B, H, T, d), key (B, H_kv, K, d): records the last row of scores, then runs the model's own
    attention (eager: `eager_attention`; any other: the `AttentionInterface` function of that name)."""
    rec, inner = _RECORDING.get(module, (None, "eager"))
    if rec is not None and rec.scores:
        k = key.repeat_interleave(query.shape[1] // key.shape[1], dim=1)
        t, n_k = query.shape[2], k.shape[2]
        rows = []
        for b, p in enumerate(rec.rows(query.shape[0], t)):
            seen = n_k - (t - 1 - p)  # the keys up to the analysed position (later ones: this row's padding)
            row = (query[b, :, p:p + 1] @ k[b, :, :seen].transpose(-1, -2))[:, 0].detach() * scaling
            if attention_mask is not None:  # the analysed token's mask row hides only keys outside a sliding window
                m = attention_mask[b if attention_mask.shape[0] > 1 else 0, 0, p]
                m = m[m.shape[-1] - n_k:][:seen]
                row = row.masked_fill(~m if m.dtype == torch.bool else m < 0, float("-inf"))
            rows.append(row)
        rec._scores[module.layer_idx] = rows
    if rec is not None and rec.queries == "rotary":  # (B, H, T, d) -> (B, T, H*d), the projection's layout
        rec._q[module.layer_idx] = query.transpose(1, 2).reshape(query.shape[0], query.shape[2], -1).detach()
    if inner == "eager":
        fn = eager_attention
    else:
        from transformers import AttentionInterface

        fn = AttentionInterface()[inner]
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

    scores / outputs / queries: which points to record (each costs memory and a little time); queries is
    False, "rotary" or "projection" (see the module doc; True means "projection").
    implementation: the attention implementation the model runs outside the recording, which the recording
    calls and which is set back afterwards ("eager", what `icgd.lm.models.load_lm` loads, or the name of any
    `AttentionInterface` function); transformers has no public getter of a model's current one.

    Only public interfaces of transformers are used: `AttentionInterface.register` and
    `AttentionMaskInterface.register` (a named attention function and its mask), `set_attn_implementation`,
    forward hooks on the attention modules (found by their `layer_idx` and q/k/v projections)."""

    def __init__(self, model, scores: bool = True, outputs: bool = True, queries: bool | str = False,
                 implementation: str = "eager"):
        if queries is True:
            queries = "projection"
        if queries not in (False, *QUERY_POINTS):
            raise ValueError(f"queries must be False or one of {QUERY_POINTS}, got {queries!r}")
        self.model, self.scores, self.outputs, self.queries = model, scores, outputs, queries
        self.implementation = implementation
        self.mods = attention_modules(model)
        self._scores: dict[int, Tensor] = {}
        self._out: dict[int, Tensor] = {}
        self._q: dict[int, Tensor] = {}
        self._handles: list[Any] = []
        #: per batch row, the position (in the forward's tokens) of the analysed token; None: the last of each
        self.positions: list[int] | None = None

    def rows(self, batch: int, length: int) -> list[int]:
        """The analysed position of each of `batch` rows of a forward of `length` tokens."""
        if self.positions is None:
            return [length - 1] * batch
        if len(self.positions) != batch:
            raise RuntimeError(f"{len(self.positions)} analysed positions for a batch of {batch}")
        return list(self.positions)

    def __enter__(self) -> "Recorder":
        from transformers import AttentionInterface, AttentionMaskInterface

        if IMPLEMENTATION not in AttentionInterface():
            AttentionInterface.register(IMPLEMENTATION, _recording_attention)
        if IMPLEMENTATION not in AttentionMaskInterface():  # masks as the eager implementation builds them
            AttentionMaskInterface.register(IMPLEMENTATION, AttentionMaskInterface()["eager"])
        for m in self.mods:
            _RECORDING[m] = (self, self.implementation)
            if self.outputs:
                self._handles.append(m.register_forward_hook(self._out_hook))
            if self.queries == "projection":
                self._handles.append(m.q_proj.register_forward_hook(self._q_hook(m.layer_idx)))
        self.model.set_attn_implementation(IMPLEMENTATION)
        return self

    def __exit__(self, *exc: Any) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()
        for m in self.mods:
            _RECORDING.pop(m, None)
        self.model.set_attn_implementation(self.implementation)

    def _out_hook(self, module, args, output) -> None:
        o = output[0]  # (B, T, D)
        self._out[module.layer_idx] = o[torch.arange(o.shape[0]), self.rows(o.shape[0], o.shape[1])].detach()

    def _q_hook(self, layer: int):
        def hook(module, args, output) -> None:
            self._q[layer] = output.detach()  # (B, T, H*d)
        return hook

    def take_rows(self) -> list[dict[str, Tensor]]:
        """The hook points of the latest forward, one dict per batch row (see `take`)."""
        n = len(self.mods)
        for name, store, on in (("scores_last", self._scores, self.scores), ("out_last", self._out, self.outputs),
                                ("q", self._q, bool(self.queries))):
            if on and len(store) != n:
                raise RuntimeError(f"recorded {name} for {len(store)} of {n} layers: no forward ran while "
                                   "recording, or the model does not call its attention interface")
        batch = len(self._scores[0]) if self.scores else len(self._out[0]) if self.outputs else len(self._q[0])
        out: list[dict[str, Tensor]] = [{} for _ in range(batch)]
        for b in range(batch):
            if self.scores:
                rows = [self._scores[i][b].float() for i in range(n)]
                width = max(r.shape[-1] for r in rows)  # a sliding-window layer's cache holds only its window:
                rows = [torch.nn.functional.pad(r, (width - r.shape[-1], 0), value=float("-inf"))
                        if r.shape[-1] < width else r for r in rows]  # the keys before it count as hidden
                out[b]["scores_last"] = torch.stack(rows)
            if self.outputs:
                out[b]["out_last"] = torch.stack([self._out[i][b].float() for i in range(n)])
            if self.queries:
                out[b]["q"] = torch.stack([self._q[i][b].float() for i in range(n)])
        for store in (self._scores, self._out, self._q):
            store.clear()
        return out

    def take(self) -> dict[str, Tensor]:
        """The hook points of the latest forward (batch size 1), stacked over layers (float32, on the model's
        device)."""
        rows = self.take_rows()
        if len(rows) != 1:
            raise RuntimeError(f"take() reads a forward of batch size 1, this one had {len(rows)}: use take_rows()")
        return rows[0]
