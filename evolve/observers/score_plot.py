"""The score-per-generation plot, drawn into the run folder when the run ends (a tracker logs it from there)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from memevo.environments.plot_process import already_drawn, mark_drawn
from memevo.evolve.events import Event, Observer, RunContext, RunEnded
from memevo.evolve.tracking.payloads import SCORE_PLOT_FILE, generation_points


class ScorePlotObserver(Observer):
    def __init__(self, name: str, run_dir: Path) -> None:
        self.name = name
        self.figure = run_dir / SCORE_PLOT_FILE

    def warm_up(self) -> None:
        importlib.import_module("memevo.evolve.presentation.generation_plot")

    def notify(self, event: Event) -> None:
        if isinstance(event, RunEnded):
            self.draw(event)

    def draw(self, event: RunEnded) -> None:
        """Drawn unless a resume finds it drawn from the same values (matplotlib is imported only to draw: a
        resumed finished run does not wait on it)."""
        result = event.result
        points = generation_points(result.history)
        options: dict[str, Any] = {
            "title": f"{self.name}: score per generation (training and validation users)",
            "objective": result.objective, "random_baseline": result.seed_scores.random_baseline,
            "upper_bound": result.seed_scores.upper_bound, "reference_users": "test users"}
        identity = {"points": [point.model_dump(mode="json") for point in points], **options}
        if not already_drawn(self.figure, identity):
            from memevo.evolve.presentation.generation_plot import plot_score_per_generation

            plot_score_per_generation(points, self.figure.parent, filename=self.figure.name, **options)
            mark_drawn(self.figure, identity)


def make_observer(context: RunContext) -> Observer:
    return ScorePlotObserver(context.config.name, context.run_dir)
