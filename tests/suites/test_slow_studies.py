"""Long checks, left out of the default run (`python3 -m pytest -m slow` runs them; minutes each on 2 cores):
studies at quick-mode sizes, where smoke mode's handful of steps and tasks cannot reach.

- a quick experiment rerun from scratch (fresh model cache) gives the same numbers, bit for bit;
- quick suites measure every claim (no claim "not measured" at the real sizes, every number finite where the
  smoke run may give nan)."""

import math

import pytest

from icgd.claims.base import SUITES
from icgd.claims.runner import verify
from icgd.experiments.runner import run_experiment

pytestmark = pytest.mark.slow


def test_a_quick_experiment_reruns_bit_for_bit(tmp_path):
    first = run_experiment("oswald-1layer", tmp_path / "a" / "exp", cache=tmp_path / "a" / "cache", quick=True)
    second = run_experiment("oswald-1layer", tmp_path / "b" / "exp", cache=tmp_path / "b" / "cache", quick=True)
    a, b = dict(first), dict(second)
    a.pop("seconds"), b.pop("seconds")
    assert a == b
    for table in sorted((tmp_path / "a" / "exp").glob("*.csv")):
        assert table.read_text() == (tmp_path / "b" / "exp" / table.name).read_text(), table.name


@pytest.mark.parametrize("suite", ["oswald-copy", "categorical"])
def test_a_quick_suite_measures_every_claim(suite, tmp_path):
    report = verify(suite, tmp_path / suite, quick=True)
    assert len(report["claims"]) == len(SUITES[suite]())
    missing = {c["id"]: c["note"] for c in report["claims"] if "note" in c}
    assert not missing, missing
    not_finite = [c["id"] for c in report["claims"] if not math.isfinite(c["measured"])]
    assert not not_finite, not_finite
