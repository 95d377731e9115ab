"""Source 003's parts on a tiny randomly initialised Llama (built from a config, no file): the recorded hook
points against transformers' own attention weights, cached against whole-sequence scoring, K/V-only
finetuning and its restore, the measures on inputs whose answer is known, the text tasks' splits and errors."""

import numpy as np
import pytest
import torch

from icgd.data.text import DataError, TextTask, csv_task, load_task
from icgd.lm import measures as M

transformers = pytest.importorskip("transformers")


class _LM:
    attn_implementation = "eager"

    def __init__(self, model):
        self.model, self.tokenizer = model, None

    @property
    def device(self):
        return torch.device("cpu")


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=50, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    model = transformers.LlamaForCausalLM._from_config(cfg, attn_implementation="eager", dtype=torch.float64)
    return _LM(model.eval())


def test_recorded_scores_are_the_models_attention_before_softmax(tiny):
    from icgd.lm.record import Recorder

    ids = torch.randint(0, 50, (1, 12))
    with torch.no_grad():
        ref = tiny.model(ids, output_attentions=True, output_hidden_states=True)
        with Recorder(tiny.model, queries=True) as rec:
            got = tiny.model(ids)
            r = rec.take()
    assert tiny.model.config._attn_implementation == "eager"  # restored
    torch.testing.assert_close(got.logits, ref.logits, rtol=0, atol=0)
    last = torch.stack([a[0, :, -1] for a in ref.attentions])  # (L, H, K)
    torch.testing.assert_close(r["scores_last"].double().softmax(-1), last, rtol=0, atol=1e-6)
    assert r["out_last"].shape == (2, 32) and r["q"].shape == (2, 12, 32)
    q_ref = tiny.model.model.layers[1].self_attn.q_proj(
        tiny.model.model.layers[1].input_layernorm(ref.hidden_states[1]))[0]
    torch.testing.assert_close(r["q"][1].double(), q_ref.detach(), rtol=0, atol=1e-6)


def test_cached_prefix_scores_like_whole_sequences(tiny):
    from icgd.lm.icl import Prefix, score

    prefix = Prefix(list(range(3, 20)), [(0, 8), (9, 17)])
    queries = [[21, 22, 23], [30, 31], [40, 41, 42, 43]]
    labels = [[5], [7], [9, 10, 11]]  # the last has three tokens
    a = score(tiny, prefix, queries, labels, use_cache=True, record=True)
    b = score(tiny, prefix, queries, labels, use_cache=False, record=True)
    torch.testing.assert_close(a.logp, b.logp, rtol=0, atol=1e-9)
    torch.testing.assert_close(a.out, b.out, rtol=0, atol=1e-5)
    torch.testing.assert_close(a.prefix_scores, b.prefix_scores, rtol=0, atol=1e-5)
    assert [s.shape[-1] for s in a.query_scores] == [4, 3, 5]  # the query tokens and the analysed label token
    # the first token of the three-token label is scored where the single-token labels are
    with torch.no_grad():
        whole = torch.log_softmax(tiny.model(torch.tensor([prefix.ids + queries[0] + [9, 10]])).logits[0].double(), -1)
    n = len(prefix.ids) + len(queries[0]) - 1
    expect = whole[n, 9] + whole[n + 1, 10] + whole[n + 2, 11]
    assert abs(float(a.logp[0, 2]) - float(expect)) < 1e-9
    assert prefix.demo_positions.tolist() == list(range(0, 8)) + list(range(9, 17))


def test_finetuning_moves_only_keys_and_values_and_is_restored(tiny):
    from icgd.lm.finetune import KVSnapshot, finetune_kv

    before = {n: p.detach().clone() for n, p in tiny.model.named_parameters()}
    examples = [[1, 2, 3, 4, 5, 6], [7, 8, 9, 10]]
    with KVSnapshot(tiny.model):
        ft = finetune_kv(tiny, examples, lr=0.5, record_from=1)
        changed = {n for n, p in tiny.model.named_parameters() if not torch.equal(p, before[n])}
        assert changed and all(("k_proj" in n or "v_proj" in n) for n in changed)
        assert len(changed) == 4  # k and v weights of both layers
        assert [q.shape for q in ft.queries] == [(2, 5, 32), (2, 3, 32)]
        # the second example's loss is the loss of the model after the first step
        with torch.no_grad():
            logits = tiny.model(torch.tensor([examples[1]])).logits[0]
        assert len(ft.losses) == 2
    for n, p in tiny.model.named_parameters():
        assert torch.equal(p, before[n]) and p.requires_grad
    with KVSnapshot(tiny.model):  # one step at lr: the update is -lr * gradient of the mean token loss
        x = torch.tensor([examples[0]])
        loss = torch.nn.functional.cross_entropy(tiny.model(x).logits[0, :-1], x[0, 1:])
        k = tiny.model.model.layers[0].self_attn.k_proj.weight
        (g,) = torch.autograd.grad(loss, [k])
        w0 = k.detach().clone()
        finetune_kv(tiny, examples[:1], lr=0.5)
        torch.testing.assert_close(k.detach(), w0 - 0.5 * g, rtol=0, atol=1e-9)
    assert logits.shape == (4, 50)


def test_rec2ftp_counts_only_queries_ft_fixed():
    zsl = np.array([0, 0, 0, 1, 1, 0], bool)
    ft = np.array([1, 1, 1, 1, 0, 0], bool)
    icl = np.array([1, 0, 1, 0, 1, 1], bool)
    value, n = M.rec2ftp(zsl, ft, icl)
    assert n == 3 and value == pytest.approx(200 / 3)
    assert np.isnan(M.rec2ftp(zsl, zsl, icl)[0])


def test_simaou_and_its_random_baselines():
    gen = torch.Generator().manual_seed(0)
    h0 = torch.randn(50, 3, 400, generator=gen)
    h1 = torch.randn(50, 3, 400, generator=gen)
    assert torch.allclose(M.simaou(h0, h1, h1), torch.ones(50, 3, dtype=torch.float64))
    h2 = torch.randn(50, 3, 400, generator=gen)
    n0, n1, n2 = (h.numpy() / np.linalg.norm(h.numpy(), axis=-1, keepdims=True) for h in (h0, h1, h2))
    d1, d2 = n1 - n0, n2 - n0  # the updates of the unit-normalised outputs, written out in numpy
    expect = (d1 * d2).sum(-1) / np.linalg.norm(d1, axis=-1) / np.linalg.norm(d2, axis=-1)
    np.testing.assert_allclose(M.simaou(h0, h1, h2).numpy(), expect, rtol=0, atol=1e-6)
    assert torch.allclose(M.simaou(h0, 3 * h1, h1), torch.ones(50, 3, dtype=torch.float64))  # h is normalised
    r = M.simaou_random(h0, h1, gen, "normal")
    assert r.shape == (50, 3) and abs(float(r.mean())) < 0.02
    u = M.simaou_random(h0 + 1.0, h1 + 2.0, gen, "uniform")  # a positive-mean update: not centred at 0
    assert float(u.mean()) > 0.1


def test_simam_is_head_averaged_cosine():
    a = [torch.tensor([[[1.0, 0.0], [1.0, 1.0]]])]  # (L=1, H=2, S=2)
    b = [torch.tensor([[[1.0, 0.0], [1.0, -1.0]]])]
    assert M.simam(a, b).tolist() == [[0.5]]
    with pytest.raises(ValueError, match="different shapes"):
        M.simam(a, [torch.ones(1, 2, 3)])


def test_kendall_token_and_example_level():
    gen = np.random.default_rng(0)
    scores = torch.randn(2, 30, dtype=torch.float64)
    same = torch.softmax(scores * 3, -1)  # a monotone transform: the same ranking
    out = M.kendall(scores, same, [10, 20], gen)
    assert np.allclose(out["token"], 1.0)
    assert out["example"].shape == (2,) and np.all(np.abs(out["token_random"]) < 0.5)
    out = M.kendall(scores, torch.softmax(-scores, -1), [10, 20], gen)
    assert np.allclose(out["token"], -1.0)
    with pytest.raises(ValueError, match="line up"):
        M.kendall(scores, same, [10, 10], gen)
    q = [torch.randn(2, 4, 8), torch.randn(2, 6, 8)]
    x = torch.randn(2, 8)
    w = M.ft_attention(q, x, 0.25)
    assert w.shape == (2, 10) and torch.allclose(w.sum(-1), torch.ones(2, dtype=torch.float64))
    expect = torch.softmax(0.25 * (torch.cat(q, 1) @ x[:, :, None])[..., 0].double(), -1)
    torch.testing.assert_close(w, expect)


def test_attention_scale_is_the_models_scaling_squared(tiny):
    assert M.attention_scale(tiny.model) == pytest.approx(1 / 8)  # head_dim 32 / 4 heads = 8


def _task(n=40):
    ex = tuple((f"text {i}", "a" if i % 2 else "b") for i in range(n))
    return TextTask("toy", ex, ("a", "b"), ("yes", "no"), "Q: {text}\nA:", n_validation=5, n_test=5)


def test_splits_are_fixed_and_disjoint():
    t = _task()
    parts = [set(t.split(s).tolist()) for s in ("train", "validation", "test")]
    assert [len(p) for p in parts] == [30, 5, 5] and set.union(*parts) == set(range(40))
    assert not (parts[0] & parts[1]) and not (parts[1] & parts[2]) and not (parts[0] & parts[2])
    assert (t.split("test") == _task().split("test")).all()
    assert t.demonstration(1) == "Q: text 1\nA: yes"


def test_csv_task_and_its_errors(tmp_path):
    p = tmp_path / "mine.csv"
    p.write_text("text,label\n" + "".join(f"row {i},{'pos' if i % 3 else 'neg'}\n" for i in range(30)))
    t = csv_task(p, words={"pos": "positive"})
    assert t.labels == ("neg", "pos") and t.words == ("neg", "positive") and len(t.split("test")) == 6
    bad = tmp_path / "bad.csv"
    bad.write_text("sentence,label\nx,y\n")
    for path, msg in ((bad, "needs columns"), (tmp_path / "none.csv", "missing")):
        with pytest.raises(DataError, match=msg) as e:
            csv_task(path)
        assert "\n" not in str(e.value)
    with pytest.raises(DataError, match="unknown data set"):
        load_task("no-such-set")
    with pytest.raises(DataError, match="not among"):
        TextTask("x", (("t", "c"),), ("a", "b"), ("a", "b"), "{text}")


@pytest.mark.parametrize("argv, needle", [
    (["--data", "/no/such/file.csv"], "no/such/file.csv"),
    (["--data", "imdb"], "unknown data set 'imdb'"),
    (["--model", "/no/such/model", "--data", "{csv}"], "neither a packaged model"),
    (["--model", "{gguf}", "--data", "{csv}"], "cannot load the model file"),
    (["--data", "{one_label}"], "needs at least two distinct labels"),
    (["--data", "{empty_text}"], "line 4 has an empty 'text' or 'label' (and 1 more)"),
])
@pytest.mark.parametrize("experiment", ["dai-icl-vs-ft", "dai-premise"])
def test_dai_bad_data_or_model_is_one_line_exit_2(experiment, argv, needle, tmp_path, capsys):
    from icgd.cli import main

    files = {"csv": "".join(f"example {i},{'ab'[i % 2]}\n" for i in range(20)),
             "one_label": "".join(f"example {i},a\n" for i in range(20)),
             "empty_text": "x,a\ny,b\n,a\n" + "".join(f"example {i},{'ab'[i % 2]}\n" for i in range(20)) + "z,\n"}
    for name, rows in files.items():
        (tmp_path / f"{name}.csv").write_text("text,label\n" + rows)
    (tmp_path / "broken.gguf").write_bytes(b"GGUF\x03\x00\x00\x00 not a real model")
    argv = [a.replace("{gguf}", str(tmp_path / "broken.gguf")) for a in argv]
    for n in files:
        argv = [a.replace("{" + n + "}", str(tmp_path / f"{n}.csv")) for a in argv]
    out = tmp_path / "run"
    out.mkdir()
    (out / "earlier.json").write_text("{}")  # something already written there
    if experiment == "dai-premise" and "--model" in argv:  # a list: the bad model named before any loads
        argv[argv.index("--model") + 1] = "smollm2-135m," + argv[argv.index("--model") + 1]
    assert main(["reproduce", experiment, "--smoke", "--quiet", "--out", str(out), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and "\n" not in err and err.startswith("error:")
    assert (out / "earlier.json").read_text() == "{}"


def test_a_model_in_byte_slices_is_joined_once_and_checked(tmp_path, monkeypatch):
    import hashlib

    import icgd.lm.models as models

    folders = {}
    for i, chunk in enumerate((b"GGUF-first-", b"second-", b"last")):
        d = tmp_path / f"pkg{i}"
        (d / "data").mkdir(parents=True)
        (d / "data" / "p.bin").write_bytes(chunk)
        folders[f"pkg{i}"] = d
    monkeypatch.setattr(models, "package_dir", lambda name: folders.get(name))
    monkeypatch.setenv("ICGD_CACHE_DIR", str(tmp_path / "cache"))
    whole = b"GGUF-first-second-last"
    spec = models.Packaged("pkg0", "m.gguf", "pip install the-parts", "a toy", parts=tuple(
        (f"pkg{i}", "data/p.bin") for i in range(3)), sha256=hashlib.sha256(whole).hexdigest())
    monkeypatch.setitem(models.PACKAGED, "toy", spec)
    folder, name = models.locate("toy")
    assert (folder / name).read_bytes() == whole and not list(folder.glob("*.part"))
    bad = models.Packaged("pkg0", "bad.gguf", "pip install the-parts", "a toy", parts=spec.parts, sha256="0" * 64)
    monkeypatch.setitem(models.PACKAGED, "bad", bad)
    with pytest.raises(models.LMError, match="do not match the expected SHA-256") as e:
        models.locate("bad")
    assert "\n" not in str(e.value) and not (folder / "bad.gguf").exists() and not list(folder.glob("*.part"))
    del folders["pkg2"]
    monkeypatch.setitem(models.PACKAGED, "gone", models.Packaged("pkg0", "gone.gguf", "pip install the-parts", "",
                                                                 parts=spec.parts, sha256=spec.sha256))
    with pytest.raises(models.LMError, match="pkg2/data/p.bin is missing; install the parts: pip install the-parts"):
        models.locate("gone")


def test_rotary_queries_are_what_the_attention_scores_with(tiny):
    """The "rotary" query equals the projection at position 0 (no rotation there), keeps each head's norm
    elsewhere (a rotation) but not its direction, and its dot product with the recorded keys' scores gives
    the recorded scores of the last token."""
    from icgd.lm.record import Recorder

    ids = torch.randint(0, 50, (1, 9))
    with torch.no_grad():
        with Recorder(tiny.model, queries="projection") as rec:
            tiny.model(ids)
            proj = rec.take()["q"]
        with Recorder(tiny.model, queries="rotary") as rec:
            tiny.model(ids)
            rot = rec.take()["q"]
    assert rot.shape == proj.shape == (2, 9, 32)
    torch.testing.assert_close(rot[:, 0], proj[:, 0], rtol=0, atol=1e-6)
    heads = lambda q: q.reshape(2, 9, 4, 8).norm(dim=-1)  # noqa: E731
    torch.testing.assert_close(heads(rot), heads(proj), rtol=1e-6, atol=1e-6)
    assert (rot[:, 1:] - proj[:, 1:]).abs().max() > 1e-3
    with pytest.raises(ValueError, match="queries must be"):
        Recorder(tiny.model, queries="after")


class _Tok:
    def __init__(self, start, bos):
        self.start, self.bos_token_id = start, bos

    def __call__(self, text, add_special_tokens=False):
        return type("E", (), {"input_ids": (self.start if add_special_tokens else []) + [7] * len(text.split())})()


def test_sequences_start_with_bos_where_the_tokenizer_adds_none(tiny):
    from icgd.lm.icl import start_ids

    lm = _LM(tiny.model)
    lm.tokenizer = _Tok([], 1)  # SmolLM2: no start token added, BOS <|im_start|> = 1
    assert start_ids(lm) == [1] and start_ids(lm, "tokenizer") == []
    lm.tokenizer = _Tok([2], 2)  # Gemma: the tokenizer adds its BOS
    assert start_ids(lm) == [2] == start_ids(lm, "tokenizer")
    lm.tokenizer = _Tok([], None)  # no BOS in the tokenizer: the model config's
    assert start_ids(lm) == [tiny.model.config.bos_token_id]
    with pytest.raises(ValueError, match="start must be"):
        start_ids(lm, "sink")


def test_bootstrap_resamples_seeds_and_queries():
    """On a hand-made study: seed 1 is best on validation, so replicates that draw it pick it; the replicates'
    chosen-seed accuracy centres on it; every replicate's numbers are those of some drawn seed."""
    from icgd.sources.dai.study import BOOTSTRAPPED, MEASURES, bootstrap

    rows = []
    icl = {0: [1, 0, 0, 0] * 5, 1: [1, 1, 1, 0] * 5}  # test accuracy 0.25 and 0.75
    for s in (0, 1):
        for j in range(20):
            rows.append({"demo_seed": s, "query_id": j, "zsl_correct": j % 2 == 0, "icl_correct": bool(icl[s][j]),
                         "ft_correct": True, "gold": "a" if j % 4 == 0 else "b"} | {m: float(s) for m in MEASURES})
    val = {0: np.array([0, 0, 1, 0] * 5, bool), 1: np.array([1, 1, 0, 1] * 5, bool)}
    b = bootstrap(rows, val, 400, seed=0)
    assert set(b) == set(BOOTSTRAPPED) and all(len(v) == 400 for v in b.values())
    chosen = np.array(b["simaou_ft"])  # the measure equals the chosen seed's number
    assert set(chosen) == {0.0, 1.0}
    assert 0.6 < chosen.mean() < 0.9  # seed 1 is drawn in 3 of 4 replicates, and then always chosen
    icl_acc = np.array(b["icl_accuracy"])
    assert abs(icl_acc[chosen == 1].mean() - 0.75) < 0.03 and abs(icl_acc[chosen == 0].mean() - 0.25) < 0.03
    assert abs(np.mean(b["icl_accuracy_mean"]) - 0.5) < 0.05  # over the drawn seeds: (0.25 + 0.75) / 2
    assert np.std(b["zsl_accuracy"]) > 0.05  # test queries resampled
    # Rec2FTP: FT fixes the ZSL errors (odd queries); ICL seed 1 gets 3 of its 4 pattern right on them
    assert abs(np.nanmean(np.array(b["rec2ftp"])[chosen == 1]) - 50.0) < 10
    # the best constant answer ("b", 15 of 20 queries) on the resampled queries: centred on 0.75, never below 0.5
    guess = np.array(b["guess_accuracy"])
    assert abs(guess.mean() - 0.75) < 0.03 and guess.min() >= 0.5 and guess.std() > 0.03
    assert bootstrap(rows, val, 400, seed=0) == b  # determined by its seed


def test_kendall_on_a_hand_computed_example():
    """ICL ranks three tokens 1 < 2 < 3, FT ranks them 1 < 3 < 2: two concordant pairs and one discordant,
    tau = (2 - 1) / 3. Per demonstration (sizes 1 and 2): ICL 1/6 vs 5/6, FT 0.1 vs 0.9, tau = 1."""
    icl = torch.log(torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64))  # softmax: 1/6, 2/6, 3/6
    ft = torch.tensor([[0.1, 0.5, 0.4]], dtype=torch.float64)
    out = M.kendall(icl, ft, [1, 2], np.random.default_rng(0))
    assert out["token"].tolist() == pytest.approx([1 / 3]) and out["example"].tolist() == pytest.approx([1.0])


def test_simaou_random_is_the_cosine_with_the_authors_uniform_draw():
    h0, h1 = torch.tensor([[[1.0, 0.0, 0.0]]]), torch.tensor([[[0.0, 2.0, 0.0]]])  # unit: update (-1, 1, 0)
    got = M.simaou_random(h0, h1, torch.Generator().manual_seed(3), "uniform")
    u = torch.rand((1, 1, 3), generator=torch.Generator().manual_seed(3), dtype=torch.float64)[0, 0]
    expect = float((u[1] - u[0]) / (2 ** 0.5 * u.norm()))
    assert got.shape == (1, 1) and float(got) == pytest.approx(expect)


def test_premise_interval_resamples_seeds_and_queries():
    from icgd.sources.dai.premise_study import premise_interval

    q = 100
    zsl = np.arange(q) % 2 == 0  # ZSL right on half the queries
    low, high = premise_interval(zsl, np.ones((3, q), bool), 500)  # ICL always right: holds
    assert 0.3 < low < 0.5 < high < 0.7
    low, high = premise_interval(zsl, np.stack([zsl] * 3), 500)  # ICL no better than ZSL (paired): no
    assert low == high == 0.0
    # two seeds always right and one always wrong: +0.167 on average, but a draw of the seeds can give any of
    # 0..3 good ones, so the interval straddles zero (resampling the queries alone would put it above zero)
    low, high = premise_interval(zsl, np.stack([np.ones(q, bool), np.ones(q, bool), np.zeros(q, bool)]), 2000)
    assert low < 0 < high
    with pytest.raises(ValueError, match="must be"):
        premise_interval(zsl, np.ones((3, q - 1), bool), 10)


def test_one_interval_rule_for_the_premise():
    """`premise_interval` and dai-icl-vs-ft's per-data-set interval share one percentile rule and one "holds"
    rule: the central 95% of the replicates, holding where its lower end is above zero."""
    from icgd.sources.dai.premise_study import percentile_interval, premise_holds

    low, high = percentile_interval(np.arange(1001) / 1000)  # 0.000 .. 1.000
    assert (low, high) == pytest.approx((0.025, 0.975))
    assert percentile_interval(np.arange(101), level=50) == pytest.approx((25, 75))
    assert all(np.isnan(percentile_interval([])))
    assert premise_holds(0.001) and not premise_holds(0.0) and not premise_holds(float("nan"))


def test_kendall_leaves_out_tokens_outside_a_sliding_window():
    """A layer that cannot attend some demonstration tokens (-inf scores) ranks only the others; a layer that
    sees fewer than two gives nan."""
    from scipy.stats import kendalltau

    icl = torch.tensor([[0.3, -1.0, 2.0, 0.5], [float("-inf"), float("-inf"), 2.0, 0.5],
                        [float("-inf")] * 3 + [1.0]], dtype=torch.float64)
    ft = torch.softmax(torch.tensor([[1.0, 0.2, 0.4, 3.0]] * 3, dtype=torch.float64), -1)
    k = M.kendall(icl, ft, [2, 2], np.random.default_rng(0))
    assert k["token"][0] == pytest.approx(kendalltau(icl[0].numpy(), ft[0].numpy()).statistic)
    assert k["token"][1] == pytest.approx(-1.0)  # over the two visible tokens: 2.0 > 0.5 against 0.4 < 3.0
    assert np.isnan(k["token"][2]) and np.isnan(k["token_random"][2]) and np.isfinite(k["example"]).all()


@pytest.mark.parametrize("name, labels, words, template", [
    ("mr", ("negative", "positive"), ("Negative", "Positive"), "Review: {text} Sentiment:"),
    ("subj", ("objective", "subjective"), ("objective", "subjective"), "Input: {text} Type:"),
    ("trec", ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"), None, "Question: {text} Answer type:"),
])
def test_packaged_text_tasks_load_offline_with_disjoint_splits(name, labels, words, template):
    """The sentiment, subjectivity and question-type sets that ship in packages (skipped where the package
    is missing): the authors' templates and words for MR and Subj, every class present in every split, no
    text in two splits."""
    try:
        t = load_task(name)
    except DataError as e:
        pytest.skip(str(e))
    assert t.labels == labels and t.template == template and (words is None or t.words == words)
    texts = {s: {t.examples[int(i)][0] for i in t.split(s)} for s in ("train", "validation", "test")}
    assert sum(len(v) for v in texts.values()) == len(t.examples) > 5000
    assert not (texts["train"] & texts["test"]) and not (texts["train"] & texts["validation"])
    assert not (texts["validation"] & texts["test"])
    for s in ("validation", "test"):
        assert {t.examples[int(i)][1] for i in t.split(s)} == set(labels)


@pytest.mark.parametrize("use_cache", [True, False])
def test_batched_scoring_equals_one_query_at_a_time(tiny, use_cache):
    """Queries of different lengths, side by side in batches of 3 (the last batch short), labels of one and of
    several tokens: the same log-probabilities as scoring one query at a time."""
    from icgd.lm.icl import score

    g = torch.Generator().manual_seed(3)
    prefix = torch.randint(1, 50, (20,), generator=g).tolist()
    queries = [torch.randint(1, 50, (n,), generator=g).tolist() for n in (3, 7, 1, 5, 4, 9, 2)]
    labels = [[5], [7, 8, 9], [11, 12]]
    one = score(tiny, prefix, queries, labels, use_cache=use_cache).logp
    many = score(tiny, prefix, queries, labels, use_cache=use_cache, batch=3).logp
    assert torch.isfinite(one).all()
    torch.testing.assert_close(many, one, rtol=0, atol=1e-9)


@pytest.mark.parametrize("use_cache, queries_at, analysed", [(True, "rotary", "label"), (True, "projection", "prompt"),
                                                             (False, "rotary", "label")])
def test_batched_recording_equals_one_query_at_a_time(tiny, use_cache, queries_at, analysed):
    """Every hook point read per row of a padded batch (the analysed token's scores, attention output and
    query) equals the one-query-at-a-time recording."""
    from icgd.lm.icl import score

    g = torch.Generator().manual_seed(4)
    prefix = torch.randint(1, 50, (16,), generator=g).tolist()
    queries = [torch.randint(1, 50, (n,), generator=g).tolist() for n in (3, 7, 1, 5, 4)]
    labels = [[5], [7, 8]]
    kw = dict(use_cache=use_cache, record=True, record_queries=queries_at, analysed=analysed)
    one, many = score(tiny, prefix, queries, labels, **kw), score(tiny, prefix, queries, labels, batch=2, **kw)
    for name in ("logp", "out", "prefix_scores", "q_last"):
        torch.testing.assert_close(getattr(many, name), getattr(one, name), rtol=0, atol=1e-6, msg=name)
    assert [s.shape for s in many.query_scores] == [s.shape for s in one.query_scores]
    for a, b in zip(many.query_scores, one.query_scores):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)


def test_a_sliding_window_model_scores_past_its_window_with_the_prefix_cache():
    """The Gemma-3 family's layers alternate a sliding window and full attention: a tiny one (window 8) on a
    prefix of 20 tokens, past its window, scores the same with the prefix cache, without it and side by side
    (Gemma 3's cache once held only the window, and crop could not roll back). The recorded scores to the prefix
    too: keys the sliding layer cannot attend are -inf in all three, the rest equal. The packaged Gemma-3-270M
    runs the same test on its file under `-m slow` (tests/integration/test_lm.py)."""
    from icgd.lm.icl import score

    torch.manual_seed(0)
    cfg = transformers.Gemma3TextConfig(vocab_size=50, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                                        max_position_embeddings=128, sliding_window=8,
                                        layer_types=["sliding_attention", "full_attention"])
    lm = _LM(transformers.Gemma3ForCausalLM._from_config(cfg, attn_implementation="eager", dtype=torch.float64).eval())
    g = torch.Generator().manual_seed(5)
    prefix = torch.randint(1, 50, (20,), generator=g).tolist()
    queries = [torch.randint(1, 50, (n,), generator=g).tolist() for n in (2, 4, 3)]
    labels = [[5], [7, 8, 9]]  # a label of several tokens
    cached = score(lm, prefix, queries, labels, use_cache=True, record=True)
    whole = score(lm, prefix, queries, labels, use_cache=False, record=True)
    batched = score(lm, prefix, queries, labels, batch=2, record=True)  # one row of padding
    assert torch.isfinite(cached.logp).all()
    # Gemma's norms compute in float32 whatever the model's dtype: agreement to 1e-6, not float64's 1e-9
    torch.testing.assert_close(cached.logp, whole.logp, rtol=0, atol=1e-6)
    torch.testing.assert_close(batched.logp, cached.logp, rtol=0, atol=1e-6)
    a, b, c = cached.prefix_scores, whole.prefix_scores, batched.prefix_scores
    assert a.shape == b.shape == c.shape == (3, 2, len(prefix))
    seen = torch.isfinite(a)
    assert torch.equal(seen, torch.isfinite(b)) and torch.equal(seen, torch.isfinite(c))
    assert seen[:, 1].all() and not seen[:, 0].all() and seen[:, 0, -3:].all()  # layer 0 slides, layer 1 sees all
    torch.testing.assert_close(a[seen], b[seen], rtol=0, atol=1e-5)
    torch.testing.assert_close(c[seen], a[seen], rtol=0, atol=1e-5)
