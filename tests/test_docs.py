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

ROOT = Path(__file__).resolve().parents[1]
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
    from icgd.experiments import runner  # noqa: F401  (registers every experiment)
    from icgd.experiments.registry import REGISTRY

    text = (ROOT / "docs" / "reproduce.md").read_text()
    rows = re.findall(r"^\|.*`icgd reproduce ([\w-]+)[^`]*`.*?\| ([\d.]+) / ([\d.]+) \|", text, flags=re.M)
    assert len(rows) >= 25, "the table of docs/reproduce.md was not found"
    wrong = [f"{name}: {q} / {f} (registry {REGISTRY[name].quick_minutes:g} / {REGISTRY[name].full_minutes:g})"
             for name, q, f in rows
             if (float(q), float(f)) != (REGISTRY[name].quick_minutes, REGISTRY[name].full_minutes)]
    assert not wrong, "docs/reproduce.md's minutes differ from the registry's: " + "; ".join(wrong)
    library = {name for name, e in REGISTRY.items() if e.fn.__module__.startswith("icgd.")}  # not tests' own
    unnamed = sorted(library - {name for name, _, _ in rows})
    assert not unnamed, f"docs/reproduce.md's table has no row for {unnamed}"
