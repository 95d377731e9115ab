"""One registry type for every "name -> thing" table of icgd (sources, experiments, suites, tasks, model
kinds, learners, kernels, reference learners): the same way to add, to look up and to refuse.

A `Registry` is a dict (read it as one: `name in r`, `r[name]`, iteration in registration order) whose
`add` refuses a name registered twice, and whose `lookup` names the known entries when a name is unknown,
so every registry answers a typo with the same one line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class Registry(dict[str, T]):
    """Named entries of one kind (`kind` names it in errors: "experiment", "task", ...)."""

    def __init__(self, kind: str, entries: dict[str, T] | None = None, load: Callable[[], object] | None = None):
        """load: what registers the entries where they live elsewhere (the sources' suites), called once by
        the first `lookup` of a name not yet registered, so a lookup does not depend on an import done first."""
        super().__init__()
        self.kind = kind
        self._load = load
        for name, entry in (entries or {}).items():
            self.add(name, entry)

    def add(self, name: str, entry: T) -> T:
        """Register `entry` under `name`; a name registered twice is an error. Returns `entry`."""
        if name in self:
            raise ValueError(f"{self.kind} {name!r} registered twice")
        self[name] = entry
        return entry

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator form of `add`: `@REG.register("name")` above a function or class."""
        def deco(entry: T) -> T:
            return self.add(name, entry)
        return deco

    def lookup(self, name: str) -> T:
        """The entry `name`; an unknown name is a ValueError that lists the known ones."""
        if name not in self and self._load is not None:
            load, self._load = self._load, None
            load()
        if name not in self:
            raise ValueError(f"unknown {self.kind} {name!r}; known: {', '.join(sorted(self)) or 'none'}")
        return self[name]

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self) or 'empty'})"
