"""Builds a user simulator by name, the one way ``memevo eval`` and ``memevo evolve`` both make theirs."""

from __future__ import annotations

from typing import Literal

from memevo.agents.llm.protocol import ChatClient
from memevo.environments.amemgym.simulators.base import UserSimulator

SimulatorName = Literal["template", "llm"]


def make_simulator(
    kind: SimulatorName,
    seed: int,
    llm: ChatClient | None = None,
    *,
    amemgym_compat: bool = False,
    template: str | None = None,
) -> UserSimulator:
    """A ``template`` simulator (no LLM), or an ``llm`` one talking through ``llm``.

    Under ``amemgym_compat`` the LLM simulator dates the conversation at the period's end, as AMemGym's
    does; ``template`` replaces its prompt text (AMemGym's own, read with ``--amemgym-source``).
    """
    # Imported here: only the chosen simulator's module is needed.
    if kind == "template":
        from memevo.environments.amemgym.simulators.template import TemplateUserSimulator

        return TemplateUserSimulator(seed=seed)
    if llm is None:
        raise ValueError("the llm simulator needs an LLM client")
    from memevo.environments.amemgym.simulators.llm import LLMUserSimulator

    return LLMUserSimulator(llm, seed=seed, current_date="period_end" if amemgym_compat else "session",
                            template=template)  # fmt: skip
