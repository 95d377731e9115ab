"""The result keys that the claims of the momentum-attention studies read (`icgd.sources.momentum.claims`)."""

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
#: premise holds
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
