"""The experiment and claim machinery (the studies themselves run with `icgd verify`, not in the tests)."""

import json
from pathlib import Path

import pytest
import torch

from icgd import make_generator
from icgd.analysis import readoff
from icgd.claims.base import SUITES, Claim, suite
from icgd.results.console import tally
from icgd.claims.runner import verify
from icgd.cli import main
from icgd.experiments.registry import ExperimentContext, register
from icgd.experiments.runner import experiments, get_experiment
from icgd.learners import GD, TransformerLearner
from icgd.learners.constructions import gd_construction
from icgd.results.console import format_markdown, format_report
from icgd.tasks import LinearRegression
from icgd.train.config import build_config


def test_registry_lists_every_oswald_experiment():
    names = set(experiments())
    assert {"oswald-1layer", "oswald-interpolation", "oswald-ood", "oswald-repeat", "oswald-deep",
            "oswald-curvature", "oswald-softmax"} <= names
    with pytest.raises(ValueError, match="unknown experiment"):
        get_experiment("oswald-nope")


def test_products_round_trip_and_rescaling_invariance():
    ep = LinearRegression(dx=4, n_context=6).sample(50, make_generator(0), dtype=torch.float64)
    st = gd_construction(4, 1, 6, 0.8).build()
    kq, pv = readoff.products(st)
    same = TransformerLearner(readoff.stack_from_products(kq, pv))
    torch.testing.assert_close(same.predict(ep), GD(0.8).predict(ep))
    kq_r, pv_r, beta = readoff.rescaled(3.0 * kq, pv / 3.0, 4)
    assert beta == pytest.approx(3.0)
    torch.testing.assert_close(kq_r, kq)
    torch.testing.assert_close(TransformerLearner(readoff.stack_from_products(kq_r, pv_r)).predict(ep),
                               GD(0.8).predict(ep))


def test_gamma_is_read_off_a_gdpp_layer():
    st = gd_construction(5, 1, 10, 0.5, gammas=0.07).build()
    assert readoff.gamma_of(st, 5) == pytest.approx(0.07)


def test_claim_check_pass_fail_and_missing():
    c = Claim("x", "a claim", "Fig. 0", "exp", lambda r: r["exp"]["v"], "<", 1.0, "because")
    assert c.check({"exp": {"v": 0.5}})["passed"] is True
    assert c.check({"exp": {"v": 2.0}})["passed"] is False
    missing = c.check({"exp": {}})
    assert missing["passed"] is False and "not measured" in missing["note"]
    inf = Claim("y", "diverges", "Fig. 0", "exp", lambda r: r["exp"]["v"], "<", 1.0, "")
    assert inf.check({"exp": {"v": float("inf")}})["passed"] is False


@register("test-tiny", "a tiny experiment for the tests", "tests", 0.1, 0.1)
def _tiny(ctx: ExperimentContext) -> None:
    cfg = build_config({"name": "tiny", "steps": 20, "batch_size": 32, "seeds": ctx.seeds,
                        "eval": {"every": 10, "n_tasks": 64, "n_tune": 64, "alignment_tasks": 16}})
    res = ctx.train("tiny", cfg)
    ctx.result("final", res.summary["seeds"][0]["final_eval_loss"])
    ctx.result("train_dir", str(res.run_dir))
    ctx.report("a statement", f"{ctx.results['final']:.3f}")
    ctx.note("a note between two rows")
    ctx.report("a second statement", "measured")


@suite("test-suite")
def _tiny_suite():
    return [Claim("finite", "the tiny loss is finite", "tests", "test-tiny", lambda r: r["test-tiny"]["final"],
                  "<", 1e9, "any finite loss")]


def test_verify_runs_experiments_caches_models_and_reports(tmp_path, capsys):
    rep = verify("test-suite", tmp_path, quick=True, seeds=[0])
    assert rep["suite"] == "test-suite" and rep["claims"][0]["passed"]
    first = json.loads((tmp_path / "test-tiny" / "results.json").read_text())
    report = (tmp_path / "test-tiny" / "report.md").read_text()
    assert "| a statement |" in report
    # a note goes under the table, which keeps its rows together
    assert report.index("| a second statement |") < report.index("a note between two rows")
    assert "|\n| a second statement |" in report
    ckpt = tmp_path / "_train" / first["train_dir"].split("/")[-1] / "checkpoint.safetensors"
    stamp = ckpt.stat().st_mtime_ns
    verify("test-suite", tmp_path, quick=True, seeds=[0])  # cached: not trained again
    assert ckpt.stat().st_mtime_ns == stamp
    assert "1 passed, 0 failed" in format_report(rep)
    assert main(["verify", "test-suite", "--quick", "--seeds", "1", "--json", "--out", str(tmp_path / "v")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["claims"][0]) >= {"id", "claim", "source", "measured", "threshold", "passed"}
    shared = tmp_path / "shared"
    assert main(["verify", "test-suite", "--quick", "--seeds", "1", "--out", str(tmp_path / "w"), "--cache",
                 str(shared)]) == 0
    cached = [p.name.split("-")[0] for p in shared.iterdir() if p.name != ".locks"]  # .locks: `run_lock`'s files
    assert cached == ["tiny"] and not (tmp_path / "w" / "_train").exists()
    capsys.readouterr()
    assert main(["verify", "test-suite", "--quick", "--seeds", "1", "--out", str(tmp_path / "w"), "--markdown"]) == 0
    md = capsys.readouterr().out
    assert md == (tmp_path / "w" / "claims.md").read_text()  # the same table, printed and written
    assert md.splitlines()[2].startswith("| `finite`: the tiny loss is finite | tests | ") and md.splitlines()[2].endswith(" PASS |")


def test_markdown_table_marks_failures_and_escapes_pipes():
    rep = {"claims": [{"claim": "a | b", "source": "Fig. 1", "measured": 0.123456, "threshold": "< 0.1",
                       "passed": False}]}
    assert format_markdown(rep).splitlines()[2] == "| a \\| b | Fig. 1 | 0.1235 | - | < 0.1 | **FAIL** |"


def test_stricter_checks_are_marked_and_roles_validated():
    c = Claim("w", "worst seed", "Fig. 0", "exp", lambda r: r["exp"]["v"], "<", 1.0, "", role="stricter")
    checked = c.check({"exp": {"v": 0.5}})
    assert checked["role"] == "stricter"
    rep = {"claims": [checked], "quick": True, "seconds": 1.0}
    assert "worst seed [stricter]" in format_markdown(rep)
    assert "w [stricter]: worst seed" in format_report(rep)
    plain = Claim("x", "a claim", "Fig. 0", "exp", lambda r: r["exp"]["v"], "<", 1.0, "").check({"exp": {"v": 0.5}})
    assert plain["role"] == "source" and "stricter" not in format_markdown({"claims": [plain]})


def test_checks_are_marked_tallied_apart_and_kinds_validated():
    check = Claim("c", "holds by construction", "Fig. 0", "exp", lambda r: r["exp"]["v"], "<", 1.0, "", kind="check")
    claim = Claim("x", "a claim", "Fig. 0", "exp", lambda r: r["exp"]["v"], "<", 1.0, "")
    rows = [check.check({"exp": {"v": 0.5}}), claim.check({"exp": {"v": 2.0}})]
    assert [r["kind"] for r in rows] == ["check", "claim"]
    rep = {"claims": rows, "mode": "full", "seconds": 1.0}
    assert tally(rows) == "0 passed, 1 failed; 1 of 1 check hold"
    assert "c [check]: holds by construction" in format_report(rep) and "holds by construction [check]" in format_markdown(rep)
    with pytest.raises(ValueError, match="kind"):
        Claim("y", "", "", "exp", lambda r: 0.0, "<", 1.0, "", kind="sanity")
    with pytest.raises(ValueError, match="role"):
        Claim("z", "a claim", "Fig. 0", "exp", lambda r: 0.0, "<", 1.0, "", role="extra")


def test_cli_list_and_bad_names(capsys):
    assert main(["list"]) == 0
    assert "oswald-repeat" in capsys.readouterr().out
    assert main(["reproduce", "no-such-thing"]) == 2
    assert "unknown experiment" in capsys.readouterr().err
    assert main(["verify", "no-such-suite"]) == 2
    assert main(["reproduce", "oswald-ood", "--seeds", "0,0"]) == 2


def test_suites_are_registered():
    from icgd.claims.runner import suite_names
    assert "oswald" in suite_names() and len(SUITES["oswald"]()) >= 15


def test_help_lists_every_registered_suite(capsys):
    from icgd.claims.runner import suite_names
    from icgd.cli import main

    ours = suite_names()
    assert set(ours) == {n for n, fn in SUITES.items() if fn.__module__.startswith("icgd.sources.")}
    with pytest.raises(SystemExit):
        main(["verify", "--help"])
    text = "".join(capsys.readouterr().out.split())  # argparse wraps lines at hyphens
    assert all(name in text for name in ours)


def test_nonlinear_and_copy_suites_are_registered():
    from icgd.claims.runner import suite_names

    assert {"oswald-nonlinear", "oswald-copy"} <= set(suite_names())
    assert {"oswald-sine", "oswald-copy"} <= set(experiments())
    assert all(c.experiment == "oswald-copy" for c in SUITES["oswald-copy"]())


def test_token_gradients_of_the_copy_construction():
    """The softmax copy layer: token t depends on t + 1 through the copied y only (norm 1), on itself through
    the residual minus its own y-slot (norm sqrt(D - 1)), and on nothing else."""
    from icgd.sources.oswald.copy import token_gradients
    from icgd.learners.constructions import copy_gd_construction
    from icgd.learners.tokens import InterleavedTokens

    model = TransformerLearner(copy_gd_construction(3, 1, 4, 0.5, "softmax").build(), InterleavedTokens())
    ep = LinearRegression(dx=3, n_context=4).sample(6, make_generator(0), dtype=torch.float64)
    g = token_gradients(model, ep)
    d = 3 + 1 + 9
    assert g["neighbour"] == pytest.approx(1.0, abs=1e-9)
    assert g["self"] == pytest.approx((d - 1) ** 0.5, abs=1e-9)
    assert g["others"] < 1e-9


def test_tracked_training_equals_an_uninterrupted_run(tmp_path):
    cfg = build_config({"steps": 30, "batch_size": 32, "seeds": [0, 1], "dtype": "float64",
                        "eval": {"every": 10, "n_tasks": 64, "n_tune": 128, "alignment_tasks": 0}})
    ctx = ExperimentContext(tmp_path / "out", tmp_path / "cache", mode="quick", seeds=[0, 1])
    calls = []

    def measure(res):
        calls.append(res.summary.get("steps", 0))
        return {"w": float(res.params["layers.0.attn.w_q"].sum())}

    res, track = ctx.train_tracked("t", cfg, 10, measure)
    assert [r["step"] for r in track] == [0, 10, 20, 30]
    plain = ExperimentContext(tmp_path / "o2", tmp_path / "c2", mode="quick", seeds=[0, 1]).train("t", cfg)
    for k, v in plain.params.items():
        assert torch.equal(res.params[k], v)
    n = len(calls)
    _, again = ctx.train_tracked("t", cfg, 10, measure)  # cached: nothing retrained or remeasured
    assert again == track and len(calls) == n


def test_blog_suite_and_experiments_are_registered():
    from icgd.claims.runner import suite_names

    assert "blog" in suite_names()
    assert {"blog-eta", "blog-dampening", "blog-lstm", "blog-scaling"} <= set(experiments())
    assert {c.experiment for c in SUITES["blog"]()} == {"blog-eta", "blog-dampening", "blog-lstm", "blog-scaling"}


def test_implicit_eta_of_the_construction_and_dampened_repetition_is_gd_with_eta_times_lambda():
    from icgd.analysis.readoff import implicit_eta

    eta, lam = 1.3, 0.7
    kq, pv = readoff.gd_products(4, 1, eta, 6)
    assert implicit_eta(kq * 2.5, pv / 2.5, 4, 6) == pytest.approx(eta, rel=1e-12)  # rescaling-invariant
    ep = LinearRegression(dx=4, n_context=6).sample(50, make_generator(3), dtype=torch.float64)
    tf = readoff.tf_repeat_losses(kq, pv, lam, ep, repeats=7)
    gd = readoff.gd_repeat_losses(eta * lam, ep, repeats=7)
    torch.testing.assert_close(tf, gd, rtol=1e-10, atol=1e-12)
    assert not torch.allclose(tf, readoff.gd_repeat_losses(eta, ep, repeats=7))


def test_repetition_with_y_only_updates_ignores_the_x_rows_of_pv():
    eta, lam = 1.3, 0.7
    kq, pv = readoff.gd_products(4, 1, eta, 6)
    pv_noisy = pv.clone()
    pv_noisy[:4] = 0.05 * torch.randn(4, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    ep = LinearRegression(dx=4, n_context=6).sample(50, make_generator(3), dtype=torch.float64)
    gd = readoff.gd_repeat_losses(eta * lam, ep, repeats=7)
    torch.testing.assert_close(readoff.tf_repeat_losses(kq, pv_noisy, lam, ep, 7, update="y"), gd,
                               rtol=1e-10, atol=1e-12)
    assert not torch.allclose(readoff.tf_repeat_losses(kq, pv_noisy, lam, ep, 7, update="all"), gd)
    assert pv_noisy[:4].abs().sum() > 0  # the caller's products are left as they were
    with pytest.raises(ValueError, match="update"):
        readoff.tf_repeat_losses(kq, pv, lam, ep, 7, update="x")


def test_student_t_quantiles_and_intervals():
    from icgd.core.metrics import t95
    from icgd.sources.blog.eta import mean_ci

    for df, exact in ((1, 12.7062), (2, 4.3027), (4, 2.7764), (9, 2.2622), (19, 2.0930), (1000, 1.9623)):
        assert t95(df) == pytest.approx(exact, abs=1e-4)
    m, lo, hi = mean_ci([1.0, 2.0, 3.0, 4.0, 5.0])
    assert m == 3.0 and hi - m == pytest.approx(2.7764 * (2.5 ** 0.5) / 5 ** 0.5, rel=1e-4)
    assert m - lo == pytest.approx(hi - m, rel=1e-12)


@pytest.mark.parametrize("model", [{"n_layers": 3, "clip": 2.0}, {"n_layers": 2, "n_heads": 2, "mlp": True,
                                                                   "layer_norm": True},
                                   {"kind": "lstm", "n_layers": 1}])
def test_seed_losses_equal_each_seeds_evaluation(model, tmp_path):
    """The analyses' all-seeds-at-once losses (fused path; seed by seed where it does not apply) equal
    `evaluate` of each seed's learner to float64 rounding."""
    from icgd.core.episodes import make_generator
    from icgd.core.metrics import evaluate
    from icgd.experiments.common import seed_learners, seed_losses, seed_task_losses
    from icgd.train.engine import TrainResult
    from icgd.train.models import init_params

    cfg = build_config({"name": "t", "model": model | ({} if "kind" in model else {"init_scale": 1.0}),
                        "seeds": [0, 1, 2], "dtype": "float64"})
    res = TrainResult(tmp_path, {}, cfg, init_params(cfg))
    ev = cfg.task.sample(300, make_generator(5), dtype=torch.float64)
    fast = seed_losses(res, ev, chunk=128)  # several chunks
    slow = [evaluate(lr, ev).mean for lr in seed_learners(res)]
    assert fast == pytest.approx(slow, rel=1e-12, abs=0)
    assert len(set(fast)) == 3  # three different seeds, not one seed three times
    per_task = seed_task_losses(res, ev, chunk=128)  # (seeds, tasks), in the tasks' order
    assert per_task.shape == (3, 300) and per_task.mean(-1).tolist() == pytest.approx(slow, rel=1e-12, abs=0)
    lr0 = seed_learners(res)[0]
    assert float(per_task[0, 7]) == pytest.approx(evaluate(lr0, ev[7:8]).mean, rel=1e-12)


@pytest.mark.parametrize("model", [{"n_layers": 2}, {"n_layers": 2, "n_heads": 2, "mlp": True}, {"kind": "lstm", "n_layers": 1}])
def test_seed_prediction_differences_equal_alignment(model, tmp_path):
    """The analyses' all-seeds prediction differences to reference learners equal `alignment`'s per seed."""
    from icgd.core.episodes import make_generator
    from icgd.core.metrics import alignment
    from icgd.experiments.common import seed_learners, seed_prediction_differences
    from icgd.learners import GD
    from icgd.train.engine import TrainResult
    from icgd.train.models import init_params

    cfg = build_config({"name": "t", "model": model | ({} if "kind" in model else {"init_scale": 1.0}),
                        "seeds": [0, 1, 2], "dtype": "float64"})
    res = TrainResult(tmp_path, {}, cfg, init_params(cfg))
    ev = cfg.task.sample(300, make_generator(5), dtype=torch.float64)
    refs = [GD(0.3, steps=1), GD(0.1, steps=2)]
    fast = seed_prediction_differences(res, refs, ev, chunk=128)
    slow = [[alignment(lr, ref, ev)["prediction_difference"].mean for lr in seed_learners(res)] for ref in refs]
    assert fast[0] == pytest.approx(slow[0], rel=1e-12, abs=0)
    assert fast[1] == pytest.approx(slow[1], rel=1e-12, abs=0)
    assert fast[0] != pytest.approx(fast[1], rel=1e-6) and len(set(fast[0])) == 3


def _train_in_a_process(cache: str, queue) -> None:
    import time

    from icgd.experiments.registry import ExperimentContext as Ctx
    from icgd.train.config import build_config as build

    cfg = build({"steps": 200, "batch_size": 32, "seeds": [0], "eval": {"every": 200, "n_tasks": 16, "n_tune": 32,
                                                                         "alignment_tasks": 0}})
    t0 = time.perf_counter()
    res = Ctx(Path(cache) / "out", Path(cache), mode="quick", seeds=[0]).train("shared", cfg)
    queue.put((time.perf_counter() - t0, res.summary["wall_seconds"], float(res.params["layers.0.attn.w_q"].sum())))


def test_two_processes_sharing_a_cache_train_a_model_once(tmp_path):
    """Two experiments side by side with one model cache (two queues of full runs, `--workers`, a cluster) must
    not train one run directory at once: the second waits on the run's lock and loads what the first trained.
    Without the lock the second process starts the same run directory and stops with "already exists and is
    not empty" (seen)."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_train_in_a_process, args=(str(tmp_path), queue)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    got = [queue.get(timeout=5) for _ in procs]
    assert all(p.exitcode == 0 for p in procs)
    runs = [d for d in tmp_path.iterdir() if d.name.startswith("shared-")]
    assert len(runs) == 1
    assert got[0][1:] == got[1][1:]  # one run: the same weights, the same recorded training time
    assert sorted(list((runs[0]).glob("checkpoint*.safetensors"))) == [runs[0] / "checkpoint.safetensors"]
