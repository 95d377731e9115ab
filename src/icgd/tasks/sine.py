"""Sine-wave regression (source 000, sec. 3 and A.7): y = A sin(x - phi) with A, phi drawn per task."""

from __future__ import annotations

import math
from typing import ClassVar, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field, model_validator
from torch import Tensor

from icgd.core.episodes import Episodes
from icgd.tasks.base import SquaredErrorObjective, draw_device, moved


class SineRegression(SquaredErrorObjective, BaseModel):
    """Sine-wave task distribution (Dx = Dy = 1).

    Amplitude A ~ U(amplitude_low, amplitude_high) (default 0.1 .. 5), phase phi ~ U(phase_low, phase_high)
    (default 0 .. pi), drawn independently; inputs x ~ U(-input_range, input_range) (default 5);
    y = A sin(x - phi). `coupled=True` reproduces the official code's slip: one uniform draw u sets both
    A = low + u (high - low) and phi = phase_low + u (phase_high - phase_low). The teacher stored in the
    episodes is (B, 1, 2) = [A, phi].
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    #: every draw on the generator's device, nothing read back (training draws no fixed query grid): a CUDA
    #: graph can capture `sample` (`icgd.train.graphed`)
    sync_free_sampling: ClassVar[bool] = True

    kind: Literal["sine"] = "sine"
    n_context: int = Field(10, ge=1, description="context points per task N")
    n_queries: int = Field(1, ge=1, description="query points per task Q")
    amplitude_low: float = Field(0.1, ge=0)
    amplitude_high: float = 5.0
    phase_low: float = 0.0
    phase_high: float = math.pi
    input_range: float = Field(5.0, gt=0, description="x ~ U(-input_range, input_range)")
    coupled: bool = False

    @model_validator(mode="after")
    def _ranges(self) -> "SineRegression":
        if self.amplitude_high <= self.amplitude_low:
            raise ValueError(f"amplitude_high={self.amplitude_high} must exceed amplitude_low={self.amplitude_low}")
        if self.phase_high < self.phase_low:
            raise ValueError(f"phase_high={self.phase_high} is below phase_low={self.phase_low}")
        return self

    @property
    def dx(self) -> int:
        return 1

    @property
    def dy(self) -> int:
        return 1

    def sample(self, batch: int, generator: torch.Generator | None = None,
               device: torch.device | str | None = None, dtype: torch.dtype = torch.float32,
               query_x: Tensor | None = None) -> Episodes:
        """Sample `batch` tasks; `query_x` (Q,) puts the same query inputs (e.g. a grid) in every task."""
        g_dev = draw_device(batch, generator)
        n, q = self.n_context, self.n_queries

        def unif(shape: tuple[int, ...], lo: float, hi: float) -> Tensor:
            return lo + (hi - lo) * torch.rand(shape, generator=generator, device=g_dev, dtype=dtype)

        u = torch.rand((batch, 2), generator=generator, device=g_dev, dtype=dtype)
        if self.coupled:
            u = u[:, :1].expand(batch, 2)
        amp = self.amplitude_low + (self.amplitude_high - self.amplitude_low) * u[:, 0]
        phase = self.phase_low + (self.phase_high - self.phase_low) * u[:, 1]
        r = self.input_range
        if query_x is None:
            x = unif((batch, n + q, 1), -r, r)
        else:
            qx = torch.as_tensor(query_x, dtype=dtype).to(g_dev).reshape(1, -1, 1).expand(batch, -1, 1)
            x = torch.cat([unif((batch, n, 1), -r, r), qx], 1)
        y = amp[:, None, None] * torch.sin(x - phase[:, None, None])
        ep = Episodes(context_x=x[:, :n], context_y=y[:, :n], query_x=x[:, n:], query_y=y[:, n:],
                      teacher=torch.stack([amp, phase], -1).unsqueeze(1))
        return moved(ep, device, g_dev)
