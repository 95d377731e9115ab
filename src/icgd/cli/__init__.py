"""The `icgd` command line. Bad input gives one line on stderr and exit code 2."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Sequence, get_args

import pydantic

from icgd.cli.args import count as _count
from icgd.cli.args import device as _device_arg
from icgd.cli.args import device_type as _device_type
from icgd.cli.args import lm_model, out_dir, out_file, run_dir
from icgd.cli.args import positive as _positive
from icgd.cli.args import steps as _steps
from icgd.core.version import __version__


class UsageError(Exception):
    """A user mistake: reported in one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage + error)
        raise UsageError(f"{self.prog}: {message} (see --help)")


def _add_model_options(p: argparse.ArgumentParser, model: type[pydantic.BaseModel], skip: set[str]) -> None:
    """One --option per field of a pydantic model (validation stays with the model)."""
    group = p.add_argument_group("task options")
    for name, field in model.model_fields.items():
        if name in skip:
            continue
        flag = "--" + name.replace("_", "-")
        choices = get_args(field.annotation) or None
        kind = type(field.default) if field.default is not None else str
        help_ = (field.description or name) + f" (default {field.default})"
        group.add_argument(flag, dest=f"task_{name}", type=kind if not choices else str, choices=choices,
                           default=None, help=help_, metavar=None if choices else kind.__name__.upper())


def _task_from(args: argparse.Namespace, model: type[pydantic.BaseModel]) -> Any:
    values = {k[5:]: v for k, v in vars(args).items() if k.startswith("task_") and v is not None}
    return model(**values)


def cmd_baselines(args: argparse.Namespace) -> int:
    import torch

    from icgd.analysis.baselines import format_table, run_baselines
    from icgd.tasks.linear import LinearRegression

    task = _task_from(args, LinearRegression)
    dtype = {"float32": torch.float32, "float64": torch.float64}[args.dtype]
    from icgd.core.profiling import status_line

    with status_line("baselines", every=10.0):  # tuning takes a minute at the defaults: say what it does
        report = run_baselines(task, steps=args.steps, n_tasks=args.tasks, n_tune=args.tune_tasks, seed=args.seed,
                               device=args.device, dtype=dtype)
    print(json.dumps(report, indent=2) if args.json else format_table(report))
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from icgd.train import engine
    from icgd.train.config import load_config

    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)
    device = args.device
    if args.new_task_stream and not args.resume:
        raise UsageError("--new-task-stream continues a checkpoint: use it with --resume DIR")
    if args.resume:
        if args.config or args.overrides:
            raise UsageError("--resume continues a run with its own config.yaml: give no CONFIG or overrides")
        result = engine.train(out=args.resume, device=device, resume=True, quiet=args.quiet,
                              new_stream=args.new_task_stream)
    else:
        if not args.config:
            raise UsageError("give a CONFIG (a YAML file or a preset) or --resume DIR")
        overrides = list(args.overrides)
        # a first 'key=value' would be taken for CONFIG by argparse: it is an override of the defaults
        source = args.config
        if "=" in source and not source.endswith((".yaml", ".yml")):
            overrides.insert(0, source)
            source = None
        config = load_config(source, overrides) if source else _default_config(overrides)
        result = engine.train(config, args.out, device=device, quiet=args.quiet)
    s = result.summary
    if result.finished_before:
        print(f"{result.run_dir} finished all its {s['steps']} steps before: nothing resumed, nothing written",
              file=sys.stderr)
    if args.json:
        print(json.dumps(s, indent=2))
    else:
        took = "in an unrecorded time" if s["wall_seconds"] is None else f"in {s['wall_seconds']:.1f} s"
        print(f"run {s['name']}: {s['status']} after {s['steps']} steps {took} "
              f"({s['seed_steps_per_s']} seed-steps/s); {result.run_dir}")
        print(f"backend {s['backend']}: {s['backend_reason']}")
        ref = s["reference"]
        steps = f" ({ref['steps']} steps)" if "steps" in ref else ""  # a unigram reference takes no steps
        print(f"reference {ref['learner']}{steps}: loss {ref['loss']:.5g}")
        for r in s["seeds"]:
            gap = "" if r["relative_gap"] is None else f" ({100 * r['relative_gap']:+.2f}% vs reference)"
            cos = "" if r["sensitivity_cosine"] is None else f", sensitivity cosine {r['sensitivity_cosine']:.4f}"
            loss = "n/a" if r["final_eval_loss"] is None else f"{r['final_eval_loss']:.5g}"
            print(f"  seed {r['seed']}: eval loss {loss}{gap}{cos}")
    return 0


def _seed_list(text: str) -> list[int]:
    """'4' -> [0, 1, 2, 3]; '0,3,7' -> [0, 3, 7]."""
    from icgd.core.seeds import parse_seeds

    try:
        return parse_seeds(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def cmd_list(args: argparse.Namespace) -> int:
    from icgd.experiments import experiments

    exps = experiments()
    width = max(len(n) for n in exps)
    print(f"{'experiment':<{width}}  {'quick':>6}  {'full':>6}  description")
    def minutes(m: float) -> str:  # 0.5 stays 0.5, not 0; whole minutes past 10
        return f"{m:.1f}m" if m < 10 else f"{m:.0f}m"

    for name, e in sorted(exps.items()):
        print(f"{name:<{width}}  {minutes(e.quick_minutes):>6}  {minutes(e.full_minutes):>6}  {e.description}")
    print("\n(times on 2 CPU cores; models trained by one experiment are cached and reused by others)")
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from pathlib import Path

    from icgd.experiments import get_experiment, run_experiment

    exp = get_experiment(args.name)
    if args.plan:
        return _print_plan(args)
    if args.json:
        raise UsageError("--json goes with --plan (a run prints its report.md; its numbers are in results.json)")
    suffix = _mode_suffix(args)
    out = Path(args.out) if args.out else Path("runs") / (exp.name + suffix)
    cache = Path(args.cache) if args.cache else out.parent / f"_train{suffix}"
    from icgd.experiments.registry import NotStored

    try:
        results = run_experiment(exp.name, out, cache, quick=args.quick, seeds=args.seeds,
                                 device=args.device, quiet=args.quiet, smoke=args.smoke,
                                 options=_options(args), trained_on=args.trained_on,
                                 store=None if args.retrain else "default", store_only=args.store_only)
    except NotStored as e:
        raise UsageError(f"{exp.name}: {e} (without --store-only it trains them: about {exp.full_minutes:g} min "
                         "on 2 CPU cores for all its models)") from None
    print((out / "report.md").read_text())
    print(f"tables, figures (PNG, SVG), results.json and report.md in {out} ({results['seconds']} s)")
    return 0


def _print_plan(args: argparse.Namespace) -> int:
    """`icgd reproduce EXP --plan [--json]`: every model the experiment would train, with its resolved config."""
    from icgd.experiments.runner import plan_experiment

    if args.smoke:
        raise UsageError("--plan shows the quick or the full set-up, not --smoke")
    plan = plan_experiment(args.name, "quick" if args.quick else "full", args.seeds, args.device,
                           _options(args))
    if args.json:
        print(json.dumps(plan, indent=2))
        return 0
    print(f"{plan['experiment']} ({plan['mode']} mode, seeds {plan['seeds']}; {plan['source']})")
    if plan["models"] is None:
        print(plan["note"])
        return 0
    for m in plan["models"]:
        c = m["config"]
        o = c["optim"]
        print(f"\n{m['name']}: task {c['task']['kind']}, model {c['model'].get('kind', 'stack')}, {c['steps']} steps x "
              f"batch {c['batch_size']}, data {c['data']}, {o['name']} lr {o['lr']:g} betas ({o['beta1']:g}, "
              f"{o['beta2']:g}) eps {o['eps']:g} grad clip {o['grad_clip']}")
        for line in _flatten(c):
            print(f"  {line}")
    if plan.get("note"):
        print(f"\n{plan['note']}")
    return 0


def _flatten(tree: dict[str, Any], prefix: str = "") -> list[str]:
    """`key.sub = value` lines of a nested config (the dotted keys `icgd train` accepts as overrides)."""
    lines = []
    for k, v in tree.items():
        if isinstance(v, dict) and v:
            lines += _flatten(v, f"{prefix}{k}.")
        else:
            lines.append(f"{prefix}{k} = {json.dumps(v)}")
    return lines


def cmd_verify(args: argparse.Namespace) -> int:
    from pathlib import Path

    from icgd.claims import format_markdown, verify
    from icgd.core.io import write_json, write_text
    from icgd.core.profiling import format_breakdown

    out = Path(args.out) if args.out else Path("runs") / f"verify-{args.suite}{_mode_suffix(args)}"
    report = verify(args.suite, out, quick=args.quick, seeds=args.seeds, device=args.device,
                    quiet=args.quiet or args.json, cache=args.cache, smoke=args.smoke, options=_options(args),
                    workers=args.workers, address=args.address, retrain=args.retrain, store_only=args.store_only)
    write_json(out / "claims.json", report)
    write_text(out / "claims.md", format_markdown(report))
    if args.json:
        print(json.dumps(report, indent=2))
    elif args.markdown:
        print(format_markdown(report).rstrip("\n"))
    else:
        from icgd.results.console import print_claims

        print_claims(report)  # rich on a terminal; format_report's plain text otherwise
        print(format_breakdown(report["profile"]))
    # untested claims (premise not met) claim nothing, so they do not fail --strict
    return 1 if args.strict and not all(c["passed"] or c["verdict"] == "untested" for c in report["claims"]) else 0


def _in_commands(name: str) -> Any:
    """The command `name` of `icgd.report.commands` (`icgd store`, `scoreboard`, `compare`: docs/store.md),
    imported when it runs, so that the other commands do not load the report's modules."""
    def run(args: argparse.Namespace) -> int:
        from icgd.report import commands

        return getattr(commands, name)(args)
    return run


def cmd_sweep(args: argparse.Namespace) -> int:
    from pathlib import Path

    from icgd.scale import sweep
    from icgd.scale.distributed import RayUnavailable

    if args.summary:
        if args.config or args.items:
            raise UsageError("--summary DIR summarises a finished sweep: give no CONFIG or values")
        frame = sweep.summary(args.summary, args.metric, args.maximize, args.top)
        print(frame.to_string(index=False))
        print(f"figure: {Path(args.summary) / 'summary.png'} (and .pdf); table: {Path(args.summary) / 'sweep.parquet'}")
        return 0
    if not args.config or "=" in args.config:
        raise UsageError("give a CONFIG (a YAML file or a preset) before the values to sweep, or --summary DIR")
    plan = sweep.make_plan(args.config, list(args.items), args.seeds, args.samples, args.sample_seed)
    out = Path(args.out) if args.out else Path("sweeps") / Path(args.config).stem
    try:
        frame = sweep.run(plan, out, args.workers, args.address, args.threads, args.device, args.quiet)
    except RayUnavailable as e:
        raise UsageError(str(e)) from None
    except KeyboardInterrupt:
        print(f"stopped: running trials keep their last checkpoints; run the same command to resume ({out})",
              file=sys.stderr)
        return 130
    best = sweep.summary(out, args.metric, args.maximize, args.top, frame=frame)
    print(best.to_string(index=False))
    print(f"one row per trial x seed x step: {out / 'sweep.parquet'}; figure: {out / 'summary.png'} (and .pdf)")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    from icgd.report import write_report

    runs = args.runs or sorted(str(p.parent) for p in Path("runs").glob("verify-*/claims.json"))
    if not runs:
        raise UsageError("give the directories `icgd verify` wrote (none found as runs/verify-*/claims.json)")
    for run in map(Path, runs):  # a reproduce folder has its own page: report.md
        if (run / "results.json").is_file() and not (run / "claims.json").is_file():
            raise UsageError(f"{run}: a folder of `icgd reproduce` (its page is {run / 'report.md'}); icgd report "
                             "makes one page of `icgd verify` folders: icgd verify SUITE --out DIR")
    t0 = time.perf_counter()
    out = write_report(runs, args.out)
    print(f"wrote {out} ({len(runs)} run director{'y' if len(runs) == 1 else 'ies'}, "
          f"{out.stat().st_size / 1e6:.1f} MB, {time.perf_counter() - t0:.1f} s)")
    return 0


def _options(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"model": args.model} if args.model else {}
    if args.data:
        out["data"] = [d.strip() for d in args.data.split(",") if d.strip()]
    if args.controls is not None:
        out["controls"] = args.controls
    return out


#: source 003's critics' controls (icgd.sources.dai.icl_vs_ft.CONTROLS, which checks this list in its tests)
DAI_CONTROLS = ("untrained", "untrained-io", "lcgd", "orders")
#: the builds of its untrained control, of which a run makes one (icgd.sources.dai.icl_vs_ft.UNTRAINED_BUILDS)
DAI_UNTRAINED_BUILDS = ("untrained", "untrained-io")


def _controls_arg(text: str) -> tuple[str, ...]:
    """--controls: a subset of source 003's controls, or none (one line, exit 2, on anything else)."""
    names = tuple(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
    if names == ("none",):
        return ()
    if "none" in names:
        raise argparse.ArgumentTypeError(f"{text!r}: none runs no control, so it stands alone")
    bad = [n for n in names if n not in DAI_CONTROLS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"{', '.join(bad) or repr(text)}: not a control; choose from "
                                         f"{', '.join(DAI_CONTROLS)}, or none")
    builds = [n for n in DAI_UNTRAINED_BUILDS if n in names]
    if len(builds) > 1:
        raise argparse.ArgumentTypeError(f"{' and '.join(builds)} are two builds of one control; choose one")
    return names


def _mode_suffix(args: argparse.Namespace) -> str:
    return "-smoke" if args.smoke else "-quick" if args.quick else ""


def _default_config(overrides: list[str]):
    from icgd.train.config import build_config, parse_overrides

    return build_config(parse_overrides(overrides))


def _add_study_options(p: argparse.ArgumentParser, out_help: str, cache_default: str) -> None:
    """Options shared by `reproduce` and `verify`."""
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="short training, fewer tasks, 3 seeds (full: 5)")
    mode.add_argument("--smoke", action="store_true", help="a handful of steps and tasks, 2 seeds: checks that "
                                                           "everything runs (its numbers mean nothing)")
    p.add_argument("--seeds", type=_seed_list, default=None, help="a count (4) or a list (0,3,7)")
    p.add_argument("--out", type=out_dir, help=out_help)
    p.add_argument("--device", default="cpu", type=_device_arg, help="cpu or cuda (default cpu)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--model", type=lm_model, help="source 003's language model: gemma3-270m (default), smollm2-135m, qwen2.5-coder-0.5b, a .gguf "
                                   "file or a Hugging Face model folder; dai-premise takes several, comma-separated "
                                   "(other experiments ignore it)")
    p.add_argument("--data", help="source 003's data sets, comma-separated: bbc-news, tweets, mr, subj, trec or CSV "
                                  "files with columns text, label (default bbc-news; full mode adds tweets)")
    p.add_argument("--controls", type=_controls_arg, help="source 003's critics' controls to run, comma-separated: "
                                   "untrained, untrained-io (Deutch et al.'s: the trained embeddings, norms and unembedding kept), lcgd, "
                                   "orders, or none (default: untrained, lcgd, orders)")
    p.add_argument("--cache", type=out_dir, help=f"where trained models are cached (default {cache_default}); studies that "
                                   "train the same configs can share one")
    p.add_argument("--retrain", action="store_true", help="train every model, ignoring the model store (zoo/, "
                                                          "docs/store.md), which is only read, never written")
    p.add_argument("--store-only", action="store_true",
                   help="full mode with the models of the store (and the cache) only, training nothing: verify "
                        "marks the claims of an experiment whose models it lacks untested; reproduce refuses it")


def build_parser() -> argparse.ArgumentParser:
    from icgd.claims.runner import suite_names

    suites = suite_names()  # every source's suites (`icgd.experiments.catalog` loads the sources)
    from icgd.tasks.linear import LinearRegression

    parser = _Parser(prog="icgd", description="In-context learning as gradient descent: reproduce, test, extend.")
    parser.add_argument("--version", action="version", version=f"icgd {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    b = sub.add_parser("baselines", help="losses of zero, GD, GD++ and least squares on linear regression",
                       description="Loss (mean and 95%% CI over tasks) of the zero predictor, K-step GD "
                                   "(one tuned eta, and one eta per step), GD++ (eta and gamma per step) and "
                                   "least squares on in-context linear regression. Learning rates are tuned "
                                   "on separate tasks (line search, then L-BFGS).")
    _add_model_options(b, LinearRegression, skip={"kind"})
    b.add_argument("--steps", type=_steps, default=[1, 2, 5], help="GD step counts, comma-separated (default 1,2,5)")
    b.add_argument("--tasks", type=_positive, default=10_000, help="evaluation tasks (default 10000)")
    b.add_argument("--tune-tasks", type=_positive, default=10_000, help="tuning tasks (default 10000)")
    b.add_argument("--seed", type=int, default=0, help="seed of the task generator (default 0)")
    b.add_argument("--device", default="cpu", type=_device_arg, help="cpu or cuda (default cpu)")
    b.add_argument("--dtype", choices=["float32", "float64"], default="float64", help="(default float64)")
    b.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    b.set_defaults(func=cmd_baselines)

    from icgd.train.config import PRESET_DOCS

    presets = "; ".join(f"{k}: {v}" for k, v in PRESET_DOCS.items())
    t = sub.add_parser("train", help="meta-train transformer learners (several seeds at once)",
                       description="Train a transformer learner on a task distribution and write a run "
                                   "directory (config.yaml, env.json, metrics.parquet, checkpoint.safetensors, "
                                   f"summary.json). Presets: {presets}.",
                       epilog="example: icgd train lsa-1 seeds=[0,1,2,3] optim.lr=5e-4 --out runs/lsa1")
    t.add_argument("config", nargs="?", help="a YAML config file or a preset name")
    t.add_argument("overrides", nargs="*", help="key=value overrides, dotted keys (optim.lr=5e-4, seeds=[0,1])")
    t.add_argument("--out", type=out_dir, help="run directory (default runs/<name>); must not exist or be empty")
    t.add_argument("--resume", metavar="DIR", type=run_dir, help="continue the run in DIR from its last checkpoint")
    t.add_argument("--new-task-stream", action="store_true",
                   help="with --resume: continue a checkpoint whose task stream this device cannot continue (a "
                        "run stopped in a GPU's graph step, finished on the CPU): tasks from a stream seeded anew "
                        "from the step on; summary.json's segments record it (not a bit-for-bit rerun)")
    t.add_argument("--device", default="cpu", type=_device_arg, help="cpu or cuda (default cpu)")
    t.add_argument("--threads", type=_count, default=None, help="torch CPU threads (default: torch's choice)")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.add_argument("--json", action="store_true", help="print summary.json at the end")
    t.set_defaults(func=cmd_train)

    ls = sub.add_parser("list", help="list the experiments with their estimated times",
                        description="Every registered experiment, with its estimated time on 2 CPU cores.")
    ls.set_defaults(func=cmd_list)

    r = sub.add_parser("reproduce", help="run one experiment (tables, figures, report.md)",
                       description="Run a named experiment and write its run directory: tables (CSV), "
                                   "figures (PNG and SVG), results.json and report.md, which puts each "
                                   "measured number beside the paper's statement.")
    r.add_argument("name", help="experiment name (see icgd list)")
    _add_study_options(r, "run directory (default runs/NAME[-quick|-smoke])", "beside --out")
    r.add_argument("--plan", action="store_true", help="print every model it would train, with its full resolved "
                                                       "config (what `icgd train` accepts), and train nothing")
    r.add_argument("--json", action="store_true", help='with --plan: print {"experiment", "mode", "seeds", '
                                                        '"source", "deviations", "models": [{"name", "config"}]}')
    r.add_argument("--trained-on", metavar="DEVICE", type=_device_type,
                   help="use the models in --cache that finished training on this device type (cuda: trained on a "
                        "GPU machine) before training any on --device; results.json says which device trained each")
    r.set_defaults(func=cmd_reproduce)

    v = sub.add_parser("verify", help="check a source's claims: measured value, threshold, PASS/FAIL",
                       description="Run the experiments a suite needs (models are cached and reused) and print "
                                   "each claim with its source figure, the measured value, the threshold and "
                                   f"PASS or FAIL. Suites: {', '.join(suites)}.")
    v.add_argument("suite", help=", ".join(suites))
    _add_study_options(v, "directory of the experiments (default runs/verify-SUITE[-quick|-smoke])", "OUT/_train")
    v.add_argument("--json", action="store_true", help='print {"suite", "claims": [{"id", "claim", "source", '
                                                        '"measured", "threshold", "passed"}]}')
    v.add_argument("--markdown", action="store_true", help="print the table as Markdown (always written to "
                                                            "OUT/claims.md)")
    v.add_argument("--strict", action="store_true", help="exit with code 1 when a claim is not PASS (untested claims, whose premise does not hold, "
                   "excepted)")
    v.add_argument("--workers", type=_count, default=1,
                   help="train the suite's models this many at a time, side by side, before the experiments run "
                        "(the same verdicts; fewer threads each can change the last bits of a model: docs/concepts/"
                        "experiments.md; on Ray when it is installed; default 1: one after another)")
    v.add_argument("--address", default=None,
                   help="train them on this Ray cluster ('auto', or host:6379; docs/sweeps.md) instead")
    v.set_defaults(func=cmd_verify)

    w = sub.add_parser("sweep", help="a grid or random search over config keys, trials side by side on Ray",
                       description="Train one run per combination of the swept values (each a resumable run "
                                   "directory under OUT/trials), on Ray with --workers N or --address, and write "
                                   "OUT/sweep.parquet (one row per trial x seed x evaluation step). Re-running the "
                                   "same command resumes. Values: key=v1,v2,... key=range(a,b[,step]) "
                                   "key=linspace(a,b,n) key=geomspace(a,b,n); random search (--samples K): "
                                   "key=uniform(a,b) loguniform(a,b) randint(a,b); key=v sets a fixed value.")
    w.add_argument("config", nargs="?", help="a YAML config file or a preset (see icgd train --help)")
    w.add_argument("items", nargs="*", help="key=v1,v2,... to sweep, key=v to fix (dotted keys: optim.lr)")
    w.add_argument("--seeds", type=_seed_list, default=None, help="every trial's seeds: a count (2) or a list "
                                                                   "(0,3); trained together in one run")
    w.add_argument("--workers", type=_count, default=1,
                   help="trials at a time on a local Ray runtime (default 1: one after another, no Ray needed)")
    w.add_argument("--address", default=None, help="run the trials on this Ray cluster ('auto', host:6379 or "
                                                     "ray://host:10001) instead of a local runtime")
    w.add_argument("--threads", type=_count, default=None,
                   help="torch threads (and Ray CPUs) per trial (default: cores / workers; 1 on a cluster)")
    w.add_argument("--samples", type=_count, default=None, help="random search: this many trials drawn from "
                                                                  "the values and distributions")
    w.add_argument("--sample-seed", type=int, default=0, help="seed of the random search (default 0)")
    w.add_argument("--out", type=out_dir, help="sweep directory (default sweeps/ and the config file's name without .yaml, or the preset's)")
    w.add_argument("--device", default="cpu", type=_device_arg, help="cpu or cuda (default cpu; on Ray, one GPU per trial)")
    w.add_argument("--quiet", action="store_true", help="no progress lines")
    w.add_argument("--summary", metavar="DIR", help="print the best trials of the sweep in DIR and write its figure")
    w.add_argument("--metric", default="eval_loss", help="metrics column to rank and plot (default eval_loss)")
    w.add_argument("--maximize", action="store_true", help="higher is better (default: lower)")
    w.add_argument("--top", type=int, default=10, help="how many trials to print (default 10; 0: all)")
    w.set_defaults(func=cmd_sweep)

    rp = sub.add_parser("report", help="one self-contained HTML page of verify runs: claims, figures, environment",
                        description="Write one HTML page (figures embedded, nothing loaded from a network) of the "
                                    "directories `icgd verify` wrote: per suite, every claim with the source's "
                                    "statement, the measured value (and its seed spread where the results hold "
                                    "one), the threshold, PASS/FAIL and the reproduction notes, the experiment's "
                                    "figures beside it, quick and full runs of a suite side by side, and the "
                                    "environment and times of each run.")
    rp.add_argument("runs", nargs="*", metavar="RUN", help="directories written by icgd verify (default: every "
                                                          "runs/verify-*/ holding a claims.json)")
    rp.add_argument("--out", default="report.html", type=out_file, help="the HTML file to write (default report.html)")
    rp.set_defaults(func=cmd_report)

    sb = sub.add_parser("scoreboard", help="the verdict pages of the docs, generated from verify runs",
                        description="Record the reports of `icgd verify` directories (RUN ...) in the scoreboard "
                                    "folder and generate its pages: per suite every claim with its measured value, "
                                    "seeds, interval, bar, verdict and the authors' number, and where each model "
                                    "came from; an index of all suites. Without RUN it regenerates the pages from "
                                    "the reports the folder holds.")
    sb.add_argument("runs", nargs="*", help="directories written by `icgd verify`")
    sb.add_argument("--dir", type=out_dir, help="the scoreboard folder (default: docs/scoreboard of the checkout)")
    sb.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 where a page differs from what the reports make")
    sb.set_defaults(func=_in_commands("scoreboard"))
    cp = sub.add_parser("compare", help="one suite's claims across several recorded runs, side by side",
                        description="One Markdown page of a suite's claims across scoreboard folders: a row per "
                                    "claim, a column per run (measured value, interval, verdict), the bar and the "
                                    "authors' number; the page records its inputs for --check and --update.")
    cp.add_argument("items", nargs="*", metavar="SUITE BOARD | PAGE", help="the suite, then the scoreboard folders "
                    "in column order; with --check or --update, the pages")
    cp.add_argument("--out", type=out_file, help="the page to write")
    cp.add_argument("--check", action="store_true", help="write nothing; exit 1 where a page is not what its recorded inputs make")
    cp.add_argument("--update", action="store_true", help="remake each page from the inputs it records")
    cp.set_defaults(func=_in_commands("compare"))
    st = sub.add_parser("store", help="the model store: list, check or add trained models",
                        description="The trained models kept with the code (zoo/): full mode takes a model from "
                                    "it when its config equals the plan's. list: what it holds; missing: the "
                                    "full-mode models it lacks, with their cost; check: every file against its "
                                    "sha256; add RUN...: keep finished run directories (of a model cache), their "
                                    "weights without the optimiser, and fitted references (the JSON files of a "
                                    "cache's _references/); park RUN...: keep unfinished run directories' "
                                    "resume state, from which full mode resumes them on any machine.")
    st.add_argument("action", choices=("list", "check", "add", "missing", "park"))
    st.add_argument("runs", nargs="*", help="run directories (or fitted references' JSON files) to add or park")
    st.add_argument("--store", help="the store's folder (default $ICGD_STORE, else the checkout's zoo/)")
    st.set_defaults(func=_in_commands("store"))
    return parser


#: the commands whose trailing `key=value` words are overrides, wherever they stand on the line (the
#: namespace field that takes them): `icgd train lsa-1 --out D steps=10`
OVERRIDES = {"train": "overrides", "sweep": "items"}


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """The arguments, with `key=value` overrides taken after options too (argparse stops a positional list at
    the first option); anything else it does not know is refused in one line."""
    args, extra = parser.parse_known_args(argv)
    field = OVERRIDES.get(getattr(args, "command", None) or "")
    if extra and field and all("=" in a and not a.startswith("-") for a in extra):
        getattr(args, field).extend(extra)
    elif extra:
        where = f"icgd {args.command}" if getattr(args, "command", None) else "icgd"
        raise UsageError(f"{where}: unrecognized arguments: {' '.join(extra)} (see --help)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = None
    try:
        parser = build_parser()
        args = _parse(parser, argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        return args.func(args)
    except BrokenPipeError:
        # the reader of stdout stopped early (`icgd ... --json | head`): not an error of ours. Point stdout at
        # devnull so that the interpreter's final flush does not raise again (Python's signal docs' recipe)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except pydantic.ValidationError as e:
        from icgd.train.config import validation_message

        print(f"error: {validation_message(e, 'invalid options')}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - map the library's errors to exit codes, one line each
        from icgd.train.checkpoint import CheckpointError
        from icgd.train.engine import TrainingDiverged, TrainingInterrupted

        if isinstance(e, TrainingInterrupted):
            if getattr(args, "command", None) in ("reproduce", "verify") and e.run is not None:
                # the study resumes from its cache when run again: that, not `icgd train --resume`, is the step
                import shlex

                e = e.resumed_by(f"the same command again: icgd {' '.join(shlex.quote(a) for a in argv)}")
            print(f"{e}", file=sys.stderr)
            return 130
        if isinstance(e, TrainingDiverged):
            print(f"error: {e}", file=sys.stderr)
            return 1
        if isinstance(e, (ValueError, CheckpointError)):
            print(f"error: {e}", file=sys.stderr)
            return 2
        if isinstance(e, OSError):  # a path that cannot be read or written: one line naming it
            where = f"{e.filename}: " if e.filename else ""
            print(f"error: {where}{e.strerror or e}", file=sys.stderr)
            return 2
        raise
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
