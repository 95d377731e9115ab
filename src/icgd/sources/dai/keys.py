"""The result keys that the claims of the ICL-vs-finetuning study read (`icgd.sources.dai.claims`)."""

import math

#: dai-icl-vs-ft: the measures of each data set ("{dataset}.{key}") and their mean over data sets
#: ("mean.{key}"), the chosen demonstration seed's numbers
KEYS = ("zsl_accuracy", "icl_accuracy", "ft_accuracy", "rec2ftp", "simaou_ft", "simaou_random",
        "simaou_random_normal", "simam_before", "simam_after", "kendall_ft", "kendall_random",
        "kendall_ft_example", "kendall_random_example")
#: the critics' controls (`icgd.sources.dai.controls`), on the chosen seed's demonstrations, with bootstrap
#: replicates like KEYS: each measure's margin trained - untrained model ("{measure}_margin"); SimAOU (ICL,
#: LCGD) minus SimAOU (ICL, FT); the order study's ICL spread minus full-batch GD's, ICL's spread over
#: one-pass SGD's, and full-batch GD's spread. Absent where a control is off
CONTROL_KEYS = ("simaou_margin", "simam_margin", "kendall_margin", "rec2ftp_margin", "simaou_lcgd_minus_ft",
                "order_icl_minus_gd", "order_icl_over_sgd", "order_gd_spread")
#: the mean over the data sets where the premises hold (`PREMISE_KEPT`); absent where they hold on none
MEAN = "mean.{key}"
DATASET = "{dataset}.{key}"
#: the premise, per data set: ICL accuracy averaged over the demonstration seeds minus ZSL accuracy, on the
#: test queries ("{dataset}.premise"), its bootstrap interval ("{dataset}.premise_interval"); the data sets
#: run, and those where the interval lies above zero, which the comparison claims average over
PREMISE = "premise"
PREMISE_INTERVAL = "premise_interval"
#: FT's premise, per data set: the chosen seed's FT accuracy minus that of the best constant answer (the most
#: frequent label of the test queries, "{dataset}.guess_accuracy"), and its bootstrap interval
FT_PREMISE = "ft_premise"
FT_PREMISE_INTERVAL = "ft_premise_interval"
DATASETS = "datasets"
#: the data sets where both premises hold (ICL beats ZSL, FT beats the best constant answer)
PREMISE_KEPT = "premise.kept"
#: bootstrap replicates ({key: [values]}) of every MEAN key and of each data set's premise inputs
#: ("{dataset}.icl_accuracy_mean", "{dataset}.zsl_accuracy", "{dataset}.ft_accuracy", "{dataset}.guess_accuracy")
BOOTSTRAP = "bootstrap"


def lowered(before: float, after: float) -> bool:
    """Whether a finetuning converged on its demonstrations: its loss there ends finite and no higher than it
    began (FT's rate grid, `study.select_lr`; LCGD's rate, `controls.lcgd_control`; the untrained model's FT,
    whose claims are untested where it did not)."""
    return bool(math.isfinite(after) and after <= before)
