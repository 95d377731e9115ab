"""Source 003, Dai et al., sec. 4: momentum attention, an attention that adds an exponential moving average
of the values, against vanilla attention, in small models trained from scratch. One module per study, each
registering its experiment on import.

| module | experiment | what it measures |
|---|---|---|
| `language` | dai-momentum | vanilla against momentum attention in small subword LMs: perplexity at three lengths and in-context accuracy where the premise holds, with intervals (Tables 6-7) |
| `regression` | momentum-regression | vanilla against momentum attention on in-context linear regression, beside one tuned GD step: the premise, then the relative-loss difference with an interval |
| `bursty` | momentum-fewshot | vanilla against momentum attention on few-shot classification of symbols in bursty sequences (Chan et al. 2022): the premise, then the query-accuracy difference with an interval |
| `recall` | momentum-recall | vanilla against momentum attention on multi-query associative recall, where small models learn in context: the premise, then the accuracy difference with an interval (Table 7's claim) |
| `beta` | momentum-beta | momentum's beta on recall and bursty few-shot: vanilla, fixed beta 0.1..0.9, beta learnt per head, each against vanilla with an interval |

`paired` holds what the three synthetic studies share: scoring both models per seed and item, the paired
bootstrap, the per-seed figure; `scratch` the in-context accuracy and perplexity of an LM trained from
scratch; `keys` the result keys the claims read (`claims`).
"""

from icgd.experiments.catalog import Source, register_source

SOURCE = register_source(Source(
    name="momentum", number="003",
    title="Dai et al. 2023, 'Why can GPT learn in-context?', sec. 4: momentum attention",
    suites=("momentum",), docs="sources/momentum.md"))

from icgd.sources.momentum import (  # noqa: F401,E402  (importing registers the experiments and suites)
    beta,
    bursty,
    claims,
    keys,
    language,
    recall,
    regression,
)
