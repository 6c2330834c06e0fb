"""Environment name -> class, imported only when chosen (``environment:`` in a config).

Each entry names the module and class of one implementation of ``environments.protocol.Environment``; a
benchmark's reader is imported only by the runs that use it. Adding an environment is its module plus one entry
here (or the ``memevo.environments`` entry-point group, from another package).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from memevo.core.errors import UserInputError
from memevo.core.registry import Registry
from memevo.core.setting_names import given, setting

if TYPE_CHECKING:
    from memevo.agents.llm.protocol import ChatClient
    from memevo.environments.capabilities import Capabilities
    from memevo.environments.protocol import Environment
    from memevo.environments.runner import EpisodeConfig

EnvironmentName = Literal["amemgym", "memorybench", "locomo", "longmemeval", "memoryagentbench"]
DEFAULT_ENVIRONMENT: EnvironmentName = "amemgym"

ENVIRONMENTS: Registry[type[Environment[Any]]] = Registry("environment", {
    "amemgym": "memevo.environments.amemgym.environment:AMemGymEnvironment",
    "memorybench": "memevo.environments.benchmarks.memorybench:MemoryBenchEnvironment",
    "locomo": "memevo.environments.benchmarks.locomo:LoCoMoEnvironment",
    "longmemeval": "memevo.environments.benchmarks.longmemeval:LongMemEvalEnvironment",
    "memoryagentbench": "memevo.environments.benchmarks.memoryagentbench:MemoryAgentBenchEnvironment",
}, entry_point_group="memevo.environments")
"""name -> its class, imported when first used."""
NAMES_HELP = "one of " + ", ".join(ENVIRONMENTS.names())
"""The names for a command's help, from this table (a new entry shows up in every list)."""
OPTION_HELP = ("An environment's own setting, NAME=VALUE (repeatable): the keyword arguments its class takes, e.g. "
               "dialog_field=dialog_mem0 for memorybench.")


def capabilities_of(name: str, *, field: str = "environment") -> Capabilities:
    """What the environment registered under ``name`` can measure (its class's ``capabilities``), for callers that
    hold a name (configs, records, summaries) rather than an environment."""
    return environment_class(name, field=field).capabilities


def environments_with(has: Callable[[Capabilities], bool]) -> str:
    """The environments whose capabilities pass ``has``, for the error that refuses a setting elsewhere ('amemgym'
    for the upper bound, 'memorybench' for ``dialog_field``)."""
    return ", ".join(name for name in ENVIRONMENTS.names() if has(capabilities_of(name)))


def option_owners(option: str) -> str:
    """The environments that take ``option`` (one of their ``Capabilities.options``)."""
    return environments_with(lambda capabilities: option in capabilities.options)


OWN_SETTINGS = ("dialog_field",)
"""Options that are settings of their own (``--dialog-field``, from before ``--env-option``); the others are named as
the ``options`` setting (``--env-option``)."""


def check_options(name: str, options: Mapping[str, str]) -> None:
    """Every option given is one the environment registered under ``name`` takes (``Capabilities.options``); another
    is a ``UserInputError`` naming its setting and the environments that take it, as the caller's front end spells
    them."""
    takes = capabilities_of(name, field=setting("environment")).options
    for option in options:
        if option not in takes:
            owners = option_owners(option)
            reason = (f"applies to {given('environment', owners)} only" if owners else
                      f"'{option}' is not a setting of {name} (it takes: {', '.join(takes) or 'none'})")
            raise UserInputError(reason, field=setting(option if option in OWN_SETTINGS else "options"))


def parse_options(words: Sequence[str], *, field: str) -> dict[str, str]:
    """``NAME=VALUE`` words as a mapping; a word without ``=`` or with an empty name is a ``UserInputError``."""
    options = {}
    for word in words:
        name, equals, value = word.partition("=")
        if not equals or not name.strip():
            raise UserInputError(f"'{word}' is not NAME=VALUE", field=field)
        options[name.strip()] = value
    return options


def environment_names() -> tuple[str, ...]:
    return tuple(ENVIRONMENTS.names())


def environment_class(name: str, *, field: str = "environment") -> type[Environment[Any]]:
    """The class registered under ``name``; an unknown name, or one whose module is missing from this installation,
    is a ``UserInputError`` naming ``field``."""
    return ENVIRONMENTS.get(name, field=field)


def make_environment(name: str, episode: EpisodeConfig, *, judge: ChatClient | None = None,
                     field: str = "environment", options: Mapping[str, Any] | None = None) -> Environment[Any]:
    """An instance of the environment registered under ``name``; ``options`` are its own settings (keyword
    arguments of its class, e.g. MemoryBench's ``dialog_field``)."""
    return environment_class(name, field=field)(episode, judge=judge, **(options or {}))

