"""Constructed LSA stacks equal the explicit algorithms they implement (source 000, Prop. 1 and A.10)."""

import pytest
import torch

from icgd import make_generator
from icgd.learners import GD, GDPlusPlus, TransformerLearner, gd_transformer
from icgd.learners.constructions import (
    gd_construction,
    gd_weights,
    gdpp_weights,
    load_layer_weights,
)
from icgd.learners.tokens import concat_tokens
from icgd.nn.stack import Stack
from icgd.tasks import LinearRegression

TOL = {torch.float64: 1e-10, torch.float32: 1e-5}
ETAS = [0.9, 0.6, 1.2, 0.4, 0.8]
GAMMAS = [0.05, 0.02, 0.08, 0.01, 0.03]


def _episodes(dx, dy, n, q, dtype, seed=0):
    return LinearRegression(dx=dx, dy=dy, n_context=n, n_queries=q).sample(64, make_generator(seed), dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("steps", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("dy,use_w0", [(1, False), (3, True)])
def test_constructed_lsa_equals_gd(dtype, steps, dy, use_w0):
    dx, n = 6, 12
    ep = _episodes(dx, dy, n, 4, dtype)
    w0 = torch.randn(dy, dx, generator=make_generator(5), dtype=torch.float64) * 0.5 if use_w0 else None
    etas = ETAS[:steps]
    tf = gd_transformer(dx, dy, n, etas, w0=w0, dtype=dtype)
    gd = GD(etas, w0=None if w0 is None else w0.to(dtype))
    err = (tf.predict(ep) - gd.predict(ep)).abs().max().item()
    assert err < TOL[dtype], err


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("steps", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("dy,use_w0", [(1, False), (2, True)])
def test_constructed_lsa_equals_gdpp(dtype, steps, dy, use_w0):
    dx, n = 5, 10
    ep = _episodes(dx, dy, n, 3, dtype, seed=1)
    w0 = torch.randn(dy, dx, generator=make_generator(6), dtype=torch.float64) * 0.5 if use_w0 else None
    tf = gd_transformer(dx, dy, n, ETAS[:steps], gammas=GAMMAS[:steps], w0=w0, dtype=dtype)
    gdpp = GDPlusPlus(ETAS[:steps], GAMMAS[:steps], w0=None if w0 is None else w0.to(dtype))
    err = (tf.predict(ep) - gdpp.predict(ep)).abs().max().item()
    assert err < TOL[dtype], err
    # GD++ really differs from GD here (the test would catch a gamma that does nothing)
    if steps > 1:
        assert (gdpp.predict(ep) - GD(ETAS[:steps], w0=gdpp.w0).predict(ep)).abs().max() > 1e-3


def test_one_layer_updates_every_token_by_the_gd_step():
    """Prop. 1 on the tokens: y_j <- y_j - dW x_j for context and query tokens, x unchanged."""
    dx, dy, n, eta = 4, 2, 7, 0.7
    ep = _episodes(dx, dy, n, 3, torch.float64)
    w0 = torch.randn(dy, dx, dtype=torch.float64)
    stack = gd_construction(dx, dy, n, eta, w0=w0).build()
    tok = concat_tokens(ep)
    out = stack(tok, n)
    x, y = ep.context_x, ep.context_y
    dw = -(eta / n) * (x @ w0.T - y).transpose(1, 2) @ x  # (B, Dy, Dx)
    xs = torch.cat([ep.context_x, ep.query_x], 1)
    torch.testing.assert_close(out[..., :dx], tok[..., :dx], rtol=0, atol=1e-12)
    torch.testing.assert_close(out[..., dx:], tok[..., dx:] - xs @ dw.transpose(1, 2), rtol=0, atol=1e-12)


def test_one_step_read_out_is_the_kernel_formula():
    """W0 = 0: y_hat = (eta/N) sum_i y_i x_i^T x_q."""
    ep = _episodes(10, 1, 10, 2, torch.float64)
    pred = gd_transformer(10, 1, 10, 0.6).predict(ep)
    ref = 0.06 * (ep.query_x @ ep.context_x.transpose(1, 2)) @ ep.context_y
    torch.testing.assert_close(pred, ref, rtol=0, atol=1e-12)


def test_query_in_keys_is_harmless_for_one_layer_and_queries_stay_independent():
    dx, n = 5, 8
    ep = _episodes(dx, 1, n, 4, torch.float64)
    # one layer: the query's y-entry is 0, so as a key/value it adds nothing
    one = gd_transformer(dx, 1, n, ETAS[:1], query_in_keys=True)
    assert (one.predict(ep) - GD(ETAS[:1]).predict(ep)).abs().max() < 1e-10
    # later layers see the query's own running prediction: no longer plain GD on the context
    tf = gd_transformer(dx, 1, n, ETAS[:3], query_in_keys=True)
    assert (tf.predict(ep) - GD(ETAS[:3]).predict(ep)).abs().max() > 1e-3
    # each query's prediction only depends on its own x_q
    ep2 = ep.with_query_x(torch.cat([ep.query_x[:, :1], 5 * ep.query_x[:, 1:]], 1))
    torch.testing.assert_close(tf.predict(ep2)[:, 0], tf.predict(ep)[:, 0])


def test_construction_weights_have_the_documented_blocks():
    w = gd_weights(3, 2, eta=0.5, n_context=4)
    assert torch.equal(w["w_k"][0], torch.block_diag(torch.eye(3), torch.zeros(2, 2)).double())
    assert torch.equal(w["w_v"][0, 3:, 3:], -torch.eye(2).double())
    assert torch.allclose(w["w_o"][0], 0.125 * torch.eye(5).double())
    p = gdpp_weights(3, 1, eta=0.5, gamma=0.1, n_context=4)
    assert torch.allclose(p["w_v"][0, :3, :3], -0.1 * torch.eye(3).double())


def test_construction_errors():
    with pytest.raises(ValueError, match="w0"):
        gd_weights(3, 1, 0.1, 4, w0=torch.zeros(2, 3))
    with pytest.raises(ValueError, match="etas"):
        gd_construction(3, 1, 4, [0.1, 0.2], steps=3)
    with pytest.raises(ValueError, match="gammas"):
        gd_construction(3, 1, 4, [0.1, 0.2], gammas=[0.1])
    stack = Stack(gd_construction(3, 1, 4, 0.1).config)
    with pytest.raises(ValueError, match="layer weight sets"):
        load_layer_weights(stack, [gd_weights(3, 1, 0.1, 4)] * 2)
    learner = TransformerLearner(stack)
    from icgd import ShapeError
    with pytest.raises(ShapeError, match="width"):
        learner.predict(_episodes(5, 1, 4, 1, torch.float32))


# ----------------------------------------------------------------------------- copying (Prop. 3)
@pytest.mark.parametrize("kernel,scale", [("linear", 1.0), ("softmax", 100.0)])
@pytest.mark.parametrize("dx,dy,n", [(1, 1, 1), (3, 2, 4), (10, 1, 10), (12, 1, 5)])
def test_copy_layer_builds_the_concatenated_tokens_exactly(kernel, scale, dx, dy, n):
    from icgd.learners.constructions import copy_attention_config, copy_weights
    from icgd.learners.tokens import concat_tokens, interleaved_tokens
    from icgd.nn.attention import Attention

    ep = LinearRegression(dx=dx, dy=dy, n_context=n).sample(16, make_generator(3), dtype=torch.float64)
    tok = interleaved_tokens(ep)
    att = Attention(copy_attention_config(dx, dy, n, kernel), dtype=torch.float64)
    with torch.no_grad():
        for k, v in copy_weights(dx, dy, n, scale).items():
            getattr(att, k).copy_(v)
        att.kernel_params.fill_(1.0)
    out = tok + att(tok, 2 * n)
    d = dx + dy
    concat = concat_tokens(ep)
    assert (out[:, 0:2 * n:2, :d] - concat[:, :n]).abs().max() < 1e-12  # x-tokens now [x_i; y_i]
    assert out[:, 1:2 * n:2, :d].abs().max() < 1e-12  # y-tokens zeroed (second head)
    assert (out[:, -1, :d] - concat[:, -1]).abs().max() < 1e-12  # query [x_q; 0]
    assert torch.equal(out[..., d:], tok[..., d:])  # positions untouched


def test_copy_needs_a_sharp_softmax():
    """With scale 1 the softmax rows are not one-hot: the copy is visibly wrong (the check can fail)."""
    from icgd.learners.constructions import copy_attention_config, copy_weights
    from icgd.learners.tokens import concat_tokens, interleaved_tokens
    from icgd.nn.attention import Attention

    ep = LinearRegression(dx=3, dy=1, n_context=5).sample(16, make_generator(3), dtype=torch.float64)
    tok = interleaved_tokens(ep)
    att = Attention(copy_attention_config(3, 1, 5, "softmax"), dtype=torch.float64)
    with torch.no_grad():
        for k, v in copy_weights(3, 1, 5, 1.0).items():
            getattr(att, k).copy_(v)
    out = tok + att(tok, 10)
    assert (out[:, 0:10:2, :4] - concat_tokens(ep)[:, :5]).abs().max() > 1e-2


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-10), (torch.float32, 1e-5)])
@pytest.mark.parametrize("kernel", ["linear", "softmax"])
def test_copy_then_gd_equals_one_gd_step(kernel, dtype, tol):
    from icgd.learners.constructions import copy_gd_construction
    from icgd.learners.tokens import InterleavedTokens
    from icgd.learners.transformer import TransformerLearner

    ep = LinearRegression(dx=10, dy=1, n_context=10, n_queries=3).sample(64, make_generator(5), dtype=dtype)
    model = TransformerLearner(copy_gd_construction(10, 1, 10, 0.6, kernel).build(dtype=dtype), InterleavedTokens())
    assert (model.predict(ep) - GD(0.6).predict(ep)).abs().max() < tol


def test_per_layer_kernels_are_validated():
    from icgd.nn.attention import AttentionConfig
    from icgd.nn.stack import StackConfig

    attn = AttentionConfig(d_model=4)
    with pytest.raises(ValueError, match="kernels"):
        StackConfig(attention=attn, n_layers=2, kernels=("softmax",))
    with pytest.raises(ValueError, match="recurrent"):
        StackConfig(attention=attn, n_layers=2, recurrent=True, kernels=("softmax", "linear"))


def test_per_layer_products_in_a_trained_shaped_stack_give_per_step_gdpp():
    """`readoff.with_layer_products` (the 5-layer interpolation of A.3): per-layer GD++ products put into a
    separate-layer stack are GD++ with those per-step eta and gamma; the stack's own products round-trip."""
    from icgd.analysis.readoff import products, with_layer_products
    from icgd.nn.attention import AttentionConfig
    from icgd.nn.stack import StackConfig

    dx, dy, n, steps = 5, 1, 10, 4
    ep = _episodes(dx, dy, n, 3, torch.float64, seed=2)
    stack = Stack(StackConfig(attention=AttentionConfig(d_model=dx + dy), n_layers=steps), dtype=torch.float64,
                  generator=make_generator(3))
    cons = []
    for eta, gamma in zip(ETAS[:steps], GAMMAS[:steps]):
        w = gdpp_weights(dx, dy, eta, gamma, n)
        cons.append((w["w_k"][0].T @ w["w_q"][0], w["w_o"][0] @ w["w_v"][0]))
    built = TransformerLearner(with_layer_products(stack, cons))
    err = (built.predict(ep) - GDPlusPlus(ETAS[:steps], GAMMAS[:steps]).predict(ep)).abs().max().item()
    assert err < 1e-10, err
    again = TransformerLearner(with_layer_products(stack, [products(stack, k) for k in range(steps)]))
    torch.testing.assert_close(again.predict(ep), TransformerLearner(stack).predict(ep), rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="3 products for a stack of 4"):
        with_layer_products(stack, cons[:3])
    # with token clipping (oswald-deep's 5-layer path keeps the model's clip): the stack with the GD++
    # products is GD++ with the same clip, also where the clip is active
    big = [(kq, pv * 30) for kq, pv in cons]  # etas and gammas x30: tokens leave [-1, 1]
    clipped = Stack(StackConfig(attention=AttentionConfig(d_model=dx + dy), n_layers=steps, clip=1.0),
                    dtype=torch.float64, generator=make_generator(3))
    ref = GDPlusPlus([30 * e for e in ETAS[:steps]], [30 * g for g in GAMMAS[:steps]], clip=1.0)
    assert (ref.predict(ep) - GDPlusPlus(ref.etas, ref.gammas).predict(ep)).abs().max() > 0.1  # the clip acts
    err = (TransformerLearner(with_layer_products(clipped, big)).predict(ep) - ref.predict(ep)).abs().max().item()
    assert err < 1e-10, err
