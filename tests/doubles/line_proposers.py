"""TEST DOUBLE proposers that add one line to the single evolving component, the line chosen by the sample number
(``line``): doubles for proposers whose samples repeat one another or an earlier generation's."""

from __future__ import annotations

import pytest

from memevo.evolve.proposers import ProposalContext, ProposerSettings, Variant
from memevo.evolve.proposers.base import checked
from memevo.evolve.records import ProposalStats
from memevo.evolve.registries import PROPOSERS
from tests.doubles.registries import register_for_test


class LineProposerDouble:
    """TEST DOUBLE proposer: sample i adds the line ``line(context, i)``."""

    name = "line"

    def __init__(self, settings: ProposerSettings) -> None:
        del settings

    def line(self, context: ProposalContext, sample: int) -> str:
        raise NotImplementedError

    async def propose(self, context: ProposalContext, n: int) -> tuple[list[Variant], ProposalStats]:
        stats = ProposalStats()
        (spec,) = context.components
        current = context.current(spec)
        variants = []
        for sample in context.samples(n):
            text, _ = checked(spec, f"{current}\n- {self.line(context, sample)}", current, context.bounds, stats)
            variants.append(Variant(prompts={spec.name: text}, proposer=self.name))
        return variants, stats


class RepeatingProposerDouble(LineProposerDouble):
    """TEST DOUBLE proposer: samples 0 and 1 add the same line (two proposals, one policy); each later sample adds
    a line of its own."""

    def line(self, context: ProposalContext, sample: int) -> str:
        return "instrument" if sample < 2 else f"instrument number {sample}"


class AlwaysRepeatingProposerDouble(LineProposerDouble):
    """TEST DOUBLE proposer: every sample adds the same line."""

    def line(self, context: ProposalContext, sample: int) -> str:
        return "instrument"


class SameFirstProposerDouble(LineProposerDouble):
    """TEST DOUBLE proposer: sample 0 adds the same line in every generation (as a greedy answer to the same request,
    served from the response cache, does); each later sample adds a line of its own. No line names a category the
    category double's questions ask about."""

    def line(self, context: ProposalContext, sample: int) -> str:
        return "weather" if sample == 0 else f"weather in generation {context.generation}, sample {sample}"


def register_proposer_double(monkeypatch: pytest.MonkeyPatch, name: str, double: str) -> None:
    """Make the double ``double`` of this module the proposer ``name`` for one test only."""
    register_for_test(monkeypatch, PROPOSERS, name, f"{__name__}:{double}")
