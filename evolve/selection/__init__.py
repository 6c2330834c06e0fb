"""Selection strategies by name: parents (``elitist``, ``pareto``), acceptance (``sequential``, ``mean``,
``paired``), the minibatch gate and the race. A new strategy is a class in its own module and one entry here."""

from __future__ import annotations

from memevo.evolve.selection.acceptance import Acceptance, Decision, MeanAcceptance, PairedAcceptance
from memevo.evolve.selection.gate import MinibatchGate
from memevo.evolve.selection.parents import ElitistSelector, ParentSelector, ParetoSelector, best_of
from memevo.evolve.selection.sequential import SequentialAcceptance

PARENT_SELECTORS: dict[str, type] = {"elitist": ElitistSelector, "pareto": ParetoSelector}
ACCEPTANCE: dict[str, type] = {"mean": MeanAcceptance, "paired": PairedAcceptance, "sequential": SequentialAcceptance}


def parent_selector_names() -> list[str]:
    return sorted(PARENT_SELECTORS)


def acceptance_names() -> list[str]:
    return sorted(ACCEPTANCE)


def make_parent_selector(name: str, seed: int) -> ParentSelector:
    selector: ParentSelector = PARENT_SELECTORS[name](seed=seed)
    return selector


def make_acceptance(name: str, confidence: float, min_effect: float) -> Acceptance:
    acceptance: Acceptance = ACCEPTANCE[name](confidence=confidence, min_effect=min_effect)
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
