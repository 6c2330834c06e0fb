"""The tracker plug-in: one object per tracker bundling what a run, an ablation and ``memevo ui`` need of it.

A tracker records an evolution (an observer of the loop's events), an ablation (an observer of the ablation's
events) and serves its own UI on the store they wrote; it also checks its store before a run claims its folder and
creates a new store once before several processes open it. ``tracking.tracker`` names it in the registry
(``memevo.evolve.plugins.TRACKERS``); nothing else picks a tracker by hand. A new tracker is one module with a
``make_tracker() -> Tracker`` function and one registry entry.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from memevo.evolve.ablation.events import AblationContext, AblationObserver
    from memevo.evolve.events import Observer, RunContext
    from memevo.evolve.observers.tracker_ui import TrackerUI


class Tracker(Protocol):
    def ui(self) -> TrackerUI:
        """The tracker's UI (``memevo ui``), and the store a run logs to when its config names none."""

    def check_store(self, store: str | None, experiment: str, run_dir: Path, *, source: str | None,
                    store_field: str, experiment_field: str) -> None:
        """Raise ``UserInputError`` (naming ``store_field`` or ``experiment_field``) when the run could not log to
        ``store`` (None: the UI's default store in ``run_dir``) under ``experiment``; nothing is created."""

    def open_store(self, store: str) -> None:
        """Create a new store once, before several processes (workers, an ablation's runs) open it."""

    def make_observer(self, context: RunContext) -> Observer:
        """The observer that records one evolution from the loop's events."""

    def make_ablation_observer(self, context: AblationContext) -> AblationObserver:
        """The observer that records an ablation (its evolutions' records nested under it)."""

    def run_ids(self, run_dir: Path) -> tuple[str, dict[str, str]] | None:
        """The evolution's run in the tracker and its candidates' runs by label, as recorded in ``run_dir`` (None
        before the tracker recorded the run)."""
