"""PNG plots of per-period curves and the write/read/utilization failure split (matplotlib, Agg backend)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

from memevo.evolve.stats import Interval  # noqa: E402


def plot_period_curves(curves: Mapping[str, Sequence[Interval]], path: Path, *, ylabel: str, title: str) -> Path:
    """One line per label over periods, with its confidence band where the interval is defined."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, curve in curves.items():
        points = [(p, ci) for p, ci in enumerate(curve) if ci.mean is not None]
        if not points:
            continue
        xs = [p for p, _ in points]
        ax.plot(xs, [ci.mean for _, ci in points], marker="o", label=label)
        banded = [(p, ci) for p, ci in points if ci.low is not None and ci.high is not None]
        if banded:
            ax.fill_between([p for p, _ in banded], [ci.low for _, ci in banded], [ci.high for _, ci in banded], alpha=0.2)
    ax.set_xlabel("period")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if curves:
        ax.legend()
    return _save(fig, path)


def plot_failure_split(split: Mapping[str, tuple[float | None, float | None, float | None]], path: Path, *, title: str) -> Path:
    """Stacked bars of write / read / utilization failure rates per label; labels without a diagnosis show no bar."""
    fig, ax = plt.subplots(figsize=(max(4, 1.6 * len(split) + 2), 4))
    labels = list(split)
    bottoms = [0.0] * len(labels)
    for index, (name, color) in enumerate((("write", "#d62728"), ("read", "#ff7f0e"), ("utilization", "#1f77b4"))):
        heights = [split[label][index] or 0.0 for label in labels]
        ax.bar(labels, heights, bottom=bottoms, label=name, color=color)
        bottoms = [b + h for b, h in zip(bottoms, heights)]
    if not any(value is not None for values in split.values() for value in values):
        ax.text(0.5, 0.5, "no diagnosis in these runs\n(set episode.diagnose: true)", ha="center", transform=ax.transAxes)
    ax.set_ylabel("failure rate (share of questions)")
    ax.set_title(title)
    ax.legend()
    return _save(fig, path)


def _save(fig: plt.Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
