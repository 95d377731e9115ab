"""The verdict of a claim: one type, read by the claims that give it and by every report that shows it."""

from __future__ import annotations

from enum import Enum
from typing import Any


class Verdict(str, Enum):
    """What a claim's measured number says of it. A `str`, so it is written to JSON as its value."""

    #: the measure meets the bar, every seed and both ends of the interval too
    PASS = "PASS"
    #: the measure misses the bar, every seed and both ends of the interval too
    FAIL = "FAIL"
    #: seeds, or the ends of the interval, on both sides of the bar; or the results cannot resolve the measure
    INCONCLUSIVE = "inconclusive"
    #: the premise holds on no setting (the model did not learn): nothing is claimed
    UNTESTED = "untested"

    def __str__(self) -> str:
        return self.value


#: the verdicts, in the order reports count them
VERDICTS = tuple(Verdict)


def verdict_of_row(row: dict[str, Any]) -> Verdict:
    """The verdict of a claim row of a verify report; a report written before verdicts existed has only
    "passed" (PASS or FAIL)."""
    v = row.get("verdict")
    return Verdict(v) if v else (Verdict.PASS if row.get("passed") else Verdict.FAIL)


#: what a row of a verify report is: a "claim", a statement of the source that a wrong model fails, or a
#: "check", a sanity check that holds by construction (a correlation with random vectors, one quadratic
#: minimised two ways, a timing, a measure with no trained model in it); checks are tallied apart
KINDS = ("claim", "check")


def kind_of_row(row: dict[str, Any]) -> str:
    """The kind of a row of a verify report ("claim" for a report written before kinds existed)."""
    return str(row.get("kind") or "claim")


def count(rows: list[dict[str, Any]], verdict: Verdict, kind: str = "claim") -> int:
    """How many rows of `kind` (claims by default; checks are tallied apart) have `verdict`."""
    return sum(kind_of_row(r) == kind and verdict_of_row(r) is verdict for r in rows)


def checks_tally(rows: list[dict[str, Any]]) -> str:
    """'5 of 6 checks hold' ("" where there is no check): the checks' count, apart from the claims'."""
    n = sum(kind_of_row(r) == "check" for r in rows)
    return f"{count(rows, Verdict.PASS, 'check')} of {n} check{'' if n == 1 else 's'} hold" if n else ""
