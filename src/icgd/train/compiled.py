"""The compiled backend: one-head linear and softmax attention written in C (compiled_attention.c) and its
autograd function.

Why hand-written: on 2 CPU cores these 11 x 11 products are latency-bound, and the C code (tasks `lanes()`
at a time as vector lanes, one call per residual layer) measured 3-4x faster per step than the fused PyTorch
products (README, "Speed"). The C source ships with the package and is compiled on first use with the
machine's C compiler (`cc -O3 -march=native -fopenmp`, else without OpenMP on one thread; the lane count
defined by the driver) into a cache folder (`$ICGD_CACHE_DIR`, else ~/.cache/icgd), keyed by a hash of the
source, the lane count, the compiler and the CPU, and loaded with ctypes. Where no compiler works, or with
`ICGD_COMPILED=0`, `load()` returns None and the fused backend is used instead (same math; results differ at
float rounding). Nothing happens at import.
"""

from __future__ import annotations

import ctypes
import os
import platform
import subprocess
import tempfile
from pathlib import Path

import torch
from torch import Tensor

from icgd.core.io import atomic_path, fingerprint

_SOURCE = Path(__file__).with_name("compiled_attention.c")
_DRIVER = ('#define LANES {lanes}\n'
           '#define REAL float\n#define IREAL int32_t\n#define SUFFIX _f32\n#include "compiled_attention.c"\n'
           '#undef REAL\n#undef IREAL\n#undef SUFFIX\n'
           '#define REAL double\n#define IREAL int64_t\n#define SUFFIX _f64\n#include "compiled_attention.c"\n')
_FLAGS = ["-O3", "-march=native", "-shared", "-fPIC", "-std=gnu11"]
_PREFIX = {"linear": "lsa", "softmax": "smx"}  # the C functions of each fused form (`icgd.nn.kernels.Kernel.fused`)
_STACK_BYTES = 1 << 20  # the C code's per-thread work buffers live on the stack: keep them small
_state: dict[str, object] = {}


class _CompileFailed(RuntimeError):
    """The compiler's message (first 500 characters)."""


class _Dims(ctypes.Structure):
    _fields_ = [(k, ctypes.c_int64) for k in ("S", "NB", "TT", "N", "Q0", "Q1", "D", "G", "G0", "tok_seed_stride")]


def cache_dir() -> Path:
    return Path(os.environ.get("ICGD_CACHE_DIR") or Path.home() / ".cache" / "icgd")


def _cpu_id() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
        return "\n".join(sorted({ln for ln in text.splitlines() if ln.startswith(("model name", "flags"))}))
    except OSError:
        return platform.processor()


def lanes() -> int:
    """Tasks per vector of the C code: 16 where the CPU has AVX-512 (one 512-bit register of floats), else 8
    (one 256-bit AVX2 register); ICGD_COMPILED_LANES (8 or 16) overrides it. Why it follows the CPU,
    measured (`benchmarks/compute_paths.py lsa-5 "seeds=[0,1,2,3,4]"`, 2 cores, AMD EPYC with AVX2 and no
    AVX-512): 16 lanes, which GCC splits into pairs of 256-bit operations, 136.8 ms per step; 8 lanes 22.6 ms
    (the fused PyTorch products 61.9). 16 lanes gave 14.8 ms on the machine where the kernel was written.
    A task's arithmetic is the same at any lane count; the weight gradients are summed block by block, so
    two lane counts agree to float rounding, not bit for bit."""
    env = os.environ.get("ICGD_COMPILED_LANES")
    if env is not None:
        if env not in ("8", "16"):
            raise ValueError(f"ICGD_COMPILED_LANES must be 8 or 16, got {env!r}")
        return int(env)
    if "native_lanes" not in _state:  # read once: lanes() is called on every step's hot path
        _state["native_lanes"] = 16 if "avx512f" in _cpu_id().split() else 8
    return _state["native_lanes"]  # type: ignore[return-value]


def _compile(n_lanes: int) -> tuple[ctypes.CDLL | None, str]:
    """The library for `n_lanes` tasks per vector (compiled into the cache unless there), and its status."""
    cc = os.environ.get("CC", "cc")
    try:
        version = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as e:
        return None, f"no C compiler ({cc}): {e}"
    driver_text = _DRIVER.format(lanes=n_lanes)
    key = fingerprint("\0".join([_SOURCE.read_text(), driver_text, version, " ".join(_FLAGS), _cpu_id(),
                                 platform.machine()]), 16)
    target = cache_dir() / f"compiled_attention-{key}.so"
    if not target.exists():
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
                driver = Path(tmp) / "driver.c"
                driver.write_text(driver_text)
                with atomic_path(target) as out:  # a concurrent process sees the old or the whole new file
                    for extra in (["-fopenmp"], []):  # without OpenMP support: one thread
                        proc = subprocess.run([cc, *_FLAGS, *extra, "-I", str(_SOURCE.parent), "-o", str(out),
                                               str(driver)], capture_output=True, text=True, timeout=300)
                        if proc.returncode == 0:
                            break
                    if proc.returncode != 0:
                        raise _CompileFailed(proc.stderr.strip()[:500])
        except (_CompileFailed, OSError, subprocess.SubprocessError) as e:
            return None, f"compiling {_SOURCE.name} failed: {e}"
    try:
        lib = ctypes.CDLL(str(target))
    except OSError as e:
        return None, f"loading {target} failed: {e}"
    for prefix in _PREFIX.values():
        for suffix, real in (("_f32", ctypes.c_float), ("_f64", ctypes.c_double)):
            p, dims = ctypes.c_void_p, ctypes.POINTER(_Dims)
            fwd = getattr(lib, prefix + "_forward" + suffix)
            fwd.argtypes = [p, p, p, p, dims, real, real, real, ctypes.c_int]
            bwd = getattr(lib, prefix + "_backward" + suffix)
            bwd.argtypes = [p, p, p, p, p, p, p, dims, real, real, real, ctypes.c_int]
            fwd.restype = bwd.restype = ctypes.c_int
    return lib, f"compiled {target} ({n_lanes} tasks per vector)"


def _disabled() -> bool:
    return os.environ.get("ICGD_COMPILED", "1") == "0"


def load() -> ctypes.CDLL | None:
    """The compiled library, or None (ICGD_COMPILED=0, or no working C compiler: see `status()`)."""
    if _disabled():
        return None
    n_lanes = lanes()
    if _state.get("lanes") != n_lanes:  # a library per lane count (ICGD_COMPILED_LANES may change it)
        _state["lib"], _state["status"] = _compile(n_lanes)
        _state["lanes"] = n_lanes
    return _state["lib"]  # type: ignore[return-value]


def status() -> str:
    """Why `load()` gives what it gives."""
    if _disabled():
        return "disabled by ICGD_COMPILED=0"
    load()
    return str(_state["status"])


def usable(*tensors: Tensor) -> bool:
    """Whether the compiled code can compute with these tensors (CPU, float32 or float64) and is available."""
    t0 = tensors[0]
    return (t0.device.type == "cpu" and t0.dtype in (torch.float32, torch.float64)
            and all(t.dtype == t0.dtype and t.device == t0.device for t in tensors) and load() is not None)


def fits(n_tokens: int, d: int, dtype: torch.dtype) -> bool:
    """Whether the compiled code's per-thread buffers for n_tokens tokens of width d fit its stack budget (1 MiB;
    larger contexts use the PyTorch products)."""
    item = torch.empty(0, dtype=dtype).element_size()
    return (6 * n_tokens * d + 2 * d * d + d) * lanes() * item <= _STACK_BYTES


def _ptr(t: Tensor | None) -> int | None:
    return None if t is None else t.data_ptr()


def _run(fn, args: list) -> None:
    if fn(*args, max(1, torch.get_num_threads())):
        raise RuntimeError("compiled attention failed")


def to_blocks(x: Tensor) -> Tensor:
    """(..., B, T, D) -> (..., ceil(B / L), T, D, L): tasks in groups of L = `lanes()`, task index last;
    missing tasks of the last group are 0."""
    *lead, b, t, d = x.shape
    n_lanes = lanes()
    nb = -(-b // n_lanes)
    x = torch.nn.functional.pad(x, (0, 0, 0, 0, 0, nb * n_lanes - b)) if nb * n_lanes != b else x
    return x.reshape(*lead, nb, n_lanes, t, d).movedim(-3, -1).contiguous()


def from_blocks(x: Tensor, b: int) -> Tensor:
    """Inverse of `to_blocks`: (..., NB, T, D, L) -> (..., B, T, D)."""
    *lead, nb, t, d, lanes = x.shape
    return x.movedim(-1, -3).reshape(*lead, nb * lanes, t, d)[..., :b, :, :]


def attention(tok: Tensor, m: Tensor, u: Tensor, n: int, q0: int, q1: int, scale: float,
              residual: int | None = None, lam: float = 1.0, clip: float | None = None,
              kind: str = "linear") -> Tensor:
    """One head of attention over the context rows i < n, for the query rows t in [q0, q1), per seed and
    task, computed by the compiled code on tokens in block layout (`to_blocks`); differentiable.
    kind "linear": o_t = U C M x_t with C = scale * sum_{i < n} x_i x_i^T (M = W_K^T W_Q, U = P W_V);
    kind "softmax": o_t = U sum_i w_ti x_i with w_t = scale * softmax_i(x_i . M x_t) (M = W_K^T W_Q / tau).

    With `residual` (a token coordinate r), the whole residual layer instead:
    o_t = clamp(x_t[r:r+G] + lam * (the attention's o_t), -clip, clip) (no clamp when clip is None), so that residual,
    dampening and clipping cost no extra pass over the tokens, forward or backward.
    tok (S, NB, TT, D, L) or shared by the seeds (NB, TT, D, L); m (S, D, D); u (S, G, D)
    -> (S, NB, q1 - q0, G, L). Shared tokens get no gradient."""
    check_layer_args("compiled attention", residual, lam, clip, kind)
    return CompiledAttention.apply(tok, m, u, n, q0, q1, scale, -1 if residual is None else residual,
                                 lam, 0.0 if clip is None else clip, _PREFIX[kind])


def check_layer_args(who: str, residual: int | None, lam: float, clip: float | None, kind: str) -> None:
    """ValueError unless the arguments of one head's attention call fit (this kernel's and the Triton kernels'):
    dampening and clipping only for a residual layer, a positive clip, a known kind."""
    if residual is None and (lam != 1.0 or clip is not None):
        raise ValueError("lam and clip apply to a residual layer: pass residual")
    if clip is not None and not clip > 0:
        raise ValueError(f"clip must be > 0, got {clip}")
    if kind not in _PREFIX:
        raise ValueError(f"{who}: kind must be one of {sorted(_PREFIX)}, got {kind!r}")


class CompiledAttention(torch.autograd.Function):
    """The autograd function behind `attention` (all arguments positional; g0 = -1: no residual, clip 0:
    no clamp; prefix "lsa" or "smx", the C functions)."""

    @staticmethod
    def forward(fctx, tok: Tensor, m: Tensor, u: Tensor, n: int, q0: int, q1: int,  # type: ignore[override]
                scale: float, g0: int, lam: float, clip: float, prefix: str) -> Tensor:
        lib = load()
        assert lib is not None
        if tok.dim() == 4 and tok.requires_grad:
            raise ValueError("shared tokens (NB, T, D, L) get no gradient: pass them per seed (S, NB, T, D, L)")
        tok, m, u = (t.detach().contiguous() for t in (tok, m, u))
        s_n, g, d = m.shape[0], u.shape[-2], m.shape[-1]
        nb, tt = tok.shape[-4], tok.shape[-3]
        if (tok.shape[-2:] != (d, lanes()) or not 0 < n <= tt or not 0 <= q0 < q1 <= tt
                or (g0 >= 0 and g0 + g > d)):
            raise ValueError(f"compiled attention: tokens {tuple(tok.shape)} do not fit D={d}, n={n}, rows {q0}:{q1}, "
                             f"residual coordinates {g0}:{g0 + g}")
        dims = _Dims(s_n, nb, tt, n, q0, q1, d, g, g0, nb * tt * d if tok.dim() == 5 else 0)
        out = tok.new_empty(s_n, nb, q1 - q0, g, tok.shape[-1])
        suffix = "_f32" if tok.dtype == torch.float32 else "_f64"
        _run(getattr(lib, prefix + "_forward" + suffix),
             [_ptr(tok), _ptr(m), _ptr(u), _ptr(out), ctypes.byref(dims), scale, lam, clip])
        fctx.save_for_backward(tok, m, u)
        fctx.dims, fctx.args, fctx.prefix = dims, (scale, lam, clip), prefix
        return out

    @staticmethod
    def backward(fctx, grad: Tensor):  # type: ignore[override]
        lib = load()
        tok, m, u = fctx.saved_tensors
        dims = fctx.dims
        s_n, nb, d, g = dims.S, dims.NB, dims.D, dims.G
        wants_gtok = fctx.needs_input_grad[0] and tok.dim() == 5
        gtok = tok.new_empty(s_n, nb, dims.TT, d, tok.shape[-1]) if wants_gtok else None
        gm_part = m.new_empty(s_n, nb, d, d)
        gu_part = u.new_empty(s_n, nb, g, d)
        go = grad.contiguous()  # bound to a name: it must outlive the call
        suffix = "_f32" if tok.dtype == torch.float32 else "_f64"
        _run(getattr(lib, fctx.prefix + "_backward" + suffix),
             [_ptr(tok), _ptr(m), _ptr(u), _ptr(go), _ptr(gtok), _ptr(gm_part), _ptr(gu_part),
              ctypes.byref(dims), *fctx.args])
        return gtok, gm_part.sum(1), gu_part.sum(1), None, None, None, None, None, None, None, None


def ineligible(config, dtype: torch.dtype, device: torch.device | str, n_tokens: int, width: int) -> str | None:
    """Why the compiled backend cannot run this stack (a `StackConfig` the fused backend runs), or None when
    it can: one head, no MLP or LayerNorm, float32/float64 on the CPU, a context that fits its buffers, and
    a library that compiled here."""
    if config.attention.n_heads != 1:
        return f"{config.attention.n_heads} heads (it computes one)"
    if config.mlp or config.layer_norm:
        return "MLP or LayerNorm blocks (it computes attention-only stacks)"
    return unavailable(dtype, device, n_tokens, width)


def unavailable(dtype: torch.dtype, device: torch.device | str, n_tokens: int, width: int) -> str | None:
    """Why the compiled code cannot compute one head's attention over n_tokens tokens of this width here, or
    None when it can: float32/float64 on the CPU, tokens that fit its buffers, a library that compiled."""
    if torch.device(device).type != "cpu" or dtype not in (torch.float32, torch.float64):
        return f"{dtype} on {torch.device(device)} (it runs float32/float64 on the CPU)"
    if not fits(n_tokens, width, dtype):
        return f"{n_tokens} tokens of width {width} exceed its buffers"
    if load() is None:
        return status()
    return None
