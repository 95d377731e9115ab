"""The Triton attention kernels (linear and softmax, forward and backward), run on the CPU in Triton's
interpreter: equal to the PyTorch products to float rounding, alone and inside the fused backend's stacks
of every model kind it serves (values and gradients against the generic path)."""

import pytest
import torch

from icgd.train import triton_attention as tk
from test_compiled import RESIDUAL_CASES, _case, _reference  # the compiled kernel's cases and PyTorch products

pytestmark = pytest.mark.skipif("tk.import_error() is not None", reason="Triton is not installed")


def _grads_close(out, ref, inputs, seed=9, **tol):
    go = torch.randn(ref.shape, generator=torch.Generator().manual_seed(seed), dtype=ref.dtype)
    for a, r in zip(torch.autograd.grad((out * go).sum(), inputs), torch.autograd.grad((ref * go).sum(), inputs)):
        torch.testing.assert_close(a, r, **tol)


@pytest.mark.parametrize("kind", ["linear", "softmax"])
@pytest.mark.parametrize("s_n,b,t,n,q0,d,g,shared,scale", [
    (2, 3, 5, 4, 0, 7, 2, False, 1.0),    # every row a query; G < D
    (2, 3, 7, 6, 6, 5, 1, False, 1.0),    # last layer: one query row, y-rows of U
    (2, 2, 7, 6, 4, 5, 3, False, 0.25),   # several query rows, count normalisation
    (3, 2, 5, 4, 0, 7, 7, True, 1.0),     # tokens shared by the seeds
    (1, 2, 21, 20, 20, 17, 1, False, 1.0),  # tiles of 32: 21 tokens of width 17
])
def test_kernel_equals_the_torch_products(kind, s_n, b, t, n, q0, d, g, shared, scale):
    x, m, u = _case(s_n, b, t, d, g, shared)
    out = tk.attention(x, m, u, n, q0, t, scale, kind=kind)
    ref = _reference(kind, x.expand(s_n, *x.shape) if shared else x, n, q0, m, u, scale)
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
    _grads_close(out, ref, [v for v in (x, m, u) if v.requires_grad], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", ["linear", "softmax"])
@pytest.mark.parametrize("q0,g,r,lam,clip,shared", RESIDUAL_CASES)
def test_kernel_residual_layer_equals_torch(kind, q0, g, r, lam, clip, shared):
    """residual=r: clamp(x_t[r:r+G] + lam * attention, -clip, clip), value and gradient, the clamp's
    gradient included (some entries clipped, not all)."""
    s_n, b, t, n, d = 2, 5, 5, 4, 7
    x, m, u = _case(s_n, b, t, d, g, shared)
    out = tk.attention(x, m, u, n, q0, t, 1.0, residual=r, lam=lam, clip=clip, kind=kind)
    xe = x.expand(s_n, *x.shape) if shared else x
    pre = xe[:, :, q0:, r:r + g] + lam * _reference(kind, xe, n, q0, m, u, 1.0)
    ref = pre if clip is None else pre.clamp(-clip, clip)
    if clip is not None:
        assert 0 < (pre.abs() > clip).float().mean() < 1
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
    _grads_close(out, ref, [v for v in (x, m, u) if v.requires_grad], seed=5, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_softmax_kernel_with_peaked_scores(dtype):
    """Scores hundreds apart (weights underflow to 0, the max matters), float32 and float64."""
    x, m, u = _case(2, 4, 6, 5, 5, False, dtype=dtype)
    m = (m.detach() * 40).requires_grad_()
    out = tk.attention(x, m, u, 5, 0, 6, 1.0, kind="softmax")
    ref = _reference("softmax", x, 5, 0, m, u, 1.0)
    scores = torch.einsum("sbtd,sed,sbje->sbtj", x, m, x[:, :, :5]).detach()
    assert (scores.amax(-1) - scores.amin(-1)).median() > 200
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(out, ref, **tol)
    _grads_close(out, ref, [x, m, u], **(tol if dtype == torch.float64 else dict(rtol=1e-3, atol=1e-3)))


def test_bad_arguments_are_refused_with_their_reason():
    x, m, u = _case(2, 3, 5, 4, 4, False)
    with pytest.raises(ValueError, match="residual"):
        tk.attention(x, m, u, 4, 0, 5, 1.0, clip=1.0)
    with pytest.raises(ValueError, match="do not fit"):
        tk.attention(x, m, u, 6, 0, 5, 1.0)  # n beyond the tokens
    with pytest.raises(ValueError, match="do not fit"):
        tk.attention(x, m[:1], u[:1], 4, 0, 5, 1.0)  # two seeds of tokens, one of weights
    with pytest.raises(ValueError, match="exceed its tiles"):
        big = torch.zeros(1, 1, 70, 4, dtype=torch.float64)
        tk.attention(big, m[:1, :4, :4], u[:1, :, :4], 4, 0, 70, 1.0)
    with pytest.raises(ValueError, match="no gradient"):
        tk.attention(x[0].detach().requires_grad_(), m, u, 4, 0, 5, 1.0)


def test_the_backend_takes_it_only_on_a_cuda_device(monkeypatch):
    assert "on cpu" in tk.unavailable(torch.float32, "cpu", 11, 12)
    assert tk.unavailable(torch.float32, "cuda", 11, 12) is None
    assert "exceed its tiles" in tk.unavailable(torch.float32, "cuda", 200, 12)
    monkeypatch.setenv("ICGD_TRITON", "0")
    assert "ICGD_TRITON=0" in tk.unavailable(torch.float32, "cuda", 11, 12)


# --------------------------------------------------------------------------- inside the fused backend's stacks
_EVAL = {"every": 10, "n_tasks": 16, "n_tune": 16, "alignment_tasks": 0}


@pytest.mark.parametrize("model,task,data", [
    ({"n_layers": 1}, {}, "shared"),                                                   # whole layers
    ({"n_layers": 3, "clip": 1.5, "normalize": "count"}, {"dx": 4, "n_queries": 2}, "per_seed"),
    ({"n_layers": 2, "recurrent": True, "clip": 1.0}, {"dy": 2}, "shared"),
    ({"n_layers": 2, "kernel": "softmax"}, {}, "shared"),
    ({"n_layers": 2, "kernel": "softmax", "clip": 1.0, "normalize": "count"}, {"n_queries": 2}, "per_seed"),
    ({"n_layers": 2, "n_heads": 2, "d_key": 4, "d_value": 3, "clip": 1.5}, {"dx": 4}, "per_seed"),  # per head
    ({"n_layers": 2, "n_heads": 2, "mlp": True}, {}, "shared"),
    ({"n_layers": 2, "layer_norm": True, "mlp": True, "kernel": "softmax"}, {"dy": 2}, "per_seed"),
    ({"n_layers": 3, "layer_norm": "between", "n_heads": 2, "mlp": True}, {}, "shared"),
])
def test_stacks_with_the_triton_kernels_equal_the_generic_path(model, task, data):
    """Every model kind the fused backend serves (linear and softmax attention; one head, whole layers; several
    heads, MLP, LayerNorm, per head), with the Triton kernels: the generic backend's losses and gradients
    to float64 rounding."""
    from icgd.train import TrainConfig
    from icgd.train.backends import backend
    from icgd.train.data import TaskStream
    from icgd.train.models import init_params, trainable_names

    cfg = TrainConfig(steps=10, batch_size=6, seeds=[0, 1], eval=_EVAL, dtype="float64", data=data,
                      model=model | {"init_scale": 1.0}, task=task)
    params = init_params(cfg)
    names = trainable_names(cfg)
    gen = torch.Generator().manual_seed(0)
    for k in names:
        if ".ln" in k:  # LayerNorm starts at weight 1, bias 0: move it so that both are tested
            params[k] = params[k] + 0.3 * torch.randn(params[k].shape, generator=gen, dtype=params[k].dtype)
        params[k].requires_grad_(True)
    batch = TaskStream(cfg, "cpu").next()
    lt = backend(cfg, "fused-triton").loss_fn(params, *batch)
    lg = backend(cfg, "generic").loss_fn(params, *batch)
    torch.testing.assert_close(lt, lg, rtol=1e-10, atol=1e-12)
    gt = torch.autograd.grad(lt.sum(), [params[k] for k in names])
    gg = torch.autograd.grad(lg.sum(), [params[k] for k in names])
    for a, b in zip(gt, gg):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-12 * max(1.0, b.abs().max().item()))


def test_the_backend_says_what_computes_attention_on_a_cuda_device(monkeypatch):
    """select() on a CUDA device names the Triton kernels, whole layers or per head, or why they are not
    used (read from the config alone: nothing runs on the device)."""
    from icgd.train import load_config
    from icgd.train.backends import _kernel_note

    one_head = load_config("lsa-5")
    assert _kernel_note(one_head, "cuda") == "; each layer's attention by the Triton kernels"
    heads = load_config("lsa-5", ["model.n_heads=2"])
    assert "each head's attention by the Triton kernels (2 heads)" in _kernel_note(heads, "cuda")
    monkeypatch.setenv("ICGD_TRITON", "0")
    assert "not the Triton kernels: disabled by ICGD_TRITON=0" in _kernel_note(one_head, "cuda")


@pytest.mark.parametrize("softmax", [False, True])
def test_the_kernels_compile_for_a_hopper_gpu_and_keep_small_tiles_in_registers(softmax):
    """Without a GPU: Triton's compiler and ptxas (shipped in its wheel) take the forward and backward kernels
    for sm_90 (H100/H200), tiles of 16 and 32; at 16 (the 11-token, 12-wide tasks of the benchmarks) nothing
    spills out of registers."""
    import os

    import triton

    if not os.path.exists(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")):
        pytest.skip("no ptxas in this Triton install")
    for tile in (16, 32):
        for backward in (False, True):
            res = tk.compile_for(90, tile, softmax, backward)
            assert 0 < res["registers"] <= 255
            if tile == 16:
                assert res["stack"] == 0, res
