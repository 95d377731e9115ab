"""What momentum attention costs: vanilla against momentum causal attention at each sequence length.

    python benchmarks/momentum_speed.py [--lengths 128,256,512,1024,2048] [--batch 8] [--reps 5] [--threads 2] [--json]

For one attention layer of the causal LMs the momentum studies train (width 64, 2 heads of 32, causal
softmax; `icgd.learners.causal_lm.lm_stack_config`), forward and backward on B sequences of T tokens, vanilla
and with momentum (beta 0.5, the chunked scan `icgd.nn.attention.past_ema`):
- us_per_token: microseconds per token (min over `reps` timings), and the ratio momentum / vanilla;
- saved_mb: the tensors autograd keeps for the backward (the activation memory the layer adds), counted by
  `torch.autograd.graph.saved_tensors_hooks` (unique storages).
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from icgd.nn.attention import Attention, AttentionOptions
from icgd.learners.causal_lm import lm_stack_config


def layer(momentum: float | None) -> Attention:
    cfg = lm_stack_config(64, 1, 2, 4, AttentionOptions(causal=True, momentum=momentum)).attention
    return Attention(cfg, init_std=0.02, generator=torch.Generator().manual_seed(0))


def step(attn: Attention, x: torch.Tensor) -> None:
    attn(x, x.shape[1]).square().mean().backward()


def saved_mb(attn: Attention, x: torch.Tensor) -> float:
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        st = t.untyped_storage()
        seen[st.data_ptr()] = st.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = attn(x, x.shape[1]).square().mean()
    out.backward()
    return sum(seen.values()) / 2 ** 20


def time_us(attn: Attention, x: torch.Tensor, reps: int) -> float:
    step(attn, x)
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        step(attn, x)
        best = min(best, time.perf_counter() - t)
    return best / x.shape[0] / x.shape[1] * 1e6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lengths", default="128,256,512,1024,2048")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    vanilla, mom = layer(None), layer(0.5)
    for t_len in (int(x) for x in args.lengths.split(",")):
        x = torch.randn(args.batch, t_len, 64, generator=torch.Generator().manual_seed(1), requires_grad=True)
        r = {"length": t_len}
        for name, attn in (("vanilla", vanilla), ("momentum", mom)):
            r[f"{name}_us_per_token"] = round(time_us(attn, x, args.reps), 2)
            r[f"{name}_saved_mb"] = round(saved_mb(attn, x), 2)
        r["time_ratio"] = round(r["momentum_us_per_token"] / r["vanilla_us_per_token"], 3)
        rows.append(r)
    if args.json:
        print(json.dumps({"threads": args.threads, "batch": args.batch, "rows": rows}, indent=2))
        return
    print(f"one causal attention layer, width 64, 2 heads, batch {args.batch}, forward + backward, "
          f"{args.threads} threads")
    print(f"{'T':>6} {'vanilla us/tok':>15} {'momentum us/tok':>16} {'ratio':>6} {'vanilla MB':>11} {'momentum MB':>12}")
    for r in rows:
        print(f"{r['length']:>6} {r['vanilla_us_per_token']:>15.2f} {r['momentum_us_per_token']:>16.2f} "
              f"{r['time_ratio']:>6.2f} {r['vanilla_saved_mb']:>11.2f} {r['momentum_saved_mb']:>12.2f}")


if __name__ == "__main__":
    main()
