"""Vanilla against momentum on one synthetic task, paired by seed and held-out item: the premise per setting,
the comparison over the settings where it holds, and bootstrap replicates of both, as the momentum suite's
claims read them (`momentum-recall`, `momentum-regression`, `momentum-fewshot`), and the report of each
setting (`report_settings`, worded by each study).

Each setting (a number of pairs, a context size) gives two arrays (S seeds, Q held-out items) of a per-item
score, one per model, the same seeds and items in the same order. A replicate draws the seeds and the items
with replacement, the same draw for both models, so the interval of the difference keeps their pairing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from icgd.experiments.registry import ExperimentContext


def bootstrap_means(arrays: dict[str, np.ndarray], n_boot: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Replicates (n_boot,) of the mean of each array (S seeds, Q items), every array resampled with the same
    draw of seeds and items, so that arrays of the same seeds and items stay paired."""
    s_n, q_n = next(iter(arrays.values())).shape
    out = {k: np.empty(n_boot) for k in arrays}
    for i in range(n_boot):
        sd, qi = rng.integers(s_n, size=s_n), rng.integers(q_n, size=q_n)
        for k, a in arrays.items():
            out[k][i] = a[sd][:, qi].mean()
    return out


def paired_replicates(a: np.ndarray, b: np.ndarray, n_boot: int, rng: np.random.Generator
                      ) -> tuple[np.ndarray, np.ndarray]:
    """(replicates of mean(a), replicates of mean(b) - mean(a)) for a, b of shape (S, Q)."""
    m = bootstrap_means({"a": a, "b": b}, n_boot, rng)
    return m["a"], m["b"] - m["a"]


def summarize(ctx: ExperimentContext, prefix: str, scores: dict[tuple[int, str], np.ndarray], n_boot: int,
              seed: int, premise: Callable[[int, np.ndarray], np.ndarray], bar: float, above: bool,
              better: float, ceiling: float | None = None) -> list[int]:
    """Write, per setting n, "{prefix}{n}.{vanilla, momentum, vanilla_seeds, momentum_seeds, difference,
    difference_interval, premise, premise_interval}"; then "{prefix}.settings", "{prefix}.kept" (settings whose
    whole premise interval is above `bar`, or below it where not `above`), "{prefix}.premise" (the worst
    setting's premise),
    "{prefix}.difference" (better * (momentum - vanilla), mean over the kept settings: above 0 is momentum
    better) and "{prefix}.bootstrap" (replicates of the last two). premise(n, replicates of vanilla's mean)
    maps vanilla's score to the premise's measure (e.g. accuracy over chance); better is +1 where a higher
    score is better, -1 where lower is. `ceiling`, the best score an item can have (1 for accuracy): a setting
    whose premise holds but where vanilla has it on every item of every seed leaves momentum no room to be
    better, so it is left out of the comparison too (listed in "{prefix}.at_ceiling", not in "kept"): there a
    tie says nothing of the claim. Returns the kept settings."""
    settings = sorted({n for n, _ in scores})
    rng = np.random.default_rng(seed)
    boot_premise, boot_diff, kept, full = {}, {}, [], []
    for n in settings:
        van, mom = scores[(n, "vanilla")], scores[(n, "momentum")]
        ra, rd = paired_replicates(van, mom, n_boot, rng)
        boot_premise[n], boot_diff[n] = premise(n, ra), better * rd
        p_lo, p_hi = np.percentile(boot_premise[n], [2.5, 97.5]).tolist()
        point = float(premise(n, np.array([van.mean()]))[0])
        key = f"{prefix}{n}.{{}}"
        ctx.result(key.format("vanilla"), float(van.mean()))
        ctx.result(key.format("momentum"), float(mom.mean()))
        ctx.result(key.format("vanilla_seeds"), van.mean(1).tolist())
        ctx.result(key.format("momentum_seeds"), mom.mean(1).tolist())
        ctx.result(key.format("difference"), float(better * (mom.mean() - van.mean())))
        ctx.result(key.format("difference_interval"), np.percentile(boot_diff[n], [2.5, 97.5]).tolist())
        ctx.result(key.format("premise"), point)
        ctx.result(key.format("premise_interval"), [p_lo, p_hi])
        if (p_lo > bar) if above else (p_hi < bar):  # the premise holds; is there room left?
            (full if ceiling is not None and bool((van == ceiling).all()) else kept).append(n)
    ctx.result(f"{prefix}.settings", settings)
    ctx.result(f"{prefix}.kept", kept)
    ctx.result(f"{prefix}.at_ceiling", full)
    worst = np.min if above else np.max  # the premise's worse direction
    ctx.result(f"{prefix}.premise", float(worst([ctx.results[f"{prefix}{n}.premise"] for n in settings])))
    boot = {f"{prefix}.premise": worst(np.stack([boot_premise[n] for n in settings]), axis=0)}
    if kept:
        ctx.result(f"{prefix}.difference", float(np.mean([ctx.results[f"{prefix}{n}.difference"] for n in kept])))
        boot[f"{prefix}.difference"] = np.mean([boot_diff[n] for n in kept], axis=0)
    ctx.result(f"{prefix}.bootstrap", {k: [round(float(x), 6) for x in v] for k, v in boot.items()})
    return kept


#: the two models every synthetic study pairs
MODELS = ("vanilla", "momentum")
#: the token studies' models (`momentum-recall`, `momentum-fewshot`): width, layers, heads by mode (the
#: shape of `dai-momentum`'s quick LMs), batch, Adam's rate (cosine decay after a 5% warm-up)
TOKEN_SHAPE = {"smoke": (16, 1, 2), "quick": (64, 2, 2), "full": (64, 2, 2)}
TOKEN_BATCH = {"smoke": 4, "quick": 64, "full": 64}
#: Adam's rate of the token studies: 3e-3 left a vanilla recall model (N = 4) on the keyless plateau for 10,000
#: steps; 1e-3 read keys within 2000 (with the attention init of `causal_lm.default_init_std`)
TOKEN_LR = 1e-3


@dataclass(frozen=True)
class Wording:
    """How a study words each setting in its report (`report_settings`); `values` holds the setting's results
    ("vanilla", "momentum", "difference", "premise", "premise_interval", "difference_interval", and what the
    study added)."""

    #: the setting's symbol and unit: "N" and " pairs" name setting 4 "N = 4 pairs" in a row's title, "N = 4" in a
    #: note
    symbol: str
    unit: str
    #: the premise row: its title after the name, and its measured text before "holds" (n, values)
    premise_title: str
    premise: Callable[[int, dict[str, Any]], str]
    #: why a setting whose premise does not hold is left out (n, values)
    left_out: Callable[[int, dict[str, Any]], str]
    #: the comparison row's title after the name
    claim_title: str
    #: how the difference is named in the comparison row ("difference", "vanilla minus momentum")
    difference: str = "difference"
    #: where a setting at the ceiling is left out: the note's reason, and the premise row's suffix ("" where the
    #: study has no ceiling)
    ceiling_note: str = ""
    ceiling_suffix: str = ""


def report_settings(ctx: ExperimentContext, prefix: str, settings: list[int], kept: list[int], words: Wording
                    ) -> None:
    """The report of each setting written by `summarize`: a note for a setting left out (at the ceiling, or
    its premise not holding), a row for the premise and a row for the comparison with its interval."""
    r = ctx.results
    at_ceiling = r.get(f"{prefix}.at_ceiling", [])
    for n in settings:
        v = {k.split(".", 1)[1]: x for k, x in r.items() if k.startswith(f"{prefix}{n}.")}
        lo, hi = v["difference_interval"]
        short, name = f"{words.symbol} = {n}", f"{words.symbol} = {n}{words.unit}"
        if n in at_ceiling:
            ctx.note(f"{short}: left out of the comparison: {words.ceiling_note}")
        elif n not in kept:
            ctx.note(f"{short}: left out of the comparison: {words.left_out(n, v)}")
        holds = n in kept or n in at_ceiling
        ctx.report(f"{name}: {words.premise_title}",
                   words.premise(n, v) + ("holds" if holds else "**does not hold: left out**")
                   + (words.ceiling_suffix if n in at_ceiling else ""))
        ctx.report(f"{name}: {words.claim_title}",
                   f"momentum {v['momentum']:.3f}, vanilla {v['vanilla']:.3f}: {words.difference} "
                   f"{v['difference']:+.3f}, 95% interval [{lo:+.3f}, {hi:+.3f}]")


def token_model_config(ctx: ExperimentContext, name: str, task: dict[str, Any], steps: int, beta: float | None):
    """A causal LM of the token studies on `task`, vanilla (beta None) or with momentum attention at beta, the
    same for both models but the attention."""
    from icgd.experiments.common import eval_every
    from icgd.train.config import build_config

    d, n_layers, heads = TOKEN_SHAPE[ctx.mode]
    small = ctx.mode == "smoke"
    return build_config({
        "name": name, "task": task,
        "model": {"kind": "causal_lm", "d_model": d, "n_layers": n_layers, "n_heads": heads,
                  "attention": {} if beta is None else {"momentum": beta}},
        "optim": {"lr": TOKEN_LR, "schedule": "cosine", "warmup_steps": steps // 20},
        "steps": steps, "batch_size": TOKEN_BATCH[ctx.mode], "seeds": ctx.seeds, "data": "per_seed",
        "checkpoint_every": 500,
        "eval": {"every": eval_every(ctx, steps, 10), "n_tasks": 4 if small else 256, "n_tune": 8 if small else 256,
                 "reference": "unigram", "alignment_tasks": 0}})


def score_models(ctx: ExperimentContext, runs: dict[str, Any], tests: dict[Any, Any], label: str,
                 score: Callable[[Any, Any], Any], setting: str, column: str, chunk: int = 256,
                 dtype: Any = None, models: tuple[str, ...] = MODELS
                 ) -> tuple[list[dict[str, Any]], dict[tuple[Any, str], np.ndarray]]:
    """Every seed's model of each setting n scored on the same held-out episodes `tests[n]`, item by item.

    runs: the trained runs by label, `label.format(n=n, model=name)` for each name of `models`;
    score(model, episodes) -> (B,) per-item scores. Returns the table rows ({setting: n, "model", "seed",
    column: the seed's mean}) and the arrays (S, Q) that `summarize` pairs, by (n, model)."""
    import torch

    rows, scores = [], {}
    for n, test in tests.items():
        for name in models:
            res = runs[label.format(n=n, model=name)]
            per_seed = []
            for seed in res.config.seeds:
                model = res.learner(seed).to(device=ctx.device, dtype=dtype)
                model.eval()
                with torch.no_grad():
                    s = torch.cat([score(model, part.to(ctx.device)) for part in test.split(chunk)]).cpu().numpy()
                per_seed.append(s)
                rows.append({setting: n, "model": name, "seed": seed, column: float(s.mean())})
            scores[(n, name)] = np.stack(per_seed)
    return rows, scores


def per_seed_figure(ctx: ExperimentContext, name: str, rows: list[dict[str, Any]], setting: str, column: str,
                    title: str, ylabel: str, xlabel: str, level: tuple[dict[int, float], str],
                    mark: tuple[dict[int, float], str] | None = None) -> None:
    """One dot per seed and model at each setting; `level` (values by setting, label) drawn as a dashed line
    (chance, the zero predictor), `mark` as a black tick per setting (a reference learner)."""
    from icgd.results.figures import label_axes, legend_below, subplots

    fig, axes = subplots(1, width=4.6, height=3.4)
    ax = axes[0]
    settings = sorted({r[setting] for r in rows})
    for i, model in enumerate(MODELS):
        for j, n in enumerate(settings):
            ys = [r[column] for r in rows if r[setting] == n and r["model"] == model]
            ax.scatter([j + (i - 0.5) * 0.2] * len(ys), ys, color=f"C{i}", s=14, label=model if j == 0 else None)
    xs = np.arange(len(settings))
    ax.hlines([level[0][n] for n in settings], xs - 0.4, xs + 0.4, color="0.6", lw=0.8, ls="--", label=level[1])
    if mark is not None:
        ax.hlines([mark[0][n] for n in settings], xs - 0.2, xs + 0.2, color="k", lw=1.2, label=mark[1])
    ax.set_xticks(xs, [str(n) for n in settings])
    ax.set_xlim(-0.5, len(settings) - 0.5)
    label_axes(axes, [title], [ylabel], xlabel=xlabel, legend=False)
    legend_below(ax, ncol=2)  # the reference line runs along the top, where a legend inside would cover it
    ctx.figure(name, fig)
