"""Source 003's language-model layer: offline loading with one-line errors, and ICL scoring whose prefix
key/value cache gives the same label log-probabilities as running every sequence whole."""

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
