import math

import pytest
import torch

from icgd import ShapeError, make_generator
from icgd.core.metrics import (
    Stat,
    alignment,
    evaluate,
    query_loss,
    sensitivities,
    task_losses,
)
from icgd.learners import GD, LeastSquares, ZeroPredictor, gd_transformer
from icgd.tasks import LinearRegression


def _ep(b=300, q=2, dy=1):
    return LinearRegression(n_queries=q, dy=dy).sample(b, make_generator(0), dtype=torch.float64)


def test_query_loss_is_half_squared_error_mean_over_queries():
    pred = torch.tensor([[[1.0, 0.0], [0.0, 0.0]]])
    target = torch.tensor([[[0.0, 0.0], [2.0, 0.0]]])
    assert torch.allclose(query_loss(pred, target), torch.tensor([0.5 * (1 + 4) / 2]))
    with pytest.raises(ShapeError):
        query_loss(pred, target[..., :1])


def test_stat_confidence_interval():
    v = torch.tensor([1.0, 2.0, 3.0, 4.0])
    s = Stat.of(v)
    half = 1.959963984540054 * float(v.std()) / 2
    assert s.mean == 2.5 and s.ci95 == pytest.approx((2.5 - half, 2.5 + half)) and s.n == 4
    assert math.isinf(Stat.of(torch.tensor([1.0])).ci95[1])


def test_zero_predictor_loss_is_half_the_target_energy():
    ep = _ep()
    losses = task_losses(ZeroPredictor(), ep)
    torch.testing.assert_close(losses, 0.5 * (ep.query_y ** 2).sum(-1).mean(-1))
    assert evaluate(LeastSquares(), ep).mean < 1e-20
    with pytest.raises(ValueError, match="targets"):
        evaluate(ZeroPredictor(), ep.with_query_x(ep.query_x[:, :1]))


def test_sensitivities_of_a_linear_learner_are_its_weights():
    ep = _ep(dy=2)
    gd = GD([0.5, 0.3])
    s = sensitivities(gd, ep)
    assert s.shape == (300, 2, 2, 10)
    w = gd.weights(ep)
    torch.testing.assert_close(s, w.unsqueeze(1).expand_as(s))
    assert not sensitivities(ZeroPredictor(), ep).any()


def test_alignment_of_equal_and_different_learners():
    ep = _ep()
    same = alignment(gd_transformer(10, 1, 10, 0.7), GD(0.7), ep, chunk=128)
    assert same["prediction_difference"].mean < 1e-12
    assert same["sensitivity_cosine"].mean == pytest.approx(1.0, abs=1e-12)
    assert same["sensitivity_l2"].mean < 1e-12
    diff = alignment(GD(0.7), LeastSquares(), ep)
    assert diff["prediction_difference"].mean > 0.1
    assert 0 < diff["sensitivity_cosine"].mean < 0.99
    # a rescaled learner: cosine 1 but L2 distance > 0
    half = alignment(GD(0.7), GD(0.35), ep)
    assert half["sensitivity_cosine"].mean == pytest.approx(1.0, abs=1e-9)
    assert half["sensitivity_l2"].mean > 0.1


def test_cross_entropy_and_accuracy_per_task():
    from icgd.core.metrics import MEASURES, accuracy, cross_entropy

    probs = torch.tensor([[[0.7, 0.2, 0.1], [0.2, 0.5, 0.3]], [[1 / 3, 1 / 3, 1 / 3], [0.1, 0.1, 0.8]]])
    target = torch.tensor([[[1.0, 0, 0], [0, 0, 1.0]], [[0, 1.0, 0], [0, 0, 1.0]]])
    torch.testing.assert_close(cross_entropy(probs, target),
                               torch.tensor([-(math.log(0.7) + math.log(0.3)) / 2,
                                             -(math.log(1 / 3) + math.log(0.8)) / 2]))
    torch.testing.assert_close(accuracy(probs, target), torch.tensor([0.5, 0.5]))
    assert MEASURES["squared_error"] is query_loss
    with pytest.raises(ShapeError):
        cross_entropy(probs, target[..., :2])


def test_tasks_own_their_objective():
    task = LinearRegression(dx=2, n_context=3)
    ep = task.sample(4, make_generator(0), dtype=torch.float64)
    pred = torch.zeros_like(ep.query_y)
    torch.testing.assert_close(task.loss(pred, ep.query_y), query_loss(pred, ep.query_y))
    assert task.objective == "squared_error" and "gd" in task.reference_kinds
