"""Multi-query associative recall (`icgd.tasks.recall`): its sequences, its scored positions, its loss and
accuracy, and that the causal LM trains on it."""

import math

import pytest
import torch

from icgd.core.episodes import make_generator
from icgd.tasks import AssociativeRecall
from icgd.tasks.recall import masked_next_token_loss, recall_accuracy


def test_sequences_hold_pairs_then_queried_keys_with_their_values():
    task = AssociativeRecall(vocab=20, n_pairs=5, queries=3)
    ep = task.sample(64, make_generator(0))
    assert ep.query_x.shape == (64, task.seq_len, 1) == (64, 15, 1)
    x, y = ep.query_x[..., 0].long(), ep.query_y[..., 0].long()
    repeated = 0
    for b in range(64):
        keys, values = x[b, 0:10:2], x[b, 1:10:2]
        assert len(set(keys.tolist())) == 5 and keys.max() < 10 and values.min() >= 10  # distinct keys, halves
        assert len(set(values.tolist())) == 5  # distinct values: their frequencies tell nothing
        table = dict(zip(keys.tolist(), values.tolist()))
        scored = (y[b] >= 0).nonzero()[:, 0].tolist()
        assert scored == [10, 12, 14]  # the query keys' positions, and only them
        for i in scored:
            assert y[b, i] == table[int(x[b, i])]  # a query key's target is its value in context
            if i + 1 < task.seq_len:
                assert x[b, i + 1] == y[b, i]  # the value follows as the next input
        repeated += len(set(x[b, scored].tolist())) < 3
    assert repeated > 5  # probes drawn independently: a key is sometimes asked twice
    # fresh pairs per sequence: the same key maps to other values in other sequences
    assert len({(int(x[b, 0]), int(x[b, 1])) for b in range(64)}) > 40
    assert task.chance == pytest.approx(0.1)
    assert torch.equal(task.guess_accuracy(ep), torch.full((64,), 0.2))


@pytest.mark.parametrize("probes,expected", [("independent", 0.25), ("each_once", (1 + 1 / 2 + 1 / 3 + 1 / 4) / 4)])
def test_a_learner_that_does_not_read_the_key_scores_the_guess(probes, expected):
    """The best keyless answer, a context value not asked yet, scores `guess_accuracy`: 1/N with independent
    probes; with the earlier `each_once` probes (every key asked once), (1 + 1/2 + ... + 1/N) / N, the
    shortcut that version left open."""
    task = AssociativeRecall(vocab=64, n_pairs=4, probes=probes)
    ep = task.sample(4000, make_generator(3))
    x, y = ep.query_x[..., 0].long(), ep.query_y[..., 0].long()
    n = task.n_pairs
    gen = torch.Generator().manual_seed(0)
    values = x[:, 1:2 * n:2]
    hits = []
    for i in range(n):  # the i-th probe: a uniform pick among the values not shown after an earlier probe
        pos = 2 * n + 2 * i
        asked = x[:, 2 * n + 1:pos:2]
        left = ~(values[:, :, None] == asked[:, None, :]).any(-1)
        pick = torch.multinomial(left.float(), 1, generator=gen)[:, 0]
        hits.append(values.gather(1, pick[:, None])[:, 0] == y[:, pos])
    acc = float(torch.stack(hits).float().mean())
    assert acc == pytest.approx(expected, abs=0.02)
    assert float(task.guess_accuracy(ep).mean()) == pytest.approx(expected)


def test_loss_and_accuracy_read_the_scored_positions_only():
    task = AssociativeRecall(vocab=8, n_pairs=2)
    ep = task.sample(4, make_generator(1))
    y = ep.query_y
    perfect = torch.full((4, task.seq_len, 8), -30.0)
    perfect.scatter_(-1, y.long().clamp(min=0), 30.0)
    perfect[y[..., 0] < 0] = torch.randn(8)  # anything at unscored positions
    assert torch.equal(recall_accuracy(perfect, y), torch.ones(4))
    assert float(masked_next_token_loss(perfect, y).max()) < 1e-12
    uniform = torch.zeros(4, task.seq_len, 8)
    torch.testing.assert_close(masked_next_token_loss(uniform, y), torch.full((4,), math.log(8)))


def test_bad_recall_settings():
    with pytest.raises(ValueError, match="even"):
        AssociativeRecall(vocab=9)
    with pytest.raises(ValueError, match="do not fit"):
        AssociativeRecall(vocab=8, n_pairs=5)
    assert AssociativeRecall(n_pairs=3, queries=4).seq_len == 13  # more probes than keys: some asked twice
    with pytest.raises(ValueError, match="more than"):
        AssociativeRecall(n_pairs=3, queries=4, probes="each_once")


def _tiny_recall_lm(n_layers: int, steps: int, eval_every: int, n_eval: int):
    """A 16-wide causal LM config on recall of 3 pairs among 16 tokens (one seed)."""
    from icgd.train.config import build_config

    return build_config({"name": "r", "task": {"kind": "recall", "vocab": 16, "n_pairs": 3},
                         "model": {"kind": "causal_lm", "d_model": 16, "n_layers": n_layers, "n_heads": 2},
                         "steps": steps, "batch_size": 16, "seeds": [0], "optim": {"lr": 3e-3},
                         "eval": {"every": eval_every, "n_tasks": n_eval, "n_tune": n_eval, "reference": "unigram",
                                  "alignment_tasks": 0}})


def test_the_causal_lm_trains_on_recall(tmp_path):
    from icgd.train.engine import train

    cfg = _tiny_recall_lm(n_layers=1, steps=30, eval_every=15, n_eval=256)
    res = train(cfg, tmp_path / "run")
    rows = res.metrics_frame()
    # the loss starts near log(16) and the unigram reference (values in the second half) is log(8)-ish
    assert rows.eval_loss.iloc[-1] < rows.eval_loss.iloc[0] < math.log(16) + 0.5
    assert res.summary["reference"]["loss"] == pytest.approx(math.log(8), abs=0.2)


def test_induction_probe_reads_the_query_and_the_positions_after_its_earlier_occurrences(tmp_path):
    """examples/induction_probe.py on a small trained recall model: its accuracy is the model's at the last
    probe, and the attention masses are shares of one softmax row."""
    import importlib.util
    from pathlib import Path

    from icgd.core.episodes import make_generator
    from icgd.train.engine import train

    cfg = _tiny_recall_lm(n_layers=2, steps=10, eval_every=10, n_eval=16)
    res = train(cfg, tmp_path / "run")
    path = Path(__file__).parents[2] / "examples" / "induction_probe.py"
    spec = importlib.util.spec_from_file_location("induction_probe", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.probe(str(tmp_path / "run"), n=64)
    ep = cfg.task.sample(64, make_generator(5))
    model = res.learner(0)
    with torch.no_grad():
        logits = model.predict(ep)
    want = float((logits[:, -1].argmax(-1) == ep.query_y[:, -1, 0].long()).float().mean())
    assert out["accuracy at the query"] == pytest.approx(want)
    for h in (0, 1):
        assert 0 <= out[f"layer 0 head {h}: on the previous token"] <= 1
        both = (out[f"layer 1 head {h}, query: after an earlier occurrence"]
                + out[f"layer 1 head {h}, query: on the earlier occurrences"])
        assert 0 < both <= 1 + 1e-6
