import pytest
import torch

from icgd import make_generator
from icgd.learners import (
    GD,
    GDPlusPlus,
    Learner,
    LeastSquares,
    Ridge,
    ZeroPredictor,
    gd_transformer,
)
from icgd.tasks import LinearRegression


def _ep(n=10, dx=10, dy=1, q=3, b=200, seed=0, **kw):
    return LinearRegression(dx=dx, dy=dy, n_context=n, n_queries=q, **kw).sample(
        b, make_generator(seed), dtype=torch.float64)


def test_every_learner_answers_the_same_call():
    ep = _ep(dy=2)
    learners = [ZeroPredictor(), GD(0.5, 2), GDPlusPlus(0.5, 0.01, 2), LeastSquares(), Ridge(0.1),
                gd_transformer(10, 2, 10, [0.5, 0.5])]
    for lr in learners:
        assert isinstance(lr, Learner)
        assert lr.predict(ep).shape == (200, 3, 2)
        assert isinstance(lr.describe(), dict) and "learner" in lr.describe()


def test_gd_step_is_the_gradient_step():
    ep = _ep()
    w = GD(0.3, 1).weights(ep)
    x, y = ep.context_x, ep.context_y
    # independent formula: grad of 1/(2N) sum (w.x - y)^2 at w = 0 is -(1/N) sum y x
    ref = 0.3 * (y.transpose(1, 2) @ x) / 10
    torch.testing.assert_close(w, ref)


def test_many_small_gd_steps_converge_to_least_squares():
    ep = _ep(n=30, dx=4, b=20)
    gd = GD(1.0, 3000)
    torch.testing.assert_close(gd.predict(ep), LeastSquares().predict(ep), rtol=1e-6, atol=1e-6)


def test_least_squares_recovers_the_teacher_and_ridge_shrinks():
    ep = _ep(n=15, dx=5, dy=2, b=10)
    torch.testing.assert_close(LeastSquares().weights(ep), ep.teacher)
    w_ridge = Ridge(10.0).weights(ep)
    assert w_ridge.norm() < ep.teacher.norm()
    # ridge solves (X^T X / N + alpha I) W^T = X^T Y / N
    x, y = ep.context_x, ep.context_y
    lhs = (x.transpose(1, 2) @ x / 15 + 10.0 * torch.eye(5, dtype=x.dtype)) @ w_ridge.transpose(1, 2)
    torch.testing.assert_close(lhs, x.transpose(1, 2) @ y / 15)
    with pytest.raises(ValueError):
        Ridge(-1.0)


def test_least_squares_is_minimum_norm_when_underdetermined():
    ep = _ep(n=3, dx=8, b=5)
    w = LeastSquares().weights(ep)
    torch.testing.assert_close(w @ ep.context_x.transpose(1, 2), ep.context_y.transpose(1, 2))
    assert (w.norm(dim=(1, 2)) <= ep.teacher.norm(dim=(1, 2)) + 1e-9).all()


def test_gdpp_with_zero_gamma_is_gd_and_w0_is_used():
    ep = _ep(dy=2)
    w0 = torch.randn(2, 10, dtype=torch.float64)
    torch.testing.assert_close(GDPlusPlus([0.5, 0.7], [0.0, 0.0], w0=w0).predict(ep),
                               GD([0.5, 0.7], w0=w0).predict(ep))
    torch.testing.assert_close(GD([0.0], w0=w0).predict(ep), ep.query_x @ w0.T)


def test_gdpp_transforms_inputs_by_curvature():
    """One GD++ step with eta = 0 leaves predictions at W0 x_q; the next GD step sees (I - g XX^T) x."""
    ep = _ep(b=5)
    gamma, eta = 0.05, 0.4
    pred = GDPlusPlus([0.0, eta], [gamma, 0.0]).predict(ep)
    x = ep.context_x
    xxt = x.transpose(1, 2) @ x
    t = lambda z: z - gamma * z @ xxt  # noqa: E731
    ref = (eta / 10) * (t(ep.query_x) @ t(x).transpose(1, 2)) @ ep.context_y
    torch.testing.assert_close(pred, ref)


def test_step_count_mismatch_is_an_error():
    with pytest.raises(ValueError, match="etas"):
        GD([0.1, 0.2], 3)
    with pytest.raises(ValueError, match="gammas"):
        GDPlusPlus([0.1, 0.2], [0.1])


def test_feature_lsa_control_is_the_gd_construction_on_mlp_features():
    from icgd.learners.constructions import gd_weights
    from icgd.learners.deep import FeatureLSA
    from icgd.tasks import SineRegression

    ep = SineRegression(n_queries=4).sample(16, make_generator(0), dtype=torch.float64)
    control = FeatureLSA(d_embed=12, gd_control=True, eta_init=0.4, dtype=torch.float64, generator=make_generator(7))
    model = FeatureLSA(d_embed=12, dtype=torch.float64, generator=make_generator(7))
    # the same seed gives the same embedding and MLP
    for a, b in zip(control.mlp.parameters(), model.mlp.parameters()):
        assert torch.equal(a, b)
    assert torch.equal(control.embed.weight, model.embed.weight)
    with torch.no_grad():
        for k, v in gd_weights(11, 1, 0.4, ep.n_context).items():
            getattr(model.attn, k).copy_(v)
    assert (model.predict(ep) - control.predict(ep)).abs().max() < 1e-12
    x = torch.linspace(-5, 5, 9, dtype=torch.float64)[:, None]
    assert (model.kernel(x) - control.kernel(x)).abs().max() < 1e-10
    # the control's prediction is -t_q + (eta / N) sum_i t_i m_i . m_q
    h = control.features(ep)
    m, t = h[..., :11], h[..., 11:]
    n = ep.n_context
    manual = -t[:, n:] + 0.4 / n * (m[:, n:] @ m[:, :n].transpose(1, 2)) @ t[:, :n]
    assert (control.predict(ep) - manual).abs().max() < 1e-12
    assert torch.equal(control.initial_prediction(ep), -t[:, n:])
    # without hooks only the queries' update is computed (training's path); with them every token's, which
    # the hook points hold: the predictions agree
    for learner in (control, model):
        cache: dict = {}
        with_hooks = learner.predict(ep, cache)
        assert cache["attn.out"].shape[1] == ep.n_context + ep.n_queries
        torch.testing.assert_close(learner.predict(ep), with_hooks, rtol=1e-12, atol=1e-13)


def test_official_code_init_and_fixed_eta_of_the_sine_models():
    from icgd.learners.deep import FeatureLSA
    from icgd.train.config import build_config
    from icgd.train.models import trainable_names

    m = FeatureLSA(d_embed=40, mlp_init_scale=0.002, generator=make_generator(0), dtype=torch.float64)
    w = m.mlp[0].weight.detach()
    assert float(m.mlp[0].bias.detach().abs().max()) == 0.0 and float(m.mlp[2].bias.detach().abs().max()) == 0.0
    std = (0.002 / 40) ** 0.5  # truncation at 2 std leaves 0.88 of it
    assert 0.84 * std < float(w.std()) < 0.92 * std and float(w.abs().max()) <= 2 * std + 1e-12
    default = FeatureLSA(d_embed=40, generator=make_generator(0), dtype=torch.float64)
    assert float(default.mlp[0].weight.detach().std()) > 5 * float(w.std())  # torch's default is far larger
    code = {"kind": "mlp_lsa", "gd_control": True, "learn_eta": False}
    cfg = build_config({"name": "c", "task": {"kind": "sine"}, "model": code})
    assert "eta" not in trainable_names(cfg)
    cfg = build_config({"name": "c", "task": {"kind": "sine"}, "model": {"kind": "mlp_lsa", "gd_control": True}})
    assert "eta" in trainable_names(cfg)
