"""Does the five-layer GD++ reference converge? A study of the stored fits (docs/lab-notes/oswald-deep-references.md).

oswald-deep's GD++ for five separate layers is the best of three fits (`gdpp_reference`); the two L-BFGS fits
end far apart (held-out 0.047 and 0.030 at two threads), which leaves `five-matches-gdpp-loss` inconclusive.
This script reads the stored fits (the model store's references, full mode) and asks whether each end point
is a minimum or a stop: the loss's gradient there, in the fit's own coordinates (log eta, gamma times the
inputs' mean eigenvalue), then L-BFGS continued from it for `--iters` more iterations, and the held-out
loss after. Prints one line per fit and per continuation; writes nothing.

    python tools/gdpp_convergence.py [--iters 1000] [--starts lbfgs adam+lbfgs]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch


def main() -> None:
    from icgd.core.metrics import evaluate
    from icgd.experiments.catalog import load_sources
    from icgd.experiments.common import eval_tasks, tune_tasks
    from icgd.experiments.registry import ExperimentContext
    from icgd.learners.explicit import GDPlusPlus
    from icgd.learners.tuning import _gamma_scale, _loss, gdpp_gradient, tune_gdpp
    from icgd.sources.oswald.deep import _deep_models
    from icgd.sources.oswald.shared import gdpp_reference
    from icgd.train.store import default_store

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iters", type=int, default=1000, help="L-BFGS iterations of each continuation")
    p.add_argument("--starts", nargs="+", default=["lbfgs", "adam+lbfgs"], help="the stored fits to continue")
    p.add_argument("--adam", type=int, default=0, help="before each continuation, this many full-batch Adam steps "
                                                          "(float64, rate --adam-lr) in the fit's coordinates")
    p.add_argument("--adam-lr", type=float, default=1e-2)
    args = p.parse_args()
    load_sources()
    store = default_store()
    if store is None:
        raise SystemExit("no model store here (run from a clone: it reads zoo/)")
    ctx = ExperimentContext(Path("plan"), Path("plan"), "full", create=False, store=store)
    config = _deep_models(ctx)["lsa5"]
    task, clip = config.task, config.model.clip
    _, fits, best = gdpp_reference(ctx, task, 5, False, clip)
    if ctx.results["references"]["gdpp-5"]["from"] != "store":
        raise SystemExit("the five-layer GD++ fits are not in the store")
    tune, ev = tune_tasks(ctx, task), eval_tasks(ctx, task)
    tune64 = tune.to(dtype=torch.float64)
    c = _gamma_scale(tune64)

    def line(name: str, fit: GDPlusPlus, seconds: float | None = None) -> None:
        with torch.no_grad():
            t = float(_loss(fit, tune64))
        # |d loss / d (log eta, gamma c)| on the tuning tasks (the coordinates L-BFGS moves in): the relative
        # gradient the claims read, times the loss
        grad = gdpp_gradient(tune64, fit) * t
        print(f"{name:<28} tune {t:.5f}  held-out {evaluate(fit, ev).mean:.5f}  |grad| {grad:.2e}  "
              f"eta {[round(e, 3) for e in fit.etas]}  gamma {[round(g, 4) for g in fit.gammas]}"
              + (f"  ({seconds:.0f} s)" if seconds is not None else ""), flush=True)

    print(f"threads {torch.get_num_threads()}; token clip {clip}; the stored best: {best}")
    for name, fit in fits.items():
        line(f"stored {name}", fit)
    def adam(fit: GDPlusPlus) -> GDPlusPlus:
        """`args.adam` full-batch Adam steps on the tuning tasks from `fit`, in (log eta, gamma c)."""
        e0 = torch.tensor(fit.etas, dtype=torch.float64)
        u = torch.zeros(5, dtype=torch.float64, requires_grad=True)
        v = (torch.tensor(fit.gammas, dtype=torch.float64) * c).requires_grad_(True)
        opt = torch.optim.Adam([u, v], lr=args.adam_lr)
        for _ in range(args.adam):
            opt.zero_grad()
            _loss(GDPlusPlus(e0 * torch.exp(u), v / c, 5, clip=clip), tune64).backward()
            opt.step()
        with torch.no_grad():
            return GDPlusPlus((e0 * torch.exp(u)).tolist(), (v / c).tolist(), 5, clip=clip)

    for name in args.starts:
        t0 = time.perf_counter()
        start = fits[name]
        if args.adam:
            start = adam(start)
            line(f"{name} + {args.adam} Adam", start, time.perf_counter() - t0)
        more = tune_gdpp(tune, 5, max_iter=args.iters, clip=clip, init=start)
        line(f"{name} + {args.iters} L-BFGS", more, time.perf_counter() - t0)


if __name__ == "__main__":
    main()
