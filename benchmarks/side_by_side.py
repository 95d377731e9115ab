"""Side-by-side trainings (`icgd verify --workers N`) against one training on all threads.

    python benchmarks/side_by_side.py [--models depth-2,heads4-mlp,layernorm2] [--steps 40] [--workers 2] [--batch 2048] [--json]

For each model (batch 2048, 5 seeds, Dx = N = 10, as the linear study's full mode): seed-steps/s of one
training with all `--workers` threads, and the summed seed-steps/s of `--workers` trainings of one thread
each running at the same time in separate processes (what `--workers` does). Speed-up = summed / single.
Run it with nothing else on the machine.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import time

MODELS = {
    "lsa-1": {"n_layers": 1},
    "depth-2": {"n_layers": 2},
    "lsa-5": {"n_layers": 5, "clip": 10.0},
    "heads4-mlp": {"n_layers": 2, "n_heads": 4, "mlp": True},
    "layernorm2": {"n_layers": 1, "layer_norm": True, "n_heads": 2},
    "softmax-2h": {"n_layers": 1, "kernel": "softmax", "n_heads": 2},
}


def _rate(model: dict, threads: int, steps: int, batch: int = 2048, start=None) -> float:
    """Seed-steps/s of `steps` training steps (after 3 warm-up steps) with `threads` torch threads."""
    import torch

    from icgd.train.config import build_config
    from icgd.train.engine import Stepper

    torch.set_num_threads(threads)
    cfg = build_config({"name": "bench", "model": model, "steps": 10_000, "seeds": [0, 1, 2, 3, 4],
                        "batch_size": batch})
    st = Stepper(cfg)
    for i in range(3):
        st.step(i)
    if start is not None:
        start.wait()  # the workers start timing together
    t0 = time.perf_counter()
    for i in range(steps):
        st.step(i)
    return len(cfg.seeds) * steps / (time.perf_counter() - t0)


def _worker(model: dict, steps: int, batch: int, start, out) -> None:
    out.put(_rate(model, 1, steps, batch, start))


def side_by_side(model: dict, workers: int, steps: int, batch: int = 2048) -> float:
    """Summed seed-steps/s of `workers` one-thread trainings running at once."""
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Barrier(workers), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(model, steps, batch, start, out)) for _ in range(workers)]
    for p in procs:
        p.start()
    rates = [out.get() for _ in procs]
    for p in procs:
        p.join()
    return sum(rates)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="depth-2,heads4-mlp,layernorm2", help=f"comma-separated: {', '.join(MODELS)}")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    for name in args.models.split(","):
        single = _rate(MODELS[name], args.workers, args.steps, args.batch)
        summed = side_by_side(MODELS[name], args.workers, args.steps, args.batch)
        rows.append({"model": name, "single_seed_steps_per_s": round(single, 1),
                     "side_by_side_seed_steps_per_s": round(summed, 1), "speedup": round(summed / single, 2)})
    if args.json:
        print(json.dumps({"workers": args.workers, "steps": args.steps, "batch": args.batch, "rows": rows}, indent=2))
        return
    print(f"{'model':<12} {'1 training, ' + str(args.workers) + ' threads':>24} "
          f"{str(args.workers) + ' trainings side by side':>26} {'speed-up':>9}")
    for r in rows:
        print(f"{r['model']:<12} {r['single_seed_steps_per_s']:>24} {r['side_by_side_seed_steps_per_s']:>26} "
              f"{r['speedup']:>9}")


if __name__ == "__main__":
    main()
