"""The authors' number for each claim of the template suite, or why there is none (`Reference`)."""

from __future__ import annotations

from icgd.claims.references import Reference

#: {claim id: Reference}; a claim not listed has no reference
REFERENCES: dict[str, Reference] = {
    "gd-step-halves-loss": Reference(
        0.491, "derived: source 000's code draws GD's loss as a line at 0.2047 (normal_token_construct.ipynb, "
               "cell 8), over the zero predictor's loss E[y^2] / 2 = 10 x (1/12) / 2 = 0.4167 for w ~ N(0, I) "
               "and x ~ U(-0.5, 0.5) in 10 dimensions"),
}
