"""A verdict inside the seeds' noise is "inconclusive": PASS or FAIL only where every seed agrees."""

from __future__ import annotations

from icgd.claims import runner  # noqa: F401  (registers every suite)
from icgd.claims.base import SUITES, Claim, verdict_of
from icgd.experiments.blog import keys as X
from icgd.results.console import format_markdown, format_report, tally


def test_verdict_of():
    assert verdict_of(True, []) == "PASS" and verdict_of(False, []) == "FAIL"
    assert verdict_of(True, [True, True, True]) == "PASS"
    assert verdict_of(False, [False, False]) == "FAIL"
    assert verdict_of(True, [True, False, True]) == "inconclusive"
    assert verdict_of(False, [True, False, False]) == "inconclusive"


def _lstm_results(bilstm4_cosines: list[float]) -> dict:
    """blog-lstm's results for 3 seeds, the deepest BiLSTM's cosines as given."""
    r: dict = {X.LSTM_DEPTHS: [1, 2, 4]}
    cos = {"lsa-1": [0.999] * 3, "lstm-1": [0.7] * 3, "lstm-2": [0.7] * 3, "lstm-4": [0.7] * 3,
           "bilstm-1": [0.70, 0.72, 0.74], "bilstm-2": [0.80] * 3, "bilstm-4": bilstm4_cosines}
    for model, values in cos.items():
        r[X.LSTM_SEEDS.format(model=model, measure="sensitivity_cosine")] = values
        r[X.LSTM_SEEDS.format(model=model, measure="loss")] = [1.0] * 3
    r[X.BILSTM_COSINE_GAIN] = sorted(bilstm4_cosines)[1] - 0.72  # the medians' difference, as blog-lstm writes it
    return {"blog-lstm": r}


def _bilstm_depth() -> Claim:
    return next(c for c in SUITES["blog"]() if c.id == "bilstm-depth")


def test_a_gain_that_only_some_seeds_show_is_inconclusive():
    claim = _bilstm_depth()
    clear = claim.check(_lstm_results([0.90, 0.91, 0.92]))
    assert clear["verdict"] == "PASS" and clear["passed"] and len(clear["seeds"]) == 3
    noisy = claim.check(_lstm_results([0.69, 0.75, 0.80]))  # seed 0 loses against its 1-layer model
    assert noisy["measured"] > 0 and noisy["verdict"] == "inconclusive" and not noisy["passed"]
    gone = claim.check(_lstm_results([0.60, 0.61, 0.62]))
    assert gone["verdict"] == "FAIL"


def test_tables_show_inconclusive():
    claim = _bilstm_depth()
    report = {"suite": "blog", "mode": "quick", "seconds": 1.0,
              "claims": [claim.check(_lstm_results([0.69, 0.75, 0.80])), claim.check(_lstm_results([0.9] * 3))]}
    assert "INCONCLUSIVE" in format_report(report)
    assert "*inconclusive*" in format_markdown(report)
    assert tally(report["claims"]) == "1 passed, 0 failed, 1 inconclusive"


def test_every_blog_lstm_claim_reads_its_seeds_where_it_has_them():
    per_seed = {c.id for c in SUITES["blog"]() if c.per_seed is not None}
    assert {"bilstm-depth", "bilstm-better", "bilstm-gain-grows", "bilstm-increasingly-gd",
            "bilstm-cosine-below-1", "lstm-not-gd", "lstm-worse-than-tf"} <= per_seed
