"""The papers' value of each claim of the theory suite: here the theorems' exact values (a distance or a gap of
0 at the optimum), where each is stated. No paper prints a measured distance that could stand in for them."""

from __future__ import annotations

from icgd.claims.references import Reference

ZFB = ("Zhang, Frei and Bartlett 2024 (JMLR), main theorem: one LSA layer trained by gradient flow from a small "
       "init on x ~ N(0, Sigma), w ~ N(0, I) converges to one step of preconditioned GD with "
       "P* = ((1 + 1/N) Sigma + tr(Sigma)/N I)^-1 (so the distance and the loss gap are 0)")
MAHANKALI = ("Mahankali, Hashimoto and Ma 2024 (ICLR): for x ~ N(0, I) the minimiser of the one-layer loss is "
             "one step of GD on the least-squares objective, also for nonlinear responses")

AKYUREK = ("Akyuerek et al. 2023 (ICLR), sec. 4: with depth and noise the trained models' predictions match ridge "
           "regression's, one-layer models' match one GD step's; a figure of prediction differences, no number "
           "readable offline")

AKYUREK_PROBES = ("Akyuerek et al. 2023 (ICLR), sec. 5, Fig. 4 (d = 4): probes recover X^T Y and w_OLS from the "
                  "trained learner's late layers far better than on the fixed-teacher control task (dashed lines); "
                  "a figure of probe errors, no number readable offline")

#: {claim id: Reference}
REFERENCES: dict[str, Reference] = {
    "precond-matches-closed-form": Reference(0.0, ZFB),
    "precond-loss-equals-closed-form": Reference(0.0, ZFB),
    "noise-term-in-preconditioner": Reference(0.0, ZFB + "; label noise of variance s^2 adds s^2 / N to the ridge "
                                                  "term (the second moment of (1/N) X^T y gains s^2/N Sigma)"),
    "iso-step-is-n-over-n-plus-d-plus-1": Reference(0.0, ZFB + "; for Sigma = I, P* = N / (N + d + 1) I"),
    "nonlinear-loss-is-one-gd-step": Reference(0.0, MAHANKALI),
    "nonlinear-step-is-scalar-gd": Reference(0.0, MAHANKALI),
    "ridge-closer-than-gd-deep-noisy": Reference(None, AKYUREK),
    "gd-closer-than-ridge-one-layer-noisy": Reference(None, AKYUREK),
    "probe-reads-xty": Reference(None, AKYUREK_PROBES),
    "probe-reads-least-squares-weights": Reference(None, AKYUREK_PROBES),
}
