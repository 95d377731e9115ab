"""Training a suite's models side by side before its experiments run (`icgd verify SUITE --workers N`).

Experiments declare the models they train (`register(models=...)`). With N workers, `verify` first trains
every declared model that is not cached yet, N at a time as Ray jobs (`icgd.scale.distributed`: a local runtime,
or a cluster with `--address`) or, without Ray installed, in a local process pool, with cores / N torch
threads each, longest first; the experiments then run one after another as before and load those models from the
cache. Each model trains into the same run directory, with the same config and seeds, as a serial run, on
fewer threads: a stack's weights are bit-for-bit a serial run's (tested), but torch kernels that split their
sums over the threads can change a model's last bits (the causal LM on bursty sequences; measured on a whole
suite in docs/concepts/experiments.md: the same verdicts, numbers equal to about 1e-7 but for items at a
decision boundary). It pays where one training's small per-task products scale poorly over threads
and hurts where they scale well: on the 2-core machine two 1-thread trainings side by side did 1.37x the
work of one 2-thread training for a 2-layer LSA and 0.78x for the 5-layer one
(`benchmarks/side_by_side.py`, README). A model whose training fails is reported, and trained again by
its experiment, which then raises the error as a serial run would.
"""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from icgd.experiments.registry import ExperimentContext, Mode
from icgd.train.config import TrainConfig
from icgd.train.runs import completed, finished, run_lock, train_into
from icgd.train.store import would_train


@dataclass(frozen=True)
class Job:
    """One declared model: its label, its cache directory and its config."""

    label: str
    run: Path
    config: TrainConfig


def planned(experiments: list[str], out: Path, cache: Path, mode: Mode, seeds: list[int] | None,
            device: str = "cpu", options: dict[str, Any] | None = None, store: Any = None) -> list[Job]:
    """The declared models of `experiments` not yet trained in `cache` (each once, however many
    experiments share it), costliest first (`cost`); a model the `store` holds is not planned (its
    experiment takes it from the store), and without a store (`--retrain`) a store copy in the cache is
    trained again (`icgd.train.store.usable`); a model the store parks unfinished is copied into the cache to
    resume from its step (`ModelStore.restore_parked`)."""
    from icgd.experiments.runner import get_experiment

    jobs: dict[Path, Job] = {}
    for name in experiments:
        exp = get_experiment(name)
        if not exp.trains_ahead:
            continue
        ctx = ExperimentContext(out / name, cache, mode, exp.seeds(mode, seeds), device, True, dict(options or {}))
        for label, config in exp.models(ctx).items():
            run = ctx.run_dir(label, config)
            if would_train(run, label, config, store):
                jobs.setdefault(run, Job(label, run, config))
                if store is not None:  # a training the store parks resumes from its step
                    store.restore_parked(label, config, run)
    return sorted(jobs.values(), key=lambda j: -cost(j.config))


def cost(config: TrainConfig) -> float:
    """A rough relative cost of training `config` (only to start the longest trainings first):
    steps x seeds x batch x layers x heads, x3 with MLPs (measured rates, README "Speed")."""
    m = config.model
    layers = getattr(m, "n_layers", 1)
    attention = getattr(m, "attention", None)
    heads = getattr(attention, "n_heads", 1) if attention is not None else 1
    mlp = 3.0 if getattr(m, "mlp", False) else 1.0
    return float(config.steps * len(config.seeds) * config.batch_size * layers * heads * mlp)


def _init_worker(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


def _train_job(job: Job, device: str) -> dict[str, Any]:
    """Train (or resume) one job in a worker process: {"model", "seconds", "status", "error"?}."""
    t0 = time.perf_counter()
    try:
        with run_lock(job.run):  # an experiment or another sweep sharing the cache may be training it
            if finished(job.run):  # finished, or a divergence it records (the experiment reads it)
                return {"model": job.label, "seconds": round(time.perf_counter() - t0, 1),
                        "status": "completed" if completed(job.run) else "diverged"}
            res = train_into(job.run, job.config, device, quiet=True)
        status = res.summary.get("status", "completed")
        return {"model": job.label, "seconds": round(time.perf_counter() - t0, 1), "status": status}
    except Exception as err:  # reported; the experiment trains it again and raises as a serial run would
        return {"model": job.label, "seconds": round(time.perf_counter() - t0, 1), "status": "failed",
                "error": f"{type(err).__name__}: {err}"}


def train_side_by_side(jobs: list[Job], workers: int, device: str = "cpu", quiet: bool = False,
                       threads: int | None = None, address: str | None = None,
                       engine: str | None = None) -> list[dict[str, Any]]:
    """Train `jobs` `workers` at a time with `threads` torch threads each (default: the cores this process
    may use / workers, at least 1); returns one record per job, in the order they finished. engine "ray":
    as Ray jobs (`icgd.scale.distributed`; a local runtime, or the cluster at `address`); "process": a local
    process pool; None: Ray when it is installed or an address is given, else processes. Ctrl-C stops the
    workers; what they trained is checkpointed and resumes on the next run."""
    from icgd.scale import distributed

    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if not jobs:
        return []
    if engine is None:
        engine = "ray" if address is not None or distributed.available() else "process"
    if engine not in ("ray", "process"):
        raise ValueError(f"engine must be 'ray' or 'process', got {engine!r}")
    if engine == "process" and address is not None:
        raise ValueError("a cluster address needs the Ray engine")
    if threads is None:
        threads = max(1, distributed.cores() // workers) if address is None else 1
    records: list[dict[str, Any]] = []

    def say(msg: str) -> None:
        distributed.say(msg, quiet)

    where = f"Ray cluster {address}" if address else f"{workers} {'Ray ' if engine == 'ray' else ''}workers"
    say(f"training {len(jobs)} models side by side: {where} x {threads} threads")

    def report(job: Job, rec: dict[str, Any]) -> None:
        records.append(rec)
        extra = f": {rec['error']}" if "error" in rec else ""
        say(f"  [{len(records)}/{len(jobs)}] {job.label}: {rec['status']} in {rec['seconds']:.0f} s{extra}")

    if engine == "ray":
        t0: dict[str, float] = {}
        with distributed.Pool(workers, threads, address, gpus=1.0 if device.startswith("cuda") else 0.0) as pool:
            for job in jobs:
                t0[job.label] = time.perf_counter()
                pool.submit(job, _train_job, job, device)
            for o in pool.as_completed():
                report(o.key, o.value if o.error is None else {
                    "model": o.key.label, "seconds": round(time.perf_counter() - t0[o.key.label], 1),
                    "status": "failed", "error": o.error})
        return records
    spawn = multiprocessing.get_context("spawn")  # no fork after torch's thread pools have started
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=spawn, initializer=_init_worker,
                             initargs=(threads,)) as pool:
        pending: dict[Future, Job] = {pool.submit(_train_job, job, device): job for job in jobs}
        try:
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    job = pending.pop(fut)
                    report(job, fut.result())
        except KeyboardInterrupt:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    return records
