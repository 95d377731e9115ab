"""The version of icgd (pyproject.toml reads it from here)."""

import functools
import subprocess
from pathlib import Path

__version__ = "0.1.0"


@functools.lru_cache(maxsize=1)
def code_commit() -> str:
    """The git commit of the checkout the package runs from, with "+dirty" where its src/ has uncommitted
    changes; "unknown" outside a git checkout (an install from a wheel). Asked once per process: what a run
    records as the code that trained it."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--", str(here.parent)], cwd=here,
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")

