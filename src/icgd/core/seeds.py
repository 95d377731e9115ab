"""Seeds: the defaults and the one validator every entry point uses (configs, the command line,
experiments).

A training run defaults to seed 0. A study (`icgd reproduce`, `icgd verify`) trains several seeds and
its claims read the median seed, so that one seed still on its loss plateau (the seed-dependent phase
transitions of source 000, Fig. 15) does not decide them: 3 seeds in quick mode, 5 in full mode, 2 in
smoke mode. An experiment that needs more seeds declares how many and refuses fewer.
"""

from __future__ import annotations

from typing import Iterable

#: the seeds of a single training run when none are given
TRAIN_SEEDS: tuple[int, ...] = (0,)
#: the seeds of a study, by run mode
STUDY_SEEDS: dict[str, tuple[int, ...]] = {"smoke": (0, 1), "quick": (0, 1, 2), "full": (0, 1, 2, 3, 4)}


def check_seeds(seeds: Iterable[int]) -> list[int]:
    """`seeds` as a list if it holds at least one integer and no repeats; ValueError otherwise."""
    values = list(seeds)
    if not values:
        raise ValueError("seeds: need at least one seed")
    if any(isinstance(s, bool) or not isinstance(s, int) for s in values):
        raise ValueError(f"seeds must be integers, got {values}")
    if len(set(values)) != len(values):
        raise ValueError(f"seeds must be distinct, got {values}")
    return values


def parse_seeds(text: str) -> list[int]:
    """'4' -> [0, 1, 2, 3]; '0,3,7' -> [0, 3, 7] (ValueError on anything else)."""
    try:
        seeds = [int(x) for x in text.split(",") if x.strip()] if "," in text else list(range(int(text)))
    except ValueError:
        raise ValueError(f"expected a count or a comma-separated list of seeds, got {text!r}") from None
    return check_seeds(seeds)


def study_seeds(mode: str, count: int | None = None) -> list[int]:
    """The default seeds of a study in `mode` ("smoke", "quick" or "full"), or the first `count` seeds."""
    return list(range(count)) if count is not None else list(STUDY_SEEDS[mode])
