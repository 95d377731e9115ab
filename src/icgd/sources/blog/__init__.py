"""Source 001, the replication study of Rossi, Yuan and Hannagan (ICLR 2024 blog post): one module
per figure family, each registering its experiments on import.

| module | experiment | what it measures |
|---|---|---|
| `eta` | blog-eta | the analytic optimal eta of one GD step against a line search (values, CIs, times), the loss as a function of eta, the implicit eta of trained LSA layers |
| `dampening` | blog-dampening | a trained layer applied 50 times with dampening lambda = 0.7 against GD with eta * lambda |
| `lstm` | blog-lstm | LSTM and BiLSTM learners of 1 to 4 layers against the 1-layer LSA and one GD step |
| `scaling` | blog-scaling | the test loss of trained LSA models against the context size N and the depth, beside GD |

`keys` holds the result keys the claims read (`icgd.sources.blog.claims`). Inputs x ~ U(-1, 1) unless stated (the
source does not state its range; `blog-eta` also reports the official code's U(-0.5, 0.5)). Models shared
with the oswald-* experiments use the same configs, so a shared cache (`--cache`) trains them once.
"""

from icgd.experiments.catalog import Source, register_source

SOURCE = register_source(Source(
    name="blog", number="001",
    title="Rossi, Yuan and Hannagan 2024, 'Understanding in-context learning in transformers' (ICLR blog post)",
    suites=("blog",), docs="sources/blog.md",
    notes="notes.md"))

from icgd.sources.blog import claims, dampening, eta, keys, lstm, scaling  # noqa: F401,E402  (importing registers the experiments and suites)
