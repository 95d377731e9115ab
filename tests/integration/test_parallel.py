"""Training a suite's declared models side by side (`icgd verify --workers N`): the same weights and results
as a serial run, nothing trained twice, failures reported, undeclared models refused."""

import json

import pytest
import torch

from icgd.claims.base import Claim, suite
from icgd.claims.runner import verify
from icgd.experiments.parallel import Job, planned, train_side_by_side
from icgd.experiments.registry import ExperimentContext, register
from icgd.scale import distributed
from icgd.train.config import build_config
from icgd.train.engine import Stepper

_EVAL = {"every": 10, "n_tasks": 64, "n_tune": 64, "alignment_tasks": 16}


def _pair_models(ctx: ExperimentContext):
    """Two small models on different paths: one head (compiled where it compiles), and 2 heads + MLP +
    LayerNorm (fused)."""
    return {name: build_config({"name": name, "model": model, "steps": 20, "batch_size": 64, "seeds": ctx.seeds,
                                "eval": _EVAL})
            for name, model in (("pair-a", {"n_layers": 2}),
                                ("pair-b", {"n_layers": 2, "n_heads": 2, "mlp": True, "layer_norm": True}))}


@register("test-pair", "two small declared models", "tests", 0.1, 0.1, models=_pair_models)
def _pair(ctx: ExperimentContext) -> None:
    configs = _pair_models(ctx)
    for name in ("pair-a", "pair-b"):
        res = ctx.train(name, configs[name])
        ctx.result(f"{name}.final", res.summary["seeds"][0]["final_eval_loss"])


@suite("test-pair-suite")
def _pair_suite():
    return [Claim(f"{n}-finite", "finite", "tests", "test-pair", lambda r, n=n: r["test-pair"][f"{n}.final"],
                  "<", 1e9, "finite") for n in ("pair-a", "pair-b")]


@register("test-undeclared", "trains a model it does not declare", "tests", 0.1, 0.1,
          models=lambda ctx: {"declared": build_config({"name": "declared", "steps": 2, "batch_size": 8,
                                                        "seeds": ctx.seeds, "eval": _EVAL})})
def _undeclared(ctx: ExperimentContext) -> None:
    ctx.train("other", build_config({"name": "other", "steps": 2, "batch_size": 8, "seeds": ctx.seeds, "eval": _EVAL}))


def _weights(run_root):
    return {p.parent.name: p.read_bytes() for p in sorted((run_root / "_train").glob("*/checkpoint.safetensors"))}


def test_side_by_side_equals_serial_and_trains_nothing_twice(tmp_path):
    serial = verify("test-pair-suite", tmp_path / "serial", quick=True, seeds=[0, 1])
    side = verify("test-pair-suite", tmp_path / "side", quick=True, seeds=[0, 1], workers=2)
    assert [c["measured"] for c in side["claims"]] == [c["measured"] for c in serial["claims"]]
    a, b = _weights(tmp_path / "serial"), _weights(tmp_path / "side")
    assert len(a) == 2 and a == b  # the same run directories, bit-for-bit the same weights
    rec = side["profile"]["side_by_side"]
    assert rec["workers"] == 2 and sorted(m["model"] for m in rec["models"]) == ["pair-a", "pair-b"]
    assert all(m["status"] == "completed" for m in rec["models"])
    assert "side_by_side" not in serial["profile"]
    # the experiment found both models cached: it loaded them, trained nothing
    sections = {(r["experiment"], r["section"]) for r in side["profile"]["rows"]}
    assert ("test-pair", "load cached model") in sections and ("test-pair", "train steps") not in sections
    # a second run plans nothing
    assert planned(["test-pair"], tmp_path / "side", tmp_path / "side" / "_train", "quick", [0, 1]) == []
    again = verify("test-pair-suite", tmp_path / "side", quick=True, seeds=[0, 1], workers=2)
    assert again["profile"]["side_by_side"]["models"] == []


def test_training_does_not_depend_on_the_thread_count():
    """What makes side-by-side workers (fewer threads each) give a serial run's weights."""
    cfg = build_config({"name": "t", "model": {"n_layers": 2, "n_heads": 4, "mlp": True, "layer_norm": True},
                        "steps": 10, "batch_size": 512, "seeds": [0, 1]})
    before = torch.get_num_threads()
    out = []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            st = Stepper(cfg)
            for i in range(3):
                st.step(i)
            out.append({k: v.detach().clone() for k, v in st.params.items()})
    finally:
        torch.set_num_threads(before)
    assert all(torch.equal(out[0][k], out[1][k]) for k in out[0])


@pytest.mark.parametrize("engine", ["process", pytest.param("ray", marks=pytest.mark.skipif(
    not distributed.available(), reason='Ray is not installed (pip install -e ".[ray]")'))])
def test_a_failing_model_is_reported_and_the_others_train(tmp_path, engine):
    cfg = build_config({"name": "ok", "steps": 4, "batch_size": 8, "seeds": [0], "eval": _EVAL})
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the run directory should be")
    records = train_side_by_side([Job("bad", blocked, cfg), Job("ok", tmp_path / "ok", cfg)], 2, quiet=True,
                                 engine=engine)
    by = {r["model"]: r for r in records}
    assert by["bad"]["status"] == "failed" and by["bad"]["error"]
    assert by["ok"]["status"] == "completed"
    assert json.loads((tmp_path / "ok" / "summary.json").read_text())["status"] == "completed"
    with pytest.raises(ValueError, match="workers"):
        train_side_by_side([Job("ok", tmp_path / "ok", cfg)], 0)


def test_an_undeclared_model_is_refused(tmp_path):
    from icgd.experiments.runner import run_experiment

    with pytest.raises(RuntimeError, match="not among the models the experiment declares"):
        run_experiment("test-undeclared", tmp_path / "u", smoke=True, seeds=[0])


def test_trained_on_uses_models_trained_elsewhere(tmp_path):
    """`icgd reproduce --trained-on cuda`: a model that finished under the cuda fingerprint is loaded, not
    retrained here; one that did not trains on --device; results.json says which device trained each, from the
    run's summary. (No GPU here: the 'cuda' run directory is made by training on the CPU into the path a GPU run
    would use, its summary then written as a GPU's.)"""
    from icgd.experiments.runner import run_experiment
    from icgd.train.config import config_fingerprint
    from icgd.train.runs import train_into

    cache = tmp_path / "_train"
    ctx = ExperimentContext(tmp_path / "plan", cache, "quick", [0, 1], create=False)
    a = _pair_models(ctx)["pair-a"]
    gpu_run = cache / f"pair-a-{config_fingerprint(a, 'cuda')}"
    trained = train_into(gpu_run, a, "cpu").summary["seeds"][0]["final_eval_loss"]
    summary = json.loads((gpu_run / "summary.json").read_text())  # as a GPU writes it: which device is read here
    (gpu_run / "summary.json").write_text(json.dumps(summary | {"device": "cuda:0",
                                                                "segments": [{"device": "cuda", "from_step": 0}]}))
    res = run_experiment("test-pair", tmp_path / "out", cache, quick=True, seeds=[0, 1], trained_on="cuda")
    assert res["trained_on"] == {"pair-a": "cuda", "pair-b": "cpu"}
    assert res["pair-a.final"] == trained
    assert not (cache / f"pair-a-{config_fingerprint(a)}").exists()  # nothing retrained on the CPU
    assert json.loads((tmp_path / "out" / "results.json").read_text())["trained_on"]["pair-a"] == "cuda"
    # without --trained-on the CPU's own model trains, and results.json has no trained_on
    plain = run_experiment("test-pair", tmp_path / "plain", cache, quick=True, seeds=[0, 1])
    assert (cache / f"pair-a-{config_fingerprint(a)}").is_dir() and "trained_on" not in plain


@register("test-long", "a short and a very long declared model", "tests", 0.1, 0.1,
          models=lambda ctx: {name: build_config({"name": name, "steps": steps, "batch_size": 64, "seeds": ctx.seeds,
                                                  "eval": _EVAL, "checkpoint_every": 1000})
                              for name, steps in (("short", 20), ("long", 10**7))})
def _long(ctx: ExperimentContext) -> None:
    raise AssertionError("only its models are trained here")


@register("test-inside", "a model trained inside the experiment only", "tests", 0.1, 0.1, pretrain=False,
          models=lambda ctx: {"inside": build_config({"name": "inside", "steps": 20, "batch_size": 64,
                                                       "seeds": ctx.seeds, "eval": _EVAL})})
def _inside(ctx: ExperimentContext) -> None:
    raise AssertionError("not run here")


def test_train_declared_stops_on_budget_and_keeps_the_checkpoint(tmp_path):
    """benchmarks/train_declared.py (what a GPU machine runs): what finishes is completed, what runs at the budget
    checkpoints on SIGTERM (status interrupted, its steps saved), and the records say so."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import train_declared

    out = tmp_path / "records.json"
    assert train_declared.main(["test-long", "--device", "cpu", "--cache", str(tmp_path / "_train"), "--budget", "15",
                                "--workers", "2", "--json", str(out)]) == 0
    recs = {r["model"]: r for r in json.loads(out.read_text())["models"]}
    assert recs["short"]["status"] == "completed" and recs["short"]["steps"] == 20
    long = recs["long"]
    assert long["status"] == "interrupted" and 0 < long["steps"] < 10**7
    assert (tmp_path / "_train" / long["run"] / "checkpoint.safetensors").is_file()  # saved at the stop
    assert json.loads((tmp_path / "_train" / long["run"] / "summary.json").read_text())["steps"] == long["steps"]


def test_train_declared_leaves_out_what_the_store_holds(tmp_path, monkeypatch):
    """A model the model store holds is not trained again on a GPU machine (as full mode takes it from the
    store); `--retrain` trains it all the same."""
    import sys
    from pathlib import Path

    from icgd.train.store import ModelStore

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import train_declared

    first = tmp_path / "first"
    argv = ["test-long", "--device", "cpu", "--budget", "60", "--match", "^short$"]
    assert train_declared.main(argv + ["--cache", str(first)]) == 0
    (run,) = first.glob("short-*")
    store = ModelStore(tmp_path / "zoo")
    store.add(run, commit="test")
    monkeypatch.setenv("ICGD_STORE", str(tmp_path / "zoo"))
    for extra, trained in (([], 0), (["--retrain"], 1)):
        out = tmp_path / f"records{len(extra)}.json"
        assert train_declared.main(argv + extra + ["--cache", str(tmp_path / f"again{len(extra)}"), "--json", str(out)]) == 0
        recs = json.loads(out.read_text())["models"]
        assert [r["status"] for r in recs] == ["completed"] * trained, extra


@pytest.mark.parametrize("argv, needle", [
    (["no-such-experiment"], "unknown experiment 'no-such-experiment'"),
    (["test-long", "--budget", "-5"], "--budget: expected a positive number of seconds"),
    (["test-long", "--workers", "0"], "--workers: must be at least 1"),
    (["test-long", "--match", "("], "--match: '(' is not a regular expression"),
    (["test-long", "--device", "tpu"], "--device"),
    (["test-inside"], "test-inside trains its models inside the experiment"),  # was: "0 models to train"
])
def test_train_declared_refuses_bad_arguments_in_one_line(tmp_path, capsys, argv, needle):
    """A GPU machine's minutes are not spent finding a typo: every argument is checked before a worker
    starts, one line and exit code 2, and the cache folder is not made."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import train_declared

    defaults = {"--budget": "10", "--device": "cpu"}
    extra = [x for k, v in defaults.items() if k not in argv for x in (k, v)]
    with pytest.raises(SystemExit) as stop:
        train_declared.main(argv + extra + ["--cache", str(tmp_path / "_train")])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err, err
    assert not (tmp_path / "_train").exists()


def test_train_declared_names_what_it_leaves_out(tmp_path, capsys):
    """Beside experiments it can train ahead, one it cannot (pretrain=False) is named in a line with why and
    what fills it; --check stops after the arguments, making nothing."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import train_declared

    assert train_declared.main(["test-long", "test-inside", "--device", "cpu", "--budget", "10", "--check",
                                "--cache", str(tmp_path / "_train")]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "left out: test-inside" in err and "fill_store.sh test-inside" in err, err
    assert not (tmp_path / "_train").exists()


def test_fill_store_refuses_an_unknown_experiment_at_once():
    """tools/fill_store.sh names an unknown experiment in one line, exit code 2, before it makes or trains
    anything (it used to find out a minute later, exit code 1)."""
    import os
    import signal
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    # its own process group: were the check broken, the training it starts is stopped with it
    proc = subprocess.Popen(["bash", str(root / "tools" / "fill_store.sh"), "oswald-copy", "no-such-experiment"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=45)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.communicate()
        pytest.fail("fill_store.sh did not refuse the unknown experiment within 45 s")
    assert proc.returncode == 2, err
    assert err.count("\n") == 1 and "unknown experiment 'no-such-experiment'" in err, err


def test_fill_store_parks_a_stopped_training_and_the_next_machine_resumes_it(tmp_path):
    """tools/fill_store.sh parks a training its budget stopped, in one commit of zoo/; with the cache gone
    (another machine), the next call resumes it from the store's step, not from step 0."""
    import json
    import os
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    work = tmp_path / "checkout"  # a checkout of its own: the script commits there, into its own store
    (work / "tools").mkdir(parents=True)
    (work / "tools" / "fill_store.sh").write_bytes((root / "tools" / "fill_store.sh").read_bytes())
    (work / "benchmarks").symlink_to(root / "benchmarks")
    (work / "src").symlink_to(root / "src")
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    (work / "zoo").mkdir()
    (work / "zoo" / "README.md").write_text("store\n")
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "start"], check=True)
    env = os.environ | {"ICGD_STORE": str(work / "zoo"), "WORKERS": "1", "THREADS": "1", "MATCH": "^lsa1-a1$",
                        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    cache = work / "runs" / "fill" / "_train"
    # A budget that ends before the worker's first step parks nothing, rightly (no checkpoint): on a machine
    # busy with other work, starting the worker can take longer than 12 s (seen: "steps": 0 at 12 s beside a
    # 2-thread training), so each phase tries a longer budget before it decides.
    budgets = (12, 40, 120)

    def fill(budget: int) -> dict | None:
        proc = subprocess.run(["bash", str(work / "tools" / "fill_store.sh"), "oswald-1layer"],
                              env=env | {"BUDGET_S": str(budget)}, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        manifest = work / "zoo" / "manifest.json"
        parked = json.loads(manifest.read_text()).get("parked", {}) if manifest.exists() else {}
        assert len(parked) <= 1, parked
        return next(iter(parked.values()), None)

    for budget in budgets:
        if (first := fill(budget)) and first["step"] > 0:
            break
    assert first and first["name"] == "lsa1-a1" and first["step"] > 0, first
    log = subprocess.run(git + ["log", "--format=%s"], capture_output=True, text=True, check=True).stdout
    assert "parked at step" in log.splitlines()[0], log
    assert not subprocess.run(git + ["status", "--porcelain", "zoo"], capture_output=True, text=True).stdout
    import shutil

    shutil.rmtree(work / "runs")  # the machine went away with its cache
    summary = None  # the summary of the first call that reached the training loop after that
    for budget in budgets:
        second = fill(budget)
        if summary is None and (done := list(cache.glob("*/summary.json"))):
            summary = json.loads(done[0].read_text())
        if summary is not None and second["step"] > first["step"]:
            break
    # that call went on from the parked step, not from step 0: a resumed run's summary counts the parked
    # part's time beside its own (a run from step 0 has no "wall_seconds_this_call")
    assert summary is not None and summary.get("wall_seconds_this_call") is not None, summary
    assert abs(summary["wall_seconds"] - summary["wall_seconds_this_call"] - first["seconds"]) < 0.01, (first, summary)
    assert second["step"] > first["step"] and second["seconds"] > first["seconds"], (first, second)
