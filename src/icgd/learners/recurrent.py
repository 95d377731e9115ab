"""LSTM and bidirectional LSTM in-context learners (source 001).

The LSTM reads the same token sequence as the transformer, the concatenated tokens
[x_1; y_1], ..., [x_N; y_N], [x_q; 0], and predicts y_q by a linear read-out of its last layer's hidden
state at the query token (forward and backward states concatenated for a bidirectional LSTM). Each query
is read as its own sequence (context then that query), so a backward direction never sees other queries.

The cell is written out (gates i, f, g, o as in torch.nn.LSTM, one bias per gate: torch's b_ih + b_hh),
so that it runs under torch.func.vmap over a leading seed dimension; `from_torch_lstm` copies the weights
of a torch.nn.LSTM, and the tests check that both compute the same function.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor, nn

from icgd.core.episodes import Episodes, ShapeError
from icgd.learners.tokens import concat_tokens


def lstm_direction(seq: Tensor, w_ih: Tensor, w_hh: Tensor, bias: Tensor, reverse: bool = False) -> Tensor:
    """One LSTM layer in one direction: seq (B, T, In) -> hidden states (B, T, H).

    w_ih (4H, In), w_hh (4H, H), bias (4H,), gate order i, f, g, o; zero initial state.
    """
    b, t_len, _ = seq.shape
    hid = w_hh.shape[1]
    gates_in = seq @ w_ih.T + bias  # every time step's input projection at once: (B, T, 4H)
    h = seq.new_zeros(b, hid)
    c = seq.new_zeros(b, hid)
    outs: list[Tensor] = []
    for t in (range(t_len - 1, -1, -1) if reverse else range(t_len)):
        g = gates_in[:, t] + h @ w_hh.T
        i, f, _, o = torch.sigmoid(g).chunk(4, dim=-1)  # one sigmoid over all gates; the candidate's is unused
        cand = torch.tanh(g[:, 2 * hid:3 * hid])
        c = f * c + i * cand
        h = o * torch.tanh(c)
        outs.append(h)
    if reverse:
        outs.reverse()
    return torch.stack(outs, dim=1)


class LSTMLearner(nn.Module):
    """A (bi)LSTM of `n_layers` layers of `hidden` units per direction, read out at the query token.

    Weights: `layers.{l}.{fwd|bwd}.w_ih` (4H, In), `.w_hh` (4H, H), `.bias` (4H,); `readout.weight`
    (Dy, H * directions), `readout.bias` (Dy,). Hook points (with `cache`): `layers.{l}.out` (B*Q, N+1, H*dirs).
    """

    def __init__(self, dx: int = 10, dy: int = 1, hidden: int = 64, n_layers: int = 1, bidirectional: bool = False,
                 dtype: torch.dtype = torch.float32, device: torch.device | str | None = None,
                 generator: torch.Generator | None = None, name: str | None = None) -> None:
        super().__init__()
        if hidden < 1 or n_layers < 1:
            raise ValueError(f"need hidden >= 1 and n_layers >= 1, got hidden={hidden}, n_layers={n_layers}")
        self.dx, self.dy, self.hidden, self.n_layers, self.bidirectional = dx, dy, hidden, n_layers, bidirectional
        self.name = name or f"{'bi' if bidirectional else ''}lstm{n_layers}"
        dirs = ("fwd", "bwd") if bidirectional else ("fwd",)
        kw = dict(dtype=dtype, device=device)
        self.layers = nn.ModuleList()
        for layer in range(n_layers):
            d_in = dx + dy if layer == 0 else hidden * len(dirs)
            self.layers.append(nn.ModuleDict({d: _Direction(d_in, hidden, **kw) for d in dirs}))
        self.readout = nn.Linear(hidden * len(dirs), dy, **kw)
        if device is None or torch.device(device).type != "meta":
            self.reset_parameters(generator)

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """torch.nn.LSTM's initialisation, U(-1/sqrt(H), 1/sqrt(H)), drawn from `generator`; the read-out
        as torch.nn.Linear."""
        bound = 1 / math.sqrt(self.hidden)
        with torch.no_grad():
            for layer in self.layers:
                for direction in layer.values():
                    for p in direction.parameters():
                        p.uniform_(-bound, bound, generator=generator)
            rb = 1 / math.sqrt(self.readout.in_features)
            self.readout.weight.uniform_(-rb, rb, generator=generator)
            self.readout.bias.uniform_(-rb, rb, generator=generator)

    def sequences(self, ep: Episodes) -> Tensor:
        """One sequence per query: (B * Q, N + 1, Dx + Dy), context tokens then the query token [x_q; 0]."""
        if ep.dx != self.dx or ep.dy != self.dy:
            raise ShapeError(f"{self.name} was built for Dx={self.dx}, Dy={self.dy}; episodes have "
                             f"Dx={ep.dx}, Dy={ep.dy}")
        tokens = concat_tokens(ep)  # (B, N + Q, D)
        n, q = ep.n_context, ep.n_queries
        ctx = tokens[:, :n].unsqueeze(1).expand(-1, q, -1, -1)
        seq = torch.cat([ctx, tokens[:, n:].unsqueeze(2)], dim=2)  # (B, Q, N + 1, D)
        return seq.reshape(ep.batch_size * q, n + 1, tokens.shape[-1])

    def forward(self, ep: Episodes, cache: dict[str, Tensor] | None = None) -> Tensor:
        return self.predict(ep, cache)

    def predict(self, ep: Episodes, cache: dict[str, Tensor] | None = None) -> Tensor:
        """Predictions (B, Q, Dy) from the last layer's state at each query token."""
        h = self.sequences(ep)
        for i, layer in enumerate(self.layers):
            outs = [lstm_direction(h, d.w_ih, d.w_hh, d.bias, reverse=name == "bwd") for name, d in layer.items()]
            h = torch.cat(outs, dim=-1) if len(outs) > 1 else outs[0]
            if cache is not None:
                cache[f"layers.{i}.out"] = h
        return self.readout(h[:, -1]).reshape(ep.batch_size, ep.n_queries, self.dy)

    @classmethod
    def from_torch_lstm(cls, lstm: nn.LSTM, readout: nn.Linear, dx: int, dy: int) -> "LSTMLearner":
        """The learner computing what `readout(lstm(tokens)[query position])` computes (batch_first LSTM)."""
        if lstm.proj_size or not lstm.bias:
            raise ValueError("only LSTMs with biases and without projections are supported")
        w = lstm.weight_ih_l0
        m = cls(dx, dy, lstm.hidden_size, lstm.num_layers, lstm.bidirectional, dtype=w.dtype, device=w.device)
        with torch.no_grad():
            for i, layer in enumerate(m.layers):
                for name, d in layer.items():
                    sfx = f"l{i}" + ("_reverse" if name == "bwd" else "")
                    d.w_ih.copy_(getattr(lstm, f"weight_ih_{sfx}"))
                    d.w_hh.copy_(getattr(lstm, f"weight_hh_{sfx}"))
                    d.bias.copy_(getattr(lstm, f"bias_ih_{sfx}") + getattr(lstm, f"bias_hh_{sfx}"))
            m.readout.load_state_dict(readout.state_dict())
        return m

    def describe(self) -> dict[str, Any]:
        return {"learner": self.name, "hidden": self.hidden, "n_layers": self.n_layers,
                "bidirectional": self.bidirectional}


class _Direction(nn.Module):
    def __init__(self, d_in: int, hidden: int, dtype: torch.dtype, device: torch.device | str | None) -> None:
        super().__init__()
        kw = dict(dtype=dtype, device=device)
        self.w_ih = nn.Parameter(torch.empty(4 * hidden, d_in, **kw))
        self.w_hh = nn.Parameter(torch.empty(4 * hidden, hidden, **kw))
        self.bias = nn.Parameter(torch.empty(4 * hidden, **kw))
