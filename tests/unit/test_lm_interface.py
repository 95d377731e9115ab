"""What `icgd.lm` reads of Hugging Face transformers, checked against the pinned version: the pins hold, the
attention interface calls icgd's recording function with the arguments it reads, icgd's eager attention is
the modelling code's, recording changes no logit, and the cache API the prefix scoring uses exists. A pin
moved in constraints.txt without these passing means icgd.lm reads something that changed.

Tiny models are built from configs (Llama, Qwen2 and the Gemma-3 family, whose layers alternate sliding-
window and full attention), randomly initialised: nothing is downloaded."""

import importlib.metadata
import re
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[2]
#: the packages whose behaviour icgd.lm (and the sentence encoder of icgd.data.features) depends on
PINNED = ("transformers", "tokenizers", "huggingface_hub", "accelerate", "gguf", "safetensors", "sentence-transformers")


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.-]+)==([^\s#]+)", line.strip())
        if m:
            pins[m.group(1).lower().replace("_", "-")] = m.group(2)
    return pins


@pytest.mark.parametrize("package", PINNED)
def test_the_installed_version_is_the_pinned_one(package):
    pins = _pins()
    key = package.lower().replace("_", "-")
    assert key in pins, f"{package} is not pinned in constraints.txt"
    try:
        installed = importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"{package} is not installed")
    assert installed == pins[key], (f"{package} {installed} is installed, constraints.txt pins {pins[key]}: install "
                                    "with -c constraints.txt, or move the pin and re-run this module")


def _tiny(kind: str):
    torch.manual_seed(0)
    common = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=256)
    if kind == "llama":
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**common))
    elif kind == "qwen2":
        model = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**common))
    else:  # Gemma-3: a sliding-window layer then a full one, as in the packaged Gemma-3-270M
        cfg = transformers.Gemma3TextConfig(**common, head_dim=8, sliding_window=8,
                                            layer_types=["sliding_attention", "full_attention"])
        model = transformers.Gemma3ForCausalLM(cfg)
    model.set_attn_implementation("eager")
    return model.to(torch.float64).eval()


def _modelling_module(model):
    import importlib

    return importlib.import_module(type(model).__module__)


@pytest.mark.parametrize("kind", ["llama", "qwen2", "gemma3"])
def test_icgds_eager_attention_is_the_modelling_codes(kind):
    """`icgd.lm.record.eager_attention` on the interface's arguments equals the model's own eager function."""
    from icgd.lm.record import attention_modules, eager_attention

    model = _tiny(kind)
    module = attention_modules(model)[0]
    g = torch.Generator().manual_seed(1)
    q = torch.randn(1, 4, 7, 8, generator=g, dtype=torch.float64)
    k, v = (torch.randn(1, 2, 7, 8, generator=g, dtype=torch.float64) for _ in range(2))
    mask = torch.triu(torch.full((7, 7), -torch.inf, dtype=torch.float64), 1)[None, None]
    theirs = _modelling_module(model).eager_attention_forward(module, q, k, v, mask, scaling=0.3, dropout=0.0)
    ours = eager_attention(module, q, k, v, mask, scaling=0.3, dropout=0.0)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


@pytest.mark.parametrize("kind", ["llama", "qwen2", "gemma3"])
def test_recording_reads_the_interfaces_arguments_and_changes_no_logit(kind, monkeypatch):
    from icgd.lm import record

    model = _tiny(kind)
    ids = torch.randint(0, 64, (1, 20), generator=torch.Generator().manual_seed(2))  # longer than the window
    seen = []
    inner = record._recording_attention

    def spy(module, query, key, value, attention_mask, scaling, dropout=0.0, **kw):
        seen.append((module.layer_idx, tuple(query.shape), tuple(key.shape), float(scaling)))
        return inner(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kw)

    monkeypatch.setattr(record, "_recording_attention", spy)
    monkeypatch.setattr(record, "IMPLEMENTATION", f"icgd_record_test_{kind}")  # a fresh registration with the spy
    with torch.no_grad():
        ref = model(ids, output_attentions=True)
        with record.Recorder(model, queries=True) as rec:
            got = model(ids)
            r = rec.take()
    torch.testing.assert_close(got.logits, ref.logits, rtol=0, atol=0)  # recording changes nothing
    assert [s[0] for s in seen] == [0, 1] and all(s[1] == (1, 4, 20, 8) and s[2] == (1, 2, 20, 8) for s in seen)
    # the scores icgd keeps (float32) are the pre-softmax scores: with the model's mask they give its weights
    for layer, weights in enumerate(ref.attentions):
        last = weights[0, :, -1]  # (H, K)
        scores = r["scores_last"][layer].double()
        allowed = last > 0
        torch.testing.assert_close(scores.masked_fill(~allowed, -torch.inf).softmax(-1), last, rtol=0, atol=1e-6)
    model.set_attn_implementation("eager")  # what the recorder set back: the model still runs eager
    with torch.no_grad():
        torch.testing.assert_close(model(ids).logits, ref.logits, rtol=0, atol=0)


def test_the_cache_api_the_prefix_scoring_uses():
    """`icgd.lm.icl.score` runs the prefix once (`.cache` of the output), then each query with `cache=` and
    rolls it back with `crop`: equal to running the whole sequence."""
    model = _tiny("llama")
    pre, seq = torch.arange(3, 15)[None], torch.arange(20, 25)[None]
    with torch.no_grad():
        cache = model(pre, use_cache=True).cache
        part = model(seq, cache=cache, use_cache=True).logits[0]
        cache.crop(-seq.shape[1])
        again = model(seq, cache=cache, use_cache=True).logits[0]
        whole = model(torch.cat([pre, seq], 1)).logits[0, pre.shape[1]:]
    torch.testing.assert_close(part, whole, rtol=0, atol=1e-6)
    torch.testing.assert_close(again, part, rtol=0, atol=0)
