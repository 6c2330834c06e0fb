"""The loop's observers by name: each an ``Observer`` (``memevo.evolve.events``) in a module of its own.

An entry names the module (imported only when the observer is used: MLflow and matplotlib load on demand) and
when a run uses it. A run's observers get every event in this order: the score plot is drawn before the tracker
logs it, and a candidate's MLflow run exists before its Optuna trial names it. A new tracker is one module with a
``make_observer(context)`` function and one entry here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from memevo.evolve.events import Observer, Observers, RunContext


@dataclass(frozen=True)
class ObserverEntry:
    module: str
    """Defines ``make_observer(context: RunContext) -> Observer``."""
    used: Callable[[RunContext], bool]


OBSERVERS: dict[str, ObserverEntry] = {
    "score_plot": ObserverEntry("memevo.evolve.observers.score_plot", lambda run: True),
    "mlflow": ObserverEntry("memevo.evolve.observers.mlflow_runs", lambda run: run.config.tracking.enabled),
    "optuna": ObserverEntry("memevo.evolve.observers.optuna_trials", lambda run: run.tuner is not None),
    "terminal": ObserverEntry("memevo.evolve.observers.terminal", lambda run: True),
}


def make_observer(name: str, context: RunContext) -> Observer:
    factory: Callable[[RunContext], Observer] = importlib.import_module(OBSERVERS[name].module).make_observer
    return factory(context)


def open_observers(observers: Observers, context: RunContext) -> Observers:
    """Fill ``observers`` (the fan-out ``context.run_link`` asks) with the run's observers, in the registry's order."""
    for name, entry in OBSERVERS.items():
        if entry.used(context):
            observers.add(name, make_observer(name, context))
    return observers
