"""One contract over every registered entry: every task in `icgd.tasks.TASKS`, every learner in
`icgd.learners.registry.LEARNERS`, every reference in `icgd.learners.references.REFERENCES`, every kernel in
`icgd.nn.kernels` and every model kind in `icgd.train.kinds.MODEL_KINDS` (scikit-learn's `check_estimator`
idea). The cases are generated from the registries, so a new entry is covered by registering it;
`test_every_registered_entry_has_its_cases` fails if a case list and its registry drift apart.

The contract:
- tasks: episodes of the declared sizes, in the dtype and on the device asked for, the same for the same
  generator and different for another; a per-task loss (B,) that is finite and >= 0; references that exist;
- learners (and every model kind's learner): predictions (B, Q, Dy) in the input's dtype and on its device,
  finite, deterministic, one task's prediction never reading another task of the batch, inputs untouched;
- kernels: shapes, dtype, gradients, and every declared capability true of the function;
- model kinds: an example config that validates, seeded initialisation, the generic backend computing the
  learner's own loss, every declared backend computing the same loss, and a short run lowering the loss.
"""

from __future__ import annotations

import math

import pytest
import torch

from icgd.core.episodes import Episodes, make_generator
from icgd.learners.constructions import constant_kernel_value
from icgd.learners.references import REFERENCES, tune_reference
from icgd.learners.registry import LEARNERS, make_learner
from icgd.nn.attention import Attention, AttentionConfig
from icgd.nn.kernels import get_kernel, kernel_names
from icgd.tasks import TASKS
from icgd.train import backends
from icgd.train.config import build_config
from icgd.train.kinds import MODEL_KINDS
from icgd.train.models import as_learner, build_module, init_params, seed_learner

DTYPES = [torch.float32, torch.float64]
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
TASK_KINDS = list(TASKS)
LEARNER_NAMES = list(LEARNERS)
KERNELS = kernel_names()
KINDS = list(MODEL_KINDS)
BATCH = 6


def _task(kind: str):
    """A registered task with its default sizes; skipped where it needs a package that is not installed."""
    try:
        task = TASKS[kind]()
        task.sample(1, make_generator(0))
    except (ImportError, FileNotFoundError) as e:
        pytest.skip(f"task {kind}: {e}")
    return task


def _moved(learner, dtype: torch.dtype, device: str):
    """A module learner moved to the input's dtype and device (an explicit learner has nothing to move)."""
    return learner.to(device=device, dtype=dtype) if isinstance(learner, torch.nn.Module) else learner


def check_learner(learner, task, dtype: torch.dtype, device: str) -> None:
    """The learner contract on `task`'s episodes."""
    ep = task.sample(BATCH, make_generator(1), dtype=dtype, device=device)
    before = [t.clone() for t in (ep.context_x, ep.context_y, ep.query_x, ep.query_y)]
    learner = _moved(learner, dtype, device)
    with torch.no_grad():
        pred = learner.predict(ep)
        again = learner.predict(ep)
        part = learner.predict(ep[2:4])
    assert isinstance(pred, torch.Tensor) and pred.dim() == 3
    assert pred.shape[:2] == (BATCH, ep.n_queries)
    assert pred.dtype == dtype and pred.device.type == torch.device(device).type
    assert torch.isfinite(pred).all()
    assert torch.equal(pred, again), "two calls on the same episodes differ"
    tol = 1e-4 if dtype == torch.float32 else 1e-9
    torch.testing.assert_close(part, pred[2:4], rtol=tol, atol=tol, msg="one task's prediction read another task")
    for old, new in zip(before, (ep.context_x, ep.context_y, ep.query_x, ep.query_y)):
        assert torch.equal(old, new), "predict changed its input"
    loss = task.loss(pred, ep.query_y)
    assert loss.shape == (BATCH,) and torch.isfinite(loss).all()


# --------------------------------------------------------------------------------------------- coverage
def test_every_registered_entry_has_its_cases():
    """The parametrised lists below are the registries themselves: an entry left out fails here."""
    assert TASK_KINDS == list(TASKS) and LEARNER_NAMES == list(LEARNERS) and KINDS == list(MODEL_KINDS)
    assert KERNELS == kernel_names()
    for name, kind in MODEL_KINDS.items():
        assert kind.example, f"model kind {name} declares no example config: the contract cannot train it"
    objectives = {TASKS[k].objective for k in TASKS}
    for name, entry in LEARNERS.items():
        assert set(entry.objectives) & objectives, f"learner {name} answers no registered task"


# ------------------------------------------------------------------------------------------------ tasks
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", TASK_KINDS)
def test_task_contract(kind, dtype, device):
    task = _task(kind)
    ep = task.sample(BATCH, make_generator(3), dtype=dtype, device=device)
    assert isinstance(ep, Episodes) and ep.batch_size == BATCH
    assert (ep.n_context, ep.n_queries, ep.dx, ep.dy) == (task.n_context, task.n_queries, task.dx, task.dy)
    assert ep.context_x.dtype == dtype and ep.context_x.device.type == torch.device(device).type
    again = task.sample(BATCH, make_generator(3), dtype=dtype, device=device)
    other = task.sample(BATCH, make_generator(4), dtype=dtype, device=device)
    assert all(torch.equal(getattr(ep, f), getattr(again, f)) for f in ("context_x", "context_y", "query_x", "query_y"))
    assert not torch.equal(ep.context_x, other.context_x)
    held = task.evaluation_task().sample(BATCH, make_generator(3), dtype=dtype, device=device)
    assert held.query_x.shape == ep.query_x.shape
    assert set(task.reference_kinds) <= set(REFERENCES), "a reference the registry does not know"


@pytest.mark.parametrize("kind", TASK_KINDS)
def test_task_references_tune_and_predict(kind):
    """Every reference a task lists tunes on its episodes and answers the learner contract on them."""
    task = _task(kind)
    tune = task.sample(64, make_generator(5), dtype=torch.float64)
    for ref in task.reference_kinds:
        check_learner(tune_reference(ref, tune, 1), task, torch.float64, "cpu")


# --------------------------------------------------------------------------------------------- learners
def _learner_cases():
    return [(name, kind) for name in LEARNER_NAMES for kind in TASK_KINDS
            if TASKS[kind].objective in LEARNERS[name].objectives]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,kind", _learner_cases())
def test_learner_contract(name, kind, dtype, device):
    task = _task(kind)
    check_learner(make_learner(name, task, make_generator(0)), task, dtype, device)


def test_learner_registry_refuses_what_it_cannot_do():
    with pytest.raises(ValueError, match="unknown learner"):
        make_learner("oracle", TASKS["linear"]())
    with pytest.raises(ValueError, match="answers squared_error tasks"):
        make_learner("ridge", TASKS["text"]())


# ---------------------------------------------------------------------------------------------- kernels
def _qk(dtype, scale=1.0, seed=0):
    """Queries (2, 3, 4, 5) and keys (2, 3, 6, 5), uniform in [-scale, scale]."""
    g = torch.Generator().manual_seed(seed)
    q = scale * (torch.rand(2, 3, 4, 5, generator=g, dtype=torch.float64) * 2 - 1)
    k = scale * (torch.rand(2, 3, 6, 5, generator=g, dtype=torch.float64) * 2 - 1)
    return q.to(dtype), k.to(dtype)


def _params(kernel, heads=3, dtype=torch.float64):
    return torch.tensor([kernel.param_init] * heads, dtype=dtype).reshape(heads, kernel.n_params)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", KERNELS)
def test_kernel_contract(name, dtype):
    kern = get_kernel(name)
    q, k = _qk(dtype)
    q.requires_grad_(True)
    s = kern.fn(q, k, _params(kern, dtype=dtype), {})
    assert s.shape == (2, 3, 4, 6) and s.dtype == dtype and torch.isfinite(s).all()
    s.sum().backward()
    assert q.grad is not None and torch.isfinite(q.grad).all()
    assert len(kern.param_names) == kern.n_params


@pytest.mark.parametrize("name", KERNELS)
def test_kernel_capabilities_are_true_of_the_function(name):
    """What a kernel declares (`Kernel`'s capability fields) is checked against what it computes."""
    kern = get_kernel(name)
    q, k = _qk(torch.float64)
    s = kern.fn(q, k, _params(kern), {})
    dot = q @ k.transpose(-1, -2)
    if kern.bilinear:
        torch.testing.assert_close(s, dot)
    # normalized: attention weights are a softmax over the keys (rows sum to 1); the others are used raw
    attn = Attention(AttentionConfig(d_model=5, n_heads=1, kernel=name), dtype=torch.float64)
    w = attn.weights(q[:, :1], k[:, :1], None, k.shape[-2])
    if kern.normalized:
        torch.testing.assert_close(w.sum(-1), torch.ones_like(w.sum(-1)))
    else:
        torch.testing.assert_close(w, kern.fn(q[:, :1], k[:, :1], attn.kernel_params, {}))
    # constant head: kappa(0, 0) != 0 for some parameters (at their initial values or a random draw)
    rand = torch.rand(5, max(kern.n_params, 1), generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    values = [constant_kernel_value(name)] + [constant_kernel_value(name, tuple(p[:kern.n_params].tolist()))
                                              for p in rand + 0.1]
    assert kern.constant_head == any(abs(v) > 1e-9 for v in values), values
    # float32: finite and equal to float64 to float32 rounding on scores up to q.k = 100 (a trained layer's
    # scores reach this; exp(100) overflows float32), unless declared not
    q32, k32 = _qk(torch.float32, scale=4.0, seed=2)
    q32[..., 0, :] = k32[..., 0, :] = 20 ** 0.5  # q.k = 5 * 20 = 100 for this pair
    s32 = kern.fn(q32, k32, _params(kern, dtype=torch.float32), {})
    s64 = kern.fn(q32.double(), k32.double(), _params(kern), {})
    stable = bool(torch.isfinite(s32).all()) and torch.allclose(s32.double(), s64, rtol=1e-3, atol=1e-3)
    assert stable == kern.float32_stable, f"{name}: float32 {'stable' if stable else 'unstable'}"


@pytest.mark.parametrize("name", KERNELS)
def test_fused_form_computes_what_the_kernel_does(name):
    """A kernel with a fused form trains on the fused backend with the generic backend's loss; one without
    is refused by it with the reason."""
    kern = get_kernel(name)
    cfg = build_config({"task": {"dx": 3, "n_context": 5}, "model": {"n_layers": 1, "attention": {"kernel": name}},
                        "seeds": [0, 1], "dtype": "float64", "batch_size": 8, "eval": _SMALL_EVAL})
    batch = tuple(getattr(cfg.task.sample(8, make_generator(0), dtype=torch.float64), f)
                  for f in ("context_x", "context_y", "query_x", "query_y"))
    params = init_params(cfg)
    generic = backends.backend(cfg, "generic").loss_fn(params, *batch)
    if kern.fused is None:
        with pytest.raises(ValueError, match="cannot compute"):
            backends.backend(cfg, "fused")
        return
    torch.testing.assert_close(backends.backend(cfg, "fused").loss_fn(params, *batch), generic)


# ------------------------------------------------------------------------------------------ model kinds
_SMALL_EVAL = {"every": 10, "n_tasks": 128, "n_tune": 128, "alignment_tasks": 0}


def _kind_config(name: str, **over):
    kind = MODEL_KINDS[name]
    if kind.tasks is not None:
        _task(kind.example["task"]["kind"])  # skips where the example's data is not installed
    raw = kind.example | {"seeds": [0, 1], "steps": 60, "batch_size": 32, "dtype": "float64"} | over
    raw["eval"] = {**kind.example.get("eval", {}), **_SMALL_EVAL, **over.get("eval", {})}
    return build_config(raw)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", KINDS)
def test_model_kind_contract(name, dtype):
    kind = MODEL_KINDS[name]
    cfg = _kind_config(name, dtype="float64" if dtype == torch.float64 else "float32")
    assert cfg.model.kind == name and (kind.tasks is None or cfg.task.kind in kind.tasks)
    one = build_module(cfg, dtype=dtype, generator=make_generator(0)).state_dict()
    two = build_module(cfg, dtype=dtype, generator=make_generator(0)).state_dict()
    assert one.keys() == two.keys() and all(torch.equal(one[k], two[k]) for k in one), "init is not seeded"
    params = init_params(cfg)
    assert all(v.shape[0] == 2 and v.dtype == dtype for v in params.values())
    check_learner(seed_learner(cfg, params, 0), cfg.task, dtype, "cpu")
    # the generic backend's loss (through the prefix and functional_call) is the learner's own loss
    ep = cfg.task.sample(8, make_generator(2), dtype=dtype)
    batch = (ep.context_x, ep.context_y, ep.query_x, ep.query_y)
    generic = backends.backend(cfg, "generic").loss_fn(params, *batch)
    with torch.no_grad():
        own = torch.stack([cfg.task.loss(seed_learner(cfg, params, i).predict(ep), ep.query_y).mean() for i in (0, 1)])
    tol = 1e-4 if dtype == torch.float32 else 1e-10
    torch.testing.assert_close(generic, own, rtol=tol, atol=tol)
    assert as_learner(cfg, build_module(cfg, device="meta")) is not None
    for name_b in kind.backends:  # every declared backend computes the same losses where its rule admits it
        try:
            b = backends.backend(cfg, name_b, "cpu")
        except ValueError as e:
            assert "cannot compute" in str(e)
            continue
        torch.testing.assert_close(b.loss_fn(params, *batch), generic, rtol=tol, atol=tol)
    for name_b in set(backends_names()) - set(kind.backends):
        with pytest.raises(ValueError):
            backends.backend(cfg, name_b, "cpu")


def backends_names() -> list[str]:
    from icgd.train.kinds import BACKENDS

    return list(BACKENDS)


@pytest.mark.parametrize("name", KINDS)
def test_a_short_run_lowers_the_loss(name, tmp_path):
    """Every kind, 60 steps of its example on a fixed set of 64 tasks: the loss on that whole set ends below
    95% of the untrained model's, for every seed (paired: the same tasks before and after; the categorical
    tasks' sampled labels leave the GD model little to gain: it ends at 94%, the others far lower)."""
    from icgd.train import train
    from icgd.train.data import TaskStream

    cfg = _kind_config(name, train_set_size=64, batch_size=64, optim={"lr": 1e-2}, checkpoint_every=60,
                       eval={"every": 60})
    result = train(cfg, tmp_path / name, quiet=True)
    fixed = TaskStream(cfg, "cpu").fixed[0]
    untrained = init_params(cfg)
    for i, seed in enumerate(cfg.seeds):
        with torch.no_grad():
            before = cfg.task.loss(seed_learner(cfg, untrained, i).predict(fixed), fixed.query_y).mean().item()
            after = cfg.task.loss(result.learner(seed).predict(fixed), fixed.query_y).mean().item()
        assert math.isfinite(after) and after < 0.95 * before, (seed, before, after)


def test_a_kind_registered_later_is_one_registration(tmp_path):
    """A notebook's own model kind: one `register_model_kind` call, and configs name it, the engine trains it
    (generic backend) and the conformance contract holds; after `unregister_model_kind` configs refuse it."""
    from typing import Literal

    from icgd.train import ConfigError, train
    from icgd.train.kinds import (
        ModelKind,
        ModelSection,
        register_model_kind,
        unregister_model_kind,
    )

    class ReadoutConfig(ModelSection):
        kind: Literal["readout"]

    class Readout(torch.nn.Module):  # predicts w . x_q: a learner that ignores the context
        def __init__(self, dx, dtype, device, generator):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(dx, 1, generator=generator, dtype=dtype).to(device))

        def predict(self, ep):
            return ep.query_x @ self.w

        forward = predict

    kind = ModelKind("readout", ReadoutConfig, lambda c, dtype, device, g: Readout(c.task.dx, dtype, device, g),
                     tasks=("linear",), example={"task": {"kind": "linear", "dx": 3}, "model": {"kind": "readout"}})
    register_model_kind(kind)
    try:
        cfg = _kind_config("readout", steps=20)
        check_learner(seed_learner(cfg, init_params(cfg), 0), cfg.task, torch.float64, "cpu")
        result = train(cfg, tmp_path / "readout", quiet=True)
        assert result.summary["backend"] == "generic" and result.config.model.kind == "readout"
    finally:
        unregister_model_kind("readout")
    with pytest.raises(ConfigError, match="model.kind='readout': must be one of stack"):
        build_config(kind.example)


def test_a_task_defined_outside_the_package_trains(tmp_path):
    """A notebook's own task: one `register_task` call, and configs name it, the task contract holds and the
    engine trains a stack on it (reading only what the task protocol declares); after `unregister_task`
    configs refuse it."""
    from typing import ClassVar, Literal

    from icgd.tasks import LinearRegression, register_task, unregister_task
    from icgd.train import ConfigError, train

    class ShiftedRegression(LinearRegression):  # y = w . x + 1: a teacher with a non-zero offset
        kind: Literal["shifted"] = "shifted"
        variant_of: ClassVar[str] = "linear"  # the model kinds that read linear tasks read this one

        def sample(self, batch, generator=None, device=None, dtype=torch.float32):
            ep = super().sample(batch, generator, device, dtype)
            return Episodes(context_x=ep.context_x, context_y=ep.context_y + 1, query_x=ep.query_x,
                            query_y=ep.query_y + 1, teacher=ep.teacher)

    raw = {"task": {"kind": "shifted", "dx": 3, "n_context": 6}, "model": {"n_layers": 1}, "steps": 20,
           "batch_size": 32, "seeds": [0], "eval": {"every": 20, "n_tasks": 16, "n_tune": 16,
                                                    "alignment_tasks": 0, "reference": "zero"}}
    register_task(ShiftedRegression)
    try:
        cfg = build_config(raw)
        assert isinstance(cfg.task, ShiftedRegression)
        ep = cfg.task.sample(4, make_generator(0))
        assert torch.allclose(ep.query_y, (ep.query_x @ ep.teacher.transpose(1, 2)) + 1)
        result = train(cfg, tmp_path / "shifted", quiet=True)
        assert result.summary["steps"] == 20 and result.config.task.kind == "shifted"
    finally:
        unregister_task("shifted")
    with pytest.raises(ConfigError, match="shifted"):
        build_config(raw)
