"""The sources: each paper icgd reproduces is one package here, holding its experiments, the result keys its
claims read, its claims and the authors' numbers they are calibrated on, and its set-up notes.

| package | source | suites |
|---|---|---|
| `oswald` | 000: von Oswald et al. 2023, "Transformers learn in-context by gradient descent" | oswald, oswald-nonlinear, oswald-sine-text, oswald-copy |
| `blog` | 001: Rossi, Yuan and Hannagan, the replication study (ICLR 2024 blog post) | blog |
| `categorical` | 002: categorical in-context learning with kernel attention | categorical |
| `dai` | 003: Dai et al. 2023, ICL as implicit finetuning in pretrained LMs | dai |
| `momentum` | 003: Dai et al. 2023, momentum attention (sec. 4) | momentum |
| `theory` | 004: the exact one-layer predictions (Zhang, Frei and Bartlett 2024; Ahn et al. 2023; Mahankali et al. 2024) | theory |

Adding a source is one new package (copy `template/`) and its name in `SOURCES` below; docs/add-a-source.md
says what to copy and what the conformance tests then check. No source imports another
(an import-linter contract); what two sources share lives on the floors below (`icgd.experiments`,
`icgd.claims`, `icgd.lm`, ...). `icgd.experiments.catalog.load_sources` imports them.
"""

#: the source packages of this repository, in the order the docs number them
SOURCES = ("oswald", "blog", "categorical", "dai", "momentum", "theory", "template")
