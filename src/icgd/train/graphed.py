"""The training step as one static computation, for a CUDA graph.

On `--device cuda` icgd's step is bound by kernel launches: a step of a 1-layer LSA model is
some hundreds of small kernels (sampling, the fused forward and backward, clipping, Adam), each a few
microseconds of work behind a launch. Here every piece of a step's state stays in a tensor that is updated
in place (the weights, Adam's moments, the step count and the learning rates of every step), the batch is
drawn on the device from one generator, and nothing reads a value back to the host. On a CUDA device the
whole step is then captured once as a CUDA graph (`torch.cuda.CUDAGraph`) and replayed: one launch per step.

`GraphStep.run()` is that step; on the CPU (and before the capture) it runs eagerly, which is how the tests
check it without a GPU: given the same batches it moves the weights as `engine.Stepper` does (tests/
test_graphed.py, to float rounding: Adam's per-step scalars enter as tensors, not Python floats).

What changes against `Stepper` on a device: the tasks come from one generator on the device (seeded from
`data_seed`), so they follow the same law but are other draws than the CPU generators give (`TaskStream`'s
note); a seed therefore does not give the same weights on the GPU path as on the CPU. `ineligible` says
which configs it takes: the fused backend, and the generic one (each seed's module through vmap) for the model
kinds that declare `graph_capturable`; tasks that declare their sampling sync-free (`sync_free_sampling`);
fresh tasks every step (a fixed training set indexes on the host). Both declarations are checked on the CPU
(tests/unit/test_graphed.py: no op of the step reads a value back to the host). Should a capture still fail on a
device, `engine.Stepper` goes on with the same static step run eagerly, and says so.
"""

from __future__ import annotations

import torch
from torch import Tensor

from icgd.train.backends import Backend
from icgd.train.checkpoint import CheckpointError
from icgd.train.config import DTYPES, TrainConfig
from icgd.train.data import restart_seed
from icgd.train.kinds import model_kind
from icgd.train.optim import clip_per_seed, lr_factor


def ineligible(config: TrainConfig, backend: Backend, device: torch.device | str) -> str | None:
    """Why the graph step cannot train `config` on `device`, or None when it can."""
    device = torch.device(device)
    if device.type != "cuda":
        return f"device {device.type} (a CUDA graph needs a CUDA device)"
    if backend.name == "generic" and not model_kind(config.model).graph_capturable:
        return (f"backend generic for model kind {config.model.kind!r}, which does not declare its step "
                "capturable (graph_capturable)")
    if backend.name not in ("fused", "generic"):
        return f"backend {backend.name} (the graph step covers the fused and the generic backend)"
    if config.warm_start is not None:
        return "a warm start (the batches change task midway)"
    if config.train_set_size is not None:
        return "a fixed training set (its batches are indexed on the host)"
    if not config.task.sync_free_sampling:
        return f"task kind {config.task.kind!r} does not declare sync-free sampling"
    return None


class StaticAdam:
    """Adam / AdamW (`icgd.train.optim.Adam`'s arithmetic) with all of its state in device tensors: the
    moments, the step count, and per step the learning rate and the two bias corrections, computed on the host
    once (in float64, as torch.optim.Adam computes them per step) and read by index on the device."""

    def __init__(self, params: dict[str, Tensor], names: list[str], cfg, total: int) -> None:
        self.cfg, self.names, self.total = cfg, names, total
        self.tensors = [params[k] for k in names]
        dev = self.tensors[0].device
        self.m = [torch.zeros_like(p) for p in self.tensors]
        self.v = [torch.zeros_like(p) for p in self.tensors]
        self.t_dev = torch.zeros((), dtype=torch.long, device=dev)
        lrs = [cfg.lr * lr_factor(cfg, i, total) for i in range(total)]
        self.lr = torch.tensor(lrs, dtype=torch.float64, device=dev)
        # torch.optim.Adam (non-capturable): step_size = lr / (1 - beta1^t), denominator sqrt(v) / sqrt(1 - beta2^t)
        self.step_size = torch.tensor([lr / (1 - cfg.beta1 ** (i + 1)) for i, lr in enumerate(lrs)],
                                      dtype=torch.float64, device=dev)
        self.bc2_sqrt = torch.tensor([(1 - cfg.beta2 ** (i + 1)) ** 0.5 for i in range(total)],
                                     dtype=torch.float64, device=dev)
        self.t = 0  # the host's count (checkpoints, `lr_at`); `t_dev` is the device's

    def lr_at(self, step: int, total: int | None = None) -> float:
        return self.cfg.lr * lr_factor(self.cfg, step, self.total if total is None else total)

    @torch.no_grad()
    def update(self, grads: list[Tensor]) -> None:
        """One update at the device's step count, which then moves on (no host read: capturable)."""
        cfg = self.cfg
        # index_select, not `self.lr[i]`: indexing with a 0-d tensor reads it on the host (`.item()`), which a
        # capture refuses (cudaErrorStreamCaptureUnsupported, seen on an H100); test_graphed checks for host reads
        i = self.t_dev.clamp(max=self.total - 1).view(1)
        lr, step_size, bc2 = (x.index_select(0, i).view(()) for x in (self.lr, self.step_size, self.bc2_sqrt))
        for p, g, m, v in zip(self.tensors, grads, self.m, self.v):
            if cfg.weight_decay:
                if cfg.name == "adamw":
                    p.mul_((1 - lr * cfg.weight_decay).to(p.dtype))
                else:
                    g = g.add(p, alpha=cfg.weight_decay)
            m.lerp_(g, 1 - cfg.beta1)
            v.mul_(cfg.beta2).addcmul_(g, g, value=1 - cfg.beta2)
            denom = (v.sqrt() / bc2.to(p.dtype)).add_(cfg.eps)
            p.sub_((m / denom) * step_size.to(p.dtype))  # addcdiv's order: value * (m / denom)
        self.t_dev.add_(1)

    def state(self) -> dict[str, Tensor]:
        return {f"optim.{w}.{k}": x for k, m, v in zip(self.names, self.m, self.v) for w, x in (("m", m), ("v", v))}

    def load_state(self, tensors: dict[str, Tensor], t: int) -> None:
        with torch.no_grad():
            for k, m, v in zip(self.names, self.m, self.v):
                m.copy_(tensors[f"optim.m.{k}"])
                v.copy_(tensors[f"optim.v.{k}"])
            self.t_dev.fill_(t)
        self.t = t


class GraphStep:
    """Sampling, per-seed losses, gradients, per-seed clipping and Adam for all seeds, with static tensors.

    `run()` runs one step eagerly; `capture()` (CUDA only) records it once as a CUDA graph, after which `run()`
    replays it. The losses of the last step are in `losses` (S,); `bad` holds whether any loss was non-finite
    since the start (read by `Stepper.diverged`, as on its device path)."""

    def __init__(self, config: TrainConfig, params: dict[str, Tensor], names: list[str], backend: Backend,
                 device: torch.device) -> None:
        self.config, self.params, self.names, self.backend = config, params, names, backend
        self.device = device
        self.opt = StaticAdam(params, names, config.optim, config.steps)
        self.dtype = DTYPES[config.dtype]
        self.generator = torch.Generator(device)
        self.generator.manual_seed(config.data_seed)
        self.losses = torch.zeros(len(config.seeds), dtype=self.dtype, device=device)
        self.bad = torch.zeros((), dtype=torch.bool, device=device)
        self.graph = None
        self.eager_steps = 0  # steps run eagerly since construction (a resumed run warms up again)
        # the eager steps before the capture run on the stream the capture uses, as PyTorch's CUDA-graph notes
        # ask (libraries set up their per-stream state there, outside the capture)
        self.side = torch.cuda.Stream(device) if device.type == "cuda" else None

    def batch(self) -> tuple[Tensor, ...]:
        """A fresh batch drawn on the device: (B, ...) shared by the seeds or (S, B, ...), one set of tasks
        per seed, from one draw of S * B tasks."""
        cfg = self.config
        shared = cfg.data == "shared"
        n = cfg.batch_size * (1 if shared else len(cfg.seeds))
        ep = cfg.task.sample(n, self.generator, device=self.device, dtype=self.dtype)
        fields = (ep.context_x, ep.context_y, ep.query_x, ep.query_y)
        return fields if shared else tuple(f.reshape(len(cfg.seeds), cfg.batch_size, *f.shape[1:]) for f in fields)

    def compute(self, batch: tuple[Tensor, ...]) -> None:
        """The step on a given batch (what a replay computes on a batch it draws itself)."""
        losses = self.backend.loss_fn(self.params, *batch)
        grads = torch.autograd.grad(losses.sum(), [self.params[k] for k in self.names])
        clip_per_seed(dict(zip(self.names, grads)), self.config.optim.grad_clip)
        self.opt.update(list(grads))
        with torch.no_grad():
            self.losses.copy_(losses.detach())
            self.bad |= ~torch.isfinite(losses.detach()).all()

    def run(self) -> Tensor:
        if self.graph is not None:
            self.graph.replay()
        elif self.side is not None:
            self.side.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(self.side):
                self.compute(self.batch())
            torch.cuda.current_stream(self.device).wait_stream(self.side)
        else:
            self.compute(self.batch())
        if self.graph is None:
            self.eager_steps += 1
        self.opt.t += 1
        return self.losses

    def capture(self) -> None:
        """Record the step (drawing its batch included) as a CUDA graph on the side stream. Call after a few eager
        steps (`run` before a capture: they warm up the allocator and the libraries' handles on that stream)."""
        graph = torch.cuda.CUDAGraph()
        graph.register_generator_state(self.generator)
        side = self.side
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            with torch.cuda.graph(graph, stream=side):
                self.compute(self.batch())
        torch.cuda.current_stream(self.device).wait_stream(side)
        self.graph = graph


class DeviceStream:
    """The graph step's batches as `Stepper.stream` shows them to a run's checkpoint: the state of the one
    device generator they are drawn from."""

    def __init__(self, generator: torch.Generator, seed: int) -> None:
        self.generator, self.seed = generator, seed

    def state(self) -> dict[str, Tensor]:
        return {"rng.data.device": self.generator.get_state()}

    def load_state(self, tensors: dict[str, Tensor]) -> None:
        if "rng.data.device" not in tensors:
            raise CheckpointError("the checkpoint was written by the eager step (CPU task streams): resume it "
                                  "with ICGD_CUDA_GRAPH=0, or with a new task stream (--new-task-stream)")
        self.generator.set_state(tensors["rng.data.device"].to("cpu", torch.uint8))

    def restart(self, step: int) -> None:
        """As `TaskStream.restart`: the device generator seeded anew from the data seed and `step`."""
        self.generator.manual_seed(restart_seed(self.seed, step))
