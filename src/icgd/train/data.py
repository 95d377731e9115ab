"""Training batches for every seed of a run: one task stream shared by all seeds, or one per seed."""

from __future__ import annotations

import hashlib

import torch
from torch import Tensor

from icgd.core.episodes import Episodes, make_generator
from icgd.train.config import DTYPES, TrainConfig


class TaskStream:
    """Training batches: one stream shared by all seeds (tensors (B, ...)) or one per seed ((S, B, ...)),
    fresh tasks every step or batches drawn from a fixed set of `train_set_size` tasks.

    Tasks are drawn from CPU generators and then moved to `device`, so that a seed gives the same tasks
    on every device (a CUDA generator would draw other numbers)."""

    FIELDS = ("context_x", "context_y", "query_x", "query_y")

    def __init__(self, config: TrainConfig, device: torch.device | str) -> None:
        self.config, self.device = config, torch.device(device)
        self.dtype = DTYPES[config.dtype]
        if config.data == "shared":
            seeds = [config.data_seed]
        else:
            seeds = [config.data_seed * 1_000_003 + s for s in config.seeds]
        self.seeds = seeds
        self.generators = [make_generator(s) for s in seeds]
        self.fixed: list[Episodes] | None = None
        if config.train_set_size is not None:
            self.fixed = [config.task.sample(config.train_set_size, g, device=self.device, dtype=self.dtype)
                          for g in self.generators]

    def next(self, step: int | None = None) -> tuple[Tensor, ...]:
        """The batch of optimisation step `step` (0-based; drawn from `warm_start.task` while it is below
        `warm_start.steps`; None: the run's task)."""
        cfg = self.config
        task = cfg.task
        if cfg.warm_start is not None and step is not None and step < cfg.warm_start.steps:
            task = cfg.warm_start.task
        if self.fixed is None:
            eps = [task.sample(cfg.batch_size, g, device=self.device, dtype=self.dtype) for g in self.generators]
        else:
            eps = []
            for g, full in zip(self.generators, self.fixed):
                idx = torch.randint(full.batch_size, (cfg.batch_size,), generator=g)
                eps.append(full[idx.to(self.device)])
        if cfg.data == "shared":
            return tuple(getattr(eps[0], f) for f in self.FIELDS)
        return tuple(torch.stack([getattr(e, f) for e in eps]) for f in self.FIELDS)

    def state(self) -> dict[str, Tensor]:
        return {f"rng.data.{i}": g.get_state() for i, g in enumerate(self.generators)}

    def load_state(self, tensors: dict[str, Tensor]) -> None:
        if "rng.data.0" not in tensors and "rng.data.device" in tensors:
            from icgd.train.checkpoint import CheckpointError

            raise CheckpointError("the checkpoint was written by the CUDA graph step (tasks drawn on the device): "
                                  "resume it on a CUDA device, or here with a new task stream (icgd train "
                                  "--resume DIR --new-task-stream)")
        for i, g in enumerate(self.generators):
            g.set_state(tensors[f"rng.data.{i}"].to("cpu", torch.uint8))

    def restart(self, step: int) -> None:
        """Draw the tasks from optimisation step `step` on from generators seeded anew from each stream's seed
        and `step` (`restart_seed`): for a checkpoint whose stream this device cannot continue."""
        for g, s in zip(self.generators, self.seeds):
            g.manual_seed(restart_seed(s, step))


def restart_seed(seed: int, step: int) -> int:
    """The seed of a task stream restarted at `step` (`train(new_stream=True)`): a hash, so that it collides
    with no stream's first seed (data_seed, or data_seed * 1_000_003 + seed)."""
    return int.from_bytes(hashlib.sha256(f"icgd task stream {seed} restarted at {step}".encode()).digest()[:7], "big")
