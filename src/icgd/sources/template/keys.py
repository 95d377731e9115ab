"""The result keys that the template's claims read (`claims`), as named constants."""

#: one GD step's loss over the zero predictor's, on held-out tasks: per evaluation seed, and their median
GD_OVER_ZERO_SEEDS = "gd_over_zero_seeds"
GD_OVER_ZERO_MEDIAN = "gd_over_zero_median"
#: the largest prediction difference between the Prop. 1 transformer and the GD step, over the seeds (reported:
#: it holds by construction, so no claim reads it)
CONSTRUCTION_GAP_MAX = "construction_gap_max"
