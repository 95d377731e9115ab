"""The optimiser is torch.optim's Adam/AdamW with a LambdaLR schedule: it equals the Adam update written out
(the engine's own before it moved to torch.optim) to float64 rounding, and it resumes exactly."""

import math

import pytest
import torch

from icgd.train.config import OptimConfig
from icgd.train.optim import Adam, clip_per_seed, lr_factor


def _reference(p0, grads_fn, cfg, total, steps):
    """Adam / AdamW written out: m, v moments, bias corrections, the same schedule."""
    p, m, v = p0.clone(), torch.zeros_like(p0), torch.zeros_like(p0)
    for t in range(1, steps + 1):
        g = grads_fn(p)
        lr = cfg.lr * lr_factor(cfg, t - 1, total)
        if cfg.weight_decay and cfg.name == "adam":
            g = g + cfg.weight_decay * p
        if cfg.weight_decay and cfg.name == "adamw":
            p = p * (1 - lr * cfg.weight_decay)
        m = cfg.beta1 * m + (1 - cfg.beta1) * g
        v = cfg.beta2 * v + (1 - cfg.beta2) * g * g
        p = p - lr * (m / (1 - cfg.beta1 ** t)) / ((v / (1 - cfg.beta2 ** t)).sqrt() + cfg.eps)
    return p


def _problem():
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(3, 4, 4, generator=gen, dtype=torch.float64)
    h = a @ a.transpose(1, 2) + torch.eye(4, dtype=torch.float64)  # one quadratic per seed
    b = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    return torch.randn(3, 4, generator=gen, dtype=torch.float64), lambda p: (h @ p.unsqueeze(-1)).squeeze(-1) - b


@pytest.mark.parametrize("opt", [
    {"name": "adam"}, {"name": "adam", "weight_decay": 0.1, "schedule": "cosine", "warmup_steps": 10},
    {"name": "adamw", "weight_decay": 0.05, "schedule": "linear", "lr": 3e-2},
])
def test_torch_adam_equals_the_written_out_update(opt):
    cfg = OptimConfig(**({"lr": 1e-2} | opt))
    p0, grad = _problem()
    params = {"w": p0.clone().requires_grad_(True)}
    adam = Adam(params, ["w"], cfg, total=200)
    for i in range(200):
        assert adam.lr_at(i) == pytest.approx(cfg.lr * lr_factor(cfg, i, 200))
        adam.step({"w": grad(params["w"].detach())})
    ref = _reference(p0, grad, cfg, 200, 200)
    torch.testing.assert_close(params["w"].detach(), ref, rtol=1e-12, atol=1e-14)
    assert not torch.allclose(params["w"].detach(), p0)


def test_resume_from_saved_moments_is_exact():
    cfg = OptimConfig(lr=1e-2, schedule="cosine", warmup_steps=5)
    p0, grad = _problem()
    straight = {"w": p0.clone().requires_grad_(True)}
    a = Adam(straight, ["w"], cfg, total=60)
    for _ in range(60):
        a.step({"w": grad(straight["w"].detach())})
    first = {"w": p0.clone().requires_grad_(True)}
    b = Adam(first, ["w"], cfg, total=60)
    for _ in range(25):
        b.step({"w": grad(first["w"].detach())})
    saved, t = {k: v.clone() for k, v in b.state().items()}, b.t
    again = {"w": first["w"].detach().clone().requires_grad_(True)}
    c = Adam(again, ["w"], cfg, total=60)
    c.load_state(saved, t)
    for _ in range(35):
        c.step({"w": grad(again["w"].detach())})
    assert torch.equal(again["w"], straight["w"])


def test_schedule_shapes():
    cfg = OptimConfig(lr=1.0, schedule="cosine", warmup_steps=4)
    assert [lr_factor(cfg, i, 104) for i in range(4)] == [0.25, 0.5, 0.75, 1.0]
    assert lr_factor(cfg, 54, 104) == pytest.approx(0.5 * (1 + math.cos(math.pi * 0.5)))
    assert lr_factor(OptimConfig(schedule="linear"), 50, 100) == pytest.approx(0.5)


def test_clipping_is_per_seed():
    g = {"a": torch.tensor([[3.0, 4.0], [0.3, 0.4]]), "b": torch.zeros(2, 1)}
    norms = clip_per_seed(g, 1.0)
    torch.testing.assert_close(norms, torch.tensor([5.0, 0.5]))
    torch.testing.assert_close(g["a"], torch.tensor([[0.6, 0.8], [0.3, 0.4]]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["adam", "adamw"])
def test_the_batched_update_is_bit_identical_to_torchs_per_tensor_loop(name):
    """The engine's Adam updates all weights in one call (foreach); its float32 trajectory must equal, bit
    for bit, torch's per-tensor loop, which the published numbers were measured with."""
    cfg = OptimConfig(name=name, lr=1e-2, weight_decay=0.01, schedule="cosine", warmup_steps=5)
    gen = torch.Generator().manual_seed(1)
    start = [torch.randn(3, 5, 5, generator=gen) for _ in range(4)]
    grads = [[torch.randn(3, 5, 5, generator=gen) * (1 + i % 5) for _ in range(4)] for i in range(100)]
    params = {f"w{j}": w.clone() for j, w in enumerate(start)}
    adam = Adam(params, list(params), cfg, total=100)
    loop = [w.clone() for w in start]
    kind = torch.optim.AdamW if name == "adamw" else torch.optim.Adam
    ref = kind(loop, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps, weight_decay=cfg.weight_decay,
               foreach=False)
    sched = torch.optim.lr_scheduler.LambdaLR(ref, lambda i: lr_factor(cfg, i, 100))
    for g in grads:
        adam.step({f"w{j}": gj.clone() for j, gj in enumerate(g)})
        for p, gj in zip(loop, g):
            p.grad = gj.clone()
        ref.step()
        sched.step()
    for j, p in enumerate(loop):
        assert torch.equal(params[f"w{j}"], p)
    assert not torch.equal(params["w0"], start[0])


def _torch_schedule(opt, cfg, total):
    """torch's built-in schedules: LinearLR warm-up, then CosineAnnealingLR / LinearLR, by SequentialLR."""
    S = torch.optim.lr_scheduler
    w = cfg.warmup_steps
    decay = (S.CosineAnnealingLR(opt, T_max=total - w) if cfg.schedule == "cosine"
             else S.LinearLR(opt, start_factor=1.0, end_factor=0.0, total_iters=total - w))
    warm = S.LinearLR(opt, start_factor=1.0 / w, end_factor=1.0, total_iters=w - 1)
    return S.SequentialLR(opt, [warm, decay], milestones=[w])


@pytest.mark.parametrize("schedule", ["cosine", "linear"])
def test_the_closed_form_schedule_equals_torchs_built_in_schedules(schedule):
    """lr_factor is kept in closed form (optim.py says why); torch's recursive built-in schedules compute
    the same rates to float rounding."""
    cfg = OptimConfig(lr=1e-3, schedule=schedule, warmup_steps=7)
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=cfg.lr)
    sched = _torch_schedule(opt, cfg, 300)
    for i in range(300):
        ours = cfg.lr * lr_factor(cfg, i, 300)
        assert opt.param_groups[0]["lr"] == pytest.approx(ours, rel=1e-11, abs=1e-18), i
        opt.step()
        sched.step()


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_per_seed_clipping_equals_torchs_norm_seed_by_seed(dtype):
    gen = torch.Generator().manual_seed(2)
    grads = {f"w{i}": (torch.randn(4, 6, 5, generator=gen) * (1 + i)).to(dtype) for i in range(3)}
    grads["b"] = torch.randn(4, 5, generator=gen).to(dtype)
    ref = {k: v.clone() for k, v in grads.items()}
    norms = clip_per_seed(grads, 2.0)
    for s in range(4):
        views = [g[s] for g in ref.values()]
        total = torch.nn.utils.get_total_norm(views)
        torch.testing.assert_close(norms[s], total)
        torch._foreach_mul_(views, torch.clamp(2.0 / (total + 1e-6), max=1.0))
    for k in grads:
        torch.testing.assert_close(grads[k], ref[k])
    assert float(norms.min()) > 2.0  # every seed was clipped
