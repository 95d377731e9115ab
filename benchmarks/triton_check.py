"""The Triton attention kernels on a device: losses and gradients against the PyTorch products, and the time
of one training step's loss and gradient with each.

    python benchmarks/triton_check.py [--device cuda] [--batch 2048] [--seeds 8] [--reps 20] [--profile]

For the 1-layer and 5-layer LSA, the 2-layer softmax model (Dx = N = 10) and a 2-head stack with MLP
(attention per head), float32: the largest relative difference of the per-seed losses and of each weight
gradient between the fused backend with the Triton kernels ("fused-triton") and with PyTorch's products
("fused"), and milliseconds per forward + backward of each (CUDA events, median of --reps after a warm-up).
Exits 1 when a difference exceeds 1e-4 (float32 rounding over a few hundred terms is about 1e-6). On the CPU
the kernels run in Triton's interpreter: use a small --batch (a dry run of this script).

--profile: then, for the 5-layer LSA and the 2-layer softmax model, the device kernels of 5 steps' loss and
gradient under torch.profiler, with and without the Triton kernels (the 12 longest by total device time):
which kernels a step spends its time in (docs/concepts/training.md, "Speed").
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch

from icgd.train.backends import backend
from icgd.train.config import load_config
from icgd.train.data import TaskStream
from icgd.train.models import init_params, trainable_names

CASES = {
    "lsa-1": ("lsa-1", []),
    "lsa-5": ("lsa-5", []),
    "softmax-2": ("softmax-2", []),
    "lsa-2 heads+MLP": ("lsa-5", ["model.n_layers=2", "model.n_heads=2", "model.mlp=true"]),
}


def _timed(fn, device: torch.device, reps: int) -> float:
    """Median milliseconds of fn() over reps calls, after two warm-up calls."""
    for _ in range(2):
        fn()
    times = []
    for _ in range(reps):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize(device)
            times.append(start.elapsed_time(end))
        else:
            t = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def _profile(title: str, fn, device: torch.device) -> str:
    """The 12 longest device kernels (or CPU ops, without a GPU) of 5 calls of fn, by total time."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        for _ in range(5):
            fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    key = "self_cuda_time_total" if device.type == "cuda" else "self_cpu_time_total"
    return (f"--- profile: {title}, 5 steps\n"
            + prof.key_averages().table(sort_by=key, row_limit=12, max_name_column_width=60))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--batch", type=int, default=2048)
    p.add_argument("--seeds", type=int, default=8)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--profile", action="store_true", help="also profile the device kernels of lsa-5 and softmax-2")
    args = p.parse_args()
    device = torch.device(args.device)
    worst = 0.0
    profiles: list[str] = []
    print(f"device {torch.cuda.get_device_name(device) if device.type == 'cuda' else device}, batch {args.batch}, "
          f"{args.seeds} seeds, float32")
    print(f"{'model':<16} {'loss diff':>10} {'grad diff':>10} {'Triton ms':>10} {'PyTorch ms':>11} {'speed-up':>9}")
    for name, (base, over) in CASES.items():
        cfg = load_config(base, over + [f"seeds={list(range(args.seeds))}", "task.dx=10", "task.n_context=10",
                                        f"batch_size={args.batch}", "dtype=float32"])
        gen = torch.Generator().manual_seed(0)  # weights moved off their small initial values: updates that matter
        params = {k: (v + 0.2 * torch.randn(v.shape, generator=gen)).to(device) for k, v in init_params(cfg).items()}
        names = trainable_names(cfg)
        for k in names:
            params[k].requires_grad_(True)
        batch = tuple(t.to(device) for t in TaskStream(cfg, "cpu").next())
        results = {}
        for which in ("fused-triton", "fused"):
            loss_fn = backend(cfg, which, device).loss_fn

            def step(loss_fn=loss_fn):
                losses = loss_fn(params, *batch)
                return losses, torch.autograd.grad(losses.sum(), [params[k] for k in names])

            results[which] = (step(), _timed(step, device, args.reps))
            if args.profile and name in ("lsa-5", "softmax-2"):
                profiles.append(_profile(f"{name}, {which}", step, device))
        (lt, gt), ms_t = results["fused-triton"]
        (lp, gp), ms_p = results["fused"]
        loss_diff = ((lt - lp).abs() / lp.abs().clamp_min(1e-12)).max().item()
        grad_diff = max(((a - b).abs().max() / b.abs().max().clamp_min(1e-12)).item() for a, b in zip(gt, gp))
        worst = max(worst, loss_diff, grad_diff)
        print(f"{name:<16} {loss_diff:>10.1e} {grad_diff:>10.1e} {ms_t:>10.3f} {ms_p:>11.3f} {ms_p / ms_t:>8.2f}x")
    print(f"largest relative difference {worst:.1e} (bar 1e-4)")
    print("\n".join(profiles))
    return 0 if worst <= 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
