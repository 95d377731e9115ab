"""In-context linear regression (source 000, sec. 2): teacher W ~ N(0, I) * teacher_scale, y = W x (+ noise)."""

from __future__ import annotations

from typing import ClassVar, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field

from icgd.core.episodes import Episodes
from icgd.tasks.base import SquaredErrorObjective, draw_device, moved

InputLaw = Literal["uniform", "normal", "exponential", "laplace", "mixed"]


def _uniform(shape, g, device, dtype, a: float) -> torch.Tensor:
    return (torch.rand(shape, generator=g, device=device, dtype=dtype) * 2 - 1) * a


def _exponential(shape, g, device, dtype) -> torch.Tensor:
    return torch.empty(shape, device=device, dtype=dtype).exponential_(1.0, generator=g)


def _laplace(shape, g, device, dtype) -> torch.Tensor:  # the difference of two unit exponentials
    e = _exponential((2,) + tuple(shape), g, device, dtype)
    return e[0] - e[1]


def _normal(shape, g, device, dtype) -> torch.Tensor:
    return torch.randn(shape, generator=g, device=device, dtype=dtype)


def _mixed(shape, g, device, dtype, n_context: int) -> torch.Tensor:
    """Source 000's "other laws" (src/data.py:49-87 of the authors' code): each task draws its inputs from one
    of the exponential, normal and Laplace laws, chosen uniformly, and divides its context and its query by
    the Frobenius norm of its context, so that the context has norm 1 (times input_scale)."""
    laws = torch.stack([_exponential(shape, g, device, dtype), _normal(shape, g, device, dtype),
                        _laplace(shape, g, device, dtype)])  # (3, B, N + Q, Dx)
    pick = torch.randint(0, 3, (shape[0],), generator=g, device=device)
    z = laws[pick, torch.arange(shape[0], device=device)]
    return z / z[:, :n_context].flatten(1).norm(dim=1)[:, None, None]


#: the input laws by name: z before `input_scale`, from (task, shape, generator, device, dtype)
INPUT_LAWS = {
    "uniform": lambda t, *a: _uniform(*a, t.input_range),
    "normal": lambda t, *a: _normal(*a),
    "exponential": lambda t, *a: _exponential(*a),
    "laplace": lambda t, *a: _laplace(*a),
    "mixed": lambda t, *a: _mixed(*a, t.n_context),
}


class LinearRegression(SquaredErrorObjective, BaseModel):
    """Linear-regression task distribution.

    Inputs: `input_scale * z` with z from `input_law`: uniform U(-input_range, input_range)
    (default range 1, the paper's text; the official code used 0.5), standard normal,
    exponential with rate 1, Laplace(0, 1), or "mixed": one of the last three per task, the context scaled to
    Frobenius norm 1 and the query by the same factor (the authors' out-of-distribution data, `_mixed`). Teacher: W ~ N(0, I) * teacher_scale, shape (Dy, Dx).
    Targets: y = W x + noise_std * N(0, 1).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    #: every draw happens on the generator's device and nothing is read back to the host (each input law,
    #: "mixed" included: its pick is an index tensor), so a CUDA graph can capture `sample` (`icgd.train.graphed`)
    sync_free_sampling: ClassVar[bool] = True

    kind: Literal["linear"] = "linear"
    dx: int = Field(10, ge=1, description="input dimension Dx")
    dy: int = Field(1, ge=1, description="output dimension Dy")
    n_context: int = Field(10, ge=1, description="context points per task N")
    n_queries: int = Field(1, ge=1, description="query points per task Q")
    input_law: InputLaw = "uniform"
    input_range: float = Field(1.0, gt=0, description="a in U(-a, a) (uniform law only)")
    input_scale: float = Field(1.0, gt=0, description="alpha multiplying the inputs (OOD studies)")
    teacher_scale: float = Field(1.0, gt=0, description="alpha multiplying the teacher W (OOD studies)")
    noise_std: float = Field(0.0, ge=0, description="std of Gaussian label noise")

    def _inputs(self, shape: tuple[int, ...], g: torch.Generator | None, device, dtype) -> torch.Tensor:
        return INPUT_LAWS[self.input_law](self, shape, g, device, dtype) * self.input_scale

    def sample(self, batch: int, generator: torch.Generator | None = None,
               device: torch.device | str | None = None, dtype: torch.dtype = torch.float32) -> Episodes:
        """Sample `batch` tasks. Random numbers are drawn on the generator's device (CPU by default),
        so a CPU generator gives the same episodes whatever `device` they are moved to."""
        g_dev = draw_device(batch, generator)
        n, q = self.n_context, self.n_queries
        x = self._inputs((batch, n + q, self.dx), generator, g_dev, dtype)
        w = torch.randn((batch, self.dy, self.dx), generator=generator, device=g_dev, dtype=dtype)
        w = w * self.teacher_scale
        y = x @ w.transpose(1, 2)
        if self.noise_std > 0:
            y = y + self.noise_std * torch.randn(y.shape, generator=generator, device=g_dev, dtype=dtype)
        ep = Episodes(context_x=x[:, :n], context_y=y[:, :n], query_x=x[:, n:], query_y=y[:, n:], teacher=w)
        return moved(ep, device, g_dev)
