"""In-context linear regression (SPEC 1): teacher W ~ N(0, I) * teacher_scale, y = W x (+ noise)."""

from __future__ import annotations

from typing import Literal

import torch
from pydantic import BaseModel, ConfigDict, Field

from icgd.core.episodes import Episodes
from icgd.tasks.base import SquaredErrorObjective, draw_device, moved

InputLaw = Literal["uniform", "normal", "exponential", "laplace"]


class LinearRegression(SquaredErrorObjective, BaseModel):
    """Linear-regression task distribution.

    Inputs: `input_scale * z` with z from `input_law`: uniform U(-input_range, input_range)
    (default range 1, the paper's text; the official code used 0.5), standard normal,
    exponential with rate 1, or Laplace(0, 1). Teacher: W ~ N(0, I) * teacher_scale, shape (Dy, Dx).
    Targets: y = W x + noise_std * N(0, 1).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

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
        if self.input_law == "uniform":
            z = (torch.rand(shape, generator=g, device=device, dtype=dtype) * 2 - 1) * self.input_range
        elif self.input_law == "normal":
            z = torch.randn(shape, generator=g, device=device, dtype=dtype)
        elif self.input_law == "exponential":
            z = torch.empty(shape, device=device, dtype=dtype).exponential_(1.0, generator=g)
        else:  # laplace: difference of two unit exponentials
            e = torch.empty((2,) + shape, device=device, dtype=dtype).exponential_(1.0, generator=g)
            z = e[0] - e[1]
        return z * self.input_scale

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
