"""The template suite: one claim, a statement of the paper that a wrong learner fails.

Each row names its experiment and the result key it reads; its bar is argued in `why`, written before any
run. The claim's bar passes on the authors' number (0.491, `references`) and fails a learner that takes one
GD step too few (zero steps: the zero predictor, ratio 1).
"""

from __future__ import annotations

from icgd.claims.base import Claim, suite
from icgd.sources.template import keys as X
from icgd.sources.template.references import REFERENCES

EXP = "template-gd-step"


@suite("template", references=REFERENCES)
def template() -> list[Claim]:
    return [
        Claim(id="gd-step-halves-loss", source="Fig. 2 (GD's line)", experiment=EXP,
              claim="one line-searched GD step's loss over the zero predictor's, median over seeds",
              measure=lambda r: r[EXP][X.GD_OVER_ZERO_MEDIAN], op="<", threshold=0.6,
              per_seed=lambda r: r[EXP][X.GD_OVER_ZERO_SEEDS],
              why="one GD step roughly halves the loss at N = Dx = 10 (the authors' 0.2047 over 0.4167: 0.49); "
                  "0.6 leaves room for the sampling of tasks and fails zero steps (ratio 1)"),
    ]
