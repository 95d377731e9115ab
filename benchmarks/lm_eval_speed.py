"""ICL evaluation speed with and without the demonstration prefix's key/value cache (source 003).

k demonstrations of BBC News topics (title + first sentence), Q queries, 5 single-token topic labels; the
same queries are scored twice, with `use_cache` on and off, and the label log-probabilities compared.
Prints queries/s for both, their ratio (`speedup` in --json) and the process's peak memory.

    python3 benchmarks/lm_eval_speed.py [--model smollm2-135m] [--k 32] [--queries 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import time

import torch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--k", type=int, default=32, help="demonstrations")
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from icgd.lm.data import bbc_news
    from icgd.lm.icl import label_logprobs, token_ids
    from icgd.lm.models import load_lm

    data = bbc_news()
    rng = random.Random(args.seed)
    rng.shuffle(data)
    demos, queries = data[:args.k], data[args.k:args.k + args.queries]
    prefix = "".join(f"Article: {t}\nTopic: {y}\n\n" for t, y in demos)
    labels = [" business", " entertainment", " politics", " sport", " tech"]
    t0 = time.perf_counter()
    lm = load_lm(args.model)
    load_s = time.perf_counter() - t0
    texts = [f"Article: {t}\nTopic:" for t, _ in queries]
    times, scores = {}, {}
    for use_cache in (True, False):
        t0 = time.perf_counter()
        scores[use_cache] = label_logprobs(lm, prefix, texts, labels, use_cache=use_cache)
        times[use_cache] = time.perf_counter() - t0
    diff = float((scores[True] - scores[False]).abs().max())
    gold = torch.tensor([labels.index(" " + y) for _, y in queries])
    out = {"model": args.model, "k": args.k, "queries": len(texts), "prefix_tokens": len(token_ids(lm, prefix, True)),
           "load_seconds": round(load_s, 1), "queries_per_s_cached": len(texts) / times[True],
           "queries_per_s_uncached": len(texts) / times[False], "speedup": times[False] / times[True],
           "max_abs_logprob_difference": diff,
           "icl_accuracy": float((scores[True].argmax(1) == gold).double().mean()),
           "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "torch_threads": torch.get_num_threads()}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{args.model}, {args.k} demonstrations ({out['prefix_tokens']} prefix tokens), {len(texts)} queries, "
              f"5 labels: cached {out['queries_per_s_cached']:.2f} queries/s, uncached "
              f"{out['queries_per_s_uncached']:.2f} queries/s, speedup {out['speedup']:.1f}x; largest label "
              f"log-prob difference {diff:.2e}; peak memory {out['peak_rss_mib']:.0f} MiB")


if __name__ == "__main__":
    main()
