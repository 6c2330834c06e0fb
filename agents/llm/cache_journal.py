"""The response cache's replies not yet committed, written to a file of this process as they come, so that a kill
loses none: the next process to open the cache commits what a dead process's journal holds.

Each process writes its own journals (``<cache>/journal/<pid>-<random>.jsonl``, a line per reply: key, tab, the
stored JSON), each locked with ``fcntl.flock`` while it is in use. The kernel drops a lock when its process dies,
however it dies, so a journal nobody holds belongs to a dead process. One ``write`` per reply, no fsync: what
a killed process wrote is in the kernel's page cache and survives it (a power cut does not, as for any
uncommitted SQLite write).
"""

from __future__ import annotations

import fcntl
import os
import secrets
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import orjson

JOURNAL_FOLDER = "journal"
_NEW = ".new-"
"""Prefix of a journal being made: it is renamed to its final name once locked, so no other process takes an
unlocked new journal for a dead one."""


class _LockedJournal:
    """A journal file this process holds locked until ``discard`` deletes it (its replies committed)."""

    path: Path
    _fd: int

    def discard(self) -> None:
        self.path.unlink(missing_ok=True)
        os.close(self._fd)


class Journal(_LockedJournal):
    """A new journal of this process, for the replies of one batch of the cache's writer."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{os.getpid()}-{secrets.token_hex(6)}.jsonl"
        made = folder / f"{_NEW}{name}"
        self._fd = os.open(made, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        self.path = folder / name
        os.rename(made, self.path)

    def append(self, key: str, raw: str) -> None:
        os.write(self._fd, f"{key}\t{raw}\n".encode())


class DeadJournal(_LockedJournal):
    """A journal whose process is gone, locked by this one while its replies are committed."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd = fd

    def entries(self) -> Iterator[tuple[str, str]]:
        """(key, stored JSON) per whole line; a line torn by the kill is skipped."""
        with open(self._fd, "rb", closefd=False) as file:
            for line in file:
                key, tab, raw = line.rstrip(b"\n").partition(b"\t")
                if not line.endswith(b"\n") or not tab:
                    continue
                with suppress(orjson.JSONDecodeError):
                    orjson.loads(raw)
                    yield key.decode(), raw.decode()


def dead_journals(folder: Path) -> Iterator[DeadJournal]:
    """The journals in ``folder`` that no live process holds, each locked for the caller until its ``discard``."""
    if not folder.is_dir():
        return
    for path in sorted(folder.iterdir()):
        if path.name.startswith(_NEW) or not path.name.endswith(".jsonl"):
            continue
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:  # discarded meanwhile
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # its process is alive, or another process is committing it
            os.close(fd)
            continue
        if os.fstat(fd).st_nlink == 0:  # committed and discarded by another process while this one waited
            os.close(fd)
            continue
        yield DeadJournal(path, fd)
