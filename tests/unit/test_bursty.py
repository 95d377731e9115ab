"""Bursty few-shot classification (`icgd.tasks.bursty`): its sequences, its scored positions, that the
causal LM trains on it, and the bars of momentum-fewshot's claims."""

from pathlib import Path

import numpy as np
import pytest

from icgd.core.episodes import make_generator
from icgd.tasks import BurstyFewShot


def test_sequences_are_bursty_with_labels_drawn_per_sequence():
    task = BurstyFewShot(n_classes=16, exemplars=3, n_labels=6, ways=3, shots=2)
    ep = task.sample(400, make_generator(0))
    assert ep.query_x.shape == (400, task.seq_len, 1) == (400, 13, 1)
    x, y = ep.query_x[..., 0].long(), ep.query_y[..., 0].long()
    n_items = 16 * 3
    label_of_class, counts = [], []
    for b in range(400):
        items, labels = x[b, 0::2], x[b, 1::2]  # 7 items (6 in context, the query), 6 context labels
        assert items.max() < n_items and labels.min() >= n_items
        classes = (items // 3).tolist()
        ctx_classes = classes[:-1]
        assert len(set(ctx_classes)) <= 3  # bursty: at most `ways` classes in a sequence
        counts.append(sorted(ctx_classes.count(c) for c in set(ctx_classes)))
        binding = {}
        for c, lab in zip(ctx_classes, labels.tolist()):
            assert binding.setdefault(c, lab) == lab  # a class keeps its label within a sequence
        assert len(set(binding.values())) == len(binding)  # distinct labels
        assert classes[-1] in binding  # the query's class is in the context
        assert y[b, -1] == binding[classes[-1]]  # and its target is that class's label
        scored = (y[b] >= 0).nonzero()[:, 0].tolist()
        expected = [2 * i for i in range(6) if classes[i] in classes[:i]] + [12]
        assert scored == expected
        label_of_class.append(binding)
    # the classes' counts vary (no label can be told by counting), and labels are not a function of the class
    assert len({tuple(c) for c in counts}) > 3
    assert len({b[0] for b in label_of_class if 0 in b}) > 2
    # the query is often another exemplar than the context's (exemplars vary within a class)
    assert sum(int(x[b, 12]) not in x[b, 0:12:2].tolist() for b in range(400)) > 50
    only = task.query_only().sample(400, make_generator(0))
    assert (only.query_y[:, :-1] < 0).all() and (only.query_y[:, -1] >= 0).all()
    assert np.array_equal(only.query_x.numpy(), ep.query_x.numpy())  # the same sequences
    assert task.chance == pytest.approx(1 / 6)
    guess = task.guess_accuracy(ep)
    for b in range(400):  # one of the context's distinct labels, uniformly
        assert float(guess[b]) == pytest.approx(1 / len(set(x[b, 1:12:2].tolist())))
    # the query's class is uniform among those in context: a label's count does not predict the answer
    top = [int(y[b, -1]) == max(set(x[b, 1:12:2].tolist()), key=x[b, 1:12:2].tolist().count) for b in range(400)]
    assert abs(np.mean(top) - float(guess.mean())) < 0.08
    assert task.vocab == 54


def test_bad_bursty_settings():
    with pytest.raises(ValueError, match="n_classes"):
        BurstyFewShot(n_classes=3, ways=4)
    with pytest.raises(ValueError, match="distinct labels"):
        BurstyFewShot(n_labels=3, ways=4)


def test_the_causal_lm_trains_on_bursty_sequences(tmp_path):
    from icgd.train.config import build_config
    from icgd.train.engine import train

    cfg = build_config({"name": "b", "task": {"kind": "bursty", "n_classes": 8, "exemplars": 2, "n_labels": 4,
                                              "ways": 2, "shots": 2},
                        "model": {"kind": "causal_lm", "d_model": 16, "n_layers": 1, "n_heads": 2},
                        "steps": 30, "batch_size": 16, "seeds": [0], "optim": {"lr": 3e-3},
                        "eval": {"every": 15, "n_tasks": 32, "n_tune": 32, "reference": "unigram",
                                 "alignment_tasks": 0}})
    res = train(cfg, tmp_path / "run")
    rows = res.metrics_frame()
    assert rows.eval_loss.iloc[-1] < rows.eval_loss.iloc[0]


def test_fewshot_claims_on_made_up_accuracies():
    """The bars on made-up per-sequence accuracies: a vanilla model that guesses among the context's labels
    fails the premise and leaves nothing to compare; momentum no better than vanilla fails or is inside the
    noise, clearly better passes."""
    from icgd.experiments.catalog import load_sources
    load_sources()  # registers the suites
    from icgd.claims.base import SUITES
    from icgd.sources.momentum.bursty import PREMISE_FACTOR, SHOTS
    from icgd.sources.momentum.paired import summarize
    from icgd.experiments.registry import ExperimentContext

    claims = {c.id: c for c in SUITES["momentum"]() if c.experiment == "momentum-fewshot"}
    assert set(claims) == {"premise-fewshot", "momentum-improves-fewshot"}
    rng = np.random.default_rng(2)

    def check(van, mom):
        ctx = ExperimentContext(Path("unused"), Path("unused"), "quick", [0, 1, 2], "cpu", True, {}, create=False)
        acc = {}
        for k in SHOTS["quick"]:
            acc[(k, "vanilla")] = (rng.random((3, 800)) < van).astype(float)
            acc[(k, "momentum")] = (rng.random((3, 800)) < mom).astype(float)
            ctx.result(f"fewshot{k}.guess", 0.25)
        summarize(ctx, "fewshot", acc, 500, 0, lambda k, a: a / 0.25, PREMISE_FACTOR, above=True, better=1.0)
        return {cid: c.check({"momentum-fewshot": ctx.results}) for cid, c in claims.items()}

    copies = check(0.25, 0.9)
    assert copies["premise-fewshot"]["verdict"] == "FAIL"
    assert "premise" in copies["momentum-improves-fewshot"]["note"]
    same = check(0.8, 0.8)
    assert same["premise-fewshot"]["verdict"] == "PASS"
    assert same["momentum-improves-fewshot"]["verdict"] in ("FAIL", "inconclusive")
    better = check(0.7, 0.85)
    assert better["momentum-improves-fewshot"]["verdict"] == "PASS"


def test_block_order_shows_every_class_once_per_block():
    task = BurstyFewShot(n_classes=16, exemplars=1, n_labels=6, ways=3, shots=2, order="blocks")
    x = task.sample(200, make_generator(0)).query_x[..., 0].long()
    for b in range(200):
        classes = x[b, 0::2].tolist()
        assert sorted(classes[:3]) == sorted(classes[3:6]) and len(set(classes[:3])) == 3
        assert classes[-1] in classes[:3]
    once = BurstyFewShot(n_classes=16, exemplars=1, n_labels=6, ways=3, shots=1, order="blocks")
    ep = once.sample(200, make_generator(1))
    ctx_classes = ep.query_x[:, 0:6:2, 0].long()
    assert all(len(set(row.tolist())) == 3 for row in ctx_classes)  # non-bursty: no class repeats
    assert ((ep.query_y[..., 0] >= 0).sum(1) == 1).all()  # so only the query is scored
    # the random order (the default) does repeat classes
    rnd = BurstyFewShot(n_classes=16, exemplars=1, n_labels=6, ways=3, shots=1).sample(200, make_generator(1))
    assert any(len(set(row.tolist())) < 3 for row in rnd.query_x[:, 0:6:2, 0].long())


def _warm_config(**over):
    from icgd.train.config import build_config

    task = {"kind": "bursty", "n_classes": 8, "exemplars": 1, "n_labels": 4, "ways": 2, "shots": 2}
    raw = {"name": "w", "task": task, "model": {"kind": "causal_lm", "d_model": 16, "n_layers": 1, "n_heads": 2},
           "steps": 6, "batch_size": 4, "seeds": [0], "data": "per_seed",
           "eval": {"every": 3, "n_tasks": 8, "n_tune": 8, "reference": "unigram", "alignment_tasks": 0},
           "warm_start": {"task": task | {"shots": 1, "order": "blocks"}, "steps": 2}}
    return build_config(raw | over)


def test_warm_start_draws_the_warm_task_first_then_the_run_task():
    from icgd.train.data import TaskStream

    cfg = _warm_config()
    stream = TaskStream(cfg, "cpu")
    lengths = [stream.next(step)[0].shape[-2] for step in range(4)]
    assert lengths == [cfg.warm_start.task.seq_len] * 2 + [cfg.task.seq_len] * 2 == [5, 5, 9, 9]


def test_warm_start_changes_the_fingerprint_and_trains(tmp_path):
    from icgd.train.config import build_config, config_fingerprint
    from icgd.train.engine import train

    cfg = _warm_config()
    plain = build_config(cfg.model_dump() | {"warm_start": None})
    assert config_fingerprint(cfg) != config_fingerprint(plain)
    res = train(cfg, tmp_path / "run")
    assert res.metrics_frame().step.max() == 6


@pytest.mark.parametrize("over, message", [
    ({"steps": 2}, "leaves no step"),
    ({"train_set_size": 8}, "train_set_size"),
    ({"task_vocab": 5}, "vocab"),
    ({"kind": "recall"}, "kind"),
])
def test_bad_warm_starts(over, message):
    from icgd.train.config import ConfigError

    cfg = _warm_config().model_dump()
    warm = cfg["warm_start"]
    if "kind" in over:
        warm["task"] = {"kind": "recall", "vocab": 12, "n_pairs": 2}
    elif "task_vocab" in over:
        warm["task"]["n_labels"] = over["task_vocab"]
    else:
        cfg |= over
    with pytest.raises(ConfigError, match=message):
        _warm_config(**{k: cfg[k] for k in ("steps", "train_set_size", "warm_start")})


def _probes():
    import importlib.util

    path = Path(__file__).parents[2] / "examples" / "bursty_probes.py"
    spec = importlib.util.spec_from_file_location("bursty_probes", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bursty_probe_layouts_and_the_warm_start_switch():
    """examples/bursty_probes.py: each layout's sequences (first-block: every class once first; mix: both
    kinds in one batch; warm: non-bursty then bursty), and a short run prints ten accuracies."""
    import torch

    mod = _probes()
    g = torch.Generator().manual_seed(0)
    x, y = mod.first_block(32, 2, g)
    assert x.shape == (32, 17) and all(len(set(row[0:8:2].tolist())) == 4 for row in x)
    assert ((y >= 0).sum(1) == 5).all()  # the 4 repeats after the first block and the query
    early, late = (mod.batch_of("warm", 16, 2, s, 100, g)[0].shape[1] for s in (49, 50))
    assert (early, late) == (9, 17)
    xm, _ = mod.batch_of("mix-blocks", 256, 2, 0, 100, g)
    firsts = [len(set(row[0:8:2].tolist())) == 4 for row in xm]
    assert 0.35 < np.mean(firsts) < 0.75  # half first-block rows (always), half bursty (9% of them)
    accs = mod.main(["bursty", "--steps", "10", "--batch", "8"])
    assert len(accs) == 10 and all(0 <= a <= 1 for a in accs)
