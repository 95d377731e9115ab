"""CPU throughput of the models with MLPs: the sine study in the authors' set-up (`oswald-sine-code`).

    python benchmarks/mlp_speed.py [--steps 3] [--reps 3] [--threads 2] [--quick] [--json]

For each of the study's two models (the Trained TF `sine-code-lsa` and the GD control `sine-code-gd`; batch
2048, embedding 40, MLP 160, the full study's 5 seeds or quick mode's 3) it prints:
- ms_per_step: the engine's training step (`Stepper.step`, all seeds at once), min over `reps` timings of
  `steps` steps each;
- seed_steps_per_s;
- gflop_per_step: the step's floating-point work, counted by torch.utils.flop_counter on the step itself;
- matmul_gflops: the machine's large float32 matmul rate in the same run, so that
  bound_ms = gflop_per_step / matmul_gflops is the step at the machine's matmul speed, and x_bound =
  ms_per_step / bound_ms how far above that the step is (the target is <= 3);
- train_minutes: the study's training alone at this rate (steps of the mode x ms_per_step).
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from torch.utils.flop_counter import FlopCounterMode

from icgd.core.perf import keep_freed_memory
from icgd.experiments.runner import plan_experiment
from icgd.train.config import build_config
from icgd.train.engine import Stepper


def matmul_gflops(n: int = 2048, reps: int = 10) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    return 2 * n ** 3 * reps / (time.perf_counter() - t) / 1e9


def step_ms(config, steps: int, reps: int) -> float:
    st = Stepper(config, "cpu")
    for i in range(2):
        st.step(i)
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        for i in range(steps):
            st.step(i)
        best = min(best, (time.perf_counter() - t) / steps)
    return best * 1e3


def step_gflop(config) -> float:
    st = Stepper(config, "cpu")
    with FlopCounterMode(display=False) as fc:
        st.step(0)
    return fc.get_total_flops() / 1e9


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--quick", action="store_true", help="quick mode's models (3 seeds, 2000 steps)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    keep_freed_memory()
    plan = plan_experiment("oswald-sine-code", "quick" if args.quick else "full")
    rate = matmul_gflops()
    rows = []
    for m in plan["models"]:
        cfg = build_config(m["config"])
        ms = step_ms(cfg, args.steps, args.reps)
        gflop = step_gflop(cfg)
        bound = gflop / rate * 1e3
        rows.append({"model": m["name"], "seeds": len(cfg.seeds), "ms_per_step": round(ms, 1),
                     "seed_steps_per_s": round(len(cfg.seeds) / ms * 1e3, 1), "gflop_per_step": round(gflop, 2),
                     "matmul_gflops": round(rate, 1), "bound_ms": round(bound, 1), "x_bound": round(ms / bound, 2),
                     "train_minutes": round(cfg.steps * ms / 6e4, 1), "backend": Stepper(cfg, "cpu").path})
    if args.json:
        print(json.dumps({"threads": args.threads, "mode": plan["mode"], "models": rows}, indent=2))
        return
    print(f"oswald-sine-code ({plan['mode']}), {args.threads} threads, large-matmul rate {rate:.1f} GFLOP/s")
    print(f"{'model':<15} {'seeds':>5} {'ms/step':>8} {'seed-steps/s':>12} {'GFLOP/step':>10} {'bound ms':>9} "
          f"{'x bound':>8} {'train min':>9}  backend")
    for r in rows:
        print(f"{r['model']:<15} {r['seeds']:>5} {r['ms_per_step']:>8.1f} {r['seed_steps_per_s']:>12.1f} "
              f"{r['gflop_per_step']:>10.2f} {r['bound_ms']:>9.1f} {r['x_bound']:>8.2f} {r['train_minutes']:>9.1f}  "
              f"{r['backend']}")


if __name__ == "__main__":
    main()
