"""Argument types of the `icgd` command line: each checks its value when the arguments are read, before
anything is written, and refuses a bad one in one line (argparse's error: exit code 2).

Paths are checked for what the command will do with them: a folder to write into must not be a file, must
not lie under a file, and its nearest existing folder must be writable; a folder to read must exist.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

#: the device types a command can run on (torch names others, such as meta or xla, that train nothing here)
DEVICE_TYPES = ("cpu", "cuda", "mps")


def device(name: str) -> str:
    """--device: cpu, cuda, cuda:N or mps, available on this machine."""
    import torch

    try:
        dev = torch.device(name)
    except (RuntimeError, ValueError):
        raise argparse.ArgumentTypeError(f"expected cpu or cuda (or cuda:N, mps), got {name!r}") from None
    if dev.type not in DEVICE_TYPES:
        raise argparse.ArgumentTypeError(f"{name!r}: icgd runs on {', '.join(DEVICE_TYPES)}, not {dev.type}")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise argparse.ArgumentTypeError(f"{name}: CUDA is not available on this machine")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise argparse.ArgumentTypeError(f"{name}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise argparse.ArgumentTypeError(f"{name}: MPS is not available on this machine")
    return name


def device_type(name: str) -> str:
    """A device type (cpu, cuda), for --trained-on: it names models trained there, not a device to use here."""
    import torch

    try:
        kind = torch.device(name).type
    except RuntimeError:
        raise argparse.ArgumentTypeError(f"expected a device type such as cuda or cpu, got {name!r}") from None
    if kind not in DEVICE_TYPES:
        raise argparse.ArgumentTypeError(f"expected a device type such as cuda or cpu, got {name!r}")
    return kind


def steps(text: str) -> list[int]:
    try:
        out = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"steps must be positive integers, got {text!r}")
    return out


def at_least(low: int):
    """An argparse type: an integer >= low."""
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if v < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {v}")
        return v
    return parse


count = at_least(1)  # workers, threads, samples
positive = at_least(2)  # task counts, sizes


def _blocked(path: Path) -> str | None:
    """Why a folder cannot be made or written at `path`, naming the path (None: it can)."""
    if path.exists() and not path.is_dir():
        return f"{path} is a file, not a folder"
    probe = path
    while not probe.exists():  # the nearest existing ancestor decides
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe != path and probe.exists() and not probe.is_dir():
        return f"{path} lies under {probe}, which is a file"
    if probe.exists() and not os.access(probe, os.W_OK | os.X_OK):
        return f"{path} cannot be written ({probe} is not writable)"
    return None


def out_dir(text: str) -> str:
    """A folder the command writes into (made if missing): not a file, not under a file, writable."""
    why = _blocked(Path(text))
    if why:
        raise argparse.ArgumentTypeError(why)
    return text


def out_file(text: str) -> str:
    """A file the command writes: not a folder, in a folder it can write."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder, not a file")
    why = _blocked(path.parent)
    if why:
        raise argparse.ArgumentTypeError(f"{text}: {why}")
    return text


def run_dir(text: str) -> str:
    """An existing run folder the command continues (and writes into)."""
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: no such folder" if not path.exists() else f"{text} is a file, "
                                         "not a run folder")
    if not os.access(path, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{text} cannot be written")
    return text


def lm_model(text: str) -> str:
    """--model: a packaged language model's name, a .gguf file or a Hugging Face model folder (config.json); or
    several, comma-separated (dai-premise compares them)."""
    from icgd.lm.models import PACKAGED, recognised

    for name in (n.strip() for n in text.split(",")):
        if not recognised(name):
            raise argparse.ArgumentTypeError(f"{name!r} is neither a packaged model ({', '.join(PACKAGED)}) nor a "
                                             ".gguf file nor a Hugging Face model folder with config.json")
    return text
