"""Experiments: a name, a description, a function of an `ExperimentContext`; registered by name (the
sources' modules register theirs; `icgd.experiments.runner` imports them all and runs one).

An experiment writes into its run directory: tables (CSV), figures (PNG and SVG), `results.json` (the
measured numbers that claims read) and `report.md` (each measured number beside the paper's statement).
Trained models are cached (keyed by their full config) and resumed when a run was cut short.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

from icgd.core.io import atomic_path, write_json
from icgd.core.profiling import section
from icgd.core.registry import Registry
from icgd.core.seeds import check_seeds, study_seeds
from icgd.train.config import TrainConfig, config_fingerprint
from icgd.train.engine import TrainingDiverged, TrainResult, trained_on
from icgd.train.runs import completed, finished, load_run, recorded_divergence, run_lock, train_into


@dataclass(frozen=True)
class DocTable:
    """A table an experiment writes (`ExperimentContext.table(name, ...)`) that the generated scoreboard page of
    its suite shows, so that a source page links to it instead of typing its numbers (`icgd scoreboard`)."""

    name: str
    #: what the table shows, in a sentence or two (the page's header gives the run's mode, commit and date)
    caption: str
    #: the columns shown, in this order (empty: every column the table has)
    columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class Experiment:
    name: str
    description: str
    source: str
    quick_minutes: float
    full_minutes: float
    fn: Callable[["ExperimentContext"], None]
    #: seeds the experiment needs at least, by mode (None: the study defaults of `icgd.core.seeds`); without
    #: --seeds it runs with this many, and it refuses fewer
    n_seeds: dict[str, int] | None = None
    #: the models it trains, {label: config} for a context (None: not declared): what `icgd verify
    #: --workers` trains side by side before the experiments run; `ExperimentContext.train` refuses a
    #: model that is not declared, so the declaration cannot drift from what the experiment trains
    models: Callable[["ExperimentContext"], dict[str, TrainConfig]] | None = None
    #: whether `icgd verify --workers` may train the declared models ahead (False for an experiment that measures
    #: its models during training, `ExperimentContext.train_tracked`: it must train them itself)
    pretrain: bool = True
    #: every remaining difference from the authors' set-up, each with its reason (results.json "deviations",
    #: report.md, `icgd reproduce --plan`)
    deviations: tuple[str, ...] = ()
    #: what it may train beyond its declared models, decided while it runs, in words ("": nothing), e.g. the
    #: seeds that did not diverge, trained again without those that did. `ExperimentContext.train` then takes
    #: an undeclared model too (a declared one must still have its declared config); `--plan` says so
    retrains: str = ""
    #: the tables of this experiment that its suite's scoreboard page shows (`DocTable`)
    doc_tables: tuple[DocTable, ...] = ()

    @property
    def trains_ahead(self) -> bool:
        """Whether its declared models can be trained before it runs (`icgd verify --workers`,
        benchmarks/train_declared.py): it declares some, and does not measure them while they train."""
        return self.models is not None and self.pretrain

    def seeds(self, mode: Mode, seeds: list[int] | None = None) -> list[int]:
        """The seeds this experiment runs with: `seeds` (checked) or its default for `mode`."""
        need = None if self.n_seeds is None else self.n_seeds[mode]
        if seeds is None:
            return study_seeds(mode, need)
        seeds = check_seeds(seeds)
        if need is not None and len(seeds) < need:
            raise ValueError(f"experiment {self.name} needs at least {need} seeds in {mode} mode, got {len(seeds)} "
                             f"({seeds}): pass --seeds {need} or more, or leave --seeds out")
        return seeds


Mode = Literal["smoke", "quick", "full"]
#: every registered experiment by name (filled as the sources are loaded: `icgd.experiments.catalog`)
REGISTRY: Registry[Experiment] = Registry("experiment")


def register(name: str, description: str, source: str, quick_minutes: float, full_minutes: float,
             n_seeds: dict[str, int] | None = None,
             models: Callable[["ExperimentContext"], dict[str, TrainConfig]] | None = None, pretrain: bool = True,
             deviations: tuple[str, ...] = (), retrains: str = "", doc_tables: tuple[DocTable, ...] = ()):
    """Decorator registering `fn(ctx)` as experiment `name` (n_seeds, models, pretrain, deviations, retrains,
    doc_tables: see `Experiment`)."""
    def deco(fn: Callable[["ExperimentContext"], None]) -> Callable[["ExperimentContext"], None]:
        REGISTRY.add(name, Experiment(name, description, source, quick_minutes, full_minutes, fn, n_seeds, models,
                                    pretrain, tuple(deviations), retrains, tuple(doc_tables)))
        return fn
    return deco


@dataclass
class ExperimentContext:
    """Where an experiment writes, and the shared helpers it uses."""

    out: Path
    cache: Path
    mode: Mode = "full"
    seeds: list[int] = field(default_factory=lambda: study_seeds("quick"))
    device: str = "cpu"
    quiet: bool = True
    #: options of the experiments that have them (source 003: "model", the language model to load)
    options: dict[str, Any] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)
    report_lines: list[str] = field(default_factory=list)
    #: paragraphs of the report, written under its table (not inside it, where they would break the rows)
    notes: list[str] = field(default_factory=list)
    #: the experiment's declared models (`Experiment.models`), or None when it declares none
    declared: dict[str, TrainConfig] | None = None
    #: whether a model outside `declared` may train too (`Experiment.retrains`)
    undeclared_ok: bool = False
    #: make the output and cache directories (False: a context only to resolve configs, `icgd reproduce --plan`)
    create: bool = True
    #: a device type ("cuda") whose finished models in `cache` are used before training on `device`: train on a
    #: GPU machine, analyse elsewhere (`icgd reproduce --trained-on cuda`). Which device trained each model used
    #: goes into results.json ("trained_on").
    trained_on: str | None = None
    #: the model store read before anything is trained (`icgd.train.store.ModelStore`; None: none, as with
    #: `--retrain`): a model whose label and config it holds is copied into the cache, checked, instead of
    #: trained. Where each model came from goes into results.json ("models")
    store: Any = None
    #: whether a model the cache and the store lack may be trained (False: `--store-only`, where training one
    #: raises `NotStored` instead)
    train_allowed: bool = True

    @property
    def quick(self) -> bool:
        """Shortened run (quick or smoke mode)."""
        return self.mode != "full"

    def __post_init__(self) -> None:
        if self.mode not in ("smoke", "quick", "full"):
            raise ValueError(f"mode must be smoke, quick or full, got {self.mode!r}")
        if self.create:
            self.out.mkdir(parents=True, exist_ok=True)
            self.cache.mkdir(parents=True, exist_ok=True)

    # ----------------------------------------------------------------------------- trained models
    def train(self, label: str, config: TrainConfig) -> TrainResult:
        """Train (or reuse, or resume) `config`; cached under cache/<label>-<hash of the config>."""
        run = self._checked_run_dir(label, config)
        with run_lock(run):  # another process training it: wait, then load it
            origin, stored = self._from_store(label, config, run)
            diverged = recorded_divergence(run)
            if diverged is not None:  # it diverged before (the store's run, or this cache's): the same result
                self._note_diverged(label, config, run, origin, stored)
                raise diverged
            if completed(run):
                with section("load cached model", config.name):
                    result = load_run(run)
            else:
                with section("train steps", config.name):
                    try:
                        result = self._train_to(run, config)
                    except TrainingDiverged:
                        self._note_diverged(label, config, run, "trained", None)
                        raise
        self._note_trained_on(label, result.summary)
        self._note_origin(label, config, result.summary, origin, stored)
        return result

    def _note_diverged(self, label: str, config: TrainConfig, run: Path, origin: str, stored: Any) -> None:
        """results.json's "models" for a run that diverged: where it came from, with its status."""
        summary = json.loads((run / "summary.json").read_text())
        self._note_trained_on(label, summary)
        self._note_origin(label, config, summary, origin, stored)
        self.results["models"][label].setdefault("status", "diverged")

    def _from_store(self, label: str, config: TrainConfig, run: Path) -> tuple[str, Any]:
        """Copy the model from the store into `run` where the store holds it and the cache does not; returns
        where the model comes from ("store", "cache": trained into this cache earlier, or "trained") and the
        stored model (None unless from the store)."""
        from icgd.train.store import COPY_MARK, usable

        if usable(run, self.store):
            if not (run / COPY_MARK).is_file():
                return "cache", None
            return "store", self.store.find(label, config)
        stored = self.store.find(label, config) if self.store is not None else None
        if stored is None:
            if self.store is not None:  # a training parked in the store: it resumes from there
                with section("resume parked training", config.name):
                    self.store.restore_parked(label, config, run)
            return "trained", None
        with section("load stored model", config.name):
            self.store.materialize(stored, run)
        return "store", stored

    def _note_origin(self, label: str, config: TrainConfig, summary: dict[str, Any], origin: str,
                     stored: Any) -> None:
        """results.json's "models": where each model the experiment used came from, the commit that trained a
        stored one, and the devices that trained it."""
        from icgd.core.version import code_commit
        from icgd.train.store import store_key

        _, fp = store_key(label, config)
        # the commit that trained it: the store's record, this checkout's for a model trained now, unknown for
        # one found in the cache
        commit = stored.entry["commit"] if stored is not None else code_commit() if origin == "trained" else None
        # the first use tells: a model this experiment trained and then loads again was trained here
        self.results.setdefault("models", {}).setdefault(label, {"name": label, "fingerprint": fp, "from": origin,
                                                                 "commit": commit, "device": trained_on(summary)})

    def fitted(self, label: str, inputs: dict[str, Any], fit: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """A reference whose fit costs minutes, fitted once: `fit()` returns it as a JSON-able payload; `inputs`
        (JSON-able) is everything the fit reads, and keys it (`icgd.train.store.reference_key`). Taken from
        the store where it holds these inputs' reference (its hash checked), else from the model cache
        (`_references/` of a run into the same cache, or one fitted there with --retrain), else fitted now and
        written into the cache, where `icgd store add` can keep it. Where it came from goes into results.json's
        "references" (`from`: "store", "cache" or "fitted"; the commit and thread count that fitted it)."""
        import time

        import torch

        from icgd.core.version import code_commit
        from icgd.train.store import CACHE_REFERENCES, read_reference, reference_key

        key, fp = reference_key(label, inputs)
        ref = self.store.find_reference(key) if self.store is not None else None
        origin = "store"
        cached = self.cache / CACHE_REFERENCES / f"{key}.json"
        if ref is None and cached.is_file():
            ref, origin = read_reference(cached, key), "cache"
        if ref is None:
            t0 = time.perf_counter()
            payload = fit()
            ref = {"key": key, "name": label, "fingerprint": fp, "inputs": inputs, "payload": payload,
                   "commit": code_commit(), "seconds": round(time.perf_counter() - t0, 1),
                   "threads": torch.get_num_threads(), "torch": torch.__version__}
            if self.create:
                cached.parent.mkdir(parents=True, exist_ok=True)
                write_json(cached, ref)
            origin = "fitted"
        self.results.setdefault("references", {})[label] = {
            "name": label, "fingerprint": fp, "from": origin, "commit": ref["commit"], "threads": ref["threads"],
            "seconds": ref["seconds"]}
        return ref["payload"]

    def train_tracked(self, label: str, config: TrainConfig, every: int,
                      measure: Callable[[TrainResult], dict[str, float]]) -> tuple[TrainResult, list[dict[str, Any]]]:
        """Train `config` in segments of `every` steps and call `measure` on the weights at the start and
        after each segment: [{"step": k, **measure(result at step k)}, ...].

        The segments are checkpoint + exact resume, so the final weights are those of an uninterrupted run;
        the measurements are cached in the run directory (track.json) and the run resumes after a crash.
        """
        run = self._checked_run_dir(label, config)
        with run_lock(run):
            origin, stored = self._from_store(label, config, run)
            out = self._tracked(run, config, every, measure)
        self._note_trained_on(label, out[0].summary)
        self._note_origin(label, config, out[0].summary, origin, stored)
        return out

    def _note_trained_on(self, label: str, summary: dict[str, Any]) -> None:
        """With `trained_on`: record in results.json which device types trained the model `label` used, from
        its run's summary ("cuda", or "cuda+cpu" for a run stopped on a GPU and finished here)."""
        if self.trained_on is not None:
            self.results.setdefault("trained_on", {})[label] = trained_on(summary)

    def _tracked(self, run: Path, config: TrainConfig, every: int,
                 measure: Callable[[TrainResult], dict[str, float]]) -> tuple[TrainResult, list[dict[str, Any]]]:
        track_file = run / "track.json"
        track: list[dict[str, Any]] = json.loads(track_file.read_text()) if track_file.is_file() else []
        if not track or not (run / "config.yaml").is_file():
            from icgd.train.models import init_params

            track = [{"step": 0} | measure(TrainResult(run, {}, config, init_params(config)))]
        result: TrainResult | None = None
        step = track[-1]["step"]
        while step < config.steps:
            with section("train steps", config.name):
                result = self._train_to(run, config, stop_after=min(step + every, config.steps))
            step = result.summary["steps"]
            track.append({"step": step} | measure(result))
            write_json(track_file, track, indent=None)
        return (result if result is not None else load_run(run)), track

    def run_dir(self, label: str, config: TrainConfig) -> Path:
        """Where `train(label, config)` caches the model."""
        return self._run_dir(label, config)

    def _checked_run_dir(self, label: str, config: TrainConfig) -> Path:
        """`_run_dir`, refusing a model that the experiment does not declare with this config."""
        run = self._run_dir(label, config)
        if self.declared is not None and (label not in self.declared and not self.undeclared_ok
                                          or label in self.declared and self._run_dir(label, self.declared[label]) != run):
            raise RuntimeError(f"model {label!r} is not among the models the experiment declares "
                               f"({', '.join(self.declared) or 'none'}) with this config: declare it in register(models=...)")
        return run

    def _run_dir(self, label: str, config: TrainConfig) -> Path:
        if self.trained_on is not None:
            other = self.cache / f"{label}-{config_fingerprint(config, self.trained_on)}"
            if finished(other):
                return other
        return self._own_run_dir(label, config)

    def _own_run_dir(self, label: str, config: TrainConfig) -> Path:
        return self.cache / f"{label}-{config_fingerprint(config, self.device)}"

    def _train_to(self, run: Path, config: TrainConfig, stop_after: int | None = None) -> TrainResult:
        if not self.train_allowed:
            raise NotStored([run.name.rsplit("-", 1)[0]])
        return train_into(run, config, self.device, self.quiet, stop_after, self._bar_name(config))

    def _bar_name(self, config: TrainConfig) -> str:
        """The progress bar's name: "model i/n: NAME" among the models the experiment declares, else NAME."""
        names = [c.name for c in (self.declared or {}).values()]
        return f"model {names.index(config.name) + 1}/{len(names)}: {config.name}" if config.name in names \
            else config.name

    # ----------------------------------------------------------------------------------- outputs
    def table(self, name: str, rows: list[dict[str, Any]]) -> Path:
        """Write `rows` ({column: value}; columns in order of first appearance) to OUT/name.csv, for people
        to read (as frames: `icgd.results.tables.experiment_tables`). The standard library's csv writer is kept
        over pandas' to_csv, which writes NaN (a diverged value) as an empty cell, like a missing one."""
        path = self.out / f"{name}.csv"
        cols: list[str] = []
        for r in rows:
            cols += [k for k in r if k not in cols]
        with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=cols, lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
        return path

    def figure(self, name: str, fig) -> None:
        import matplotlib.pyplot as plt

        from icgd.results.figures import finish

        finish(fig)  # plain tick labels
        # smoke mode checks that every figure draws: the PNG alone (the SVG was a third of the oswald suite's
        # smoke run, 2026-11-29, cProfile)
        kinds = (("png", 150),) if self.mode == "smoke" else (("png", 150), ("svg", None))
        for ext, dpi in kinds:
            with atomic_path(self.out / f"{name}.{ext}") as tmp:
                fig.savefig(tmp, format=ext, dpi=dpi or "figure", bbox_inches="tight")
        plt.close(fig)

    def result(self, key: str, value: Any) -> Any:
        self.results[key] = value
        return value

    def report(self, paper: str, measured: str) -> None:
        self.report_lines.append(f"| {paper} | {measured} |")

    def note(self, text: str) -> None:
        self.notes.append(text)


class NotStored(RuntimeError):
    """A model that `--store-only` forbids training: neither the model store nor the cache holds it."""

    def __init__(self, labels: list[str]):
        super().__init__(f"not in the model store: {', '.join(labels)}")
        self.labels = labels


def mode_of(quick: bool = False, smoke: bool = False) -> Mode:
    return "smoke" if smoke else "quick" if quick else "full"

