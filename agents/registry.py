"""Which agent kinds exist and how to build one from a policy.

Built-in kinds register themselves with ``@register_agent``; third-party packages can do the same,
or expose their class under the entry-point group ``memevo.agents`` (entry-point name = kind), and then
work in ``memevo eval`` / ``memevo evolve`` like the built-in ones.
"""

from __future__ import annotations

from collections.abc import Callable

from memevo.agents.base import AgentSpec, MemoryAgent
from memevo.agents.llm.protocol import ChatClient
from memevo.agents.policy import MemoryPolicy
from memevo.agents.templates import prompt_problems
from memevo.core.errors import UserInputError, nested_in
from memevo.core.registry import Registry

AgentClass = type[MemoryAgent]

AGENTS: Registry[AgentClass] = Registry("agent kind", {
    "native": "memevo.agents.native:NativeAgent",
    "rag": "memevo.agents.rag:RAGAgent",
    "awi": "memevo.agents.awi:AWIAgent",
    "awe": "memevo.agents.awe:AWEAgent",
    "mem0": "memevo.agents.memory_systems.mem0_agent:Mem0Agent",
    "amem": "memevo.agents.memory_systems.amem_agent:AMemAgent",
}, entry_point_group="memevo.agents")
"""Each kind and its class, imported when a policy of that kind is built: the retrieval libraries some kinds
use take most of a second to import."""


def register_agent(kind: str) -> Callable[[AgentClass], AgentClass]:
    """Class decorator: make ``cls`` the agent for ``kind`` (its ``spec.kind`` must say the same); a class of the
    same module and name replaces the one registered (the same class defined again)."""

    def decorate(cls: AgentClass) -> AgentClass:
        if cls.spec.kind != kind:
            raise ValueError(f"{cls.__name__}.spec.kind is '{cls.spec.kind}', registered as '{kind}'")
        existing = AGENTS.loaded(kind)
        redefined = existing is not None and (existing.__module__, existing.__qualname__) == (cls.__module__,
                                                                                             cls.__qualname__)
        if existing is not None and existing is not cls and not redefined:  # a notebook cell run again redefines
            raise ValueError(f"agent kind '{kind}' is already registered by {existing.__name__}")
        AGENTS.register(kind, cls)
        return cls

    return decorate


def available_kinds() -> list[str]:
    """All registered kinds, sorted."""
    return AGENTS.names()


def agent_class(kind: str) -> AgentClass:
    """The class registered for ``kind``; unknown kinds raise ``UserInputError`` listing the known ones."""
    return AGENTS.get(kind, field="kind")


def agent_spec(kind: str) -> AgentSpec:
    """What ``kind`` declares: its prompt components and hyperparameters."""
    return agent_class(kind).spec


def validate_policy(policy: MemoryPolicy, *, source: str | None = None) -> None:
    """Reject a policy whose kind is unknown or whose prompts break their component's rules."""
    with nested_in("", source=source):
        spec = agent_spec(policy.kind)
    for name, text in policy.prompts.items():
        try:
            component = spec.component(name)
        except KeyError as error:
            raise UserInputError(str(error.args[0]), source=source, field=f"prompts.{name}") from None
        problems = prompt_problems(component, text)
        if problems:
            raise UserInputError("; ".join(problems), source=source, field=f"prompts.{name}")


def build_agent(policy: MemoryPolicy, llm: ChatClient) -> MemoryAgent:
    """A fresh agent of ``policy.kind`` after validating the policy."""
    validate_policy(policy)
    return agent_class(policy.kind)(policy, llm)
