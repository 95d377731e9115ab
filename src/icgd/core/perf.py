"""Process-level speed settings, applied explicitly (never at import)."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3
_done = False


def keep_freed_memory() -> bool:
    """Ask glibc malloc to keep freed memory for reuse instead of returning it to the OS.

    Training allocates and frees the same large tensors every step; by default glibc serves each with a
    fresh mmap, and the page faults of touching it again cost as much as the arithmetic on these small
    models (measured: 235 ms -> 158 ms per 5-layer step). Returns False where this is not glibc.
    """
    global _done
    if _done:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        ok = (libc.mallopt(_M_MMAP_THRESHOLD, 1 << 30) == 1 and libc.mallopt(_M_TRIM_THRESHOLD, 1 << 31) == 1
              and libc.mallopt(_M_TOP_PAD, 1 << 28) == 1)
    except (OSError, AttributeError):
        return False
    _done = ok
    return ok
