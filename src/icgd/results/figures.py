"""Figure helpers: one style, mean +- std bands over seeds, labelled axes. Matplotlib is imported lazily."""

from __future__ import annotations

from typing import Sequence

import numpy as np

COLORS = {"tf": "#1f77b4", "gd": "#d62728", "gdpp": "#2ca02c", "interp": "#9467bd", "other": "#ff7f0e"}


def subplots(n: int = 1, width: float = 4.2, height: float = 3.2, **kw):
    """(fig, axes list) with the package style, on the non-interactive Agg backend."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 9, "axes.titlesize": 10, "axes.spines.top": False,
                         "axes.spines.right": False, "legend.frameon": False})
    fig, axes = plt.subplots(1, n, figsize=(width * n, height), squeeze=False, layout="constrained", **kw)
    return fig, list(axes[0])


def grid(nrows: int, ncols: int, width: float = 2.4, height: float = 2.3):
    """(fig, axes list in row-major order) of an nrows x ncols grid, each panel width x height inches."""
    fig, first = subplots(1, width, height)
    import matplotlib.pyplot as plt

    plt.close(fig)
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False,
                             layout="constrained")
    return fig, [ax for row in axes for ax in row]


def band(ax, x: Sequence[float], ys: np.ndarray | Sequence[Sequence[float]], label: str, color: str | None,
         per_seed: bool = False, **kw) -> None:
    """Mean over the first axis of `ys` (seeds x points) with a +- std band (color None: the next one).

    per_seed: draw every seed as a thin line instead of the band (for seeds that train very differently,
    e.g. one still on its plateau, where mean +- std would hide what happens)."""
    ys = np.asarray(ys, dtype=float)
    if ys.ndim == 1:
        ys = ys[None]
    m, s = ys.mean(0), ys.std(0)
    (line,) = ax.plot(x, m, color=color, label=label + (f" (mean of {ys.shape[0]} seeds)" if ys.shape[0] > 1 else ""),
                      **kw)
    if ys.shape[0] > 1 and per_seed:
        for y in ys:
            ax.plot(x, y, color=line.get_color(), alpha=0.35, linewidth=0.7)
    elif ys.shape[0] > 1:
        ax.fill_between(x, m - s, m + s, color=line.get_color(), alpha=0.2, linewidth=0)


def heatmap(ax, m: np.ndarray, title: str, vmax: float | None = None) -> None:
    vmax = float(np.abs(m).max()) if vmax is None else vmax
    im = ax.imshow(m, cmap="RdBu_r", vmin=-vmax, vmax=vmax)
    ax.set_title(title)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)


def label_axes(axes, titles: Sequence[str], ylabels: Sequence[str], xlabel: str = "training step",
               legend: bool = True) -> None:
    """Title, axis labels and legend for each axis in turn."""
    for ax, title, ylabel in zip(axes, titles, ylabels):
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if legend:
            ax.legend(fontsize=7)
