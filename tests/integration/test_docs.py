"""The documentation: the site builds offline with `mkdocs build --strict` (no broken link, no page left out
of the nav, no missing image or anchor), and the README's links point at files that exist."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: what `mkdocs.yml` needs (the `docs` extra: python3 -m pip install -c constraints.txt -e ".[docs]")
SITE_MODULES = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")


def _missing(modules: tuple[str, ...]) -> list[str]:
    missing = []
    for name in modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:  # a dotted name whose parent is not installed
            found = False
        if not found:
            missing.append(name)
    return missing


def test_site_builds_strict(tmp_path):
    missing = _missing(SITE_MODULES)
    if missing:
        pytest.skip(f"the docs site needs {', '.join(missing)}: python3 -m pip install -c constraints.txt -e '.[docs]'")
    site = tmp_path / "site"
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")  # Material's banner about MkDocs 2.0 is not a build warning
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
                           "--site-dir", str(site)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{log[-4000:]}"
    assert "WARNING" not in log, log[-4000:]
    for page in ("index.html", "reproduce/index.html", "sources/oswald/index.html", "concepts/claims/index.html"):
        assert (site / page).is_file(), page
    api = (site / "api" / "core" / "index.html").read_text()
    assert 'id="icgd.core.episodes.Episodes"' in api, "the API reference has no entry for icgd.core.episodes.Episodes"
    assert "fonts.googleapis" not in (site / "index.html").read_text(), "the site must not load web fonts"


def test_readme_links_exist():
    text = (ROOT / "README.md").read_text()
    targets = [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"[a-z]+:", t)]
    assert targets, "the README links to no page of the site"
    broken = [t for t in targets if not (ROOT / t.split("#")[0]).exists()]
    assert not broken, f"README links to files that do not exist: {broken}"


def test_reproduce_table_follows_the_registry():
    """docs/reproduce.md's table gives each experiment's estimate as `icgd list` does (they drifted apart
    once: nine rows kept an older estimate), and names every registered experiment."""
    from icgd.experiments.catalog import load_sources
    load_sources()  # registers every experiment
    from icgd.experiments.registry import REGISTRY

    text = (ROOT / "docs" / "reproduce.md").read_text()
    rows = re.findall(r"^\|.*`icgd reproduce ([\w-]+)[^`]*`.*?\| ([\d.]+) / ([\d.]+) \|", text, flags=re.M)
    assert len(rows) >= 25, "the table of docs/reproduce.md was not found"
    wrong = [f"{name}: {q} / {f} (registry {REGISTRY[name].quick_minutes:g} / {REGISTRY[name].full_minutes:g})"
             for name, q, f in rows
             if (float(q), float(f)) != (REGISTRY[name].quick_minutes, REGISTRY[name].full_minutes)]
    assert not wrong, "docs/reproduce.md's minutes differ from the registry's: " + "; ".join(wrong)
    from icgd.experiments.catalog import source_of

    # the library's experiments (not tests' own), templates left out: they are there to be copied, not run
    library = {name for name, e in REGISTRY.items()
               if (src := source_of(e.fn.__module__)) is not None and not src.template}
    unnamed = sorted(library - {name for name, _, _ in rows})
    assert not unnamed, f"docs/reproduce.md's table has no row for {unnamed}"


def test_the_api_page_of_the_sources_lists_every_source(tmp_path):
    """docs/api/sources.md renders the source packages from the code (`show_submodules`): a new source appears
    without an edit. Checked on the page's source: it names the package whose submodules it renders."""
    from icgd.experiments.catalog import load_sources

    text = (ROOT / "docs" / "api" / "sources.md").read_text()
    assert "::: icgd.sources" in text and "show_submodules: true" in text
    assert all((ROOT / "src" / "icgd" / "sources" / name / "__init__.py").is_file() for name in load_sources())


def test_the_guides_are_guides():
    """The README and the guide pages read as a user's guide: no page under docs/ over 500 lines, no commit
    hash of this project in the README, no "issue N" in the code (history belongs in commits and in the lab
    notes, docs/lab-notes/)."""
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "docs").rglob("*.md")
            if (n := len(p.read_text().splitlines())) > 500}
    assert not long, f"pages over 500 lines: {long}"
    hashes = [h for h in re.findall(r"\b[0-9a-f]{7,12}\b", (ROOT / "README.md").read_text())
              if re.search(r"[a-f]", h) and re.search(r"[0-9]", h)]
    assert not hashes, f"the README names commits: {hashes}"
    issues = [f"{p.relative_to(ROOT)}:{i}" for p in (ROOT / "src" / "icgd").rglob("*.py")
              for i, line in enumerate(p.read_text().splitlines(), 1) if re.search(r"\bissues? \d+", line)]
    assert not issues, f"'issue N' in the code: {issues}"


def test_the_reproduction_notes_page_is_the_sources_notes():
    """docs/reproduction-notes.md is generated from each source's notes.md (a real page on a code host, not
    an include directive): regenerate it as its first lines say."""
    from icgd.report.runs import notes_page

    assert (ROOT / "docs" / "reproduction-notes.md").read_text() == notes_page(), \
        "docs/reproduction-notes.md is stale: regenerate it as its first lines say"


#: a bar as a page writes it: "< 0.5", ">= 1e-3"
_BAR = re.compile(r"(?<![\w.])([<>]=?)\s*(-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)")


def _claim_rows(text: str, known: set[str], column: str):
    """Every row of a table with the column `column` that names claims (backticked ids left of that column),
    as (line, ids, the cell of that column)."""
    lines = text.splitlines()
    for i in range(len(lines) - 1):
        if not (lines[i].startswith("|") and lines[i + 1].startswith("|---")):
            continue
        head = [h.strip() for h in lines[i].strip().strip("|").split("|")]
        if column not in head:
            continue
        b = head.index(column)
        for j in range(i + 2, len(lines)):
            if not lines[j].startswith("|"):
                break
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", lines[j].strip().strip("|"))]
            ids = [t for t in re.findall(r"`([a-z0-9][a-z0-9+-]*)`", " ".join(cells[:b])) if t in known]
            if ids:
                yield j + 1, ids, cells[b] if b < len(cells) else ""


def _rounds(shown: str, value: float) -> bool:
    """Whether the number written `shown` is `value` to its last digit (within half a unit of it)."""
    from decimal import Decimal

    unit = Decimal(1).scaleb(Decimal(shown).as_tuple().exponent)
    return abs(Decimal(shown) - Decimal(repr(value))) <= unit / 2


def _registered_claims() -> dict:
    from icgd.claims import suite_names
    from icgd.claims.base import SUITES

    return {c.id: c for name in suite_names() for c in SUITES.lookup(name)()}


def test_the_bars_the_pages_state_are_the_code_s():
    """A bar typed in a docs table (the sources' pages, docs/calibration.md) is the claim's bar in the code: the
    blog's page once kept four bars the code had raised (dampening < 1 for < 0.5, depth < 1 for < 0.9, the
    BiLSTM gains > 0 for > 0.1 and > 0.01). A row naming several claims gives one bar for all or one each."""
    claims = _registered_claims()
    pages = sorted((ROOT / "docs" / "sources").glob("*.md")) + [ROOT / "docs" / "calibration.md"]
    wrong, seen = [], 0
    for page in pages:
        for line, ids, cell in _claim_rows(page.read_text(), set(claims), "bar"):
            seen += 1
            bars = _BAR.findall(cell)
            where = f"{page.relative_to(ROOT)}:{line}"
            if len(bars) not in (1, len(ids)):
                wrong.append(f"{where}: {len(ids)} claims, {len(bars)} bars")
                continue
            for k, cid in enumerate(ids):
                op, value = bars[k if len(bars) == len(ids) else 0]
                c = claims[cid]
                if op != c.op or float(value) != c.threshold:
                    wrong.append(f"{where}: {cid} {op} {value} on the page, {c.op} {c.threshold:g} in the code")
    assert seen >= 70, f"only {seen} rows of bars found: the tables' layout changed?"
    assert not wrong, "bars on the pages differ from the code: " + "; ".join(wrong)


def test_the_authors_numbers_the_calibration_page_states_are_the_code_s():
    """docs/calibration.md's "authors' value" is each claim's reference in the code, to the digits the page
    shows ("none" where the claim has none)."""
    claims = _registered_claims()
    wrong, seen = [], 0
    for line, ids, cell in _claim_rows((ROOT / "docs" / "calibration.md").read_text(), set(claims), "authors' value"):
        for cid in ids:
            seen += 1
            ref = claims[cid].reference.value
            shown = re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", cell)
            if ref is None:
                ok = cell.startswith("none")
            else:
                ok = any(_rounds(x, ref) for x in shown)
            if not ok:
                wrong.append(f"docs/calibration.md:{line}: {cid} shows {cell[:40]!r}, the code {ref}")
    assert seen >= 30, f"only {seen} references found: the tables' layout changed?"
    assert not wrong, "authors' numbers on the page differ from the code: " + "; ".join(wrong)
