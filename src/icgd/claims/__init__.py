"""Claim checks of the sources: `icgd verify SUITE`.

`verify()` and `suite_names()` come from `icgd.claims.runner`, imported on first use (they load every
source: `icgd.experiments.catalog.load_sources`)."""

from typing import Any

from icgd.claims.base import SUITES, Claim, suite
from icgd.results.console import format_markdown, format_report

__all__ = ["Claim", "SUITES", "format_markdown", "format_report", "suite", "suite_names", "verify"]


def __getattr__(name: str) -> Any:
    if name in ("verify", "suite_names"):
        from icgd.claims import runner

        return getattr(runner, name)
    raise AttributeError(f"module 'icgd.claims' has no attribute {name!r}")
