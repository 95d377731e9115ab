"""The result keys the claims of source 003 read (`icgd.claims.dai`), as named constants."""

#: dai-icl-vs-ft: the measures of each data set ("{dataset}.{key}") and their mean over data sets
#: ("mean.{key}"), the chosen demonstration seed's numbers
KEYS = ("zsl_accuracy", "icl_accuracy", "ft_accuracy", "rec2ftp", "simaou_ft", "simaou_random",
        "simaou_random_normal", "simam_before", "simam_after", "kendall_ft", "kendall_random",
        "kendall_ft_example", "kendall_random_example")
#: the mean over the data sets where the premise holds (`PREMISE_KEPT`); absent where it holds on none
MEAN = "mean.{key}"
DATASET = "{dataset}.{key}"
#: the premise, per data set: ICL accuracy averaged over the demonstration seeds minus ZSL accuracy, on the
#: test queries ("{dataset}.premise"), its bootstrap interval ("{dataset}.premise_interval"); the data sets
#: run, and those where the interval lies above zero, which the comparison claims average over
PREMISE = "premise"
PREMISE_INTERVAL = "premise_interval"
DATASETS = "datasets"
PREMISE_KEPT = "premise.kept"
#: bootstrap replicates ({key: [values]}) of every MEAN key and of each data set's premise inputs
#: ("{dataset}.icl_accuracy_mean", "{dataset}.zsl_accuracy")
BOOTSTRAP = "bootstrap"
#: dai-momentum: momentum over vanilla validation perplexity, the worst seed at the worst of the three
#: lengths ("ppl{n}.worst_seed_ratio" at length n); the worst data set's upper 95% bound of momentum's ICL
#: accuracy minus vanilla's (pooled over seeds)
PPL_WORST_RATIO = "ppl.worst_seed_ratio"
PPL_WORST_RATIO_AT = "ppl{n}.worst_seed_ratio"
ICL_WORST_DIFFERENCE_UPPER95 = "icl.worst_difference_upper95"
#: momentum-recall: per number of pairs N ("recall{n}.{key}": vanilla, momentum, their per-seed lists, chance,
#: vanilla_low (the premise's lower 95% end), difference, difference_interval); the settings run and those where
#: the premise holds; the premise measure (worst setting's vanilla accuracy / chance); the comparison (momentum
#: minus vanilla accuracy, mean over the kept settings); bootstrap replicates of the last two
RECALL_SETTING = "recall{n}.{key}"
RECALL_SETTINGS = "recall.settings"
RECALL_KEPT = "recall.kept"
RECALL_PREMISE = "recall.premise_over_chance"
RECALL_DIFFERENCE = "recall.difference"
RECALL_BOOTSTRAP = "recall.bootstrap"
