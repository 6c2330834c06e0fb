"""The evolution's strategy parts by name: generation strategies, proposers, parent selection and acceptance rules.

A leaf module (it imports only ``memevo.core``): the config checks its names here when it is read, naming the
file and the field, without importing what the names stand for (DSPy, SciPy) or the packages that build them. A
new part is its module plus one entry here; a package may add proposers through the ``memevo.proposers``
entry-point group.
"""

from __future__ import annotations

from typing import Any

from memevo.core.registry import Registry

PROPOSERS: Registry[Any] = Registry("proposer", {
    "reflection": "memevo.evolve.proposers.reflection:ReflectionProposer",
    "delta": "memevo.evolve.proposers.delta:DeltaProposer",
    "merge": "memevo.evolve.proposers.merge:MergeProposer",
    "accumulate": "memevo.evolve.proposers.accumulate:AccumulateProposer",
}, entry_point_group="memevo.proposers")
"""Proposer name -> a class taking ``ProposerSettings`` (``memevo.evolve.proposers``)."""

PARENT_SELECTORS: Registry[Any] = Registry("parent selection", {
    "elitist": "memevo.evolve.selection.parents:ElitistSelector",
    "pareto": "memevo.evolve.selection.parents:ParetoSelector",
})
"""Parent selection name -> a ``ParentSelector`` class taking ``seed``."""

ACCEPTANCE: Registry[Any] = Registry("acceptance", {
    "mean": "memevo.evolve.selection.acceptance:MeanAcceptance",
    "paired": "memevo.evolve.selection.acceptance:PairedAcceptance",
    "sequential": "memevo.evolve.selection.sequential:SequentialAcceptance",
})
"""Acceptance name -> an ``Acceptance`` class taking ``confidence`` and ``min_effect``."""

STRATEGIES: Registry[Any] = Registry("generation strategy", {
    "sequential": "memevo.evolve.strategies.race:RaceStrategy",
    "mean": "memevo.evolve.strategies.scheduled:ScheduledStrategy",
    "paired": "memevo.evolve.strategies.scheduled:ScheduledStrategy",
})
"""Per acceptance rule (``strategy.acceptance``), the ``GenerationStrategy`` class that runs its generations: the race
for ``sequential``, the scheduled candidates for ``mean`` and ``paired``."""
