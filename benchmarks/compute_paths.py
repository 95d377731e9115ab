"""Backends compared: milliseconds per training step (loss and gradient, all seeds at once).

    python benchmarks/compute_paths.py CONFIG [key=value ...] [--reps 15] [--threads 2] [--json]

CONFIG is a preset or a YAML file, as for `icgd train` (e.g. `lsa-1 model.layer_norm=true`). Every backend
that can compute the model runs the same config on the same batch: "compiled" (`icgd.train.compiled`),
"fused-heads" (`icgd.train.fused` with each head's attention by the compiled kernel), "fused" (PyTorch
products only) and "generic" (vmap over each seed's module); see
`icgd.train.backends`. Prints the median over `reps` steps after one warm-up step.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from icgd.core.perf import keep_freed_memory
from icgd.train.backends import backend
from icgd.train.config import load_config
from icgd.train.data import TaskStream
from icgd.train.models import init_params, trainable_names


def step_ms(config, reps: int) -> dict[str, float]:
    """{backend name: median ms of one loss + gradient step} for each backend that can compute the model."""
    params = init_params(config)
    names = trainable_names(config)
    for k in names:
        params[k].requires_grad_(True)
    batch = TaskStream(config, "cpu").next()
    out = {}
    for name in ("compiled", "fused-heads", "fused", "generic"):
        try:
            fn = backend(config, name).loss_fn
        except ValueError:  # this backend cannot compute the model
            continue
        times = []
        for _ in range(reps + 1):
            t0 = time.perf_counter()
            torch.autograd.grad(fn(params, *batch).sum(), [params[k] for k in names])
            times.append(time.perf_counter() - t0)
        out[name] = 1000 * statistics.median(times[1:])
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
            print(f"{config.name}: {name} backend {ms:.1f} ms per step ({len(config.seeds)} seeds, "
                  f"batch {config.batch_size})")


if __name__ == "__main__":
    main()
