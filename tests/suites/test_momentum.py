"""Source 003, sec. 4: text windows, the small causal LM (vanilla and momentum attention) trained by
the engine, its in-context scoring, and the `momentum` suite in smoke mode."""

import math

import pytest
import torch

from icgd.core.episodes import Episodes, make_generator
from icgd.learners.causal_lm import CausalLM, lm_stack_config
from icgd.nn.attention import AttentionOptions
from icgd.tasks.text import TextLM, Unigram, next_token_loss


def _lm(momentum=None, seed=0):
    attn = AttentionOptions(causal=True, momentum=momentum)
    return CausalLM(256, lm_stack_config(16, 2, 2, 2, attn), dtype=torch.float64, generator=make_generator(seed))


@pytest.mark.parametrize("momentum", [None, 0.5])
def test_causal_lm_never_reads_later_bytes(momentum):
    lm = _lm(momentum)
    ids = torch.randint(0, 256, (2, 30), generator=make_generator(1))
    changed = ids.clone()
    changed[:, 20:] = (changed[:, 20:] + 7) % 256
    a, b = lm.logits(ids), lm.logits(changed)
    torch.testing.assert_close(a[:, :20], b[:, :20], rtol=0, atol=1e-12)
    assert (a[:, 20:] - b[:, 20:]).abs().max() > 1e-6


@pytest.mark.parametrize("scale", [None, 1.0])
def test_token_codes_are_scaled_as_fairseq_before_the_positions(scale):
    """The stack reads sqrt(d) E[ids] + positions by default (fairseq's embed_scale), E[ids] + positions at 1."""
    from icgd.learners.causal_lm import sinusoidal_positions

    lm = CausalLM(256, lm_stack_config(16, 2, 2, 2, AttentionOptions(causal=True)), dtype=torch.float64,
                  generator=make_generator(0), embed_scale=scale)
    ids = torch.randint(0, 256, (2, 7), generator=make_generator(4))
    cache: dict = {}
    with lm.stack.hooks.caching(cache):
        lm.logits(ids)
    factor = 4.0 if scale is None else scale
    want = factor * lm.embed[ids] + sinusoidal_positions(7, 16, torch.float64, ids.device)
    torch.testing.assert_close(cache["resid_pre"], want, rtol=0, atol=1e-12)


def test_momentum_changes_the_model_and_keeps_the_parameter_count():
    van, mom = _lm(None), _lm(0.5)
    assert sum(p.numel() for p in van.parameters()) == sum(p.numel() for p in mom.parameters())
    ids = torch.randint(0, 256, (1, 12), generator=make_generator(2))
    assert (van.logits(ids) - mom.logits(ids)).abs().max() > 1e-6


def test_sequence_logprobs_and_loss_agree():
    lm = _lm(0.5)
    ids = torch.randint(0, 256, (3, 9), generator=make_generator(3))
    lp = lm.sequence_logprobs(ids)
    x = ids[:, :-1, None].double()
    y = ids[:, 1:, None].double()
    loss = next_token_loss(lm.predict(Episodes(x, y, x, y)), y)
    torch.testing.assert_close(-lp.mean(-1), loss.detach(), rtol=1e-10, atol=1e-10)


def test_unigram_reference_scores_the_byte_entropy():
    ids = torch.tensor([[[1.0], [1.0], [2.0], [1.0]]])
    u = Unigram.fit(Episodes(ids, ids, ids, ids))
    p1, p2 = (3 + 1) / (4 + 256), (1 + 1) / (4 + 256)
    assert math.isclose(float(u.logp[1]), math.log(p1)) and math.isclose(float(u.logp[2]), math.log(p2))
    pred = u.predict(Episodes(ids, ids, ids, ids))
    assert pred.shape == (1, 4, 256)


@pytest.fixture(scope="module")
def text_task():
    try:
        t = TextLM(seq_len=24)
        t.text()
    except Exception as e:  # noqa: BLE001 - the packaged corpora are an optional extra
        pytest.skip(f"text corpora not installed: {e}")
    return t


def test_text_windows_are_shifted_bytes_of_the_split(text_task):
    ep = text_task.sample(5, make_generator(0))
    assert ep.query_x.shape == (5, 24, 1) and torch.equal(ep.context_x, ep.query_x)
    again = text_task.sample(5, make_generator(0))
    assert torch.equal(ep.query_x, again.query_x)  # the generator decides
    data = text_task.text()
    first = bytes(ep.query_x[0, :, 0].long().tolist())
    assert first in bytes(data.numpy())
    assert torch.equal(ep.query_x[:, 1:], ep.query_y[:, :-1])  # targets are the next bytes
    val = text_task.evaluation_task()
    assert val.split == "validation" and val.text().numel() < data.numel()


def test_engine_trains_a_momentum_lm(text_task, tmp_path):
    from icgd.train.config import build_config
    from icgd.train.engine import train

    cfg = build_config({"name": "t", "task": {"kind": "text", "seq_len": 24},
                        "model": {"kind": "causal_lm", "d_model": 16, "n_layers": 1, "n_heads": 2,
                                  "attention": {"momentum": 0.5}},
                        "optim": {"lr": 3e-3}, "eval": {"reference": "unigram", "n_tasks": 16, "n_tune": 64, "every": 30},
                        "steps": 60, "batch_size": 8, "seeds": [0, 1], "checkpoint_every": 30})
    res = train(cfg, tmp_path / "run")
    first = math.log(256)  # a fresh model predicts about uniformly
    for s in res.summary["seeds"]:
        assert s["final_eval_loss"] < first - 1.0
    assert res.learner(0).stack.config.attention.momentum == 0.5


def test_momentum_suite_measures_every_claim(text_task, tmp_path):
    pytest.importorskip("pandas")
    from icgd.claims.runner import verify

    res = verify("momentum", tmp_path, smoke=True)
    assert [c["id"] for c in res["claims"]] == [
        "momentum-lowers-perplexity", "premise-lm-icl", "momentum-improves-lm-icl", "premise-recall",
        "momentum-improves-recall", "premise-regression", "momentum-improves-regression", "premise-fewshot",
        "momentum-improves-fewshot", "momentum-keeps-icl"]
    by_id = {c["id"]: c for c in res["claims"]}
    for c in res["claims"]:
        assert isinstance(c["measured"], float)
    for cid in ("momentum-lowers-perplexity", "premise-lm-icl", "premise-recall", "premise-regression",
                "premise-fewshot"):
        assert "note" not in by_id[cid]
    assert len(by_id["momentum-lowers-perplexity"]["interval"]) == 2
    # smoke models (a few steps) do not learn in context: each premise fails and says so, the comparison is
    # left out
    premise = by_id["premise-recall"]
    assert premise["verdict"] == "FAIL" and premise["measured"] < 2 and len(premise["interval"]) == 2
    assert "premise" in by_id["momentum-improves-recall"]["note"]
    assert by_id["momentum-improves-recall"]["verdict"] == "untested"  # nothing claimed, not a FAIL
    assert set(premise["values"]) == {"N=2 vanilla", "N=2 momentum", "N=2 guess"}
    premise = by_id["premise-regression"]
    assert premise["verdict"] in ("FAIL", "inconclusive")  # 32 held-out tasks: the interval may straddle 0.8
    assert "premise" in by_id["momentum-improves-regression"]["note"]
    assert set(premise["values"]) == {"N=4 vanilla", "N=4 momentum", "N=4 gd"}
    assert by_id["premise-fewshot"]["verdict"] in ("FAIL", "inconclusive")
    assert "premise" in by_id["momentum-improves-fewshot"]["note"]
    assert by_id["premise-lm-icl"]["verdict"] in ("FAIL", "inconclusive")
    assert "premise" in by_id["momentum-improves-lm-icl"]["note"]
    if by_id["premise-lm-icl"]["verdict"] != "PASS":  # no ICL to hurt: the weak check claims nothing either
        assert by_id["momentum-keeps-icl"]["verdict"] == "untested"
        assert "premise" in by_id["momentum-keeps-icl"]["note"]
    run = tmp_path / "dai-momentum"
    assert (run / "perplexity.csv").is_file() and (run / "icl.csv").is_file() and (run / "momentum.png").is_file()
    for exp, name in (("momentum-recall", "recall"), ("momentum-regression", "regression"),
                      ("momentum-fewshot", "fewshot")):
        assert (tmp_path / exp / f"{name}.csv").is_file() and (tmp_path / exp / f"{name}.png").is_file()


def test_lm_claims_read_the_premise_then_compare_on_made_up_scores():
    """dai-momentum's bars on made-up per-window losses and per-query correctness: momentum with lower loss at
    every length passes the perplexity claim, higher fails it; a vanilla LM whose ICL is no better than its
    zero-shot fails the premise and nothing is compared; where the premise holds, momentum clearly better
    passes."""
    from pathlib import Path

    import numpy as np

    from icgd.experiments.catalog import load_sources
    load_sources()  # registers the suites
    from icgd.claims.base import SUITES
    from icgd.sources.momentum import language as momentum
    from icgd.experiments.registry import ExperimentContext

    pd = pytest.importorskip("pandas")
    claims = {c.id: c for c in SUITES["momentum"]() if c.experiment == "dai-momentum"}
    rng = np.random.default_rng(3)

    def check(loss_v, loss_m, zsl_v, icl_v, icl_m):
        ctx = ExperimentContext(Path("unused"), Path("unused"), "quick", [0, 1, 2], "cpu", True, {}, create=False)
        losses = {}
        for n in (32, 64, 128):
            base = rng.normal(0.0, 0.3, (3, 256))  # window difficulty, shared by both models (paired)
            losses[(n, "vanilla")] = loss_v + base + rng.normal(0, 0.02, (3, 256))
            losses[(n, "momentum")] = loss_m + base + rng.normal(0, 0.02, (3, 256))
        momentum._perplexity_results(ctx, losses, (32, 64, 128))
        correct = {}
        for d in ("bbc-news", "tweets"):
            for setting, name, p in (("zsl", "vanilla", zsl_v), ("icl", "vanilla", icl_v), ("zsl", "momentum", zsl_v),
                                     ("icl", "momentum", icl_m)):
                correct[(d, setting, name)] = (rng.random((3, 300)) < p).astype(float)
        momentum._icl_results(ctx, correct, ["bbc-news", "tweets"])
        momentum._weak_icl_results(ctx, pd.DataFrame(
            [{"model": name, "seed": s, "dataset": d, "setting": setting, "k": 4, "accuracy": float(c[s].mean())}
             for (d, setting, name), c in correct.items() for s in range(3)]))
        return {cid: c.check({"dai-momentum": ctx.results}) for cid, c in claims.items()}

    better = check(3.0, 2.9, 0.3, 0.6, 0.75)
    assert better["momentum-lowers-perplexity"]["verdict"] == "PASS"
    assert better["momentum-lowers-perplexity"]["measured"] == pytest.approx(math.exp(-0.1), abs=0.01)
    assert better["premise-lm-icl"]["verdict"] == "PASS"
    assert better["momentum-improves-lm-icl"]["verdict"] == "PASS"
    assert better["momentum-keeps-icl"]["verdict"] == "PASS"
    worse = check(3.0, 3.1, 0.3, 0.6, 0.45)
    assert worse["momentum-lowers-perplexity"]["verdict"] == "FAIL"
    assert worse["momentum-improves-lm-icl"]["verdict"] == "FAIL"
    assert worse["momentum-keeps-icl"]["verdict"] == "FAIL"  # significantly worse where vanilla learns in context
    no_icl = check(3.0, 2.9, 0.3, 0.3, 0.9)
    assert no_icl["premise-lm-icl"]["verdict"] in ("FAIL", "inconclusive")
    assert "premise" in no_icl["momentum-improves-lm-icl"]["note"]  # nothing compared, however good momentum is
    assert no_icl["momentum-improves-lm-icl"]["verdict"] == "untested"
    assert no_icl["momentum-keeps-icl"]["verdict"] == "untested"  # no ICL to hurt: nothing claimed either way


def test_recall_claims_pass_fail_and_stay_inconclusive_on_the_right_learners():
    """The bars on made-up per-sequence accuracies: a vanilla model that answers with a context value without
    reading the key (1/N) fails the premise and leaves nothing to compare, as does one at chance; a momentum
    model no better than vanilla fails the comparison, one clearly better passes."""
    from pathlib import Path

    import numpy as np

    from icgd.experiments.catalog import load_sources
    load_sources()  # registers the suites
    from icgd.claims.base import SUITES
    from icgd.sources.momentum import recall
    from icgd.experiments.registry import ExperimentContext

    claims = {c.id: c for c in SUITES["momentum"]() if c.experiment == "momentum-recall"}
    rng = np.random.default_rng(0)
    pairs = recall.PAIRS["quick"]

    def check(van_p, mom_p):  # each: the per-seed accuracies, or a function of N giving them
        ctx = ExperimentContext(Path("unused"), Path("unused"), "quick", [0, 1, 2], "cpu", True, {}, create=False)
        acc = {}
        for n in pairs:
            for name, p in (("vanilla", van_p), ("momentum", mom_p)):
                p = np.asarray(p(n) if callable(p) else p)
                acc[(n, name)] = (rng.random((3, 400)) < p[:, None]).astype(float)
        recall._results(ctx, acc, {n: 1 / 32 for n in pairs}, {n: 1 / n for n in pairs})
        r = {"momentum-recall": ctx.results}
        return {cid: c.check(r) for cid, c in claims.items()}

    keyless = check(lambda n: [1 / n] * 3, [0.9] * 3)
    assert keyless["premise-recall"]["verdict"] == "FAIL"
    assert keyless["momentum-improves-recall"]["verdict"] == "untested"
    assert "premise" in keyless["momentum-improves-recall"]["note"]
    assert check([1 / 32] * 3, [0.5] * 3)["premise-recall"]["verdict"] == "FAIL"
    same = check([0.7] * 3, [0.7] * 3)
    assert same["premise-recall"]["verdict"] == "PASS"
    assert same["momentum-improves-recall"]["verdict"] in ("FAIL", "inconclusive")
    better = check([0.7] * 3, [0.85] * 3)
    assert better["momentum-improves-recall"]["verdict"] == "PASS"
    assert better["momentum-improves-recall"]["interval"][0] > 0
    mixed = check([0.4, 0.4, 0.4], [0.3, 0.45, 0.5])
    assert mixed["momentum-improves-recall"]["verdict"] == "inconclusive"
    # vanilla right on every probe leaves no room: a tie there is not evidence against momentum (not a FAIL)
    solved = check([1.0] * 3, [1.0] * 3)
    assert solved["premise-recall"]["verdict"] == "PASS"
    assert solved["momentum-improves-recall"]["verdict"] == "untested"
    assert "ceiling" in solved["momentum-improves-recall"]["note"]
    # one setting solved, the other not: the comparison reads the other alone
    one = check(lambda n: [1.0] * 3 if n == pairs[0] else [0.7] * 3, [1.0] * 3)
    assert one["momentum-improves-recall"]["verdict"] == "PASS"
    assert abs(one["momentum-improves-recall"]["measured"] - 0.3) < 0.05


def test_regression_claims_on_made_up_relative_losses():
    """momentum-regression's bars: a vanilla model no better than the zero predictor fails the premise; a
    momentum model with lower loss on every seed passes the comparison, one with higher loss fails it."""
    from pathlib import Path

    import numpy as np

    from icgd.experiments.catalog import load_sources
    load_sources()  # registers the suites
    from icgd.claims.base import SUITES
    from icgd.sources.momentum import regression
    from icgd.sources.momentum.paired import summarize
    from icgd.experiments.registry import ExperimentContext

    claims = {c.id: c for c in SUITES["momentum"]() if c.experiment == "momentum-regression"}
    rng = np.random.default_rng(1)

    def check(van, mom):
        ctx = ExperimentContext(Path("unused"), Path("unused"), "quick", [0, 1, 2], "cpu", True, {}, create=False)
        scores = {}
        for n in regression.CONTEXTS["quick"]:
            scores[(n, "vanilla")] = van * rng.exponential(1.0, (3, 500))  # per-task losses around the mean
            scores[(n, "momentum")] = mom * rng.exponential(1.0, (3, 500))
            ctx.result(f"regression{n}.gd", 0.5)
        summarize(ctx, "regression", scores, 500, 0, lambda n, a: a, regression.PREMISE_BAR, above=False,
                  better=-1.0)
        return {cid: c.check({"momentum-regression": ctx.results}) for cid, c in claims.items()}

    ignores_context = check(1.0, 0.4)
    assert ignores_context["premise-regression"]["verdict"] == "FAIL"
    assert "premise" in ignores_context["momentum-improves-regression"]["note"]
    better = check(0.5, 0.3)
    assert better["premise-regression"]["verdict"] == "PASS"
    assert better["momentum-improves-regression"]["verdict"] == "PASS"
    worse = check(0.5, 0.7)
    assert worse["momentum-improves-regression"]["verdict"] == "FAIL"
    assert worse["momentum-improves-regression"]["interval"][1] < 0


def test_beta_study_trains_each_beta_and_learns_one_per_head(tmp_path):
    """momentum-beta in smoke mode: every variant is scored against vanilla on both tasks, the fixed betas are
    the ones configured and the learnt ones are written per layer and head."""
    import pandas as pd

    from icgd.sources.momentum import beta as study
    from icgd.experiments.runner import run_experiment

    run_experiment("momentum-beta", tmp_path / "run", smoke=True)
    rows = pd.read_csv(tmp_path / "run" / "beta.csv")
    names = ["vanilla"] + [f"beta{b:g}" for b in study.BETAS] + ["learnt"]
    for task in study.SETTING:
        assert list(rows[rows.task == task].model) == names
        assert rows[(rows.task == task) & (rows.model == "vanilla")].difference.iloc[0] == 0
    learnt = pd.read_csv(tmp_path / "run" / "learnt_beta.csv")
    assert len(learnt) == 2 * 2 * 1 * 2  # tasks x seeds x layers x heads (smoke: 1 layer, 2 heads)
    assert learnt.beta.between(0, 1).all()
    assert (learnt.beta - 0.5).abs().max() > 1e-4  # learnt from 0.5: moved
    from pathlib import Path

    from icgd.experiments.registry import ExperimentContext

    ctx = ExperimentContext(Path("unused"), Path("unused"), "quick", [0, 1, 2], "cpu", True, {}, create=False)
    configs = study._models(ctx)
    assert configs["recall8-beta0.9"].model.attention.momentum == 0.9
    assert configs["recall8-learnt"].model.attention.learn_momentum is True
    assert configs["recall8-vanilla"].model.attention.momentum is None
    # vanilla and 0.5 are momentum-recall's and momentum-fewshot's own configs under their own names, the
    # cache's labels (one training with a shared cache)
    from icgd.sources.momentum import bursty, recall

    assert configs["recall8-momentum"] == recall._models(ctx)["recall8-momentum"]
    assert configs["fewshot2-vanilla"] == bursty._models(ctx)["fewshot2-vanilla"]
    assert len(configs) == 2 * 7
