"""Hook points read and patch activations by name, without changing how a layer computes."""

import pytest
import torch

from icgd import make_generator
from icgd.learners import gd_transformer
from icgd.learners.deep import FeatureLSA
from icgd.nn.attention import Attention
from icgd.tasks import LinearRegression, SineRegression


def _setup(steps=2, **kw):
    ep = LinearRegression(dx=3, n_context=6, n_queries=2).sample(5, make_generator(0), dtype=torch.float64)
    return ep, gd_transformer(3, 1, 6, etas=0.3, steps=steps, **kw)


def test_reading_out_and_residual_hooks_keeps_the_associative_linear_path(monkeypatch):
    ep, tf = _setup()
    plain = tf.predict(ep)

    def no_weights(*a, **k):
        raise AssertionError("the weights matrix was materialised")

    monkeypatch.setattr(Attention, "weights", no_weights)  # break-check: fails when reads materialise it
    cache = {}
    with tf.model.hooks.caching(cache, "layers.*.attn.out"), tf.model.hooks.caching(cache, "*.resid_post"):
        read = tf.predict(ep)
    assert torch.equal(read, plain)  # the same computation, bit for bit
    assert sorted(cache) == ["layers.0.attn.out", "layers.0.resid_post", "layers.1.attn.out", "layers.1.resid_post"]
    torch.testing.assert_close(-cache["layers.1.resid_post"][:, 6:, 3:], plain)
    assert not tf.model.hooks  # removed after the block


def test_patching_attention_out_with_zero_gives_the_initial_prediction():
    ep, tf = _setup()
    with tf.model.hooks.using("layers.*.attn.out", lambda t, name: torch.zeros_like(t)):
        pred = tf.predict(ep)
    assert torch.equal(pred, torch.zeros_like(pred))  # W0 = 0: no update, prediction 0
    with tf.model.hooks.using("layers.1.attn.out", lambda t, name: torch.zeros_like(t)):
        one = tf.predict(ep)
    _, tf1 = _setup(steps=1)
    torch.testing.assert_close(one, tf1.predict(ep))  # ablating layer 2 leaves one GD step


def test_weights_hooks_read_and_patch_the_attention_weights():
    ep, tf = _setup(steps=1)
    seen = {}
    with tf.model.hooks.caching(seen, "layers.0.attn.weights"):
        pred = tf.predict(ep)
    assert seen["layers.0.attn.weights"].shape == (5, 1, 8, 6)
    torch.testing.assert_close(pred, tf.predict(ep))
    with tf.model.hooks.using("layers.0.attn.weights", lambda w, name: 2 * w):
        doubled = tf.predict(ep)
    torch.testing.assert_close(doubled, 2 * pred)  # linear attention: twice the weights, twice the step


def test_a_recurrent_stack_names_each_application_step():
    from icgd.analysis.readoff import gd_products, stack_from_products
    from icgd.learners import TransformerLearner

    ep, _ = _setup()
    rec = TransformerLearner(stack_from_products(*gd_products(3, 1, 0.3, 6), n_layers=3, recurrent=True))
    assert len(rec.model.layers) == 1
    cache = {}
    rec.predict(ep, cache)  # the dict shortcut reads every point, weights included
    assert {"resid_pre", "layers.0.attn.weights", "layers.1.attn.out", "layers.2.resid_post"} <= set(cache)
    assert not torch.equal(cache["layers.1.resid_post"], cache["layers.2.resid_post"])


def test_feature_lsa_hook_points():
    ep = SineRegression().sample(4, make_generator(1), dtype=torch.float64)
    m = FeatureLSA(dtype=torch.float64, generator=make_generator(0))
    cache = {}
    pred = m.predict(ep, cache)
    assert {"embed", "features", "attn.out", "out"} <= set(cache)
    with m.hooks.using("attn.out", lambda t, name: torch.zeros_like(t)):
        torch.testing.assert_close(m.predict(ep), m.initial_prediction(ep))
    torch.testing.assert_close(m.predict(ep), pred)


def test_removing_a_hook_by_its_handle():
    ep, tf = _setup()
    remove = tf.model.hooks.add("layers.0.attn.out", lambda t, name: 0 * t)
    assert not torch.equal(tf.predict(ep), _setup()[1].predict(ep))
    remove()
    torch.testing.assert_close(tf.predict(ep), _setup()[1].predict(ep))
    with pytest.raises(ZeroDivisionError):
        with tf.model.hooks.using("resid_pre", lambda t, name: 1 / 0):
            tf.predict(ep)
    assert not tf.model.hooks
