"""The CUDA graph step (`icgd.train.graphed`), checked without a GPU: its Adam is torch.optim's Adam to float
rounding, and the whole step, run eagerly on the CPU on the same batches, moves the weights as `Stepper`
does. What only a GPU shows (the capture, the replay, the speed) is in the last test, skipped here."""

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from icgd.tasks.categorical import CategoricalQuadrants
from icgd.train.backends import select
from icgd.train.checkpoint import CheckpointError
from icgd.train.config import OptimConfig, load_config
from icgd.train.data import TaskStream
from icgd.train.engine import Stepper, train
from icgd.train.graphed import DeviceStream, GraphStep, StaticAdam, ineligible
from icgd.train.models import init_params, trainable_names
from icgd.train.optim import Adam

OPTIMS = [{"name": "adam"},
          {"name": "adam", "weight_decay": 0.1, "schedule": "cosine", "warmup_steps": 3, "lr": 1e-2},
          {"name": "adamw", "weight_decay": 0.05, "schedule": "linear", "lr": 3e-2}]


@pytest.mark.parametrize("opt", OPTIMS)
@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-13), (torch.float32, 2e-6)])
def test_static_adam_is_torch_adam(opt, dtype, tol):
    cfg = OptimConfig(**opt)
    gen = torch.Generator().manual_seed(0)
    p0 = {"a": torch.randn(3, 4, 4, generator=gen, dtype=dtype), "b": torch.randn(3, 4, generator=gen, dtype=dtype)}
    pa = {k: v.clone() for k, v in p0.items()}
    pb = {k: v.clone() for k, v in p0.items()}
    ref, mine = Adam(pa, ["a", "b"], cfg, total=12), StaticAdam(pb, ["a", "b"], cfg, total=12)
    for _ in range(12):
        grads = {k: torch.randn(v.shape, generator=gen, dtype=dtype) for k, v in p0.items()}
        ref.step({k: g.clone() for k, g in grads.items()})
        mine.update([grads["a"].clone(), grads["b"].clone()])
    for k in p0:
        moved = (pa[k] - p0[k]).abs().max()
        assert moved > 1e-3
        torch.testing.assert_close(pb[k], pa[k], rtol=tol, atol=tol * float(moved))
    assert int(mine.t_dev) == 12
    # the moments are the checkpoint's, under the same keys
    for key, value in ref.state().items():
        torch.testing.assert_close(mine.state()[key], value, rtol=tol, atol=tol)


def _config(**over):
    base = ["seeds=[0,3]", "task.dx=3", "task.n_context=6", "batch_size=32", "steps=8", "dtype=float64",
            "optim.lr=0.01", "optim.grad_clip=2e-5", "eval.every=4", "eval.n_tasks=64", "eval.n_tune=64"]
    return load_config(over.pop("preset", "lsa-1"), base + [f"{k}={v}" for k, v in over.items()])


@pytest.mark.parametrize("preset,over", [("lsa-1", {}), ("lsa-5", {"data": "per_seed"}),
                                         ("softmax-2", {"optim.schedule": "cosine", "optim.warmup_steps": 2})])
def test_graph_step_moves_the_weights_as_the_stepper(preset, over):
    """The same batches through `GraphStep.compute` and through `Stepper.step`: the same losses and weights
    after every step (clipping binds: grad_clip 2e-5, under the gradients' norms of about 1e-4)."""
    cfg = _config(preset=preset, **over)
    ref = Stepper(cfg, "cpu", graph=False)
    params = init_params(cfg, "cpu")
    names = trainable_names(cfg)
    for k in names:
        params[k].requires_grad_(True)
    gs = GraphStep(cfg, params, names, select(cfg, "cpu"), torch.device("cpu"))
    stream = TaskStream(cfg, "cpu")  # the same seeds as the stepper's own stream: the same batches
    for _ in range(cfg.steps):
        losses, applied = ref.step(0)
        assert applied
        gs.compute(stream.next())
        torch.testing.assert_close(gs.losses, losses, rtol=1e-12, atol=1e-14)
        for k in names:
            torch.testing.assert_close(params[k].detach(), ref.params[k].detach(), rtol=1e-10, atol=1e-13)
    assert any((params[k] - init_params(cfg, "cpu")[k]).abs().max() > 1e-3 for k in names)
    assert not bool(gs.bad)


class _HostReads(TorchDispatchMode):
    """Records the ops that read a tensor's value back to the host (`.item()`, `int(t)`, indexing with a 0-d
    tensor, `nonzero`): a CUDA graph capture fails on each of them (cudaErrorStreamCaptureUnsupported)."""

    READS = ("aten._local_scalar_dense", "aten.nonzero", "aten.lift_fresh", "aten._to_copy")

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if str(func).startswith(self.READS):
            self.reads.append(str(func))
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("preset,over", [("lsa-1", {}), ("lsa-5", {"data": "per_seed"}),
                                         ("softmax-2", {"optim.schedule": "cosine", "optim.warmup_steps": 2,
                                                        "optim.weight_decay": 0.1})])
def test_graph_step_reads_nothing_back_to_the_host(preset, over):
    """What a capture refuses, seen on the CPU: the whole step (drawing the batch, the losses, the gradients,
    clipping, Adam) dispatches no op that reads a value to the host or copies host data in."""
    cfg = _config(preset=preset, **over)
    params = init_params(cfg, "cpu")
    names = trainable_names(cfg)
    for k in names:
        params[k].requires_grad_(True)
    gs = GraphStep(cfg, params, names, select(cfg, "cpu"), torch.device("cpu"))
    with _HostReads() as mode:
        for _ in range(2):
            gs.compute(gs.batch())
    assert mode.reads == []
    assert int(gs.opt.t_dev) == 2  # the step ran (and its count moved on the device)


def test_graph_step_draws_one_batch_per_step_on_its_generator():
    cfg = _config(data="per_seed")
    params = init_params(cfg, "cpu")
    gs = GraphStep(cfg, params, trainable_names(cfg), select(cfg, "cpu"), torch.device("cpu"))
    cx, cy, qx, qy = gs.batch()
    assert cx.shape == (2, 32, 6, 3) and cy.shape == (2, 32, 6, 1) and qx.shape == (2, 32, 1, 3)
    assert not torch.equal(cx[0], cx[1])  # each seed its own tasks
    assert not torch.equal(gs.batch()[0], cx)  # fresh tasks every step
    assert cx.abs().max() <= 1 and abs(float(cx.mean())) < 0.1  # the task's law: U(-1, 1)
    shared = GraphStep(_config(data="shared"), params, trainable_names(cfg), select(cfg, "cpu"), torch.device("cpu"))
    assert shared.batch()[0].shape == (32, 6, 3)
    # the generator's state is what a checkpoint keeps, and restoring it draws the same batch again
    stream = DeviceStream(gs.generator)
    state = stream.state()
    first = gs.batch()[0]
    stream.load_state(state)
    assert torch.equal(gs.batch()[0], first)


def test_which_configs_the_graph_step_takes():
    cfg = _config()
    cuda = torch.device("cuda")
    fused = select(cfg, "cpu")
    assert ineligible(cfg, fused.__class__("fused", "", fused.loss_fn), cuda) is None
    assert "CUDA device" in ineligible(cfg, fused, "cpu")
    assert "backend generic" in ineligible(cfg, fused.__class__("generic", "", fused.loss_fn), cuda)
    assert "fixed training set" in ineligible(_config(train_set_size=64), fused.__class__("fused", "", None), cuda)
    cat = cfg.model_copy(update={"task": CategoricalQuadrants()})
    assert "'categorical' does not declare sync-free" in ineligible(cat, fused.__class__("fused", "", None), cuda)
    with pytest.raises(ValueError, match="CUDA graph step cannot"):
        Stepper(cfg, "cpu", graph=True)
    st = Stepper(cfg, "cpu")
    assert st.graph_step is None and st.step_path.startswith("eager (device cpu")


def test_checkpoints_of_the_two_steps_are_told_apart():
    cfg = _config()
    with pytest.raises(CheckpointError, match="CUDA graph step"):
        TaskStream(cfg, "cpu").load_state({"rng.data.device": torch.Generator().get_state()})
    with pytest.raises(CheckpointError, match="eager step"):
        DeviceStream(torch.Generator()).load_state(TaskStream(cfg, "cpu").state())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_graph_training_on_cuda(tmp_path):
    """On a GPU: the captured step trains (the loss falls, nothing diverges) and replays what its eager
    steps compute (the first steps after the capture equal an eager run of the same static step)."""
    cfg = _config(steps=60, dtype="float32", **{"optim.grad_clip": 10})
    res = train(cfg, tmp_path / "run", device="cuda")
    assert res.summary["step_path"].startswith("CUDA graph")
    rows = res.metrics_frame()
    assert rows.eval_loss.iloc[-1] < rows.eval_loss.iloc[0]
    a, b = Stepper(cfg, "cuda"), Stepper(cfg, "cuda")
    b.graph_step.capture = lambda: None  # b stays eager
    for i in range(8):
        la, _ = a.step(i)
        lb, _ = b.step(i)
        torch.testing.assert_close(la, lb, rtol=1e-5, atol=1e-6)
    assert a.graph_step.graph is not None and b.graph_step.graph is None
