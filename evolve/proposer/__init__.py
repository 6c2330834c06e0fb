"""DSPy proposers: turn a component's text plus environment feedback into revised texts."""

import memevo.agents  # noqa: F401  (sets litellm's offline price-list default before DSPy is imported)
from memevo.evolve.proposer.module import Proposal, Proposer

__all__ = ["Proposal", "Proposer"]
