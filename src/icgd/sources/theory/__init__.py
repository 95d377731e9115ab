"""Source 004: the exact predictions of the theory that followed source 000.

Four results predict what a trained linear self-attention (LSA) computes:

- Zhang, Frei and Bartlett (JMLR 2024) and Ahn, Cheng, Daneshmand and Sra (NeurIPS 2023): on covariates
  x ~ N(0, Sigma) with teachers w ~ N(0, I), gradient flow from a small init converges to one step of
  preconditioned GD with P = ((1 + 1/N) Sigma + tr(Sigma)/N I)^-1 (`icgd.learners.preconditioned`); for
  Sigma = I in d dimensions, the scalar step N / (N + d + 1).
- Mahankali, Hashimoto and Ma (ICLR 2024): the optimal one layer is one step of GD on the least-squares
  objective even when the targets are a nonlinear function of x.
- Akyuerek et al. (ICLR 2023): with depth and label noise, trained models move from GD toward ridge regression,
  and a trained transformer's hidden states hold X^T Y and the least-squares weights (probes).

| module | what it holds |
|---|---|
| `keys.py` | the result keys that the claims read |
| `preconditioner.py` | the experiments `theory-preconditioner`, `theory-isotropic`, `theory-nonlinear` |
| `ridge.py` | `theory-ridge`: LSA stacks between GD and ridge over depth and noise (Akyuerek et al. 2023) |
| `probes.py` | `theory-probes`: probes of a trained regression transformer's hidden states (Akyuerek et al. 2023) |
| `references.py` | the papers' numbers (the theorems' exact values) |
| `claims.py` | the suite `theory` |
| `notes.md` | the set-up against the papers and the authors' code |
"""

from icgd.experiments.catalog import Source, register_source

SOURCE = register_source(Source(
    name="theory", number="004",
    title="Zhang, Frei and Bartlett 2024; Ahn et al. 2023; Mahankali et al. 2024; Akyuerek et al. 2023: the "
          "theory's exact predictions (preconditioned GD on Gaussian covariates, GD on nonlinear targets, GD "
          "and ridge over depth and noise)",
    suites=("theory",), docs="sources/theory.md", notes="notes.md"))

from icgd.sources.theory import claims, preconditioner, probes, ridge  # noqa: F401,E402  (importing registers the experiments and suite)
