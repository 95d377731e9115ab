"""Claim checks of the sources: `icgd verify SUITE`."""

from icgd.claims.base import Claim, format_markdown, format_report, suite_names, verify

__all__ = ["Claim", "format_markdown", "format_report", "suite_names", "verify"]
