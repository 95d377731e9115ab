"""The compiled one-head attention kernel (linear and softmax): exact to rounding, independent of threads,
optional."""

import shutil  # noqa: F401  (used by a skipif condition)

import pytest
import torch

from icgd.train import compiled as kernel
from icgd.train.backends import select
from icgd.train.compiled import from_blocks, to_blocks

needs_kernel = pytest.mark.skipif("kernel.load() is None", reason="no compiled kernel here")


def _case(s_n, b, t, d, g, shared, dtype=torch.float64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    r = lambda *shape: torch.randn(*shape, generator=gen, dtype=dtype)  # noqa: E731
    x = r(b, t, d) if shared else r(s_n, b, t, d).requires_grad_()
    return x, r(s_n, d, d).requires_grad_(), r(s_n, g, d).requires_grad_()


def _reference(kind, x, n, q0, m, u, scale):
    """The attention update in PyTorch: x (S, B, T, D) -> (S, B, T - q0, G)."""
    if kind == "linear":
        c = torch.einsum("sbnd,sbne->sbde", x[:, :, :n], x[:, :, :n]) * scale  # C per task
        return torch.einsum("sbtd,sed,sbef,sgf->sbtg", x[:, :, q0:], m, c, u)  # U C M x_t
    scores = torch.einsum("sbtd,sed,sbje->sbtj", x[:, :, q0:], m, x[:, :, :n])  # x_j . M x_t
    return torch.einsum("sbtj,sbjd,sgd->sbtg", torch.softmax(scores, -1) * scale, x[:, :, :n], u)


@needs_kernel
@pytest.mark.parametrize("kind", ["linear", "softmax"])
@pytest.mark.parametrize("s_n,b,t,n,q0,d,g,shared,scale", [
    (3, 37, 5, 4, 0, 7, 2, False, 1.0),   # a partial block of tasks (37 = 2 * 16 + 5 = 4 * 8 + 5)
    (2, 16, 7, 6, 6, 5, 1, False, 1.0),   # last layer: one query row, y-rows of U
    (2, 20, 7, 6, 4, 5, 3, False, 0.25),  # several query rows, count normalisation
    (3, 40, 5, 4, 0, 7, 7, True, 1.0),    # tokens shared by the seeds
])
def test_kernel_equals_the_torch_products(kind, s_n, b, t, n, q0, d, g, shared, scale):
    x, m, u = _case(s_n, b, t, d, g, shared)
    go = torch.randn(s_n, b, t - q0, g, generator=torch.Generator().manual_seed(9), dtype=x.dtype)
    out = from_blocks(kernel.attention(to_blocks(x), m, u, n, q0, t, scale, kind=kind), b)
    ref = _reference(kind, x.expand(s_n, *x.shape) if shared else x, n, q0, m, u, scale)
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
    inputs = [v for v in (x, m, u) if v.requires_grad]
    for a, r in zip(torch.autograd.grad((out * go).sum(), inputs), torch.autograd.grad((ref * go).sum(), inputs)):
        torch.testing.assert_close(a, r, rtol=1e-12, atol=1e-12)


#: residual layers of one head (q0, G, residual coordinate, lam, clip, shared tokens): this kernel's and the
#: Triton kernels' (tests/unit/test_triton.py)
RESIDUAL_CASES = [
    (0, 7, 0, 1.0, 1.5, False),     # a whole layer: every row, every coordinate, clipped
    (0, 7, 0, 0.7, None, False),    # dampened, no clip
    (4, 2, 5, 0.7, 1.0, False),     # last layer: query rows, y-coordinates, dampened and clipped
    (4, 2, 5, 1.0, 1.0, True),      # tokens shared by the seeds (a 1-layer stack)
]


@needs_kernel
@pytest.mark.parametrize("kind", ["linear", "softmax"])
@pytest.mark.parametrize("q0,g,r,lam,clip,shared", RESIDUAL_CASES)
def test_kernel_residual_layer_equals_torch(kind, q0, g, r, lam, clip, shared):
    """residual=r: clamp(x_t[r:r+G] + lam * attention, -clip, clip), value and gradient, the clamp's
    gradient included (some entries clipped, not all)."""
    s_n, b, t, n, d = 2, 37, 5, 4, 7
    x, m, u = _case(s_n, b, t, d, g, shared)
    go = torch.randn(s_n, b, t - q0, g, generator=torch.Generator().manual_seed(5), dtype=x.dtype)
    out = from_blocks(kernel.attention(to_blocks(x), m, u, n, q0, t, 1.0, residual=r, lam=lam, clip=clip,
                                       kind=kind), b)
    xe = x.expand(s_n, *x.shape) if shared else x
    pre = xe[:, :, q0:, r:r + g] + lam * _reference(kind, xe, n, q0, m, u, 1.0)
    ref = pre if clip is None else pre.clamp(-clip, clip)
    if clip is not None:
        assert 0 < (pre.abs() > clip).float().mean() < 1
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
    inputs = [v for v in (x, m, u) if v.requires_grad]
    for a, e in zip(torch.autograd.grad((out * go).sum(), inputs), torch.autograd.grad((ref * go).sum(), inputs)):
        torch.testing.assert_close(a, e, rtol=1e-12, atol=1e-12)


def test_kernel_attention_rejects_clip_without_residual():
    x, m, u = _case(1, 16, 5, 4, 4, True)
    with pytest.raises(ValueError, match="residual"):
        kernel.attention(to_blocks(x), m, u, 4, 0, 5, 1.0, clip=1.0)


@needs_kernel
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_softmax_kernel_with_peaked_scores(dtype):
    """Scores hundreds apart (weights underflow to 0 in the exponential, the max matters): still equal to
    torch.softmax's result, in float32 and float64; the kernel's exponential is its own."""
    x, m, u = _case(2, 33, 6, 5, 5, False, dtype=dtype)
    m = (m.detach() * 40).requires_grad_()
    out = from_blocks(kernel.attention(to_blocks(x), m, u, 5, 0, 6, 1.0, kind="softmax"), 33)
    ref = _reference("softmax", x, 5, 0, m, u, 1.0)
    scores = torch.einsum("sbtd,sed,sbje->sbtj", x, m, x[:, :, :5]).detach()
    assert (scores.amax(-1) - scores.amin(-1)).median() > 200
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(out, ref, **tol)
    go = torch.randn_like(ref)
    for a, r in zip(torch.autograd.grad((out * go).sum(), [x, m, u]), torch.autograd.grad((ref * go).sum(), [x, m, u])):
        torch.testing.assert_close(a, r, **(tol if dtype == torch.float64 else dict(rtol=1e-3, atol=1e-3)))


@needs_kernel
@pytest.mark.parametrize("kind", ["linear", "softmax"])
def test_kernel_results_do_not_depend_on_the_number_of_threads(kind):
    x, m, u = _case(4, 100, 11, 11, 11, False, dtype=torch.float32)
    before = torch.get_num_threads()
    outs = []
    try:
        for threads in (1, 2, 3):
            torch.set_num_threads(threads)
            o = kernel.attention(to_blocks(x), m, u, 10, 0, 11, 1.0, residual=0, clip=3.0, kind=kind)
            outs.append((o, *torch.autograd.grad(o.square().sum(), [x, m, u])))
    finally:
        torch.set_num_threads(before)
    for other in outs[1:]:
        for a, b in zip(outs[0], other):
            assert torch.equal(a, b)


@needs_kernel
def test_shared_tokens_get_no_gradient():
    x, m, u = _case(2, 16, 5, 4, 4, True)
    with pytest.raises(ValueError, match="no gradient"):
        kernel.attention(to_blocks(x).requires_grad_(), m, u, 4, 0, 5, 1.0)


def test_without_a_compiler_the_fused_path_uses_torch_products(monkeypatch, tmp_path):
    from icgd.train.config import load_config

    monkeypatch.setattr(kernel, "_state", {})
    monkeypatch.setenv("ICGD_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    assert kernel.load() is None and "no C compiler" in kernel.status()
    config = load_config("lsa-5")
    chosen = select(config)
    assert chosen.name == "fused" and "no C compiler" in chosen.reason
    monkeypatch.setattr(kernel, "_state", {})
    monkeypatch.setenv("ICGD_COMPILED", "0")
    monkeypatch.delenv("CC")
    assert kernel.load() is None and "ICGD_COMPILED=0" in kernel.status()
    chosen = select(config)
    assert chosen.name == "fused" and "ICGD_COMPILED=0" in chosen.reason


@pytest.mark.skipif("shutil.which('cc') is None", reason="no C compiler")
def test_a_broken_source_is_reported_not_raised(monkeypatch, tmp_path):
    bad = tmp_path / "compiled_attention.c"
    bad.write_text("this is not C\n")
    monkeypatch.setattr(kernel, "_state", {})
    monkeypatch.setattr(kernel, "_SOURCE", bad)
    monkeypatch.setenv("ICGD_CACHE_DIR", str(tmp_path / "cache"))
    assert kernel.load() is None
    assert "failed" in kernel.status()


def test_lanes_follow_the_cpu(monkeypatch):
    monkeypatch.delenv("ICGD_COMPILED_LANES", raising=False)
    monkeypatch.setattr(kernel, "_state", {})
    monkeypatch.setattr(kernel, "_cpu_id", lambda: "flags\t\t: fpu sse2 avx avx2 fma avx512f avx512dq")
    assert kernel.lanes() == 16
    monkeypatch.setattr(kernel, "_state", {})
    monkeypatch.setattr(kernel, "_cpu_id", lambda: "flags\t\t: fpu sse2 avx avx2 fma avx512_bf16")
    assert kernel.lanes() == 8
    monkeypatch.setenv("ICGD_COMPILED_LANES", "16")
    assert kernel.lanes() == 16
    monkeypatch.setenv("ICGD_COMPILED_LANES", "12")
    with pytest.raises(ValueError, match="8 or 16"):
        kernel.lanes()


@needs_kernel
@pytest.mark.parametrize("kind", ["linear", "softmax"])
def test_lane_counts_agree(kind, monkeypatch):
    # 8 and 16 tasks per vector: the same per-task arithmetic; the block sums differ at rounding only
    x, m, u = _case(2, 37, 11, 11, 11, False)
    results = []
    for n_lanes in ("8", "16"):
        monkeypatch.setenv("ICGD_COMPILED_LANES", n_lanes)
        tok = to_blocks(x)
        assert tok.shape[-1] == int(n_lanes) and f"({n_lanes} tasks per vector)" in kernel.status()
        o = kernel.attention(tok, m, u, 10, 0, 11, 1.0, residual=0, clip=3.0, kind=kind)
        y = from_blocks(o, 37)
        results.append((y, *torch.autograd.grad(y.square().sum(), [x, m, u])))
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_long_contexts_are_left_to_the_torch_products():
    # the kernel keeps per-thread buffers on the stack: long contexts must not reach it
    assert kernel.fits(11, 11, torch.float32) and kernel.fits(11, 11, torch.float64)
    assert not kernel.fits(1001, 21, torch.float32) and not kernel.fits(200, 21, torch.float64)
