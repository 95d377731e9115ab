import json
import subprocess
import sys
from pathlib import Path

from icgd.train import compiled as kernel

ROOT = Path(__file__).resolve().parents[1]


def test_train_speed_benchmark_prints_its_json():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "train_speed.py"), "--models", "lsa-1",
                        "--seeds", "2", "--steps", "1", "--naive-steps", "1", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    (m,) = out["models"]
    assert m["name"] == "lsa-1" and m["backend"] in ("compiled", "fused")
    for key in ("seed_steps_per_s", "naive_seed_steps_per_s", "flops_per_step", "matmul_gflops"):
        assert m[key] > 0


def test_compute_paths_benchmark_times_every_path():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "compute_paths.py"), "lsa-1", "batch_size=64",
                        "--reps", "1", "--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    with_kernel = {"fused-heads"} if kernel.load() is not None else set()
    assert set(json.loads(r.stdout)["ms_per_step"]) == {"compiled", "fused", "generic"} | with_kernel
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "compute_paths.py"), "lsa-1", "model.mlp=true",
                        "batch_size=64", "--reps", "1", "--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert set(out["ms_per_step"]) == {"fused", "generic"} | with_kernel and all(v > 0 for v in out["ms_per_step"].values())
    # a model the fused backend does not support is timed on the generic backend only
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "compute_paths.py"), "lsa-1", "model.kind=lstm",
                        "batch_size=16", "--reps", "1", "--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert set(json.loads(r.stdout)["ms_per_step"]) == {"generic"}


def test_side_by_side_benchmark_prints_its_json():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "side_by_side.py"), "--models", "depth-2",
                        "--steps", "1", "--batch", "64", "--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    (row,) = out["rows"]
    assert row["model"] == "depth-2" and out["workers"] == 2
    assert row["single_seed_steps_per_s"] > 0 and row["side_by_side_seed_steps_per_s"] > 0 and row["speedup"] > 0
