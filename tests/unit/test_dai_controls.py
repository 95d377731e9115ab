"""The critics' controls of source 003 on a tiny randomly initialised Llama (built from a config, no file):
full-batch GD cannot depend on the order of the demonstrations and one-pass SGD does; layer-causal GD
updates each layer from its own read-out; the untrained model is the same architecture with fresh weights;
and the control claims' bars pass the numbers they should and fail a deliberately wrong learner."""

import math

import numpy as np
import pytest
import torch

from icgd.lm.finetune import KVSnapshot, finetune_kv, kv_parameters
from icgd.sources.dai import controls

transformers = pytest.importorskip("transformers")

LABELS = [3, 7, 11]  # the "label words": one token each


def _tiny(dtype=torch.float32, seed: int = 0):
    from icgd.lm.models import LM

    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(vocab_size=50, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    model = transformers.LlamaForCausalLM._from_config(cfg, attn_implementation="eager", dtype=dtype)
    return LM(model.eval(), None, "tiny", None)


@pytest.fixture(scope="module")
def tiny():
    return _tiny(seed=123)  # not seed 0: untrained(lm, 0) would rebuild this very model


def _examples(n: int = 8, seed: int = 1) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 50, (int(torch.randint(5, 12, (1,), generator=g)),), generator=g).tolist()
            for _ in range(n)]


@torch.no_grad()
def _probs(lm, queries) -> np.ndarray:
    """(Q, C): each query's next-token distribution over LABELS, renormalised."""
    logp = torch.stack([torch.log_softmax(lm.model(torch.tensor([q])).logits[0, -1].double(), -1)[LABELS]
                        for q in queries])
    return controls.label_probabilities(logp)


def _spread_over_orders(lm, examples, batch: str, lr: float = 0.5) -> tuple[float, list[dict]]:
    queries = _examples(6, seed=9)
    probs, weights = [], []
    for perm in controls.orders_of(len(examples), 4, seed=3):
        with KVSnapshot(lm.model):
            finetune_kv(lm, [examples[i] for i in perm], lr, batch=batch)
            probs.append(_probs(lm, queries))
            weights.append({n: p.detach().clone() for n, p in kv_parameters(lm.model).items()})
    return float(controls.spread(np.stack(probs)).mean()), weights


def test_full_batch_gd_spread_over_orders_is_zero_and_one_pass_sgd_is_not(tiny):
    examples = _examples()
    gd, gd_weights = _spread_over_orders(tiny, examples, "full")
    sgd, sgd_weights = _spread_over_orders(tiny, examples, "example")
    assert gd < 1e-6, gd  # float32: only the order of the gradient sum differs
    assert sgd > 1e-3, sgd
    for w in gd_weights[1:]:
        for n, p in w.items():
            torch.testing.assert_close(p, gd_weights[0][n], rtol=0, atol=1e-6)
    assert any(not torch.allclose(p, sgd_weights[0][n], atol=1e-4) for n, p in sgd_weights[1].items())


def test_full_batch_step_is_minus_lr_times_the_summed_gradient():
    lm = _tiny(torch.float64)
    examples = _examples(3)
    kv = kv_parameters(lm.model)
    grads = {n: torch.zeros_like(p) for n, p in kv.items()}
    for ids in examples:
        x = torch.tensor([ids])
        loss = torch.nn.functional.cross_entropy(lm.model(x).logits[0, :-1].float(), x[0, 1:])
        for (n, p), g in zip(kv.items(), torch.autograd.grad(loss, list(kv.values()))):
            grads[n] += g
    before = {n: p.detach().clone() for n, p in kv.items()}
    with KVSnapshot(lm.model):
        ft = finetune_kv(lm, examples, 0.3, batch="full")
        for n, p in kv.items():
            torch.testing.assert_close(p.detach(), before[n] - 0.3 * grads[n], rtol=0, atol=1e-10)
    assert len(ft.losses) == 3
    with pytest.raises(ValueError, match="batch must be one of"):
        finetune_kv(lm, examples, 0.3, batch="mini")


def test_layer_causal_gd_updates_each_layer_from_its_own_read_out():
    lm = _tiny(torch.float64)
    model = lm.model
    x = torch.tensor([_examples(1)[0]])
    k = [layer.self_attn.k_proj.weight for layer in model.model.layers]
    # layer 0's own read-out: its output through the final norm and the unembedding (a logit lens)
    out0 = []
    hook = model.model.layers[0].register_forward_hook(lambda m, a, o: out0.append(o[0] if isinstance(o, tuple) else o))
    full = model(x).logits
    hook.remove()
    lens0 = model.lm_head(model.model.norm(out0[0]))
    g_lens0 = torch.autograd.grad(torch.nn.functional.cross_entropy(lens0[0, :-1].float(), x[0, 1:]), k[0],
                                  retain_graph=True)[0]
    g_ft = torch.autograd.grad(torch.nn.functional.cross_entropy(full[0, :-1].float(), x[0, 1:]), k)
    w0 = [w.detach().clone() for w in k]
    with KVSnapshot(model):
        finetune_kv(lm, x.tolist(), 0.2, layer_causal=True)
        torch.testing.assert_close(k[0].detach(), w0[0] - 0.2 * g_lens0, rtol=0, atol=1e-10)
        # the last layer's read-out is the model's output: its update is FT's
        torch.testing.assert_close(k[1].detach(), w0[1] - 0.2 * g_ft[1], rtol=0, atol=1e-10)
    assert not torch.allclose(g_lens0, g_ft[0], atol=1e-6)  # layer 0 under FT also learns from layer 1's loss


def test_untrained_model_is_the_architecture_with_fresh_weights(tiny):
    from icgd.lm.models import untrained

    a, b, c = untrained(tiny, 0), untrained(tiny, 0), untrained(tiny, 1)
    io = untrained(tiny, 0, keep="io")
    trained = dict(tiny.model.named_parameters())
    pa, pb, pc, pio = (dict(m.model.named_parameters()) for m in (a, b, c, io))
    assert {n: p.shape for n, p in pa.items()} == {n: p.shape for n, p in trained.items()}
    assert all(torch.equal(pa[n], pb[n]) for n in pa)  # the seed fixes the weights
    k = "model.layers.0.self_attn.k_proj.weight"
    assert not torch.equal(pa[k], pc[k]) and not torch.equal(pa[k], trained[k])
    assert torch.equal(pio["model.embed_tokens.weight"], trained["model.embed_tokens.weight"])
    assert not torch.equal(pio[k], trained[k])
    state = torch.random.get_rng_state()
    untrained(tiny, 5)
    assert torch.equal(torch.random.get_rng_state(), state)  # the global random state is untouched
    with pytest.raises(ValueError, match="keep must be one of"):
        untrained(tiny, 0, keep="some")


def _qwen_like(pad: int):
    """A Qwen2 model deep enough (24 layers, as Qwen2.5-0.5B) for a zero first token to make its K/V
    gradients NaN, with BOS token 1 and padding token `pad`."""
    from icgd.lm.models import LM

    torch.manual_seed(0)
    cfg = transformers.Qwen2Config(vocab_size=64, hidden_size=256, intermediate_size=64, num_hidden_layers=24,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                   pad_token_id=pad, bos_token_id=1, rms_norm_eps=1e-6)
    model = transformers.Qwen2ForCausalLM._from_config(cfg, attn_implementation="eager")
    return LM(model.eval(), None, "qwen-like", None)


def _kv_grads_finite(model, ids) -> bool:
    from icgd.lm.finetune import _loss

    kv = kv_parameters(model)
    for n, p in model.named_parameters():
        p.requires_grad_(n in kv)
    _loss(model, torch.tensor([ids])).backward()
    return all(bool(torch.isfinite(p.grad).all()) for p in kv.values())


def test_untrained_model_draws_the_bos_row_the_initialiser_zeroes_as_padding():
    """Qwen2.5's BOS token is its padding token, whose embedding row `transformers`' initialiser zeroes: every
    prompt of the untrained control then starts with a zero vector, and the K/V gradients of the first
    example are NaN at any rate (Qwen2.5-Coder-0.5B on MR: FT 12.1 -> NaN on every init seed). `untrained`
    draws that row like the others, after every other draw, and leaves a padding row that is not BOS as it is."""
    from icgd.lm.models import bos_is_padding, untrained

    lm = _qwen_like(pad=1)
    assert bos_is_padding(lm)
    u = untrained(lm, 3)
    row = u.model.get_input_embeddings().weight[1].detach()
    assert 0.5 < float(row.std()) / 0.02 < 2  # drawn with the initialiser's std (initializer_range 0.02)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(3)
        plain = transformers.AutoModelForCausalLM.from_config(lm.model.config, attn_implementation="eager")
    drawn, initial = dict(u.model.named_parameters()), dict(plain.named_parameters())
    assert all(torch.equal(drawn[n], initial[n]) for n in drawn if n != "model.embed_tokens.weight")
    assert float(initial["model.embed_tokens.weight"][1].detach().abs().max()) == 0.0  # what the initialiser gives
    ids = [1, 5, 7, 9, 11, 13]
    assert _kv_grads_finite(u.model, ids)
    assert not _kv_grads_finite(plain, ids)  # the zero BOS row: the NaN the draw removes
    other = _qwen_like(pad=0)
    assert not bos_is_padding(other)
    assert float(untrained(other, 3).model.get_input_embeddings().weight[0].detach().abs().max()) == 0.0


def test_orders_are_distinct_and_start_with_the_given_order():
    perms = controls.orders_of(4, 6, seed=0)
    assert perms[0].tolist() == [0, 1, 2, 3]
    assert len({tuple(p) for p in perms}) == 6
    assert len(controls.orders_of(3, math.factorial(3), seed=0)) == 6
    with pytest.raises(ValueError, match="distinct orders"):
        controls.orders_of(3, 7, seed=0)


def _results(**values) -> dict:
    from icgd.sources.dai import keys as X
    from icgd.sources.dai.claims import EXP

    return {EXP: {X.DATASETS: ["d"], X.PREMISE_KEPT: ["d"]} | {X.MEAN.format(key=k): v for k, v in values.items()}}


def _claim(cid: str):
    from icgd.experiments.catalog import load_sources
    from icgd.claims.base import SUITES

    load_sources()
    return next(c for c in SUITES["dai"]() if c.id == cid)


def test_control_bars_pass_the_published_numbers_and_fail_a_wrong_learner():
    # Deutch et al.'s SST-2 run, seed 2 (GiilDe/ft-vs-icl artifacts): SimAOU 0.1096 trained, 0.1041 untrained
    simaou = _claim("simaou-trained-above-untrained")
    assert simaou.holds(simaou.measure(_results(simaou_margin=0.1096 - 0.1041)))
    assert not simaou.holds(simaou.measure(_results(simaou_margin=0.0)))  # the untrained model against itself
    lcgd = _claim("icl-closer-to-lcgd-than-ft")
    assert lcgd.holds(lcgd.measure(_results(simaou_lcgd_minus_ft=0.2297 - 0.1096)))
    assert not lcgd.holds(lcgd.measure(_results(simaou_lcgd_minus_ft=0.0)))  # FT in LCGD's place
    like = _claim("order-icl-like-sgd")
    assert like.holds(like.measure(_results(order_icl_over_sgd=1.0)))  # SGD in ICL's place
    assert not like.holds(like.measure(_results(order_icl_over_sgd=0.0)))  # full-batch GD in ICL's place
    sensitive = _claim("order-icl-sensitive")
    assert not sensitive.holds(sensitive.measure(_results(order_icl_minus_gd=0.0)))


def test_control_claims_are_untested_where_the_control_did_not_run():
    row = _claim("order-icl-like-sgd").check(_results())
    assert row["verdict"] == "untested" and "was not run" in row["note"], row


def test_lcgd_claim_is_untested_where_lcgd_diverged_at_every_rate():
    from icgd.sources.dai import keys as X
    from icgd.sources.dai.claims import EXP

    claim = _claim("icl-closer-to-lcgd-than-ft")
    r = _results(simaou_lcgd_minus_ft=0.2)
    assert claim.check(r)["verdict"] == "PASS"
    r[EXP][X.DATASET.format(dataset="d", key="lcgd_converged")] = False
    row = claim.check(r)
    assert row["verdict"] == "untested" and "raised its own loss" in row["note"], row
    assert controls.smaller_rates(0.01)[:3] == pytest.approx([0.01, 0.01 / math.sqrt(10), 0.001])

def test_beside_paper_sets_each_measure_of_mr_and_subj_beside_the_papers_column():
    """dai-icl-vs-ft's `beside_paper` table: every key of the paper's MR and Subj columns is a measure the study
    reports (a misspelt key would raise here), the rows carry the paper's two models, and a data set the paper
    did not run (BBC News) gets none."""
    from icgd.sources.dai.icl_vs_ft import beside_paper
    from icgd.sources.dai.keys import KEYS
    from icgd.sources.dai.references import PAPER_COLUMNS

    assert set(PAPER_COLUMNS) == {"mr", "subj"}
    for d, cols in PAPER_COLUMNS.items():
        assert set(cols) <= set(KEYS), set(cols) - set(KEYS)
        summary = {"dataset": d} | {k: 0.5 for k in KEYS} | {f"{k}_mean": 0.4 for k in KEYS[1:]} \
            | {f"{k}_std": 0.1 for k in KEYS[1:]}
        rows = beside_paper([summary, {"dataset": "bbc-news"}])
        assert [r["measure"] for r in rows] == list(cols) and {r["dataset"] for r in rows} == {d}
        zsl = next(r for r in rows if r["measure"] == "zsl_accuracy")
        assert zsl["ours_mean"] is None  # ZSL has no demonstration seeds
        assert all((r["paper_gpt_2.7b"], r["paper_gpt_1.3b"]) == cols[r["measure"]] for r in rows)
    assert PAPER_COLUMNS["mr"]["rec2ftp"][0] > 85  # the paper's "more than 85%" holds on its MR column


def test_controls_option_leaves_controls_out_and_shares_the_stage_cache():
    """`--controls`: a subset of the controls (none: none of them) turns the others off in the study's config;
    the stage cache's key leaves the controls' settings out, so a run with fewer controls reads the stages a run
    with all of them wrote (one directory); the CLI's list is the experiment's, and an unknown name is refused."""
    from pathlib import Path

    from icgd.cli import DAI_CONTROLS, DAI_UNTRAINED_BUILDS
    from icgd.experiments.registry import ExperimentContext
    from icgd.sources.dai.icl_vs_ft import CONTROLS, UNTRAINED_BUILDS, dai_config
    from icgd.data.text import load_task
    from icgd.sources.dai.study import stage_key

    assert DAI_CONTROLS == CONTROLS and DAI_UNTRAINED_BUILDS == tuple(UNTRAINED_BUILDS)

    def cfg(controls):
        opts = {} if controls is None else {"controls": controls}
        return dai_config(ExperimentContext(Path("unused"), Path("unused"), "full", [0, 1], "cpu", True, opts,
                                            create=False))

    every, core, some = cfg(None), cfg(()), cfg(("untrained",))
    assert every.untrained_seeds and every.lcgd and every.orders > 0
    assert not core.untrained_seeds and not core.lcgd and core.orders == 0
    assert some.untrained_seeds == every.untrained_seeds and not some.lcgd and some.orders == 0
    task = load_task("mr")
    assert stage_key("m", task, every) == stage_key("m", task, core) == stage_key("m", task, some)
    assert stage_key("m", task, every) != stage_key("m", task, every.model_copy(update={"n_test": 7}))
    with pytest.raises(ValueError, match="bogus"):
        cfg(("bogus",))
    # Deutch et al.'s build of the untrained control: the same init seeds, keeping the trained model's I/O layers
    assert every.untrained_keep == "none"
    io = cfg(("untrained-io", "lcgd"))
    assert io.untrained_keep == "io" and io.untrained_seeds == every.untrained_seeds and io.lcgd and io.orders == 0
    with pytest.raises(ValueError, match="two builds of one control"):
        cfg(("untrained", "untrained-io"))


@pytest.mark.parametrize("measure", ["simaou", "simam", "kendall", "rec2ftp"])
def test_untrained_claims_are_untested_where_the_untrained_models_finetuning_did_not_learn(measure):
    """Qwen2.5-Coder-0.5B on MR: the untrained model's FT at the trained model's rate went from 12.1 to NaN, and
    the margins read NaN, which a claim took for a FAIL. Such a control is no comparison: untested, naming the
    losses; with the loss lowered the same results give the margin's verdict."""
    from icgd.claims.base import SUITES
    from icgd.experiments.catalog import load_sources
    from icgd.sources.dai import keys as X

    load_sources()
    claim = next(c for c in SUITES["dai"]() if c.id == f"{measure}-trained-above-untrained")

    def check(after: float) -> dict:
        r = {X.PREMISE_KEPT: ["mr"], X.MEAN.format(key=f"{measure}_margin"): 0.05,
             X.DATASET.format(dataset="mr", key="untrained_ft_loss"): {"0": [12.1, 3.0], "1": [12.0, after]}}
        return claim.check({"dai-icl-vs-ft": r})

    assert check(2.5)["verdict"] == "PASS"
    for after in (float("nan"), 12.5):  # diverged, or worse than before
        row = check(after)
        assert row["verdict"] == "untested" and "at no rate tried" in row["note"], row


def test_a_finetuning_that_diverges_at_the_trained_rate_is_retried_at_smaller_rates():
    """The untrained model's FT and LCGD: where the trained model's rate does not lower a learner's loss on its
    demonstrations (Qwen2.5-Coder-0.5B's untrained model on MR: 12.1 -> NaN at 0.001), the next smaller rate is
    tried, and the first that lowers it is kept; where none does, every rate is listed and the last row says so."""
    calls = []

    def run(diverge_above: float):
        def f(rate):
            calls.append(rate)
            return {"loss_before": 12.1, "loss_after": float("nan") if rate > diverge_above else 3.0, "other": 1.0}
        return f

    r, tried = controls.search_rate(0.001, run(0.0005), shown=("other",))
    assert calls == pytest.approx([0.001, 0.001 / math.sqrt(10)]) and r["loss_after"] == 3.0
    assert [t["converged"] for t in tried] == [False, True] and tried[0]["other"] == 1.0
    calls.clear()
    r, tried = controls.search_rate(0.001, run(0.0))
    assert len(calls) == len(tried) == 5 and not tried[-1]["converged"] and math.isnan(r["loss_after"])
    calls.clear()
    r, tried = controls.search_rate(0.001, run(1.0))  # converges at the trained rate: nothing else is run
    assert calls == [0.001] and tried[-1]["converged"]


@pytest.mark.parametrize("value,expected", [("none", ()), ("lcgd, untrained", ("lcgd", "untrained")),
                                            ("orders,orders", ("orders",)), ("untrained-io", ("untrained-io",))])
def test_controls_argument_reads_a_subset_or_none(value, expected):
    from icgd.cli import _controls_arg

    assert _controls_arg(value) == expected


@pytest.mark.parametrize("value", [",", "LCGD", "none,lcgd", "bogus", "untrained,untrained-io"])
def test_controls_argument_refuses_what_is_not_a_subset(value):
    import argparse

    from icgd.cli import _controls_arg

    with pytest.raises(argparse.ArgumentTypeError):
        _controls_arg(value)


def test_controls_argument_says_none_stands_alone():
    import argparse

    from icgd.cli import _controls_arg

    with pytest.raises(argparse.ArgumentTypeError, match="stands alone"):
        _controls_arg("none,lcgd")


def test_controls_argument_says_the_untrained_builds_exclude_each_other():
    import argparse

    from icgd.cli import _controls_arg

    with pytest.raises(argparse.ArgumentTypeError, match="two builds of one control"):
        _controls_arg("untrained-io,lcgd,untrained")


def test_a_bad_choice_of_controls_fails_before_the_model_loads():
    """Through the API too (a notebook's options), the controls are checked before minutes of model loading: the
    model named here does not exist, and the error is the controls'."""
    from pathlib import Path

    from icgd.experiments.catalog import load_sources
    from icgd.experiments.registry import ExperimentContext
    from icgd.experiments.runner import get_experiment

    load_sources()
    ctx = ExperimentContext(Path("unused"), Path("unused"), "quick", [0], "cpu", True,
                            {"controls": ("untrained", "untrained-io"), "model": "/nonexistent.gguf"}, create=False)
    with pytest.raises(ValueError, match="two builds of one control"):
        get_experiment("dai-icl-vs-ft").fn(ctx)


def test_the_stage_cache_says_what_a_run_read_and_what_those_stages_cost(tmp_path):
    """A run resumed from the stage cache costs less than the study: the cache records each stage's time beside
    it and tallies what one run read and made, so the report can say so (a stage saved before the records:
    its time unknown, never 0)."""
    from icgd.sources.dai.study import StageCache

    key = {"task": "t", "model": "m"}
    first = StageCache(tmp_path, key)
    assert first.get("a", lambda: torch.ones(2)).sum() == 2 and first.get("b", lambda: torch.zeros(1)).sum() == 0
    made = first.tally()
    assert (made["stages_read"], made["stages_made"], made["stage_seconds_read"]) == (0, 2, 0)
    assert made["stage_seconds_made"] >= 0

    second = StageCache(tmp_path, key)
    def fail():
        raise AssertionError("a saved stage was computed again")
    assert second.get("a", fail).sum() == 2 and second.get("c", lambda: torch.ones(1)).sum() == 1
    t = second.tally()
    assert (t["stages_read"], t["stages_made"]) == (1, 1)
    recorded = float((first.dir / "a.seconds").read_text())
    assert t["stage_seconds_read"] == round(recorded, 3)

    (first.dir / "b.seconds").unlink()  # saved before stage times were recorded
    third = StageCache(tmp_path, key)
    third.get("a", fail), third.get("b", fail)
    assert third.tally()["stage_seconds_read"] is None and third.tally()["stages_read"] == 2
    (first.dir / "b.seconds").write_text("garbled")  # unreadable: unknown too, and the stage is still read
    fourth = StageCache(tmp_path, key)
    assert fourth.get("b", fail).sum() == 0 and fourth.tally()["stage_seconds_read"] is None
    for not_a_time in ("nan", "inf", "-3.0"):  # a number, but not a time: unknown as well
        (first.dir / "b.seconds").write_text(not_a_time)
        fifth = StageCache(tmp_path, key)
        assert fifth.get("b", fail).sum() == 0 and fifth.tally()["stage_seconds_read"] is None, not_a_time
    assert StageCache(None, key).get("a", lambda: torch.ones(3)).sum() == 3  # no directory: nothing saved
