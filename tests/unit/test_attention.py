import math

import pytest
import torch

from icgd import ShapeError
from icgd.nn.attention import Attention, AttentionConfig
from icgd.nn.kernels import get_kernel, kernel_names
from icgd.nn.stack import Stack, StackConfig


def _attn(**kw):
    torch.manual_seed(0)
    a = Attention(AttentionConfig(**kw), init_std=0.5, dtype=torch.float64)
    return a


def _tokens(b=3, t=7, d=5):
    return torch.randn(b, t, d, generator=torch.Generator().manual_seed(1), dtype=torch.float64)


def test_lsa_matches_the_paper_formula():
    """E <- P W_V E_c (W_K E_c)^T W_Q E, columns = tokens, keys over the context tokens only."""
    a = _attn(d_model=5)
    x = _tokens()
    n = 5
    out = a(x, n)
    for b in range(x.shape[0]):
        e = x[b].T  # (D, T)
        ec = e[:, :n]
        ref = a.w_o[0] @ a.w_v[0] @ ec @ (a.w_k[0] @ ec).T @ a.w_q[0] @ e
        torch.testing.assert_close(out[b], ref.T, rtol=1e-12, atol=1e-12)


def test_multi_head_is_the_sum_of_heads_and_query_in_keys():
    a = _attn(d_model=5, n_heads=3, d_key=2, d_value=4, query_in_keys=True)
    x = _tokens()
    out = a(x, 2)
    ref = 0
    for h in range(3):
        e = x.transpose(1, 2)  # keys are all tokens
        ref = ref + a.w_o[h] @ a.w_v[h] @ e @ (a.w_k[h] @ e).transpose(1, 2) @ a.w_q[h] @ e
    torch.testing.assert_close(out, ref.transpose(1, 2))


def test_softmax_kernel_is_standard_attention_with_causal_mask():
    a = _attn(d_model=5, n_heads=2, kernel="softmax", causal=True, query_in_keys=True)
    x = _tokens()
    out = a(x, x.shape[1])
    t = x.shape[1]
    ref = 0
    for h in range(2):
        q, k, v = x @ a.w_q[h].T, x @ a.w_k[h].T, x @ a.w_v[h].T
        s = q @ k.transpose(1, 2)
        s = s.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), -math.inf)
        ref = ref + torch.softmax(s, -1) @ v @ a.w_o[h].T
    torch.testing.assert_close(out, ref)


def test_count_normalisation_divides_by_the_number_of_keys():
    x = _tokens()
    a = _attn(d_model=5, normalize="count")
    b = _attn(d_model=5)
    torch.testing.assert_close(a(x, 4), b(x, 4) / 4)


@pytest.mark.parametrize("name", kernel_names())
def test_kernels_match_their_formulas(name):
    g = torch.Generator().manual_seed(3)
    q = torch.rand(2, 1, 4, 3, generator=g, dtype=torch.float64) + 0.1
    k = torch.rand(2, 1, 5, 3, generator=g, dtype=torch.float64) + 0.1
    kern = get_kernel(name)
    p = torch.tensor([[0.7, 0.3][:kern.n_params]], dtype=torch.float64)
    got = kern.fn(q, k, p, {"degree": 3})
    qi, kj = q[0, 0, 1], k[0, 0, 2]
    dot = float(qi @ kj)
    s = 0.7
    ref = {
        "linear": dot,
        "softmax": dot / s,  # logits; normalised by the attention
        "exponential": math.exp(dot / s),
        "rbf": math.exp(-float(((qi - kj) ** 2).sum()) / (2 * s * s)),
        "laplacian": math.exp(-float((qi - kj).abs().sum()) / s),
        "sigmoid": math.tanh(0.7 * dot + 0.3),
        "polynomial": (dot + 0.7) ** 3,
        "cosine": dot / float(qi.norm() * kj.norm()),
        "chi_squared": math.exp(-s * float(((qi - kj) ** 2 / (qi + kj)).sum())),  # the standard one: inputs >= 0
        "chi_squared_abs_of_sum": math.exp(-s * float(((qi - kj) ** 2 / (qi + kj)).sum())),
    }[name]
    assert got.shape == (2, 1, 4, 5)
    assert abs(float(got[0, 0, 1, 2]) - ref) < 1e-12


@pytest.mark.parametrize("name", kernel_names())
def test_every_kernel_runs_in_attention(name):
    a = _attn(d_model=4, n_heads=2, kernel=name)
    x = torch.rand(2, 6, 4, dtype=torch.float64)
    out = a(x, 5)
    assert out.shape == x.shape and torch.isfinite(out).all()


def test_bad_attention_inputs():
    with pytest.raises(ValueError, match="unknown kernel"):
        AttentionConfig(d_model=3, kernel="gaussianish")
    a = _attn(d_model=5)
    with pytest.raises(ShapeError, match="expects tokens"):
        a(torch.zeros(2, 3, 4, dtype=torch.float64), 2)
    with pytest.raises(ShapeError, match="n_context"):
        a(torch.zeros(2, 3, 5, dtype=torch.float64), 4)


def test_cache_exposes_named_hook_points_and_matches_fast_path():
    cfg = StackConfig(attention=AttentionConfig(d_model=5), n_layers=2)
    torch.manual_seed(0)
    s = Stack(cfg, dtype=torch.float64)
    x = _tokens()
    cache: dict = {}
    with_cache = s(x, 4, cache)
    torch.testing.assert_close(with_cache, s(x, 4))  # the associative fast path agrees with the cached one
    for key in ("resid_pre", "layers.0.attn.weights", "layers.0.attn.out", "layers.1.resid_post"):
        assert key in cache
    assert cache["layers.0.attn.weights"].shape == (3, 1, 7, 4)


def test_recurrent_stack_shares_weights_and_dampening_clipping():
    cfg = StackConfig(attention=AttentionConfig(d_model=5), n_layers=3, recurrent=True, init_scale=1.0)
    torch.manual_seed(0)
    s = Stack(cfg, dtype=torch.float64)
    assert len(s.layers) == 1
    x = _tokens()
    ref = x
    for _ in range(3):
        ref = ref + s.layers[0].attn(ref, 4)
    torch.testing.assert_close(s(x, 4), ref)
    s.dampening = 0.5
    ref = x
    for _ in range(5):
        ref = ref + 0.5 * s.layers[0].attn(ref, 4)
    torch.testing.assert_close(s.with_steps(5)(x, 4), ref)
    s.clip = 0.1
    assert s(x, 4).abs().max() <= 0.1
    with pytest.raises(ValueError, match="recurrent"):
        Stack(cfg.model_copy(update={"recurrent": False})).with_steps(5)


def test_layer_norm_and_mlp_blocks_in_both_dtypes():
    for dtype in (torch.float32, torch.float64):
        cfg = StackConfig(attention=AttentionConfig(d_model=6, n_heads=2, kernel="softmax"), n_layers=2,
                          layer_norm=True, mlp=True)
        s = Stack(cfg, dtype=dtype)
        x = torch.randn(2, 5, 6, dtype=dtype)
        out = s(x, 4)
        assert out.dtype == dtype and out.shape == x.shape
        assert s.layers[0].mlp[0].out_features == 24
        out.sum().backward()
        assert s.layers[0].attn.w_q.grad is not None


def test_default_init_is_the_small_variance_scaling():
    cfg = StackConfig(attention=AttentionConfig(d_model=11), n_layers=2)
    assert cfg.attention_init_std == pytest.approx(math.sqrt(0.001 / 11))
    s = Stack(cfg)
    w = s.layers[0].attn.w_q
    assert w.abs().max() <= 2 * cfg.attention_init_std + 1e-9


def _written_out_ema(v, beta):
    """sum_{i<t} beta^(t-i) v_i, term by term (beta: a float or one per head (H,))."""
    out = torch.zeros_like(v)
    b = torch.as_tensor(beta, dtype=v.dtype)
    b = b[:, None] if b.dim() else b
    for t in range(v.shape[-2]):
        for i in range(t):
            out[..., t, :] += b ** (t - i) * v[..., i, :]
    return out


@pytest.mark.parametrize("t_len", [1, 2, 9, 64, 65, 150])
@pytest.mark.parametrize("beta", [0.05, 0.5, 0.9, 0.999])
def test_past_ema_is_the_written_out_sum(t_len, beta):
    from icgd.nn.attention import past_ema

    g = torch.Generator().manual_seed(t_len)
    v = torch.randn(2, 3, t_len, 4, dtype=torch.float64, generator=g)
    expect = _written_out_ema(v, beta)
    for chunk in (1, 7, 64):
        torch.testing.assert_close(past_ema(v, beta, chunk), expect, rtol=1e-12, atol=1e-12)
    per_head = torch.tensor([0.2, beta, 0.7], dtype=torch.float64)
    torch.testing.assert_close(past_ema(v, per_head[:, None, None], 16), _written_out_ema(v, per_head),
                               rtol=1e-12, atol=1e-12)


def test_momentum_attention_adds_the_value_ema_to_causal_attention():
    torch.manual_seed(0)
    opts = dict(d_model=6, n_heads=2, d_value=3, kernel="softmax", causal=True, query_in_keys=True)
    plain = Attention(AttentionConfig(**opts), dtype=torch.float64)
    mom = Attention(AttentionConfig(**opts, momentum=0.6), dtype=torch.float64)
    mom.load_state_dict(plain.state_dict() | {"momentum_logit": mom.momentum_logit}, strict=True)
    x = torch.randn(3, 11, 6, dtype=torch.float64)
    v = torch.einsum("hvd,btd->bhtv", plain.w_v, x)
    extra = torch.einsum("hdv,bhtv->btd", plain.w_o, _written_out_ema(v, 0.6))
    torch.testing.assert_close(mom(x, 11), plain(x, 11) + extra, rtol=1e-12, atol=1e-12)
    # learnt: beta is a parameter with a gradient
    learnt = Attention(AttentionConfig(**opts, momentum=0.6, learn_momentum=True), dtype=torch.float64)
    learnt(x, 11).sum().backward()
    assert learnt.momentum_logit.grad is not None and learnt.momentum_logit.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="needs causal"):
        AttentionConfig(d_model=6, momentum=0.5)
    with pytest.raises(ValueError):
        AttentionConfig(d_model=6, causal=True, momentum=1.0)


def test_layer_norm_between_layers_skips_the_first():
    """Source 000, A.9 (Fig. 14b): two layers with a LayerNorm only between them."""
    from icgd.nn.stack import Stack, StackConfig

    cfg = StackConfig(attention=AttentionConfig(d_model=4), n_layers=3, layer_norm="between")
    st = Stack(cfg, dtype=torch.float64)
    assert [blk.ln1 is not None for blk in st.layers] == [False, True, True]
    for bad in ({"recurrent": True}, {"n_layers": 1}):
        with pytest.raises(ValueError, match="'between' needs 2 or more separate"):
            StackConfig(attention=AttentionConfig(d_model=4), **({"n_layers": 2, "layer_norm": "between"} | bad))
    with pytest.raises(ValueError):
        StackConfig(attention=AttentionConfig(d_model=4), n_layers=2, layer_norm="after")


def test_chi_squared_on_signed_inputs_is_the_standard_kernel_on_positive_and_negative_parts():
    """`chi_squared` on signed q, k equals scikit-learn's convention for the standard kernel
    (inputs >= 0, a 0/0 term counted as 0) applied to [q+, q-] and [k+, k-]; `chi_squared_abs_of_sum` keeps
    |q + k| in the denominator and so explodes where q ~ -k."""
    g = torch.Generator().manual_seed(5)
    q = torch.randn(1, 1, 6, 3, generator=g, dtype=torch.float64)
    k = torch.randn(1, 1, 7, 3, generator=g, dtype=torch.float64)
    p = torch.tensor([[0.6]], dtype=torch.float64)
    got = get_kernel("chi_squared").fn(q, k, p, {})

    def parts(x):
        return torch.cat([x.clamp_min(0), (-x).clamp_min(0)], -1)

    a, b = parts(q[0, 0]).unsqueeze(1), parts(k[0, 0]).unsqueeze(0)
    num, den = (a - b) ** 2, a + b
    terms = torch.where(den > 0, num / den.clamp_min(1e-300), torch.zeros_like(num))
    torch.testing.assert_close(got[0, 0], torch.exp(-0.6 * terms.sum(-1)))
    near_opposite = torch.tensor([[[[0.5, 0.5]]]], dtype=torch.float64)
    other = torch.tensor([[[[-0.5 + 1e-9, 0.5]]]], dtype=torch.float64)
    assert get_kernel("chi_squared").fn(near_opposite, other, p, {}).item() == pytest.approx(math.exp(-0.6 * 1.0))
    assert get_kernel("chi_squared_abs_of_sum").fn(near_opposite, other, p, {}).item() < 1e-100


@pytest.mark.parametrize("opts", [
    dict(d_model=6, kernel="linear"),  # wide heads over few tokens: (Q K^T) V
    dict(d_model=6, d_key=2, d_value=2, kernel="linear"),  # narrow heads: (V^T K) Q
    dict(d_model=6, n_heads=2, kernel="softmax"),
    dict(d_model=6, kernel="rbf", normalize="count"),
    dict(d_model=6, n_heads=2, d_value=3, kernel="softmax", causal=True, query_in_keys=True, momentum=0.6),
])
def test_the_update_of_some_rows_is_those_rows_of_the_full_update(opts):
    """rows_from (a read-out of the queries alone) gives exactly those rows of the whole update, with and
    without a causal mask and momentum, and refuses hooks, whose points hold every token."""
    a = _attn(**opts)
    x = _tokens(t=9, d=6)
    full = a(x, 6)
    for r in (1, 6, 8):
        torch.testing.assert_close(a(x, 6, rows_from=r), full[:, r:], rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="hook points"):
        a(x, 6, {}, rows_from=6)
    with pytest.raises(ShapeError, match="rows_from"):
        a(x, 6, rows_from=9)


@pytest.mark.parametrize("dk,dv,t_len", [(6, 6, 3), (2, 2, 40)])
def test_both_products_of_a_bilinear_kernel_agree(monkeypatch, dk, dv, t_len):
    """(Q K^T) V and (V^T K) Q give the same update (to float64 rounding) whichever is cheaper; the choice is
    the one with fewer multiplications."""
    import icgd.nn.attention as attention

    a = _attn(d_model=6, d_key=dk, d_value=dv)
    x = _tokens(t=t_len, d=6)
    n = t_len - 1
    chosen = attention.associative_cheaper(t_len, n, dk, dv)
    assert chosen == ((n + t_len) * dk * dv < t_len * n * (dk + dv))
    assert chosen == (dk == 2)  # narrow heads over 40 tokens: associative; wide heads over 3: direct
    outs = []
    for use in (True, False):
        monkeypatch.setattr(attention, "associative_cheaper", lambda *args, use=use: use)
        outs.append(a(x, n))
    torch.testing.assert_close(outs[0], outs[1], rtol=1e-12, atol=1e-12)
