"""The ablation's observers by name: each an ``AblationObserver`` (``memevo.evolve.ablation.events``) in a module of
its own, imported only when an ablation starts (MLflow loads then, not with the ablation's modules).

An ablation's observers get every event in this order. A new tracker for the ablation is one module with a
``make_ablation_observer(context: AblationContext) -> AblationObserver`` function and one entry here (the factory's
name differs from the loop's ``make_observer``, so one module may serve a tracker for both).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from memevo.evolve.ablation.events import AblationContext, AblationObserver, AblationObservers

ABLATION_OBSERVERS: dict[str, str] = {
    "mlflow": "memevo.evolve.observers.ablation_mlflow",
}
"""Observer name -> the module that makes it."""


def open_ablation_observers(context: AblationContext) -> AblationObservers:
    observers = AblationObservers()
    for name, module in ABLATION_OBSERVERS.items():
        factory: Callable[[AblationContext], AblationObserver] = importlib.import_module(module).make_ablation_observer
        observers.add(name, factory(context))
    return observers
