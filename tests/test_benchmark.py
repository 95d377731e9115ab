import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_train_speed_benchmark_prints_its_json():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "train_speed.py"), "--models", "lsa-1",
                        "--seeds", "2", "--steps", "1", "--naive-steps", "1", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    (m,) = out["models"]
    assert m["name"] == "lsa-1" and m["compute_path"] == "fused"
    for key in ("seed_steps_per_s", "naive_seed_steps_per_s", "flops_per_step", "matmul_gflops"):
        assert m[key] > 0
