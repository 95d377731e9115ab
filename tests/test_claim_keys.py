"""Every claim of every suite gets its number: each suite runs in smoke mode (a handful of steps and tasks)
and no claim may come back "not measured" (a result key its experiment does not write, a typo in a key)."""

import json
import math

import pytest

from icgd.claims.base import SUITES
from icgd.claims.runner import suite_names, verify


@pytest.mark.parametrize("suite", ["oswald", "oswald-nonlinear", "oswald-sine-text", "oswald-copy", "blog",
                                   "categorical"])
def test_every_claim_reads_a_result_its_experiments_write(suite, tmp_path):
    assert suite in suite_names()
    report = verify(suite, tmp_path / suite, smoke=True, seeds=None)
    assert report["mode"] == "smoke" and len(report["claims"]) == len(SUITES[suite]())
    # a note says a result was missing or a premise failed; "unresolved" is a verdict on measured results
    missing = {c["id"]: c["note"] for c in report["claims"] if "note" in c and not c["note"].startswith("unresolved")}
    assert not missing, missing
    # every claim's number comes back from the results.json files its experiments wrote (what `icgd report`
    # re-reads): the measure run on the files gives the recorded value (nan where it was nan, e.g. inf / inf
    # in a smoke run)
    written = {e: json.loads((tmp_path / suite / e / "results.json").read_text())
               for e in {c.experiment for c in SUITES[suite]()}}
    recorded = {c["id"]: c["measured"] for c in report["claims"]}
    for claim in SUITES[suite]():
        again, was = float(claim.measure(written)), recorded[claim.id]
        assert isinstance(was, float) and (again == was or (math.isnan(again) and math.isnan(was))), claim.id
    # a claim that reads its seeds finds them in the results (else its sign test would silently not run)
    by_id = {c["id"]: c for c in report["claims"]}
    no_seeds = [c.id for c in SUITES[suite]() if c.per_seed is not None and by_id[c.id]["seeds"] is None]
    assert not no_seeds, no_seeds
    # the time breakdown covers the whole run: every experiment, and its sections add up to the wall time
    prof = report["profile"]
    assert set(prof["by_experiment"]) == {c.experiment for c in SUITES[suite]()} | {"(claims)"}
    assert abs(sum(prof["by_section"].values()) - report["seconds"]) <= 0.02 * report["seconds"] + 0.5


def test_every_suite_has_a_smoke_test():
    """dai needs the packaged LM (tests/test_lm.py), momentum the packaged text (tests/test_momentum.py);
    a new suite must be added to one of these lists."""
    covered = {"oswald", "oswald-nonlinear", "oswald-sine-text", "oswald-copy", "blog", "categorical", "dai",
               "momentum"}
    library = {name for name, fn in SUITES.items() if fn.__module__.startswith("icgd.")}  # not tests' own
    assert library == covered and covered <= set(suite_names())
