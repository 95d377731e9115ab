"""Figure helpers: one style for every experiment's figures, fit for a paper. Matplotlib is imported lazily.

- A figure is at most `MAX_WIDTH` inches wide (a two-column page's text width): more panels than fit in a row
  wrap onto further rows, so that the labels stay readable at column width.
- Curves over seeds are the median with the seeds' range as a band (the range of the data, so it never leaves
  the measure's range, as mean +- std would: a cosine above 1, a distance below 0), and every seed drawn as a
  thin line where the seeds split (one still on its plateau, which a median or mean would hide).
- Tick labels are plain numbers (0.2, 0.4), not 4x10^-1 (`finish`, called on every figure an experiment saves).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

COLORS = {"tf": "#1f77b4", "gd": "#d62728", "gdpp": "#2ca02c", "interp": "#9467bd", "other": "#ff7f0e"}

#: the same roles in a second setting drawn beside the first (e.g. another input range): distinct hues, not
#: the first setting's colours with another line style only
COLORS_2 = {"tf": "#ff7f0e", "gd": "#8c564b", "gdpp": "#17becf", "interp": "#e377c2", "other": "#7f7f7f"}

#: the widest figure, in inches: the text width of a two-column paper page
MAX_WIDTH = 7.2

#: a seed "splits" from the others when, at some point, it is further from the seeds' median than this
#: fraction of the median curve's range (`splits`): one left on a plateau longer than the rest
SPLIT_FRACTION = 0.25


def subplots(n: int = 1, width: float = 3.4, height: float = 2.6, **kw):
    """(fig, list of n axes) with the package style, on the non-interactive Agg backend. Panels are `width` x
    `height` inches (width at most MAX_WIDTH), as many to a row as fit in MAX_WIDTH; the rest wrap."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 8, "axes.titlesize": 9, "axes.labelsize": 8, "legend.fontsize": 7,
                         "axes.spines.top": False, "axes.spines.right": False, "legend.frameon": True,
                         "legend.framealpha": 0.85, "legend.edgecolor": "none"})
    width = min(width, MAX_WIDTH)
    ncols = max(1, min(n, math.floor(MAX_WIDTH / width + 1e-9)))
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False,
                             layout="constrained", **kw)
    flat = [ax for row in axes for ax in row]
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def grid(nrows: int, ncols: int, width: float = 2.4, height: float = 2.3):
    """(fig, axes list in row-major order) of an nrows x ncols grid, each panel width x height inches (narrower,
    in proportion, where the row would be wider than MAX_WIDTH)."""
    fig, first = subplots(1, width, height)
    import matplotlib.pyplot as plt

    plt.close(fig)
    if width * ncols > MAX_WIDTH:
        width, height = MAX_WIDTH / ncols, height * MAX_WIDTH / (width * ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False,
                             layout="constrained")
    return fig, [ax for row in axes for ax in row]


def splits(ys: np.ndarray) -> bool:
    """Whether the seeds (rows of `ys`, seeds x points) go apart: at some point a seed is further from the
    median than SPLIT_FRACTION of the median curve's range (a seed left on a plateau the others left)."""
    ys = np.asarray(ys, dtype=float)
    if ys.ndim == 1 or ys.shape[0] < 2:
        return False
    med = np.nanmedian(ys, 0)
    scale = float(np.nanmax(med) - np.nanmin(med))
    return bool(scale > 0 and np.nanmax(np.abs(ys - med)) > SPLIT_FRACTION * scale)


def band(ax, x: Sequence[float], ys: np.ndarray | Sequence[Sequence[float]], label: str, color: str | None,
         per_seed: bool | None = None, note: bool = True, **kw) -> None:
    """The median over the first axis of `ys` (seeds x points) with the seeds' range (min to max) as a band,
    which stays inside the measure's range (color None: the next one).

    per_seed: draw every seed as a thin line instead of the band; None (the default) does so where the seeds
    split (`splits`), where a median and a band would hide what happens.
    note: end the label with what is drawn ("(median of 5 seeds; band: range)"); False where a panel with many
    curves says it once (its title), so that the legend stays short."""
    ys = np.asarray(ys, dtype=float)
    if ys.ndim == 1:
        ys = ys[None]
    n = ys.shape[0]
    lines = splits(ys) if per_seed is None else per_seed
    med = np.nanmedian(ys, 0)
    what = "" if n == 1 or not note else f" (median of {n} seeds{'; thin: each seed' if lines else '; band: range'})"
    (line,) = ax.plot(x, med, color=color, label=label + what, **kw)
    if n > 1 and lines:
        for y in ys:
            ax.plot(x, y, color=line.get_color(), alpha=0.45, linewidth=0.7, linestyle=kw.get("linestyle", "-"))
    elif n > 1:
        ax.fill_between(x, np.nanmin(ys, 0), np.nanmax(ys, 0), color=line.get_color(), alpha=0.18, linewidth=0)


def finish(fig) -> None:
    """Plain tick labels on every log axis of `fig` (0.2, 0.4, not 2x10^-1): minor ticks labelled too (2, 3 and 5
    times a power of ten) where the axis spans less than two decades, so that such an axis shows numbers."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    plain = FuncFormatter(lambda v, _: f"{v:g}")
    # minor ticks of a narrow log axis: label 2, 3 and 5 times a power of ten only (all nine crowd the axis)
    sparse = FuncFormatter(lambda v, _: f"{v:g}" if v > 0 and f"{v:.0e}"[0] in "235" else "")
    for ax in fig.axes:
        for axis, scale, lim in ((ax.yaxis, ax.get_yscale(), ax.get_ylim()), (ax.xaxis, ax.get_xscale(), ax.get_xlim())):
            if scale != "log":
                continue
            lo, hi = sorted(lim)
            axis.set_major_formatter(plain)
            narrow = lo > 0 and math.log10(hi / lo) < 2.0
            # within a factor of a few (0.06 to 0.15) the 2-3-5 ticks leave one label or none: label every tick
            few = narrow and _labelled_ticks(lo, hi, "1235") < 3
            axis.set_minor_formatter(plain if few else sparse if narrow else NullFormatter())
            if few:
                # between 0.55 and 1.9 the integer multiples leave 1 to 1.9 without a tick: add 1.5 and 2.5
                # times a power of ten (the axis' top would be unlabelled)
                axis.set_minor_locator(LogLocator(base=10, subs=(1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9)))


def _labelled_ticks(lo: float, hi: float, leading: str) -> int:
    """How many of the values k x 10^e with k in `leading` (digits) lie in [lo, hi] (lo > 0)."""
    count = 0
    for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        count += sum(lo <= int(k) * 10.0 ** e <= hi for k in leading)
    return count


def legend_below(ax, ncol: int = 1, handles: tuple[list, list[str]] | None = None) -> None:
    """The legend under the axes, outside the data (for a panel whose curves leave no free corner); handles:
    (handles, labels) where they are not `ax`'s own (a twin axis's as well)."""
    from matplotlib.transforms import offset_copy

    # a fixed distance under the axes, below the tick labels and the x label whatever the panel's height (a
    # fraction of the axes' height put it over the x label of a short panel)
    below = offset_copy(ax.transAxes, fig=ax.figure, y=-30, units="points")
    ax.legend(*(handles or ()), loc="upper center", bbox_to_anchor=(0.5, 0.0), bbox_transform=below, ncol=ncol,
              fontsize=7, frameon=False)


def heatmap(ax, m: np.ndarray, title: str, vmax: float | None = None) -> None:
    vmax = float(np.abs(m).max()) if vmax is None else vmax
    im = ax.imshow(m, cmap="RdBu_r", vmin=-vmax, vmax=vmax)
    ax.set_title(title)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_anchor("E")  # a square image in a wider panel sits beside its colorbar, not in the middle
    ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)


def label_axes(axes, titles: Sequence[str], ylabels: Sequence[str], xlabel: str = "training step",
               legend: bool | str = True, ncol: int = 2) -> None:
    """Title, axis labels and legend for each axis in turn. legend "figure": one legend for all the panels,
    under them (`legend_under`, ncol columns), for panels that draw the same curves."""
    if legend not in (True, False, "figure"):
        raise ValueError(f"legend is True, False or 'figure', not {legend!r}")
    for ax, title, ylabel in zip(axes, titles, ylabels):
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if legend is True:
            ax.legend(fontsize=7)
    if legend == "figure":
        legend_under(axes, ncol)


def legend_under(axes, ncol: int = 2) -> None:
    """One legend for the figure of `axes`, under its panels and outside the data: every entry of every panel
    once (by its label; panels that draw the same curve give it the same label, colour and style). A legend
    inside a small panel with long labels covers the curves and, under the constrained layout, squeezes the
    panel (oswald-deep's, oswald-fixed-data's and oswald-softmax's figures did both)."""
    entries: dict[str, object] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    if entries:
        axes[0].figure.legend(list(entries.values()), list(entries), loc="outside lower center", ncol=ncol,
                              fontsize=7, frameon=False)
