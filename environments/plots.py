"""Plots of a run's scores (matplotlib, Agg backend) and the conventions every memevo plot follows.

Periods and generations are counted, so their axes have integer ticks; every plot has a title and
axis labels with units; the random baseline and the upper bound appear as reference lines where the
score is measured against them; legends sit outside the data; the y-axis always shows the whole data
(a score below random guessing is negative, so it is not cut at 0). Each function writes its PNG into
a folder given by the caller (the run folder) and returns the path.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from memevo.environments.metrics import Scores

PERIODS_PLOT = "periods.png"
SAVE_DPI = 120
REFERENCE_STYLE = {"random": ("grey", ":"), "upper bound": ("black", "--")}


def integer_x(axis: Axes) -> None:
    """Whole-number ticks on the x-axis (periods, generations)."""
    axis.xaxis.set_major_locator(MaxNLocator(integer=True))


def y_range(values: Iterable[float | None], *, low: float = 0.0, high: float = 1.0) -> tuple[float, float]:
    """A y-range that holds ``[low, high]`` and every value, with a small margin, so nothing is clipped."""
    present = [value for value in values if value is not None]
    bottom, top = min([low, *present]), max([high, *present])
    margin = 0.05 * (top - bottom or 1.0)
    return bottom - margin, top + margin


def fit_y(axis: Axes, values: Iterable[float | None], *, low: float = 0.0, high: float = 1.0) -> None:
    """Set the y-range of ``y_range`` on ``axis``."""
    axis.set_ylim(*y_range(values, low=low, high=high))


def reference_line(axis: Axes, y: float, name: str, label: str | None = None) -> None:
    """A horizontal reference ("random" or "upper bound") labelled in the legend (``label`` refines the name)."""
    color, style = REFERENCE_STYLE[name]
    axis.axhline(y, color=color, linestyle=style, linewidth=1, label=label or name)


def legend_outside(axis: Axes) -> None:
    """The legend to the right of the axes, where it cannot hide a line or a bar."""
    if axis.get_legend_handles_labels()[0]:
        axis.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False)


def save_figure(figure: Figure, folder: Path, filename: str) -> Path:
    """Write ``figure`` as ``folder/filename`` (the folder is created) and release it: the drawn content plus
    savefig's padding."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / filename
    figure.savefig(path, dpi=SAVE_DPI, bbox_inches="tight")
    plt.close(figure)
    return path


NO_UPPER_BOUND = "no upper bound computed\n(run with --upper-bound)"
NOT_MEASURED = ("n/a: the upper bound is not measurably\nabove random in any period\n(memory cannot be measured\n"
                "with this model on this data)")


@dataclass(frozen=True)
class PeriodsLayout:
    """All the per-period figure's layout depends on: which lines and panels it has and its axis ranges, not
    the values plotted. A figure built for a layout can be filled with any scores of that layout, so the plot
    process builds it from a guess while the run goes on and only fills and saves it at the end."""

    title: str
    periods: tuple[int, ...]
    accuracy_range: tuple[float, float]
    upper_bound: bool
    memory_periods: tuple[int, ...]
    """Periods with a (pooled) memory score; none: the right panel says why there is none."""
    memory_range: tuple[float, float]
    memory_missing: str = NO_UPPER_BOUND
    """Why the right panel is empty (the default, unused, when it has memory scores)."""

    @classmethod
    def of(cls, scores: Scores, title: str = "") -> PeriodsLayout:
        memory = [p for p in scores.per_period if p.pooled_memory_score is not None]
        return cls(title=title or "Scores per period", periods=tuple(p.period for p in scores.per_period),
                   accuracy_range=y_range(p.accuracy for p in scores.per_period),
                   upper_bound=scores.upper_bound is not None, memory_periods=tuple(p.period for p in memory),
                   memory_range=y_range(p.pooled_memory_score for p in memory),
                   memory_missing=NO_UPPER_BOUND if scores.upper_bound is None or memory else NOT_MEASURED)

    @classmethod
    def expected(cls, periods: int, upper_bound: bool, title: str = "") -> PeriodsLayout:
        """The likely layout before the scores exist: every period scored and, with an upper bound, a memory
        score in every period, every score within [0, 1]."""
        scored = tuple(range(periods))
        return cls(title=title or "Scores per period", periods=scored, accuracy_range=y_range([]),
                   upper_bound=upper_bound, memory_periods=scored if upper_bound else (), memory_range=y_range([]))


class PeriodsFigure:
    """Accuracy per period against the random baseline and the upper bound, and the memory score per period.

    Built from a layout with its lines at a placeholder value: the y-ranges are fixed by the layout, so the
    values change no tick, label or margin, and ``save`` only sets the values and writes the figure."""

    def __init__(self, layout: PeriodsLayout) -> None:
        self.layout = layout
        self.figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
        self._lines: dict[str, tuple[Line2D, Sequence[int]]] = {}
        self._line(left, "accuracy", layout.periods, marker="o")
        self._line(left, "random", layout.periods, color="grey", linestyle=":")
        if layout.upper_bound:
            self._line(left, "upper bound", layout.periods, color="black", linestyle="--")
        left.set(xlabel="period", ylabel="accuracy (share of questions right)", title="Accuracy per period")
        left.set_ylim(*layout.accuracy_range)
        if layout.memory_periods:
            self._line(right, "memory score", layout.memory_periods, marker="o", color="tab:green")
            reference_line(right, 0.0, "random")
            reference_line(right, 1.0, "upper bound")
            right.set_ylim(*layout.memory_range)
            right.set(ylabel="memory score (0 = random, 1 = upper bound)")
        else:
            right.text(0.5, 0.5, layout.memory_missing, ha="center", va="center", transform=right.transAxes)
            right.set(yticks=[])
        right.set(xlabel="period", title="Memory score per period (pooled)")
        for axis in (left, right):
            integer_x(axis)
            axis.grid(alpha=0.3)
            legend_outside(axis)
        self.figure.suptitle(layout.title)
        self.figure.tight_layout()

    def save(self, scores: Scores, folder: Path, filename: str = PERIODS_PLOT) -> Path:
        """Plot ``scores`` (of this figure's layout) and write the PNG."""
        if PeriodsLayout.of(scores, self.layout.title) != self.layout:
            raise ValueError("the scores do not fit this figure's layout")
        per_period = {p.period: p for p in scores.per_period}
        values = {"accuracy": lambda p: p.accuracy, "random": lambda p: p.random_baseline,
                  "upper bound": lambda p: p.upper_bound, "memory score": lambda p: p.pooled_memory_score}
        for name, (line, periods) in self._lines.items():
            line.set_ydata([values[name](per_period[period]) for period in periods])
        return save_figure(self.figure, folder, filename)

    def _line(self, axis: Axes, name: str, periods: Sequence[int], **style: Any) -> None:
        low, high = axis.get_ylim()
        line, = axis.plot(periods, [(low + high) / 2] * len(periods), label=name, **style)
        self._lines[name] = line, periods


def plot_periods(scores: Scores, folder: Path, *, title: str = "", filename: str = PERIODS_PLOT) -> Path:
    """The per-period figure of ``scores`` (see ``PeriodsFigure``), written as ``folder/filename``."""
    return PeriodsFigure(PeriodsLayout.of(scores, title)).save(scores, folder, filename)
