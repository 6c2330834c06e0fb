"""Generation strategies by acceptance rule: the race (``sequential``) or the scheduled candidates (``mean``,
``paired``). A new way of running a generation is a ``GenerationStrategy`` in its own module and one entry here."""

from __future__ import annotations

from memevo.evolve.strategies.base import GenerationStrategy, Lineage, Ran, StrategyContext, generation_dir
from memevo.evolve.strategies.plays import Plays
from memevo.evolve.strategies.race import RaceStrategy
from memevo.evolve.strategies.scheduled import ScheduledStrategy

STRATEGIES: dict[str, type[GenerationStrategy]] = {
    "sequential": RaceStrategy, "mean": ScheduledStrategy, "paired": ScheduledStrategy}
"""Per ``strategy.acceptance``, the strategy that runs its generations."""


def make_strategy(context: StrategyContext) -> GenerationStrategy:
    """The strategy the config asks for (its acceptance rule was checked against ``selection`` when it was read)."""
    return STRATEGIES[context.config.strategy.acceptance](context)


__all__ = ["GenerationStrategy", "Lineage", "Plays", "Ran", "StrategyContext", "generation_dir", "make_strategy"]
