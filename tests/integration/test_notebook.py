"""examples/walkthrough.ipynb runs top to bottom on the CPU (executed by nbclient in a fresh kernel)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "walkthrough.ipynb"


def test_walkthrough_runs(tmp_path, monkeypatch):
    missing = [m for m in ("nbclient", "nbformat", "ipykernel") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"running the notebook needs {', '.join(missing)}: python3 -m pip install -c constraints.txt "
                    "-e '.[docs]'")
    import nbformat
    from nbclient import NotebookClient

    # a kernel spec of this interpreter, so the kernel sees the icgd the tests see (not whatever `python` is)
    spec = tmp_path / "jupyter" / "kernels" / "icgd-test"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "icgd test", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the notebook's run directory goes under tmp_path
    work = tmp_path / "work"
    work.mkdir()

    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(nb, kernel_name="icgd-test", timeout=300, resources={"metadata": {"path": str(work)}})
    client.execute()  # raises CellExecutionError, naming the cell, when a cell fails

    text = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "final eval loss" in text, "the training cell printed no result"
    assert any(o.get("data", {}).get("image/png") for c in nb.cells if c.cell_type == "code" for o in c.outputs), \
        "the notebook drew no figure"
