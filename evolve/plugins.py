"""memevo's plug-ins by name, each a module imported only when a run uses it (MLflow and matplotlib load on demand).

``TRACKERS``: ``tracking.tracker`` names one; its entry is a ``make_tracker() -> Tracker``
(``memevo.evolve.observers.tracker``), which bundles the run's and the ablation's observers and the UI. A new
tracker is one module and one entry here. ``open_observers`` gives a run its observers: the score plot, the
configured tracker (unless ``tracking.enabled`` is off) and the terminal, each a module with
``make_observer(context)``. The tuner tells its own trials, so the order only matters for the plot, which is
drawn before the tracker logs it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from memevo.core.errors import UserInputError
from memevo.core.registry import Registry
from memevo.evolve.config import DEFAULT_TRACKER

if TYPE_CHECKING:
    from memevo.evolve.events import Observer, Observers, RunContext
    from memevo.evolve.observers.tracker import Tracker

TRACKERS: Registry[Callable[[], Tracker]] = Registry(
    "tracker", {DEFAULT_TRACKER: "memevo.evolve.observers.mlflow_tracker:make_tracker"},
    entry_point_group="memevo.trackers")
"""Tracker name -> what makes it; a package may add one through the ``memevo.trackers`` entry-point group."""
DRAWN_BEFORE = "memevo.evolve.observers.score_plot"
"""The observer module that gets each event before the tracker (the score plot it logs)."""
TOLD_AFTER = "memevo.evolve.observers.terminal"
"""The observer module that gets each event after the tracker."""


def make_tracker(name: str = DEFAULT_TRACKER, *, source: str | None = None, field: str = "tracking.tracker") -> Tracker:
    """The tracker ``name``; an unknown name is one line naming ``source``, ``field`` and the known ones."""
    try:
        factory = TRACKERS.get(name, field=field)
    except UserInputError as error:
        raise UserInputError(error.message, source=source, field=field) from None
    return factory()


def _observer(module: str, context: RunContext) -> Observer:
    factory: Callable[[RunContext], Observer] = importlib.import_module(module).make_observer
    return factory(context)


def open_observers(observers: Observers, context: RunContext) -> Observers:
    """Fill ``observers`` with the run's observers: the score plot, the tracker, the terminal."""
    observers.add("score_plot", _observer(DRAWN_BEFORE, context))
    tracking = context.config.tracking
    if tracking.enabled:
        observers.add(tracking.tracker, make_tracker(tracking.tracker).make_observer(context))
    observers.add("terminal", _observer(TOLD_AFTER, context))
    return observers
