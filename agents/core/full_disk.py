"""A full disk, wherever it surfaced: an ``OSError`` with ENOSPC (or EDQUOT, a full quota) from any write, or SQLite's
"database or disk is full", also when a library wrapped it (SQLAlchemy, MLflow) or a task group gathered it.

The command line turns it into one line with the exact resume command (``resume.resumable``): every file a run
writes is written atomically, so nothing finished is lost and the resume continues where the disk filled up. The one
file appended to call by call, the usage ledger, keeps space allocated ahead (``allocate_past_end``), so the counts
of calls answered while the disk fills up are not lost either.
"""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Iterator

FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_LIBC = ctypes.CDLL(None, use_errno=True)
_FALLOC_FL_KEEP_SIZE = 1
SQLITE_FULL = "database or disk is full"
FULL_TEXTS = (SQLITE_FULL, os.strerror(errno.ENOSPC))
"""How a full disk reads in an error that carries only text (SQLite's, or a child process's error passed on)."""


def _chain(error: BaseException) -> Iterator[BaseException]:
    """``error``, the errors it was raised from or during, and those a group holds, each once."""
    seen: set[int] = set()
    pending = [error]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        pending.extend(cause for cause in (current.__cause__, current.__context__) if cause is not None)
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)


def full_disk(error: BaseException) -> str | None:
    """One line saying the disk is full (and which file was being written, when known), or None when ``error`` is not
    a full disk."""
    for cause in _chain(error):
        if isinstance(cause, OSError) and cause.errno in FULL_ERRNOS:
            where = f" (writing {cause.filename})" if cause.filename else ""
            return f"the disk is full{where}: {cause.strerror or 'no space left on device'}"
        text = next((text for text in FULL_TEXTS if text in str(cause)), None)
        if text is not None:
            return f"the disk is full: {text}"
    return None


def allocate_past_end(fd: int, offset: int, length: int) -> None:
    """Allocate disk blocks for ``length`` bytes from ``offset`` without changing the file's size (Linux
    ``fallocate`` with ``FALLOC_FL_KEEP_SIZE``): later appends there cannot meet a full disk. Raises ``OSError``,
    with ENOTSUP where the system or file system has no such call."""
    call = getattr(_LIBC, "fallocate", None)
    if call is None:
        raise OSError(errno.ENOTSUP, "fallocate is not available")
    if call(fd, _FALLOC_FL_KEEP_SIZE, ctypes.c_longlong(offset), ctypes.c_longlong(length)) != 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))
