"""Categorical outcomes set by the quadrant of the covariates (source 002, sec. 3-4).

Covariates x ~ U(-1, 1)^Dx; the quadrant of (x_1, x_2) (the first two coordinates; the others are
distractors) sets the probabilities of the C categories, through a quadrant template drawn per task:

- "xor" (default): one category dominates a diagonal pair of quadrants and two other categories one of
  the remaining quadrants each; the dominant category of a quadrant has probability `dominant` (0.8), the
  others share the rest. For C = 3 there are 12 (3 categories for the diagonal x 2 diagonals x 2 ways to
  place the other two), of the form and number of the authors' code's list; no linear boundary separates
  the diagonal category from the others, which is what lets nonlinear kernels beat the linear one.
- "halfplane": the near-linear counterpart: one category dominates a half-plane (two adjacent
  quadrants), two others one remaining quadrant each; 24 for C = 3. A linear score separates each category's
  region almost as well as any, so here "nonlinear kernels beat linear" need not hold.
- "fixed": always the same XOR template (category C-1 on the (-,-)/(+,+) diagonal, category 0 on (-,+),
  category 1 on (+,-)); the source's Fig. 1 template is lost in the text we have, so this is our choice.

Quadrant index: 2 * [x_1 >= 0] + [x_2 >= 0], i.e. (-,-) 0, (-,+) 1, (+,-) 2, (+,+) 3.

Labels are encoded in R^(C-1): one-hot on categories 0..C-2, the reference category C-1 as all zeros
(source 002, eq. 3). The prior p_0 = 1/C on each of the C-1 entries is where kernel GD starts
(`prior`); the token construction subtracts it (`icgd.learners.tokens.ConcatTokens(prior=...)`).

Episodes: context_y (B, N, C-1) the encoded sampled labels; query_y (B, Q, C-1) the encoded sampled labels
(`query_targets="labels"`, what a model is trained on) or the true probabilities of categories 0..C-2
(`"probabilities"`, what it is scored against); teacher (B, 4, C) the quadrant probability table.
Queries: uniform draws, the G x G grid of cell centres over [-1, 1]^2 (the source's 100 x 100 maps, one
forward pass), or the four quadrant centres (+-0.5, +-0.5) (the source's Fig. 4 MSE).
"""

from __future__ import annotations

import itertools
from typing import ClassVar, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field, model_validator
from torch import Tensor

from icgd.core.episodes import Episodes, ShapeError
from icgd.tasks.base import SquaredErrorObjective, draw_device, moved

#: quadrant centres, in quadrant-index order
QUADRANT_CENTRES = ((-0.5, -0.5), (-0.5, 0.5), (0.5, -0.5), (0.5, 0.5))
#: the two diagonal pairs of quadrants
_DIAGONALS = ((0, 3), (1, 2))


def _paired_templates(n_categories: int, pairs: tuple[tuple[int, int], ...]) -> Tensor:
    """(K, 4) dominant category per quadrant (int64): for every ordered triple of categories and every pair of
    quadrants in `pairs`, the first category on the pair and the other two on the remaining quadrants."""
    rows = []
    for pair_cat, a, b in itertools.permutations(range(n_categories), 3):
        for pair in pairs:
            rest = [q for q in range(4) if q not in pair]
            row = [0] * 4
            row[pair[0]] = row[pair[1]] = pair_cat
            row[rest[0]], row[rest[1]] = a, b
            rows.append(row)
    return torch.tensor(rows, dtype=torch.int64)


def xor_templates(n_categories: int) -> Tensor:
    """Every XOR-like template: (K, 4) dominant category per quadrant (int64), K = C (C-1) (C-2) * 2."""
    return _paired_templates(n_categories, _DIAGONALS)


#: the four half-planes as pairs of adjacent quadrants: x_1 < 0, x_1 >= 0, x_2 < 0, x_2 >= 0
_HALF_PLANES = ((0, 1), (2, 3), (0, 2), (1, 3))


def halfplane_templates(n_categories: int) -> Tensor:
    """Every near-linear template: (K, 4) dominant category per quadrant, one category dominating a half-plane
    (two adjacent quadrants) and two others one remaining quadrant each; K = C (C-1) (C-2) * 4. Each
    category's region is a half-plane or a quadrant, so a linear score separates it almost as well as any."""
    return _paired_templates(n_categories, _HALF_PLANES)


def quadrant_of(x: Tensor) -> Tensor:
    """Quadrant index (...,) in 0..3 of covariates (..., Dx >= 2): 2 [x_1 >= 0] + [x_2 >= 0]."""
    if x.shape[-1] < 2:
        raise ShapeError(f"covariates need at least 2 dimensions, got {tuple(x.shape)}")
    return 2 * (x[..., 0] >= 0).long() + (x[..., 1] >= 0).long()


def true_probabilities(teacher: Tensor, x: Tensor) -> Tensor:
    """Category probabilities (B, T, C) at covariates x (B, T, Dx) for quadrant tables teacher (B, 4, C)."""
    if teacher.dim() != 3 or teacher.shape[1] != 4 or x.shape[0] != teacher.shape[0]:
        raise ShapeError(f"teacher must be (B, 4, C) and x (B, T, Dx), got {tuple(teacher.shape)}, {tuple(x.shape)}")
    q = quadrant_of(x)
    return torch.gather(teacher, 1, q.unsqueeze(-1).expand(*q.shape, teacher.shape[2]))


def grid_points(size: int, dx: int = 2, dtype: torch.dtype = torch.float32) -> Tensor:
    """The size x size grid of cell centres over [-1, 1]^2, row-major in (x_1, x_2): (size^2, dx), other
    coordinates 0. Cell centres never fall on a quadrant boundary."""
    c = (torch.arange(size, dtype=dtype) + 0.5) / size * 2 - 1
    g1, g2 = torch.meshgrid(c, c, indexing="ij")
    pts = torch.zeros(size * size, dx, dtype=dtype)
    pts[:, 0], pts[:, 1] = g1.reshape(-1), g2.reshape(-1)
    return pts


class CategoricalQuadrants(SquaredErrorObjective, BaseModel):
    """Categorical task distribution (source 002). Loss: 0.5 * squared distance of the (C-1)-vector output
    to the query target (the source's objective for the trained transformer); see the module doc."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    kind: Literal["categorical"] = "categorical"
    n_categories: int = Field(3, ge=3, description="categories C (an XOR template needs 3)")
    dx: int = Field(2, ge=2, description="covariate dimension (the quadrant uses the first two)")
    n_context: int = Field(20, ge=1, description="context points per task N")
    n_queries: int = Field(8, ge=1, description="query points per task Q (queries='random')")
    queries: Literal["random", "grid", "centres"] = "random"
    grid_size: int = Field(100, ge=2, description="G for queries='grid' (G^2 queries)")
    templates: Literal["xor", "halfplane", "fixed"] = "xor"
    dominant: float = Field(0.8, gt=0, lt=1, description="probability of a quadrant's dominant category")
    query_targets: Literal["labels", "probabilities"] = "labels"

    reference_kinds: ClassVar[tuple[str, ...]] = ("zero",)

    @model_validator(mode="after")
    def _sizes(self) -> "CategoricalQuadrants":
        if self.dominant <= (1 - self.dominant) / (self.n_categories - 1):
            raise ValueError(f"dominant={self.dominant} must exceed the other categories' share "
                             f"{(1 - self.dominant) / (self.n_categories - 1):.3g}")
        return self

    @property
    def dy(self) -> int:
        """Width of the label encoding: C - 1 (the reference category is all zeros)."""
        return self.n_categories - 1

    @property
    def total_queries(self) -> int:
        return {"random": self.n_queries, "grid": self.grid_size ** 2, "centres": 4}[self.queries]

    @property
    def prior(self) -> float:
        """p_0 = 1/C: where kernel GD starts, on each of the C-1 encoded entries."""
        return 1.0 / self.n_categories

    def loss(self, pred: Tensor, target: Tensor) -> Tensor:
        """Per-task loss (B,) of outputs and targets (B, Q, C-1). Against labels: the training objective,
        mean over queries of 0.5 * ||output - y||^2 (the source's). Against probabilities: the score, mean over
        queries and all C categories of the squared error (the reference category's as 1 - the sum), which is
        `probability_mse`."""
        if self.query_targets == "labels":
            return super().loss(pred, target)
        if pred.shape != target.shape:
            raise ShapeError(f"predictions {tuple(pred.shape)} and targets {tuple(target.shape)} differ in shape")
        return (complete_probabilities(pred) - complete_probabilities(target)).pow(2).mean(-1).mean(-1)

    def evaluation_task(self) -> "CategoricalQuadrants":
        """The same task with the true probabilities as query targets: what models are scored against."""
        return self.model_copy(update={"query_targets": "probabilities"})

    def template_table(self, dtype: torch.dtype = torch.float32) -> Tensor:
        """The quadrant probability tables of every template this task draws from: (K, 4, C)."""
        c = self.n_categories
        doms = {"xor": xor_templates, "halfplane": halfplane_templates}.get(
            self.templates, lambda c: torch.tensor([[c - 1, 0, 1, c - 1]]))(c)
        other = (1 - self.dominant) / (c - 1)
        table = torch.full((doms.shape[0], 4, c), other, dtype=dtype)
        table.scatter_(2, doms.unsqueeze(-1), self.dominant)
        return table

    def encode(self, labels: Tensor, dtype: torch.dtype = torch.float32) -> Tensor:
        """Labels (...,) in 0..C-1 -> encodings (..., C-1): one-hot, the reference category C-1 all zeros."""
        return torch.nn.functional.one_hot(labels, self.n_categories)[..., :-1].to(dtype)

    def sample(self, batch: int, generator: torch.Generator | None = None,
               device: torch.device | str | None = None, dtype: torch.dtype = torch.float32,
               query_x: Tensor | None = None) -> Episodes:
        """Sample `batch` tasks; `query_x` (Q, Dx) puts the same queries in every task (overrides `queries`)."""
        g_dev = draw_device(batch, generator)
        table = self.template_table(dtype).to(g_dev)
        pick = torch.randint(table.shape[0], (batch,), generator=generator, device=g_dev)
        teacher = table[pick]
        n = self.n_context
        cx = torch.rand((batch, n, self.dx), generator=generator, device=g_dev, dtype=dtype) * 2 - 1
        if query_x is not None:
            qx = torch.as_tensor(query_x, dtype=dtype).to(g_dev)
            if qx.dim() != 2 or qx.shape[1] != self.dx:
                raise ShapeError(f"query_x must be (Q, {self.dx}), got {tuple(qx.shape)}")
            qx = qx.expand(batch, -1, -1)
        elif self.queries == "random":
            qx = torch.rand((batch, self.n_queries, self.dx), generator=generator, device=g_dev, dtype=dtype) * 2 - 1
        elif self.queries == "grid":
            qx = grid_points(self.grid_size, self.dx, dtype).to(g_dev).expand(batch, -1, -1)
        else:
            centres = torch.zeros(4, self.dx, dtype=dtype)
            centres[:, :2] = torch.tensor(QUADRANT_CENTRES, dtype=dtype)
            qx = centres.to(g_dev).expand(batch, -1, -1)
        x = torch.cat([cx, qx], 1)
        probs = true_probabilities(teacher, x)
        labels = torch.multinomial(probs.reshape(-1, self.n_categories), 1, generator=generator).reshape(x.shape[:2])
        y = self.encode(labels, dtype)
        query_y = y[:, n:] if self.query_targets == "labels" else probs[:, n:, :-1].contiguous()
        ep = Episodes(context_x=cx, context_y=y[:, :n].contiguous(), query_x=qx.contiguous(), query_y=query_y,
                      teacher=teacher)
        return moved(ep, device, g_dev)


def complete_probabilities(p: Tensor) -> Tensor:
    """(..., C-1) probabilities (or encoded labels) of categories 0..C-2 -> (..., C), the reference
    category's entry as 1 - the sum."""
    return torch.cat([p, 1 - p.sum(-1, keepdim=True)], -1)


def probability_mse(pred: Tensor, ep: Episodes) -> Tensor:
    """Per-task MSE (B,) between predicted probabilities (B, Q, C-1) of categories 0..C-2 and the true
    ones at the queries, over all C categories (the reference category's as 1 - the sum of the others)."""
    if ep.teacher is None:
        raise ValueError("the episodes carry no quadrant table (teacher): not categorical episodes?")
    p = true_probabilities(ep.teacher, ep.query_x)
    if pred.shape != p[..., :-1].shape:
        raise ShapeError(f"predictions {tuple(pred.shape)} must be (B, Q, C-1) = {tuple(p[..., :-1].shape)}")
    return ((complete_probabilities(pred) - p.to(pred)) ** 2).mean(-1).mean(-1)
