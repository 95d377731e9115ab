"""The house keeps its shape (docs/architecture.md): the import-linter contracts of pyproject.toml hold, they
catch a wrong-way import, and no source file outgrows one sitting."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "icgd"


def _lint_imports(src_parent: Path) -> subprocess.CompletedProcess:
    if shutil.which("lint-imports") is None:
        pytest.skip("import-linter is not installed: python3 -m pip install -c constraints.txt -e '.[test]'")
    env = {"PYTHONPATH": str(src_parent), "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"}
    return subprocess.run(["lint-imports", "--config", str(ROOT / "pyproject.toml"), "--no-cache"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)


def test_the_import_contracts_hold():
    done = _lint_imports(SRC.parent)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


@pytest.mark.parametrize("where,line,broken", [
    ("tasks/linear.py", "from icgd.experiments import registry", "floors"),  # a floor reaching up
    ("experiments/common.py", "from icgd.sources import dai", "floors"),  # the shared floor reading a source
    ("sources/blog/eta.py", "from icgd.sources.oswald import keys", "sources"),  # one source reading another
    ("sources/template/gd_step.py", "from icgd.sources.momentum import paired", "sources"),  # the template too
    ("nn/stack.py", "import transformers", "transformers"),  # the heavy library outside icgd.lm
])
def test_a_wrong_way_import_breaks_a_contract(tmp_path, where, line, broken):
    copy = tmp_path / "icgd"
    shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / where
    target.write_text(target.read_text() + f"\n{line}  # noqa\n")
    done = _lint_imports(tmp_path)
    assert done.returncode != 0, done.stdout[-2000:]
    assert "BROKEN" in done.stdout and broken in done.stdout.lower()


def test_no_source_file_over_600_lines():
    sizes = {str(p.relative_to(SRC)): len(p.read_text().splitlines()) for p in SRC.rglob("*.py")}
    assert not {k: v for k, v in sizes.items() if v > 600}
