"""A one-line progress bar on stderr for training runs."""

from __future__ import annotations

import math
import sys
import time
from typing import Callable


class Progress:
    """A one-line progress bar on stderr: step, %, steps/s, ETA, losses."""

    def __init__(self, total: int, start: int, quiet: bool) -> None:
        self.total, self.start, self.quiet = total, start, quiet
        self.t0 = time.perf_counter()
        self.last = 0.0
        self.tty = sys.stderr.isatty()

    def update(self, step: int, train: float | Callable[[], float], evl: float | None, force: bool = False) -> None:
        """Redraw at most every 0.2 s (10 s when not a terminal); `train` may be a function, read only then
        (reading a loss from an accelerator waits for it)."""
        if self.quiet:
            return
        now = time.perf_counter()
        if not force and now - self.last < (0.2 if self.tty else 10.0):
            return
        self.last = now
        train = train() if callable(train) else train
        done = step - self.start
        rate = done / max(now - self.t0, 1e-9)
        eta = (self.total - step) / rate if rate > 0 else float("inf")
        width = 24
        fill = int(width * step / self.total)
        bar = "#" * fill + "." * (width - fill)
        ev = f" eval {evl:.4g}" if evl is not None else ""
        line = (f"[{bar}] {step}/{self.total} {100 * step / self.total:5.1f}% {rate:7.1f} steps/s "
                f"ETA {_hms(eta)} train {train:.4g}{ev}")
        print(("\r" + line) if self.tty else line, end="" if self.tty else "\n", file=sys.stderr, flush=True)

    def close(self) -> None:
        if not self.quiet and self.tty:
            print(file=sys.stderr)


def _hms(s: float) -> str:
    if not math.isfinite(s):
        return "--:--"
    s = int(s)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60:02d}:{s % 60:02d}"
