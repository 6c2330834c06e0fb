"""The Python API's arguments checked before any work: a wrong type or value is a ``UserInputError`` naming the
parameter as the caller wrote it (``users``, not ``--users``), where it would otherwise surface as a traceback from
deep inside, or as a command-line error naming a flag the caller never used."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memevo.agents.base import MemoryAgent
from memevo.agents.policy import MemoryPolicy
from memevo.core.errors import UserInputError
from memevo.environments.registry import DEFAULT_ENVIRONMENT, environment_class
from memevo.evolve.config import EvolveConfig

SIMULATORS = ("template", "llm")


def _reject(name: str, wanted: str, value: Any) -> UserInputError:
    return UserInputError(f"must be {wanted}, not {value!r} ({type(value).__name__})", field=name)


def check_policy(name: str, value: Any) -> None:
    """A ``MemoryPolicy``, a policy file's path, or None."""
    if value is not None and not isinstance(value, MemoryPolicy | str | Path):
        raise _reject(name, "a MemoryPolicy, a policy file's path or None", value)


def check_data(name: str, value: Any, *, optional: bool = False) -> None:
    """A list of ``Item`` users, a data file, folder or hub id (None only where ``optional``)."""
    if value is None and optional:
        return
    if isinstance(value, str | Path):
        return
    if not isinstance(value, Sequence):
        raise _reject(name, "a list of Item, a data file, folder or hub id", value)


def check_folder(name: str, value: Any) -> None:
    """A folder's path: a ``str`` or ``Path``."""
    if not isinstance(value, str | Path) or not str(value):
        raise _reject(name, "a folder's path (str or Path)", value)


def check_agent_class(value: Any) -> None:
    """None, or a ``MemoryAgent`` subclass (the class itself, not an instance)."""
    if value is not None and not (isinstance(value, type) and issubclass(value, MemoryAgent)):
        raise _reject("agent_class", "a subclass of memevo.agents.base.MemoryAgent", value)


def check_config(value: Any) -> None:
    """An ``EvolveConfig``, a mapping, a YAML or JSON file's path, or None."""
    if value is not None and not isinstance(value, EvolveConfig | Mapping | str | Path):
        raise _reject("config", "an EvolveConfig, a mapping, a config file's path or None", value)


def check_flags(**flags: Any) -> None:
    """Each is ``True`` or ``False`` (not 1, not "yes")."""
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise _reject(name, "True or False", value)


def check_count(name: str, value: Any, *, least: int, optional: bool = False) -> None:
    """An ``int`` of at least ``least`` (None where ``optional``); ``True`` is not a count."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise _reject(name, f"an int{' or None' if optional else ''}", value)
    if value < least:
        raise UserInputError(f"must be at least {least}, not {value}", field=name)


def check_environment(name: Any, options: Any, data: Any) -> None:
    """A registered environment's name, its options a mapping of names to strings; users given as objects are
    AMemGym items, so another environment reads its data from a path."""
    if not isinstance(name, str):
        raise _reject("environment", "an environment's name (str)", name)
    environment_class(name, field="environment")
    if options is not None and not (isinstance(options, Mapping)
                                    and all(isinstance(k, str) and isinstance(v, str) for k, v in options.items())):
        raise _reject("options", "a mapping of option names to str values, or None", options)
    if name != DEFAULT_ENVIRONMENT and not isinstance(data, str | Path):
        raise UserInputError(f"users given as objects are {DEFAULT_ENVIRONMENT} items; give {name}'s data as a "
                             "file or folder path", field="data")


def check_simulator(value: Any, model: Any) -> None:
    """``simulator`` one of the known ones, ``simulator_model`` a model name or None."""
    if value not in SIMULATORS:
        raise UserInputError(f"must be one of {', '.join(SIMULATORS)}, not {value!r}", field="simulator")
    if model is not None and not isinstance(model, str):
        raise _reject("simulator_model", "a model name (str) or None", model)
