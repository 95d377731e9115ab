"""Source 000, von Oswald et al. 2023, "Transformers learn in-context by gradient descent": one module
per figure family, each registering its experiments on import.

| module | experiments | figures |
|---|---|---|
| `one_layer` | oswald-1layer, oswald-interpolation | Fig. 2 left, Fig. 9; A.3 |
| `ood` | oswald-ood | Fig. 2 right, Fig. 6 |
| `repeat` | oswald-repeat | Fig. 1, Fig. 10 (A.6) |
| `deep` | oswald-deep | Fig. 3, 7, 8 (A.2, A.3) |
| `curvature` | oswald-curvature | Fig. 13 (A.10) |
| `softmax` | oswald-softmax | Fig. 11, 12, 14 (A.9) |
| `phase` | oswald-phase | Fig. 15 (A.11) |
| `fixed_data` | oswald-fixed-data | Fig. 15 right, Fig. 16 (A.11, A.12) |
| `depth` | oswald-depth | Fig. 7, 8 (A.5) |
| `sine` | oswald-sine, oswald-sine-code | Fig. 4 |
| `copy` | oswald-copy | Fig. 5 (Prop. 3) |

`keys` holds the result keys the claims read (`icgd.sources.oswald.claims`), `shared` what several families share.
Unless an experiment says otherwise: Dx = N = 10, Dy = 1, x ~ U(-1, 1) (the paper's text; `oswald-1layer`
also trains with the official code's U(-0.5, 0.5)), batch 2048 of fresh tasks, Adam, and evaluation on
held-out tasks that are the same for every learner.
"""

from icgd.experiments.catalog import Source, register_source

SOURCE = register_source(Source(
    name="oswald", number="000",
    title="von Oswald et al. 2023, 'Transformers learn in-context by gradient descent'",
    suites=("oswald", "oswald-nonlinear", "oswald-sine-text", "oswald-copy"), docs="sources/oswald.md",
    notes="notes.md"))

from icgd.sources.oswald import (  # noqa: F401,E402  (importing registers the experiments and suites)
    claims,
    claims_nonlinear,
    copy,
    curvature,
    deep,
    depth,
    fixed_data,
    keys,
    one_layer,
    ood,
    phase,
    repeat,
    shared,
    sine,
    softmax,
)
