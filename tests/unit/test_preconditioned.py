"""Preconditioned GD, its closed-form optimal preconditioner on Gaussian covariates (checked against a direct
fit of P on sampled tasks), the Bayes ridge, and the Gaussian-covariate task."""

import pytest
import torch

from icgd.core.episodes import make_generator
from icgd.learners.explicit import GD, Ridge
from icgd.learners.preconditioned import PreconditionedGD, bayes_ridge_alpha, optimal_preconditioner
from icgd.tasks import GaussianRegression
from icgd.tasks.gaussian import isotropic_step


def _fitted_preconditioner(task: GaussianRegression, n_tasks: int, seed: int) -> torch.Tensor:
    """argmin_P of the mean squared error of y_q ~ x_q^T P (1/N) X^T y over sampled tasks: a linear least-squares
    problem in the d^2 entries of P (features vec(x_q h^T), h = (1/N) X^T y)."""
    ep = task.sample(n_tasks, make_generator(seed), dtype=torch.float64)
    h = (ep.context_x.transpose(1, 2) @ ep.context_y)[..., 0] / task.n_context  # (B, d)
    xq, yq = ep.query_x[:, 0], ep.query_y[:, 0, 0]
    features = (xq[:, :, None] * h[:, None, :]).reshape(n_tasks, -1)  # vec(x_q h^T), row-major: P[i, j]
    sol = torch.linalg.lstsq(features, yq[:, None]).solution
    return sol.reshape(task.dx, task.dx)


@pytest.mark.parametrize("noise_std", [0.0, 0.5])
def test_closed_form_preconditioner_is_the_fitted_one_on_a_non_isotropic_covariance(noise_std):
    task = GaussianRegression(dx=3, n_context=5, condition=10.0, rotation_seed=1, noise_std=noise_std)
    sigma = task.covariance()
    closed = optimal_preconditioner(sigma, task.n_context, noise_std=noise_std)
    fitted = _fitted_preconditioner(task, 400_000, seed=0)
    rel = float((fitted - closed).norm() / closed.norm())
    assert rel < 0.03, (rel, closed, fitted)
    # the Sigma-blind answer (a scalar step, or Sigma^-1) is far off: the bar can tell them apart
    scalar = torch.eye(3, dtype=torch.float64) * torch.trace(closed) / 3
    assert float((fitted - scalar).norm() / closed.norm()) > 0.2
    assert float((fitted - torch.linalg.inv(sigma)).norm() / closed.norm()) > 0.2


def test_isotropic_preconditioner_is_n_over_n_plus_d_plus_1():
    for n, d in ((10, 10), (20, 5), (5, 20)):
        p = optimal_preconditioner(torch.eye(d, dtype=torch.float64), n)
        torch.testing.assert_close(p, isotropic_step(n, d) * torch.eye(d, dtype=torch.float64))
    assert isotropic_step(10, 10) == pytest.approx(0.476, abs=5e-4)


def test_preconditioned_gd_with_a_scalar_preconditioner_is_gd():
    ep = GaussianRegression(dx=4, n_context=8, condition=5.0, rotation_seed=0).sample(64, make_generator(1),
                                                                                      dtype=torch.float64)
    for steps in (1, 3):
        pgd = PreconditionedGD(0.3 * torch.eye(4, dtype=torch.float64), steps=steps).predict(ep)
        torch.testing.assert_close(pgd, GD(0.3, steps=steps).predict(ep))
    with pytest.raises(ValueError, match="non-finite"):
        PreconditionedGD(torch.full((4, 4), float("nan")))


def test_bayes_ridge_beats_ridge_with_other_alphas_on_noisy_tasks():
    task = GaussianRegression(dx=5, n_context=8, noise_std=1.0)
    ep = task.sample(50_000, make_generator(2), dtype=torch.float64)
    alpha = bayes_ridge_alpha(task.n_context, task.noise_std)
    assert alpha == pytest.approx(1 / 8)
    loss = {a: float(task.loss(Ridge(a).predict(ep), ep.query_y).mean()) for a in (alpha / 4, alpha, alpha * 4)}
    assert loss[alpha] < min(loss[alpha / 4], loss[alpha * 4]), loss


def test_gaussian_task_covariance_condition_and_teacher():
    task = GaussianRegression(dx=6, condition=20.0, rotation_seed=3, teacher_mean=0.5)
    lam = torch.linalg.eigvalsh(task.covariance())
    assert float(lam.max() / lam.min()) == pytest.approx(20.0) and float(lam.sum()) == pytest.approx(6.0)
    ep = task.sample(100_000, make_generator(0), dtype=torch.float64)
    x = ep.context_x.reshape(-1, 6)
    assert float((x.T @ x / len(x) - task.covariance()).abs().max()) < 0.05
    assert float(ep.teacher.mean()) == pytest.approx(0.5, abs=0.01)
    assert torch.equal(GaussianRegression(dx=6).covariance(), torch.eye(6, dtype=torch.float64))
    same = task.sample(4, make_generator(5)).context_x
    assert torch.equal(same, task.sample(4, make_generator(5)).context_x)


def test_gaussian_task_trains_as_a_config_kind():
    from icgd.train.config import TrainConfig

    cfg = TrainConfig.model_validate({"task": {"kind": "gaussian", "dx": 4, "condition": 10, "rotation_seed": 0}})
    assert cfg.task.kind == "gaussian" and cfg.task.condition == 10


def test_the_link_makes_single_index_targets_and_a_bad_one_is_refused():
    from pydantic import ValidationError

    lin = GaussianRegression(dx=3, n_context=6).sample(16, make_generator(3), dtype=torch.float64)
    for link, f in (("tanh", torch.tanh), ("relu", torch.relu)):
        ep = GaussianRegression(dx=3, n_context=6, link=link).sample(16, make_generator(3), dtype=torch.float64)
        torch.testing.assert_close(ep.context_y, f(lin.context_y))
        torch.testing.assert_close(ep.teacher, lin.teacher)  # the index direction
    with pytest.raises(ValidationError, match="link"):
        GaussianRegression(link="cube")


def test_the_read_off_refuses_a_layer_of_another_size():
    from icgd.analysis.readoff import implicit_preconditioner, stack_from_products

    layer = stack_from_products(torch.eye(7, dtype=torch.float64), torch.eye(7, dtype=torch.float64))
    with pytest.raises(ValueError, match="tokens of size 6"):
        implicit_preconditioner(layer, 5, 10)
