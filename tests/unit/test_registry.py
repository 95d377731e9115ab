"""The one registry type (`icgd.core.registry.Registry`), the verdict type, and the catalog of sources."""

from __future__ import annotations

import pytest

from icgd.core.registry import Registry
from icgd.core.verdict import VERDICTS, Verdict, count, verdict_of_row


def test_a_registry_refuses_a_name_twice_and_names_the_known_ones():
    r: Registry[int] = Registry("widget", {"a": 1})
    assert r.add("b", 2) == 2 and dict(r) == {"a": 1, "b": 2}
    with pytest.raises(ValueError, match="widget 'a' registered twice"):
        r.add("a", 3)
    assert r["a"] == 1  # the first entry is kept
    with pytest.raises(ValueError, match=r"unknown widget 'c'; known: a, b"):
        r.lookup("c")

    @r.register("d")
    def four() -> int:
        return 4

    assert r.lookup("d") is four


def test_every_registry_of_the_library_is_one_type():
    from icgd.claims.base import SUITES
    from icgd.experiments.catalog import SOURCE_REGISTRY
    from icgd.experiments.registry import REGISTRY
    from icgd.learners.references import REFERENCES
    from icgd.learners.registry import LEARNERS
    from icgd.nn import kernels
    from icgd.tasks import TASKS
    from icgd.train.kinds import MODEL_KINDS

    for reg in (SUITES, SOURCE_REGISTRY, REGISTRY, LEARNERS, kernels._REGISTRY, TASKS, MODEL_KINDS):
        assert isinstance(reg, Registry), reg
    # the reference learners are the learners that say how they are tuned: one registry, not two
    assert set(REFERENCES) == {n for n, e in LEARNERS.items() if e.tune is not None}
    assert {"gd", "gd_per_step", "gdpp", "zero", "unigram"} <= set(REFERENCES)
    assert all(REFERENCES[n] is LEARNERS[n] for n in REFERENCES)


def test_verdicts_read_old_and_new_rows():
    assert [v.value for v in VERDICTS] == ["PASS", "FAIL", "inconclusive", "untested"]
    assert verdict_of_row({"verdict": "inconclusive"}) is Verdict.INCONCLUSIVE
    assert verdict_of_row({"passed": True}) is Verdict.PASS  # a report written before verdicts
    assert verdict_of_row({"passed": False}) is Verdict.FAIL
    rows = [{"verdict": "PASS"}, {"verdict": "untested"}, {"passed": True}]
    assert count(rows, Verdict.PASS) == 2 and count(rows, Verdict.UNTESTED) == 1
    assert f"{Verdict.UNTESTED}" == "untested" and Verdict.PASS == "PASS"


def test_the_catalog_loads_every_source_and_each_declares_its_suites():
    from icgd.claims.base import SUITES
    from icgd.experiments.catalog import load_sources, source_of
    from icgd.experiments.registry import REGISTRY
    from icgd.sources import SOURCES

    sources = load_sources()
    assert list(sources)[: len(SOURCES)] == list(SOURCES)
    for name, src in sources.items():
        assert set(src.suites) <= set(SUITES), name
        assert all(SUITES[s].__module__.startswith(f"icgd.sources.{name}.") for s in src.suites), name
    # every experiment and suite of the library belongs to exactly one source
    for name, exp in REGISTRY.items():
        if exp.fn.__module__.startswith("icgd.sources."):
            assert source_of(exp.fn.__module__) is not None, name
    owned = [s for src in sources.values() for s in src.suites]
    assert len(owned) == len(set(owned))


def test_a_source_without_suites_or_with_a_bad_name_is_refused():
    from icgd.experiments.catalog import Source

    with pytest.raises(ValueError, match="declares no suite"):
        Source(name="x", number="", title="t", suites=())
    with pytest.raises(ValueError, match="package name"):
        Source(name="My-Paper", number="", title="t", suites=("s",))


def test_a_lookup_loads_what_registers_the_entries_once():
    from icgd.core.registry import Registry

    calls = []
    reg = Registry("thing", load=lambda: (calls.append(1), reg.add("a", 1)))
    assert reg.lookup("a") == 1 and reg.lookup("a") == 1 and calls == [1]
    with pytest.raises(ValueError, match="unknown thing 'b'; known: a"):
        reg.lookup("b")
    assert calls == [1]


def test_a_suite_is_found_without_loading_the_sources_first():
    """`SUITES.lookup` in a fresh interpreter, before anything imported the sources (it said 'known: none')."""
    import subprocess
    import sys

    code = "from icgd.claims.base import SUITES; print(len(SUITES.lookup('oswald')()))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and int(r.stdout) > 50, r.stderr
