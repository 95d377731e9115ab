"""Training progress on stderr, drawn by tqdm: step, %, steps/s, ETA, train and eval losses."""

from __future__ import annotations

import sys
import time
from typing import Callable


class Progress:
    """A tqdm bar over the training steps. Losses are read (which waits for an accelerator) only when the
    bar is redrawn: every 0.2 s on a terminal, every 10 s otherwise (one line each, for logs)."""

    def __init__(self, total: int, start: int, quiet: bool, desc: str | None = None) -> None:
        self.quiet = quiet
        self.bar = None
        self.interval = 0.2 if sys.stderr.isatty() else 10.0
        self.last = 0.0
        if not quiet:
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=start, file=sys.stderr, unit="step", dynamic_ncols=True,
                            mininterval=self.interval, smoothing=0.1, desc=desc)

    def update(self, step: int, train: float | Callable[[], float], evl: float | None, force: bool = False) -> None:
        """Move to `step`; `train` may be a function, called only when the bar is redrawn."""
        if self.bar is None:
            return
        now = time.perf_counter()
        if force or now - self.last >= self.interval:
            self.last = now
            value = train() if callable(train) else train
            ev = f" eval {evl:.4g}" if evl is not None else ""
            self.bar.set_postfix_str(f"train {value:.4g}{ev}", refresh=False)
        self.bar.update(step - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
