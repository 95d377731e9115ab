import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from icgd import Episodes, make_generator
from icgd.learners.tokens import (
    ConcatTokens,
    InterleavedTokens,
    concat_readout,
    concat_to_episodes,
    concat_tokens,
    interleaved_readout,
    interleaved_to_episodes,
    interleaved_tokens,
)
from icgd.tasks import LinearRegression

dims = dict(b=st.integers(1, 5), n=st.integers(1, 8), q=st.integers(1, 3), dx=st.integers(1, 6),
            dy=st.integers(1, 3))


def _sample(b, n, q, dx, dy):
    return LinearRegression(dx=dx, dy=dy, n_context=n, n_queries=q).sample(b, make_generator(b * 31 + n))


@given(**dims)
def test_concat_tokens_layout_and_round_trip(b, n, q, dx, dy):
    ep = _sample(b, n, q, dx, dy)
    tok = concat_tokens(ep)
    assert tok.shape == (b, n + q, dx + dy)
    assert torch.equal(tok[:, :n, :dx], ep.context_x) and torch.equal(tok[:, :n, dx:], ep.context_y)
    assert torch.equal(tok[:, n:, :dx], ep.query_x) and not tok[:, n:, dx:].any()
    back = concat_to_episodes(tok, n, dx)
    for name in ("context_x", "context_y", "query_x"):
        assert torch.equal(getattr(back, name), getattr(ep, name))
    # read-out is minus the query y-entries
    tok[:, n:, dx:] = -ep.query_y
    assert torch.equal(concat_readout(tok, n, dx), ep.query_y)


def test_concat_query_starts_at_minus_w0_x():
    ep = _sample(4, 5, 2, 3, 2)
    w0 = torch.randn(2, 3)
    tok, n = ConcatTokens(w0=w0).encode(ep)
    torch.testing.assert_close(tok[:, n:, 3:], -(ep.query_x @ w0.T))
    torch.testing.assert_close(ConcatTokens(w0=w0).decode(tok, ep), ep.query_x @ w0.T)


@given(**dims)
def test_interleaved_tokens_layout_and_round_trip(b, n, q, dx, dy):
    ep = _sample(b, n, q, dx, dy)
    tok = interleaved_tokens(ep)
    t_len = 2 * n + 1
    assert tok.shape == (b * q, t_len, dx + dy + t_len)
    # positions are one-hot
    assert torch.equal(tok[0, :, dx + dy:], torch.eye(t_len))
    # x tokens carry no y, y tokens carry no x
    assert not tok[:, 0:2 * n:2, dx:dx + dy].any() and not tok[:, 1:2 * n:2, :dx].any()
    back = interleaved_to_episodes(tok, dx, dy)
    f = ep.fold_queries()
    for name in ("context_x", "context_y", "query_x"):
        assert torch.equal(getattr(back, name), getattr(f, name))
    tok[:, -1, dx:dx + dy] = -f.query_y[:, 0]
    assert torch.equal(interleaved_readout(tok, dx, dy, q), ep.query_y)
    assert InterleavedTokens().width(dx, dy, n) == tok.shape[-1]


def test_round_trip_errors():
    import pytest

    from icgd import ShapeError
    with pytest.raises(ShapeError):
        concat_to_episodes(torch.zeros(2, 3, 4), 3, 2)
    with pytest.raises(ShapeError):
        interleaved_to_episodes(torch.zeros(2, 4, 9), 2, 1)
    ep = Episodes(torch.zeros(1, 2, 3), torch.zeros(1, 2, 1), torch.zeros(1, 1, 3))
    with pytest.raises(ShapeError, match="w0"):
        concat_tokens(ep, torch.zeros(2, 2))


def test_the_authors_interleaved_tokens():
    import math

    from icgd.core.episodes import make_generator
    from icgd.learners.tokens import TOKEN_LAYOUTS, CodeInterleavedTokens, sinusoidal_positions
    from icgd.tasks import LinearRegression

    ep = LinearRegression(dx=10, n_context=10, input_range=0.5).sample(3, make_generator(0), dtype=torch.float64)
    layout = TOKEN_LAYOUTS["interleaved_code"]()
    tok, n_keys = layout.encode(ep)
    assert tok.shape == (3, 21, 20) and n_keys == 20 and layout.width(10, 1, 10) == 20
    pe = sinusoidal_positions(21, 10, torch.float64)
    assert pe[7, 0] == pytest.approx(math.sin(7)) and pe[7, 1] == pytest.approx(math.cos(7))
    assert pe[7, 9] == pytest.approx(math.cos(7 * 10000 ** -0.8))  # create_pos_encoding, src/attn.py:297-309
    torch.testing.assert_close(tok[:, 4, :10], ep.context_x[:, 2])  # token 2i: x_i
    torch.testing.assert_close(tok[:, 5, 9], ep.context_y[:, 2, 0])  # token 2i + 1: y_i in x's last slot
    assert tok[:, 5, :9].abs().max() == 0
    torch.testing.assert_close(tok[:, 20, :10], ep.query_x[:, 0])
    torch.testing.assert_close(tok[:, :, 10:], pe.expand(3, 21, 10))
    # the read-out is minus the last coordinate of the last token: about -1 before any update
    assert layout.decode(tok, ep).flatten().tolist() == pytest.approx([-math.cos(20 * 10000 ** -0.8)] * 3)
    with pytest.raises(Exception, match="Dy must be 1"):
        CodeInterleavedTokens().encode(LinearRegression(dy=2).sample(2, make_generator(0)))
