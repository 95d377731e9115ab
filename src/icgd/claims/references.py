"""The authors' own value of a claim's measure, where one exists, with where it was read: `Reference`.

A claim's bar must hold on its reference: a bar that the authors' own result would fail does not state the
authors' claim (tests/suites/test_references.py checks every numeric reference against its claim's bar). Where
the authors give no number, the reference is None; `source` then says why, or is None.

Each source lists its own in `icgd.sources.<name>/references.py` ({claim id: Reference} per suite) and hands
them to `icgd.claims.base.suite`; where each number was read is in docs/calibration.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Reference:
    """The authors' value of a claim's measure (None: none exists) and where it was read."""

    value: float | None
    source: str | None
    #: how far the reading can be off (a figure read by eye); 0 for a printed number
    precision: float = 0.0

    def __post_init__(self) -> None:
        if self.value is not None and not math.isfinite(self.value):
            raise ValueError(f"a reference must be finite, got {self.value}")
        if self.value is None and self.precision:
            raise ValueError("a missing reference has no precision")
