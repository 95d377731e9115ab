"""ZSL, ICL with the demonstrations and FT of only the attention key/value projections on the same
demonstrations, on the same test queries, for each data set (`icgd.sources.dai.study`): accuracies with the
spread over demonstration seeds, Rec2FTP, SimAOU, SimAM and Kendall per layer (Tables 2-5), per-query and
per-layer tables and the FT learning-rate selection (`lr_selection.parquet`: dataset, seed, lr, loss_before,
loss_after, validation_accuracy, converged, chosen), a per-layer figure per data set, and the critics' controls
(`icgd.sources.dai.controls`: `untrained.parquet`, `lcgd.parquet`, `orders.parquet`, `controls_<data>.png`):
`dai-icl-vs-ft`."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from icgd.core.io import atomic_path
from icgd.experiments.common import Size, size
from icgd.experiments.registry import DocTable, ExperimentContext, register
from icgd.results.figures import band, label_axes, subplots
from icgd.sources.dai.keys import (BOOTSTRAP, CONTROL_KEYS, DATASET, DATASETS, FT_PREMISE, FT_PREMISE_INTERVAL, KEYS,
                                    MEAN, PREMISE, PREMISE_INTERVAL, PREMISE_KEPT)

SOURCE = "source 003"
#: results key: per data set, what this call made and read from the stage cache (`StageCache.tally`); an
#: account of the call like its time, not a measured number (a rerun from the cache differs here only)
STAGES = "stages"
#: the smallest packaged model where ICL beats ZSL on BBC News and the tweets (`icgd reproduce dai-premise --quick`:
#: SmolLM2-135M fails on both, Qwen2.5-Coder-0.5B on BBC News; docs/sources/dai.md)
DEFAULT_MODEL = "gemma3-270m"
N_DEMOS = Size(quick=32, full=32, smoke=2)
# quick: 100 test queries left FT's corrections of ZSL (Rec2FTP's denominator) at 11 queries; 200 doubles them
N_VALIDATION = Size(quick=100, full=200, smoke=3)
#: smoke: enough for FT to correct some ZSL error (tests/integration/test_lm.py; on SmolLM2-135M, BBC News:
#: one query at demonstration seed 1 of 24, 2026-11-29; 24 instead of 40 took the smoke run from 95 to 62 s)
N_TEST = Size(quick=200, full=500, smoke=24)
KENDALL_QUERIES = Size(quick=100, full=100, smoke=2)  # the authors' code: the first 100 queries
#: SGD learning rates tried for FT (the source: "base values times several scales"; its values are lost): a
#: factor 2-2.5 apart, at least 6 (on the tweets the top of a 3-rate grid diverged); a rate whose FT
#: loss rises is rejected (`icgd.sources.dai.study.select_lr`)
#: the critics' controls (`icgd.sources.dai.controls`): init seeds of the untrained model, demonstration orders,
#: test queries of the order study (Shen et al.: 10 orders of 8 demonstrations)
UNTRAINED_SEEDS = {"smoke": (0,), "quick": (0, 1), "full": (0, 1, 2)}
ORDERS = Size(quick=4, full=8, smoke=2)
ORDER_QUERIES = Size(quick=50, full=100, smoke=10)
LRS = {"smoke": (1e-2, 3e-2), "quick": (2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 1e-1),
       "full": (1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 1e-1, 2e-1)}


def datasets(ctx: ExperimentContext) -> tuple[str, ...]:
    """options["data"] (packaged task names or CSV paths), else BBC News, and the tweets in full mode."""
    if ctx.options.get("data"):
        return tuple(ctx.options["data"])
    return ("bbc-news", "tweets") if ctx.mode == "full" else ("bbc-news",)


#: the critics' controls a run can choose (`--controls`); "untrained-io" is the untrained control as Deutch et
#: al. build it, the trained model's embeddings, norms and unembedding kept (`DaiConfig.untrained_keep`)
CONTROLS = ("untrained", "untrained-io", "lcgd", "orders")
#: the controls a run makes when none are chosen
DEFAULT_CONTROLS = ("untrained", "lcgd", "orders")
#: each build of the untrained control, by the `untrained_keep` it sets; a run makes one of them
UNTRAINED_BUILDS = {"untrained": "none", "untrained-io": "io"}


def dai_config(ctx: ExperimentContext):
    """The study's settings for the mode; options["controls"] (a subset of CONTROLS) chooses the controls,
    DEFAULT_CONTROLS without it."""
    from icgd.sources.dai.study import DaiConfig

    chosen = ctx.options.get("controls")
    on = set(DEFAULT_CONTROLS if chosen is None else chosen)
    if on - set(CONTROLS):
        raise ValueError(f"controls: {', '.join(sorted(on - set(CONTROLS)))} unknown; choose from {', '.join(CONTROLS)}")
    builds = [name for name in UNTRAINED_BUILDS if name in on]
    if len(builds) > 1:
        raise ValueError(f"controls: {' and '.join(builds)} are two builds of one control; choose one")
    return DaiConfig(n_demos=size(ctx, N_DEMOS), demo_seeds=tuple(ctx.seeds), n_validation=size(ctx, N_VALIDATION),
                     n_test=size(ctx, N_TEST), lrs=LRS[ctx.mode], kendall_queries=size(ctx, KENDALL_QUERIES),
                     untrained_seeds=UNTRAINED_SEEDS[ctx.mode] if builds else (),
                     untrained_keep=UNTRAINED_BUILDS[builds[0]] if builds else "none", lcgd="lcgd" in on,
                     orders=size(ctx, ORDERS) if "orders" in on else 0, order_queries=size(ctx, ORDER_QUERIES))


@register("dai-icl-vs-ft", "ZSL vs ICL vs K/V finetuning on the same queries: accuracy, Rec2FTP, SimAOU, "
          "SimAM, Kendall (Tables 2-5), and the critics' controls", SOURCE, quick_minutes=30, full_minutes=180,
          doc_tables=(
              DocTable("datasets", "Per data set, on the chosen demonstration seed's set: accuracy of ZSL, ICL and "
                       "K/V finetuning (Table 2), Rec2FTP in % (Table 3), SimAOU against FT and a random update, "
                       "SimAM before and after FT, Kendall against FT and a random update (Tables 3-5), and the "
                       "premises (ICL over the seeds minus ZSL; FT minus the best constant answer, whose accuracy "
                       "is the guess column)",
                       ("dataset", "zsl_accuracy", "icl_accuracy", "ft_accuracy", "rec2ftp", "simaou_ft",
                        "simaou_random", "simam_before", "simam_after", "kendall_ft", "kendall_random", "premise",
                        "guess_accuracy", "ft_premise")),
              DocTable("beside_paper", "The measures of the data sets the paper also ran (MR, Subj) beside its "
                       "columns: ours on the chosen seed, our mean and std over demonstration seeds, the paper's "
                       "GPT 2.7B and 1.3B")))
def icl_vs_ft(ctx: ExperimentContext) -> None:
    import pandas as pd

    from icgd.data.text import load_task
    from icgd.lm.models import LM, load_lm
    from icgd.sources.dai.study import compare

    tasks = [load_task(name) for name in datasets(ctx)]  # a bad data set fails before the model loads
    cfg = dai_config(ctx)  # so does a bad choice of controls
    model = ctx.options.get("model") or DEFAULT_MODEL
    if isinstance(model, LM):  # a model already loaded (a notebook, the tests): used as it is
        lm, model = model, model.name
    else:
        lm = load_lm(model, device=ctx.device)
    ctx.result("model", model)
    ctx.result("config", cfg.model_dump(mode="json"))
    ctx.result(DATASETS, [t.name for t in tasks])
    queries, layers, summaries, selection, untrained, lcgd, orders = [], [], [], [], [], [], []
    stages = ctx.result(STAGES, {})  # per data set: what this call made and read from the stage cache
    for task in tasks:
        name = task.name
        r = compare(lm, task, cfg, cache=ctx.cache / f"dai-{model.replace('/', '_')}", progress=not ctx.quiet)
        queries += r["queries"]
        layers += r["layers"]
        selection += r["lr_selection"]
        untrained += r["untrained"]
        lcgd += r["lcgd"]
        orders += r["orders"]
        summaries.append(r["summary"])
        stages[name] = r["stages"]
        for k, v in r["summary"].items():
            if k not in ("dataset", "bootstrap"):
                ctx.result(DATASET.format(dataset=name, key=k), v)
        _layer_figure(ctx, name, pd.DataFrame(r["layers"]))
        _controls_figure(ctx, name, r["summary"])
    kept = _premise(ctx, summaries)
    boot: dict[str, list[float]] = {}
    for s in summaries:
        for k in ("icl_accuracy_mean", "zsl_accuracy", "ft_accuracy", "guess_accuracy"):
            boot[DATASET.format(dataset=s["dataset"], key=k)] = s["bootstrap"][k]
    for key in KEYS + CONTROL_KEYS if kept else ():  # the comparison, over the data sets where both learners learnt
        if all(key in s["bootstrap"] for s in kept):
            ctx.result(MEAN.format(key=key), float(np.mean([s[key] for s in kept])))
            boot[MEAN.format(key=key)] = np.mean([s["bootstrap"][key] for s in kept], axis=0).tolist()
    ctx.result(BOOTSTRAP, {k: [float(f"{x:.6g}") for x in v] for k, v in boot.items()})  # 6 digits, also of 1e-7
    for name, rows in (("queries", queries), ("layers", layers), ("lr_selection", selection),
                       ("untrained", untrained), ("lcgd", lcgd), ("orders", orders)):
        if not rows:
            continue
        with atomic_path(ctx.out / f"{name}.parquet") as tmp:
            pd.DataFrame(rows).to_parquet(tmp, index=False)
    ctx.table("datasets", [_table_row(s) for s in summaries])
    beside = beside_paper(summaries)
    if beside:
        ctx.table("beside_paper", beside)
    _report(ctx, model, summaries)


def _premise(ctx: ExperimentContext, summaries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each data set's two premises, with their bootstrap intervals: ICL accuracy averaged over demonstration
    seeds minus ZSL's, and FT's accuracy minus the best constant answer's (a finetuning that learnt only the
    label prior, or less, is no learner to compare ICL with); the data sets where both hold (each interval's
    lower end above zero: `icgd.sources.dai.premise_study`'s rule), which the comparison claims read."""
    from icgd.sources.dai.premise_study import percentile_interval, premise_holds

    kept = []
    for s in summaries:
        b, why = s["bootstrap"], []
        for key, interval, (a, z), what in (
                (PREMISE, PREMISE_INTERVAL, ("icl_accuracy_mean", "zsl_accuracy"),
                 "ICL averaged over the demonstration seeds does not beat ZSL"),
                (FT_PREMISE, FT_PREMISE_INTERVAL, ("ft_accuracy", "guess_accuracy"),
                 "FT does not beat the best constant answer")):
            low, high = percentile_interval(np.asarray(b[a]) - np.asarray(b[z]))
            s[key], s[interval] = s[a] - s[z], [low, high]
            ctx.result(DATASET.format(dataset=s["dataset"], key=key), s[key])
            ctx.result(DATASET.format(dataset=s["dataset"], key=interval), [low, high])
            if not premise_holds(low):
                why.append(f"{what} ({s[key]:+.3f}, 95% interval [{low:+.3f}, {high:+.3f}])")
        if why:
            ctx.note(f"{s['dataset']}: left out of the comparison claims: " + "; ".join(why))
        else:
            kept.append(s)
    ctx.result(PREMISE_KEPT, [s["dataset"] for s in kept])
    return kept


def beside_paper(summaries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each measure of each data set that the paper also ran (`references.PAPER_COLUMNS`: MR, Subj) beside the
    paper's column: the chosen seed's value, the mean and std over demonstration seeds, GPT 2.7B's and 1.3B's."""
    from icgd.sources.dai.references import PAPER_COLUMNS

    rows = []
    for s in summaries:
        for key, (big, small) in PAPER_COLUMNS.get(s["dataset"], {}).items():
            rows.append({"dataset": s["dataset"], "measure": key, "ours": s[key],  # ZSL has no seeds: no mean
                         "ours_mean": s.get(f"{key}_mean"), "ours_std": s.get(f"{key}_std"),
                         "paper_gpt_2.7b": big, "paper_gpt_1.3b": small})
    return rows


def _table_row(s: dict[str, Any]) -> dict[str, Any]:
    cols = ["dataset", "n_test", "n_demos", "chosen_seed", "chosen_lr", "zsl_accuracy", "icl_accuracy",
            "icl_accuracy_mean", "icl_accuracy_std", "ft_accuracy", "ft_accuracy_mean", "ft_accuracy_std", "rec2ftp",
            "rec2ftp_denominator", "rec2ftp_mean", "rec2ftp_std", PREMISE, "guess_accuracy", FT_PREMISE]
    for m in KEYS[4:]:
        cols += [m, f"{m}_mean", f"{m}_std"]
    return {c: s[c] for c in cols + ["ft_seconds_per_set", "icl_queries_per_second", "zsl_queries_per_second"]} \
        | {"premise_low": s[PREMISE_INTERVAL][0], "premise_high": s[PREMISE_INTERVAL][1],
           "ft_premise_low": s[FT_PREMISE_INTERVAL][0], "ft_premise_high": s[FT_PREMISE_INTERVAL][1]}


def _layer_figure(ctx: ExperimentContext, name: str, lay) -> None:
    """SimAOU, SimAM and Kendall per layer, side by side at the page's width: the median over demonstration
    seeds with their range (thin lines: each seed, where they split)."""
    from matplotlib.ticker import MaxNLocator

    fig, axes = subplots(3, width=2.4, height=2.4)
    x = sorted(lay.layer.unique())
    n = lay.demo_seed.nunique()
    for ax, pairs, zero in zip(axes, ((("simaou_ft", "ICL vs FT"), ("simaou_random", "ICL vs random")),
                                      (("simam_after", "after FT"), ("simam_before", "before FT")),
                                      (("kendall_ft", "ICL vs FT"), ("kendall_random", "ICL vs random"))),
                               (True, False, True)):
        medians = []
        for key, _ in pairs:
            ys = np.stack([g.sort_values("layer")[key].to_numpy() for _, g in lay.groupby("demo_seed")])
            first = len(ax.get_lines())
            band(ax, x, ys, key, None)
            medians.append(ax.get_lines()[first])  # band draws the median first, then any per-seed lines
        if zero:  # SimAM sits near 1: a zero line would squash it
            ax.axhline(0, color="0.6", lw=0.6)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=5))
        ax.legend(medians, [label for _, label in pairs], fontsize=6, loc="best")
    label_axes(axes, ["SimAOU: output update", "SimAM: attention to query", "Kendall: attention to demos"],
               ["cosine", "cosine", "Kendall tau"], xlabel="layer", legend=False)
    fig.suptitle(f"{name}: ICL vs K/V finetuning per layer (median of {n} demonstration seeds; band or thin "
                 "lines: the seeds)", fontsize=8)
    ctx.figure(f"layers_{name}", fig)


def _controls_figure(ctx: ExperimentContext, name: str, s: dict[str, Any]) -> None:
    """The critics' controls of one data set: each measure on the trained model (against FT and against
    LCGD) and on the untrained ones (one dot per init seed), and each learner's spread over demonstration
    orders (one dot per query)."""
    from icgd.sources.dai.controls import ORDER_LEARNERS

    have_untrained, have_orders = "simaou_untrained_per_seed" in s, "order_spread_per_query" in s
    if not (have_untrained or have_orders):
        return
    fig, axes = subplots(have_untrained + have_orders, width=3.4, height=2.6)
    ax = iter(axes)
    if have_untrained:
        a = next(ax)
        for i, (m, label) in enumerate((("simaou", "SimAOU"), ("simam", "SimAM\nafter - before"),
                                        ("kendall", "Kendall"))):
            a.plot([i - 0.12], [s[f"{m}_trained"]], "o", color="#1f77b4", label="trained" if i == 0 else None)
            seeds = list(s[f"{m}_untrained_per_seed"].values())
            a.plot([i + 0.12] * len(seeds), seeds, "o", mfc="none", color="#d62728",
                   label=f"untrained ({len(seeds)} init seeds)" if i == 0 else None)
            if f"{m}_lcgd" in s:  # ICL against layer-causal GD, trained model
                lcgd = s[f"{m}_lcgd"] - (s["simam_before"] if m == "simam" else 0.0)
                a.plot([i], [lcgd], "^", color="#2ca02c", label="trained, against LCGD" if i == 0 else None)
        a.axhline(0, color="0.6", lw=0.6)
        a.set_xticks(range(3), ["SimAOU", "SimAM\nafter - before", "Kendall"])
        a.set_xlim(-0.6, 2.6)
        a.set_ylabel("measure, mean over layers")
        a.set_title("trained vs untrained model")
        a.legend(loc="best")
    if have_orders:
        a = next(ax)
        rng = np.random.default_rng(0)
        for i, k in enumerate(ORDER_LEARNERS):
            v = np.asarray(s["order_spread_per_query"][k])
            a.plot(i + rng.uniform(-0.15, 0.15, len(v)), v, ".", alpha=0.5, ms=3, color="0.4")
            a.plot([i - 0.25, i + 0.25], [v.mean()] * 2, color="#d62728", lw=1.5, label="mean" if i == 0 else None)
        a.set_xticks(range(3), ["ICL", "one-pass SGD", "full-batch GD"])
        a.set_ylim(bottom=0)
        a.set_ylabel("std over orders of label probability")
        a.set_title(f"{s['order_n']} orders, {s['order_queries']} queries")
        a.legend(loc="best")
    fig.suptitle(f"{name}: the critics' controls")
    ctx.figure(f"controls_{name}", fig)


def _report(ctx: ExperimentContext, model: str, summaries: list[dict[str, Any]]) -> None:
    def pm(s: dict[str, Any], k: str, f: str = ".3f") -> str:
        return f"{s[k]:{f}} (seeds: {s[k + '_mean']:{f}} +- {s[k + '_std']:{f}})"

    from icgd.sources.dai.premise_study import premise_holds
    from icgd.sources.dai.study import stages_text

    for s in summaries:
        d = s["dataset"]
        lo, hi = s[PREMISE_INTERVAL]
        ctx.report(f"{d}: the premise, ICL beats ZSL (with demonstrations of any seed)",
                   f"ICL averaged over seeds minus ZSL {s[PREMISE]:+.3f}, 95% interval [{lo:+.3f}, {hi:+.3f}]: "
                   + ("holds" if premise_holds(lo) else "**does not hold: left out of the comparison**"))
        lo, hi = s[FT_PREMISE_INTERVAL]
        ctx.report(f"{d}: the premise, FT beats the best constant answer",
                   f"FT minus the best constant answer (the test queries' most frequent label, "
                   f"{s['guess_accuracy']:.3f}) {s[FT_PREMISE]:+.3f}, 95% interval [{lo:+.3f}, {hi:+.3f}]: "
                   + ("holds" if premise_holds(lo) else "**does not hold: left out of the comparison**"))
        ctx.report(f"{d}: ICL and FT improve on ZSL (Table 2's accuracies)",
                   f"{model}, {s['n_demos']} demonstrations, {s['n_test']} test queries, chosen seed "
                   f"{s['chosen_seed']}, lr {s['chosen_lr']:g}: ZSL {s['zsl_accuracy']:.3f}, ICL "
                   f"{pm(s, 'icl_accuracy')}, FT {pm(s, 'ft_accuracy')}")
        ctx.report(f"{d}: Rec2FTP, 'more than 85%' on average (Table 2)",
                   f"{pm(s, 'rec2ftp', '.1f')} over {s['rec2ftp_denominator']} queries FT fixed")
        ctx.report(f"{d}: SimAOU (FT) much more positive than SimAOU (random), which is around zero (Table 3)",
                   f"FT {pm(s, 'simaou_ft')}; random uniform [0,1) (authors' code) {pm(s, 'simaou_random')}; "
                   f"random zero-mean (our reading) {pm(s, 'simaou_random_normal')}")
        ctx.report(f"{d}: SimAM after finetuning above before (Table 4)",
                   f"after {pm(s, 'simam_after')}; before {pm(s, 'simam_before')}")
        ctx.report(f"{d}: Kendall (ICL, FT) distinctly positive, Kendall (ICL, random) near zero (Table 5)",
                   f"token level: FT {pm(s, 'kendall_ft')}, random {pm(s, 'kendall_random')}; example level: FT "
                   f"{pm(s, 'kendall_ft_example')}, random {pm(s, 'kendall_random_example')}")
        if "simaou_margin" in s:
            per = "; ".join(f"{label} {s[m + '_trained']:.3f} vs {s[m + '_untrained']:.3f} (margin {s[m + '_margin']:+.3f})"
                            for m, label in (("simaou", "SimAOU"), ("simam", "SimAM after - before"),
                                             ("kendall", "Kendall"), ("rec2ftp", "Rec2FTP")))
            rates = "; ".join(f"init {u}: " + ", ".join(f"{t['lr']:.3g}: {t['loss_before']:.3g} -> {t['loss_after']:.3g}"
                                                       for t in ts) for u, ts in s.get("untrained_ft_rates", {}).items())
            ctx.report(f"{d}: the untrained control (Deutch et al.): trained vs untrained model, same prompts; FT at "
                       "the trained rate, or the largest smaller one that lowers the untrained model's loss",
                       f"{per}; the untrained model's accuracy: ZSL {s['untrained_zsl_accuracy']:.3f}, ICL "
                       f"{s['untrained_icl_accuracy']:.3f}, FT {s['untrained_ft_accuracy']:.3f}"
                       + (f"; FT rates tried (loss on the demonstrations before -> after): {rates}" if rates else ""))
        if "lcgd_rates" in s:
            rates = ", ".join(f"{t['lr']:.3g}: {t['lcgd_loss_before']:.3g} -> {t['lcgd_loss_after']:.3g} (model's "
                              f"{t['loss_before']:.3g} -> {t['loss_after']:.3g})" for t in s["lcgd_rates"])
            ctx.report(f"{d}: layer-causal GD's rate: the largest, from FT's down, that lowers LCGD's loss on the "
                       "demonstrations", f"tried (LCGD's loss, summed over layers, before -> after): {rates}; "
                       + (f"chosen {s['lcgd_lr']:.3g}" if s["lcgd_converged"] else "**none converged: LCGD is left out**"))
        if "simaou_lcgd" in s:
            ctx.report(f"{d}: layer-causal GD (Deutch et al.): ICL vs LCGD beside ICL vs FT, chosen seed",
                       f"SimAOU {s['simaou_lcgd']:.3f} vs FT {s['simaou_ft']:.3f} (margin {s['simaou_lcgd_minus_ft']:+.3f}); "
                       f"SimAM after {s['simam_lcgd']:.3f} vs FT {s['simam_after']:.3f}; Kendall {s['kendall_lcgd']:.3f} "
                       f"vs FT {s['kendall_ft']:.3f}; accuracy LCGD {s['lcgd_accuracy']:.3f}, FT {s['ft_accuracy']:.3f}; "
                       f"the model's loss on the demonstrations before -> after LCGD {s['lcgd_loss'][0]:.3g} -> {s['lcgd_loss'][1]:.3g}")
        if "order_icl_spread" in s:
            ctx.report(f"{d}: the order of the demonstrations (Shen et al.)",
                       f"{s['order_n']} orders, {s['order_queries']} queries; spread of the label probabilities: ICL "
                       f"{s['order_icl_spread']:.4f}, one-pass SGD {s['order_sgd_spread']:.4f}, full-batch GD "
                       f"{s['order_gd_spread']:.2g}; queries whose prediction an order changes: ICL "
                       f"{s['order_icl_flips']:.2f}, SGD {s['order_sgd_flips']:.2f}, GD {s['order_gd_flips']:.2f}; "
                       f"accuracy over orders: ICL {s['order_icl_accuracy_mean']:.3f} +- {s['order_icl_accuracy_std']:.3f}, "
                       f"SGD {s['order_sgd_accuracy_mean']:.3f} +- {s['order_sgd_accuracy_std']:.3f}, GD "
                       f"{s['order_gd_accuracy_mean']:.3f} +- {s['order_gd_accuracy_std']:.3f}")
        # the study's cost: a run resumed from the cache made only part of it
        ctx.report(f"{d}: the study's stages, made by this call or read from the stage cache (--cache)",
                   stages_text(ctx.results[STAGES][d]))
    for d, rows in itertools.groupby(beside_paper(summaries), key=lambda r: r["dataset"]):
        ctx.report(f"{d}: beside the paper's {d} column (GPT 2.7B; its validation set, ours a test split)",
                   "; ".join(f"{r['measure']} {r['ours']:.3g} (paper {r['paper_gpt_2.7b']:.3g})" for r in rows))
    ctx.note("The chosen seed is the demonstration seed with the best ICL validation accuracy (the source's "
             "protocol); the spread is over every demonstration seed on the same test queries. Per-query "
             "predictions: queries.parquet; per-layer measures: layers.parquet.")
