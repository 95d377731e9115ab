"""Write the table of bad inputs in docs/concepts/errors.md from commands run, not typed: every case of
tests/integration/test_bad_input.py's BAD list, run as `icgd ...` in a fresh folder (holding a file `afile`, an
empty `empty.yaml` and a finished 3-step run `done`), with its exit code, what it printed on stderr and whether
it left anything behind.

    python tools/bad_input_table.py            # rewrites the table between its markers in docs/concepts/errors.md
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "concepts" / "errors.md"
BEGIN, END = "<!-- bad-input table: tools/bad_input_table.py -->", "<!-- end of the bad-input table -->"


def _cases() -> list[tuple[list[str], str]]:
    sys.path.insert(0, str(ROOT / "tests" / "integration"))
    from test_bad_input import BAD

    return BAD


def _tree(root: Path) -> set[Path]:
    return set(root.rglob("*"))


def main() -> int:
    rows = ["| command | exit code | stderr (one line) | left behind |", "|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        place = Path(tmp)
        (place / "afile").write_text("x")
        (place / "empty.yaml").write_text("")
        subprocess.run(["icgd", "train", "lsa-1", "--out", "done", "steps=3", "eval.every=3", "eval.n_tasks=16",
                        "eval.n_tune=16", "--quiet"], cwd=place, check=True, capture_output=True)
        for argv, _ in _cases():
            before = _tree(place)
            r = subprocess.run(["icgd", *argv], cwd=place, capture_output=True, text=True)
            left = sorted(str(p.relative_to(place)) for p in _tree(place) - before)
            err = r.stderr.strip().replace("|", "\\|")
            lines = "" if r.stderr.count("\n") == 1 else f" ({r.stderr.count(chr(10))} lines)"
            rows.append(f"| `icgd {' '.join(argv)}` | {r.returncode} | {err}{lines} | {', '.join(left) or 'nothing'} |")
    text = DOC.read_text()
    block = f"{BEGIN}\n" + "\n".join(rows) + f"\n{END}"
    DOC.write_text(re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S))
    print(f"wrote {len(rows) - 2} rows into {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
