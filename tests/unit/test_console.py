"""`icgd verify`'s table: rich with colours on a terminal, the plain text of format_report otherwise."""

import io
import json
import re

import pytest

from icgd.claims.base import Claim, suite
from icgd.cli import main
from icgd.core.profiling import format_breakdown
from icgd.experiments.registry import ExperimentContext, register
from icgd.results.console import format_report, print_claims


@register("test-console-numbers", "two numbers, nothing trained", "tests", 0.0, 0.0)
def _numbers(ctx: ExperimentContext) -> None:
    ctx.result("small", 0.5)
    ctx.result("large", 2.0)


@suite("test-console")
def _console_suite():
    return [Claim("small", "a number below one [not markup]", "Fig. 1", "test-console-numbers",
                  lambda r: r["test-console-numbers"]["small"], "<", 1.0, "because"),
            Claim("large", "another number below one", "Fig. 2", "test-console-numbers",
                  lambda r: r["test-console-numbers"]["large"], "<", 1.0, "because", role="stricter")]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_output_is_format_reports_text_byte_for_byte(tmp_path, capsys):
    assert main(["verify", "test-console", "--quick", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "claims.json").read_text())
    assert capsys.readouterr().out == format_report(report) + "\n" + format_breakdown(report["profile"]) + "\n"
    buf = io.StringIO()
    print_claims(report, buf)
    assert buf.getvalue() == format_report(report) + "\n"


def test_a_terminal_gets_a_coloured_table(tmp_path, monkeypatch, capsys):
    for var in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("COLUMNS", "160")
    assert main(["verify", "test-console", "--quick", "--out", str(tmp_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    term = _Terminal()
    print_claims(report, term)
    out = term.getvalue()
    assert re.search(r"\x1b\[1;32mPASS *\x1b\[0m", out) and re.search(r"\x1b\[1;31mFAIL *\x1b\[0m", out)  # bold green, red
    assert "[not markup]" in out and "[stricter]" in out and "1 passed" in out and "(quick mode" in out
    assert out != format_report(report) + "\n"
    monkeypatch.setenv("NO_COLOR", "1")
    plain = _Terminal()
    print_claims(report, plain)
    assert "\x1b[1;31m" not in plain.getvalue() and "FAIL" in plain.getvalue()


@pytest.mark.parametrize("flag", ["--markdown", "--json"])
def test_markdown_and_json_are_unchanged_on_a_terminal(tmp_path, monkeypatch, capsys, flag):
    monkeypatch.setattr("sys.stdout", _Terminal())
    import sys

    assert main(["verify", "test-console", "--quick", "--out", str(tmp_path), flag]) == 0
    out = sys.stdout.getvalue()
    assert "\x1b[" not in out


def test_a_claims_named_values_are_printed_beside_its_measure():
    """Claim(values=...): the JSON's "values" print in brackets after the measured value, in the
    plain, Markdown and rich tables alike (they all call `measured`)."""
    from icgd.claims.base import Claim
    from icgd.results.console import format_markdown, measured

    c = Claim("x-vs-untrained", "trained beats untrained", "Fig. 5", "exp", lambda r: r["exp"]["d"], ">", 0.1, "why",
              values=lambda r: {"trained": r["exp"]["t"], "untrained": r["exp"]["u"]})
    out = c.check({"exp": {"d": 0.35, "t": 0.94, "u": 0.59}})
    assert out["values"] == {"trained": 0.94, "untrained": 0.59}
    assert measured(out) == "0.35 (trained 0.94, untrained 0.59)"
    assert "0.35 (trained 0.94, untrained 0.59)" in format_markdown({"claims": [out]})
    assert "values" not in c.check({"exp": {"d": 0.35}})  # a value it cannot read is left out, the measure kept
