"""Bad input on the command line (issue 62): one line on stderr, exit code 2, nothing written; and the API's
checks that replace a silent wrong answer or a deep AttributeError by an error naming what was expected.

The table of docs/concepts/errors.md is these cases; each was also run by hand (the command beside it there)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
import torch

from icgd.cli import main


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.fixture
def place(tmp_path, monkeypatch):
    """A working folder holding a file `afile`, an empty config `empty.yaml` and a finished 3-step run `done`."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("x")
    (tmp_path / "empty.yaml").write_text("")
    assert main(["train", "lsa-1", "--out", "done", "steps=3", "eval.every=3", "eval.n_tasks=16",
                 "eval.n_tune=16", "--quiet"]) == 0
    return tmp_path


BAD = [
    # devices and threads, read with the arguments: before any folder is made
    (["train", "lsa-1", "--device", "tpu", "--out", "d"], "--device: expected cpu or cuda"),
    (["train", "lsa-1", "--device", "meta", "--out", "d"], "not meta"),
    (["reproduce", "template-gd-step", "--smoke", "--device", "meta", "--out", "d"], "not meta"),
    (["verify", "template", "--smoke", "--device", "xla", "--out", "d"], "not xla"),
    (["train", "lsa-1", "--threads", "0", "--out", "d"], "--threads: must be at least 1"),
    (["train", "lsa-1", "--threads", "-3", "--out", "d"], "--threads: must be at least 1"),
    # paths: a file, under a file, a missing run
    (["train", "lsa-1", "--out", "afile"], "--out: afile is a file, not a folder"),
    (["train", "lsa-1", "--out", "afile/run"], "lies under afile"),
    (["reproduce", "template-gd-step", "--smoke", "--cache", "afile", "--out", "d"], "--cache: afile is a file"),
    (["verify", "template", "--smoke", "--out", "afile/v"], "lies under afile"),
    (["report", "--out", "afile/r.html", "done"], "afile/r.html: afile is a file, not a folder"),
    (["train", "--resume", "nowhere"], "nowhere: no such folder"),
    # configs and values
    (["train", "empty.yaml", "--out", "d"], "the file is empty"),
    (["train", "lsa-1", "--out", "d", "optim.lr=inf"], "optim.lr='inf': Input should be a finite number"),
    (["train", "lsa-1", "--out", "d", "optim.lr=nan"], "Input should be a finite number"),
    (["train", "lsa-1", "--out", "d", "--bogus"], "unrecognized arguments: --bogus"),
    (["sweep", "lsa-1", "optim.lr=", "--out", "d"], "an empty value"),
    (["sweep", "lsa-1", "optim.lr=1e-3,", "--out", "d"], "an empty value"),
    (["reproduce", "dai-icl-vs-ft", "--model", "bogus", "--plan"], "neither a packaged model"),
    # resuming
    (["train", "--resume", "afile"], "afile is a file, not a run folder"),
]


@pytest.mark.parametrize("argv,needle", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(place, argv, needle, capsys):
    before = _tree(place)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err, err
    assert _tree(place) == before  # no half-made folder


def test_overrides_after_options_are_overrides(place, capsys):
    """`icgd train lsa-1 --out D steps=10`: argparse alone stops the overrides at the first option."""
    assert main(["train", "lsa-1", "--out", "late", "steps=4", "eval.every=4", "eval.n_tasks=16",
                 "eval.n_tune=16", "--quiet"]) == 0
    assert "steps: 4" in (place / "late" / "config.yaml").read_text()


def test_resume_of_a_finished_run_says_so_and_touches_nothing(place, capsys):
    files = {p: p.read_bytes() for p in (place / "done").iterdir()}
    assert main(["train", "--resume", "done"]) == 0
    assert "nothing resumed, nothing written" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in (place / "done").iterdir()} == files


def test_a_new_task_stream_where_the_stream_continues_is_refused(place, capsys):
    from icgd.train import engine
    from icgd.train.config import build_config

    config = build_config({"steps": 6, "eval": {"every": 3, "n_tasks": 16, "n_tune": 16}, "name": "cut"})
    assert engine.train(config, "cut", stop_after=2).summary["status"] == "interrupted"  # checkpoint at step 2
    files = {p: p.read_bytes() for p in (place / "cut").iterdir()}
    assert main(["train", "--resume", "cut", "--new-task-stream"]) == 2
    assert "--new-task-stream is not needed here" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in (place / "cut").iterdir()} == files


def test_ctrl_c_in_a_study_names_the_same_command_as_the_step(monkeypatch, tmp_path, capsys):
    """An interruption inside `icgd reproduce` continues by running it again, not by `icgd train --resume`."""
    from icgd.train.engine import TrainingInterrupted

    def interrupted(*a, **k):
        raise TrainingInterrupted("interrupted by signal 2 at step 7; checkpoint saved in C/run (continue with: "
                                  "icgd train --resume C/run)", Path("C/run"), 7)

    monkeypatch.setattr("icgd.experiments.run_experiment", interrupted)
    assert main(["reproduce", "template-gd-step", "--smoke", "--out", str(tmp_path / "r")]) == 130
    err = capsys.readouterr().err
    assert "icgd reproduce template-gd-step --smoke" in err and "icgd train --resume" not in err, err


def test_a_reproduce_folder_given_to_report_is_named_for_what_it_is(tmp_path, capsys):
    (tmp_path / "results.json").write_text("{}")
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "r.html")]) == 2
    assert "a folder of `icgd reproduce`" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- the API
def test_a_construction_refuses_episodes_of_another_context_size():
    from icgd.core.episodes import ShapeError, make_generator
    from icgd.learners.transformer import gd_transformer
    from icgd.tasks import LinearRegression

    ep = LinearRegression(n_context=20).sample(8, make_generator(0), dtype=torch.float64)
    with pytest.raises(ShapeError, match="built for contexts of N=10.*N=20"):
        gd_transformer(10, 1, n_context=10, etas=1.0).predict(ep)
    gd_transformer(10, 1, n_context=20, etas=1.0).predict(ep)  # the right N works


def test_a_dtype_mismatch_names_both_dtypes():
    from icgd.core.episodes import make_generator
    from icgd.learners.transformer import gd_transformer
    from icgd.tasks import LinearRegression

    ep = LinearRegression().sample(4, make_generator(0))  # float32, the tasks' default
    with pytest.raises(TypeError, match="episodes are float32 but the model is float64"):
        gd_transformer(10, 1, n_context=10, etas=1.0).predict(ep)


@pytest.mark.parametrize("call,error,needle", [
    (lambda: __import__("icgd.learners.explicit", fromlist=["GD"]).GD(1.0).predict(torch.zeros(2, 3, 4)),
     TypeError, "gd.predict takes Episodes"),
    (lambda: __import__("icgd.tasks", fromlist=["LinearRegression"]).LinearRegression().sample(10, 0),
     TypeError, "generator must be a torch.Generator"),
    (lambda: __import__("icgd.learners.explicit", fromlist=["GD"]).GD(math.nan), ValueError, "must be finite"),
    (lambda: __import__("icgd.learners.explicit", fromlist=["GD"]).GD(1.0, steps=0), ValueError, "at least 1"),
])
def test_api_misuse_gets_an_error_naming_what_was_expected(call, error, needle):
    with pytest.raises(error, match=needle):
        call()


def test_tune_gd_refuses_zero_steps():
    from icgd.core.episodes import make_generator
    from icgd.learners.tuning import tune_gd, tune_gdpp
    from icgd.tasks import LinearRegression

    ep = LinearRegression().sample(16, make_generator(0), dtype=torch.float64)
    for tune in (tune_gd, tune_gdpp):
        with pytest.raises(ValueError, match="steps must be an integer of at least 1"):
            tune(ep, 0)


def test_a_seed_not_in_the_run_is_named_with_the_seeds_that_are(place):
    from icgd.train import engine

    result = engine.train(resume=True, out=place / "done")
    with pytest.raises(ValueError, match=r"seed 5 is not in run .*: its seeds are \[0\]"):
        result.learner(5)


def test_reprs_are_short():
    from icgd.core.episodes import make_generator
    from icgd.core.metrics import Stat
    from icgd.learners.transformer import gd_transformer
    from icgd.tasks import LinearRegression

    ep = LinearRegression().sample(10_000, make_generator(0))
    assert repr(ep) == "Episodes(B=10000, N=10, Q=1, Dx=10, Dy=1, float32, cpu, teacher (10000, 1, 10))"
    assert repr(Stat(0.123456789, (0.1111111, 0.13333333), 100)) == "Stat(mean=0.1235, ci95=[0.1111, 0.1333], n=100)"
    text = repr(gd_transformer(10, 1, n_context=10, etas=1.0, steps=2))
    assert "kernel='linear', heads=1, layers=2" in text and "built for N=10" in text, text
    assert os.linesep not in repr(Stat(1.0, (0.5, 1.5), 3))


def test_the_docs_table_holds_every_case():
    """docs/concepts/errors.md's table is generated by tools/bad_input_table.py from these cases: a case added
    here and not rerun there is missing from it."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "concepts" / "errors.md").read_text()
    for argv, needle in BAD:
        row = next((line for line in doc.splitlines() if line.startswith(f"| `icgd {' '.join(argv)}` |")), None)
        assert row is not None and "| 2 |" in row and needle.replace("|", "\\|") in row, (argv, row)
