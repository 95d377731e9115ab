"""A template source: the smallest complete source, to copy when adding a paper (docs/add-a-source.md).

Its one experiment, `template-gd-step`, needs no training: one step of gradient descent, its learning rate
found by line search, on in-context linear regression, scored against the zero predictor, and the
transformer that von Oswald et al.'s Prop. 1 builds from that step. Its suite, `template`, holds one claim,
a statement that a wrong learner fails.

| module | what it holds |
|---|---|
| `__init__.py` | the `Source` declaration, and the imports that register the rest |
| `keys.py` | the result keys that the claims read, as named constants |
| `gd_step.py` | the experiment: what it computes, writes and reports |
| `references.py` | the authors' number of each claim, or why there is none |
| `claims.py` | the suite: one row per claim |
| `notes.md` | the set-up notes: the authors' code against ours, claim by claim |

To make a new source: copy this folder to `icgd/sources/<name>/`, rename the experiment, the suite and the
keys, and add `"<name>"` to `icgd.sources.SOURCES`. The conformance tests (tests/suites/test_smoke.py)
then run every source's suites in smoke mode and check their declarations.
"""

from icgd.experiments.catalog import Source, register_source

SOURCE = register_source(Source(
    name="template", number="",
    title="a template to copy: one GD step on linear regression (after von Oswald et al. 2023, Prop. 1)",
    suites=("template",), notes="notes.md", template=True))

from icgd.sources.template import claims, gd_step  # noqa: F401,E402  (importing registers the experiment and suite)
