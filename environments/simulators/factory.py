"""Builds a user simulator by name: ``memevo evolve`` uses it, and ``memevo eval``'s own copy (changed on main
since this branch began) is meant to move here when the branches meet."""

from __future__ import annotations

from typing import Literal

from memevo.agents.llm.protocol import ChatClient
from memevo.environments.simulators.base import UserSimulator

SimulatorName = Literal["template", "llm"]


def make_simulator(kind: SimulatorName, seed: int, llm: ChatClient | None = None) -> UserSimulator:
    """A ``template`` simulator (no LLM), or an ``llm`` one talking through ``llm``."""
    # Imported here: only the chosen simulator's module is needed.
    if kind == "template":
        from memevo.environments.simulators.template import TemplateUserSimulator

        return TemplateUserSimulator(seed=seed)
    if llm is None:
        raise ValueError("the llm simulator needs an LLM client")
    from memevo.environments.simulators.llm import LLMUserSimulator

    return LLMUserSimulator(llm, seed=seed)
