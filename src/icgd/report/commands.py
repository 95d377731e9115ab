"""What `icgd store` and `icgd scoreboard` do once their arguments are parsed (the parser is `icgd.cli`):
the model store's listing, check, additions and missing models (docs/store.md), and the scoreboard's
recording, pages and check. Bad input raises ValueError, which the command line turns into one line and
exit code 2."""

from __future__ import annotations

import argparse
from typing import Any

def store(args: argparse.Namespace) -> int:
    """`icgd store list | check | missing | add RUN... | park RUN...`: the model store (docs/store.md)."""
    from pathlib import Path

    from icgd.train.store import ModelStore, default_store

    store = ModelStore(args.store) if args.store else default_store()
    if store is None:
        raise ValueError("no model store here: name one with --store DIR (or $ICGD_STORE); a clone of the "
                         "repository has zoo/")
    if args.action == "add":
        if not args.runs:
            raise ValueError("icgd store add needs the finished run directories to keep")
        for run in args.runs:
            if Path(run).is_file() and run.endswith(".json"):  # a fitted reference of a cache's _references/
                print(f"{store.add_reference(Path(run))}: fitted reference")
                continue
            m = store.add(Path(run))
            print(f"{m.key}: {m.entry['device']}, {m.entry['steps']} steps, "
                  f"{sum(f['bytes'] for f in m.entry['files'].values()) / 1e6:.2f} MB")
        return 0
    if args.action == "park":
        if not args.runs:
            raise ValueError("icgd store park needs the unfinished run directories to keep")
        for run in args.runs:
            key, step = store.park(Path(run))
            e = store.manifest["parked"][key]
            print(f"{key}: parked at step {step} of {e['steps']}, "
                  f"{sum(f['bytes'] for f in e['files'].values()) / 1e6:.2f} MB")
        return 0
    if args.action == "missing":
        return _store_missing(store)
    models = store.models()
    if args.action == "check":
        for m in models:
            store.check(m)  # a StoreError is one line and exit 2
        refs = store.manifest["references"]
        for key in refs:
            store.find_reference(key)
        parked = store.manifest["parked"]
        for key in parked:
            store.check_parked(key)
        print(f"{len(models)} models and {len(refs)} fitted references"
              + (f" and {len(parked)} parked training{'s' * (len(parked) != 1)}" if parked else "")
              + f", every file as the manifest says ({store.size() / 1e6:.1f} MB)")
        return 0
    for m in models:
        e = m.entry
        print(f"{m.key:<40} {e['device']:<9} {e['steps']:>7} steps  {_minutes(e.get('seconds'))} min  "
              f"{e['commit'][:10]}" + ("  diverged (its record, no weights)" if e.get("status") == "diverged" else ""))
    for key, e in sorted(store.manifest["references"].items()):
        print(f"{key:<40} reference {e['threads']} thr   {_minutes(e.get('seconds'))} min  {e['commit'][:10]}")
    for key, e in sorted(store.manifest["parked"].items()):
        print(f"{key:<40} parked at step {e['step']} of {e['steps']} ({e['device']}, {_minutes(e.get('seconds'))} min "
              f"so far)  {e['commit'][:10]}")
    for name, why in store.manifest["missing"].items():
        print(f"{name:<40} missing: {why}")
    print(f"{len(models)} models, {store.size() / 1e6:.1f} MB in {store.root}")
    return 0


def _minutes(seconds: Any) -> str:
    """Minutes in 6 characters; "?" where the time was not recorded (a run resumed from a checkpoint older
    than the record of its earlier training time)."""
    return f"{seconds / 60:6.1f}" if isinstance(seconds, (int, float)) else f"{'?':>6}"


def _store_missing(store: Any) -> int:
    """Every model a full-mode experiment declares that the store does not hold (once, however many
    experiments share it), with the experiments that train it and their estimated full-mode time on 2 CPU
    cores (an experiment's models share that time)."""
    from pathlib import Path

    from icgd.experiments.catalog import load_sources, source_of
    from icgd.experiments.registry import ExperimentContext
    from icgd.experiments.runner import experiments
    from icgd.train.store import store_key

    load_sources()
    missing: dict[str, tuple[str, list[str]]] = {}
    held: set[str] = set()
    minutes: dict[str, float] = {}
    declared: dict[str, int] = {}  # experiment -> how many models it trains
    for name, exp in sorted(experiments().items()):
        src = source_of(exp.fn.__module__)
        if exp.models is None or src is None or src.template:
            continue
        ctx = ExperimentContext(Path("plan"), Path("plan"), "full", exp.seeds("full"), create=False)
        models = exp.models(ctx)
        declared[name] = len(models)
        for label, config in models.items():
            key, _ = store_key(label, config)
            if store.find(label, config) is not None:
                held.add(key)
            else:
                missing.setdefault(key, (label, []))[1].append(name)
                minutes[name] = exp.full_minutes
    parked = store.manifest["parked"]
    for key, (label, names) in sorted(missing.items(), key=lambda kv: kv[1][1][0]):
        print(f"{label:<28} {', '.join(f'{n} ({minutes[n]:g} min)' for n in names)}"
              + (f"  parked at step {parked[key]['step']} of {parked[key]['steps']}" if key in parked else ""))
    print(f"{len(missing)} full-mode models missing from the store, {len(held)} held (the minutes are each "
          "experiment's estimate on 2 CPU cores, all its models together); experiments that declare no models "
          "(they load a pretrained LM) are not listed")
    if minutes:  # the same by experiment: what to run to fill the store, and what it costs
        lacking = {n: sum(n in names for _, names in missing.values()) for n in minutes}
        print("\nTo fill it, by experiment (`icgd reproduce EXP` in full mode trains its missing models, "
              "`icgd store add RUN` keeps each; docs/store.md, 'Filling it'):")
        for n in sorted(minutes, key=lambda n: (minutes[n], n)):
            print(f"  {n:<28} {lacking[n]:>3} of {declared[n]:>3} models missing   {minutes[n]:>9g} min for all of them")
    return 0


def scoreboard(args: argparse.Namespace) -> int:
    """`icgd scoreboard [RUN ...] [--check]`: the generated verdict pages (docs/scoreboard)."""
    from pathlib import Path

    from icgd.report import scoreboard

    board = Path(args.dir) if args.dir else _default_board()
    if args.check:
        if args.runs:
            raise ValueError("--check compares the pages with the reports already in the folder: give no RUN")
        stale = scoreboard.stale(board)
        if stale:
            print(f"{board}: not what `icgd scoreboard` makes of its reports: {', '.join(stale)}")
            return 1
        print(f"{board}: every page is what `icgd scoreboard` makes of its reports")
        return 0
    for run in args.runs:
        print(f"recorded {scoreboard.record(run, board)}")
    changed = scoreboard.write(board)
    print(f"{board}: {len(changed)} page{'' if len(changed) == 1 else 's'} changed"
          + (f" ({', '.join(p.name for p in changed)})" if changed else ""))
    return 0


def compare(args: argparse.Namespace) -> int:
    """`icgd compare SUITE BOARD ... --out PAGE`, `--check PAGE ...`, `--update PAGE ...`: one suite's claims
    across recorded runs (docs/store.md, "Comparing runs")."""
    from icgd.report import compare as cmp

    if args.check or args.update:
        if args.out:
            raise ValueError("--check and --update read the inputs each page records: give PAGE ..., no --out")
        if not args.items:
            raise ValueError("give the comparison pages to check or update (PAGE ...)")
        if args.check:
            stale = [page for page in args.items if cmp.stale(page)]
            for page in stale:
                print(f"{page}: not what `icgd compare` makes of the reports it names")
            if not stale:
                print(f"{len(args.items)} page{'' if len(args.items) == 1 else 's'}: what `icgd compare` makes")
            return 1 if stale else 0
        for page in args.items:
            print(f"{page}: {'changed' if cmp.update(page) else 'unchanged'}")
        return 0
    if not args.out or len(args.items) < 2:
        raise ValueError("give the suite, at least one scoreboard folder and --out PAGE "
                         "(or --check / --update PAGE ...)")
    suite, *boards = args.items
    changed = cmp.write(suite, boards, args.out)
    print(f"{args.out}: {'written' if changed else 'unchanged'} ({len(boards)} runs of {suite})")
    return 0


def _default_board() -> Any:
    """docs/scoreboard of the checkout the package runs from, else of the working directory."""
    from pathlib import Path

    here = Path(__file__).resolve().parents[3] / "docs" / "scoreboard"  # src/icgd/report/ -> the checkout
    return here if here.is_dir() else Path("docs") / "scoreboard"
