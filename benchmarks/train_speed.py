"""Training speed: seed-steps/s of the engine against a naive eager loop, the authors' math in JAX and the
FLOP limit.

    python benchmarks/train_speed.py [--seeds 1,8] [--steps 30] [--threads 2] [--device cpu|cuda] [--json]

For the 1-layer LSA, the 5-layer LSA and the 2-layer softmax model (Dx = N = 10, batch 2048, Adam),
measured in one run on this machine, for each seed count:
- seed_steps_per_s: the engine (icgd.train.engine.Stepper), all seeds in one batched step, on the step it
  picks (on a CUDA device the CUDA graph step, `icgd.train.graphed`; `step` names it);
- eager_seed_steps_per_s (CUDA only): the engine with the graph step turned off, to see what the graph gives;
- no_triton_seed_steps_per_s (CUDA only, where the engine's attention ran in the Triton kernels): the engine
  with ICGD_TRITON=0 (attention by PyTorch's batched products), to see what the kernels give;
- jax_seed_steps_per_s, ratio_to_jax: the same math in JAX, jitted whole with vmap over seeds and the data
  drawn on the device (benchmarks/jax_reference.py), and icgd's rate over it; only where JAX is importable;
- naive_seed_steps_per_s: plain eager PyTorch of the same math: one model per seed, tokens through the
  Stack, torch.optim.Adam, a fresh batch per seed per step;
- flops_per_step: FLOPs of one seed's naive forward + backward (torch.utils.flop_counter);
- matmul_gflops: this machine's large float32 matmul rate, so flop_limit = matmul_gflops / flops_per_step.
"""

from __future__ import annotations

import argparse
import json
import os
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


def engine_rate(config: TrainConfig, device: torch.device, steps: int, warmup: int = 5,
                graph: bool | None = None, triton: bool = True) -> tuple[float, str, str, str]:
    """(seed-steps per second, backend, step path, the backend's reason); the warm-up covers the graph step's
    capture. triton False: with ICGD_TRITON=0."""
    if not triton:
        before = os.environ.get("ICGD_TRITON")
        os.environ["ICGD_TRITON"] = "0"
        try:
            return engine_rate(config, device, steps, warmup, graph)
        finally:
            os.environ.pop("ICGD_TRITON") if before is None else os.environ.__setitem__("ICGD_TRITON", before)
    config = config.model_copy(update={"steps": warmup + steps})
    st = Stepper(config, device, graph=graph)
    for i in range(warmup):
        st.step(i)
    _sync(device)
    t = time.perf_counter()
    for i in range(warmup, warmup + steps):
        st.step(i)
    _sync(device)
    return (steps * len(config.seeds) / (time.perf_counter() - t), st.path, st.step_path.split(" (")[0],
            st.backend.reason)


def jax_rate(config: TrainConfig, steps: int) -> float | None:
    """The JAX reference's seed-steps per second from the engine's initial weights; None without JAX."""
    try:
        import jax_reference
    except ImportError:
        return None
    from icgd.train.models import init_params

    m, t = config.model, config.task
    return jax_reference.rate(init_params(config, "cpu"), m.n_layers, m.attention.kernel == "softmax", m.clip,
                              config.batch_size, t.n_context, t.dx, config.optim.lr, config.optim.grad_clip, steps)


def naive_rate(config: TrainConfig, device: torch.device, steps: int, warmup: int = 2) -> float:
    models, opts, gens = [], [], []
    for s in config.seeds:
        # built on the CPU, where its generator lives, then moved (a CPU generator cannot fill CUDA weights)
        m = TransformerLearner(Stack(config.stack_config(), generator=make_generator(s)), ConcatTokens()).to(device)
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
    p.add_argument("--seeds", default="8", help="seed counts per batched step, comma-separated (default 8)")
    p.add_argument("--steps", type=int, default=30, help="timed steps per measurement (default 30)")
    p.add_argument("--naive-steps", type=int, default=5, help="timed steps of the naive loop (default 5)")
    p.add_argument("--threads", type=int, default=2, help="CPU threads (default 2)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of " + ",".join(MODELS))
    p.add_argument("--no-jax", action="store_true", help="skip the JAX reference even where JAX is importable")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    keep_freed_memory()
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda: CUDA is not available")
    if not args.no_jax:
        _jax_on(device)
    gflops = matmul_gflops(device)
    out = []
    for name in args.models.split(","):
        for n_seeds in (int(x) for x in args.seeds.split(",")):
            cfg = load_config(MODELS[name], [f"seeds={list(range(n_seeds))}", "task.dx=10", "task.n_context=10",
                                             "batch_size=2048"])
            rate, path, step, reason = engine_rate(cfg, device, args.steps)
            eager = engine_rate(cfg, device, args.steps, graph=False)[0] if step == "CUDA graph" else None
            no_triton = (engine_rate(cfg, device, args.steps, triton=False)[0] if "by the Triton kernels" in reason
                         else None)
            jax = None if args.no_jax else jax_rate(cfg, args.steps)
            naive = naive_rate(cfg.model_copy(update={"seeds": [0]}), device, args.naive_steps)
            flops = flops_per_step(cfg)
            out.append({"name": name, "seeds": n_seeds, "seed_steps_per_s": round(rate, 1),
                        "eager_seed_steps_per_s": None if eager is None else round(eager, 1),
                        "no_triton_seed_steps_per_s": None if no_triton is None else round(no_triton, 1),
                        "jax_seed_steps_per_s": None if jax is None else round(jax, 1),
                        "ratio_to_jax": None if jax is None else round(rate / jax, 3),
                        "naive_seed_steps_per_s": round(naive, 1), "flops_per_step": flops,
                        "matmul_gflops": round(gflops, 1), "flop_limit_steps_per_s": round(gflops * 1e9 / flops, 1),
                        "backend": path, "backend_reason": reason, "step": step})
    report = {"device": str(device), "device_name": torch.cuda.get_device_name(device) if device.type == "cuda"
              else None, "threads": args.threads, "batch_size": 2048, "models": out}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"device {report['device_name'] or device}, {args.threads} threads, batch 2048, Dx = N = 10, "
          f"large-matmul rate {gflops:.1f} GFLOP/s")
    print(f"{'model':<10} {'seeds':>5} {'engine':>10} {'eager':>10} {'no Triton':>10} {'JAX':>10} {'/JAX':>6} "
          f"{'naive':>9} {'FLOP limit':>11}  backend, step")

    def num(v, f=".1f"):
        return "-" if v is None else f"{v:{f}}"

    for r in out:
        print(f"{r['name']:<10} {r['seeds']:>5} {r['seed_steps_per_s']:>10.1f} {num(r['eager_seed_steps_per_s']):>10} "
              f"{num(r['no_triton_seed_steps_per_s']):>10} {num(r['jax_seed_steps_per_s']):>10} {num(r['ratio_to_jax'], '.2f'):>6} "
              f"{r['naive_seed_steps_per_s']:>9.1f} {r['flop_limit_steps_per_s']:>11.1f}  {r['backend']}, {r['step']}")
    print("(seed-steps per second; /JAX: the engine's rate over JAX's, >= 1 is as fast or faster)")


def _jax_on(device: torch.device) -> None:
    """Point JAX at the device being timed (its GPU for cuda, else its CPU) before it first runs."""
    try:
        import jax
    except ImportError:
        return
    jax.config.update("jax_platforms", "cuda" if device.type == "cuda" else "cpu")


if __name__ == "__main__":
    main()
