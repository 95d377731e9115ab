"""ICL evaluation speed with and without the demonstration prefix's key/value cache, and the time of one
key/value finetuning pass (source 003).

k demonstrations of a task (default BBC News topics, drawn by `--seed` as the ICL-vs-finetuning study draws
them: `TextTask.demonstrations`),
Q test queries, the task's single-token labels; the same queries are scored twice, with the prefix cache
(`use_cache=True`: the prefix runs once) and without (every query runs whole from the first token, the
prefix forward included in the cached time), and the label log-probabilities compared. Then FT: one epoch
of SGD on the key/value projections over the same k demonstrations (`icgd.lm.finetune.finetune_kv`).
Prints queries/s for both, their ratio (`speedup` in --json), the FT seconds per demonstration set and the
process's peak memory. With `--batch B` the cached queries are also scored B side by side
(`icgd.lm.icl.score_batched`): `queries_per_s_batched`, `batch_speedup` over one at a time, and the largest
log-probability difference between the two.

    python3 benchmarks/lm_eval_speed.py [--model smollm2-135m] [--task bbc-news] [--k 32] [--queries 20] [--batch 8] [--json]
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import torch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--task", default="bbc-news", help="a packaged task or a CSV (icgd.data.text.load_task)")
    ap.add_argument("--k", type=int, default=32, help="demonstrations")
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0, help="demonstration seed")
    ap.add_argument("--lr", type=float, default=1e-2, help="FT learning rate (timing only)")
    ap.add_argument("--batch", type=int, default=1, help="also score the cached queries this many side by side")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from icgd.data.text import load_task
    from icgd.lm.finetune import KVSnapshot, finetune_kv
    from icgd.lm.icl import (
        build_prefix,
        demonstration_ids,
        label_ids,
        query_ids,
        score,
        start_ids,
    )
    from icgd.lm.models import load_lm

    task = load_task(args.task)
    t0 = time.perf_counter()
    lm = load_lm(args.model)
    load_s = time.perf_counter() - t0
    demos = task.demonstrations(args.k, args.seed)
    test = task.split("test")[:args.queries]
    prefix = build_prefix(lm, task, demos)
    queries, labels = query_ids(lm, task, test), label_ids(lm, task)
    times, scores = {}, {}
    for use_cache in (True, False):
        t0 = time.perf_counter()
        scores[use_cache] = score(lm, prefix, queries, labels, use_cache=use_cache, progress=not args.json,
                                  desc=f"ICL, prefix cache {'on' if use_cache else 'off'}").logp
        times[use_cache] = time.perf_counter() - t0
    if args.batch > 1:
        t0 = time.perf_counter()
        batched = score(lm, prefix, queries, labels, batch=args.batch, progress=not args.json,
                        desc=f"ICL, {args.batch} queries side by side").logp
        times["batched"] = time.perf_counter() - t0
    start = start_ids(lm)
    with KVSnapshot(lm.model):
        t0 = time.perf_counter()
        ft = finetune_kv(lm, [start + d for d in demonstration_ids(lm, task, demos)], args.lr, progress=not args.json)
        ft_s = time.perf_counter() - t0
    diff = float((scores[True] - scores[False]).abs().max())
    gold = torch.tensor([task.label_index(int(i)) for i in test])
    out = {"model": args.model, "task": task.name, "k": args.k, "queries": len(queries),
           "prefix_tokens": len(prefix.ids), "load_seconds": round(load_s, 1),
           "queries_per_s_cached": len(queries) / times[True], "queries_per_s_uncached": len(queries) / times[False],
           "speedup": times[False] / times[True], "max_abs_logprob_difference": diff,
           "ft_seconds_per_set": ft_s, "ft_final_loss": ft.losses[-1],
           "icl_accuracy": float((scores[True].argmax(1) == gold).double().mean()),
           "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "torch_threads": torch.get_num_threads()}
    if args.batch > 1:
        out |= {"batch": args.batch, "queries_per_s_batched": len(queries) / times["batched"],
                "batch_speedup": times[True] / times["batched"],
                "max_abs_logprob_difference_batched": float((batched - scores[True]).abs().max())}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{args.model}, {task.name}, {args.k} demonstrations ({out['prefix_tokens']} prefix tokens), "
              f"{len(queries)} queries, {len(labels)} labels: cached {out['queries_per_s_cached']:.2f} queries/s, "
              f"uncached {out['queries_per_s_uncached']:.2f} queries/s, speedup {out['speedup']:.1f}x; largest "
              f"label log-prob difference {diff:.2e}; FT {ft_s:.1f} s per demonstration set; peak memory "
              f"{out['peak_rss_mib']:.0f} MiB")


if __name__ == "__main__":
    main()
