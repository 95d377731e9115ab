"""What `icgd verify` prints: the claims table drawn by rich on a terminal (PASS green, FAIL red), and the
plain text of `icgd.claims.base.format_report` otherwise (pipes, files, logs: byte for byte as before)."""

from __future__ import annotations

import sys
from typing import IO, Any

from icgd.claims.base import format_report


def print_claims(report: dict[str, Any], file: IO[str] | None = None) -> None:
    """Print the claims of a verify report ({"claims": [{"id", "claim", "source", "measured", "threshold",
    "passed", "role"}], "mode", "seconds"}) to `file` (default stdout)."""
    file = sys.stdout if file is None else file
    from rich.console import Console

    console = Console(file=file, highlight=False)  # colours follow the terminal, NO_COLOR and FORCE_COLOR
    if not console.is_terminal:
        print(format_report(report), file=file)
        return
    from rich.table import Table
    from rich.text import Text

    table = Table(header_style="bold", show_lines=False, expand=False)
    for name, kw in (("claim", {"ratio": 1, "overflow": "fold"}), ("source", {}), ("measured", {"justify": "right"}),
                     ("threshold", {"no_wrap": True}), ("result", {"no_wrap": True})):
        table.add_column(name, **kw)
    for c in report["claims"]:
        claim = Text()
        claim.append(str(c.get("id", "")), style="bold")
        if c.get("role") == "stricter":
            claim.append(" [stricter]", style="magenta")
        claim.append(f": {c['claim']}")
        result = Text("PASS", style="bold green") if c["passed"] else Text("FAIL", style="bold red")
        table.add_row(claim, Text(str(c["source"])), Text(f"{c['measured']:.4g}"), Text(str(c["threshold"])), result)
    console.print(table)
    n_pass = sum(bool(c["passed"]) for c in report["claims"])
    mode = report.get("mode", "quick" if report.get("quick") else "full")
    summary = Text()
    summary.append(f"{n_pass} passed", style="bold green")
    summary.append(", ")
    summary.append(f"{len(report['claims']) - n_pass} failed", style="bold red" if n_pass < len(report["claims"]) else "")
    summary.append(f" ({mode} mode, {report['seconds']} s)")
    console.print(summary)
