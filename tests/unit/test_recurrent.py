"""The LSTM learners of source 001: the written-out cell equals torch.nn.LSTM; one sequence per query."""

import pytest
import torch

from icgd import make_generator
from icgd.core.episodes import ShapeError
from icgd.learners.recurrent import LSTMLearner
from icgd.tasks import LinearRegression
from icgd.train.config import ConfigError, load_config
from icgd.train.evaluation import reference_steps_of


@pytest.mark.parametrize("layers", [1, 3])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_lstm_learner_equals_torch_lstm(layers, bidirectional):
    torch.manual_seed(layers)
    dx, dy, hid = 4, 2, 5
    lstm = torch.nn.LSTM(dx + dy, hid, layers, batch_first=True, bidirectional=bidirectional, dtype=torch.float64)
    readout = torch.nn.Linear(hid * (2 if bidirectional else 1), dy, dtype=torch.float64)
    m = LSTMLearner.from_torch_lstm(lstm, readout, dx, dy)
    ep = LinearRegression(dx=dx, dy=dy, n_context=6).sample(7, make_generator(0), dtype=torch.float64)
    seq = m.sequences(ep)
    assert seq.shape == (7, 7, dx + dy) and torch.equal(seq[:, -1, dx:], torch.zeros(7, dy, dtype=torch.float64))
    want = readout(lstm(seq)[0][:, -1]).reshape(7, 1, dy)
    torch.testing.assert_close(m.predict(ep), want, rtol=0, atol=1e-12)


def test_each_query_is_read_as_its_own_sequence():
    m = LSTMLearner(3, 1, hidden=4, n_layers=2, bidirectional=True, dtype=torch.float64, generator=make_generator(1))
    ep = LinearRegression(dx=3, n_context=5, n_queries=3).sample(4, make_generator(2), dtype=torch.float64)
    together = m.predict(ep)
    for q in range(3):
        one = ep.__class__(ep.context_x, ep.context_y, ep.query_x[:, q:q + 1], ep.query_y[:, q:q + 1])
        torch.testing.assert_close(together[:, q:q + 1], m.predict(one), rtol=0, atol=1e-14)
    with pytest.raises(ShapeError, match="Dx=3"):
        m.predict(LinearRegression(dx=2).sample(2))


def test_seeded_initialisation_and_config_errors():
    a = LSTMLearner(3, 1, hidden=4, generator=make_generator(5))
    b = LSTMLearner(3, 1, hidden=4, generator=make_generator(5))
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    cfg = load_config("bilstm-2")
    assert cfg.model.bidirectional and cfg.model.n_layers == 2 and reference_steps_of(cfg) == 1
    with pytest.raises(ConfigError, match="model.hidden=0"):
        load_config("lstm-2", ["model.hidden=0"])
    with pytest.raises(ConfigError, match="model.heads"):
        load_config("lstm-2", ["model.heads=2"])
