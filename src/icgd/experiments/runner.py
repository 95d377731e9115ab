"""Every source's experiments (`icgd.experiments.catalog` loads the sources) and how one is run into a directory."""

from __future__ import annotations

import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import torch

from icgd.core.io import write_json, write_text
from icgd.core.profiling import status_line
from icgd.core.version import code_commit
from icgd.experiments.catalog import load_sources
from icgd.experiments.registry import (
    REGISTRY,
    Experiment,
    ExperimentContext,
    Mode,
    NotStored,
    mode_of,
)
from icgd.results.tables import ExperimentResults


def experiments() -> dict[str, Experiment]:
    """Every registered experiment by name (the sources loaded first)."""
    load_sources()
    return dict(REGISTRY)


def get_experiment(name: str) -> Experiment:
    load_sources()
    if name not in REGISTRY:
        raise ValueError(f"unknown experiment {name!r}; `icgd list` shows them: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name]


def run_experiment(name: str, out: str | Path, cache: str | Path | None = None, quick: bool = False,
                   seeds: list[int] | None = None, device: str = "cpu", quiet: bool = True,
                   smoke: bool = False, options: dict[str, Any] | None = None,
                   trained_on: str | None = None, store: Any = "default",
                   store_only: bool = False) -> ExperimentResults:
    """Run experiment `name` into `out`; returns its results (also in out/results.json), a dict with frame
    accessors (`ExperimentResults`: `.frame()`, `.tables()`).

    quick: shorter training and fewer tasks; smoke: a handful of steps and tasks (checks the pipeline only).
    seeds: default the study's (`icgd.core.seeds`), or the experiment's own when it needs more. options: the
    experiment's own options (e.g. {"model": ...} for source 003's), ignored by the others. trained_on: a
    device type whose finished models in `cache` are used before any is trained on `device` ("cuda": models
    trained on a GPU machine, evaluated here); results.json's "trained_on" then says which trained each.
    store_only: train nothing; an experiment with a declared model that neither the store nor the cache
    holds raises `NotStored` (naming them all) before it writes anything, and one that would train an
    undeclared model raises it then."""
    exp = get_experiment(name)
    mode = mode_of(quick, smoke)
    out = Path(out)
    if store == "default":
        from icgd.train.store import default_store

        store = default_store()
    cache = Path(cache) if cache else out.parent / "_train"
    if store_only:
        check_store_only(mode, store)
        lacking = not_stored(name, cache, mode, seeds, device, options, store)
        if lacking:
            raise NotStored(lacking)
    ctx = ExperimentContext(out, cache, mode, exp.seeds(mode, seeds), device, quiet, dict(options or {}),
                            trained_on=trained_on, store=store, train_allowed=not store_only)
    if exp.models is not None:
        ctx.declared, ctx.undeclared_ok = exp.models(ctx), bool(exp.retrains)
    t0, started = time.perf_counter(), utc_now()
    # the commit is asked now and kept for the process (code_commit caches it): the code this run loaded, not
    # what the checkout holds when a run of hours ends (a study that trains nothing asked only at its end)
    code_commit()
    torch.set_grad_enabled(True)
    with nullcontext() if quiet else status_line(exp.name):  # a line every 15 s outside training
        exp.fn(ctx)
    seconds = time.perf_counter() - t0
    ctx.results["seconds"] = round(seconds, 1)
    ctx.results["deviations"] = list(exp.deviations)
    ctx.results["provenance"] = provenance(exp.name, mode, ctx.seeds, device, started)
    write_json(out / "results.json", ctx.results)
    prov = ctx.results["provenance"]
    header = [f"# {exp.name}: {exp.description}", "", f"Source: {exp.source}. Mode: {mode}; "
              f"seeds {ctx.seeds}; {seconds:.0f} s; icgd {prov['icgd']} at {prov['commit']}, {prov['device']}.", "",
              "| the paper | measured here |", "|---|---|"]
    footer = ["", "## Deviations from the authors' set-up", ""] + [f"- {d}" for d in exp.deviations] \
        if exp.deviations else []
    notes = [line for text in ctx.notes for line in ("", text)]
    write_text(out / "report.md", "\n".join(header + ctx.report_lines + notes + footer) + "\n")
    return ExperimentResults(ctx.results, out)


def utc_now() -> str:
    """Now, in UTC, to the second (ISO 8601): the start and end times of results.json and of verify's report."""
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def provenance(name: str, mode: Mode, seeds: list[int], device: str, started: str) -> dict[str, Any]:
    """What a results.json needs to be cited: the experiment, mode, seeds, the code (icgd version and git
    commit, '+dirty' with uncommitted changes), torch, the device, the command as typed and the start and end
    times (UTC). The models' fingerprints and origins are beside it, in "models"."""
    import shlex
    import sys

    from icgd.core.version import __version__

    return {"experiment": name, "mode": mode, "seeds": list(seeds), "icgd": __version__, "commit": code_commit(),
            "torch": torch.__version__, "device": device,
            "command": " ".join(shlex.quote(a) for a in [Path(sys.argv[0]).name, *sys.argv[1:]]),
            "started": started, "finished": utc_now()}


def check_store_only(mode: Mode, store: Any) -> None:
    """Refuse `--store-only` where it cannot mean anything: the store holds full-mode models only, and
    without a store (`--retrain`, or an install with none) there is nothing to read. Raises ValueError."""
    if mode != "full":
        raise ValueError("--store-only reads the model store, which holds the full-mode models: not with --quick "
                         "or --smoke")
    if store is None:
        raise ValueError("--store-only reads the model store: not with --retrain, and not without a store "
                         "(a clone's zoo/, or $ICGD_STORE)")


def not_stored(name: str, cache: str | Path, mode: Mode = "full", seeds: list[int] | None = None,
               device: str = "cpu", options: dict[str, Any] | None = None, store: Any = None) -> list[str]:
    """The labels of the models experiment `name` declares that neither `store` nor the model cache `cache`
    holds finished: what it would train. Empty for an experiment that declares none (it loads a pretrained
    model)."""
    from icgd.train.store import would_train

    exp = get_experiment(name)
    if exp.models is None:
        return []
    ctx = ExperimentContext(Path("plan"), Path(cache), mode, exp.seeds(mode, seeds), device, True,
                            dict(options or {}), create=False)
    return [label for label, config in exp.models(ctx).items()
            if would_train(ctx.run_dir(label, config), label, config, store)]


def plan_experiment(name: str, mode: Mode = "full", seeds: list[int] | None = None, device: str = "cpu",
                    options: dict[str, Any] | None = None) -> dict[str, Any]:
    """What `run_experiment` would train, without training anything or writing a file (`icgd reproduce EXP
    --plan`): {"experiment", "mode", "seeds", "models": [{"name", "config"}]}, each config the model's full
    resolved training config (the task included), as `icgd train` accepts it. "models" is None for an
    experiment that declares none (it trains nothing, or only what it decides while it runs: "note" says)."""
    if mode == "smoke":
        raise ValueError("--plan shows the quick or the full set-up; smoke mode's numbers mean nothing")
    exp = get_experiment(name)
    ctx = ExperimentContext(Path("plan"), Path("plan"), mode, exp.seeds(mode, seeds), device, True,
                            dict(options or {}), create=False)
    plan: dict[str, Any] = {"experiment": exp.name, "mode": mode, "seeds": ctx.seeds, "source": exp.source,
                            "deviations": list(exp.deviations)}
    if exp.models is None:
        return plan | {"models": None, "note": "this experiment declares no models ahead: it trains none (it loads a "
                                                "pretrained model), or decides what to train while it runs"}
    plan["models"] = [{"name": label, "config": config.model_dump(mode="json")}
                      for label, config in exp.models(ctx).items()]
    if exp.retrains:
        plan["note"] = f"while it runs it may also train: {exp.retrains}"
    return plan
