"""Which network a training config describes: build it, name its weights, wrap it as a learner.

Every model kind is an nn.Module whose state_dict holds the weights the engine stacks over seeds:
- kind "stack": a `Stack` (weights named as in `Stack.state_dict()`), read through concatenated or
  interleaved tokens by a `TransformerLearner`;
- kind "mlp_lsa": a `FeatureLSA` (embedding + MLP + LSA, or the GD control), itself a learner;
- kind "lstm": an `LSTMLearner` (LSTM or BiLSTM read out at the query token), itself a learner;
- kind "kernel_gd": a `KernelGD` (kernel functional GD with learnt rates and kernel parameters), a learner.

A task with a constant prior p_0 (categorical) starts a stack's predictions there: tokens [x; y - p_0].
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from icgd.core.episodes import make_generator
from icgd.learners.deep import FeatureLSA
from icgd.learners.kernel_gd import KernelGD
from icgd.learners.recurrent import LSTMLearner
from icgd.learners.tokens import ConcatTokens, InterleavedTokens
from icgd.learners.transformer import TransformerLearner
from icgd.nn.stack import Stack
from icgd.train.config import (
    DTYPES,
    CausalLMConfig,
    FeatureLSAConfig,
    KernelGDConfig,
    LSTMConfig,
    ModelConfig,
    TrainConfig,
)


def build_module(config: TrainConfig, dtype: torch.dtype = torch.float32, device: torch.device | str | None = None,
                 generator: torch.Generator | None = None) -> nn.Module:
    """The module whose state_dict is one seed's weights (initialised from `generator`)."""
    m = config.model
    if isinstance(m, ModelConfig):
        return Stack(config.stack_config(), dtype=dtype, device=device, generator=generator)
    if isinstance(m, FeatureLSAConfig):
        std = None if m.init_scale is None else (m.init_scale / m.d_embed) ** 0.5
        return FeatureLSA(config.task.dx, config.task.dy, m.d_embed, m.mlp_ratio, m.gd_control, m.eta_init, std,
                          dtype=dtype, device=device, generator=generator, mlp_init_scale=m.mlp_init_scale,
                          learn_eta=m.learn_eta)
    if isinstance(m, KernelGDConfig):
        biases = {"none": None, "tied": "tied", "free": m.eta_init}[m.constant_head]
        return KernelGD(m.kernel, m.eta_init, m.n_layers, config.task.dy, biases=biases, kernel_params=m.kernel_init,
                        kernel_options=m.kernel_options, prior=getattr(config.task, "prior", 0.0),
                        n_scale=config.task.n_context, learn_kernel_params=m.learn_kernel_params, dtype=dtype,
                        device=device, name="kernel_gd")
    if isinstance(m, LSTMConfig):
        return LSTMLearner(config.task.dx, config.task.dy, m.hidden, m.n_layers, m.bidirectional, dtype=dtype,
                           device=device, generator=generator)
    if isinstance(m, CausalLMConfig):
        from icgd.learners.causal_lm import CausalLM, lm_stack_config

        vocab = getattr(config.task, "vocab", None)
        if vocab is None:
            raise ValueError(f"model kind causal_lm needs a text task (task.kind: text), got {config.task.kind!r}")
        return CausalLM(vocab, lm_stack_config(m.d_model, m.n_layers, m.n_heads, m.mlp_ratio, m.attention, m.init_std),
                        dtype=dtype, device=device, generator=generator)
    raise TypeError(f"unknown model kind {m.kind!r}")


def as_learner(config: TrainConfig, module: nn.Module, name: str = "transformer") -> Any:
    """The learner (Episodes -> predictions (B, Q, Dy)) around `module`."""
    if isinstance(module, Stack):
        tokens = (InterleavedTokens() if config.model.tokens == "interleaved"
                  else ConcatTokens(prior=getattr(config.task, "prior", None)))
        return TransformerLearner(module, tokens, name=name)
    module.name = name
    return module


def param_prefix(config: TrainConfig) -> str:
    """Prefix of the weights' names inside the learner (for torch.func.functional_call)."""
    return "model." if isinstance(config.model, ModelConfig) else ""


# ------------------------------------------------------------------------------- seed-stacked weights
def init_params(config: TrainConfig, device: torch.device | str = "cpu") -> dict[str, Tensor]:
    """Stacked initial weights {name: (S, ...)}: seed s initialises its model from make_generator(s)."""
    dtype = DTYPES[config.dtype]
    states = [build_module(config, dtype=dtype, generator=make_generator(s)).state_dict() for s in config.seeds]
    return {k: torch.stack([st[k] for st in states]).to(device) for k in states[0]}


def trainable_names(config: TrainConfig) -> list[str]:
    template = build_module(config, device="meta")
    return [k for k, p in template.named_parameters() if p.requires_grad]


def seed_learner(config: TrainConfig, params: dict[str, Tensor], index: int) -> Any:
    """The trained model of seed number `index` (position in config.seeds) as a learner."""
    first = next(iter(params.values()))
    module = build_module(config, dtype=first.dtype, device=first.device)
    module.load_state_dict({k: v[index] for k, v in params.items()})
    return as_learner(config, module, name=f"trained_seed{config.seeds[index]}")
