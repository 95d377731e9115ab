"""Source 003's language-model layer: offline loading with one-line errors, and ICL scoring whose prefix
key/value cache gives the same label log-probabilities as running every sequence whole."""

import json

import numpy as np
import pytest
import torch

from icgd.lm.models import PACKAGED, LMError, load_lm, locate


def test_unknown_model_is_one_line():
    with pytest.raises(LMError, match="neither a packaged model") as e:
        locate("/no/such/model")
    assert "\n" not in str(e.value)


def test_corrupt_gguf_names_the_file(tmp_path):
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00 not a real model")
    with pytest.raises(LMError, match="cannot load the model file .*broken.gguf") as e:
        load_lm(str(bad))
    assert "\n" not in str(e.value)


@pytest.fixture(scope="module")
def smollm():
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    try:
        locate("smollm2-135m")
    except LMError as e:
        pytest.skip(str(e))
    return load_lm("smollm2-135m")


def test_prefix_cache_gives_the_same_label_logprobs(smollm):
    from icgd.lm.icl import label_logprobs

    prefix = ("Article: Stocks fell sharply as oil prices rose.\nTopic: business\n\n"
              "Article: The striker scored twice in the cup final.\nTopic: sport\n\n")
    queries = ["Article: Shares rose after record profits.\nTopic:", "Article: The goalkeeper was injured.\nTopic:"]
    labels = [" business", " sport", " politics", " technology and science"]  # the last has several tokens
    cached = label_logprobs(smollm, prefix, queries, labels, use_cache=True)
    whole = label_logprobs(smollm, prefix, queries, labels, use_cache=False)
    assert cached.shape == (2, 4) and torch.isfinite(cached).all() and (cached < 0).all()
    torch.testing.assert_close(cached, whole, rtol=0, atol=2e-3)
    assert cached[0].argmax() == 0 and cached[1].argmax() == 1  # the demonstrations' labels, in context
    assert PACKAGED["smollm2-135m"].file.endswith(".gguf")


#: loading a packaged model other than SmolLM2 takes minutes on 2 cores (Gemma-3-270M: 82 s, 2026-11-29, two
#: thirds of it gguf's reader parsing the 262k-token vocabulary, once each for the tokenizer, the config and the
#: weights: cProfile): those run with `-m slow`; the default suite runs the same test on a tiny Gemma 3 built
#: from a config (tests/unit/test_lm_parts.py) and on the loaded SmolLM2
_WINDOW_MODELS = [name if name == "smollm2-135m" else pytest.param(name, marks=pytest.mark.slow)
                  for name in sorted(PACKAGED)]


@pytest.mark.parametrize("name", _WINDOW_MODELS)
def test_every_packaged_model_scores_past_its_window_with_the_prefix_cache(name, smollm):
    """Each packaged model whose package is installed: a prefix longer than its attention window (Gemma 3's
    sliding-window layers: 512 tokens) scored through the prefix cache, rolled back after every query, equals
    every sequence run whole (Gemma 3 crashed in the roll-back before)."""
    from icgd.lm.icl import score

    try:
        locate(name)
    except LMError as e:
        pytest.skip(str(e))
    lm = smollm if name == "smollm2-135m" else load_lm(name)
    # past the window where there is one; a model without (SmolLM2) caches any prefix alike: 64 tokens (512 made
    # this test 15 s)
    window = getattr(lm.model.config, "sliding_window", None) or 64
    words = lm.tokenizer(" ".join(["the market rose and the team won"] * 200), add_special_tokens=False)["input_ids"]
    prefix = words[:window + 64]
    queries = [lm.tokenizer(t, add_special_tokens=False)["input_ids"] for t in (" Topic:", " The topic is")]
    labels = [lm.tokenizer(t, add_special_tokens=False)["input_ids"] for t in (" sport", " business and money")]
    assert len(prefix) > window and len(labels[1]) > 1  # past the window; a label of several tokens
    cached = score(lm, prefix, queries, labels, use_cache=True, record=True)
    whole = score(lm, prefix, queries, labels, use_cache=False, record=True)
    assert torch.isfinite(cached.logp).all()
    torch.testing.assert_close(cached.logp, whole.logp, rtol=0, atol=2e-3)
    batched = score(lm, prefix, queries, labels, batch=3, record=True)  # side by side, one row of padding
    torch.testing.assert_close(batched.logp, cached.logp, rtol=0, atol=2e-3)
    # the recorded scores to the prefix too (Gemma 3's crashed once its cache held only the window): keys a
    # sliding-window layer cannot attend are -inf in both, the rest equal
    a, b = cached.prefix_scores, whole.prefix_scores
    assert a.shape == b.shape == (2, lm.model.config.num_hidden_layers, len(prefix))
    seen = torch.isfinite(a)
    assert torch.equal(seen, torch.isfinite(b)) and seen[:, :, -8:].all()
    assert seen.all() == (getattr(lm.model.config, "sliding_window", None) is None)
    torch.testing.assert_close(a[seen], b[seen], rtol=1e-3, atol=2e-2)
    c = batched.prefix_scores
    assert torch.equal(torch.isfinite(c), seen)
    torch.testing.assert_close(c[seen], a[seen], rtol=1e-3, atol=2e-2)


@pytest.fixture(scope="module")
def dai_smoke(smollm, tmp_path_factory):
    """`icgd verify dai --smoke` once, on the loaded model, into a temporary directory."""
    from icgd.claims.runner import verify

    out = tmp_path_factory.mktemp("dai")
    return out, verify("dai", out, smoke=True, options={"model": smollm})


def test_dai_suite_measures_every_claim(dai_smoke):
    out, res = dai_smoke
    assert res["suite"] == "dai" and len(res["claims"]) == 18 and res["model"] == "smollm2-135m"
    premises = res["claims"][:2]
    assert [p["id"] for p in premises] == ["premise-icl-beats-zsl", "premise-ft-beats-guess"]
    assert all("note" not in p for p in premises)
    results = json.loads((out / "dai-icl-vs-ft" / "results.json").read_text())
    kept = results["premise.kept"]  # both premises hold there
    assert kept == (["bbc-news"] if all(p["interval"][0] > 0 for p in premises) else [])
    # FT's premise reads the best constant answer: the share of the test queries' most frequent label
    import pandas as pd

    q = pd.read_parquet(out / "dai-icl-vs-ft" / "queries.parquet")
    chosen = q[q.chosen_seed]
    assert results["bbc-news.guess_accuracy"] == pytest.approx(chosen.gold.value_counts(normalize=True).max())
    assert results["bbc-news.ft_premise"] == pytest.approx(chosen.ft_correct.mean() - results["bbc-news.guess_accuracy"])
    for c in res["claims"]:
        assert c["verdict"] in ("PASS", "FAIL", "inconclusive", "untested") and "interval" in c, c
        if kept:
            assert "note" not in c, c  # no claim lacks its number
            assert isinstance(c["measured"], float), c  # nan allowed: smoke runs may have nothing to count
        elif c not in premises:  # a premise failed: the comparison is left out, and says why
            assert "premise" in c["note"] and c["verdict"] == "untested", c
        if c["interval"] is not None:
            low, high = c["interval"]
            op, bar = c["threshold"].split()
            holds = [(v > float(bar)) if op == ">" else (v < float(bar)) for v in (low, high)]
            assert low <= high and (c["verdict"] == "inconclusive") == (holds[0] != holds[1]), c
    assert (out / "dai-icl-vs-ft" / "report.md").is_file()
    assert (out / "dai-icl-vs-ft" / "layers_bbc-news.png").is_file()
    # a fresh run made every stage of its study, read none, and its report says so
    made = results["stages"]["bbc-news"]
    assert made["stages_made"] > 0 and made["stages_read"] == 0
    assert f"made {made['stages_made']} in" in (out / "dai-icl-vs-ft" / "report.md").read_text()


def test_dai_controls_recomputed_from_their_tables(dai_smoke):
    """The untrained control's SimAOU margin, LCGD's margin and accuracy, and the order study's flips,
    recomputed from untrained.parquet, lcgd.parquet, queries.parquet and orders.parquet."""
    import pandas as pd

    from icgd.sources.dai.controls import spread

    out, _ = dai_smoke
    run = out / "dai-icl-vs-ft"
    results = json.loads((run / "results.json").read_text())
    q = pd.read_parquet(run / "queries.parquet")
    u = pd.read_parquet(run / "untrained.parquet")
    trained = q[q.chosen_seed].simaou_ft.mean()
    untrained = u.groupby("init_seed").simaou.mean().mean()
    assert results["bbc-news.simaou_margin"] == pytest.approx(trained - untrained, abs=1e-9)
    assert set(u.query_id) == set(q.query_id) and (u.demo_seed == results["bbc-news.chosen_seed"]).all()
    lcgd = pd.read_parquet(run / "lcgd.parquet")
    assert results["bbc-news.simaou_lcgd_minus_ft"] == pytest.approx(lcgd.simaou_lcgd.mean() - trained, abs=1e-9)
    assert results["bbc-news.lcgd_accuracy"] == pytest.approx(lcgd.lcgd_correct.mean())
    o = pd.read_parquet(run / "orders.parquet")
    assert sorted(o.learner.unique()) == ["gd", "icl", "sgd"] and o.order.nunique() == results["bbc-news.order_n"]
    for learner in ("icl", "sgd", "gd"):
        pred = o[o.learner == learner].pivot(index="query_id", columns="order", values="pred")
        flips = (pred.nunique(axis=1) > 1).mean()
        assert results[f"bbc-news.order_{learner}_flips"] == pytest.approx(flips)
    assert results["bbc-news.order_gd_spread"] < 1e-4  # full-batch GD: the order cannot matter
    assert spread(np.ones((2, 3, 4)) / 4).tolist() == [0.0, 0.0, 0.0]


def test_dai_premise_per_model_and_data_set(smollm, tmp_path):
    """`dai-premise` in smoke mode: its table and result keys recomputed from its per-query table."""
    import pandas as pd

    from icgd.experiments.runner import run_experiment

    out = tmp_path / "premise"
    run_experiment("dai-premise", out, cache=tmp_path / "_train", smoke=True,
                   options={"model": smollm, "data": ["bbc-news"]})
    res = json.loads((out / "results.json").read_text())
    q = pd.read_parquet(out / "premise.parquet")
    assert set(q.model) == {"smollm2-135m"} and q.demo_seed.nunique() == 2
    diff = q.groupby("demo_seed").icl_correct.mean().mean() - q[q.demo_seed == 0].zsl_correct.mean()
    assert res["smollm2-135m.bbc-news.premise"] == pytest.approx(diff)
    low, high = res["smollm2-135m.bbc-news.premise_interval"]
    assert low <= high
    assert res["smallest_model_where_premise_holds"] == ("smollm2-135m" if low > 0 else None)
    assert (out / "premise.png").is_file()
    made = res["stages"]["smollm2-135m.bbc-news"]  # ZSL and one ICL stage per seed, all made by this call
    assert (made["stages_made"], made["stages_read"]) == (3, 0)
    # a second call with the same cache reads every stage, gives the same premise and says so in its report
    run_experiment("dai-premise", tmp_path / "again", cache=tmp_path / "_train", smoke=True,
                   options={"model": smollm, "data": ["bbc-news"]})
    again = json.loads((tmp_path / "again" / "results.json").read_text())
    assert again["stages"]["smollm2-135m.bbc-news"]["stages_read"] == 3
    assert again["smollm2-135m.bbc-news.premise"] == res["smollm2-135m.bbc-news.premise"]
    assert "made 0 in 0.0 min; read 3 (made in" in (tmp_path / "again" / "report.md").read_text()


def test_lr_selection_table_where_no_chosen_rate_raised_its_loss(dai_smoke):
    import pandas as pd

    out, _ = dai_smoke
    sel = pd.read_parquet(out / "dai-icl-vs-ft" / "lr_selection.parquet")
    assert list(sel.columns) == ["dataset", "seed", "lr", "loss_before", "loss_after", "validation_accuracy",
                                 "converged", "chosen"]
    assert len(sel) == 2 and sel.chosen.sum() == 1  # the smoke grid: two rates, one chosen
    chosen = sel[sel.chosen].iloc[0]
    assert chosen.converged and chosen.loss_after <= chosen.loss_before
    assert (sel.converged == (sel.loss_after <= sel.loss_before)).all()


def test_select_lr_rejects_rates_whose_loss_rose_or_is_not_finite():
    from icgd.sources.dai.study import select_lr

    def rows(*after_acc):
        return [{"lr": lr, "loss_before": 4.5, "loss_after": a, "validation_accuracy": acc}
                for lr, (a, acc) in zip((1e-3, 1e-2, 1e-1), after_acc)]

    table = rows((4.4, 0.60), (4.0, 0.70), (9.27, 0.90))  # the best accuracy at a rate that diverged
    assert select_lr(table, "tweets") == 1e-2
    assert [r["chosen"] for r in table] == [False, True, False] and not table[2]["converged"]
    assert select_lr(rows((4.4, 0.6), (float("nan"), 0.9), (4.4, 0.6)), "x") == 1e-3  # ties: the first
    with pytest.raises(ValueError, match="converged at no learning rate") as e:
        select_lr(rows((4.6, 0.6), (float("inf"), 0.7), (9.0, 0.8)), "tweets")
    assert "\n" not in str(e.value) and "tweets" in str(e.value)


def test_rec2ftp_recomputed_from_the_per_query_table(dai_smoke):
    """Rec2FTP from queries.parquet with pandas alone, per demonstration seed, equals the run's numbers."""
    import json

    import pandas as pd

    out, _ = dai_smoke
    run = out / "dai-icl-vs-ft"
    q = pd.read_parquet(run / "queries.parquet")
    for col in ("dataset", "demo_seed", "query_id", "gold", "zsl_pred", "icl_pred", "ft_pred", "zsl_correct",
                "icl_correct", "ft_correct"):
        assert col in q.columns, col
    assert q.zsl_correct.dtype == bool and (q.icl_correct == (q.icl_pred == q.gold)).all()
    results = json.loads((run / "results.json").read_text())
    table = pd.read_csv(run / "datasets.csv")
    per_seed, counted = [], 0
    for (dataset, seed), g in q.groupby(["dataset", "demo_seed"]):
        fixed = g[g.ft_correct & ~g.zsl_correct]  # what FT corrects from ZSL
        both = fixed.icl_correct.sum()
        counted += len(fixed)
        if len(fixed):
            per_seed.append(100 * both / len(fixed))
        if g.chosen_seed.all():
            measured = results[f"{dataset}.rec2ftp"]
            if len(fixed):
                assert measured == pytest.approx(100 * both / len(fixed))
            else:
                assert measured != measured  # NaN: nothing to recall
            assert results[f"{dataset}.rec2ftp_denominator"] == len(fixed)
            assert table[table.dataset == dataset].icl_accuracy.item() == pytest.approx(g.icl_correct.mean())
    assert counted > 0  # some seed has queries FT corrects, so the values below are numbers
    assert results["bbc-news.rec2ftp_mean"] == pytest.approx(sum(per_seed) / len(per_seed))
    assert results["bbc-news.rec2ftp_max"] == pytest.approx(max(per_seed))


def test_dai_rerun_reads_the_cache(dai_smoke, smollm, monkeypatch):
    """A second run with the same cache gives identical results without scoring or finetuning again."""
    import json

    import icgd.sources.dai.study as C
    from icgd.experiments.runner import run_experiment

    def recomputed(*a, **k):
        raise AssertionError("a cached stage was computed again")

    monkeypatch.setattr(C, "score", recomputed)
    monkeypatch.setattr(C, "finetune_kv", recomputed)
    out, _ = dai_smoke
    first = json.loads((out / "dai-icl-vs-ft" / "results.json").read_text())
    again = run_experiment("dai-icl-vs-ft", out / "again", cache=out / "_train", smoke=True, options={"model": smollm})
    # the run's time, provenance (its start and end, the command) and account of the stage cache differ;
    # every number must not
    same = [json.dumps({k: v for k, v in r.items() if k not in ("seconds", "provenance", "stages")}, sort_keys=True)
            for r in (again, first)]
    assert same[0] == same[1]  # compared as JSON text: nan equals nan there
    made, read = first["stages"]["bbc-news"], again["stages"]["bbc-news"]  # the second read what the first made
    assert (read["stages_made"], read["stages_read"]) == (0, made["stages_made"])
    assert read["stage_seconds_read"] == pytest.approx(made["stage_seconds_made"], abs=0.01)
