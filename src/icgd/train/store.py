"""The model store: trained models kept with the code, so that a verdict can be regenerated without
training again (the repository's `zoo/`).

A stored model is a finished run directory without its optimiser state: its config, its final weights
(`checkpoint.safetensors` with the parameters only), what the analysis reads of its training (metrics,
summary, the reference learner, the weights kept over training, the measurements of a tracked run) and
its environment. `manifest.json` lists each one under `<label>-<fingerprint>`, the fingerprint being the
run's config's (`config_fingerprint` on the CPU: the same key for a model trained on a GPU), with the
commit of the code that trained it, the devices that trained it (`cpu`, `cuda`, `cuda+cpu`), its steps,
its wall time, the torch version, and the sha256 and size of every file. A run that diverged is a result
too (the categorical depth study reads where and for which seeds): it is kept as its record (config,
summary with the step and seeds, metrics), without weights, its entry marked `"status": "diverged"`, and an
experiment that reads it gets the same TrainingDiverged that training raised. Models too large to keep
(language-model scale) are listed under "missing" with their size, their cost and the command that trains
them.

The store also keeps fitted references: a reference learner whose fit costs minutes (the deep models' GD++,
`icgd.sources.oswald.shared.gdpp_reference`) is kept as one JSON file under `references/`, keyed by a
fingerprint of everything the fit reads (the task's config, the tuning tasks' seed and number, the fit's
settings and its code's version), listed under the manifest's "references" with the commit that fitted it,
its wall time and its thread count. Reading one checks its hash as a model's.

The store also keeps parked trainings: an unfinished run whose machine goes away (a session's end, a
budget's) is kept under `parked/<key>/` as its resume state (config, checkpoint with the optimiser and the task
stream, timing, reference, env), listed under the manifest's "parked" with its step. Full mode that must train
that model resumes it from there (`restore_parked`), the same steps as an uninterrupted run, on another machine
as on this one; `add` of the finished model removes the parked one and records the steps it was parked at.

Reading a model checks every file against the manifest first: a file whose hash differs is refused with a
`StoreError` (one line; the command line exits 2) and nothing of that model is used. A plan whose config
changed has another fingerprint, so a model of an older config is never used for it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from icgd.core.io import write_json
from icgd.core.version import code_commit
from icgd.train.checkpoint import load_checkpoint, save_checkpoint
from icgd.train.config import TrainConfig, build_config, config_fingerprint

#: the manifest's format; a store of another format is refused
FORMAT = 1
MANIFEST = "manifest.json"
#: the files of a run directory the store keeps (the checkpoint is rewritten without the optimiser state);
#: checkpoint.json, the resume state, and the lock folder are left out
KEPT = ("config.yaml", "summary.json", "metrics.parquet", "metrics.csv", "reference.json", "env.json",
        "weights.safetensors", "track.json")
CHECKPOINT = "checkpoint.safetensors"
#: the files of an unfinished run directory a parked training keeps: what a resume reads (the metrics so far
#: are the checkpoint's, which a resume writes out again)
RESUME = ("config.yaml", "env.json", "reference.json", CHECKPOINT, "checkpoint.json", "timing.json",
          "weights.safetensors")
#: the folder of the parked trainings in the store
PARKED = "parked"
#: where the store is found when none is named: $ICGD_STORE, else `zoo/` beside the package's source tree
ENV = "ICGD_STORE"
#: the folder of the fitted references (one JSON file each) in the store
REFERENCES = "references"
#: the folder of the fitted references in a model cache (beside the run directories)
CACHE_REFERENCES = "_references"
#: the file that marks a run directory of a model cache as a copy of a stored model (it holds the store key)
COPY_MARK = ".from-store"


class StoreError(ValueError):
    """A store that cannot be read as its manifest says (a changed or missing file, a bad manifest)."""


@dataclass(frozen=True)
class StoredModel:
    """One model of the store: its key (`<label>-<fingerprint>`) and its manifest entry."""

    key: str
    entry: dict[str, Any]

    @property
    def label(self) -> str:
        return self.entry["name"]

    def provenance(self) -> dict[str, Any]:
        """What `icgd verify --json` and results.json say of a model taken from the store."""
        return {"name": self.label, "fingerprint": self.entry["fingerprint"], "from": "store",
                "commit": self.entry["commit"], "device": self.entry["device"]}


def store_key(label: str, config: TrainConfig) -> tuple[str, str]:
    """(key, fingerprint) of a model in the store: its label and its config's CPU fingerprint."""
    fp = config_fingerprint(config, "cpu")
    return f"{label}-{fp}", fp


class ModelStore:
    """The store in `root` (a folder holding manifest.json and one folder per model)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        if self.root.exists() and not self.root.is_dir():
            raise StoreError(f"{self.root}: not a folder (a model store is a folder with {MANIFEST})")
        self._manifest: dict[str, Any] | None = None

    # ---------------------------------------------------------------------------------------- reading
    @property
    def manifest(self) -> dict[str, Any]:
        if self._manifest is None:
            path = self.root / MANIFEST
            if not path.is_file():
                self._manifest = {"format": FORMAT, "models": {}, "missing": {}, "references": {}, "parked": {}}
            else:
                try:
                    data = json.loads(path.read_text())
                except (OSError, json.JSONDecodeError) as e:
                    raise StoreError(f"{path}: not a readable manifest ({type(e).__name__})") from None
                if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("models"), dict):
                    raise StoreError(f"{path}: not a model store manifest of format {FORMAT}")
                data.setdefault("missing", {})
                data.setdefault("references", {})
                data.setdefault("parked", {})
                self._manifest = data
        return self._manifest

    def models(self) -> list[StoredModel]:
        return [StoredModel(k, e) for k, e in sorted(self.manifest["models"].items())]

    def find(self, label: str, config: TrainConfig) -> StoredModel | None:
        """The stored model of `label` trained with exactly `config` (seeds, steps and every other value), or
        None."""
        key, _ = store_key(label, config)
        entry = self.manifest["models"].get(key)
        return None if entry is None else StoredModel(key, entry)

    def check(self, model: StoredModel) -> None:
        """Every file of `model` against the manifest's hash and size; a StoreError names the first that
        differs."""
        folder = self.root / model.key
        for name, want in model.entry["files"].items():
            _check_file(folder / name, want, "the model is not used (restore it from git, or train it with --retrain)")

    def materialize(self, model: StoredModel, run: Path) -> Path:
        """Copy `model` into the run directory `run` (of a model cache), marked as a copy (`COPY_MARK`), after
        checking every file: the store itself is only read. Nothing is left in the cache when the check or a
        copy fails."""
        self.check(model)
        tmp = run.with_name(run.name + COPY_MARK)
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            tmp.mkdir(parents=True)
            for name in model.entry["files"]:
                shutil.copy2(self.root / model.key / name, tmp / name)
            (tmp / COPY_MARK).write_text(model.key + "\n")
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        if run.exists():  # an unfinished run of the same config: the stored one replaces it
            shutil.rmtree(run)
        tmp.rename(run)
        return run

    def find_reference(self, key: str) -> dict[str, Any] | None:
        """The fitted reference `key` (`reference_key`) as its file holds it (`read_reference`), checked against
        the manifest, or None where the store holds none; a StoreError where its file differs from the
        manifest."""
        entry = self.manifest["references"].get(key)
        if entry is None:
            return None
        path = self.root / REFERENCES / f"{key}.json"
        _check_file(path, entry, "the reference is not used (restore it from git, or fit it again with --retrain)")
        return read_reference(path, key)

    def find_parked(self, label: str, config: TrainConfig) -> tuple[str, dict[str, Any]] | None:
        """(key, manifest entry) of the parked training of `label` with exactly `config`, or None."""
        key, _ = store_key(label, config)
        entry = self.manifest["parked"].get(key)
        return None if entry is None else (key, entry)

    def check_parked(self, key: str) -> None:
        """Every file of the parked training `key` against the manifest (a StoreError names the first that
        differs)."""
        for name, want in self.manifest["parked"][key]["files"].items():
            _check_file(self.root / PARKED / key / name, want,
                        "the parked training is not resumed (restore it from git, or train it from step 0 with --retrain)")

    def restore_parked(self, label: str, config: TrainConfig, run: Path) -> int | None:
        """Copy the parked training of `label` with `config` into the run directory `run` of a model cache, so
        that training it resumes there; returns the step it resumes from, or None where the store parks none or
        the cache's run is as far or further. Every file is checked first; nothing is left in the cache when a
        check or a copy fails (the cache's own run is then kept)."""
        found = self.find_parked(label, config)
        if found is None:
            return None
        key, entry = found
        from icgd.train.runs import finished

        if _checkpoint_step(run) >= entry["step"] or finished(run):
            return None
        self.check_parked(key)
        tmp = run.with_name(run.name + ".parked")
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            tmp.mkdir(parents=True)
            for name in entry["files"]:
                shutil.copy2(self.root / PARKED / key / name, tmp / name)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        if run.exists():
            shutil.rmtree(run)
        tmp.rename(run)
        return int(entry["step"])

    # ---------------------------------------------------------------------------------------- writing
    def park(self, run: str | Path, label: str | None = None) -> tuple[str, int]:
        """Keep the unfinished training in the run directory `run` (its resume state, `RESUME`) in the store
        under `parked/`, replacing an earlier parking of it; returns (key, step). A run that finished is added
        (`add`), not parked; one without a checkpoint has nothing to resume. A training still running may be
        parked: its checkpoint is written atomically, and the copy is taken again where its timing is of
        another step (the training wrote a checkpoint meanwhile)."""
        import yaml

        from icgd.train.runs import finished

        run = Path(run)
        if finished(run):
            raise StoreError(f"{run}: a finished run (or one that diverged): keep it with `icgd store add`, not park it")
        if not (run / CHECKPOINT).is_file() or not (run / "config.yaml").is_file():
            raise StoreError(f"{run}: no checkpoint to resume from (a run directory with config.yaml and "
                             f"{CHECKPOINT})")
        config = build_config(yaml.safe_load((run / "config.yaml").read_text()))
        label = label or run.name.rsplit("-", 1)[0]
        key, fp = store_key(label, config)
        folder = self.root / PARKED / key
        tmp = self.root / PARKED / f".{key}.tmp"
        for _ in range(5):
            shutil.rmtree(tmp, ignore_errors=True)
            try:
                tmp.mkdir(parents=True)
                for name in RESUME:
                    if (run / name).is_file():
                        shutil.copy2(run / name, tmp / name)
                _, meta = load_checkpoint(tmp / CHECKPOINT)
                timing = json.loads((tmp / "timing.json").read_text()) if (tmp / "timing.json").is_file() else None
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            if timing is None or timing.get("step") == meta["step"]:
                break
        else:
            shutil.rmtree(tmp, ignore_errors=True)
            raise StoreError(f"{run}: its checkpoint changed during five copies; park it once it stopped")
        # the readable copy of the resume state is the checkpoint's own metadata, whatever copy came first
        write_json(tmp / "checkpoint.json", meta)
        env = json.loads((tmp / "env.json").read_text()) if (tmp / "env.json").is_file() else {}
        files = {p.name: {"sha256": sha256(p), "bytes": p.stat().st_size} for p in sorted(tmp.iterdir())}
        from icgd.train.engine import trained_on

        entry = {"name": label, "fingerprint": fp, "step": meta["step"], "steps": config.steps,
                 "seeds": meta.get("seeds"), "commit": env.get("commit") or code_commit(),
                 # the devices as the finished model's entry will say them (`add`), from the same segments
                 "device": trained_on({"segments": meta.get("segments"), "device": env.get("device", "cpu")}),
                 "seconds": timing.get("wall_seconds") if timing else None, "torch": env.get("torch"),
                 "files": files}
        if folder.exists():
            shutil.rmtree(folder)
        tmp.rename(folder)
        self.manifest["parked"][key] = entry
        self._write()
        return key, int(meta["step"])

    def add_reference(self, path: str | Path) -> str:
        """Keep the fitted reference `path` (a JSON file of a model cache's `_references/`) in the store;
        returns its key."""
        path = Path(path)
        ref = read_reference(path)
        key = ref["key"]
        if path.name != f"{key}.json":
            raise StoreError(f"{path}: a fitted reference's file is named by its key ({key}.json)")
        target = self.root / REFERENCES / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp")
        shutil.copy2(path, tmp)
        tmp.rename(target)
        self.manifest["references"][key] = {"name": ref["name"], "fingerprint": ref["fingerprint"],
                                            "commit": ref["commit"], "seconds": ref["seconds"],
                                            "threads": ref["threads"], "torch": ref["torch"],
                                            "sha256": sha256(target), "bytes": target.stat().st_size}
        self._write()
        return key

    def add(self, run: str | Path, label: str | None = None, commit: str | None = None) -> StoredModel:
        """Keep the finished run directory `run` in the store (its weights without the optimiser state) and
        list it in the manifest; returns it. `label`: the model's label (default: the folder's name without
        its fingerprint); `commit`: the code's commit that trained it (default: the one the run recorded in
        env.json, else this checkout's)."""
        run = Path(run)
        summary_path = run / "summary.json"
        summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
        from icgd.train.engine import diverged_at, trained_on

        diverged = diverged_at(summary)
        if summary.get("status") != "completed" and diverged is None:
            raise StoreError(f"{run}: not a finished training run (no completed summary.json, nor a divergence "
                             "it records)")
        import yaml

        config = build_config(yaml.safe_load((run / "config.yaml").read_text()))
        label = label or run.name.rsplit("-", 1)[0]
        key, fp = store_key(label, config)
        env = json.loads((run / "env.json").read_text()) if (run / "env.json").is_file() else {}
        folder = self.root / key
        tmp = self.root / f".{key}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            tmp.mkdir(parents=True)
            for name in KEPT:
                if (run / name).is_file():
                    shutil.copy2(run / name, tmp / name)
            if diverged is None:  # a diverged run is kept as its record: no weights are read from it
                tensors, meta = load_checkpoint(run / CHECKPOINT)
                save_checkpoint(tmp / CHECKPOINT, {k: v for k, v in tensors.items() if k.startswith("param.")},
                                {k: meta[k] for k in ("step", "seeds", "config_name", "icgd", "segments") if k in meta})
                (tmp / "checkpoint.json").unlink()  # the resume state's readable copy: a stored model is not resumed
        except BaseException:  # nothing half-made is left in the store
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        files = {p.name: {"sha256": sha256(p), "bytes": p.stat().st_size} for p in sorted(tmp.iterdir())}
        # the code that trained it: the commit the run recorded when it started (env.json), else this checkout's
        commit = commit or env.get("commit") or code_commit()
        entry = {"name": label, "fingerprint": fp, "commit": commit, "device": trained_on(summary),
                 "steps": summary.get("steps"), "seeds": [s["seed"] for s in summary.get("seeds", [])],
                 "seconds": summary.get("wall_seconds"), "torch": env.get("torch"),
                 "files": files} | ({"status": "diverged"} if diverged is not None else {})
        parked = self.manifest["parked"].pop(key, None)
        if parked is not None:  # its training was parked and resumed: the steps it was kept at, and by which code
            entry["parked_at"] = {"step": parked["step"], "commit": parked["commit"], "device": parked["device"]}
        if folder.exists():
            shutil.rmtree(folder)
        tmp.rename(folder)
        shutil.rmtree(self.root / PARKED / key, ignore_errors=True)
        self.manifest["models"][key] = entry
        self._write()
        return StoredModel(key, entry)

    def _write(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        write_json(self.root / MANIFEST, self.manifest)

    def size(self) -> int:
        """Bytes of every stored file (the models' and the fitted references')."""
        return (sum(f["bytes"] for e in self.manifest["models"].values() for f in e["files"].values())
                + sum(e["bytes"] for e in self.manifest["references"].values())
                + sum(f["bytes"] for e in self.manifest["parked"].values() for f in e["files"].values()))


def usable(run: Path, store: ModelStore | None) -> bool:
    """Whether the cache's run directory `run` holds a finished model to use (or a divergence it records): one
    trained into the cache, or a copy of a stored one while a store is read. A store copy when no store is read (`--retrain`) is removed,
    so that the model trains again, as `--retrain` promises."""
    from icgd.train.runs import finished

    if not finished(run):
        return False
    if store is None and (run / COPY_MARK).is_file():
        shutil.rmtree(run)
        return False
    return True


def would_train(run: Path, label: str, config: Any, store: ModelStore | None) -> bool:
    """Whether full mode must train the model `label` with `config` cached at `run`: the cache holds no
    usable run of it (`usable`) and the store does not hold it."""
    return not usable(run, store) and (store is None or store.find(label, config) is None)


def _checkpoint_step(run: Path) -> int:
    """The step of the checkpoint in the run directory `run` (its readable copy), -1 where it has none."""
    try:
        return int(json.loads((run / "checkpoint.json").read_text())["step"])
    except (OSError, ValueError, KeyError, TypeError):
        return -1


def _check_file(path: Path, want: dict[str, Any], consequence: str) -> None:
    """A StoreError (one line) where the stored file `path` is missing or differs from its manifest record
    `want` ({"bytes", "sha256"}); `consequence` says what is then not used."""
    if not path.is_file():
        raise StoreError(f"{path}: missing from the model store (the manifest lists it)")
    if path.stat().st_size != want["bytes"] or sha256(path) != want["sha256"]:
        raise StoreError(f"{path}: its sha256 differs from the store's manifest: the file was changed; {consequence}")


def reference_key(label: str, inputs: dict[str, Any]) -> tuple[str, str]:
    """(key, fingerprint) of a fitted reference: its label and a hash of everything its fit reads (`inputs`,
    JSON-able: equal inputs, equal key)."""
    from icgd.core.io import fingerprint

    fp = fingerprint(inputs)
    return f"{label}-{fp}", fp


#: the fields of a fitted reference's file
REFERENCE_FIELDS = ("key", "name", "fingerprint", "inputs", "payload", "commit", "seconds", "threads", "torch")


def read_reference(path: Path, key: str | None = None) -> dict[str, Any]:
    """A fitted reference's file, its fields checked, and its key `key` where one is asked for (a StoreError,
    one line, where it is not one)."""
    try:
        ref = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise StoreError(f"{path}: not a readable fitted reference ({type(e).__name__})") from None
    if not isinstance(ref, dict) or any(k not in ref for k in REFERENCE_FIELDS):
        raise StoreError(f"{path}: not a fitted reference (it needs {', '.join(REFERENCE_FIELDS)})")
    if reference_key(ref["name"], ref["inputs"])[0] != ref["key"]:
        raise StoreError(f"{path}: its key is not its inputs' fingerprint (the file was changed)")
    if key is not None and ref["key"] != key:
        raise StoreError(f"{path}: holds the fitted reference {ref['key']}, not {key}")
    return ref


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def default_store() -> ModelStore | None:
    """The store full mode reads: $ICGD_STORE, else `zoo/` at the root of the checkout the package runs from;
    None where there is neither (an install from a wheel)."""
    named = os.environ.get(ENV)
    if named:
        return ModelStore(named)
    root = Path(__file__).resolve().parents[3] / "zoo"
    return ModelStore(root) if (root / MANIFEST).is_file() else None


__all__ = ["CACHE_REFERENCES", "COPY_MARK", "PARKED", "REFERENCES", "ModelStore", "StoreError", "StoredModel", "default_store",
           "read_reference", "reference_key", "store_key", "usable", "would_train"]
