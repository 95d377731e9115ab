"""The claims table of a verify report ({"claims": [...], "mode", "seconds"}) for people: as Markdown
(`format_markdown`, what claims.md holds), as plain text (`format_report`) and drawn by rich on a terminal
(`print_claims`: PASS green, FAIL red; the plain text byte for byte otherwise: pipes, files, logs). Each shows
the authors' own value of the measure beside the measured one ("authors"; "-" where none exists), and the
measured one's 95% interval in brackets where the claim has one."""

from __future__ import annotations

import sys
from typing import IO, Any

from icgd.core.verdict import Verdict, checks_tally, count, kind_of_row, verdict_of_row


def authors(c: dict[str, Any]) -> str:
    """The claim's reference (the authors' value) as printed: '0.2065', '0.75 +- 0.05' for a figure read by
    eye, '-' where none exists (or the report predates references)."""
    ref = c.get("reference")
    if ref is None:
        return "-"
    precision = c.get("reference_precision") or 0
    return f"{ref:.4g}" + (f" +- {precision:.2g}" if precision else "")


def measured(c: dict[str, Any]) -> str:
    """The measured value as printed, with its 95% interval where the claim has one: '0.04 [0.012, 0.068]', and
    the claim's named values where it has some: '0.21 (trained 0.95, untrained 0.74)'."""
    iv = c.get("interval")
    named = c.get("values") or {}
    return f"{c['measured']:.4g}" + (f" [{iv[0]:.3g}, {iv[1]:.3g}]" if iv else "") + (
        " (" + ", ".join(f"{k} {v:.3g}" for k, v in named.items()) + ")" if named else "")


def verdict(c: dict[str, Any]) -> str:
    """The claim's verdict as a terminal shows it, in capitals: PASS, FAIL, INCONCLUSIVE or UNTESTED."""
    return verdict_of_row(c).value.upper()


def tally(claims: list[dict[str, Any]]) -> str:
    """'45 passed, 14 failed, 2 inconclusive, 1 untested' (the last parts only where there is one) of the
    claims, and the checks apart: '; 5 of 6 checks hold'."""
    out = f"{count(claims, Verdict.PASS)} passed, {count(claims, Verdict.FAIL)} failed"
    out += "".join(f", {n} {v}" for v in (Verdict.INCONCLUSIVE, Verdict.UNTESTED) if (n := count(claims, v)))
    checks = checks_tally(claims)
    return out + (f"; {checks}" if checks else "")


def _label(c: dict[str, Any]) -> str:
    """' [stricter]', ' [check]' or '' after a row's id."""
    return (" [check]" if kind_of_row(c) == "check" else "") + (" [stricter]" if c.get("role") == "stricter" else "")


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
                     ("authors", {"justify": "right", "no_wrap": True}), ("threshold", {"no_wrap": True}), ("result", {"no_wrap": True})):
        table.add_column(name, **kw)
    for c in report["claims"]:
        claim = Text()
        claim.append(str(c.get("id", "")), style="bold")
        if _label(c):
            claim.append(_label(c), style="magenta")
        claim.append(f": {c['claim']}")
        v = verdict(c)
        result = Text(v, style={Verdict.PASS: "bold green", Verdict.FAIL: "bold red"}.get(verdict_of_row(c), "bold yellow"))
        table.add_row(claim, Text(str(c["source"])), Text(measured(c)), Text(authors(c)),
                      Text(str(c["threshold"])), result)
    console.print(table)
    mode = report.get("mode", "quick" if report.get("quick") else "full")
    summary = Text(f"{tally(report['claims'])} ({mode} mode, {report['seconds']} s)", style="bold")
    console.print(summary)


#: how a Markdown table shows each verdict (FAIL in bold, inconclusive in italics)
_MARKDOWN = {Verdict.PASS: "PASS", Verdict.FAIL: "**FAIL**", Verdict.INCONCLUSIVE: "*inconclusive*",
             Verdict.UNTESTED: "untested"}


def format_markdown(report: dict[str, Any]) -> str:
    """The report as a Markdown table (`id`: claim, source, measured, authors, threshold, result; FAIL in
    bold)."""
    lines = ["| claim | source | measured | authors | threshold | result |", "|---|---|---|---|---|---|"]
    for c in report["claims"]:
        name = f"`{c['id']}`: {c['claim']}" if c.get("id") else c["claim"]
        cells = [name + _label(c), c["source"],
                 measured(c), authors(c), c["threshold"],
                 _MARKDOWN[verdict_of_row(c)]]
        lines.append("| " + " | ".join(str(v).replace("|", "\\|") for v in cells) + " |")
    return "\n".join(lines) + "\n"


def format_report(report: dict[str, Any]) -> str:
    rows = [("claim", "source", "measured", "authors", "threshold", "result")]
    for c in report["claims"]:
        rows.append((f"{c['id']}{_label(c)}: {c['claim']}", c["source"], measured(c), authors(c),
                     c["threshold"], verdict(c)))
    widths = [min(max(len(r[i]) for r in rows), 90) for i in range(6)]
    lines = ["  ".join(str(v)[:w].ljust(w) for v, w in zip(r, widths)) for r in rows]
    lines.append(f"\n{tally(report['claims'])} "
                 f"({report.get('mode') or ('quick' if report.get('quick') else 'full')} mode, {report['seconds']} s)")
    return "\n".join(lines)
