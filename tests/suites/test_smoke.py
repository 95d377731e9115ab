"""Every claim of every suite gets its number: each suite runs in smoke mode (a handful of steps and tasks)
and no claim may come back "not measured" (a result key its experiment does not write, a typo in a key)."""

import json
import math

import pytest

from icgd.claims.base import SUITES, PremiseNotMet
from icgd.claims.runner import suite_names, verify

#: the suites whose smoke run needs an optional package (a language model, packaged text), run by the test
#: module named beside each, where it skips without that package; every other suite runs here
SMOKE_ELSEWHERE = {"dai": "tests/integration/test_lm.py", "momentum": "tests/suites/test_momentum.py"}


@pytest.mark.parametrize("suite", [s for s in suite_names() if s not in SMOKE_ELSEWHERE])
def test_every_claim_reads_a_result_its_experiments_write(suite, tmp_path):
    assert suite in suite_names()
    report = verify(suite, tmp_path / suite, smoke=True, seeds=None)
    assert report["mode"] == "smoke" and len(report["claims"]) == len(SUITES[suite]())
    # a note says a result was missing; "unresolved" and a premise not met ("untested", e.g. LSTMs that learn
    # nothing in a smoke run's few steps) are verdicts on measured results
    missing = {c["id"]: c["note"] for c in report["claims"]
               if "note" in c and not c["note"].startswith(("unresolved", "untested:"))}
    assert not missing, missing
    # every claim's number comes back from the results.json files its experiments wrote (what `icgd report`
    # re-reads): the measure run on the files gives the recorded value (nan where it was nan, e.g. inf / inf
    # in a smoke run)
    written = {e: json.loads((tmp_path / suite / e / "results.json").read_text())
               for e in {c.experiment for c in SUITES[suite]()}}
    recorded = {c["id"]: c["measured"] for c in report["claims"]}
    for claim in SUITES[suite]():
        try:
            again = float(claim.measure(written))
        except PremiseNotMet:  # its keys were read before the premise was (tests/suites/test_bars.py)
            again = math.nan
        was = recorded[claim.id]
        assert isinstance(was, float) and (again == was or (math.isnan(again) and math.isnan(was))), claim.id
    # a claim that reads its seeds finds them in the results (else its sign test would silently not run)
    by_id = {c["id"]: c for c in report["claims"]}
    no_seeds = [c.id for c in SUITES[suite]() if c.per_seed is not None and by_id[c.id]["seeds"] is None
                and by_id[c.id]["verdict"] != "untested"]
    assert not no_seeds, no_seeds
    # every model the suite used says where it came from (a smoke run's models are not in the store: trained)
    assert all(set(m) == {"name", "fingerprint", "from", "commit", "device"} and m["from"] == "trained"
               for m in report["models"]), report["models"]
    # the time breakdown covers the whole run: every experiment, and its sections add up to the wall time
    prof = report["profile"]
    assert set(prof["by_experiment"]) == {c.experiment for c in SUITES[suite]()} | {"(claims)"}
    assert abs(sum(prof["by_section"].values()) - report["seconds"]) <= 0.02 * report["seconds"] + 0.5


def test_the_suites_smoked_elsewhere_are_smoked_there():
    """A suite left out above is smoked by the module named for it (a suite of a new source needs nothing:
    the parametrization above picks it up)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for suite, module in SMOKE_ELSEWHERE.items():
        assert suite in suite_names(), suite
        assert f'verify("{suite}"' in (root / module).read_text() or f"verify('{suite}'" in (root / module).read_text(), \
            f"{module} does not run suite {suite}"
