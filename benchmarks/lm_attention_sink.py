"""Where the attention sink sits in source 003's prompts, with and without a BOS token.

For Q zero-shot (ZSL) and in-context (ICL, k demonstrations of seed 0) prompts of a task, the analysed token's
attention weights (softmax of its recorded pre-softmax scores, `icgd.lm.record`) are averaged over heads,
layers and queries, and split into: the first position of the sequence, the rest of the query's own tokens
(SimAM's slice, `icgd.lm.measures.simam`) and, for ICL, the demonstrations. Run once with the model's BOS
token in front (`start="bos"`, the default) and once with only what the tokenizer adds (`start="tokenizer"`:
nothing for SmolLM2, whose first query token then starts the ZSL sequence). Prints one row per (start,
setting); `--json` prints them as a list.

    python3 benchmarks/lm_attention_sink.py [--model smollm2-135m] [--task bbc-news] [--k 8] [--queries 20] [--json]
"""

from __future__ import annotations

import argparse
import json

import torch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--task", default="bbc-news")
    ap.add_argument("--k", type=int, default=8, help="demonstrations of the ICL prompt")
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from icgd.data.text import load_task
    from icgd.lm.icl import build_prefix, label_ids, query_ids, score, start_ids
    from icgd.lm.models import load_lm

    task = load_task(args.task)
    lm = load_lm(args.model)
    queries = query_ids(lm, task, task.split("test")[:args.queries])
    labels = label_ids(lm, task)
    rows = []
    for start in ("bos", "tokenizer"):
        first = start_ids(lm, start)
        prefixes = {"ZSL": first, "ICL": build_prefix(lm, task, task.demonstrations(args.k, 0), start).ids}
        for setting, prefix in prefixes.items():
            # every sequence whole, no prefix: the recorded per-head scores then reach every position
            s = score(lm, [], [prefix + q for q in queries], labels, use_cache=False, record=True)
            P, parts = len(prefix), {"first": 0.0, "query": 0.0, "demonstrations": 0.0}
            for qs in s.query_scores:  # (L, H, T) pre-softmax scores of the analysed token
                w = torch.softmax(qs.double(), -1).mean((0, 1))  # over layers and heads
                parts["first"] += float(w[0]) / len(queries)
                parts["query"] += float(w[max(P, 1):].sum()) / len(queries)
                parts["demonstrations"] += float(w[max(len(first), 1):P].sum()) / len(queries)
            rows.append({"model": args.model, "start": start, "start_tokens": first, "setting": setting,
                         "first_position": parts["first"], "query_tokens_but_first": parts["query"],
                         "demonstrations": parts["demonstrations"]})
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    for r in rows:
        print(f"{r['start']:>9} {r['setting']}: first position {r['first_position']:.3f}, rest of the query "
              f"{r['query_tokens_but_first']:.3f}, demonstrations {r['demonstrations']:.3f} (start tokens "
              f"{r['start_tokens']})")


if __name__ == "__main__":
    main()
