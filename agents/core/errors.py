"""Errors shared by every layer of memevo.

``UserInputError`` is the one exception the command line turns into exit code 2 with a message and no
traceback: bad configs, data files, flags and proposed prompts raise it (or a subclass) naming the
file and the field at fault.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class MemevoError(Exception):
    """Base class of memevo's own errors."""


class UserInputError(MemevoError):
    """Bad config, data file or flag; ``source`` names the file and ``field`` the offending field."""

    def __init__(self, message: str, *, source: str | None = None, field: str | None = None) -> None:
        self.message = message
        self.source = source
        self.field = field
        where = ", ".join(part for part in (source, f"field '{field}'" if field else None) if part)
        super().__init__(f"{where}: {message}" if where else message)


@contextmanager
def nested_in(prefix: str, *, source: str | None) -> Iterator[None]:
    """Report a ``UserInputError`` raised for a nested record (a policy inside a config) with the enclosing
    file and the full field path, e.g. ``seed.policy.kind`` instead of ``kind``; an empty ``prefix`` only
    adds the file."""
    try:
        yield
    except UserInputError as error:
        field = ".".join(part for part in (prefix, error.field) if part) or None
        raise UserInputError(error.message, source=error.source or source, field=field) from None


class DamagedFileError(UserInputError):
    """A file a run wrote for itself (a record, a summary, the folder's kind) that cannot be read back: truncated,
    overwritten or edited by hand. ``remedy`` says what to do about it (resume, delete and resume, or restore);
    exit code 2, as the fix is the user's."""

    def __init__(self, reason: str, *, source: str, remedy: str) -> None:
        super().__init__(f"{reason}; {remedy}", source=source)
        self.reason = reason
        self.remedy = remedy


class RunFailedError(MemevoError):
    """A run that started properly but could not finish (exit code 1)."""


class Interrupted(MemevoError):
    """A run stopped by SIGINT or SIGTERM; the message says how to resume it, ``exit_code`` is 128 + the signal's
    number, as a shell reports a process the signal ended."""

    def __init__(self, message: str, *, signal_number: int) -> None:
        super().__init__(message)
        self.exit_code = 128 + signal_number
