"""FT's premise in source 003's comparison: the finetuned model must beat the best constant answer (the test
queries' most frequent label), with an interval paired with FT's over the same resampled queries; a data set
where it does not is left out of the comparison claims, and a finetuning that answers one label for every
query fails it (it passed `ft-beats-zsl` on the tweets, 2026-11-30)."""

import numpy as np
import pytest

from icgd.sources.dai import keys as X
from icgd.sources.dai.claims import EXP
from icgd.sources.dai.icl_vs_ft import _premise
from icgd.sources.dai.study import bootstrap, guess_accuracy

LABELS = ("negative", "neutral", "positive")


def _claim(cid: str):
    from icgd.claims.base import SUITES
    from icgd.experiments.catalog import load_sources

    load_sources()
    return next(c for c in SUITES["dai"]() if c.id == cid)


def _rows(gold: list[int], ft_pred, icl_pred=None, seeds=(0, 1)) -> tuple[list[dict], dict[int, np.ndarray]]:
    """`compare`'s per-query rows for demonstration seeds `seeds` (the first chosen), ZSL always wrong."""
    rows = []
    for s in seeds:
        for j, g in enumerate(gold):
            f = ft_pred[j]
            i = g if icl_pred is None else icl_pred[j]
            rows.append({"dataset": "d", "demo_seed": s, "chosen_seed": s == seeds[0], "query_id": j,
                         "gold": LABELS[g], "zsl_correct": False, "icl_correct": i == g, "ft_correct": f == g,
                         "simaou_ft": 0.1, "simaou_random": 0.0, "simaou_random_normal": 0.0, "simam_before": 0.3,
                         "simam_after": 0.4, "kendall_ft": 0.2, "kendall_random": 0.0, "kendall_ft_example": 0.2,
                         "kendall_random_example": 0.0})
    return rows, {s: np.ones(4, dtype=bool) for s in seeds}


def _gold() -> list[int]:
    """Labels with shares about 0.4 / 0.4 / 0.2, the tweets' (label 0 the most frequent)."""
    return [0] * 84 + [1] * 78 + [2] * 38


class _Ctx:
    def __init__(self):
        self.results, self.notes = {}, []

    def result(self, key, value):
        self.results[key] = value
        return value

    def note(self, text):
        self.notes.append(text)


def _summary(rows, val, name="d") -> dict:
    b = bootstrap(rows, val, 200, seed=0)
    chosen = [r for r in rows if r["chosen_seed"]]
    return {"dataset": name, "bootstrap": b, "zsl_accuracy": 0.0,
            "guess_accuracy": guess_accuracy([r["gold"] for r in chosen]),
            "ft_accuracy": float(np.mean([r["ft_correct"] for r in chosen])),
            "icl_accuracy_mean": float(np.mean([r["icl_correct"] for r in rows]))}


def test_the_guess_is_the_share_of_the_most_frequent_label():
    assert guess_accuracy(["a", "b", "a", "c"]) == 0.5
    assert guess_accuracy([LABELS[g] for g in _gold()]) == pytest.approx(84 / 200)


def test_a_finetuning_that_answers_one_label_fails_the_premise_and_its_data_set_is_left_out():
    gold = _gold()
    rows, val = _rows(gold, ft_pred=[0] * len(gold))  # the most frequent label, for every query
    s = _summary(rows, val)
    assert s["ft_accuracy"] == pytest.approx(s["guess_accuracy"])  # it beats ZSL (0.0) by 0.42
    # paired: the guess is resampled with FT over the same queries; no constant answer beats the best one, so
    # the difference is never above 0 (below it where another label is the most frequent in the resample)
    diff = np.asarray(s["bootstrap"]["ft_accuracy"]) - np.asarray(s["bootstrap"]["guess_accuracy"])
    assert diff.max() == pytest.approx(0) and diff.min() < 0
    ctx = _Ctx()
    assert _premise(ctx, [s]) == []
    assert ctx.results[X.PREMISE_KEPT] == [] and "FT does not beat the best constant answer" in ctx.notes[0]
    assert ctx.results["d." + X.FT_PREMISE] == pytest.approx(0)
    assert ctx.results["d." + X.FT_PREMISE_INTERVAL][1] == pytest.approx(0)


def test_a_finetuning_that_learnt_keeps_its_data_set():
    gold = _gold()
    rng = np.random.default_rng(1)
    learnt = [g if rng.random() < 0.8 else (g + 1) % 3 for g in gold]  # 80% right
    rows, val = _rows(gold, ft_pred=learnt)
    s = _summary(rows, val)
    ctx = _Ctx()
    assert [k["dataset"] for k in _premise(ctx, [s])] == ["d"] and ctx.notes == []
    assert ctx.results["d." + X.FT_PREMISE] == pytest.approx(s["ft_accuracy"] - 84 / 200)
    assert ctx.results["d." + X.FT_PREMISE_INTERVAL][0] > 0


def _results(ft_minus_guess: list[float], kept=("d",), guess: float = 0.4) -> dict:
    e = {X.DATASETS: ["d"], X.PREMISE_KEPT: list(kept), "d.ft_accuracy": guess + float(np.mean(ft_minus_guess)),
         "d.guess_accuracy": guess,
         X.BOOTSTRAP: {"d.ft_accuracy": [guess + x for x in ft_minus_guess],
                       "d.guess_accuracy": [guess] * len(ft_minus_guess)}}
    return {EXP: e}


def test_the_ft_premise_bar_passes_the_authors_number_and_fails_a_constant_learner():
    claim = _claim("premise-ft-beats-guess")
    assert claim.holds(claim.reference.value)  # MR: FT 0.800 against about 0.5
    assert claim.check(_results([0.0] * 40))["verdict"] == "FAIL"  # the constant answer itself
    assert claim.check(_results([-0.02] * 40))["verdict"] == "FAIL"  # the tweets' FT, below the guess
    assert claim.check(_results([0.3 + 0.001 * i for i in range(40)]))["verdict"] == "PASS"
    wide = claim.check(_results([-0.05 + 0.005 * i for i in range(40)]))
    assert wide["verdict"] == "inconclusive"


def test_the_ft_premise_is_untested_in_a_run_that_did_not_record_the_guess():
    r = _results([0.3] * 40)
    del r[EXP]["d.guess_accuracy"]
    row = _claim("premise-ft-beats-guess").check(r)
    assert row["verdict"] == "untested" and "not recorded" in row["note"], row
