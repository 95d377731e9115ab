"""Vanilla against momentum attention (sec. 4) in small byte-level LMs trained from scratch: validation
perplexity at three lengths and in-context accuracy (Tables 6-7): `dai-momentum`."""

from __future__ import annotations

import numpy as np

from icgd.experiments.common import Size, size
from icgd.experiments.dai.icl_vs_ft import SOURCE
from icgd.experiments.dai.keys import (
    ICL_WORST_DIFFERENCE_UPPER95,
    PPL_WORST_RATIO,
    PPL_WORST_RATIO_AT,
)
from icgd.experiments.registry import ExperimentContext, register
from icgd.results.figures import band, label_axes, subplots

# ------------------------------------------------------------------------------ momentum attention (sec. 4)
#: beta of momentum attention, fixed before any run: the source gives none (its Table 10 is lost from our
#: text); 0.5 gives the EMA of the past values a total weight beta / (1 - beta) = 1, the weight of the
#: attention's own (normalised) average, so neither term dominates at initialisation
MOMENTUM_BETA = 0.5
#: the deviation every momentum study lists for it
BETA_DEVIATION = "beta = 0.5, fixed: the source's value is not in our text of it (dai-momentum's note)."
#: model width, layers, heads (the source: two 350M GPTs; these train on 2 CPU cores in minutes)
LM_SHAPE = {"smoke": (16, 1, 1), "quick": (64, 2, 2), "full": (64, 2, 2)}
#: training length T in bytes: long enough for a few short demonstrations
LM_SEQ = Size(quick=512, full=512, smoke=160)
#: about 0.47 s per step of 3 seeds here: quick about 14 min of training, full (5 seeds) about 80 min
LM_STEPS = Size(quick=900, full=3000, smoke=4)
LM_BATCH = Size(quick=8, full=8, smoke=2)
#: windows of validation text per evaluation length
PPL_WINDOWS = Size(quick=256, full=1024, smoke=4)
ICL_QUERIES = Size(quick=200, full=500, smoke=4)
#: the ICL tasks' texts are cut to this many words so that demonstrations fit the models' short contexts
ICL_WORDS = 8
ICL_K_MAX = 32
PPL_SEED = 20_251_124


def lm_config(ctx: ExperimentContext, momentum: bool):
    """Vanilla or momentum: the same model, data, steps and seeds (momentum adds no parameter: beta is fixed)."""
    from icgd.experiments.common import eval_every
    from icgd.train.config import build_config

    d, n_layers, heads = LM_SHAPE[ctx.mode]
    steps = size(ctx, LM_STEPS)
    return build_config({
        "name": "momentum" if momentum else "vanilla",
        "task": {"kind": "text", "corpus": ["bbc-news", "tweets"], "seq_len": size(ctx, LM_SEQ)},
        "model": {"kind": "causal_lm", "d_model": d, "n_layers": n_layers, "n_heads": heads,
                  "attention": {"momentum": MOMENTUM_BETA} if momentum else {}},
        "optim": {"lr": 1e-3, "schedule": "cosine", "warmup_steps": steps // 20},
        "steps": steps, "batch_size": size(ctx, LM_BATCH), "seeds": ctx.seeds, "checkpoint_every": 250,
        "eval": {"every": eval_every(ctx, steps, 20), "n_tasks": 64 if ctx.mode != "smoke" else 4,
                 "n_tune": 512 if ctx.mode != "smoke" else 8, "reference": "unigram", "alignment_tasks": 0}})


def eval_lengths(ctx: ExperimentContext) -> tuple[int, int, int]:
    """The source's 256 / 512 / 1024, scaled to the training length T here: T/4, T/2, T."""
    t = size(ctx, LM_SEQ)
    return (t // 4, t // 2, t)


@register("dai-momentum", "vanilla vs momentum attention in small byte-level LMs trained from scratch: validation "
          "perplexity at three lengths and in-context accuracy (Tables 6-7)", SOURCE, quick_minutes=16,
          full_minutes=90)
def momentum(ctx: ExperimentContext) -> None:
    import pandas as pd

    from icgd.data.text import bbc_news, tweets
    from icgd.lm.scratch import icl_accuracy, perplexity

    icl_tasks = [bbc_news(max_words=ICL_WORDS), tweets(max_words=ICL_WORDS)]  # fail before training
    runs = {name: ctx.train(f"lm-{name}", lm_config(ctx, name == "momentum")) for name in ("vanilla", "momentum")}
    lengths = eval_lengths(ctx)
    t_len = size(ctx, LM_SEQ)
    rows, icl_rows = [], []
    for name, res in runs.items():
        val_task = res.config.task.evaluation_task()
        for i, seed in enumerate(res.config.seeds):
            model = res.learner(seed).to(ctx.device)
            model.eval()
            row = {"model": name, "seed": seed, "train_perplexity": perplexity(
                model, res.config.task, t_len, size(ctx, PPL_WINDOWS), PPL_SEED)}
            for n in lengths:
                row[f"val_perplexity_{n}"] = perplexity(model, val_task, n, size(ctx, PPL_WINDOWS), PPL_SEED)
            rows.append(row)
            for task in icl_tasks:
                queries = task.split("test")[:size(ctx, ICL_QUERIES)]
                for k_max, setting in ((0, "zsl"), (ICL_K_MAX, "icl")):
                    r = icl_accuracy(model, task, queries, seed, k_max, t_len)
                    icl_rows.append({"model": name, "seed": seed, "dataset": task.name, "setting": setting,
                                     "k": r["k"], "accuracy": r["accuracy"], "chance": 1 / len(task.labels)})
    ppl, icl = pd.DataFrame(rows), pd.DataFrame(icl_rows)
    ctx.table("perplexity", rows)
    ctx.table("icl", icl_rows)
    _momentum_results(ctx, ppl, icl, lengths)
    _momentum_figure(ctx, runs, ppl, lengths)
    _momentum_report(ctx, ppl, icl, lengths)


def _momentum_results(ctx: ExperimentContext, ppl, icl, lengths) -> None:
    """Paired by seed (same initial draw of every shared weight, same batches): momentum / vanilla."""
    van = ppl[ppl.model == "vanilla"].set_index("seed")
    mom = ppl[ppl.model == "momentum"].set_index("seed")
    worst = 0.0
    for n in lengths:
        ratio = mom[f"val_perplexity_{n}"] / van[f"val_perplexity_{n}"]
        ctx.result(f"ppl{n}.vanilla_mean", float(van[f"val_perplexity_{n}"].mean()))
        ctx.result(f"ppl{n}.momentum_mean", float(mom[f"val_perplexity_{n}"].mean()))
        ctx.result(PPL_WORST_RATIO_AT.format(n=n), float(ratio.max()))
        worst = max(worst, float(ratio.max()))
    ctx.result(PPL_WORST_RATIO, worst)
    ctx.result("train_ppl.vanilla_mean", float(van.train_perplexity.mean()))
    ctx.result("train_ppl.momentum_mean", float(mom.train_perplexity.mean()))
    # ICL: momentum minus vanilla accuracy pooled over seeds, with the 95% upper bound of the difference
    bounds = []
    for d, g in icl[icl.setting == "icl"].groupby("dataset"):
        n = len(g.seed.unique()) * size(ctx, ICL_QUERIES)
        a_m = float(g[g.model == "momentum"].accuracy.mean())
        a_v = float(g[g.model == "vanilla"].accuracy.mean())
        se = float(np.sqrt(a_m * (1 - a_m) / n + a_v * (1 - a_v) / n))
        ctx.result(f"{d}.icl_momentum", a_m)
        ctx.result(f"{d}.icl_vanilla", a_v)
        ctx.result(f"{d}.icl_difference", a_m - a_v)
        ctx.result(f"{d}.icl_difference_upper95", a_m - a_v + 1.96 * se)
        for model in ("vanilla", "momentum"):
            z = icl[(icl.setting == "zsl") & (icl.dataset == d) & (icl.model == model)].accuracy
            ctx.result(f"{d}.zsl_{model}", float(z.mean()))
        ctx.result(f"{d}.k_mean", float(g.k.mean()))
        bounds.append(a_m - a_v + 1.96 * se)
    ctx.result(ICL_WORST_DIFFERENCE_UPPER95, float(min(bounds)))


def _momentum_figure(ctx: ExperimentContext, runs, ppl, lengths) -> None:
    from icgd.experiments.common import curves

    fig, axes = subplots(2, width=4.4, height=3.2)
    for name, res in runs.items():
        steps, ys = curves(res, "eval_loss")
        band(axes[0], steps, np.exp(ys), name, None)
        g = ppl[ppl.model == name]
        ys2 = np.stack([g[f"val_perplexity_{n}"].to_numpy() for n in lengths], axis=1)
        band(axes[1], list(lengths), ys2, name, None)
    label_axes(axes, ["validation perplexity during training", "validation perplexity by length"],
               ["perplexity per byte", "perplexity per byte"])
    axes[1].set_xlabel("window length (bytes)")
    fig.suptitle("vanilla vs momentum attention (mean +- std over seeds)")
    ctx.figure("momentum", fig)


def _momentum_report(ctx: ExperimentContext, ppl, icl, lengths) -> None:
    r = ctx.results
    ctx.report("Momentum attention lowers validation perplexity at every input length (Table 6)",
               "; ".join(f"{n} bytes: vanilla {r[f'ppl{n}.vanilla_mean']:.3f}, momentum "
                         f"{r[f'ppl{n}.momentum_mean']:.3f} (worst seed pair momentum / vanilla "
                         f"{r[PPL_WORST_RATIO_AT.format(n=n)]:.4f})" for n in lengths))
    for d in sorted(icl.dataset.unique()):
        ctx.report(f"{d}: momentum attention gives higher ICL accuracy (Table 7)",
                   f"ICL (k = {r[f'{d}.k_mean']:.1f} demonstrations on average) vanilla {r[f'{d}.icl_vanilla']:.3f}, "
                   f"momentum {r[f'{d}.icl_momentum']:.3f} (difference {r[f'{d}.icl_difference']:+.3f}, 95% upper "
                   f"bound {r[f'{d}.icl_difference_upper95']:+.3f}); zero-shot vanilla {r[f'{d}.zsl_vanilla']:.3f}, "
                   f"momentum {r[f'{d}.zsl_momentum']:.3f}; chance {icl[icl.dataset == d].chance.iloc[0]:.3f}")
    ctx.note(f"beta = {MOMENTUM_BETA} (fixed); models {LM_SHAPE[ctx.mode]} (width, layers, heads), byte-level, "
             f"trained on BBC News articles and tweets (train splits), {size(ctx, LM_STEPS)} steps of "
             f"{size(ctx, LM_BATCH)} windows of {size(ctx, LM_SEQ)} bytes. Per-seed numbers: perplexity.csv, icl.csv.")
