"""A test double of a tracker: the recording observers and UI beside it bundled as one ``Tracker``, and nothing
stored anywhere (what a new tracker adds: this module and one registry entry, ``register``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memevo.core.registry import Registry
from memevo.evolve import plugins
from memevo.evolve.ablation.events import AblationContext, AblationObserver
from memevo.evolve.events import Observer, RunContext
from memevo.evolve.observers.tracker import Tracker
from tests.doubles.recording_ablation_observer import RecordingAblationObserver
from tests.doubles.recording_observer import RecordingObserver
from tests.doubles.recording_tracker_ui import RecordingTrackerUI

NAME = "recording"


class RecordingTracker:
    def ui(self) -> RecordingTrackerUI:
        return RecordingTrackerUI()

    def check_store(self, store: str | None, experiment: str, run_dir: Path, *, source: str | None,
                    store_field: str, experiment_field: str) -> None:
        """Any store will do: the double stores nothing."""

    def open_store(self, store: str) -> None:
        """Nothing to create."""

    def make_observer(self, context: RunContext) -> Observer:
        return RecordingObserver()

    def make_ablation_observer(self, context: AblationContext) -> AblationObserver:
        return RecordingAblationObserver()

    def run_ids(self, run_dir: Path) -> tuple[str, dict[str, str]] | None:
        return None


def make_tracker() -> Tracker:
    return RecordingTracker()


def register(monkeypatch: pytest.MonkeyPatch, name: str = NAME) -> None:
    """The registry, for the test, with this tracker's one entry under ``name`` (the default tracker's name puts it in
    MLflow's place)."""
    monkeypatch.setattr(plugins, "TRACKERS", Registry("tracker", {name: f"{__name__}:make_tracker"}))
