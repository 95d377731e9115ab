"""The template source, the one a new paper copies: its claim passes on the authors' number and on one GD
step, and fails a learner that takes one GD step too few (zero steps: the zero predictor)."""

from __future__ import annotations

import torch

from icgd.claims.base import SUITES
from icgd.core.episodes import make_generator
from icgd.core.metrics import evaluate
from icgd.experiments.catalog import load_sources
from icgd.learners.explicit import ZeroPredictor
from icgd.learners.tuning import tune_gd
from icgd.sources.template import keys as X
from icgd.sources.template.gd_step import DX, INPUT_RANGE, N_CONTEXT
from icgd.tasks import LinearRegression

load_sources()
EXP = "template-gd-step"


def _results(ratios: list[float]) -> dict:
    return {EXP: {X.GD_OVER_ZERO_SEEDS: ratios, X.GD_OVER_ZERO_MEDIAN: sorted(ratios)[len(ratios) // 2]}}


def _ratios(steps: int) -> list[float]:
    """The template's measure for a learner of `steps` GD steps (0: the zero predictor), three seeds."""
    task = LinearRegression(dx=DX, n_context=N_CONTEXT, input_range=INPUT_RANGE)
    out = []
    for seed in range(3):
        tune, test = (task.sample(512, make_generator(100 * seed + k), dtype=torch.float64) for k in (0, 1))
        learner = tune_gd(tune, steps=steps) if steps else ZeroPredictor()
        out.append(evaluate(learner, test).mean / evaluate(ZeroPredictor(), test).mean)
    return out


def test_the_claim_passes_one_gd_step_and_fails_one_step_too_few():
    (claim,) = SUITES["template"]()
    assert claim.check(_results(_ratios(1)))["verdict"] == "PASS"
    assert claim.check(_results(_ratios(0)))["verdict"] == "FAIL"


def test_the_bar_holds_on_the_authors_number():
    (claim,) = SUITES["template"]()
    assert claim.reference.value is not None and claim.holds(claim.reference.value)
