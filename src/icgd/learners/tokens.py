"""Token constructions: Episodes -> token tensors, and the read-out tokens -> query predictions.

Concatenated (source 000, sec. 2): e_i = [x_i; y_i] for context points, e_q = [x_q; y0_q] for queries
(y0_q = 0, or -W0 x_q to start from a linear model W0), read-out y_hat = -(y-entry of e_q).
Interleaved (source 000, sec. 4): x_1, y_1, ..., x_N, y_N, x_q as separate tokens [x or 0; y or 0; one-hot position].
Interleaved as source 000's code builds them (`CodeInterleavedTokens`): x_i and [0, ..., 0, y_i] as Dx-wide
tokens, a sinusoidal position code concatenated, read out from the last coordinate of the last token.
`TOKEN_LAYOUTS` registers the three by name (a model config's `tokens`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from icgd.core.episodes import Episodes, ShapeError


# -------------------------------------------------------------------------------------- concatenated
def concat_tokens(ep: Episodes, w0: Tensor | None = None, prior: float | None = None) -> Tensor:
    """Concatenated tokens (B, N + Q, Dx + Dy): context tokens first, then the Q query tokens.

    w0: optional initial linear model (Dy, Dx) or (B, Dy, Dx); the query y-entries start at -W0 x_q.
    prior: optional constant initial prediction p_0 (categorical kernel GD, source 002): context tokens
    [x_i; y_i - p_0], queries [x_q; -p_0].
    """
    if w0 is not None and prior is not None:
        raise ValueError("give an initial linear model w0 or a constant prior, not both")
    if w0 is None:
        qy0 = ep.query_x.new_full((ep.batch_size, ep.n_queries, ep.dy), -float(prior or 0.0))
    else:
        qy0 = -(ep.query_x @ _check_w0(w0, ep).transpose(-1, -2))
    cy = ep.context_y if prior is None else ep.context_y - float(prior)
    ctx = torch.cat([ep.context_x, cy], dim=-1)
    qry = torch.cat([ep.query_x, qy0], dim=-1)
    return torch.cat([ctx, qry], dim=1)


def concat_readout(tokens: Tensor, n_context: int, dx: int) -> Tensor:
    """Query predictions (B, Q, Dy) = -(y-entries of the query tokens) of tokens (B, N + Q, Dx + Dy)."""
    return -tokens[..., n_context:, dx:]


def concat_to_episodes(tokens: Tensor, n_context: int, dx: int) -> Episodes:
    """Inverse of `concat_tokens` (with w0 = None): recover context and query inputs from tokens."""
    if tokens.dim() != 3 or not 0 < n_context < tokens.shape[1] or not 0 < dx < tokens.shape[2]:
        raise ShapeError(f"cannot split tokens {tuple(tokens.shape)} with n_context={n_context}, dx={dx}")
    return Episodes(context_x=tokens[:, :n_context, :dx], context_y=tokens[:, :n_context, dx:],
                    query_x=tokens[:, n_context:, :dx])


# --------------------------------------------------------------------------------------- interleaved
def interleaved_tokens(ep: Episodes) -> Tensor:
    """Interleaved tokens (B * Q, 2N + 1, Dx + Dy + 2N + 1), one sequence per query (row b*Q + q).

    Token 2i is [x_i; 0; p_2i], token 2i+1 is [0; y_i; p_2i+1], the last is [x_q; 0; p_2N],
    with p_t the one-hot position t.
    """
    f = ep.fold_queries() if ep.n_queries > 1 else ep
    b, n, dx, dy = f.batch_size, f.n_context, f.dx, f.dy
    t_len = 2 * n + 1
    # built without in-place writes, so that it also runs under torch.func.vmap
    zx, zy = f.context_x.new_zeros(b, n, dx), f.context_y.new_zeros(b, n, dy)
    x_tok = torch.cat([f.context_x, zy], -1)  # (B, N, Dx + Dy)
    y_tok = torch.cat([zx, f.context_y], -1)
    pairs = torch.stack([x_tok, y_tok], 2).reshape(b, 2 * n, dx + dy)
    q_tok = torch.cat([f.query_x[:, :1], f.query_x.new_zeros(b, 1, dy)], -1)
    data = torch.cat([pairs, q_tok], 1)
    pos = torch.eye(t_len, dtype=data.dtype, device=data.device).expand(b, t_len, t_len)
    return torch.cat([data, pos], -1)


def interleaved_readout(tokens: Tensor, dx: int, dy: int, n_queries: int = 1) -> Tensor:
    """Predictions (B, Q, Dy) = -(y-entry of the last token), for tokens (B * Q, T, D)."""
    return -tokens[:, -1, dx:dx + dy].reshape(-1, n_queries, dy)


def interleaved_to_episodes(tokens: Tensor, dx: int, dy: int) -> Episodes:
    """Inverse of `interleaved_tokens` for one query per sequence: tokens (B, 2N + 1, D) -> Episodes."""
    t_len = tokens.shape[1]
    if tokens.dim() != 3 or t_len % 2 != 1 or tokens.shape[2] != dx + dy + t_len:
        raise ShapeError(f"tokens {tuple(tokens.shape)} are not interleaved tokens with dx={dx}, dy={dy}")
    return Episodes(context_x=tokens[:, 0:t_len - 1:2, :dx], context_y=tokens[:, 1:t_len - 1:2, dx:dx + dy],
                    query_x=tokens[:, -1:, :dx])


# ------------------------------------------------------------------------------ construction objects
@dataclass(frozen=True)
class ConcatTokens:
    """Concatenated construction; `w0` (Dy, Dx) sets the query's initial y-entry to -W0 x_q; `prior` p_0
    starts every prediction at the constant p_0 (context y-entries y_i - p_0, queries -p_0)."""

    w0: Tensor | None = None
    prior: float | None = None
    name: str = "concat"
    #: all Q queries share one sequence after the context
    one_sequence_per_query: bool = False

    def width(self, dx: int, dy: int, n_context: int) -> int:
        return dx + dy

    def encode(self, ep: Episodes) -> tuple[Tensor, int]:
        """(tokens (B, N + Q, Dx + Dy), number of context tokens N)."""
        w0 = None if self.w0 is None else self.w0.to(ep.query_x)
        return concat_tokens(ep, w0, self.prior), ep.n_context

    def decode(self, tokens: Tensor, ep: Episodes) -> Tensor:
        return concat_readout(tokens, ep.n_context, ep.dx)


@dataclass(frozen=True)
class InterleavedTokens:
    """Interleaved construction with one-hot positions; every query gets its own sequence."""

    name: str = "interleaved"
    one_sequence_per_query: bool = True

    def width(self, dx: int, dy: int, n_context: int) -> int:
        return dx + dy + 2 * n_context + 1

    def encode(self, ep: Episodes) -> tuple[Tensor, int]:
        """(tokens (B * Q, 2N + 1, D), number of key tokens 2N + 1: the whole sequence attends causally
        or fully as the model decides)."""
        tok = interleaved_tokens(ep)
        return tok, 2 * ep.n_context

    def decode(self, tokens: Tensor, ep: Episodes) -> Tensor:
        return interleaved_readout(tokens, ep.dx, ep.dy, ep.n_queries)

    def data_width(self, dx: int, dy: int) -> int:
        """The columns that hold data (x and y), before the one-hot positions."""
        return dx + dy


# ---------------------------------------------------------------- interleaved as the authors' code does
def sinusoidal_positions(length: int, size: int, dtype: torch.dtype = torch.float32,
                         device: torch.device | str | None = None) -> Tensor:
    """(length, size): sin at even, cos at odd columns of position * 10000^(-2i / size), the code of source
    000 (create_pos_encoding, src/attn.py:297-309 of self-organising-systems 3d5547c; the Transformer's)."""
    pos = torch.arange(length, dtype=torch.float64, device=device)[:, None]
    div = torch.exp(torch.arange(0, size, 2, dtype=torch.float64, device=device) * (-math.log(10000.0) / size))
    pe = torch.zeros(length, size, dtype=torch.float64, device=device)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)[:, : size // 2]
    return pe.to(dtype)


def code_interleaved_tokens(ep: Episodes, pe_size: int = 10) -> Tensor:
    """Source 000's interleaved tokens (create_reg_data_classic_token, src/data.py:165-194; normal_token_
    construct.ipynb cell 4): x_1, [0, ..., 0, y_1], ..., x_N, [0, ..., 0, y_N], x_q, each Dx wide (y in the
    last slot: Dy = 1), with a sinusoidal position code of `pe_size` concatenated: (B * Q, 2N + 1, Dx + pe)."""
    if ep.dy != 1:
        raise ShapeError(f"the code's interleaved tokens hold one target in x's last slot: Dy must be 1, got {ep.dy}")
    f = ep.fold_queries() if ep.n_queries > 1 else ep
    b, n, dx = f.batch_size, f.n_context, f.dx
    y_tok = torch.cat([f.context_x.new_zeros(b, n, dx - 1), f.context_y], -1)
    data = torch.cat([torch.stack([f.context_x, y_tok], 2).reshape(b, 2 * n, dx), f.query_x[:, :1]], 1)
    pe = sinusoidal_positions(2 * n + 1, pe_size, data.dtype, data.device).expand(b, 2 * n + 1, pe_size)
    return torch.cat([data, pe], -1)


@dataclass(frozen=True)
class CodeInterleavedTokens:
    """Source 000's interleaved tokens (`code_interleaved_tokens`), read out as its code does: the prediction
    is minus the last coordinate of the last token (src/train.py:164), a coordinate of the position code,
    so that an untrained model predicts about -1."""

    pe_size: int = 10
    name: str = "interleaved_code"
    one_sequence_per_query: bool = True

    def width(self, dx: int, dy: int, n_context: int) -> int:
        return dx + self.pe_size

    def data_width(self, dx: int, dy: int) -> int:
        """The columns that hold data (x and y), before the position code."""
        return dx

    def encode(self, ep: Episodes) -> tuple[Tensor, int]:
        """(tokens (B * Q, 2N + 1, Dx + pe), number of key tokens 2N: the query is a key only where the model
        says so, `query_in_keys`; the code's is not, include_query False)."""
        return code_interleaved_tokens(ep, self.pe_size), 2 * ep.n_context

    def decode(self, tokens: Tensor, ep: Episodes) -> Tensor:
        return -tokens[:, -1, -1].reshape(-1, ep.n_queries, 1)


def _check_w0(w0: Tensor, ep: Episodes) -> Tensor:
    if w0.shape[-2:] != (ep.dy, ep.dx) or w0.dim() not in (2, 3):
        raise ShapeError(f"w0 must be (Dy, Dx) = {(ep.dy, ep.dx)} or (B, Dy, Dx), got {tuple(w0.shape)}")
    return w0 if w0.dim() == 3 else w0.unsqueeze(0)


#: the token layouts a model config names (`tokens`)
TOKEN_LAYOUTS = {"concat": ConcatTokens, "interleaved": InterleavedTokens, "interleaved_code": CodeInterleavedTokens}
