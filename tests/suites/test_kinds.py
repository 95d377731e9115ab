"""Every row of every suite is a claim or a check; the rows that hold by construction are checks, tallied
apart from the claims (`icgd.core.verdict.KINDS`)."""

from __future__ import annotations

from icgd.claims import SUITES, suite_names
from icgd.core.verdict import KINDS

#: rows that hold by construction: a correlation with random vectors, one quadratic minimised two ways, a
#: timing of our own code, measures with no trained model in them, full-batch GD's order invariance
CHECKS = {"kendall-random-near-zero", "simaou-random-near-zero", "eta-matches-line-search", "eta-fast",
          "curvature-explodes", "ood-gd-degrades", "repeat-undamped-gd", "order-full-batch-invariant"}


def test_every_row_has_a_kind_and_the_constructions_are_checks():
    rows = {(name, c.id): c for name in suite_names() for c in SUITES.lookup(name)()}
    assert all(c.kind in KINDS for c in rows.values())
    checks = {cid for (_, cid), c in rows.items() if c.kind == "check"}
    assert checks == CHECKS


def test_a_checked_row_says_its_kind():
    (claim,) = [c for c in SUITES.lookup("blog")() if c.id == "eta-fast"]
    assert claim.check({})["kind"] == "check" and claim.not_run("x")["kind"] == "check"


def test_readings_of_ours_are_marked_stricter_not_the_sources():
    rows = {c.id: c for c in SUITES.lookup("categorical")()}
    assert rows["softmax-invariant"].role == "stricter" and rows["agree-laplacian"].role == "stricter"
    assert rows["agree-softmax"].role == "source" and rows["softmax-improves-with-n"].role == "source"
