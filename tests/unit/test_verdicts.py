"""A verdict inside the seeds' noise is "inconclusive": PASS or FAIL only where every seed agrees."""

from __future__ import annotations

import math

import pytest

from icgd.claims.base import SUITES, Claim, verdict_of
from icgd.experiments.catalog import load_sources
from icgd.results.console import format_markdown, format_report, tally
from icgd.sources.blog import keys as X

load_sources()  # registers every suite


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
    r["zero_loss"] = 1.648  # every model at 0.61 of the zero predictor: the LSTM premise holds
    r[X.BILSTM_COSINE_GAIN] = sorted(bilstm4_cosines)[1] - 0.72  # the medians' difference, as blog-lstm writes it
    return {"blog-lstm": r}


def _bilstm_depth() -> Claim:
    return next(c for c in SUITES["blog"]() if c.id == "bilstm-depth")


def test_a_gain_that_only_some_seeds_show_is_inconclusive():
    claim = _bilstm_depth()
    clear = claim.check(_lstm_results([0.90, 0.91, 0.92]))
    assert clear["verdict"] == "PASS" and clear["passed"] and len(clear["seeds"]) == 3
    noisy = claim.check(_lstm_results([0.79, 0.85, 0.90]))  # seed 0 gains less than the bar (0.1)
    assert noisy["measured"] > 0 and noisy["verdict"] == "inconclusive" and not noisy["passed"]
    gone = claim.check(_lstm_results([0.60, 0.61, 0.62]))
    assert gone["verdict"] == "FAIL"


def test_tables_show_inconclusive():
    claim = _bilstm_depth()
    report = {"suite": "blog", "mode": "quick", "seconds": 1.0,
              "claims": [claim.check(_lstm_results([0.79, 0.85, 0.90])), claim.check(_lstm_results([0.9] * 3))]}
    assert "INCONCLUSIVE" in format_report(report)
    assert "*inconclusive*" in format_markdown(report)
    assert tally(report["claims"]) == "1 passed, 0 failed, 1 inconclusive"
    untested = _dai("icl-beats-zsl").check(_dai_results({"b": [-0.1] * 40}, []))
    report["claims"].append(untested)
    assert tally(report["claims"]) == "1 passed, 0 failed, 1 inconclusive, 1 untested"
    assert "| untested |" in format_markdown(report)


def test_every_blog_lstm_claim_reads_its_seeds_where_it_has_them():
    per_seed = {c.id for c in SUITES["blog"]() if c.per_seed is not None}
    assert {"bilstm-depth", "bilstm-better", "bilstm-gain-grows", "bilstm-increasingly-gd",
            "bilstm-cosine-below-1", "lstm-not-gd", "lstm-worse-than-tf"} <= per_seed


def _dai_results(icl_mean_minus_zsl: dict[str, list[float]], kept: list[str]) -> dict:
    """dai-icl-vs-ft's results: each data set's ICL-over-seeds and ZSL replicates (ZSL 0.5), the comparison
    means over `kept` with ICL - ZSL replicates of +0.05."""
    from icgd.sources.dai import keys as D

    e: dict = {D.DATASETS: list(icl_mean_minus_zsl), D.PREMISE_KEPT: kept, D.BOOTSTRAP: {}}
    for d, diffs in icl_mean_minus_zsl.items():
        e[f"{d}.icl_accuracy_mean"], e[f"{d}.zsl_accuracy"] = 0.5 + sum(diffs) / len(diffs), 0.5
        e[D.BOOTSTRAP][f"{d}.icl_accuracy_mean"] = [0.5 + x for x in diffs]
        e[D.BOOTSTRAP][f"{d}.zsl_accuracy"] = [0.5] * len(diffs)
    if kept:
        e["mean.icl_accuracy"], e["mean.zsl_accuracy"] = 0.55, 0.5
        e[D.BOOTSTRAP]["mean.icl_accuracy"] = [0.55] * 40
        e[D.BOOTSTRAP]["mean.zsl_accuracy"] = [0.5] * 40
    return {"dai-icl-vs-ft": e}


def _dai(cid: str) -> Claim:
    return next(c for c in SUITES["dai"]() if c.id == cid)


def test_an_interval_that_straddles_the_bar_is_inconclusive():
    premise = _dai("premise-icl-beats-zsl")
    clear = premise.check(_dai_results({"bbc-news": [0.10 + 0.001 * i for i in range(40)]}, ["bbc-news"]))
    assert clear["verdict"] == "PASS" and clear["interval"][0] > 0 and clear["interval"][0] < clear["interval"][1]
    wide = [-0.05 + 0.005 * i for i in range(40)]  # mean +0.0475, interval from about -0.05 to +0.14
    noisy = premise.check(_dai_results({"bbc-news": wide}, []))
    assert noisy["measured"] > 0 and noisy["interval"][0] < 0 < noisy["interval"][1]
    assert noisy["verdict"] == "inconclusive" and not noisy["passed"]
    # the worst data set decides, replicate by replicate
    two = premise.check(_dai_results({"a": [0.2] * 40, "b": [-0.1] * 40}, ["a"]))
    assert two["measured"] == pytest.approx(-0.1) and two["interval"] == pytest.approx([-0.1, -0.1])
    assert two["verdict"] == "FAIL"


def test_comparison_claims_read_only_data_sets_where_the_premise_holds():
    icl = _dai("icl-beats-zsl")
    ok = icl.check(_dai_results({"a": [0.2] * 40, "b": [-0.1] * 40}, ["a"]))
    assert ok["measured"] == pytest.approx(0.05) and ok["verdict"] == "PASS"
    assert ok["interval"] == pytest.approx([0.05, 0.05])
    none = icl.check(_dai_results({"b": [-0.1] * 40}, []))
    assert none["verdict"] == "untested" and "premise" in none["note"] and none["interval"] is None
    assert none["passed"] is False and math.isnan(none["measured"])


def test_every_dai_claim_has_an_interval_and_the_tables_print_it():
    assert all(c.replicates is not None for c in SUITES["dai"]())
    c = _dai("premise-icl-beats-zsl").check(_dai_results({"x": [0.1] * 20 + [0.3] * 20}, ["x"]))
    report = {"claims": [c], "mode": "quick", "seconds": 1}
    for text in (format_markdown(report), format_report(report)):
        assert "0.2 [0.1, 0.3]" in text
