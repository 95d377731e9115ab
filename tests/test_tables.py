"""Tables on disk: the training metrics (Parquet, with the metrics.csv of older run directories still read)."""

import csv
import shutil

import pandas as pd
import pytest

from icgd.train import TrainConfig, train
from icgd.train.checkpoint import load_checkpoint
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
    from icgd.experiments.registry import load_run

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

