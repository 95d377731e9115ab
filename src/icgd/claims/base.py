"""Claims: a statement of a source, the experiment that measures it, a number and a threshold.

A claim that does not reproduce is reported as FAIL with its measured number, and one whose seeds fall on
both sides of its bar, or whose interval (where the experiment gives one) straddles it, or whose measure the
results cannot resolve (`Claim.unresolved`), as inconclusive; thresholds are fixed in the code with their justification, never tuned
to a run, and calibrated on the authors' own numbers where they exist (`Reference`, listed by each source). A claim
whose premise does not hold anywhere (its measure raises `PremiseNotMet`, e.g. an ICL comparison where the
model does not learn in context) is "untested": nothing is claimed, and the note says why.
"""

from __future__ import annotations

import functools
import math
import operator
from dataclasses import dataclass, replace
from typing import Any, Callable

from icgd.claims.references import Reference
from icgd.core.registry import Registry
from icgd.core.verdict import KINDS, VERDICTS, Verdict

__all__ = ["VERDICTS", "Claim", "PremiseNotMet", "Reference", "SUITES", "Verdict", "suite", "verdict_of"]

_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


class PremiseNotMet(KeyError):
    """Raised by a claim's measure where its premise holds on no setting: the claim is "untested"."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "the premise does not hold"


#: what a claim checks: the source's statement with the source's measure ("source"), or an extra check
#: stricter than what the source shows ("stricter", e.g. the worst seed where the source shows one run)
ROLES = ("source", "stricter")


@dataclass(frozen=True)
class Claim:
    id: str
    claim: str
    source: str
    experiment: str
    measure: Callable[[dict[str, Any]], float]
    op: str
    threshold: float
    why: str
    role: str = "source"
    #: the authors' own value of the measure, where one exists (the source's references, attached by `suite`)
    reference: Reference = Reference(None, None)
    #: the same measure seed by seed (None: the claim reads no seed spread). Where the seeds fall on both sides
    #: of the bar the verdict is "inconclusive": the seeds' noise is larger than the margin
    per_seed: Callable[[dict[str, Any]], list[float]] | None = None
    #: bootstrap replicates of the results (each a results-like dict the measure reads as it reads the results;
    #: None: the claim has no interval). The interval is the replicates' 2.5th to 97.5th percentile of the
    #: measure; where it straddles the bar the verdict is "inconclusive"
    replicates: Callable[[dict[str, Any]], list[dict[str, Any]]] | None = None
    #: named numbers shown beside the measure (e.g. {"trained": ..., "untrained": ...} for a claim that compares
    #: a trained model with the same model untrained); None: none
    values: Callable[[dict[str, Any]], dict[str, float]] | None = None
    #: why these results cannot decide the claim, or None where they can (None: always can). Where it gives a
    #: reason (e.g. both models reach the mark by the first evaluation, so the measure is the evaluation's
    #: resolution, not the models'), the verdict is "inconclusive" and the reason is the note
    unresolved: Callable[[dict[str, Any]], str | None] | None = None
    #: "claim" (a statement of the source that a wrong model fails) or "check" (holds by construction:
    #: tallied apart, never in the count of PASSes; `icgd.core.verdict.KINDS`)
    kind: str = "claim"

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"claim {self.id}: role must be one of {ROLES}, not {self.role!r}")
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.id}: kind must be one of {KINDS}, not {self.kind!r}")

    def holds(self, value: float) -> bool:
        """Whether `value` meets the bar (NaN never does)."""
        return bool(not math.isnan(value) and _OPS[self.op](value, self.threshold))

    def check(self, results: dict[str, Any]) -> dict[str, Any]:
        untested = False
        try:
            measured = float(self.measure(results))
        except PremiseNotMet as e:
            measured, untested = math.nan, True
            note = f"untested: {e}; nothing is claimed"
        except (KeyError, TypeError, ZeroDivisionError) as e:
            measured = math.nan
            note = f"not measured ({type(e).__name__}: {e})"
        else:
            note = ""
        seeds = None if untested else self._seed_values(results)
        interval = None if untested else self._interval(results)
        verdict = Verdict.UNTESTED if untested else verdict_of(
            self.holds(measured), [self.holds(v) for v in seeds or []]
            + ([self.holds(v) for v in interval] if interval is not None else []))
        why_not = None if untested or math.isnan(measured) else self._unresolved(results)
        if why_not:
            verdict, note = Verdict.INCONCLUSIVE, f"unresolved: {why_not}"
        return self._row(measured, verdict, seeds, interval, note) | self._values(results)

    def not_run(self, reason: str) -> dict[str, Any]:
        """The claim's row where its experiment was not run (e.g. `icgd verify --store-only` without its
        models in the store): "untested", with `reason` as the note."""
        return self._row(math.nan, Verdict.UNTESTED, None, None, f"untested: {reason}; nothing is claimed")

    def _row(self, measured: float, verdict: Verdict, seeds: list[float] | None, interval: list[float] | None,
             note: str) -> dict[str, Any]:
        ref = self.reference
        return {"id": self.id, "kind": self.kind, "claim": self.claim, "source": self.source,
                "experiment": self.experiment, "measured": measured, "threshold": f"{self.op} {self.threshold:g}", "passed": verdict is Verdict.PASS,
                "verdict": verdict.value, "seeds": seeds, "interval": interval,
                "why": self.why, "role": self.role, "reference": ref.value,
                # where the authors' number was read; without one, why none exists (None: not said yet)
                "reference_source": ref.source if ref.value is not None else None,
                "reference_note": ref.source if ref.value is None else None,
                "reference_precision": ref.precision if ref.value is not None else None,
                "reference_passes": self.holds(ref.value) if ref.value is not None else None} \
            | ({"note": note} if note else {})

    def _values(self, results: dict[str, Any]) -> dict[str, Any]:
        if self.values is None:
            return {}
        try:
            return {"values": {k: float(v) for k, v in self.values(results).items()}}
        except (KeyError, TypeError, ZeroDivisionError):
            return {}

    def _unresolved(self, results: dict[str, Any]) -> str | None:
        if self.unresolved is None:
            return None
        try:
            return self.unresolved(results)
        except (KeyError, TypeError):
            return None

    def _seed_values(self, results: dict[str, Any]) -> list[float] | None:
        if self.per_seed is None:
            return None
        try:
            return [float(v) for v in self.per_seed(results)]
        except (KeyError, TypeError, ZeroDivisionError):
            return None

    def _interval(self, results: dict[str, Any]) -> list[float] | None:
        """[low, high]: the 2.5th and 97.5th percentiles of the measure over the bootstrap replicates (NaN
        replicates left out; None without replicates or where fewer than half are numbers)."""
        if self.replicates is None:
            return None
        try:
            reps = self.replicates(results)
        except (KeyError, TypeError):
            return None
        values = []
        for rep in reps:
            try:
                values.append(float(self.measure(rep)))
            except (KeyError, TypeError, ZeroDivisionError):
                values.append(math.nan)
        finite = sorted(v for v in values if not math.isnan(v))
        if not finite or 2 * len(finite) < len(values):
            return None
        return [_percentile(finite, 2.5), _percentile(finite, 97.5)]


def _percentile(ordered: list[float], q: float) -> float:
    """The q-th percentile of sorted values, linear between order statistics (numpy's default)."""
    pos = (len(ordered) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def verdict_of(measured_holds: bool, seeds_hold: list[bool]) -> Verdict:
    """PASS or FAIL by the claim's measure; "inconclusive" where some seed's value lands on the other side of
    the bar than another's (a sign test at the seeds' own resolution: with S seeds, a verdict needs all S), or
    the two ends of the claim's interval do (`seeds_hold` holds both kinds)."""
    if seeds_hold and any(seeds_hold) and not all(seeds_hold):
        return Verdict.INCONCLUSIVE
    return Verdict.PASS if measured_holds else Verdict.FAIL


#: every registered suite by name (filled as the sources are loaded: `icgd.experiments.catalog.load_sources`)
def _load_sources() -> None:
    from icgd.experiments.catalog import load_sources

    load_sources()


#: every source's suites; a lookup loads the sources first where they are not loaded yet
SUITES: Registry[Callable[[], list[Claim]]] = Registry("suite", load=_load_sources)
#: the authors' numbers of every registered suite, {suite: {claim id: Reference}} (filled by `suite`)
REFERENCES: dict[str, dict[str, Reference]] = {}


def suite(name: str, references: dict[str, Reference] | None = None):
    """Decorator registering `fn() -> claims` as suite `name`; each claim gets its reference from
    `references` ({claim id: Reference}: the authors' numbers, listed by the source), and a reference that
    names no claim of the suite is an error."""
    def deco(fn: Callable[[], list[Claim]]) -> Callable[[], list[Claim]]:
        @functools.wraps(fn)
        def referenced() -> list[Claim]:
            claims = fn()
            refs = REFERENCES.get(name, {})
            unknown = set(refs) - {c.id for c in claims}
            if unknown:
                raise ValueError(f"suite {name}: references for claims it does not have: {', '.join(sorted(unknown))}")
            return [replace(c, reference=refs.get(c.id, Reference(None, None))) for c in claims]

        SUITES.add(name, referenced)  # a name registered twice is refused before its references are kept
        REFERENCES[name] = dict(references or {})
        return fn
    return deco
