"""Named hook points: places in a forward pass where functions read or patch activations.

A model that has hook points owns a `HookPoints` registry (`stack.hooks`, `feature_lsa.hooks`). A hook is
`fn(tensor, name) -> tensor | None`: returning a tensor replaces the activation (a patch), returning None
reads it. Names are those of the model's docstring (`layers.{i}.attn.out`, `layers.{i}.resid_post`, ...);
a hook may be registered for a glob pattern (`layers.*.attn.out`).

Hooks do not change how a layer computes: an attention layer materialises its weights matrix only when a
hook asks for `*.attn.weights` (linear attention otherwise uses the cheaper associative product).

    with stack.hooks.using("layers.0.attn.out", lambda t, name: 0 * t):    # ablate layer 0's attention
        pred = learner.predict(episodes)
    cache = {}
    with stack.hooks.caching(cache, "layers.*.resid_post"):                # read activations
        learner.predict(episodes)
"""

from __future__ import annotations

from contextlib import contextmanager
from fnmatch import fnmatchcase
from typing import Callable, Iterator

from torch import Tensor

Hook = Callable[[Tensor, str], "Tensor | None"]


class HookPoints:
    """A registry of hooks by name or glob pattern, applied in the order they were added."""

    def __init__(self) -> None:
        self._hooks: list[tuple[str, Hook]] = []

    def add(self, pattern: str, fn: Hook) -> Callable[[], None]:
        """Register `fn` for the hook points matching `pattern`; returns a function that removes it."""
        entry = (pattern, fn)
        self._hooks.append(entry)

        def remove() -> None:
            if entry in self._hooks:
                self._hooks.remove(entry)

        return remove

    @contextmanager
    def using(self, pattern: str, fn: Hook) -> Iterator[None]:
        """`fn` registered for the duration of the `with` block."""
        remove = self.add(pattern, fn)
        try:
            yield
        finally:
            remove()

    @contextmanager
    def caching(self, cache: dict[str, Tensor], pattern: str = "*") -> Iterator[dict[str, Tensor]]:
        """Store every activation matching `pattern` in `cache` under its name (a read, no patch)."""

        def store(t: Tensor, name: str) -> None:
            cache[name] = t

        with self.using(pattern, store):
            yield cache

    def active(self, name: str) -> bool:
        """Whether any hook is registered for `name`."""
        return any(fnmatchcase(name, p) for p, _ in self._hooks)

    def __call__(self, name: str, x: Tensor) -> Tensor:
        """The activation `x` at hook point `name`, after every matching hook."""
        for pattern, fn in list(self._hooks):
            if fnmatchcase(name, pattern):
                y = fn(x, name)
                if y is not None:
                    x = y
        return x

    def __bool__(self) -> bool:
        return bool(self._hooks)
