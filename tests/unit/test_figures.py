"""The figure style (issue 62): bands inside the measure's range, per-seed lines where seeds split, figures no
wider than a page, plain tick labels on log axes."""

from __future__ import annotations

import numpy as np

from icgd.results.figures import MAX_WIDTH, band, finish, label_axes, splits, subplots


def test_the_band_is_the_seeds_range_and_stays_inside_the_measure():
    """Mean +- std of cosines near 1 went above 1 (the issue's 1.1); the seeds' range cannot."""
    fig, (ax,) = subplots(1)
    ys = np.array([[0.2, 1.0, 1.0], [0.25, 0.99, 1.0], [0.3, 1.0, 1.0], [0.2, 0.98, 1.0], [0.21, 1.0, 1.0]])
    band(ax, [0, 1, 2], ys, "cosine", "C0", per_seed=False)
    top = max(float(np.max(p.get_paths()[0].vertices[:, 1])) for p in ax.collections)
    assert (ys.mean(0) + ys.std(0)).max() > 1.0  # the band before (mean +- std) leaves the measure's range
    assert top <= 1.0


def test_a_seed_left_on_its_plateau_gets_per_seed_lines():
    together = np.array([[1.0, 0.1, 0.1], [1.0, 0.12, 0.1], [1.0, 0.11, 0.1]])
    one_late = np.array([[1.0, 0.1, 0.1], [1.0, 0.12, 0.1], [1.0, 0.95, 0.1]])  # a plateau, then it too leaves
    assert not splits(together) and splits(one_late)
    fig, (ax,) = subplots(1)
    band(ax, [0, 1, 2], one_late, "loss", "C0")
    assert len(ax.lines) == 1 + 3 and not ax.collections  # the median and each seed, no band


def test_figures_fit_a_page_and_wrap_their_panels():
    fig, axes = subplots(4)
    assert len(axes) == 4 and fig.get_size_inches()[0] <= MAX_WIDTH + 1e-9
    fig, axes = subplots(2, width=10.0, height=3.6)  # a caller's wide panels are capped
    assert fig.get_size_inches()[0] <= MAX_WIDTH + 1e-9


def test_log_axes_get_plain_tick_labels():
    fig, (ax,) = subplots(1)
    ax.plot([0, 1], [0.2, 0.9])
    ax.set_yscale("log")
    finish(fig)
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels(minor=True) + ax.get_yticklabels()]
    shown = [t for t in labels if t]
    assert shown and not any("times" in t or "10^" in t or "\\mathdefault" in t for t in shown), shown
    assert {"0.2", "0.3", "0.5"} <= set(shown), shown


def test_a_log_axis_within_a_factor_of_three_shows_several_numbers():
    """0.06 to 0.15 holds one tick among 1, 2, 3, 5 times a power of ten (0.1): every tick is labelled there."""
    fig, (ax,) = subplots(1)
    ax.plot([0, 1], [0.06, 0.15])
    ax.set_yscale("log")
    finish(fig)
    fig.canvas.draw()
    lo, hi = ax.get_ylim()
    shown = {float(t.get_text()) for t in ax.get_yticklabels(minor=True) + ax.get_yticklabels()
             if t.get_text() and lo <= float(t.get_text()) <= hi}
    assert len(shown) >= 3, shown


def test_a_log_axis_from_half_to_two_labels_its_upper_part():
    """0.55 to 1.9: the integer multiples of a power of ten leave 1 to 1.9 without a tick; 1.5 is labelled."""
    fig, (ax,) = subplots(1)
    ax.plot([0, 1], [0.55, 1.9])
    ax.set_yscale("log")
    ax.set_ylim(0.55, 1.9)
    finish(fig)
    fig.canvas.draw()
    lo, hi = ax.get_ylim()
    shown = {float(t.get_text()) for t in ax.get_yticklabels(minor=True) + ax.get_yticklabels()
             if t.get_text() and lo <= float(t.get_text()) <= hi}
    assert any(v > 1 for v in shown) and len(shown) >= 3, shown


def test_one_legend_for_panels_that_draw_the_same_curves_lies_under_them():
    """Long labels in a legend inside a small panel covered the curves and squeezed the panel (oswald-deep's
    figure). legend="figure": one legend under every panel, each curve named once, none inside a panel."""
    fig, axes = subplots(3, width=2.4, height=2.3)
    x, ys = [0, 1, 2], np.array([[1.0, 0.5, 0.2], [1.0, 0.6, 0.3]])
    for ax in axes:
        for i in range(3):
            band(ax, x, ys * (i + 1), f"a model with a long name, number {i}", f"C{i}", per_seed=True)
    axes[0].axhline(0.5, color="C3", linestyle="--", label="GD")
    label_axes(axes, ("a", "b", "c"), ("loss", "loss", "loss"), legend="figure", ncol=3)
    fig.canvas.draw()
    assert all(ax.get_legend() is None for ax in axes) and len(fig.legends) == 1
    names = [t.get_text() for t in fig.legends[0].get_texts()]
    assert len(names) == len(set(names)) == 4 and "GD" in names
    legend_top = fig.legends[0].get_window_extent().y1
    renderer = fig.canvas.get_renderer()
    assert all(ax.get_tightbbox(renderer).y0 >= legend_top for ax in axes)  # under every panel and its labels


def test_a_legend_placement_it_does_not_know_is_refused():
    import pytest

    fig, axes = subplots(2)
    with pytest.raises(ValueError, match="legend is True, False or 'figure'"):
        label_axes(axes, ("a", "b"), ("y", "y"), legend="below")
