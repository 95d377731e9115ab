"""The CUDA graph step (`icgd.train.graphed`), checked without a GPU: its Adam is torch.optim's Adam to float
rounding, and the whole step, run eagerly on the CPU on the same batches, moves the weights as `Stepper`
does. What only a GPU shows (the capture, the replay, the speed) is in the last test, skipped here."""

import dataclasses

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from icgd.tasks import TASKS
from icgd.tasks.categorical import CategoricalQuadrants
from icgd.train.backends import select
from icgd.train.checkpoint import CheckpointError
from icgd.train.config import OptimConfig, TrainConfig, load_config
from icgd.train.data import TaskStream
from icgd.train.engine import Stepper, train
from icgd.train.graphed import DeviceStream, GraphStep, StaticAdam, ineligible
from icgd.train.kinds import MODEL_KINDS
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
    gs = _steps_as_the_stepper(_config(preset=preset, **over), moved=1e-3)
    assert not bool(gs.bad)


def _steps_as_the_stepper(cfg, moved: float, steps: int | None = None) -> GraphStep:
    """A GraphStep and `Stepper` (eager) on the same batches for `steps` (default the config's): the same
    losses and weights after every step, and some weight moved by more than `moved`. Returns the GraphStep."""
    ref = Stepper(cfg, "cpu", graph=False)
    params = init_params(cfg, "cpu")
    names = trainable_names(cfg)
    for k in names:
        params[k].requires_grad_(True)
    gs = GraphStep(cfg, params, names, ref.backend, torch.device("cpu"))
    stream = TaskStream(cfg, "cpu")  # the same seeds as the stepper's own stream: the same batches
    for _ in range(cfg.steps if steps is None else steps):
        losses, applied = ref.step(0)
        assert applied
        gs.compute(stream.next())
        torch.testing.assert_close(gs.losses, losses, rtol=1e-12, atol=1e-14)
        for k in names:
            torch.testing.assert_close(params[k].detach(), ref.params[k].detach(), rtol=1e-10, atol=1e-13)
    assert any((params[k] - init_params(cfg, "cpu")[k]).abs().max() > moved for k in names)
    return gs


class _HostReads(TorchDispatchMode):
    """Records the ops that read a tensor's value back to the host (`.item()`, `int(t)`, indexing with a 0-d
    tensor, `nonzero`): a CUDA graph capture fails on each of them (cudaErrorStreamCaptureUnsupported)."""

    READS = ("aten._local_scalar_dense", "aten.nonzero", "aten.lift_fresh")

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = str(func)
        # a copy between devices (a cast on the same device, int to float say, stays on the device)
        moves = name.startswith("aten._to_copy") and kwargs.get("device") not in (None, getattr(args[0], "device", None))
        if name.startswith(self.READS) or moves:
            self.reads.append(name)
        return func(*args, **kwargs)


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


#: a small config on a sync-free task for every model kind that declares `graph_capturable`, one the fused
#: backend does not take (float64, so that the step equals `Stepper`'s to rounding); a kind that declares it
#: without a case here fails the test below
_LM = {"kind": "causal_lm", "d_model": 8, "n_heads": 2, "n_layers": 1}
CAPTURABLE = {
    "stack": [{"preset": "softmax-2", "data": "per_seed", "model.attention.n_heads": 2, "model.attention.causal": True,
               "model.attention.query_in_keys": True, "model.attention.momentum": 0.5}],
    "lstm": [{"preset": "lstm-2", "data": "per_seed", "model.hidden": 4},
             {"preset": "bilstm-2", "model.hidden": 3}],
    "mlp_lsa": [{"task": {"kind": "sine", "n_context": 6}, "model": {"kind": "mlp_lsa", "d_embed": 4},
                 "eval": {"reference": "zero"}}],
    "causal_lm": [{"task": {"kind": "recall", "vocab": 16, "n_pairs": 2}, "model": _LM | {"attention": {"momentum": 0.5}},
                   "eval": {"reference": "unigram"}},
                  {"task": {"kind": "bursty", "n_classes": 8, "n_labels": 4, "ways": 2},
                   "model": _LM | {"attention": {"momentum": 0.5, "learn_momentum": True}},
                   "eval": {"reference": "unigram"}}],
    "decoder": [{"task": {"kind": "gaussian", "dx": 3, "n_context": 5, "n_queries": 2},
                 "model": {"kind": "decoder", "d_model": 8, "n_heads": 2, "n_layers": 2}, "eval": {"reference": "zero"}}],
}


def _case_config(case: dict):
    case = dict(case)
    if "preset" in case:
        return _config(**case)
    base = {"seeds": [0, 3], "batch_size": 6, "steps": 4, "dtype": "float64", "data": "per_seed",
            "optim": {"lr": 0.01, "grad_clip": 1e-4}, "eval": {"every": 2, "n_tasks": 16, "n_tune": 16}}
    return TrainConfig.model_validate(base | case | {"eval": base["eval"] | case.get("eval", {})})


def test_every_capturable_kind_has_a_case():
    declared = {name for name, kind in MODEL_KINDS.items() if kind.graph_capturable}
    assert declared == set(CAPTURABLE), "a kind that declares graph_capturable needs its case in CAPTURABLE"


@pytest.mark.parametrize("kind,i", [(k, i) for k, cases in CAPTURABLE.items() for i in range(len(cases))])
def test_capturable_kinds_step_as_the_stepper_and_read_nothing_back(kind, i):
    """What `graph_capturable` promises, for each kind that declares it: on the generic backend the graph
    step moves the weights as `Stepper` does on the same batches, the graph step is taken on a CUDA device,
    and no op of the step reads a value back to the host."""
    cfg = _case_config(CAPTURABLE[kind][i])
    assert cfg.model.kind == kind and getattr(cfg.task, "sync_free_sampling", False)
    backend = select(cfg, "cpu")
    assert backend.name == "generic"
    assert ineligible(cfg, backend, torch.device("cuda")) is None
    gs = _steps_as_the_stepper(cfg, moved=1e-6, steps=3)
    with _HostReads() as mode:
        for _ in range(2):
            gs.compute(gs.batch())
    assert mode.reads == []


@pytest.mark.parametrize("kind", [k for k, t in TASKS.items() if getattr(t, "sync_free_sampling", False)])
def test_sync_free_tasks_sample_without_reading_back(kind):
    """A task that declares `sync_free_sampling` draws its batch without a host read (the graph step draws
    inside the capture)."""
    cfgs = [_case_config(c) for cases in CAPTURABLE.values() for c in cases]
    task = next((c.task for c in cfgs if c.task.kind == kind), None) or TASKS[kind]()
    gen = torch.Generator().manual_seed(0)
    with _HostReads() as mode:
        task.sample(8, gen, device="cpu", dtype=torch.float64)
    assert mode.reads == []


def test_a_failed_capture_goes_on_eagerly(monkeypatch):
    """A capture that fails on the device (an op the checks above did not foresee) costs the graph, not the
    run: the same static step goes on eagerly, with a warning, and `step_path` says why."""
    cfg = _config()
    st = Stepper(cfg, "cpu", graph=False)
    gs = GraphStep(cfg, st.params, st.names, st.backend, torch.device("cpu"))

    def refuse():
        raise RuntimeError("CUDA error: operation not permitted when stream is capturing\nmore detail")

    monkeypatch.setattr(gs, "capture", refuse)
    st.graph_step = gs
    before = {k: v.detach().clone() for k, v in st.params.items()}
    with pytest.warns(RuntimeWarning, match="capture failed: CUDA error: operation not permitted"):
        for i in range(st.GRAPH_WARMUP + 3):
            losses, applied = st.step(i)
            assert applied and torch.isfinite(losses).all()
    assert gs.eager_steps == st.GRAPH_WARMUP + 3 and gs.graph is None
    assert "capture failed" in st.step_path and "more detail" not in st.step_path
    assert any(not torch.equal(st.params[k].detach(), before[k]) for k in st.names)


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
    stream = DeviceStream(gs.generator, cfg.data_seed)
    state = stream.state()
    first = gs.batch()[0]
    stream.load_state(state)
    assert torch.equal(gs.batch()[0], first)
    # a restarted stream (--new-task-stream) is a function of the data seed and the step, and not the old one
    stream.restart(5)
    again = gs.batch()[0]
    stream.restart(5)
    assert torch.equal(gs.batch()[0], again) and not torch.equal(again, first)


def test_which_configs_the_graph_step_takes(monkeypatch):
    cfg = _config()
    cuda = torch.device("cuda")
    fused = select(cfg, "cpu")
    assert ineligible(cfg, fused.__class__("fused", "", fused.loss_fn), cuda) is None
    assert "CUDA device" in ineligible(cfg, fused, "cpu")
    generic = fused.__class__("generic", "", fused.loss_fn)
    assert ineligible(cfg, generic, cuda) is None  # the stack kind declares graph_capturable
    monkeypatch.setitem(MODEL_KINDS, "stack", dataclasses.replace(MODEL_KINDS["stack"], graph_capturable=False))
    assert "does not declare its step capturable" in ineligible(cfg, generic, cuda)
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
        DeviceStream(torch.Generator(), cfg.data_seed).load_state(TaskStream(cfg, "cpu").state())


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
