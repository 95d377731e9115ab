"""The authors' own numbers (each source's `references.py`): every claim reports one (or null), and every bar holds
on its reference over the whole interval the reading allows: a bar that the authors' own result fails does not
state their claim."""

from __future__ import annotations

import math

import pytest

from icgd.claims.base import REFERENCES, SUITES, Claim, suite
from icgd.claims.references import Reference
from icgd.claims.runner import suite_names
from icgd.experiments.catalog import load_sources
from icgd.results.console import format_markdown, format_report
from icgd.results.tables import claims_frame

load_sources()  # registers every suite

#: the suites of sources 000 and 001 (at least 20 numeric references among them)
LINEAR = ("oswald", "oswald-nonlinear", "oswald-copy", "blog")


def _numeric(name: str) -> list[Claim]:
    return [c for c in SUITES[name]() if c.reference.value is not None]


@pytest.mark.parametrize("name", sorted(SUITES))
def test_every_claim_reports_its_reference(name):
    for c in SUITES[name]():
        row = c.check({})
        assert {"reference", "reference_source", "reference_passes"} <= set(row), c.id
        if c.reference.value is None:
            assert row["reference"] is None and row["reference_passes"] is None
        else:
            assert row["reference"] == c.reference.value and row["reference_source"]


@pytest.mark.parametrize("name", suite_names())  # the sources' suites, not those other tests register
def test_every_claim_has_the_authors_number_or_says_why_none(name):
    """Issue 61: a claim without a numeric reference carries a `reference_note` (its row's), never nothing; a
    check (holds by construction) needs neither."""
    for c in SUITES[name]():
        row = c.check({})
        if c.kind == "claim" and row["reference"] is None:
            assert (row["reference_note"] or "").strip(), c.id
        if row["reference"] is not None:
            assert row["reference_note"] is None, c.id


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_every_bar_holds_on_the_authors_number(name):
    for c in _numeric(name):
        ref = c.reference
        for value in (ref.value - ref.precision, ref.value, ref.value + ref.precision):
            assert c.holds(value), (f"{name}/{c.id}: the authors' {ref.value} (+- {ref.precision}) fails the bar "
                                    f"{c.op} {c.threshold}: the bar is miscalibrated")
        assert c.check({})["reference_passes"] is True


def test_enough_claims_of_sources_000_and_001_have_a_number():
    counts = {name: len(_numeric(name)) for name in LINEAR}
    assert sum(counts.values()) >= 20, counts
    assert all(counts.values()), counts  # every suite has at least one


def test_sources_002_and_003_carry_the_authors_numbers():
    """Issue 61: at least 5 numeric references for source 002 and 3 for source 003, each naming where it is read
    (file and line, cell or table)."""
    counts = {"categorical": 5, "dai": 3}
    for name, least in counts.items():
        numeric = [c for c in _numeric(name) if c.kind == "claim"]
        assert len(numeric) >= least, (name, [c.id for c in numeric])
        assert all(c.reference.source.strip() for c in numeric), name


def test_a_reference_the_bar_fails_is_reported_as_failing():
    c = Claim("x", "a claim", "Fig. 0", "exp", lambda r: r["exp"]["v"], "<", 1.0, "why",
              reference=Reference(1.5, "read somewhere"))
    assert c.check({"exp": {"v": 0.5}})["reference_passes"] is False


def test_a_reference_for_a_claim_the_suite_lacks_is_an_error():
    suite("test-references-suite", references={"no-such-claim": Reference(1.0, "nowhere")})(
        lambda: [Claim("x", "c", "s", "e", lambda r: 0.0, "<", 1.0, "w")])
    try:
        with pytest.raises(ValueError, match="no-such-claim"):
            SUITES["test-references-suite"]()
    finally:
        SUITES.pop("test-references-suite")
        REFERENCES.pop("test-references-suite")


def test_bad_references_are_refused():
    with pytest.raises(ValueError):
        Reference(math.nan, "x")
    with pytest.raises(ValueError):
        Reference(None, "x", precision=0.1)


def test_tables_and_text_show_the_authors_number():
    claims = [c.check({"blog-dampening": {}}) for c in SUITES["blog"]()]
    report = {"suite": "blog", "mode": "smoke", "seconds": 0.0, "claims": claims}
    frame = claims_frame(report)
    row = frame.set_index("id").loc["dampening-matches-gd"]
    assert row["reference"] == pytest.approx(0.0373) and "multiple_steps" in row["reference_source"]
    assert math.isnan(frame.set_index("id").loc["eta-matches-line-search", "reference"])
    assert "| authors |" in format_markdown(report) and "0.0373" in format_markdown(report)
    text = format_report(report)
    assert "authors" in text.splitlines()[0] and "1000 +- 5e+02" in text
