"""Tables on disk and as pandas DataFrames: the training metrics (Parquet, with the metrics.csv of older run
directories still read), the experiments' CSV tables, claims and results as frames."""

import csv
import json
import math
import shutil

import pandas as pd
import pytest

from icgd.claims.base import Claim, suite
from icgd.experiments.registry import ExperimentContext, register
from icgd.results.tables import (
    CLAIM_COLUMNS,
    TableError,
    claims_frame,
    experiment_tables,
    metrics_frame,
    results_frame,
)
from icgd.train import TrainConfig, train
from icgd.train.checkpoint import load_checkpoint
from icgd.train.config import build_config
from icgd.train.rundir import METRIC_COLUMNS, RunDir

SMALL_EVAL = {"every": 10, "n_tasks": 128, "n_tune": 256, "alignment_tasks": 32}


def _old_csv_writer(path, rows):
    """How metrics.csv was written before the Parquet file (csv.DictWriter, kept here to compare with)."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=METRIC_COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    cfg = TrainConfig(steps=30, batch_size=32, seeds=[0, 1], eval=SMALL_EVAL, checkpoint_every=10,
                      dtype="float64", optim={"schedule": "cosine", "warmup_steps": 5})
    return train(cfg, tmp_path_factory.mktemp("runs") / "tiny")


def test_parquet_metrics_equal_the_old_csv_and_old_run_dirs_still_read(run, tmp_path):
    rd = RunDir(run.run_dir)
    assert rd.metrics.name == "metrics.parquet" and not (run.run_dir / "metrics.csv").exists()
    rows = rd.read_metrics()
    _, meta = load_checkpoint(rd.checkpoint)
    assert rows == meta["rows"] and len(rows) == 3 * 2 and list(rows[0]) == METRIC_COLUMNS  # the engine's rows
    frame = rd.metrics_frame()
    assert list(frame.columns) == METRIC_COLUMNS and frame["step"].tolist() == [10, 10, 20, 20, 30, 30]
    assert frame["step"].dtype == "int64" and frame["eval_loss"].dtype == "float64"
    # a run directory from before: the engine's rows written by the old CSV writer, no Parquet file
    old = tmp_path / "old"
    shutil.copytree(run.run_dir, old)
    (old / "metrics.parquet").unlink()
    _old_csv_writer(old / "metrics.csv", meta["rows"])
    pd.testing.assert_frame_equal(RunDir(old).metrics_frame(), frame, check_exact=True)
    assert RunDir(old).read_metrics() == rows
    from icgd.experiments.common import curves
    from icgd.train.runs import load_run

    steps, values = curves(load_run(old), "eval_loss")
    assert steps == [10, 20, 30] and values.shape == (2, 3)
    assert (values == frame.pivot(index="seed", columns="step", values="eval_loss").to_numpy()).all()
    # resuming a run from before writes the Parquet file from the checkpoint's rows
    resumed = train(out=old, resume=True)
    assert resumed.summary["status"] == "completed"
    pd.testing.assert_frame_equal(RunDir(old).metrics_frame(), frame, check_exact=True)


def test_unmeasured_values_stay_null(tmp_path):
    rd = RunDir(tmp_path)
    rd.write_metrics([{"step": 1, "seed": 0, "train_loss": 0.5}, {"step": 1, "seed": 1, "train_loss": float("nan")}])
    rows = rd.read_metrics()
    assert rows[0]["eval_loss"] is None and rows[1]["train_loss"] != rows[1]["train_loss"]  # NaN stays NaN
    assert rd.metrics_frame()["eval_loss"].isna().all()
    assert not list(tmp_path.glob("*.tmp"))


@register("test-tables-tiny", "a tiny experiment for the table tests", "tests", 0.1, 0.1)
def _tiny(ctx: ExperimentContext) -> None:
    cfg = build_config({"name": "tiny", "steps": 20, "batch_size": 32, "seeds": ctx.seeds,
                        "eval": {"every": 10, "n_tasks": 64, "n_tune": 64, "alignment_tasks": 16}})
    res = ctx.train("tiny", cfg)
    ctx.result("final", res.summary["seeds"][0]["final_eval_loss"])
    ctx.result("per_seed", [r["final_eval_loss"] for r in res.summary["seeds"]])
    ctx.table("per_seed", [{"seed": s, "loss": r["final_eval_loss"], "diverged": math.nan, "note": None}
                           for s, r in zip(ctx.seeds, res.summary["seeds"])])


@suite("test-tables")
def _tiny_suite():
    return [Claim("finite", "the tiny loss is finite", "tests", "test-tables-tiny",
                  lambda r: r["test-tables-tiny"]["final"], "<", 1e9, "any finite loss")]


def test_verify_and_reproduce_return_dicts_with_frames(tmp_path):
    import icgd

    rep = icgd.verify("test-tables", tmp_path / "v", quick=True, seeds=[0, 1])
    assert type(rep) is not dict and isinstance(rep, dict)  # a dict as before, with frame accessors
    assert json.loads(json.dumps(rep))["claims"] == rep["claims"]
    assert set(rep["env"]) >= {"icgd", "torch", "python", "device", "threads", "started", "finished"}
    frame = rep.claims_frame()
    assert list(frame.columns) == CLAIM_COLUMNS and len(frame) == 1
    row = frame.iloc[0]
    assert (row["id"], row["op"], row["threshold"], row["passed"], row["mode"]) == ("finite", "<", 1e9, True, "quick")
    assert row["measured"] == rep["claims"][0]["measured"]
    (tmp_path / "v" / "claims.json").write_text(json.dumps(rep))
    pd.testing.assert_frame_equal(claims_frame(tmp_path / "v"), frame)
    per_seed = rep.experiment_tables("test-tables-tiny")["per_seed"]
    assert per_seed["seed"].tolist() == [0, 1] and per_seed["diverged"].isna().all()

    res = icgd.reproduce("test-tables-tiny", tmp_path / "r", cache=tmp_path / "v" / "_train", quick=True, seeds=[0, 1])
    assert res["final"] == rep["claims"][0]["measured"]  # the cached model
    kv = res.frame().set_index("key")["value"]
    assert kv["final"] == res["final"] and kv["per_seed"] == res["per_seed"]
    pd.testing.assert_frame_equal(results_frame(tmp_path / "r"), res.frame())
    assert res.tables()["per_seed"]["loss"].tolist() == res["per_seed"]
    train_dir = next(p for p in (tmp_path / "v" / "_train").iterdir() if p.name != ".locks")
    from icgd.train.runs import load_run

    assert load_run(train_dir).metrics_frame()["step"].tolist() == [10, 10, 20, 20]
    pd.testing.assert_frame_equal(metrics_frame(train_dir), load_run(train_dir).metrics_frame())


def test_bad_directories_are_one_clear_error(tmp_path):
    with pytest.raises(TableError, match="no claims.json"):
        claims_frame(tmp_path)
    (tmp_path / "claims.json").write_text("{not json")
    with pytest.raises(TableError, match="not valid JSON"):
        claims_frame(tmp_path)
    with pytest.raises(TableError, match="not a directory"):
        experiment_tables(tmp_path / "nope")
