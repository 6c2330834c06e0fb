"""PNG plots that compare labelled runs (ablation arms, or seed vs best): per-period curves and the failure split.

They follow the conventions of ``memevo.environments.plots`` (integer period ticks, titles, units,
reference lines, legend outside the data, unclipped y-axis) and write into the folder they are given.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt

from memevo.environments.plots import (
    fit_y,
    integer_x,
    legend_outside,
    reference_line,
    save_figure,
)
from memevo.evolve.stats import Interval

FAILURE_PARTS = (("write", "#d62728"), ("read", "#ff7f0e"), ("utilization", "#1f77b4"))
NOTE_WIDTH = 24
"""Characters per line of a bar's note (a reason may be a long phrase; bars are ~1.4 inches apart)."""
BAND_ALPHA = 0.12
"""Light enough that two overlapping 95% bands still show the mean lines through them."""


def plot_period_curves(curves: Mapping[str, Sequence[Interval]], folder: Path, filename: str, *,
                       ylabel: str, title: str, memory_score: bool) -> Path:
    """One line per label over periods with its confidence band where defined; for memory scores, the
    random (0) and upper-bound (1) references."""
    figure, axis = plt.subplots(figsize=(8, 4))
    shown: list[float | None] = []
    for index, (label, curve) in enumerate(curves.items()):
        points = [(period, ci) for period, ci in enumerate(curve) if ci.mean is not None]
        if not points:
            continue
        color = f"C{index}"
        means = [ci.mean for _, ci in points if ci.mean is not None]
        axis.plot([p for p, _ in points], means, marker="o", color=color, label=label)
        banded = [(p, ci.low, ci.high) for p, ci in points if ci.low is not None and ci.high is not None]
        if banded:
            lows, highs = [low for _, low, _ in banded], [high for _, _, high in banded]
            axis.fill_between([p for p, _, _ in banded], lows, highs, color=color, alpha=BAND_ALPHA, linewidth=0)
            shown += lows + highs
        shown += means
    if memory_score:
        reference_line(axis, 0.0, "random")
        reference_line(axis, 1.0, "upper bound")
    fit_y(axis, shown)
    axis.set(xlabel="period", ylabel=ylabel, title=title)
    integer_x(axis)
    axis.grid(alpha=0.3)
    legend_outside(axis)
    return save_figure(figure, folder, filename)


def plot_failure_split(split: Mapping[str, tuple[float | None, float | None, float | None]], folder: Path,
                       filename: str, *, title: str, notes: Mapping[str, str] | None = None) -> Path:
    """Stacked bars of write / read / utilization failure shares per label. A label without a split shows no bar
    but its entry in ``notes``: why there is none (undiagnosed, or too few readable probes), as the tables say
    it; without ``notes`` every missing split is taken as undiagnosed."""
    labels = list(split)
    figure, axis = plt.subplots(figsize=(max(5.0, 1.4 * len(labels) + 3.0), 4))
    bottoms = [0.0] * len(labels)
    for index, (name, color) in enumerate(FAILURE_PARTS):
        heights = [split[label][index] or 0.0 for label in labels]
        axis.bar(labels, heights, bottom=bottoms, label=f"{name} failure", color=color)
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    for x, (label, total) in enumerate(zip(labels, bottoms, strict=True)):
        diagnosed = any(value is not None for value in split[label])
        text = f"{total:.3f}" if diagnosed else (notes or {}).get(label, "no diagnosis")
        axis.annotate(textwrap.fill(text, NOTE_WIDTH), (x, total), ha="center", va="bottom", xytext=(0, 2),
                      textcoords="offset points", fontsize="medium" if diagnosed else "small")
    if not any(value is not None for values in split.values() for value in values):
        empty = "no diagnosis in these runs\n(set episode.diagnose: true)"
        axis.text(0.5, 0.5, "no failure split in these runs" if notes else empty, ha="center", transform=axis.transAxes)
    fit_y(axis, bottoms, high=1.15 * max(bottoms, default=0.0) or 1.0)  # room for the totals above the bars
    axis.set(ylabel="failed questions (share of all questions)", title=title)
    axis.grid(alpha=0.3, axis="y")
    legend_outside(axis)
    return save_figure(figure, folder, filename)
