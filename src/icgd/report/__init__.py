"""`icgd report`: one self-contained HTML page from the directories `icgd verify` writes (`page`)."""

from icgd.report.page import (
    ReportError,
    build_page,
    claim_inputs,
    load_run,
    reproduction_notes,
    seed_spread,
    summarise_seeds,
    write_report,
)

__all__ = ["ReportError", "build_page", "claim_inputs", "load_run", "reproduction_notes", "seed_spread",
           "summarise_seeds", "write_report"]
