"""A setting's name in the words of the front end that took it: ``--run-dir`` and ``--resume`` to a command's user,
``run_dir`` and ``resume=True`` to a Python caller.

The code that refuses a setting is shared by the command line and the Python API, and does not know which one called
it; it names the setting neutrally (``setting("run_dir")``, ``given("resume")``) and the front end in effect spells it.
The command line is the default; the Python API runs its calls under ``spelled_for(PYTHON)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar


class Spelling:
    """How one front end writes a setting's name, and the setting given a value."""

    def name(self, setting: str) -> str:
        raise NotImplementedError

    def given(self, setting: str, value: object) -> str:
        raise NotImplementedError


class CommandLineSpelling(Spelling):
    """``run_dir`` is ``--run-dir``; ``resume`` given is ``--resume``, ``environment`` given ``locomo`` is
    ``--environment locomo``."""

    FLAGS = {"options": "--env-option"}
    """Settings whose flag is not their name with dashes (the environment's ``options`` are ``--env-option`` words)."""

    def name(self, setting: str) -> str:
        return self.FLAGS.get(setting, "--" + setting.replace("_", "-"))

    def given(self, setting: str, value: object) -> str:
        return self.name(setting) if value is True else f"{self.name(setting)} {value}"


class PythonSpelling(Spelling):
    """A keyword argument: ``run_dir``; given, ``resume=True``, ``environment='locomo'``."""

    def name(self, setting: str) -> str:
        return setting

    def given(self, setting: str, value: object) -> str:
        return f"{setting}={value!r}"


COMMAND_LINE = CommandLineSpelling()
PYTHON = PythonSpelling()
_IN_EFFECT: ContextVar[Spelling] = ContextVar("memevo_setting_spelling", default=COMMAND_LINE)


def setting(name: str) -> str:
    """``name`` (a setting's neutral name, ``run_dir``) as the front end in effect writes it."""
    return _IN_EFFECT.get().name(name)


def given(name: str, value: object = True) -> str:
    """The setting ``name`` given ``value`` (a switch turned on by default) as the front end in effect writes it."""
    return _IN_EFFECT.get().given(name, value)


@contextmanager
def spelled_for(spelling: Spelling) -> Iterator[None]:
    """Settings named in the body (and in threads started with a copy of its context) are spelled ``spelling``'s
    way."""
    token = _IN_EFFECT.set(spelling)
    try:
        yield
    finally:
        _IN_EFFECT.reset(token)
