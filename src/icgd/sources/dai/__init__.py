"""Source 003, Dai et al., "Why can GPT learn in-context? Language models implicitly perform gradient descent
as meta-optimizers": in-context learning as implicit finetuning in a real pretrained language model (its
momentum attention, sec. 4, is the source `icgd.sources.momentum`). One module per study, each registering
its experiment on import.

| module | experiment | tables |
|---|---|---|
| `icl_vs_ft` | dai-icl-vs-ft | ZSL, ICL and K/V finetuning on the same queries: accuracy, Rec2FTP, SimAOU, SimAM, Kendall (Tables 2-5), and the critics' controls (`controls`: the untrained model, layer-causal GD, the order of the demonstrations) |
| `premise` | dai-premise | ZSL vs ICL accuracy over demonstration seeds, per model and data set: which model learns in context (Table 1's premise) |

`study` is the whole comparison of one model on one data set (`compare`), `premise_study` the premise alone;
`keys` holds the result keys the claims read (`claims`). Our choices where the source is silent or its numbers
are lost (stated in the docs): the model (Gemma-3-270M by default, the smallest packaged model that learns in
context on both data sets, `dai-premise`; `--model` picks another; in Python, options={"model": ...} takes a
name, a path or an already-loaded `icgd.lm.models.LM`), the data sets that ship in packages (BBC News topics;
full mode adds the tweets), the learning-rate grids, a separate test split for the reported numbers (the
source selected on the reported examples).
"""

from icgd.experiments.catalog import Source, register_source

SOURCE = register_source(Source(
    name="dai", number="003",
    title="Dai et al. 2023, 'Why can GPT learn in-context?': ICL as implicit finetuning",
    suites=("dai",), docs="sources/dai.md"))

from icgd.sources.dai import claims, icl_vs_ft, keys, premise  # noqa: F401,E402  (importing registers the experiments and suites)
