"""Proposers by name: ``reflection`` (DSPy rewrite from evidence), ``delta`` (single-rule edits),
``merge`` (components of two pool candidates).

The registry maps a name to ``module:Class`` and imports it only when used, so parsing a config does not
load DSPy. A new proposer is a module with a class taking ``ProposerSettings`` and one
``register_proposer`` call; the loop does not change.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Literal

import memevo.agents  # noqa: F401  (sets litellm's offline price-list default before DSPy is imported)
from memevo.evolve.proposers.base import ProposalContext, Proposer, Variant, propose_all

_REGISTRY: dict[str, str] = {
    "reflection": "memevo.evolve.proposers.reflection:ReflectionProposer",
    "delta": "memevo.evolve.proposers.delta:DeltaProposer",
    "merge": "memevo.evolve.proposers.merge:MergeProposer",
}


@dataclass(frozen=True)
class ProposerSettings:
    """What a proposer is built from: the DSPy LM of the proposer role and the adapter to speak with it."""

    lm: Any
    adapter: Literal["chat", "json"] = "chat"


def register_proposer(name: str, target: str) -> None:
    """Make ``name`` available in ``strategy.proposers``; ``target`` is ``"package.module:Class"``."""
    _REGISTRY[name] = target


def proposer_names() -> list[str]:
    return sorted(_REGISTRY)


def make_proposer(name: str, settings: ProposerSettings) -> Proposer:
    module, _, attribute = _REGISTRY[name].partition(":")
    cls = getattr(importlib.import_module(module), attribute)
    return cls(settings)


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
