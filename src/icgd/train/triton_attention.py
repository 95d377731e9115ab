"""One head of linear or softmax attention per seed and task, forward and backward, as Triton kernels: the GPU
counterpart of the compiled C code (`icgd.train.compiled`), with the same arguments and the same math, on
tokens in their natural layout (S, B, T, D).

Why hand-written (docs/concepts/training.md, "Speed"): from the second layer of a stack on,
the context tokens differ per seed, so the per-task products (C = ctx^T ctx, y C, the scores, the softmax,
the weighted sum) are cuBLAS batched products of 11 x 11 matrices, one launch each (about 75 us a call,
measured on an H100 on 2026-11-26), with every intermediate written to and read back from the GPU's memory.
Here one program computes one task of one seed whole: its tokens, M and U are loaded once into registers as
tiles of 16 (or the next power of two) and every product of the layer, the residual, the dampening and the
clip happen there; the backward recomputes the forward in registers and writes the token gradient and the
task's part of the weight gradients (summed over tasks by one reduction).

On CUDA tensors the kernels are compiled by Triton; on CPU tensors they run in Triton's interpreter
(`triton.runtime.interpreter`, what TRITON_INTERPRET=1 selects), which is how the tests check them without a
GPU. `unavailable()` says why the fused backend does not hand a stack to them: no Triton, ICGD_TRITON=0, not a
CUDA device, or tiles too large for registers. float32 products run in IEEE precision (never TF32), so results
agree with PyTorch's to float rounding.
"""

from __future__ import annotations

import os

import torch
from torch import Tensor

from icgd.train import compiled

#: the largest tile (padded token count or width) one program keeps in registers; longer contexts use PyTorch.
#: Compiled for sm_90 (H100/H200) with 4 warps, tiles of 16 keep everything in registers (at most 108 a thread),
#: 32 spill 16 bytes a thread in the softmax backward, 64 spill up to 6.4 kB (tests/unit/test_triton.py).
MAX_TILE = 32
_state: dict[str, object] = {}


def import_error() -> str | None:
    """Why Triton cannot be imported, or None."""
    if "import_error" not in _state:
        try:
            import triton  # noqa: F401
            import triton.language  # noqa: F401
            _state["import_error"] = None
        except Exception as e:  # ImportError, or a broken install raising anything at import
            _state["import_error"] = f"Triton cannot be imported ({type(e).__name__}: {str(e)[:120]})"
    return _state["import_error"]  # type: ignore[return-value]


def _tile(k: int) -> int:
    """The tile size for k rows or columns: the next power of two, at least 16 (tl.dot's smallest)."""
    return max(16, 1 << (max(k, 1) - 1).bit_length())


def unavailable(dtype: torch.dtype, device: torch.device | str, n_tokens: int, width: int) -> str | None:
    """Why the fused backend does not hand one head's attention over n_tokens tokens of this width to the
    Triton kernels here, or None when it does: float32 on a CUDA device, tiles that fit `MAX_TILE`, Triton
    installed, and ICGD_TRITON not 0. (The kernels compute float64 too, and on CPU tensors in Triton's
    interpreter, when called directly: the tests do; float64 on a GPU is not measured and keeps PyTorch's
    products.)"""
    if os.environ.get("ICGD_TRITON", "1") == "0":
        return "disabled by ICGD_TRITON=0"
    if torch.device(device).type != "cuda" or dtype != torch.float32:
        return f"{dtype} on {torch.device(device)} (they run float32 on CUDA devices)"
    if max(_tile(n_tokens), _tile(width)) > MAX_TILE:
        return f"{n_tokens} tokens of width {width} exceed its tiles ({MAX_TILE})"
    return import_error()


def not_whole_layers(config) -> str | None:
    """Why one call cannot compute a whole residual layer of this stack (a `StackConfig` the fused backend
    runs), or None when it can: one head, no MLP or LayerNorm. Other stacks call the kernels once per head
    and leave the rest (heads summed, residual, LayerNorm, MLP) to PyTorch."""
    if config.attention.n_heads != 1:
        return f"{config.attention.n_heads} heads"
    if config.mlp or config.layer_norm:
        return "MLP or LayerNorm blocks"
    return None


def to_blocks(x: Tensor) -> Tensor:
    """The kernels read tokens in their natural layout (the compiled code's `to_blocks` counterpart)."""
    return x


def from_blocks(x: Tensor, b: int) -> Tensor:
    """Inverse of `to_blocks`: the first b tasks."""
    return x[..., :b, :, :]




def compile_for(arch: int = 90, tile: int = 16, softmax: bool = False, backward: bool = False,
                num_warps: int = 4) -> dict[str, int]:
    """Compile one kernel (float32, a residual layer with a clip) for a CUDA GPU of compute capability `arch`
    (90: H100/H200) without one, through Triton's own ptxas, and read its resources from the machine code with
    Triton's cuobjdump: {"registers", "stack", "shared"} (bytes for the last two; "stack" > 0: spills). What the
    tests check offline: that the compiler takes the kernels the interpreter ran, and where they spill."""
    import re
    import subprocess
    import tempfile

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    kernels = _kernels(interpret=False)
    fn = kernels.backward if backward else kernels.forward
    pointers = ["tok", "m", "u"] + (["gout", "gtok", "gm", "gu"] if backward else ["out"]) + ["consts"]
    const = {"TP": tile, "DP": 16, "GP": 16, "SOFTMAX": softmax, "RESIDUAL": True, "CLIP": True}
    if backward:
        const["WANT_GTOK"] = True
    sig = ({p: "*fp32" for p in pointers} | {a: "i32" for a in ("B", "T", "D", "G", "N", "Q0", "Q1", "G0", "tok_seed_stride")}
           | {c: "constexpr" for c in const})
    src = ASTSource(fn=fn, signature=sig, constexprs={(fn.arg_names.index(c),): v for c, v in const.items()})
    compiled_kernel = triton.compile(src, target=GPUTarget("cuda", arch, 32), options={"num_warps": num_warps})
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "kernel.cubin")
        with open(cubin, "wb") as f:
            f.write(compiled_kernel.asm["cubin"])
        text = subprocess.run([tool, "--dump-resource-usage", cubin], capture_output=True, text=True, check=True).stdout
    found = re.search(r"REG:(\d+).*?STACK:(\d+).*?SHARED:(\d+)", text)
    if found is None:
        raise RuntimeError(f"cuobjdump gave no resource usage: {text[-300:]}")
    return dict(zip(("registers", "stack", "shared"), map(int, found.groups())))


def _kernels(interpret: bool):
    """The kernels module (`triton_kernels.py`), executed with Triton's interpreter on (`interpret`, for CPU
    tensors) or off (compiled for CUDA): `triton.jit` decides between the two when it runs."""
    key = "interpreted" if interpret else "compiled"
    if key not in _state:
        import importlib.util

        import triton

        error = import_error()
        if error is not None:
            raise RuntimeError(error)
        path = os.path.join(os.path.dirname(__file__), "triton_kernels.py")
        spec = importlib.util.spec_from_file_location(f"icgd.train._triton_kernels_{key}", path)
        module = importlib.util.module_from_spec(spec)
        before = triton.knobs.runtime.interpret
        triton.knobs.runtime.interpret = interpret
        try:
            spec.loader.exec_module(module)
        finally:
            triton.knobs.runtime.interpret = before
        _state[key] = module
    return _state[key]


def attention(tok: Tensor, m: Tensor, u: Tensor, n: int, q0: int, q1: int, scale: float,
              residual: int | None = None, lam: float = 1.0, clip: float | None = None,
              kind: str = "linear") -> Tensor:
    """`icgd.train.compiled.attention` computed by the Triton kernels, on tokens in their natural layout:
    tok (S, B, T, D), or (B, T, D) shared by the seeds (no gradient); m (S, D, D); u (S, G, D)
    -> (S, B, q1 - q0, G). kind "linear": o_t = U C M x_t, C = scale * sum_{i < n} x_i x_i^T; "softmax":
    o_t = U sum_i w_ti x_i, w_t = scale * softmax_i(x_i . M x_t). With `residual` (a coordinate r):
    clamp(x_t[r:r+G] + lam * o_t, -clip, clip) (no clamp when clip is None). Differentiable. CUDA tensors
    run the compiled kernels, CPU tensors Triton's interpreter (slow: for tests)."""
    compiled.check_layer_args("Triton attention", residual, lam, clip, kind)
    return TritonAttention.apply(tok, m, u, n, q0, q1, scale, -1 if residual is None else residual,
                                 lam, 0.0 if clip is None else clip, kind == "softmax")


def _launch_args(tok: Tensor, m: Tensor, u: Tensor, n: int, q0: int, q1: int, g0: int, softmax: bool,
                 clip: float) -> tuple[list, dict]:
    """The kernels' shape arguments and compile-time constants."""
    d, g = m.shape[-1], u.shape[-2]
    b, t = tok.shape[-3], tok.shape[-2]
    seed_stride = t * b * d if tok.dim() == 4 else 0
    shapes = [b, t, d, g, n, q0, q1, max(g0, 0), seed_stride]
    meta = dict(TP=_tile(t), DP=_tile(d), GP=_tile(g), SOFTMAX=softmax, RESIDUAL=g0 >= 0, CLIP=clip > 0)
    return shapes, meta


class TritonAttention(torch.autograd.Function):
    """The autograd function behind `attention` (all arguments positional; g0 = -1: no residual, clip 0:
    no clamp)."""

    @staticmethod
    def forward(fctx, tok: Tensor, m: Tensor, u: Tensor, n: int, q0: int, q1: int,  # type: ignore[override]
                scale: float, g0: int, lam: float, clip: float, softmax: bool) -> Tensor:
        if tok.dim() == 3 and tok.requires_grad:
            raise ValueError("shared tokens (B, T, D) get no gradient: pass them per seed (S, B, T, D)")
        tok, m, u = (t.detach().contiguous() for t in (tok, m, u))
        s_n, g, d = m.shape[0], u.shape[-2], m.shape[-1]
        b, tt = tok.shape[-3], tok.shape[-2]
        if (tok.dim() not in (3, 4) or tok.shape[-1] != d or (tok.dim() == 4 and tok.shape[0] != s_n)
                or u.shape != (s_n, g, d) or m.shape != (s_n, d, d) or not 0 < n <= tt or not 0 <= q0 < q1 <= tt
                or (g0 >= 0 and g0 + g > d) or len({tok.dtype, m.dtype, u.dtype}) != 1
                or len({tok.device, m.device, u.device}) != 1):
            raise ValueError(f"Triton attention: tokens {tuple(tok.shape)} {tok.dtype}, M {tuple(m.shape)} {m.dtype}, "
                             f"U {tuple(u.shape)} {u.dtype} do not fit n={n}, rows {q0}:{q1}, residual "
                             f"coordinates {g0}:{g0 + g}")
        if max(_tile(tt), _tile(d), _tile(g)) > MAX_TILE:
            raise ValueError(f"Triton attention: {tt} tokens of width {d} exceed its tiles ({MAX_TILE})")
        kernels = _kernels(interpret=not tok.is_cuda)
        consts = tok.new_full((3,), scale)  # filled, not copied from the host: a CUDA graph may capture it
        consts[1:2].fill_(lam)
        consts[2:3].fill_(clip)
        shapes, meta = _launch_args(tok, m, u, n, q0, q1, g0, softmax, clip)
        out = tok.new_empty(s_n, b, q1 - q0, g)
        kernels.forward[(s_n * b,)](tok, m, u, out, consts, *shapes, **meta)
        fctx.save_for_backward(tok, m, u, consts)
        fctx.args = (n, q0, q1, g0, softmax, clip)
        return out

    @staticmethod
    def backward(fctx, grad: Tensor):  # type: ignore[override]
        tok, m, u, consts = fctx.saved_tensors
        n, q0, q1, g0, softmax, clip = fctx.args
        s_n, g, d = m.shape[0], u.shape[-2], m.shape[-1]
        b, tt = tok.shape[-3], tok.shape[-2]
        want_gtok = fctx.needs_input_grad[0] and tok.dim() == 4
        gtok = tok.new_empty(s_n, b, tt, d) if want_gtok else tok.new_empty(1)
        gm_part = m.new_empty(s_n, b, d, d)
        gu_part = u.new_empty(s_n, b, g, d)
        go = grad.contiguous()
        shapes, meta = _launch_args(tok, m, u, n, q0, q1, g0, softmax, clip)
        _kernels(interpret=not tok.is_cuda).backward[(s_n * b,)](
            tok, m, u, go, gtok, gm_part, gu_part, consts, *shapes, **meta, WANT_GTOK=want_gtok)
        return (gtok if want_gtok else None), gm_part.sum(1), gu_part.sum(1), *([None] * 8)
