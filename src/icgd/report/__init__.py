"""`icgd report`: one self-contained HTML page from the directories `icgd verify` writes. `runs` reads the
directories (and the reproduction notes that ship beside it), `page` renders the Jinja2 templates of
`templates/` (shipped as package data)."""

from icgd.report.page import build_page, write_report
from icgd.report.runs import (
    ReportError,
    claim_inputs,
    load_run,
    reproduction_notes,
    seed_spread,
    summarise_seeds,
)

__all__ = ["ReportError", "build_page", "claim_inputs", "load_run", "reproduction_notes", "seed_spread",
           "summarise_seeds", "write_report"]
