"""What one evaluation during training costs (`icgd.train.evaluation.evaluate_seeds`), in its parts.

    python benchmarks/eval_cost.py

For three models of the linear study (5 seeds, Dx = N = 10, the default eval sizes: 4096 held-out tasks,
1024 alignment tasks), seconds for: the held-out loss seed by seed on each seed's module (float32), the
alignment with a tuned GD step seed by seed (float64, with the sensitivities), and the held-out predictions
of all seeds at once on the fused training path (what the loss part could cost). A training run evaluates
every `eval.every` steps (default 100). Run it with nothing else on the machine.
"""

from __future__ import annotations

import time

import torch

MODELS = {"2-layer 4-head MLP stack": {"n_layers": 2, "n_heads": 4, "mlp": True},
          "5-layer LSA": {"n_layers": 5, "clip": 10.0}, "1-layer LSA": {"n_layers": 1}}


def main() -> None:
    from icgd.core.episodes import make_generator
    from icgd.core.metrics import alignment, evaluate
    from icgd.learners.tuning import tune_gd
    from icgd.train.config import build_config
    from icgd.train.evaluation import seed_learner
    from icgd.train.fused import lsa_predictions
    from icgd.train.models import init_params

    torch.set_num_threads(2)
    for name, model in MODELS.items():
        cfg = build_config({"name": "bench", "model": model, "seeds": [0, 1, 2, 3, 4]})
        params = {k: v.detach() for k, v in init_params(cfg).items()}
        ev = cfg.task.evaluation_task().sample(cfg.eval.n_tasks, make_generator(1))
        ref = tune_gd(cfg.task.sample(2000, make_generator(2), dtype=torch.float64), 1)
        ref_ep = ev[:cfg.eval.alignment_tasks].to("cpu", torch.float64)
        t0 = time.perf_counter()
        for i in range(len(cfg.seeds)):
            evaluate(seed_learner(cfg, params, i), ev)
        t1 = time.perf_counter()
        p64 = {k: v.to(torch.float64) for k, v in params.items()}
        for i in range(len(cfg.seeds)):
            alignment(seed_learner(cfg, p64, i), ref, ref_ep)
        t2 = time.perf_counter()
        with torch.no_grad():
            lsa_predictions(params, cfg.stack_config(), ev.context_x, ev.context_y, ev.query_x)
        t3 = time.perf_counter()
        print(f"{name}: loss seed by seed {t1 - t0:.3f} s, alignment seed by seed {t2 - t1:.3f} s, "
              f"all seeds' predictions on the fused path {t3 - t2:.3f} s")


if __name__ == "__main__":
    main()
