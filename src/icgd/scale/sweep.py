"""Sweeps: a grid (or a random search) over any config keys, each trial a normal training run directory,
trials run side by side on Ray (`icgd.scale.distributed`), results in one tidy table (docs/sweeps.md).

    icgd sweep lsa-1 optim.lr=1e-3,3e-3 task.n_context=5,10,20 --seeds 2 --workers 2

Layout of a sweep directory:
    sweep.json                 the plan: config, fixed overrides, seeds, swept keys, every trial's values
    sweep.parquet              one row per trial x seed x evaluation step; every swept key a column
    trials/<trial>/trial.json  the trial's values and attempts (status, error, seconds, pid, host)
    trials/<trial>/run/        its training run directory (config.yaml, metrics.parquet, checkpoints, ...)
    summary.png, summary.pdf   `icgd sweep --summary DIR`: the metric against each swept key

A trial trains all its seeds together in one run (the engine's seed batching: the cheapest way to run
seeds, and exact). Faults: a trial that raises (divergence included) or whose worker dies is recorded with
its error and tried once more (a retry resumes from the run's last checkpoint); no other trial is
affected. Re-running the same command resumes: finished trials are skipped, interrupted ones resume from
their checkpoints, trials that failed twice are reported and left (delete a trial's folder to run it again).
Ctrl-C stops the running trials (each keeps its last checkpoint) and writes nothing half: every file here is
replaced atomically.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from icgd.core.io import atomic_path, fingerprint, write_json
from icgd.train.config import ConfigError, TrainConfig, load_config, parse_overrides

#: how many times a trial is tried in all (the first attempt and one retry)
ATTEMPTS = 2
_DISTRIBUTIONS = ("uniform", "loguniform", "randint")
_SEQUENCES = ("range", "linspace", "geomspace")
_CALL = re.compile(r"^\s*([a-z]+)\((.*)\)\s*$")


class SweepError(ValueError):
    """A sweep that cannot run as asked (bad axis, another sweep in the directory, ...)."""


@dataclass(frozen=True)
class Axis:
    """One swept key: its values (grid, or sampled from in a random search) or a distribution to sample."""

    key: str
    values: tuple[Any, ...] = ()
    distribution: tuple[str, float, float] | None = None  # (kind, low, high)

    def sample(self, rng: np.random.Generator) -> Any:
        if self.distribution is None:
            return self.values[int(rng.integers(len(self.values)))]
        kind, lo, hi = self.distribution
        if kind == "uniform":
            return float(rng.uniform(lo, hi))
        if kind == "loguniform":
            return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))
        return int(rng.integers(int(lo), int(hi)))  # randint: [lo, hi)


def _split_top(text: str) -> list[str]:
    """'1,2,[3,4]' -> ['1', '2', '[3,4]']: commas outside brackets and quotes."""
    parts, depth, quote, cur = [], 0, "", []
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur))
    return parts


def _numbers(args: str, item: str) -> list[float]:
    try:
        return [float(a) for a in args.split(",")]
    except ValueError:
        raise SweepError(f"{item!r}: the arguments must be numbers") from None


def parse_item(item: str) -> tuple[str, Axis | Any]:
    """'key=v1,v2' -> (key, Axis); 'key=range(a,b[,s])', 'linspace(a,b,n)', 'geomspace(a,b,n)' -> a grid
    axis; 'uniform(a,b)', 'loguniform(a,b)', 'randint(a,b)' -> a distribution (random search); 'key=v' ->
    (key, v): a fixed override. Values are parsed as YAML ('1e-3', 'true', '[0, 1]')."""
    key, sep, raw = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise SweepError(f"{item!r} is not key=value or key=v1,v2,...")
    call = _CALL.match(raw)
    if call and call.group(1) in _SEQUENCES + _DISTRIBUTIONS:
        kind, nums = call.group(1), _numbers(call.group(2), item)
        if kind in _DISTRIBUTIONS:
            if len(nums) != 2 or not nums[0] < nums[1] or (kind == "loguniform" and nums[0] <= 0):
                raise SweepError(f"{item!r}: {kind}(low, high) needs low < high" + (" and low > 0" if kind == "loguniform" else ""))
            return key, Axis(key, distribution=(kind, nums[0], nums[1]))
        if kind == "range":
            if not 1 <= len(nums) <= 3 or any(n != int(n) for n in nums):
                raise SweepError(f"{item!r}: range takes 1 to 3 integers")
            values: list[Any] = list(range(*(int(n) for n in nums)))
        else:
            if len(nums) != 3 or nums[2] < 1 or nums[2] != int(nums[2]) or (kind == "geomspace" and nums[0] * nums[1] <= 0):
                raise SweepError(f"{item!r}: {kind}(start, stop, count) with count >= 1" +
                                 (" and start, stop of one sign, not 0" if kind == "geomspace" else ""))
            fn = np.linspace if kind == "linspace" else np.geomspace
            values = [float(v) for v in fn(nums[0], nums[1], int(nums[2]))]
        if not values:
            raise SweepError(f"{item!r}: no values")
        return key, Axis(key, tuple(values))
    parts = _split_top(raw)
    if not raw.strip() or any(not p.strip() for p in parts):
        raise SweepError(f"{item!r}: an empty value (give key=v1,v2,... with a value between every comma)")
    try:
        parsed = [parse_overrides([f"{key}={p}"]) for p in parts]
    except ConfigError as e:
        raise SweepError(str(e)) from None
    values = [_number(_leaf(p, key)) for p in parsed]
    if len(values) == 1:
        return key, values[0]
    return key, Axis(key, tuple(values))


def _number(v: Any) -> Any:
    """YAML reads '1e-3' (no dot) as a string: numbers written so become numbers."""
    if isinstance(v, str):
        for kind in (int, float):
            try:
                return kind(v)
            except ValueError:
                pass
    return v


def _leaf(tree: dict[str, Any], key: str) -> Any:
    for part in key.split("."):
        tree = tree[part]
    return tree


@dataclass
class Plan:
    """A sweep: the config source, its fixed overrides, the seeds, the swept axes and the trials (each a dict
    of swept key -> value)."""

    source: str
    fixed: dict[str, Any]
    seeds: list[int] | None
    axes: list[str]
    trials: list[dict[str, Any]] = field(default_factory=list)

    def config(self, values: dict[str, Any]) -> TrainConfig:
        items = [f"{k}={json.dumps(v)}" for k, v in {**self.fixed, **values}.items()]
        if self.seeds is not None:
            items.append(f"seeds={json.dumps(self.seeds)}")
        return load_config(self.source, items)

    def head(self) -> dict[str, Any]:
        """What identifies the sweep apart from its trials."""
        return {"source": self.source, "fixed": self.fixed, "seeds": self.seeds}


def make_plan(source: str, items: list[str], seeds: list[int] | None = None, samples: int | None = None,
              sample_seed: int = 0) -> Plan:
    """The trials of `icgd sweep SOURCE ITEMS...`: the grid of the axes in their order, or `samples` random
    draws (seeded by sample_seed) when samples is given or an axis is a distribution. Every trial's config is
    validated here, before anything runs."""
    fixed: dict[str, Any] = {}
    axes: list[Axis] = []
    for item in items:
        key, spec = parse_item(item)
        if key in fixed or any(a.key == key for a in axes):
            raise SweepError(f"{key} is given twice")
        if key == "seeds":
            raise SweepError("give seeds with --seeds (a trial trains its seeds together)")
        if isinstance(spec, Axis):
            axes.append(spec)
        else:
            fixed[key] = spec
    if not axes:
        raise SweepError("nothing to sweep: give at least one key=v1,v2,... (or a range/distribution)")
    random = samples is not None or any(a.distribution is not None for a in axes)
    if random and not samples:
        raise SweepError("a distribution (uniform, loguniform, randint) needs --samples K")
    if samples is not None and samples < 1:
        raise SweepError(f"--samples must be >= 1, got {samples}")
    if random:
        rng = np.random.default_rng(sample_seed)
        trials = [{a.key: a.sample(rng) for a in axes} for _ in range(samples)]
    else:
        trials = [dict(zip([a.key for a in axes], combo)) for combo in itertools.product(*(a.values for a in axes))]
    unique: dict[str, dict[str, Any]] = {}
    for t in trials:
        unique.setdefault(trial_id(t), t)
    return _validated(Plan(_source(source), fixed, seeds, [a.key for a in axes], list(unique.values())))


def _source(source: str) -> str:
    """A preset name as it is; a config file as an absolute path (a resumed sweep may run from elsewhere)."""
    from icgd.train.config import PRESETS

    return source if source in PRESETS or not Path(source).is_file() else str(Path(source).resolve())


def _validated(plan: Plan) -> Plan:
    """`plan`, once every trial's config was built (the first bad one raises SweepError naming the trial)."""
    for t in plan.trials:
        try:
            plan.config(t)
        except ConfigError as e:
            raise SweepError(f"trial {trial_id(t)}: {e}") from None
    return plan


def grid(source: str, values: dict[str, list[Any]], fixed: dict[str, Any] | None = None,
         seeds: int | list[int] | None = None, out: str | Path | None = None, workers: int = 1,
         address: str | None = None, quiet: bool = False) -> Any:
    """The Python form of `icgd sweep`: run (or resume) the grid of `values` (dotted key -> values) over the
    config `source` (a preset or a YAML file) with `fixed` overrides, into `out` (default
    sweeps/<source>); returns the tidy table (pandas). seeds: a count (2 -> [0, 1]) or a list."""
    if not values or any(not isinstance(v, (list, tuple)) or not v for v in values.values()):
        raise SweepError("values: give each swept key a non-empty list")
    seed_list = list(range(seeds)) if isinstance(seeds, int) else seeds
    plan = _validated(Plan(_source(source), dict(fixed or {}), seed_list, list(values),
                           [dict(zip(values, combo)) for combo in itertools.product(*values.values())]))
    return run(plan, out if out is not None else Path("sweeps") / Path(source).stem, workers, address, quiet=quiet)


def trial_id(values: dict[str, Any]) -> str:
    """A trial's folder name: its values, readable ('optim.lr=0.001,task.n_context=5'), or a hash when long."""
    text = ",".join(f"{k}={json.dumps(v).strip(chr(34))}" for k, v in values.items())
    slug = re.sub(r"[^A-Za-z0-9._=,+-]", "_", text)
    digest = fingerprint(values, 12)
    if len(slug) > 120:
        return "t-" + digest[:12]
    return slug if slug == text else f"{slug}-{digest[:8]}"  # characters replaced: two values could meet


def _merge_plan(out: Path, plan: Plan) -> Plan:
    """The plan on disk (when the directory holds this sweep already) with the new trials added."""
    path = out / "sweep.json"
    if not path.is_file():
        return plan
    try:
        old = json.loads(path.read_text())
        head = {k: old[k] for k in ("source", "fixed", "seeds")}
    except (json.JSONDecodeError, KeyError, TypeError):
        raise SweepError(f"{path}: not a sweep plan (corrupt or from something else)") from None
    if head != plan.head():
        raise SweepError(f"{out} holds another sweep ({head['source']}, fixed {head['fixed']}, seeds "
                         f"{head['seeds']}); give another --out")
    trials = {trial_id(t): t for t in old.get("trials", [])}
    for t in plan.trials:
        trials.setdefault(trial_id(t), t)
    axes = list(dict.fromkeys(old.get("axes", []) + plan.axes))
    return Plan(plan.source, plan.fixed, plan.seeds, axes, list(trials.values()))


# --------------------------------------------------------------------------------------------- running
def _train_trial(trial_dir: str, config: TrainConfig, device: str, attempt: int) -> dict[str, Any]:
    """A trial's job (on a worker, or in this process): train or resume its run; a record of what became of it."""
    from icgd.train.runs import train_into

    t0 = time.perf_counter()
    path = Path(trial_dir)
    path.mkdir(parents=True, exist_ok=True)
    write_json(path / "worker.json", {"pid": os.getpid(), "host": socket.gethostname(), "attempt": attempt,
                                        "started": time.time()}, newline=True)
    res = train_into(path / "run", config, device, quiet=True)
    return {"status": res.summary.get("status", "completed"), "seconds": round(time.perf_counter() - t0, 2),
            "steps": res.summary.get("steps")}


@dataclass
class TrialState:
    id: str
    values: dict[str, Any]
    dir: Path
    attempts: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def load(cls, out: Path, values: dict[str, Any]) -> "TrialState":
        tid = trial_id(values)
        d = out / "trials" / tid
        attempts: list[dict[str, Any]] = []
        if (d / "trial.json").is_file():
            try:
                attempts = json.loads((d / "trial.json").read_text()).get("attempts", [])
            except json.JSONDecodeError:
                attempts = []  # a trial.json is replaced atomically: only a foreign file gets here
        return cls(tid, values, d, attempts)

    @property
    def status(self) -> str:
        """completed, failed (ATTEMPTS attempts failed), or pending."""
        from icgd.train.runs import completed

        if completed(self.dir / "run"):
            return "completed"
        failures = [a for a in self.attempts if a.get("status") in ("failed", "killed")]
        return "failed" if len(failures) >= ATTEMPTS else "pending"

    def record(self, entry: dict[str, Any]) -> None:
        self.attempts.append(entry)
        self.save()

    def save(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        write_json(self.dir / "trial.json", {"id": self.id, "values": self.values, "attempts": self.attempts}, newline=True)


def run(plan: Plan, out: str | Path, workers: int = 1, address: str | None = None, threads: int | None = None,
        device: str = "cpu", quiet: bool = False) -> "Any":
    """Run (or resume) the sweep `plan` into `out`; returns its tidy table (`table(out)`). With workers == 1
    and no address the trials run one after another in this process (no Ray needed); otherwise as Ray jobs
    (`icgd.scale.distributed.Pool`). KeyboardInterrupt propagates after the running trials were stopped and the
    table of what finished was written."""
    from icgd.scale.distributed import Pool, first_line, say
    from icgd.train.engine import TrainingInterrupted

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    plan = _merge_plan(out, plan)
    write_json(out / "sweep.json", {**plan.head(), "axes": plan.axes, "trials": plan.trials}, newline=True)
    states = [TrialState.load(out, t) for t in plan.trials]
    todo = [s for s in states if s.status == "pending"]
    failed = [s for s in states if s.status == "failed"]
    done = len(states) - len(todo) - len(failed)
    say(f"sweep {out}: {len(states)} trials, {done} finished, {len(failed)} failed twice (left), "
        f"{len(todo)} to run" + ("" if workers == 1 and address is None else
                                 f" on Ray ({'cluster ' + address if address else f'{workers} workers'})"), quiet)
    configs = {s.id: plan.config(s.values) for s in todo}
    count = [done]

    def finished(s: TrialState, entry: dict[str, Any]) -> bool:
        """Record an attempt; whether the trial is to be tried again."""
        s.record(entry)
        again = entry["status"] != "completed" and s.status == "pending"
        if not again:
            count[0] += 1
        tail = f": {entry['error']}" if entry.get("error") else ""
        say(f"  [{count[0]}/{len(states)}] {s.id}: {entry['status']} (attempt {entry['attempt']}, "
            f"{entry['seconds']:.0f} s){tail}" + ("; trying again" if again else ""), quiet)
        return again

    try:
        if todo and workers == 1 and address is None:
            for s in todo:
                while True:
                    attempt = len(s.attempts) + 1
                    t0 = time.perf_counter()
                    try:
                        rec = _train_trial(str(s.dir), configs[s.id], device, attempt)
                    except TrainingInterrupted:  # Ctrl-C reached the training loop, which checkpointed: no attempt
                        raise KeyboardInterrupt from None
                    except Exception as err:
                        rec = {"status": "failed", "error": f"{type(err).__name__}: {first_line(err)}"}
                    rec = {"attempt": attempt, "seconds": round(time.perf_counter() - t0, 2)} | rec
                    if not finished(s, rec):
                        break
        elif todo:  # Ray starts only when there is something to run
            with Pool(workers, threads, address, gpus=1.0 if device.startswith("cuda") else 0.0) as pool:
                started: dict[str, float] = {}

                def submit(s: TrialState) -> None:
                    started[s.id] = time.perf_counter()
                    pool.submit(s, _train_trial, str(s.dir), configs[s.id], device, len(s.attempts) + 1)

                for s in todo:
                    s.dir.mkdir(parents=True, exist_ok=True)
                    submit(s)
                for o in pool.as_completed():
                    s = o.key
                    rec = {"attempt": len(s.attempts) + 1, "seconds": round(time.perf_counter() - started[s.id], 2)}
                    if o.error is None:
                        rec |= o.value
                    else:
                        rec |= {"status": "killed" if o.killed else "failed", "error": o.error}
                    if finished(s, rec):
                        submit(s)
    except KeyboardInterrupt:  # the finished trials' rows are kept in the table
        table(out)
        raise
    frame = table(out)
    left = [s.id for s in states if s.status == "failed"]
    if left:
        say(f"{len(left)} trial(s) failed twice: {', '.join(left)} (errors in their trial.json)", quiet)
    return frame


# ---------------------------------------------------------------------------------------------- results
def _read_plan(out: Path) -> dict[str, Any]:
    path = out / "sweep.json"
    if not path.is_file():
        raise SweepError(f"{out}: no sweep.json (not a sweep directory)")
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError:
        raise SweepError(f"{path}: corrupt (not JSON)") from None


def table(out: str | Path, write: bool = True) -> Any:
    """The sweep's tidy table (pandas): one row per trial x seed x evaluation step with the trial's swept
    values as columns, its status and every metric of the run's metrics; written to sweep.parquet (atomically)."""
    import pandas as pd

    from icgd.train.rundir import RunDir

    out = Path(out)
    plan = _read_plan(out)
    frames = []
    for values in plan["trials"]:
        s = TrialState.load(out, values)
        run = s.dir / "run"
        status = s.status
        if any((run / name).is_file() for name in ("metrics.parquet", "metrics.csv")):  # (csv: older runs)
            f = RunDir(run).metrics_frame()
        else:
            f = pd.DataFrame({"step": [], "seed": []})
        if f.empty:  # a trial with no evaluation yet still has its row
            f = pd.DataFrame({"step": [pd.NA], "seed": [pd.NA]})
        f.insert(0, "status", status)
        for k in reversed(plan["axes"]):
            v = values.get(k)
            f.insert(0, k, json.dumps(v) if isinstance(v, (list, dict)) else v)
        f.insert(0, "trial", s.id)
        frames.append(f)
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if write:
        with atomic_path(out / "sweep.parquet") as tmp:
            frame.to_parquet(tmp, index=False)
    return frame


def summary(out: str | Path, metric: str = "eval_loss", maximize: bool = False, top: int = 10,
            frame: Any = None) -> Any:
    """Per trial: the metric at the last evaluation step, mean / min / max over seeds, best first (a pandas
    frame); also writes summary.png and summary.pdf: the metric against each swept key. frame: the sweep's
    table when the caller has it (what `run` returns), else it is read and written again (`table`)."""
    out = Path(out)
    plan = _read_plan(out)
    frame = table(out) if frame is None else frame
    if metric not in frame.columns:
        raise SweepError(f"no metric {metric!r} in {out}/sweep.parquet (columns: {', '.join(map(str, frame.columns))})")
    rows = frame.dropna(subset=["step"])
    last = rows[rows["step"] == rows.groupby("trial")["step"].transform("max")]
    agg = last.groupby("trial").agg(**{f"{metric}_mean": (metric, "mean"), f"{metric}_min": (metric, "min"),
                                       f"{metric}_max": (metric, "max"), "seeds": ("seed", "nunique"),
                                       "step": ("step", "max")})
    info = frame.drop_duplicates("trial").set_index("trial")[plan["axes"] + ["status"]]
    agg = info.join(agg, how="left").sort_values(f"{metric}_mean", ascending=not maximize, na_position="last")
    _summary_figure(out, agg.reset_index(), plan["axes"], metric)
    return agg.reset_index().head(top) if top else agg.reset_index()


def _summary_figure(out: Path, agg: Any, axes: list[str], metric: str) -> None:
    """One panel per swept key: the metric (mean over seeds, bars min to max) against the key, one line per
    combination of the other swept keys (labelled when there are at most 8)."""
    import matplotlib.pyplot as plt

    from icgd.results.figures import subplots

    fig, axs = subplots(len(axes))
    agg = agg.dropna(subset=[f"{metric}_mean"])
    for ax, key in zip(axs, axes):
        others = [k for k in axes if k != key]
        groups = list(agg.groupby(others, sort=True, dropna=False)) if others else [((), agg)]
        numeric = bool(np.issubdtype(np.asarray(agg[key]).dtype, np.number))
        for values, g in groups:
            g = g.sort_values(key)
            mean, lo, hi = (g[f"{metric}_{k}"].to_numpy(dtype=float) for k in ("mean", "min", "max"))
            x = g[key].to_numpy(dtype=float) if numeric else g[key].astype(str).to_numpy()
            values = values if isinstance(values, tuple) else (values,)
            label = ", ".join(f"{k.rsplit('.', 1)[-1]}={v:g}" if isinstance(v, (int, float)) else
                              f"{k.rsplit('.', 1)[-1]}={v}" for k, v in zip(others, values)) or None
            ax.errorbar(x, mean, yerr=[mean - lo, hi - mean], marker="o", markersize=4, capsize=2, linewidth=1,
                        label=label if len(groups) <= 8 else None)
        if numeric:
            xs = agg[key].to_numpy(dtype=float)
            if (xs > 0).all() and xs.max() / xs.min() >= 3:
                ax.set_xscale("log")
            ticks = np.unique(xs)
            if len(ticks) <= 8:  # the swept values themselves as ticks
                ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
                ax.minorticks_off()
        finite = agg[f"{metric}_mean"].to_numpy(dtype=float)
        finite = finite[np.isfinite(finite)]
        if len(finite) and (finite > 0).all() and finite.max() / finite.min() >= 10:
            ax.set_yscale("log")
        ax.set_xlabel(key)
        ax.set_ylabel(metric)
        if others and len(groups) <= 8:
            ax.legend(fontsize=7)
    fig.suptitle(f"{out.name}: {metric} at each trial's last evaluation step (mean over seeds, bars: min to max)",
                 fontsize=9)
    for ext in ("png", "pdf"):  # written beside, then moved in: never a half-written figure
        with atomic_path(out / f"summary.{ext}") as tmp:
            fig.savefig(tmp, format=ext, dpi=150, bbox_inches="tight")
    plt.close(fig)
