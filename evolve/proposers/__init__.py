"""Proposers by name: ``reflection`` (DSPy rewrite from evidence), ``delta`` (single-rule edits),
``merge`` (components of two pool candidates).

The names live in ``memevo.evolve.registries.PROPOSERS``, each imported only when used, so parsing a config does
not load DSPy. A new proposer is a module with a class taking ``ProposerSettings`` and one entry there (or a
``register_proposer`` call, or the ``memevo.proposers`` entry-point group); the loop does not change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import memevo.agents  # noqa: F401  (sets litellm's offline price-list default before DSPy is imported)
from memevo.evolve.proposers.base import ProposalContext, Proposer, Variant, propose_all
from memevo.evolve.registries import PROPOSERS


@dataclass(frozen=True)
class ProposerSettings:
    """What a proposer is built from: the DSPy LM of the proposer role and the adapter to speak with it."""

    lm: Any
    adapter: Literal["chat", "json"] = "chat"


def register_proposer(name: str, target: str) -> None:
    """Make ``name`` available in ``strategy.proposers``; ``target`` is ``"package.module:Class"``."""
    PROPOSERS.register(name, target)


def proposer_names() -> list[str]:
    return PROPOSERS.names()


def make_proposer(name: str, settings: ProposerSettings) -> Proposer:
    proposer: Proposer = PROPOSERS.get(name, field="strategy.proposers")(settings)
    return proposer


__all__ = [
    "ProposalContext",
    "Proposer",
    "ProposerSettings",
    "Variant",
    "make_proposer",
    "propose_all",
    "proposer_names",
    "register_proposer",
]
