"""Plots of a run's scores (matplotlib, Agg backend) and the conventions every memevo plot follows.

Periods and generations are counted, so their axes have integer ticks; every plot has a title and
axis labels with units; the random baseline and the upper bound appear as reference lines where the
score is measured against them; legends sit outside the data; the y-axis always shows the whole data
(a score below random guessing is negative, so it is not cut at 0). Each function writes its PNG into
a folder given by the caller (the run folder) and returns the path.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import Affine2D, Bbox

from memevo.environments.metrics import Scores
from memevo.environments.png import write_png

PERIODS_PLOT = "periods.png"
SAVE_DPI = 120
SOFTWARE = f"Matplotlib version{matplotlib.__version__}, https://matplotlib.org/"
"""What savefig writes in its PNGs' Software field."""
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


def save_figure(figure: Figure, folder: Path, filename: str, *, bbox: Bbox | str = "tight") -> Path:
    """Write ``figure`` as ``folder/filename`` (the folder is created) and release it; ``bbox`` is the area
    saved (by default the drawn content plus savefig's padding, found by laying the figure out once more)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / filename
    figure.savefig(path, dpi=SAVE_DPI, bbox_inches=bbox)
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
    values change no tick, label or margin. Everything but the lines is therefore drawn here, before the scores
    are known, at the saved resolution and kept as a background; ``save`` sets the values, puts the background
    back, draws only the lines (and the frames drawn over them) and writes the saved area (what savefig's
    "tight" box would save, widened to whole pixels) as the PNG: the same pixels savefig writes for that area,
    in a fraction of its time. A figure whose content reaches beyond its canvas (a very long title) is saved by
    savefig instead."""

    def __init__(self, layout: PeriodsLayout) -> None:
        self.layout = layout
        self.figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
        self._lines: dict[str, Line2D] = {}
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
        self.figure.set_layout_engine(None)  # laid out once: savefig need not draw it again to run a layout engine
        self.figure.dpi = SAVE_DPI  # laid out as shown, drawn as saved (what savefig does)
        content = self._content()
        x0, y0, x1, y1 = content.padded(plt.rcParams["savefig.pad_inches"] * SAVE_DPI).extents
        self._area = (math.floor(x0), math.floor(y0), math.ceil(x1), math.ceil(y1))
        """What savefig(bbox_inches="tight") saves, in pixels from the bottom left, widened to whole pixels."""
        self._redrawn = self._drawn_over_background()
        canvas = self.figure.bbox
        fits = canvas.contains(*content.p0) and canvas.contains(*content.p1)
        self._background = self._drawn_background() if fits else None
        """None when the content reaches beyond the canvas (a very long title): only savefig can draw that."""

    def save(self, scores: Scores, folder: Path, filename: str = PERIODS_PLOT) -> Path:
        """Plot ``scores`` (of this figure's layout) and write the PNG."""
        if PeriodsLayout.of(scores, self.layout.title) != self.layout:
            raise ValueError("the scores do not fit this figure's layout")
        per_period = {p.period: p for p in scores.per_period}
        values = {"accuracy": lambda p: p.accuracy, "random": lambda p: p.random_baseline,
                  "upper bound": lambda p: p.upper_bound, "memory score": lambda p: p.pooled_memory_score}
        for name, line in self._lines.items():
            line.set_ydata([values[name](per_period[period]) for period in line.get_xdata()])
        if self._background is None:
            return save_figure(self.figure, folder, filename, bbox=self.saved_area)
        canvas = np.asarray(self.figure.canvas.buffer_rgba())
        np.copyto(canvas, self._background)
        for artist in self._redrawn:
            self.figure.draw_artist(artist)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / filename
        write_png(path, self._cut(canvas), dpi=SAVE_DPI, software=SOFTWARE)
        plt.close(self.figure)
        return path

    @property
    def saved_area(self) -> Bbox:
        """The area of the figure ``save`` writes, in inches (savefig's ``bbox_inches``)."""
        return Bbox.from_extents(*self._area).transformed(Affine2D().scale(1 / SAVE_DPI))

    def _line(self, axis: Axes, name: str, periods: Sequence[int], **style: Any) -> None:
        low, high = axis.get_ylim()
        self._lines[name], = axis.plot(periods, [(low + high) / 2] * len(periods), label=name, **style)

    def _content(self) -> Bbox:
        """The box of everything drawn (savefig's "tight" box before its padding), in pixels."""
        self.figure.draw_without_rendering()
        return self.figure.get_tightbbox(self.figure.canvas.get_renderer()).transformed(self.figure.dpi_scale_trans)

    def _drawn_over_background(self) -> list[Artist]:
        """The artists ``save`` draws, in the order a full draw would: each axes' lines and its frame (spines),
        which is drawn over them; every other artist lies below the lines or outside the axes they are clipped to."""
        return [artist for axis in self.figure.axes
                for artist in sorted([*axis.lines, *axis.spines.values()], key=lambda artist: artist.get_zorder())]

    def _drawn_background(self) -> np.ndarray:
        """The canvas's pixels, drawn without the artists ``save`` draws."""
        for artist in self._redrawn:
            artist.set_animated(True)  # left out of the canvas's draws (not of savefig's)
        self.figure.canvas.draw()
        return np.array(self.figure.canvas.buffer_rgba())

    def _cut(self, canvas: np.ndarray) -> np.ndarray:
        """The saved area of the drawn ``canvas``; where its padding reaches past the canvas, the figure's face
        colour, as savefig paints it there."""
        x0, y0, x1, y1 = self._area
        face = np.round(np.multiply(to_rgba(self.figure.get_facecolor()), 255)).astype(np.uint8)
        saved = np.tile(face, (y1 - y0, x1 - x0, 1))
        height, width = canvas.shape[:2]  # its rows run from the top, the figure's y from the bottom
        left, bottom, right, top = max(x0, 0), max(y0, 0), min(x1, width), min(y1, height)
        saved[y1 - top:y1 - bottom, left - x0:right - x0] = canvas[height - top:height - bottom, left:right]
        return saved


def plot_periods(scores: Scores, folder: Path, *, title: str = "", filename: str = PERIODS_PLOT) -> Path:
    """The per-period figure of ``scores`` (see ``PeriodsFigure``), written as ``folder/filename``."""
    return PeriodsFigure(PeriodsLayout.of(scores, title)).save(scores, folder, filename)
