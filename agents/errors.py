"""Errors shared by every layer of memevo.

``UserInputError`` is the one exception the command line turns into exit code 2 with a message and no
traceback: bad configs, data files, flags and proposed prompts raise it (or a subclass) naming the
file and the field at fault.
"""

from __future__ import annotations


class MemevoError(Exception):
    """Base class of memevo's own errors."""


class UserInputError(MemevoError):
    """Bad config, data file or flag; ``source`` names the file and ``field`` the offending field."""

    def __init__(self, message: str, *, source: str | None = None, field: str | None = None) -> None:
        self.source = source
        self.field = field
        where = ", ".join(part for part in (source, f"field '{field}'" if field else None) if part)
        super().__init__(f"{where}: {message}" if where else message)


class RunFailedError(MemevoError):
    """A run that started properly but could not finish (exit code 1)."""
