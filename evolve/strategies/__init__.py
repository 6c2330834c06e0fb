"""Generation strategies by acceptance rule: the race (``sequential``) or the scheduled candidates (``mean``,
``paired``). A new way of running a generation is a ``GenerationStrategy`` in its own module and one entry in
``memevo.evolve.registries.STRATEGIES``."""

from __future__ import annotations

from memevo.evolve.registries import STRATEGIES
from memevo.evolve.strategies.base import GenerationStrategy, Lineage, Ran, StrategyContext, generation_dir
from memevo.evolve.strategies.plays import Plays


def make_strategy(context: StrategyContext) -> GenerationStrategy:
    """The strategy the config asks for (its acceptance rule was checked against the registries when it was read)."""
    strategy: GenerationStrategy = STRATEGIES.get(context.config.strategy.acceptance,
                                                  field="strategy.acceptance")(context)
    return strategy


__all__ = ["GenerationStrategy", "Lineage", "Plays", "Ran", "StrategyContext", "generation_dir", "make_strategy"]
