"""Where a study's time goes: named sections, timed exclusively, collected only while a `Profile` is active.

`icgd verify` activates one and prints its breakdown (and writes it to claims.json): per experiment, the
seconds spent training (the optimiser's steps), evaluating during training, building a training run's
reference, loading cached models, tuning references, evaluating learners, and the rest of the analyses.
Sections nest; each second is counted once, in the innermost open section. Outside an active profile a
section costs one context-variable look-up.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from functools import wraps
from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_ACTIVE: ContextVar["Profile | None"] = ContextVar("icgd_profile", default=None)

#: the sections, in the order the breakdown lists them
SECTIONS = ("train steps", "train evaluation", "train reference", "load cached model", "tune reference",
            "evaluate", "analysis (rest)")


class Profile:
    """Exclusive seconds and call counts per (experiment, section, detail)."""

    def __init__(self) -> None:
        self.seconds: dict[tuple[str, str, str], float] = defaultdict(float)
        self.calls: dict[tuple[str, str, str], int] = defaultdict(int)
        self.experiment = ""
        self._stack: list[list[Any]] = []  # [key, start, seconds spent in children]

    @contextmanager
    def active(self) -> Iterator["Profile"]:
        token = _ACTIVE.set(self)
        try:
            yield self
        finally:
            _ACTIVE.reset(token)

    def _enter(self, name: str, detail: str) -> None:
        self._stack.append([(self.experiment, name, detail), time.perf_counter(), 0.0])

    def _exit(self) -> None:
        key, start, children = self._stack.pop()
        elapsed = time.perf_counter() - start
        self.seconds[key] += elapsed - children
        self.calls[key] += 1
        if self._stack:
            self._stack[-1][2] += elapsed

    def rows(self) -> list[dict[str, Any]]:
        """[{"experiment", "section", "detail", "seconds", "calls"}], in the order first seen."""
        return [{"experiment": e, "section": s, "detail": d, "seconds": round(v, 2), "calls": self.calls[(e, s, d)]}
                for (e, s, d), v in self.seconds.items()]


@contextmanager
def section(name: str, detail: str = "") -> Iterator[None]:
    """Time the block as `name` (detail: e.g. the trained model's label) when a profile is active."""
    prof = _ACTIVE.get()
    if prof is None:
        yield
        return
    prof._enter(name, detail)
    try:
        yield
    finally:
        prof._exit()


def timed(name: str) -> Callable[[F], F]:
    """Decorator: time every call of the function as section `name`."""
    def deco(fn: F) -> F:
        @wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with section(name):
                return fn(*args, **kwargs)
        return wrapper  # type: ignore[return-value]
    return deco


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals of `Profile.rows()`: {"by_section": {s: seconds}, "by_experiment": {e: {s: seconds}},
    "trained": [{"experiment", "model", "seconds"}] (the train sections of each model; the tuning of
    its reference learner is counted under "tune reference")}."""
    by_section: dict[str, float] = defaultdict(float)
    by_exp: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    trained: dict[tuple[str, str], float] = defaultdict(float)
    for r in rows:
        by_section[r["section"]] += r["seconds"]
        by_exp[r["experiment"]][r["section"]] += r["seconds"]
        if r["section"].startswith("train "):
            trained[(r["experiment"], r["detail"])] += r["seconds"]
    order = {s: i for i, s in enumerate(SECTIONS)}
    return {"by_section": {s: round(by_section[s], 1) for s in sorted(by_section, key=lambda s: order.get(s, 99))},
            "by_experiment": {e: {s: round(v, 1) for s, v in d.items()} for e, d in by_exp.items()},
            "trained": [{"experiment": e, "model": m, "seconds": round(v, 1)}
                        for (e, m), v in sorted(trained.items(), key=lambda kv: -kv[1])]}


def format_breakdown(summary: dict[str, Any], top: int = 12) -> str:
    """The breakdown as plain text: seconds per section, per experiment, and the costliest trainings."""
    total = sum(summary["by_section"].values()) or 1.0
    lines = ["where the time went (seconds, exclusive):"]
    lines += [f"  {s:<20} {v:9.1f}  {100 * v / total:5.1f}%" for s, v in summary["by_section"].items()]
    lines.append("  per experiment:")
    for e, d in sorted(summary["by_experiment"].items(), key=lambda kv: -sum(kv[1].values())):
        parts = ", ".join(f"{s} {v:.0f}" for s, v in d.items() if v >= 0.5)
        lines.append(f"    {e:<24} {sum(d.values()):8.1f}  ({parts})")
    if summary["trained"]:
        lines.append("  costliest trainings (steps + evaluation; their reference tuning is under 'tune reference'):")
        lines += [f"    {t['experiment']:<24} {t['model']:<32} {t['seconds']:8.1f}" for t in summary["trained"][:top]]
    side = summary.get("side_by_side")
    if side and side["models"]:
        lines.append(f"  trained side by side ({side['workers']} workers, {side['seconds']:.0f} s wall; "
                     "seconds per model in its worker):")
        lines += [f"    {m['model']:<32} {m['seconds']:8.1f}  {m['status']}"
                  for m in sorted(side["models"], key=lambda m: -m["seconds"])[:top]]
    return "\n".join(lines)


@contextmanager
def status_line(what: str, every: float = 15.0, write: Callable[[str], None] | None = None) -> Iterator[None]:
    """While the block runs, a line every `every` seconds on stderr saying what `what` is doing: the innermost
    timed section (`section`, `timed`) and the time so far, e.g. "oswald-deep: tune reference gdpp (45 s)".
    Silent while a model trains (its progress bar says it). Uses the active profile, or one of its own."""
    import threading

    prof = _ACTIVE.get()
    own = Profile() if prof is None else None
    if write is None:
        from tqdm import tqdm

        def write(line: str) -> None:
            tqdm.write(line, file=sys.stderr)

    stop = threading.Event()
    t0 = time.perf_counter()

    def tick() -> None:
        while not stop.wait(every):
            stack = list((prof or own)._stack)
            name, detail = (stack[-1][0][1], stack[-1][0][2]) if stack else ("analysis", "")
            if name != "train steps":
                write(f"{what}: {name}{' ' + detail if detail else ''} ({time.perf_counter() - t0:.0f} s)")

    with own.active() if own is not None else nullcontext():
        threading.Thread(target=tick, daemon=True).start()
        try:
            yield
        finally:
            stop.set()
