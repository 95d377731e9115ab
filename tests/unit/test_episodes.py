import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from icgd import Episodes, ShapeError, TaskDistribution, make_generator
from icgd.tasks import LinearRegression


def _ep(b=3, n=4, q=2, dx=5, dy=2):
    g = make_generator(0)
    return Episodes(torch.randn(b, n, dx, generator=g), torch.randn(b, n, dy, generator=g),
                    torch.randn(b, q, dx, generator=g), torch.randn(b, q, dy, generator=g))


def test_episode_shape_errors_are_clear():
    ep = _ep()
    with pytest.raises(ShapeError, match="context_y"):
        Episodes(ep.context_x, ep.context_y[:, :2], ep.query_x)
    with pytest.raises(ShapeError, match="query_x"):
        Episodes(ep.context_x, ep.context_y, ep.query_x[..., :3])
    with pytest.raises(ShapeError, match="query_y"):
        Episodes(ep.context_x, ep.context_y, ep.query_x, ep.query_y[..., :1])
    with pytest.raises(ShapeError, match="3-d"):
        Episodes(ep.context_x[0], ep.context_y, ep.query_x)
    with pytest.raises(ShapeError, match="dtype"):
        Episodes(ep.context_x.double(), ep.context_y, ep.query_x)


def test_indexing_split_cat_fold():
    ep = _ep(b=5, q=3)
    assert ep[1].batch_size == 1 and torch.equal(ep[1].query_x[0], ep.query_x[1])
    parts = ep.split(2)
    assert [p.batch_size for p in parts] == [2, 2, 1]
    assert torch.equal(Episodes.cat(parts).context_x, ep.context_x)
    f = ep.fold_queries()
    assert f.batch_size == 15 and f.n_queries == 1
    # row b*Q + q holds query q of task b with task b's context
    assert torch.equal(f.query_x[7, 0], ep.query_x[2, 1])
    assert torch.equal(f.context_y[7], ep.context_y[2])
    assert ep.to(dtype=torch.float64).dtype == torch.float64


def test_linear_task_is_a_task_distribution_and_reproducible():
    task = LinearRegression()
    assert isinstance(task, TaskDistribution)
    a = task.sample(4, make_generator(7))
    b = task.sample(4, make_generator(7))
    c = task.sample(4, make_generator(8))
    assert torch.equal(a.context_x, b.context_x) and torch.equal(a.query_y, b.query_y)
    assert not torch.equal(a.context_x, c.context_x)


@given(b=st.integers(1, 6), n=st.integers(1, 12), q=st.integers(1, 4), dx=st.integers(1, 8), dy=st.integers(1, 3),
       law=st.sampled_from(["uniform", "normal", "exponential", "laplace"]),
       dtype=st.sampled_from([torch.float32, torch.float64]))
def test_linear_task_shapes_and_targets(b, n, q, dx, dy, law, dtype):
    task = LinearRegression(dx=dx, dy=dy, n_context=n, n_queries=q, input_law=law)
    ep = task.sample(b, make_generator(0), dtype=dtype)
    assert ep.context_x.shape == (b, n, dx) and ep.context_y.shape == (b, n, dy)
    assert ep.query_x.shape == (b, q, dx) and ep.query_y.shape == (b, q, dy)
    assert ep.teacher.shape == (b, dy, dx) and ep.dtype == dtype
    # noiseless: y = W x exactly
    torch.testing.assert_close(ep.context_y, ep.context_x @ ep.teacher.transpose(1, 2))
    torch.testing.assert_close(ep.query_y, ep.query_x @ ep.teacher.transpose(1, 2))


def test_input_laws_have_their_moments():
    g = make_generator(0)
    n = 200_000

    def xs(**kw):
        return LinearRegression(dx=1, n_context=1, **kw).sample(n, g, dtype=torch.float64).context_x.reshape(-1)

    u = xs(input_range=0.5)
    assert u.min() >= -0.5 and u.max() <= 0.5 and abs(u.var() - 1 / 12) < 2e-3
    u2 = xs(input_range=1.0, input_scale=3.0)
    assert u2.abs().max() <= 3.0 and abs(u2.var() - 3.0) < 0.05
    z = xs(input_law="normal")
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01
    e = xs(input_law="exponential")
    assert e.min() >= 0 and abs(e.mean() - 1) < 0.01
    lap = xs(input_law="laplace")
    assert abs(lap.mean()) < 0.01 and abs(lap.var() - 2) < 0.05


def test_teacher_scale_and_noise():
    g = make_generator(1)
    ep = LinearRegression(teacher_scale=2.0).sample(20_000, g, dtype=torch.float64)
    assert abs(ep.teacher.std() - 2.0) < 0.02
    ep = LinearRegression(noise_std=0.5).sample(20_000, g, dtype=torch.float64)
    resid = ep.context_y - ep.context_x @ ep.teacher.transpose(1, 2)
    assert abs(resid.std() - 0.5) < 0.01


def test_bad_task_options_are_rejected():
    with pytest.raises(ValueError, match="dx"):
        LinearRegression(dx=0)
    with pytest.raises(ValueError, match="input_law"):
        LinearRegression(input_law="cauchy")
    with pytest.raises(ValueError, match="extra"):
        LinearRegression(bogus=1)
    with pytest.raises(ValueError, match="batch"):
        LinearRegression().sample(0)


def test_sampling_on_a_generator_device_then_moving():
    ep = LinearRegression().sample(3, make_generator(0), device="cpu", dtype=torch.float32)
    assert ep.device.type == "cpu"


def test_sine_tasks_follow_spec_2():
    from icgd.tasks import SineRegression

    task = SineRegression()
    ep = task.sample(20000, make_generator(0), dtype=torch.float64)
    amp, phase = ep.teacher[:, 0, 0], ep.teacher[:, 0, 1]
    assert 0.1 <= amp.min() and amp.max() <= 5.0 and 0 <= phase.min() and phase.max() <= math.pi
    assert ep.context_x.abs().max() <= 5.0
    y = amp[:, None, None] * torch.sin(ep.context_x - phase[:, None, None])
    assert torch.equal(y, ep.context_y)
    # amplitude and phase independent (the official code made them dependent: coupled=True)
    assert abs(torch.corrcoef(torch.stack([amp, phase]))[0, 1]) < 0.03
    coupled = SineRegression(coupled=True).sample(2000, make_generator(0), dtype=torch.float64).teacher[:, 0]
    assert torch.corrcoef(coupled.T)[0, 1] > 0.999
    grid = torch.linspace(-5, 5, 7)
    g = task.sample(3, make_generator(1), query_x=grid)
    assert torch.equal(g.query_x[1, :, 0], grid) and g.n_queries == 7
    with pytest.raises(ValueError, match="amplitude_high"):
        SineRegression(amplitude_low=2.0, amplitude_high=1.0)
