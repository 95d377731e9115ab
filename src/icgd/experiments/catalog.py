"""The catalog of sources: each paper that icgd reproduces is one package under `icgd.sources`, declared by a
`Source` and found by name.

A source's package registers its experiments (`icgd.experiments.registry.register`) and its claim suites
(`icgd.claims.base.suite`) when it is imported. `load_sources()` imports every source named in
`icgd.sources.SOURCES`, and every package that another distribution declares under the entry-point group
`icgd.sources`, so a paper outside this repository plugs in the same way. The floors below the sources
never import a source by name: they ask this catalog, which loads them by `importlib` (the one import that
runs up a floor, on purpose: docs/architecture.md).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib.metadata import entry_points

from icgd.core.registry import Registry

#: the entry-point group under which another distribution declares a source package
ENTRY_POINT_GROUP = "icgd.sources"


@dataclass(frozen=True)
class Source:
    """A paper icgd reproduces: its package's declaration (`icgd.sources.<name>/__init__.py`)."""

    #: the package's name under `icgd.sources` (or the entry point's), lower case
    name: str
    #: how the docs number it ("000"), or "" for a source from outside this repository
    number: str
    #: authors, year and title, as a reader cites it
    title: str
    #: the claim suites it registers (`icgd verify SUITE`)
    suites: tuple[str, ...]
    #: its page under docs/ ("sources/oswald.md"), or "" where it has none
    docs: str = ""
    #: its set-up notes against the authors' code, a Markdown file of its package ("notes.md"; "" for none):
    #: `icgd report` shows the rows under its "### Suite" headings beside each claim
    notes: str = ""
    #: a template to copy rather than a paper: listed last, and its numbers are no science
    template: bool = False

    def __post_init__(self) -> None:
        if not self.name or self.name != self.name.lower() or not self.name.replace("_", "").isalnum():
            raise ValueError(f"a source's name is its package name in lower case, got {self.name!r}")
        if not self.suites:
            raise ValueError(f"source {self.name}: declares no suite")


#: every loaded source by name
SOURCE_REGISTRY: Registry[Source] = Registry("source")


def register_source(source: Source) -> Source:
    """Declare `source` (called once, in its package's `__init__.py`); returns it."""
    return SOURCE_REGISTRY.add(source.name, source)


def load_sources() -> dict[str, Source]:
    """Import every source package (once), so that their experiments and suites are registered; returns the
    sources by name, those of this repository in `icgd.sources.SOURCES` order, then any from entry points."""
    names = importlib.import_module("icgd.sources").SOURCES
    for name in names:
        importlib.import_module(f"icgd.sources.{name}")
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in SOURCE_REGISTRY:
            ep.load()
    ordered = [n for n in names if n in SOURCE_REGISTRY]  # a source imported directly may have registered first
    return {n: SOURCE_REGISTRY[n] for n in ordered + [n for n in SOURCE_REGISTRY if n not in ordered]}


def source_of(module: str) -> Source | None:
    """The loaded source whose package holds `module` (a dotted module name, e.g. an experiment function's
    `__module__`), or None."""
    for source in SOURCE_REGISTRY.values():
        for package in (f"icgd.sources.{source.name}", source.name):
            if module == package or module.startswith(package + "."):
                return source
    return None
