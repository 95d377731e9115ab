"""Does a trained 2-layer causal LM (`model.kind: causal_lm`) of a token task solve it by induction? Read
through the stack's hook points (`layers.{i}.attn.weights`, (B, H, T, T)) on held-out sequences:

- layer 0, per head: the mean attention of a token on the one before it (a previous-token head puts most of
  its weight there);
- layer 1, per head, at the last input (the query): the attention on the positions right after an earlier
  occurrence of the query's token (where an induction head looks: the value or label that followed it), and
  on the earlier occurrences themselves;
- the accuracy at the query.

    python examples/induction_probe.py RUN_DIR [--seed 0] [--n 512]

RUN_DIR is a run of `icgd train` (or a model cache entry of `icgd reproduce`) on a recall or bursty task.
"""

from __future__ import annotations

import argparse

import torch

from icgd.core.episodes import make_generator
from icgd.train.runs import load_run


def probe(run_dir: str, seed: int = 0, n: int = 512) -> dict[str, float]:
    res = load_run(run_dir)
    task = res.config.task
    if hasattr(task, "query_only"):  # bursty: score the query alone, as the held-out measure does
        task = task.query_only()
    ep = task.sample(n, make_generator(5))
    model = res.learner(seed)
    model.eval()
    cache: dict[str, torch.Tensor] = {}
    with torch.no_grad(), model.stack.hooks.caching(cache):
        logits = model.predict(ep)
    ids = ep.query_x[..., 0].long()
    q = ids.shape[1] - 1
    earlier = ids[:, :q] == ids[:, q:q + 1]  # (B, q): earlier occurrences of the query's token
    after = torch.zeros_like(ids, dtype=torch.bool)
    after[:, 1:q + 1] = earlier  # the positions right after them
    out = {}
    w0, w1 = cache["layers.0.attn.weights"], cache["layers.1.attn.weights"]
    for h in range(w0.shape[1]):
        out[f"layer 0 head {h}: on the previous token"] = float(w0[:, h].diagonal(-1, -2, -1).mean())
    for h in range(w1.shape[1]):
        a = w1[:, h, q, :]
        out[f"layer 1 head {h}, query: after an earlier occurrence"] = float((a * after).sum(1).mean())
        out[f"layer 1 head {h}, query: on the earlier occurrences"] = float((a[:, :q] * earlier).sum(1).mean())
    target = ep.query_y[:, q, 0].long()
    out["accuracy at the query"] = float((logits[:, q].argmax(-1) == target).float().mean())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n", type=int, default=512)
    args = ap.parse_args()
    for k, v in probe(args.run, args.seed, args.n).items():
        print(f"{k}: {v:.3f}")


if __name__ == "__main__":
    main()
