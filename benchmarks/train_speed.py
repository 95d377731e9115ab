"""Training speed: seed-steps/s of the engine against a naive eager loop and the FLOP limit.

    python benchmarks/train_speed.py [--seeds 8] [--steps 30] [--threads 2] [--device cpu] [--json]

For the 1-layer LSA, the 5-layer LSA and the 2-layer softmax model (Dx = N = 10, batch 2048, Adam),
measured in one run on this machine:
- seed_steps_per_s: the engine (icgd.train.engine.Stepper), all seeds in one batched step;
- naive_seed_steps_per_s: plain eager PyTorch of the same math: one model per seed, tokens through the
  Stack, torch.optim.Adam, a fresh batch per seed per step;
- flops_per_step: FLOPs of one seed's naive forward + backward (torch.utils.flop_counter);
- matmul_gflops: this machine's large float32 matmul rate, so flop_limit = matmul_gflops / flops_per_step.
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from torch.utils.flop_counter import FlopCounterMode

from icgd.core.episodes import make_generator
from icgd.core.metrics import query_loss
from icgd.core.perf import keep_freed_memory
from icgd.learners.tokens import ConcatTokens
from icgd.learners.transformer import TransformerLearner
from icgd.nn.stack import Stack
from icgd.train.config import TrainConfig, load_config
from icgd.train.engine import Stepper

MODELS = {"lsa-1": "lsa-1", "lsa-5": "lsa-5", "softmax-2": "softmax-2"}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_gflops(device: torch.device, n: int = 2048, reps: int = 10) -> float:
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    a @ b
    _sync(device)
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    _sync(device)
    return 2 * n ** 3 * reps / (time.perf_counter() - t) / 1e9


def engine_rate(config: TrainConfig, device: torch.device, steps: int, warmup: int = 3) -> tuple[float, str]:
    st = Stepper(config, device)
    for i in range(warmup):
        st.step(i)
    _sync(device)
    t = time.perf_counter()
    for i in range(steps):
        st.step(i)
    _sync(device)
    return steps * len(config.seeds) / (time.perf_counter() - t), st.path


def naive_rate(config: TrainConfig, device: torch.device, steps: int, warmup: int = 2) -> float:
    models, opts, gens = [], [], []
    for s in config.seeds:
        m = TransformerLearner(Stack(config.stack_config(), device=device, generator=make_generator(s)),
                               ConcatTokens())
        models.append(m)
        opts.append(torch.optim.Adam(m.parameters(), lr=config.optim.lr))
        gens.append(make_generator(s))

    def one_step() -> None:
        for m, o, g in zip(models, opts, gens):
            ep = config.task.sample(config.batch_size, g).to(device)
            loss = query_loss(m.predict(ep), ep.query_y).mean()
            o.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(m.parameters(), config.optim.grad_clip or float("inf"))
            o.step()

    for _ in range(warmup):
        one_step()
    _sync(device)
    t = time.perf_counter()
    for _ in range(steps):
        one_step()
    _sync(device)
    return steps * len(models) / (time.perf_counter() - t)


def flops_per_step(config: TrainConfig) -> int:
    m = TransformerLearner(Stack(config.stack_config(), generator=make_generator(0)), ConcatTokens())
    ep = config.task.sample(config.batch_size, make_generator(0))
    with FlopCounterMode(display=False) as fc:
        query_loss(m.predict(ep), ep.query_y).mean().backward()
    return int(fc.get_total_flops())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=8, help="seeds per batched step (default 8)")
    p.add_argument("--steps", type=int, default=30, help="timed steps per measurement (default 30)")
    p.add_argument("--naive-steps", type=int, default=5, help="timed steps of the naive loop (default 5)")
    p.add_argument("--threads", type=int, default=2, help="CPU threads (default 2)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of " + ",".join(MODELS))
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    keep_freed_memory()
    device = torch.device(args.device)
    gflops = matmul_gflops(device)
    out = []
    for name in args.models.split(","):
        cfg = load_config(MODELS[name], [f"seeds={list(range(args.seeds))}", "task.dx=10", "task.n_context=10",
                                         "batch_size=2048"])
        rate, path = engine_rate(cfg, device, args.steps)
        naive = naive_rate(cfg.model_copy(update={"seeds": [0]}), device, args.naive_steps)
        flops = flops_per_step(cfg)
        out.append({"name": name, "seed_steps_per_s": round(rate, 1), "naive_seed_steps_per_s": round(naive, 1),
                    "flops_per_step": flops, "matmul_gflops": round(gflops, 1),
                    "flop_limit_steps_per_s": round(gflops * 1e9 / flops, 1), "seeds": args.seeds,
                    "backend": path})
    report = {"device": str(device), "threads": args.threads, "batch_size": 2048, "models": out}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"device {device}, {args.threads} threads, batch 2048, Dx = N = 10, large-matmul rate {gflops:.1f} GFLOP/s")
    print(f"{'model':<10} {'engine':>14} {'naive eager':>14} {'FLOP limit':>12} {'MFLOP/step':>11}  backend")
    for r in out:
        print(f"{r['name']:<10} {r['seed_steps_per_s']:>14.1f} {r['naive_seed_steps_per_s']:>14.1f} "
              f"{r['flop_limit_steps_per_s']:>12.1f} {r['flops_per_step'] / 1e6:>11.1f}  {r['backend']} "
              f"({r['seeds']} seeds)")
    print("(seed-steps per second)")


if __name__ == "__main__":
    main()
