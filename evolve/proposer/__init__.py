"""DSPy proposers: turn a component's text plus environment feedback into revised texts."""

from memevo.evolve.proposer.module import Proposal, Proposer

__all__ = ["Proposal", "Proposer"]
