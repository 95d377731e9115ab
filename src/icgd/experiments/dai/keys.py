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
#: dai-momentum, per evaluation length n ("ppl{n}.{key}": vanilla, momentum (perplexities), ratio (momentum /
#: vanilla), ratio_interval, seed_ratios); the worst length's ratio and its replicates
PPL_AT = "ppl{n}.{key}"
PPL_WORST_RATIO = "ppl.worst_ratio"
PPL_BOOTSTRAP = "ppl.bootstrap"
#: dai-momentum's in-context accuracy, per data set d ("icl.{d}.{key}": zsl_vanilla, icl_vanilla, zsl_momentum,
#: icl_momentum, premise (vanilla ICL minus ZSL), premise_interval, difference (momentum minus vanilla ICL),
#: difference_interval); the data sets, those where the premise holds, the premise's worst data set, the
#: difference's mean over the kept ones (absent where none is), their replicates
ICL_AT = "icl.{d}.{key}"
ICL_DATASETS = "icl.datasets"
ICL_KEPT = "icl.kept"
ICL_PREMISE = "icl.premise"
ICL_DIFFERENCE = "icl.difference"
ICL_BOOTSTRAP = "icl.bootstrap"
#: the weaker claim kept beside the source's: per data set d, the upper 95% bound of momentum's ICL accuracy
#: minus vanilla's (pooled over seeds); claim momentum-keeps-icl takes the worst over the data sets where the
#: premise holds (the worst over all of them, "icl.worst_difference_upper95", is no longer written)
ICL_DIFFERENCE_UPPER95_AT = "{d}.icl_difference_upper95"
#: momentum-recall, momentum-regression and momentum-fewshot (`paired.summarize`): per setting n
#: ("recall{n}.{key}", "regression{n}.{key}", "fewshot{n}.{key}": vanilla, momentum, their per-seed lists, difference (momentum better: above 0),
#: difference_interval, premise, premise_interval; recall adds chance, regression the GD reference, fewshot the guess's accuracy); the
#: settings run, those where the premise holds and, of recall and fewshot, those where vanilla scores every item
#: right (at_ceiling: left out of the comparison too); the premise's worst setting; the comparison (mean over the
#: kept settings); bootstrap replicates of the last two
RECALL_SETTING = "recall{n}.{key}"
RECALL_SETTINGS = "recall.settings"
RECALL_KEPT = "recall.kept"
RECALL_AT_CEILING = "recall.at_ceiling"
RECALL_PREMISE = "recall.premise"
RECALL_DIFFERENCE = "recall.difference"
RECALL_BOOTSTRAP = "recall.bootstrap"
REGRESSION_SETTING = "regression{n}.{key}"
REGRESSION_SETTINGS = "regression.settings"
REGRESSION_KEPT = "regression.kept"
REGRESSION_PREMISE = "regression.premise"
REGRESSION_DIFFERENCE = "regression.difference"
REGRESSION_BOOTSTRAP = "regression.bootstrap"
FEWSHOT_SETTING = "fewshot{n}.{key}"
FEWSHOT_SETTINGS = "fewshot.settings"
FEWSHOT_KEPT = "fewshot.kept"
FEWSHOT_AT_CEILING = "fewshot.at_ceiling"
FEWSHOT_PREMISE = "fewshot.premise"
FEWSHOT_DIFFERENCE = "fewshot.difference"
FEWSHOT_BOOTSTRAP = "fewshot.bootstrap"
#: momentum-fewshot's models trained on the bursty sequences alone, without the warm start (full mode): the
#: query accuracy of each ("fewshot{n}.scratch_vanilla", "fewshot{n}.scratch_momentum"), reported, not claimed
FEWSHOT_SCRATCH = "fewshot{n}.scratch_{model}"
