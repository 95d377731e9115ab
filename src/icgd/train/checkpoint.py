"""Checkpoints: one safetensors file whose metadata holds the JSON state, written atomically."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file

from icgd.core.io import atomic_path, write_json


class CheckpointError(RuntimeError):
    """A checkpoint that is missing, unreadable or inconsistent."""


def save_checkpoint(path: str | Path, tensors: dict[str, torch.Tensor], meta: dict[str, Any]) -> None:
    """Write `tensors` and `meta` to `path` atomically (temporary file, fsync, rename): a crash leaves
    either the old checkpoint or the new one, never a torn file. A readable `.json` copy of `meta` sits beside."""
    path = Path(path)
    cpu = {k: v.detach().to("cpu").contiguous() for k, v in tensors.items()}
    with atomic_path(path, fsync=True) as tmp:
        save_file(cpu, str(tmp), metadata={"icgd": json.dumps(meta)})
    write_json(path.with_suffix(".json"), meta)


def load_checkpoint(path: str | Path, device: torch.device | str = "cpu") -> tuple[dict[str, torch.Tensor], dict]:
    """(tensors, meta) from a checkpoint written by `save_checkpoint`; CheckpointError if it is not one."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: checkpoint not found")
    try:
        with safe_open(str(path), framework="pt") as f:
            raw = (f.metadata() or {}).get("icgd")
        tensors = load_file(str(path), device=str(device))
    except (SafetensorError, OSError, ValueError) as e:
        raise CheckpointError(f"{path}: corrupt checkpoint ({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
    if raw is None:
        raise CheckpointError(f"{path}: not an icgd checkpoint (no icgd metadata)")
    try:
        meta = json.loads(raw)
    except json.JSONDecodeError:
        raise CheckpointError(f"{path}: corrupt checkpoint metadata") from None
    return tensors, meta


def checkpoint_params(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The model's weights among a checkpoint's tensors ({name: tensor}, without the optimiser and streams)."""
    return {k[len("param."):]: v for k, v in tensors.items() if k.startswith("param.")}
