"""Source 002, categorical in-context learning with kernel attention: one module per figure family,
each registering its experiments on import.

| module | experiment | figures |
|---|---|---|
| `gd_vs_tf` | categorical-gd-vs-tf | the GD model against the Trained TF for each kernel: MSE, agreement, curves, maps (Fig. 2, 3, 6-9) |
| `heads` | categorical-heads | the Trained TF with 1-4 softmax heads against the 1-head GD model (Fig. 4 left) |
| `context` | categorical-context | softmax trained at N = 20 applied at N = 5 .. 160, RBF with and without the 1/N rescaled (Fig. 4 right) |
| `depth` | categorical-depth | exponential against softmax attention with 1 to 3 (full 4) layers: stability (the source's text) |
| `templates` | categorical-templates | the GD model of every kernel on XOR-like and near-linear templates (Fig. 3, 7) |
| `fewshot` | categorical-fewshot | 3-way 10-shot classification of held-out classes from real features (Fig. 5) |

`keys` holds the result keys the claims read (`icgd.sources.categorical.claims`), `shared` the task, configs and
scores the families share. Our choices where the source is silent or its numbers are lost (stated in the
docs): N = 20 context points, 8 random queries per training task, batches of 512 fresh tasks, Adam 1e-3 (the
authors' code), 1000 (quick) / 5000 (full) steps (the GD model: Adam 1e-2, 1000 / 5000 steps); scores are
the MSE over all C categories against the true probabilities.
"""

from icgd.experiments.catalog import Source, register_source

SOURCE = register_source(Source(
    name="categorical", number="002",
    title="'Transformer In-Context Learning for Categorical Data' (kernel attention, categorical outcomes)",
    suites=("categorical",), docs="sources/categorical.md"))

from icgd.sources.categorical import (  # noqa: F401,E402  (importing registers the experiments and suites)
    claims,
    context,
    depth,
    fewshot,
    gd_vs_tf,
    heads,
    keys,
    shared,
    templates,
)
