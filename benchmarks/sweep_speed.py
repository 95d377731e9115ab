"""A sweep on Ray against the same trials one after another, and Ray's own overhead.

    python benchmarks/sweep_speed.py [--steps 5000] [--workers 2] [--json]

The sweep: 12 trials of the 1-layer LSA preset (lsa-1: batch 2048, Adam), optim.lr in 1e-3, 2e-3, 3e-3,
5e-3 x task.n_context in 5, 10, 20, 2 seeds each, `--steps` steps. Timed as whole commands, each into a
fresh directory:
  serial:  `icgd sweep ... --workers 1`  (the trials one after another in one process, no Ray)
  ray:     `icgd sweep ... --workers N`  (N trials at a time as Ray tasks, cores / N threads each)
Ray's overhead: the seconds from `Pool.__enter__` to the first result of an empty task (runtime start,
worker start), and `Pool.__exit__` (shutdown), in a fresh process. Run it with nothing else on the machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

VALUES = ["optim.lr=1e-3,2e-3,3e-3,5e-3", "task.n_context=5,10,20"]

_OVERHEAD = """
import json, time
t0 = time.perf_counter()
from icgd.scale.distributed import Pool
t1 = time.perf_counter()
with Pool(workers={workers}) as pool:
    t2 = time.perf_counter()
    pool.submit(0, sorted, [])
    next(pool.as_completed())
    t3 = time.perf_counter()
t4 = time.perf_counter()
print(json.dumps({{"import_s": t1 - t0, "start_s": t2 - t1, "first_task_s": t3 - t2, "shutdown_s": t4 - t3}}))
"""


def _timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    overhead = json.loads(subprocess.run([sys.executable, "-c", _OVERHEAD.format(workers=args.workers)],
                                         check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
    out: dict = {"trials": 12, "seeds": 2, "steps": args.steps, "workers": args.workers,
                 "ray_overhead_s": {k: round(v, 2) for k, v in overhead.items()}}
    with tempfile.TemporaryDirectory() as tmp:
        base = [sys.executable, "-m", "icgd.cli", "sweep", "lsa-1", *VALUES, f"steps={args.steps}", "--seeds", "2",
                "--quiet"]
        out["serial_s"] = round(_timed(base + ["--workers", "1", "--out", str(Path(tmp) / "serial")]), 1)
        out["ray_s"] = round(_timed(base + ["--workers", str(args.workers), "--out", str(Path(tmp) / "ray")]), 1)
    out["speedup"] = round(out["serial_s"] / out["ray_s"], 2)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        o = out["ray_overhead_s"]
        print(f"12 trials x 2 seeds x {args.steps} steps (lsa-1): one after another {out['serial_s']} s, "
              f"Ray with {args.workers} workers {out['ray_s']} s ({out['speedup']}x)")
        print(f"Ray overhead: import {o['import_s']} s, runtime start {o['start_s']} s, first task "
              f"{o['first_task_s']} s, shutdown {o['shutdown_s']} s")


if __name__ == "__main__":
    main()
