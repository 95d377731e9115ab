"""Episodes: a batch of in-context problems, the one data type every part of icgd shares.

Shapes (B tasks, N context points, Q queries per task):
    context_x (B, N, Dx), context_y (B, N, Dy), query_x (B, Q, Dx), query_y (B, Q, Dy) or None.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Protocol, runtime_checkable

import torch
from torch import Tensor


class ShapeError(ValueError):
    """Raised when tensors do not have the shapes an icgd function documents."""


@dataclass(frozen=True)
class Episodes:
    """A batch of B in-context problems.

    context_x: (B, N, Dx); context_y: (B, N, Dy); query_x: (B, Q, Dx); query_y: (B, Q, Dy) or None.
    teacher: optional ground-truth parameters of each task (e.g. (B, Dy, Dx) for linear regression).
    """

    context_x: Tensor
    context_y: Tensor
    query_x: Tensor
    query_y: Tensor | None = None
    teacher: Tensor | None = None

    def __post_init__(self) -> None:
        cx, cy, qx, qy = self.context_x, self.context_y, self.query_x, self.query_y
        for name in ("context_x", "context_y", "query_x"):
            t = getattr(self, name)
            if not isinstance(t, Tensor) or t.dim() != 3:
                raise ShapeError(f"Episodes.{name} must be a 3-d tensor (B, n, d), got {_describe(t)}")
        if cy.shape[:2] != cx.shape[:2]:
            raise ShapeError(
                f"context_y {tuple(cy.shape)} must match context_x {tuple(cx.shape)} in (B, N)"
            )
        if qx.shape[0] != cx.shape[0] or qx.shape[2] != cx.shape[2]:
            raise ShapeError(f"query_x {tuple(qx.shape)} must be (B, Q, Dx) with B, Dx of context_x {tuple(cx.shape)}")
        if qy is not None:
            if not isinstance(qy, Tensor) or qy.shape != (qx.shape[0], qx.shape[1], cy.shape[2]):
                raise ShapeError(
                    f"query_y must be (B, Q, Dy) = {(qx.shape[0], qx.shape[1], cy.shape[2])}, got {_describe(qy)}"
                )
        dtypes = {t.dtype for t in (cx, cy, qx) if t is not None} | ({qy.dtype} if qy is not None else set())
        if len(dtypes) != 1:
            raise ShapeError(f"Episodes tensors must share one dtype, got {sorted(map(str, dtypes))}")

    def __repr__(self) -> str:  # shapes, not the tensors: a notebook would print pages for 10,000 tasks
        parts = [f"B={self.batch_size}", f"N={self.n_context}", f"Q={self.n_queries}", f"Dx={self.dx}",
                 f"Dy={self.dy}", str(self.context_x.dtype).replace("torch.", ""), str(self.device)]
        if self.query_y is None:
            parts.append("no query_y")
        if self.teacher is not None:
            parts.append(f"teacher {tuple(self.teacher.shape)}")
        return f"Episodes({', '.join(parts)})"

    # sizes -----------------------------------------------------------------------------------
    @property
    def batch_size(self) -> int:
        return self.context_x.shape[0]

    @property
    def n_context(self) -> int:
        return self.context_x.shape[1]

    @property
    def n_queries(self) -> int:
        return self.query_x.shape[1]

    @property
    def dx(self) -> int:
        return self.context_x.shape[2]

    @property
    def dy(self) -> int:
        return self.context_y.shape[2]

    @property
    def device(self) -> torch.device:
        return self.context_x.device

    @property
    def dtype(self) -> torch.dtype:
        return self.context_x.dtype

    def __len__(self) -> int:
        return self.batch_size

    # transforms ------------------------------------------------------------------------------
    def _map(self, fn) -> "Episodes":
        return Episodes(**{f.name: (None if getattr(self, f.name) is None else fn(getattr(self, f.name)))
                           for f in fields(self)})

    def to(self, device: torch.device | str | None = None, dtype: torch.dtype | None = None) -> "Episodes":
        """Move every tensor to `device` and/or cast floating tensors to `dtype`."""
        return self._map(lambda t: t.to(device=device, dtype=dtype if t.is_floating_point() else None))

    def __getitem__(self, index: slice | int | Tensor) -> "Episodes":
        """Select tasks along the batch dimension (an int keeps the dimension)."""
        if isinstance(index, int):
            index = slice(index, index + 1 if index != -1 else None)
        return self._map(lambda t: t[index])

    def split(self, size: int) -> list["Episodes"]:
        """Chunks of at most `size` tasks, in order."""
        return [self[i:i + size] for i in range(0, self.batch_size, size)]

    def with_query_x(self, query_x: Tensor) -> "Episodes":
        """The same episodes with other query inputs (query_y dropped unless shapes still match)."""
        keep_y = self.query_y if self.query_y is not None and query_x.shape[:2] == self.query_x.shape[:2] else None
        return replace(self, query_x=query_x, query_y=keep_y)

    def fold_queries(self) -> "Episodes":
        """B tasks with Q queries -> B*Q tasks with one query each (context repeated), row b*Q + q."""
        b, q = self.batch_size, self.n_queries

        def rep(t: Tensor) -> Tensor:
            return t.unsqueeze(1).expand(b, q, *t.shape[1:]).reshape(b * q, *t.shape[1:])

        return Episodes(context_x=rep(self.context_x), context_y=rep(self.context_y),
                        query_x=self.query_x.reshape(b * q, 1, self.dx),
                        query_y=None if self.query_y is None else self.query_y.reshape(b * q, 1, self.dy),
                        teacher=None if self.teacher is None else rep(self.teacher))

    @staticmethod
    def cat(parts: list["Episodes"]) -> "Episodes":
        """Concatenate along the batch dimension."""
        first = parts[0]
        return Episodes(**{f.name: (None if getattr(first, f.name) is None
                                    else torch.cat([getattr(p, f.name) for p in parts]))
                           for f in fields(first)})


@runtime_checkable
class TaskDistribution(Protocol):
    """Anything that samples episodes, declares their sizes and owns its objective.

    sample(batch, generator, device, dtype) -> Episodes with context (B, N, Dx|Dy) and queries (B, Q, Dx|Dy);
    loss(pred, target) -> per-task loss (B,) for predictions and targets (B, Q, Dy), the training objective;
    evaluation_task() -> the task held-out episodes are drawn from (itself, or with other query targets).

    What the engine, the backends and the learners read of a task is declared here, and nothing else is
    probed: `icgd.tasks.base`'s objective mixins give every attribute a default.
    """

    #: the name a config gives as `task.kind`
    kind: str
    dx: int
    dy: int
    n_context: int
    n_queries: int
    #: the training objective `loss` computes: "squared_error", "cross_entropy", "next_token"
    objective: str
    #: per-task measures reported beside the loss (names in `icgd.core.metrics.MEASURES`)
    metrics: tuple[str, ...]
    #: the explicit reference learners that make sense on this task (`icgd.learners.references`)
    reference_kinds: tuple[str, ...]
    #: whether alignment metrics with the reference (prediction difference, sensitivities) apply
    aligns: bool
    #: whether `sample` runs without a host sync, so that a CUDA graph may capture it
    sync_free_sampling: bool
    #: the registered kind this task is a variant of, whose model kinds read it too (None: its own kind)
    variant_of: str | None

    @property
    def prior(self) -> float | None:
        """Where predictions start before the context is read (None: zero)."""
        ...

    def sample(self, batch: int, generator: torch.Generator | None = None,
               device: torch.device | str | None = None, dtype: torch.dtype = torch.float32) -> Episodes:
        ...

    def loss(self, pred: Tensor, target: Tensor) -> Tensor:
        ...

    def evaluation_task(self) -> "TaskDistribution":
        ...


@runtime_checkable
class Learner(Protocol):
    """An in-context learner: reads the context of each episode and predicts its queries.

    predict(episodes) -> predictions (B, Q, Dy), differentiable with respect to episodes.query_x.
    """

    name: str

    def predict(self, episodes: Episodes) -> Tensor:
        ...


def make_generator(seed: int, device: torch.device | str = "cpu") -> torch.Generator:
    """A torch.Generator on `device` seeded with `seed` (explicit randomness, no global state)."""
    g = torch.Generator(device=device)
    g.manual_seed(int(seed))
    return g


def require_episodes(ep: object, who: str) -> "Episodes":
    """`ep` if it is Episodes; else TypeError naming what was given (a learner's predict(tensor) would fail deep
    inside with an AttributeError)."""
    if not isinstance(ep, Episodes):
        raise TypeError(f"{who} takes Episodes (icgd.core.episodes.Episodes: context_x, context_y, query_x), "
                        f"got {_describe(ep)}")
    return ep


def _describe(t: object) -> str:
    if isinstance(t, Tensor):
        return f"tensor of shape {tuple(t.shape)}"
    return type(t).__name__
