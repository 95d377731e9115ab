"""Probes of hidden states (`icgd.analysis.probes`) and the regression decoder they read
(`icgd.learners.decoder`)."""

import numpy as np
import pytest
import torch

from icgd.analysis.probes import linear_probe_r2, mlp_probe_r2, probe_targets, r2
from icgd.core.episodes import Episodes, ShapeError, make_generator
from icgd.tasks import GaussianRegression


def _tasks(n, seed, dx=4, n_context=10):
    return GaussianRegression(dx=dx, n_context=n_context).sample(n, make_generator(seed), dtype=torch.float64)


def test_targets_are_the_moment_and_the_least_squares_weights():
    ep = _tasks(5, 0)
    t = probe_targets(ep)
    for b in range(5):
        x, y = ep.context_x[b].numpy(), ep.context_y[b, :, 0].numpy()
        np.testing.assert_allclose(t["xty"][b].numpy(), x.T @ y, rtol=1e-12)
        np.testing.assert_allclose(t["w_ols"][b].numpy(), np.linalg.lstsq(x, y, rcond=None)[0], rtol=1e-9)
    # noiseless tasks with N > d: w_OLS is the teacher
    torch.testing.assert_close(t["w_ols"], ep.teacher[:, 0], rtol=1e-9, atol=1e-9)
    with pytest.raises(ShapeError, match="N >= Dx"):
        probe_targets(_tasks(2, 0, dx=6, n_context=4))


def test_r2_is_one_for_the_target_and_zero_for_its_mean():
    t = torch.randn(100, 3, dtype=torch.float64)
    assert r2(t, t) == 1.0
    assert abs(r2(t.mean(0).expand(100, 3), t)) < 1e-12


@pytest.mark.parametrize("probe", [linear_probe_r2, mlp_probe_r2])
def test_a_probe_reads_a_state_that_holds_the_target_and_not_one_that_does_not(probe):
    train, test = _tasks(2000, 1), _tasks(1000, 2)
    t_train, t_test = probe_targets(train), probe_targets(test)
    g = torch.Generator().manual_seed(0)
    noise = lambda n: torch.randn(n, 28, generator=g, dtype=torch.float64)  # noqa: E731
    holds = probe(torch.cat([t_train["xty"], noise(2000)], 1), t_train["xty"], torch.cat([t_test["xty"], noise(1000)], 1),
                  t_test["xty"])
    assert holds > 0.95
    blind = probe(noise(2000), t_train["xty"], noise(1000), t_test["xty"])
    assert -0.2 < blind < 0.05


def test_probes_refuse_mismatched_shapes():
    with pytest.raises(ShapeError, match="differ in count"):
        linear_probe_r2(torch.zeros(10, 3), torch.zeros(9, 2), torch.zeros(5, 3), torch.zeros(5, 2))


# ------------------------------------------------------------------------------------------- the decoder
def _decoder(n_layers=2, seed=0, dx=4, n_context=10):
    from icgd.train.config import build_config
    from icgd.train.models import as_learner, build_module

    cfg = build_config({"task": {"kind": "gaussian", "dx": dx, "n_context": n_context},
                        "model": {"kind": "decoder", "d_model": 16, "n_heads": 2, "n_layers": n_layers}})
    return as_learner(cfg, build_module(cfg, dtype=torch.float64, generator=make_generator(seed)), "decoder")


def test_the_decoder_reads_its_hidden_states_and_predicts_from_the_last():
    dec = _decoder(n_layers=3)
    ep = GaussianRegression(dx=4, n_context=10, n_queries=3).sample(6, make_generator(0), dtype=torch.float64)
    h = dec.hidden_states(ep)
    assert h.shape == (4, 6, 3, 16)
    torch.testing.assert_close(dec.predict(ep), dec.read_out(h[-1]))
    # each query its own sequence: permuting the queries permutes the predictions
    perm = torch.tensor([2, 0, 1])
    swapped = Episodes(ep.context_x, ep.context_y, ep.query_x[:, perm], ep.query_y[:, perm])
    torch.testing.assert_close(dec.predict(swapped), dec.predict(ep)[:, perm])
    # the prediction reads the context's labels
    moved = Episodes(ep.context_x, ep.context_y + 1.0, ep.query_x, ep.query_y)
    assert not torch.allclose(dec.predict(moved), dec.predict(ep))


def test_the_decoder_refuses_episodes_it_cannot_read():
    dec = _decoder()
    with pytest.raises(ShapeError, match="N <= 10"):
        dec.predict(_tasks(2, 0, n_context=11))
    with pytest.raises(ShapeError, match="Dx=4"):
        dec.predict(_tasks(2, 0, dx=3))
    with pytest.raises(TypeError, match="float32"):
        dec.predict(_tasks(2, 0).to(dtype=torch.float32))


def test_the_decoders_sequence_interleaves_x_and_y_tokens_and_ends_at_the_query():
    """Akyuerek et al.'s layout: x_1, y_1, ..., x_N, y_N, then x_q; tokens [x; 0] and [0; y]."""
    dec = _decoder(n_context=3)
    ep = GaussianRegression(dx=4, n_context=3, n_queries=2).sample(2, make_generator(0), dtype=torch.float64)
    seq = dec.sequences(ep).reshape(2, 2, 7, 5)
    for b in range(2):
        for q in range(2):
            for i in range(3):
                torch.testing.assert_close(seq[b, q, 2 * i], torch.cat([ep.context_x[b, i], torch.zeros(1, dtype=torch.float64)]))
                torch.testing.assert_close(seq[b, q, 2 * i + 1], torch.cat([torch.zeros(4, dtype=torch.float64), ep.context_y[b, i]]))
            torch.testing.assert_close(seq[b, q, 6], torch.cat([ep.query_x[b, q], torch.zeros(1, dtype=torch.float64)]))
