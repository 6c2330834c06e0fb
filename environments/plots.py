"""Plots of a run's scores (matplotlib, Agg backend) and the conventions every memevo plot follows.

Periods and generations are counted, so their axes have integer ticks; every plot has a title and
axis labels with units; the random baseline and the upper bound appear as reference lines where the
score is measured against them; legends sit outside the data; the y-axis always shows the whole data
(a score below random guessing is negative, so it is not cut at 0). Each function writes its PNG into
a folder given by the caller (the run folder) and returns the path.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from memevo.environments.metrics import Scores

PERIODS_PLOT = "periods.png"
REFERENCE_STYLE = {"random": ("grey", ":"), "upper bound": ("black", "--")}


def integer_x(axis: Axes) -> None:
    """Whole-number ticks on the x-axis (periods, generations)."""
    axis.xaxis.set_major_locator(MaxNLocator(integer=True))


def fit_y(axis: Axes, values: Iterable[float | None], *, low: float = 0.0, high: float = 1.0) -> None:
    """A y-range that holds ``[low, high]`` and every value, with a small margin, so nothing is clipped."""
    present = [value for value in values if value is not None]
    bottom, top = min([low, *present]), max([high, *present])
    margin = 0.05 * (top - bottom or 1.0)
    axis.set_ylim(bottom - margin, top + margin)


def reference_line(axis: Axes, y: float, name: str, label: str | None = None) -> None:
    """A horizontal reference ("random" or "upper bound") labelled in the legend (``label`` refines the name)."""
    color, style = REFERENCE_STYLE[name]
    axis.axhline(y, color=color, linestyle=style, linewidth=1, label=label or name)


def legend_outside(axis: Axes) -> None:
    """The legend to the right of the axes, where it cannot hide a line or a bar."""
    if axis.get_legend_handles_labels()[0]:
        axis.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False)


def save_figure(figure: Figure, folder: Path, filename: str) -> Path:
    """Write ``figure`` as ``folder/filename`` (the folder is created) and release it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / filename
    figure.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(figure)
    return path


def plot_periods(scores: Scores, folder: Path, *, title: str = "", filename: str = PERIODS_PLOT) -> Path:
    """Accuracy per period against the random baseline and the upper bound, and the memory score per period."""
    periods = [p.period for p in scores.per_period]
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    accuracy = [p.accuracy for p in scores.per_period]
    left.plot(periods, accuracy, marker="o", label="accuracy")
    left.plot(periods, [p.random_baseline for p in scores.per_period], color="grey", linestyle=":", label="random")
    if scores.upper_bound is not None:
        bounds = [p.upper_bound for p in scores.per_period]
        left.plot(periods, bounds, color="black", linestyle="--", label="upper bound")
    left.set(xlabel="period", ylabel="accuracy (share of questions right)", title="Accuracy per period")
    fit_y(left, accuracy)
    memory = [(p.period, p.memory_score) for p in scores.per_period if p.memory_score is not None]
    if memory:
        right.plot([m[0] for m in memory], [m[1] for m in memory], marker="o", color="tab:green", label="memory score")
        reference_line(right, 0.0, "random")
        reference_line(right, 1.0, "upper bound")
        fit_y(right, [m[1] for m in memory])
        right.set(ylabel="memory score (0 = random, 1 = upper bound)")
    else:
        right.text(0.5, 0.5, "no upper bound computed\n(run with --upper-bound)", ha="center", va="center",
                   transform=right.transAxes)
        right.set(yticks=[])
    right.set(xlabel="period", title="Memory score per period")
    for axis in (left, right):
        integer_x(axis)
        axis.grid(alpha=0.3)
        legend_outside(axis)
    figure.suptitle(title or "Scores per period")
    figure.tight_layout()
    return save_figure(figure, folder, filename)
