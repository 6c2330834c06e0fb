"""Which agent kinds exist and how to build one from a policy.

Built-in kinds register themselves with ``@register_agent``; third-party packages can do the same,
or expose their class under the entry-point group ``memevo.agents`` (entry-point name = kind), and then
work in ``memevo eval`` / ``memevo evolve`` like the built-in ones.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from memevo.agents.base import AgentSpec, MemoryAgent
from memevo.agents.llm.protocol import ChatClient
from memevo.agents.policy import MemoryPolicy
from memevo.agents.templates import prompt_problems
from memevo.core.errors import UserInputError, nested_in

ENTRY_POINT_GROUP = "memevo.agents"
_BUILTIN_MODULES = {"native": "native", "rag": "rag", "awi": "awi", "awe": "awe",
                    "mem0": "memory_systems.mem0_agent", "amem": "memory_systems.amem_agent"}
"""Each built-in kind and its module under ``memevo.agents``."""
_registry: dict[str, type[MemoryAgent]] = {}
_discovered = False

AgentClass = type[MemoryAgent]


def register_agent(kind: str) -> Callable[[AgentClass], AgentClass]:
    """Class decorator: make ``cls`` the agent for ``kind`` (its ``spec.kind`` must say the same); a class of the
    same module and name replaces the one registered (the same class defined again)."""

    def decorate(cls: AgentClass) -> AgentClass:
        if cls.spec.kind != kind:
            raise ValueError(f"{cls.__name__}.spec.kind is '{cls.spec.kind}', registered as '{kind}'")
        existing = _registry.get(kind)
        redefined = existing is not None and (existing.__module__, existing.__qualname__) == (cls.__module__,
                                                                                             cls.__qualname__)
        if existing is not None and existing is not cls and not redefined:  # a notebook cell run again redefines
            raise ValueError(f"agent kind '{kind}' is already registered by {existing.__name__}")
        _registry[kind] = cls
        return cls

    return decorate


def _discover() -> None:
    """Import the built-in kinds and load entry-point plug-ins, once."""
    global _discovered
    if _discovered:
        return
    _discovered = True
    from importlib.metadata import entry_points  # ~15 ms to import, and only a plug-in needs it

    for module in _BUILTIN_MODULES.values():
        importlib.import_module(f"memevo.agents.{module}")
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name not in _registry:
            cls = entry.load()
            register_agent(entry.name)(cls)


def available_kinds() -> list[str]:
    """All registered kinds, sorted."""
    _discover()
    return sorted(_registry)


def agent_class(kind: str) -> AgentClass:
    """The class registered for ``kind``; unknown kinds raise ``UserInputError`` listing the known ones.

    A built-in kind imports only its own module: the others pull in
    retrieval libraries that take most of a second to import."""
    if kind not in _registry and kind in _BUILTIN_MODULES:
        importlib.import_module(f"memevo.agents.{_BUILTIN_MODULES[kind]}")
    if kind not in _registry:
        _discover()
    try:
        return _registry[kind]
    except KeyError:
        raise UserInputError(
            f"unknown agent kind '{kind}' (known: {', '.join(available_kinds())})", field="kind"
        ) from None


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
