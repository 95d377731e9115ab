"""Compute paths compared: milliseconds per training step (loss and gradient, all seeds at once).

    python benchmarks/compute_paths.py CONFIG [key=value ...] [--reps 15] [--threads 2] [--json]

CONFIG is a preset or a YAML file, as for `icgd train` (e.g. `lsa-1 model.layer_norm=true`). Every path
that supports the model runs the same config on the same batch: "kernel" (the compiled kernel,
`icgd.train.kernel`), "fused" (`icgd.train.fast` in PyTorch products, as with ICGD_KERNEL=0) and "vmap"
(the generic path). Prints the median over `reps` steps after one warm-up step.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch

from icgd.perf import keep_freed_memory
from icgd.train.config import load_config
from icgd.train.engine import TaskStream, init_params, make_loss_fn, trainable_names


def step_ms(config, reps: int) -> dict[str, float]:
    """{path name: median ms of one loss + gradient step} for each path that supports the model."""
    params = init_params(config)
    names = trainable_names(config)
    for k in names:
        params[k].requires_grad_(True)
    batch = TaskStream(config, "cpu").next()
    out = {}
    for fast, use_kernel in ((True, True), (True, False), (False, False)):
        os.environ["ICGD_KERNEL"] = "1" if use_kernel else "0"
        fn, name = make_loss_fn(config.model_copy(update={"fast": fast}))
        if name in out:
            continue
        times = []
        for _ in range(reps + 1):
            t0 = time.perf_counter()
            torch.autograd.grad(fn(params, *batch).sum(), [params[k] for k in names])
            times.append(time.perf_counter() - t0)
        out[name] = 1000 * statistics.median(times[1:])
    os.environ.pop("ICGD_KERNEL")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", help="a preset name or a YAML config")
    ap.add_argument("overrides", nargs="*", help="key=value overrides")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    keep_freed_memory()  # as `icgd train` does
    config = load_config(args.config, args.overrides)
    res = step_ms(config, args.reps)
    if args.json:
        print(json.dumps({"config": config.name, "seeds": len(config.seeds), "batch_size": config.batch_size,
                          "ms_per_step": res}))
    else:
        for name, ms in res.items():
            print(f"{config.name}: {name} path {ms:.1f} ms per step ({len(config.seeds)} seeds, "
                  f"batch {config.batch_size})")


if __name__ == "__main__":
    main()
