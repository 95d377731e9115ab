"""Checking a suite: run the experiments its claims need and check each claim (`icgd verify SUITE`)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from icgd.claims.base import SUITES
from icgd.core.profiling import Profile, section, summarize
from icgd.core.version import code_commit
from icgd.experiments.catalog import load_sources
from icgd.experiments.registry import NotStored, mode_of
from icgd.experiments.runner import check_store_only, get_experiment, run_experiment, utc_now
from icgd.results.tables import VerifyReport


def suite_names() -> list[str]:
    """Every suite of every source, in the sources' order (`icgd.sources.SOURCES`), templates last."""
    sources = load_sources().values()
    return [s for src in sorted(sources, key=lambda src: src.template) for s in src.suites]


def verify(name: str, out: str | Path, quick: bool = False, seeds: list[int] | None = None, device: str = "cpu",
           quiet: bool = True, cache: str | Path | None = None, smoke: bool = False,
           options: dict[str, Any] | None = None, workers: int = 1, address: str | None = None,
           retrain: bool = False, store_only: bool = False) -> VerifyReport:
    """Run every experiment the suite needs (reusing cached models) and check its claims.

    cache: where trained models are cached (default out/_train). smoke: a handful of steps and tasks, to
    check that every claim gets its number (the numbers mean nothing). Returns {"suite", "quick", "mode",
    "seconds", "claims": [{"id", "claim", "source", "measured", "threshold", "passed", ...}], "profile"}; the
    profile is where the seconds went (`icgd.core.profiling.summarize`, and its "rows" per section and model);
    "env" the versions, device, threads and start and end times (UTC). The dict is a `VerifyReport`:
    `.claims_frame()` gives the claims as a pandas DataFrame.
    workers > 1 (or a Ray cluster `address`): first train the models the experiments declare, that many side by
    side (`icgd.experiments.parallel`: on Ray when it is installed; the same weights as a serial run); the
    profile's "side_by_side" lists them. Every model the repository's store (`icgd.train.store`, zoo/) holds
    with the plan's config is taken from it, checked, instead of trained; `retrain` ignores the store. The
    report's "models" lists each model used: its name, config fingerprint, where it came from ("store",
    "trained", or "cache" where an earlier run in `cache` trained it), the commit that trained it and the
    devices.
    store_only: full mode with the stored models only, training nothing: an experiment with a model that
    neither the store nor `cache` holds is not run, its claims are "untested" (the note names the models),
    and the report's "not_run" lists it with the models and the estimated minutes to train them."""
    load_sources()
    claims = SUITES.lookup(name)()
    mode = mode_of(quick, smoke)
    experiments = list(dict.fromkeys(c.experiment for c in claims))
    for exp in experiments:  # refuse bad seeds before anything is trained
        get_experiment(exp).seeds(mode, seeds)
    from icgd.train.store import default_store

    store = None if retrain else default_store()
    if store_only:  # refused before anything is written
        check_store_only(mode, store)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)  # where claims.json goes, even when no experiment runs (--store-only)
    t0 = time.perf_counter()
    started = utc_now()
    code_commit()  # the code this run loaded, asked at its start and kept (see run_experiment)
    results: dict[str, Any] = {}
    cache = Path(cache) if cache else out / "_train"
    prof = Profile()
    side: dict[str, Any] | None = None
    not_run: dict[str, list[str]] = {}
    with prof.active():
        if (workers > 1 or address is not None) and not store_only:
            from icgd.experiments.parallel import planned, train_side_by_side

            prof.experiment = "(side by side)"
            with section("train steps", f"{workers} workers" if address is None else f"Ray cluster {address}"):
                jobs = planned(experiments, out, cache, mode, seeds, device, options, store)
                t1 = time.perf_counter()
                records = train_side_by_side(jobs, workers, device, quiet=quiet, address=address)
                side = {"workers": workers, "address": address, "seconds": round(time.perf_counter() - t1, 1),
                        "models": records}
        for exp in experiments:
            prof.experiment = exp
            with section("analysis (rest)"):
                try:
                    results[exp] = run_experiment(exp, out / exp, cache, quick=quick, seeds=seeds, device=device,
                                                  quiet=quiet, smoke=smoke, options=options, store=store,
                                                  store_only=store_only)
                except NotStored as e:
                    not_run[exp] = e.labels
        prof.experiment = "(claims)"
        with section("analysis (rest)"):
            checked = [c.not_run(_why_not_run(c.experiment, not_run[c.experiment])) if c.experiment in not_run
                       else c.check(results) for c in claims]
    rows = prof.rows()
    # the model a study of a pretrained LM ran with (source 003's experiments record it as "model")
    models = list(dict.fromkeys(str(r["model"]) for r in results.values() if isinstance(r, dict) and "model" in r))
    return VerifyReport({"suite": name, "quick": mode != "full", "mode": mode}
                        | ({"model": models[0] if len(models) == 1 else models} if models else {})
                        | {
                           "seconds": round(time.perf_counter() - t0, 1), "claims": checked,
                           "models": _models_used(results),
                           "references": _models_used(results, "references"),
                           "not_run": [{"experiment": exp, "models": labels,
                                        "minutes": get_experiment(exp).full_minutes}
                                       for exp, labels in not_run.items()],
                           "profile": summarize(rows) | {"rows": rows} | ({"side_by_side": side} if side is not None else {}),
                           "env": environment(device) | {"started": started, "finished": utc_now()}}, out)


def _why_not_run(experiment: str, labels: list[str]) -> str:
    """The note of a claim whose experiment `--store-only` did not run."""
    minutes = get_experiment(experiment).full_minutes
    return (f"{experiment} was not run (--store-only): the model store lacks {', '.join(labels)} (the "
            f"experiment's models take about {minutes:g} min on 2 CPU cores: `icgd reproduce {experiment}`)")


def _models_used(results: dict[str, Any], kind: str = "models") -> list[dict[str, Any]]:
    """Every model (`kind` "models") or fitted reference ("references") the suite's experiments used, once (by
    name and fingerprint), with where it came from."""
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for r in results.values():
        for m in (r.get(kind) or {}).values() if isinstance(r, dict) else ():
            seen.setdefault((m["name"], m["fingerprint"]), m)
    return list(seen.values())


def environment(device: str) -> dict[str, Any]:
    """The versions, machine and device a suite ran with (what `icgd report` shows beside the claims)."""
    import platform
    import sys

    import numpy
    import torch

    from icgd.core.version import __version__

    return {"icgd": __version__, "commit": code_commit(), "torch": torch.__version__, "numpy": numpy.__version__,
            "python": platform.python_version(), "platform": platform.platform(), "device": device,
            "cuda": torch.cuda.get_device_name(device) if device.startswith("cuda") else None,
            "threads": torch.get_num_threads(), "command": " ".join(sys.argv)}
