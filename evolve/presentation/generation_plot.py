"""The score-per-generation plot of an evolution, written into the run folder (and logged to MLflow from there)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt

from memevo.environments.plots import fit_y, integer_x, legend_outside, reference_line, save_figure
from memevo.evolve.tracking.payloads import GenerationPoint

SCORE_PLOT = "score_per_generation.png"


def plot_score_per_generation(points: Sequence[GenerationPoint], folder: Path, *, title: str,
                              objective: str = "accuracy", random_baseline: float | None = None,
                              upper_bound: float | None = None, reference_users: str = "",
                              filename: str = SCORE_PLOT) -> Path:
    """The kept candidate's validation score (the running best) as a step line, each generation's best
    train and validation scores as markers, and the accuracy of random guessing and of the upper bound
    (measured on ``reference_users``, named in the legend, when they are not the validation users).

    The scores are the run's ``objective``; for the memory score the two references are 0 and 1 by
    its definition, on every split, so the accuracy references given are not used."""
    if objective != "accuracy":
        random_baseline, upper_bound, reference_users = 0.0, 1.0, ""
    figure, axis = plt.subplots(figsize=(8, 4))
    generations = [p.generation for p in points]
    kept = [p.kept_val for p in points]
    axis.step(generations, kept, where="post", color="C0", linewidth=2, label="kept (running best, validation)")
    val = [(p.generation, p.best_val) for p in points if p.best_val is not None]
    train = [(p.generation, p.best_train) for p in points if p.best_train is not None]
    axis.plot([g for g, _ in val], [v for _, v in val], "o", color="C1", label="generation best (validation)")
    axis.plot([g for g, _ in train], [v for _, v in train], "^", color="C2", fillstyle="none",
              label="generation best (train)")
    where = f" ({reference_users})" if reference_users else ""
    if random_baseline is not None:
        reference_line(axis, random_baseline, "random", f"random{where}")
    if upper_bound is not None:
        reference_line(axis, upper_bound, "upper bound", f"upper bound{where}")
    fit_y(axis, [*kept, *(v for _, v in val), *(v for _, v in train)])
    ylabel = "AMemGym memory score (0 = random, 1 = upper bound)" if objective != "accuracy" else \
        "accuracy (share of questions right)"
    axis.set(xlabel="generation (0 = seed)", ylabel=ylabel, title=title)
    integer_x(axis)
    axis.grid(alpha=0.3)
    legend_outside(axis)
    return save_figure(figure, folder, filename)
