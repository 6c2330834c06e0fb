"""Selection strategies by name: parents (``elitist``, ``pareto``), acceptance (``sequential``, ``mean``,
``paired``), the minibatch gate and the race. A new one is a class in its own module and one entry in
``memevo.evolve.registries``."""

from __future__ import annotations

from memevo.evolve.registries import ACCEPTANCE, PARENT_SELECTORS
from memevo.evolve.selection.acceptance import Acceptance, Decision
from memevo.evolve.selection.gate import MinibatchGate
from memevo.evolve.selection.parents import ParentSelector, best_of


def parent_selector_names() -> list[str]:
    return PARENT_SELECTORS.names()


def acceptance_names() -> list[str]:
    return ACCEPTANCE.names()


def make_parent_selector(name: str, seed: int) -> ParentSelector:
    selector: ParentSelector = PARENT_SELECTORS.get(name, field="strategy.parents")(seed=seed)
    return selector


def make_acceptance(name: str, confidence: float, min_effect: float) -> Acceptance:
    acceptance: Acceptance = ACCEPTANCE.get(name, field="strategy.acceptance")(confidence=confidence,
                                                                              min_effect=min_effect)
    return acceptance


__all__ = [
    "Acceptance",
    "Decision",
    "MinibatchGate",
    "ParentSelector",
    "acceptance_names",
    "best_of",
    "make_acceptance",
    "make_parent_selector",
    "parent_selector_names",
]
