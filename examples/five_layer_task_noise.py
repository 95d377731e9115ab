"""How much of oswald-deep's `five-matches-gdpp-loss` is the sample of held-out tasks?

    python examples/five_layer_task_noise.py RUN_DIR RESULTS_JSON [--seed 0] [--tasks 10000]

RUN_DIR is the 5-layer model's run directory in the model cache (`DIR/_train/lsa5-*`), RESULTS_JSON the
oswald-deep `results.json` whose GD++ (`five.gdpp`, token clip 10) it is compared with. For three samples of
held-out tasks (the experiment's evaluation seed, and two others) it prints the TF's and GD++'s mean loss,
their ratio with a 95% bootstrap interval over tasks (2000 resamples, paired: both learners on the same
tasks), the share of the TF's loss in its 10 worst tasks, and the ratio of the two learners' median task
losses. A script for the docs (docs/sources/oswald.md, "oswald-deep again"), not the library.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch

from icgd.core.episodes import make_generator
from icgd.core.metrics import query_loss
from icgd.experiments.common import EVAL_SEED, seed_learners
from icgd.learners.explicit import GDPlusPlus
from icgd.train.runs import load_run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir")
    ap.add_argument("results_json")
    ap.add_argument("--seed", type=int, default=0, help="which of the run's seeds (its position)")
    ap.add_argument("--tasks", type=int, default=10_000)
    args = ap.parse_args()
    torch.set_num_threads(1)
    run = load_run(args.run_dir)
    results = json.loads(open(args.results_json).read())
    ref = results.get("results", results)["five.gdpp"]
    gdpp = GDPlusPlus(ref["eta"], ref["gamma"], clip=ref.get("clip"))
    model = seed_learners(run)[args.seed]
    for sample in (EVAL_SEED, EVAL_SEED + 3, EVAL_SEED + 100):
        ev = run.config.task.sample(args.tasks, make_generator(sample), dtype=torch.float64)
        with torch.no_grad():
            tf = query_loss(model.predict(ev), ev.query_y).numpy()
            gp = query_loss(gdpp.predict(ev), ev.query_y).numpy()
        idx = np.random.default_rng(0).integers(0, len(tf), (2000, len(tf)))
        lo, hi = np.percentile(tf[idx].mean(1) / gp[idx].mean(1), [2.5, 97.5])
        print(f"tasks {sample}: TF {tf.mean():.4f}, GD++ {gp.mean():.4f}, TF / GD++ {tf.mean() / gp.mean():.3f} "
              f"[{lo:.3f}, {hi:.3f}]; worst 10 tasks {np.sort(tf)[-10:].sum() / tf.sum():.1%} of the TF's loss; "
              f"median task TF / GD++ {np.median(tf) / np.median(gp):.3f}")


if __name__ == "__main__":
    main()
