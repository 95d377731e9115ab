"""Train the declared full-mode models of experiments within a time budget, on a GPU machine or any other:

    python benchmarks/train_declared.py oswald-depth --device cuda --cache DIR --budget 450 --workers 3 \\
        [--match REGEX] [--exclude REGEX] [--threads 1] [--json FILE] [--retrain] [--check]

The models not yet finished in DIR and not held by the model store (`icgd.experiments.parallel.planned`:
costliest first; `--retrain` ignores the store, as in full mode) train `--workers` at a time, each in its own
process with `--threads` torch threads. At `--budget` seconds every worker still training is sent SIGTERM:
the engine saves a checkpoint first, so the run resumes where it stopped (on the same device type: a run is
cached under its device's fingerprint). Then, on the machine that has the cache:

    icgd reproduce oswald-depth --cache DIR --trained-on cuda

uses the models that finished on the GPU and trains (or resumes) the others on --device; results.json's
`trained_on` says which device trained each. Prints, and writes to --json, one record per model: label,
status (completed, interrupted, failed, not started), steps reached of total, seconds, seed-steps per second
and the training path (backend, CUDA graph or eager step) from the run's summary.json.

Why a script of its own and not `icgd verify --workers`: that trains every model to the end before the
experiment runs; a GPU machine may be had for minutes (docs/reproduce.md), so this one stops on time and keeps what it
trained.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import re
import sys
import time
from pathlib import Path
from typing import Any


def _worker(job: Any, device: str, threads: int) -> None:
    from icgd.experiments.parallel import _init_worker, _train_job

    _init_worker(threads)  # what `icgd verify --workers` gives each worker process
    rec = _train_job(job, device)
    if rec["status"] == "failed" and "interrupted" not in rec.get("error", ""):
        print(f"{job.label}: {rec['error']}", file=sys.stderr, flush=True)


def _record(job: Any, state: str, seconds: float | None) -> dict[str, Any]:
    summary = job.run / "summary.json"
    s = json.loads(summary.read_text()) if summary.is_file() else {}
    return {"model": job.label, "run": job.run.name,
            "status": s.get("status", state) if state != "not started" else state,
            "steps": s.get("steps", 0), "total_steps": job.config.steps, "seconds": seconds,
            "seed_steps_per_s": s.get("seed_steps_per_s"), "backend": s.get("backend"),
            "step_path": s.get("step_path"), "device": s.get("device")}


def _experiment(name: str) -> str:
    from icgd.experiments.runner import get_experiment

    try:
        get_experiment(name)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return name


def _not_ahead(name: str) -> str:
    """Why the models of experiment `name` cannot be trained ahead of it ("": they can)."""
    from icgd.experiments.runner import get_experiment

    exp = get_experiment(name)
    if exp.trains_ahead:
        return ""
    if exp.models is None:
        return "declares no models (it loads a pretrained model, or none)"
    return (f"trains its models inside the experiment (it measures them while they train): "
            f"run `bash tools/fill_store.sh {name}` without WORKERS, or `icgd reproduce {name}`")


def _regex(text: str) -> str:
    try:
        re.compile(text)
    except re.error as err:
        raise argparse.ArgumentTypeError(f"{text!r} is not a regular expression: {err}") from None
    return text


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line (argparse prints its usage too), exit code 2
        self.exit(2, f"{self.prog}: {message}\n")


def main(argv: list[str] | None = None) -> int:
    from icgd.cli.args import count, device, out_dir, out_file

    # every argument is checked here, before a worker starts: a bad one is one line and exit code 2
    p = _Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("experiments", nargs="+", type=_experiment)
    p.add_argument("--device", default="cuda", type=device)
    p.add_argument("--cache", required=True, type=out_dir)
    p.add_argument("--budget", type=_seconds, required=True, help="seconds until every worker is stopped")
    p.add_argument("--workers", type=count, default=1)
    p.add_argument("--threads", type=count, default=1)
    p.add_argument("--match", default="", type=_regex, help="train only the models whose label matches this regex")
    p.add_argument("--exclude", default=None, type=_regex, help="leave out the models whose label matches this regex")
    p.add_argument("--json", type=out_file, default=None)
    p.add_argument("--retrain", action="store_true", help="train the models the model store holds too")
    p.add_argument("--check", action="store_true", help="check the arguments only (exit code 2 on a bad one)")
    args = p.parse_args(argv)
    # an experiment whose models this script cannot train ahead says why, instead of "0 models to train";
    # when none of those named can, that is a usage error
    why = {name: reason for name in args.experiments if (reason := _not_ahead(name))}
    if len(why) == len(args.experiments):
        p.error("; ".join(f"{name} {reason}" for name, reason in why.items()))
    for name, reason in why.items():
        print(f"{p.prog}: left out: {name} {reason}", file=sys.stderr, flush=True)
    if args.check:
        return 0
    args.cache, args.json = Path(args.cache), args.json and Path(args.json)
    from icgd.experiments.parallel import planned
    from icgd.train.store import default_store

    t0 = time.monotonic()
    jobs = [j for j in planned(args.experiments, args.cache.parent / "plan", args.cache, "full", None, args.device,
                                store=None if args.retrain else default_store())
            if re.search(args.match, j.label) and not (args.exclude and re.search(args.exclude, j.label))]
    print(f"{len(jobs)} models to train on {args.device}, {args.workers} at a time, budget {args.budget:.0f} s: "
          + ", ".join(j.label for j in jobs), flush=True)
    spawn = multiprocessing.get_context("spawn")  # no fork after torch's thread pools have started
    waiting, running, done = list(jobs), {}, []
    while (waiting or running) and time.monotonic() - t0 < args.budget:
        while waiting and len(running) < args.workers:
            job = waiting.pop(0)
            proc = spawn.Process(target=_worker, args=(job, args.device, args.threads))
            proc.start()
            running[job.label] = (job, proc, time.monotonic())
        time.sleep(1.0)
        for label, (job, proc, start) in list(running.items()):
            if not proc.is_alive():
                del running[label]
                done.append(_record(job, "failed", round(time.monotonic() - start, 1)))
                print(f"[{time.monotonic() - t0:6.0f} s] {json.dumps(done[-1])}", flush=True)
    for _, proc, _ in running.values():
        proc.terminate()  # SIGTERM: the engine checkpoints, then stops
    for job, proc, start in running.values():
        proc.join(60)
        done.append(_record(job, "interrupted", round(time.monotonic() - start, 1)))
        print(f"[{time.monotonic() - t0:6.0f} s] stopped: {json.dumps(done[-1])}", flush=True)
    done += [_record(job, "not started", None) for job in waiting]
    if args.json:
        args.json.write_text(json.dumps({"device": args.device, "budget_s": args.budget, "workers": args.workers,
                                         "threads": args.threads, "seconds": round(time.monotonic() - t0, 1),
                                         "models": done}, indent=1))
    print(f"{sum(r['status'] == 'completed' for r in done)} of {len(done)} completed in "
          f"{time.monotonic() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
