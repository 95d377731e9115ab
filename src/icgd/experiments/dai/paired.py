"""Vanilla against momentum on one synthetic task, paired by seed and held-out item: the premise per setting,
the comparison over the settings where it holds, and bootstrap replicates of both, as the momentum suite's
claims read them (`momentum-recall`, `momentum-regression`).

Each setting (a number of pairs, a context size) gives two arrays (S seeds, Q held-out items) of a per-item
score, one per model, the same seeds and items in the same order. A replicate draws the seeds and the items
with replacement, the same draw for both models, so the interval of the difference keeps their pairing.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from icgd.experiments.registry import ExperimentContext


def paired_replicates(a: np.ndarray, b: np.ndarray, n_boot: int, rng: np.random.Generator
                      ) -> tuple[np.ndarray, np.ndarray]:
    """(replicates of mean(a), replicates of mean(b) - mean(a)) for a, b of shape (S, Q)."""
    s_n, q_n = a.shape
    ra, rd = np.empty(n_boot), np.empty(n_boot)
    for i in range(n_boot):
        sd, qi = rng.integers(s_n, size=s_n), rng.integers(q_n, size=q_n)
        x, y = a[sd][:, qi].mean(), b[sd][:, qi].mean()
        ra[i], rd[i] = x, y - x
    return ra, rd


def summarize(ctx: ExperimentContext, prefix: str, scores: dict[tuple[int, str], np.ndarray], n_boot: int,
              seed: int, premise: Callable[[int, np.ndarray], np.ndarray], bar: float, above: bool,
              better: float) -> list[int]:
    """Write, per setting n, "{prefix}{n}.{vanilla, momentum, vanilla_seeds, momentum_seeds, difference,
    difference_interval, premise, premise_interval}"; then "{prefix}.settings", "{prefix}.kept" (settings whose
    whole premise interval is above `bar`, or below it where not `above`), "{prefix}.premise" (the worst
    setting's premise),
    "{prefix}.difference" (better * (momentum - vanilla), mean over the kept settings: above 0 is momentum
    better) and "{prefix}.bootstrap" (replicates of the last two). premise(n, replicates of vanilla's mean)
    maps vanilla's score to the premise's measure (e.g. accuracy over chance); better is +1 where a higher
    score is better, -1 where lower is. Returns the kept settings."""
    settings = sorted({n for n, _ in scores})
    rng = np.random.default_rng(seed)
    boot_premise, boot_diff, kept = {}, {}, []
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
        if (p_lo > bar) if above else (p_hi < bar):
            kept.append(n)
    ctx.result(f"{prefix}.settings", settings)
    ctx.result(f"{prefix}.kept", kept)
    worst = np.min if above else np.max  # the premise's worse direction
    ctx.result(f"{prefix}.premise", float(worst([ctx.results[f"{prefix}{n}.premise"] for n in settings])))
    boot = {f"{prefix}.premise": worst(np.stack([boot_premise[n] for n in settings]), axis=0)}
    if kept:
        ctx.result(f"{prefix}.difference", float(np.mean([ctx.results[f"{prefix}{n}.difference"] for n in kept])))
        boot[f"{prefix}.difference"] = np.mean([boot_diff[n] for n in kept], axis=0)
    ctx.result(f"{prefix}.bootstrap", {k: [round(float(x), 6) for x in v] for k, v in boot.items()})
    return kept
