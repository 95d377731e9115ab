"""The theory suite: what a trained one-layer LSA computes, against the exact predictions (source 004).

Every bar was argued before any run from the closed forms and from learners that are wrong in a stated way
(computed on sampled tasks, not from a trained model); tests/suites/test_theory_bars.py shows each bar failing
its wrong learner and passing the theorem's value. Every claim reads only the seeds that learnt (`LEARNT`),
and is untested where none did.
"""

from __future__ import annotations

import statistics
from typing import Any

from icgd.claims.base import Claim, PremiseNotMet, suite
from icgd.sources.theory import keys as X
from icgd.sources.theory.references import REFERENCES

PRECOND, ISO, NONLIN, RIDGE = "theory-preconditioner", "theory-isotropic", "theory-nonlinear", "theory-ridge"
NOISE = "theory-noise"
PROBES = "theory-probes"

#: the premise: a seed learnt where its held-out loss is below this fraction of the zero predictor's. An untrained layer
#: predicts about 0 (ratio 1); the optimal one layer reaches 1 - N/(N + d + 1) <= 0.69 at every (N, d) here
#: (isotropic, linear targets), 0.35 on the tanh targets and 0.21 on the condition-16 covariance (the
#: closed forms' losses over the zero predictor's), so a tenth below the plateau tells one that learnt.
LEARNT = 0.9

#: the bars, argued from wrong learners before the runs (the same in quick and full mode, so that a verdict
#: means the same statement in both; full mode trains four times longer):
#: - PRECOND_DISTANCE: the Sigma-blind learners sit far from P* for condition 16 (N = 20, d = 5): the
#:   Frobenius-closest multiple of I at 0.52, the line-searched GD step at 0.78, Sigma^-1 at 1.28, an untrained
#:   layer at 1; 0.1 is a fifth of the nearest.
#: - PRECOND_GAP: the line-searched scalar GD step's loss is 51 % above P*'s, the zero predictor's 380 %; 0.02
#:   is a twenty-fifth of the nearest.
#: - ISO_DISTANCE: the step N / (N + d), which drops the fourth-moment term of Gaussian inputs, is at 0.022 to
#:   0.067 of N / (N + d + 1) over the four settings (0.067 at N = 5, d = 10); a unit step at 1.1 to 2.2;
#:   0.05 fails the first at its worst setting (the measure is the worst setting).
#: - NONLIN_GAP: on tanh targets two tuned GD steps are 24 % below one, the zero predictor 180 % above; 0.02.
#: - NONLIN_DISTANCE: a preconditioner that is not a multiple of I, as P* of the condition-16 covariance, is
#:   at 0.5 or more from the closest scalar step; 0.1.
#: - NOISE_DISTANCE: with label noise std 2 the noiseless P* is 0.39 from P* with the noise term (and the
#:   Sigma-blind learners farther); 0.1, as PRECOND_DISTANCE.
#: - RIDGE_RATIO: SPD to Bayes ridge over SPD to GD with as many steps as layers; 1 is "as close to one as to
#:   the other", the definition of the claims' "closer"; GD itself gives infinity, ridge 0.
#: - PROBE_MARGIN: the trained model's best-layer R^2 of a linear probe minus the better control's. The
#:   controls against themselves give 0; hidden states that hold the whole context but compute nothing (the
#:   raw tokens) give linear R^2 -0.02 for both targets, states that hold only the query and the prediction
#:   -0.01 (X^T Y is bilinear in the data, w_OLS nonlinear); a state holding w_OLS reads X^T Y at 0.655 and
#:   one holding X^T Y reads w_OLS at 0.655 (Dx = 4, N = 10; tests/suites/test_theory_bars.py). 0.5: half of
#:   the target's variance made linearly readable beyond the controls, which the states that compute nothing
#:   are far from and the algorithm's own quantities pass. A two-layer MLP probe is reported, not claimed:
#:   from the raw tokens it reads X^T Y at 0.885 and w_OLS at 0.48 without any computation.
PRECOND_DISTANCE, PRECOND_GAP, ISO_DISTANCE, NONLIN_GAP, NONLIN_DISTANCE = 0.1, 0.02, 0.05, 0.02, 0.1
PROBE_MARGIN = 0.5
RIDGE_RATIO = 1.0
NOISE_DISTANCE = 0.1


def _learnt_values(r: dict[str, Any], exp: str, key: str, learnt: str = X.LEARNT_SEEDS) -> list[float]:
    """The values of `key` (one per seed) of the seeds of `exp` that learnt (loss below LEARNT of the zero
    predictor's); PremiseNotMet where none did. A seed that learnt nothing is no evidence either way; a seed
    that learnt but stalled short of the optimum is read, and counts against the claim."""
    ratios, values = r[exp][learnt], r[exp][key]
    kept = [v for v, x in zip(values, ratios) if x < LEARNT]
    if not kept:
        raise PremiseNotMet(f"no seed learnt (loss / zero predictor's {', '.join(f'{x:.3f}' for x in ratios)}, "
                            f"premise < {LEARNT})")
    return kept


def _median_of_learnt(exp: str, key: str, learnt: str):
    def measure(r: dict[str, Any]) -> float:
        return float(statistics.median(_learnt_values(r, exp, key, learnt)))
    return measure


def _seeds_read(exp: str, learnt: str):
    def values(r: dict[str, Any]) -> dict[str, float]:
        ratios = r[exp][learnt]
        return {"seeds read (learnt)": sum(x < LEARNT for x in ratios), "seeds that learnt nothing":
                sum(not x < LEARNT for x in ratios)}
    return values


def _claim(exp: str, key: str, learnt: str = X.LEARNT_SEEDS, op: str = "<", **kw: Any) -> Claim:
    """A claim on the median over the seeds of `exp` that learnt (per-seed key `learnt`) of the per-seed values
    `key`."""
    return Claim(experiment=exp, measure=_median_of_learnt(exp, key, learnt), op=op,
                 per_seed=lambda r: _learnt_values(r, exp, key, learnt), values=_seeds_read(exp, learnt), **kw)


@suite("theory", references=REFERENCES)
def theory() -> list[Claim]:
    return [
        _claim(PRECOND, X.PRECOND_DISTANCE_SEEDS, id="precond-matches-closed-form",
               source="Zhang, Frei, Bartlett 2024; Ahn et al. 2023",
               claim="on x ~ N(0, Sigma), condition 16, the trained layer's preconditioner is P* = ((1 + 1/N) Sigma "
                     "+ tr(Sigma)/N I)^-1: relative Frobenius distance, median over the seeds that learnt",
               threshold=PRECOND_DISTANCE,
               why="the theorem's distance is 0; the Sigma-blind learners sit at 0.52 (closest scalar) to 1.28 "
                   "(Sigma^-1), an untrained layer at 1: 0.1 is a fifth of the nearest"),
        _claim(PRECOND, X.PRECOND_GAP_SEEDS, id="precond-loss-equals-closed-form", source="Zhang, Frei, Bartlett 2024",
               claim="the trained layer's held-out loss over the closed form's, minus 1, median over the seeds that "
                     "learnt",
               threshold=PRECOND_GAP,
               why="0 at the optimum; the line-searched scalar GD step is 51 % above, the zero predictor 380 %: "
                   "0.02 is a twenty-fifth of the nearest"),
        _claim(NOISE, X.NOISE_DISTANCE_SEEDS, id="noise-term-in-preconditioner", source="Zhang, Frei, Bartlett 2024",
               claim="with label noise (std 2) on the condition-16 covariates, the trained layer's preconditioner is "
                     "P* with the noise term, ((1 + 1/N) Sigma + (tr(Sigma) + s^2)/N I)^-1: relative Frobenius "
                     "distance, median over the seeds that learnt",
               threshold=NOISE_DISTANCE,
               why="0 at the optimum; the noiseless P* (a learner blind to the noise) is 0.39 away: 0.1"),
        _claim(ISO, X.ISO_DISTANCE_SEEDS, id="iso-step-is-n-over-n-plus-d-plus-1",
               source="Zhang, Frei, Bartlett 2024; Mahankali et al. 2024",
               claim="Sigma = I: the trained preconditioner is N / (N + d + 1) I at (N, d) = (10, 10), (20, 5), "
                     "(40, 5), (5, 10): the worst setting's relative distance, median over the seeds that learnt "
                     "in every setting",
               threshold=ISO_DISTANCE,
               why="the step N / (N + d), which drops Gaussian inputs' fourth-moment term, is at 0.067 in the "
                   "worst setting, a unit step at 1.1 or more: 0.05 fails both"),
        _claim(NONLIN, X.NONLIN_GAP_SEEDS, id="nonlinear-loss-is-one-gd-step", source="Mahankali et al. 2024",
               claim="on y = tanh(w^T x), |the trained layer's loss over one line-searched GD step's - 1|, median "
                     "over the seeds that learnt",
               threshold=NONLIN_GAP,
               why="0 at the optimum; two tuned GD steps (one step too many) are 24 % off, the zero predictor "
                   "180 %: 0.02"),
        _claim(NONLIN, X.NONLIN_DISTANCE_SEEDS, id="nonlinear-step-is-scalar-gd", source="Mahankali et al. 2024",
               claim="on y = tanh(w^T x), the trained preconditioner's relative distance to the line-searched GD "
                     "step eta I, median over the seeds that learnt",
               threshold=NONLIN_DISTANCE,
               why="0 at the optimum (the minimiser is plain GD); a preconditioner like P* of a condition-16 "
                   "covariance is 0.5 or more from any multiple of I: 0.1"),
        _claim(RIDGE, X.RIDGE_RATIO_DEEP_SEEDS, X.RIDGE_LEARNT_DEEP_SEEDS, id="ridge-closer-than-gd-deep-noisy",
               source="Akyuerek et al. 2023",
               claim="with label noise (std 1) the 4-layer stack's predictions are closer to Bayes ridge than to "
                     "4 tuned GD steps: SPD to ridge over SPD to GD, median over the seeds that learnt",
               threshold=RIDGE_RATIO,
               why="1 is equally close to both; 4 GD steps themselves give infinity, ridge 0"),
        _claim(RIDGE, X.RIDGE_RATIO_SHALLOW_SEEDS, X.RIDGE_LEARNT_SHALLOW_SEEDS, op=">",
               id="gd-closer-than-ridge-one-layer-noisy", source="Akyuerek et al. 2023; von Oswald et al. 2023",
               claim="with label noise (std 1) one layer's predictions are closer to one tuned GD step than to "
                     "Bayes ridge: SPD to ridge over SPD to GD, median over the seeds that learnt",
               threshold=RIDGE_RATIO,
               why="where the move toward ridge starts: 1 is equally close to both; ridge itself gives 0, one GD "
                   "step infinity"),
        _claim(PROBES, X.PROBE_MARGIN_SEEDS[("linear", "xty")], op=">", id="probe-reads-xty",
               source="Akyuerek et al. 2023 (Fig. 4)",
               claim="a linear probe reads X^T Y from the trained decoder's query token (best layer, held-out R^2) "
                     "better than from the untrained model's or the fixed-teacher model's: the margin, median over "
                     "the seeds that learnt",
               threshold=PROBE_MARGIN,
               why="the controls give 0, states that hold the context or the prediction but compute nothing about "
                   "-0.02, a state holding w_OLS 0.655: 0.5, half the variance"),
        _claim(PROBES, X.PROBE_MARGIN_SEEDS[("linear", "w_ols")], op=">", id="probe-reads-least-squares-weights",
               source="Akyuerek et al. 2023 (Fig. 4)",
               claim="a linear probe reads the least-squares weights w_OLS from the trained decoder's query token "
                     "(best layer, held-out R^2) better than from either control: the margin, median over the seeds "
                     "that learnt",
               threshold=PROBE_MARGIN,
               why="the controls give 0, states that hold the context or the prediction but compute nothing about "
                   "-0.02, a state holding X^T Y 0.655: 0.5, half the variance"),
    ]
