"""In-context linear regression on Gaussian covariates with a chosen covariance (the set-up of the
preconditioned-GD theory: Ahn et al. 2023, Zhang, Frei and Bartlett 2024; and, with label noise, Akyuerek
et al. 2023): x ~ N(0, Sigma), teacher w ~ teacher_mean + teacher_scale * N(0, I), y = w x + noise.

A kind of its own (`kind: gaussian`), a variant of `linear` (the same tokens), so that source 000's
`LinearRegression` and the fingerprints of the models trained on it are untouched.
"""

from __future__ import annotations

from functools import lru_cache
from typing import ClassVar, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field

from icgd.core.episodes import Episodes
from icgd.tasks.base import SquaredErrorObjective, draw_device, moved


class GaussianRegression(SquaredErrorObjective, BaseModel):
    """Linear regression with x ~ N(0, Sigma).

    Sigma = U diag(lambda) U^T: eigenvalues from 1 down to 1 / condition (geometric or linear steps),
    scaled so that tr(Sigma) = dx (the isotropic case, condition 1, is Sigma = I); U the identity
    (rotation_seed None) or a uniformly random rotation drawn from rotation_seed (fixed for the distribution,
    whatever generator samples the tasks). Teacher (Dy, Dx): teacher_mean + teacher_scale * N(0, 1) per entry.
    Targets: y = link(W x) + noise_std * N(0, 1) (`teacher` in the episodes is W, the index direction).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    sync_free_sampling: ClassVar[bool] = True
    variant_of: ClassVar[str | None] = "linear"

    kind: Literal["gaussian"] = "gaussian"
    dx: int = Field(10, ge=1, description="input dimension Dx")
    dy: int = Field(1, ge=1, description="output dimension Dy")
    n_context: int = Field(10, ge=1, description="context points per task N")
    n_queries: int = Field(1, ge=1, description="query points per task Q")
    condition: float = Field(1.0, ge=1.0, description="largest / smallest eigenvalue of Sigma")
    spectrum: Literal["geometric", "linear"] = "geometric"
    rotation_seed: int | None = Field(None, ge=0, description="seed of Sigma's random eigenbasis (None: the axes)")
    teacher_scale: float = Field(1.0, ge=0, description="std of each teacher entry (0: every task's teacher is "
                                                        "teacher_mean, Akyuerek et al.'s probing control task)")
    teacher_mean: float = Field(0.0, description="mean of each teacher entry")
    noise_std: float = Field(0.0, ge=0, description="std of Gaussian label noise")
    link: Literal["identity", "tanh", "relu"] = Field(
        "identity", description="y = link(W x) + noise: a single-index target, nonlinear in x unless identity "
                                "(Mahankali et al. 2024's nonlinear responses)")

    def eigenvalues(self) -> torch.Tensor:
        """Sigma's eigenvalues (dx,), float64, largest first, summing to dx."""
        t = torch.linspace(0.0, 1.0, self.dx, dtype=torch.float64) if self.dx > 1 else torch.zeros(1, dtype=torch.float64)
        lam = self.condition ** (-t) if self.spectrum == "geometric" else 1 - t * (1 - 1 / self.condition)
        return lam * (self.dx / lam.sum())

    def rotation(self) -> torch.Tensor:
        """U (dx, dx), float64: the identity, or the Q factor (signs fixed) of a Gaussian matrix drawn from
        rotation_seed on the CPU."""
        if self.rotation_seed is None:
            return torch.eye(self.dx, dtype=torch.float64)
        g = torch.Generator().manual_seed(self.rotation_seed)
        q, r = torch.linalg.qr(torch.randn(self.dx, self.dx, generator=g, dtype=torch.float64))
        return q * torch.sign(torch.diagonal(r))

    def covariance(self) -> torch.Tensor:
        """Sigma (dx, dx), float64."""
        u = self.rotation()
        return (u * self.eigenvalues()) @ u.T

    def factor(self, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        """F (dx, dx) with Sigma = F F^T (U diag(sqrt(lambda))), on `device` in `dtype`."""
        return _factor(self.dx, self.condition, self.spectrum, self.rotation_seed, torch.device(device), dtype)

    def sample(self, batch: int, generator: torch.Generator | None = None,
               device: torch.device | str | None = None, dtype: torch.dtype = torch.float32) -> Episodes:
        """Sample `batch` tasks, drawn on the generator's device (CPU by default)."""
        g_dev = draw_device(batch, generator)
        n, q = self.n_context, self.n_queries
        x = torch.randn((batch, n + q, self.dx), generator=generator, device=g_dev, dtype=dtype) @ self.factor(g_dev, dtype).T
        w = torch.randn((batch, self.dy, self.dx), generator=generator, device=g_dev, dtype=dtype)
        w = w * self.teacher_scale + self.teacher_mean
        y = _LINKS[self.link](x @ w.transpose(1, 2))
        if self.noise_std > 0:
            y = y + self.noise_std * torch.randn(y.shape, generator=generator, device=g_dev, dtype=dtype)
        ep = Episodes(context_x=x[:, :n], context_y=y[:, :n], query_x=x[:, n:], query_y=y[:, n:], teacher=w)
        return moved(ep, device, g_dev)


#: the target's link function by name (`GaussianRegression.link`)
_LINKS = {"identity": lambda z: z, "tanh": torch.tanh, "relu": torch.relu}


@lru_cache(maxsize=64)
def _factor(dx: int, condition: float, spectrum: str, rotation_seed: int | None, device: torch.device,
            dtype: torch.dtype) -> torch.Tensor:
    """F with Sigma = F F^T, made once per distribution, device and dtype: sampling (every training step)
    neither redoes the QR nor copies F to the device, which would also break a CUDA graph's capture. Kept
    outside the task, whose equality is its fields'. Read only: the tensor is shared."""
    task = GaussianRegression(dx=dx, condition=condition, spectrum=spectrum, rotation_seed=rotation_seed)
    return (task.rotation() * task.eigenvalues().sqrt()).to(device=device, dtype=dtype)


def isotropic_step(n_context: int, dx: int) -> float:
    """The optimal one-step preconditioner's scale for Sigma = I, noiseless, teachers N(0, I): N / (N + d + 1)."""
    return n_context / (n_context + dx + 1)

