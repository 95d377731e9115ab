"""The one seam between a training config and the code that computes its per-seed losses.

Three backends compute the same losses (tested equal in value and gradient):
- "compiled": C code for one-head linear or softmax attention stacks on the CPU (`icgd.train.compiled`);
- "fused": PyTorch products written out for linear or softmax attention stacks on concatenated tokens,
  any head count, MLP and LayerNorm, any device (`icgd.train.fused`); on the CPU, where the C code
  compiled, each head's attention is a call of the compiled kernel and the rest (heads summed, residual,
  LayerNorm, MLP) stays in PyTorch; on a CUDA device, where Triton is installed, the Triton kernels
  (`icgd.train.triton_attention`) compute each layer of a one-head attention-only stack whole, or each
  head's attention of the others;
- "generic": any model, each seed's module called through `torch.func.vmap` (about 10x slower).

`select(config, device)` picks the fastest that applies; each backend has one eligibility rule
(`fused.ineligible`, `compiled.ineligible`) and the choice comes with the reason a faster one was not
taken, which `icgd train` prints and env.json / summary.json record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor
from torch.func import functional_call, vmap

from icgd.core.episodes import Episodes
from icgd.train import compiled, fused, triton_attention
from icgd.train.config import DTYPES, TrainConfig
from icgd.train.kinds import MODEL_KINDS, model_kind
from icgd.train.models import as_learner, build_module, param_prefix

#: fn(params {name: (S, ...)}, context_x, context_y, query_x, query_y) -> per-seed losses (S,)
LossFn = Callable[..., Tensor]


@dataclass(frozen=True)
class Backend:
    """The chosen backend: its name, why it (and not a faster one) was chosen, and its loss function."""

    name: str
    reason: str
    loss_fn: LossFn

    def describe(self) -> str:
        return f"{self.name} ({self.reason})"


def fused_ineligible(config: TrainConfig) -> str | None:
    """Why the fused backend cannot train this config, or None when it can."""
    m = config.model
    if "fused" not in model_kind(m).backends:
        covered = ", ".join(k.name for k in MODEL_KINDS.values() if "fused" in k.backends)
        return f"model kind {m.kind!r} (it covers the kinds {covered})"
    if m.tokens != "concat":
        return f"{m.tokens} tokens (it covers concatenated tokens)"
    if config.task.prior is not None:
        return "tokens start at a constant prior (categorical task); it covers tokens [x; y]"
    if config.task.objective != "squared_error":
        return f"objective {config.task.objective!r} (it computes the squared error)"
    if not config.fast:
        return "fast: false in the config"
    return fused.ineligible(config.stack_config())


def compiled_ineligible(config: TrainConfig, device: torch.device | str) -> str | None:
    """Why the compiled backend cannot train this config, or None when it can."""
    reason = fused_ineligible(config)
    if reason is not None:
        return reason
    if "compiled" not in model_kind(config.model).backends:
        return f"model kind {config.model.kind!r}"
    t = config.task
    return compiled.ineligible(config.stack_config(), DTYPES[config.dtype], device, t.n_context + t.n_queries,
                               t.dx + t.dy)


def select(config: TrainConfig, device: torch.device | str = "cpu") -> Backend:
    """The fastest backend that computes `config`'s losses exactly on `device`."""
    no_fused = fused_ineligible(config)
    if no_fused is not None:
        return Backend("generic", f"fused backend not eligible: {no_fused}", _generic_losses(config))
    no_compiled = compiled_ineligible(config, device)
    if no_compiled is None:
        return Backend("compiled", "one-head attention stack on the CPU", _stack_losses(config, compiled_ok=True))
    return Backend("fused", f"compiled backend not eligible: {no_compiled}{_kernel_note(config, device)}",
                   _stack_losses(config, compiled_ok=False, heads_compiled=None, triton_ok=None))


def _kernel_note(config: TrainConfig, device: torch.device | str) -> str:
    """What computes the fused path's attention, for the backend's reason: the Triton kernels on a CUDA
    device (or why not), the compiled kernel per head on the CPU, else nothing to add."""
    t = config.task
    if torch.device(device).type == "cuda":
        why_not = triton_attention.unavailable(DTYPES[config.dtype], device, t.n_context + t.n_queries,
                                               fused.padded_width(t.dx + t.dy))
        if why_not is not None:
            return f"; attention by PyTorch products, not the Triton kernels: {why_not}"
        per = triton_attention.not_whole_layers(config.stack_config())
        return ("; each layer's attention by the Triton kernels" if per is None else
                f"; each head's attention by the Triton kernels ({per})")
    return "; each head's attention by the compiled kernel" if _heads_compiled(config, device) else ""


def _stack_losses(config: TrainConfig, compiled_ok: bool, heads_compiled: bool | None = False,
                  triton_ok: bool | None = False) -> LossFn:
    """The fused (or, with `compiled_ok`, compiled) per-seed losses of an eligible attention stack;
    heads_compiled and triton_ok: attention by the compiled kernel per head, or by the Triton kernels, in the
    fused path (None: where they can; False: not, as `backend(config, "fused")` asks for PyTorch products
    only, to compare the paths)."""
    stack_cfg = config.stack_config()
    return lambda params, *batch: fused.lsa_losses(params, stack_cfg, *batch, compiled_ok=compiled_ok,
                                                   heads_compiled=heads_compiled, triton_ok=triton_ok)


def _generic_losses(config: TrainConfig) -> LossFn:
    template = as_learner(config, build_module(config, device="meta"))
    prefix = param_prefix(config)
    task_loss = config.task.loss

    def one(p: dict[str, Tensor], cx: Tensor, cy: Tensor, qx: Tensor, qy: Tensor) -> Tensor:
        pred = functional_call(template, {prefix + k: v for k, v in p.items()}, (Episodes(cx, cy, qx, qy),))
        return task_loss(pred, qy).mean()

    shared = config.data == "shared"

    def losses(params: dict[str, Tensor], *batch: Tensor) -> Tensor:
        return vmap(one, in_dims=(0,) + ((None,) * 4 if shared else (0,) * 4))(params, *batch)

    return losses


def backend(config: TrainConfig, name: str, device: torch.device | str = "cpu") -> Backend:
    """Backend `name` for `config`, whether or not `select` would pick it (to compare backends): "compiled",
    "fused-heads" (the fused path with each head by the compiled kernel: what `select` picks for stacks
    the compiled backend does not take whole), "fused-triton" (the fused path with attention by the Triton
    kernels: what `select` picks on a CUDA device; on the CPU they run in Triton's interpreter, for tests),
    "fused" (PyTorch products only) or "generic"; ValueError with the reason when it cannot compute this
    config."""
    if name == "generic":
        return Backend("generic", "asked for", _generic_losses(config))
    if name not in ("fused", "fused-heads", "fused-triton", "compiled"):
        raise ValueError(f"unknown backend {name!r}; known: compiled, fused-heads, fused-triton, fused, generic")
    reason = compiled_ineligible(config, device) if name == "compiled" else fused_ineligible(config)
    if reason is None and name == "fused-heads" and not _heads_compiled(config, device):
        reason = f"the compiled kernel does not run here ({compiled.status()})"
    if reason is None and name == "fused-triton":
        reason = triton_attention.import_error()
    if reason is not None:
        raise ValueError(f"the {name} backend cannot compute this config: {reason}")
    return Backend(name, "asked for", _stack_losses(config, compiled_ok=name == "compiled",
                                                     heads_compiled=name == "fused-heads",
                                                     triton_ok=name == "fused-triton"))


def _heads_compiled(config: TrainConfig, device: torch.device | str) -> bool:
    """Whether the fused path can compute each head's attention with the compiled kernel."""
    t = config.task
    width = fused.padded_width(t.dx + t.dy)
    return fused.compiled_heads(config.stack_config(), DTYPES[config.dtype], device, t.n_context + t.n_queries, width)
