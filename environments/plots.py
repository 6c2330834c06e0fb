"""Per-period plot of a run: accuracy (with random baseline and upper bound) and memory score."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen before pyplot loads)

from memevo.environments.metrics import Scores  # noqa: E402


def plot_periods(scores: Scores, path: Path, title: str = "") -> Path:
    """Write a PNG with accuracy and (when an upper bound was computed) memory score per period."""
    periods = [p.period for p in scores.per_period]
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.plot(periods, [p.accuracy for p in scores.per_period], marker="o", label="accuracy")
    left.plot(periods, [p.random_baseline for p in scores.per_period], linestyle=":", label="random")
    if scores.upper_bound is not None:
        left.plot(periods, [p.upper_bound for p in scores.per_period], linestyle="--", label="upper bound")
    left.set(xlabel="period", ylabel="accuracy", ylim=(0, 1.05), title="Overall accuracy")
    left.legend()
    memory = [(p.period, p.memory_score) for p in scores.per_period if p.memory_score is not None]
    if memory:
        right.plot([m[0] for m in memory], [m[1] for m in memory], marker="o", color="tab:green")
        right.axhline(0.0, color="grey", linewidth=0.8)
        right.set(title="Memory score")
    else:
        right.text(0.5, 0.5, "no upper bound computed\n(run with --upper-bound)", ha="center", va="center")
        right.set(title="Memory score", xticks=[], yticks=[])
    right.set(xlabel="period")
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
