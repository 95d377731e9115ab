"""Source 003, Dai et al., "Why can GPT learn in-context?" (SPEC 6): in-context learning as implicit
finetuning in a real pretrained language model, and momentum attention. One module per study, each
registering its experiment on import.

| module | experiment | tables |
|---|---|---|
| `icl_vs_ft` | dai-icl-vs-ft | ZSL, ICL and K/V finetuning on the same queries: accuracy, Rec2FTP, SimAOU, SimAM, Kendall (Tables 2-5) |
| `premise` | dai-premise | ZSL vs ICL accuracy over demonstration seeds, per model and data set: which model learns in context (Table 1's premise) |
| `momentum` | dai-momentum | vanilla against momentum attention in small subword LMs: perplexity at three lengths and in-context accuracy where the premise holds, with intervals (Tables 6-7) |
| `regression` | momentum-regression | vanilla against momentum attention on in-context linear regression, beside one tuned GD step: the premise, then the relative-loss difference with an interval |
| `bursty` | momentum-fewshot | vanilla against momentum attention on few-shot classification of symbols in bursty sequences (Chan et al. 2022): the premise, then the query-accuracy difference with an interval |
| `beta` | momentum-beta | momentum's beta on recall and bursty few-shot: vanilla, fixed beta 0.1..0.9, beta learnt per head, each against vanilla with an interval |
| `recall` | momentum-recall | vanilla against momentum attention on multi-query associative recall, where small models learn in context: the premise, then the accuracy difference with an interval (Table 7's claim) |

`paired` holds what the three synthetic studies share: scoring both models per seed and item, the paired bootstrap, the per-seed figure. `keys` holds the result keys the claims read (`icgd.claims.dai`). Our choices where the source is silent or
its numbers are lost (stated in the docs): the model (Gemma-3-270M by default, the smallest packaged model
that learns in context on both data sets, `dai-premise`; `--model` picks another; in Python,
options={"model": ...} takes a name, a path or an already-loaded `icgd.lm.models.LM`), the data sets that
ship in packages (BBC News topics; full mode adds the tweets), the learning-rate grids, a
separate test split for the reported numbers (the source selected on the reported examples).
"""

from icgd.experiments.dai import beta, bursty, icl_vs_ft, keys, momentum, premise, recall, regression  # noqa: F401  (importing registers the experiments)
