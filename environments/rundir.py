"""The run folder a command writes into: usable, held by one process at a time, resumed only on the same inputs.

Three guards every long-running command (``eval``, ``evolve``, ``ablate``) puts around its work:

- ``claim_run_folder``: the path must be a folder that can be written (not a file, not under a file, not
  read-only), and it is locked for this process with ``fcntl.flock`` on ``<folder>/.lock``, which holds the
  owner's pid. A second process on the same folder stops at once (exit 2) naming that pid. The kernel
  drops the lock when its process dies, however it dies, so a lock left by a killed run is simply taken
  over. The folder's kind (``evolution``, ``ablation``, ``eval``) is recorded in ``run_kind.json`` at the
  first claim; another command on it stops (exit 2) naming both kinds, before it writes anything (a folder
  from before the record is known by its files). A start that fails on bad input leaves no folder behind.
- ``check_inputs``: what the results depend on (data content per user, config, policy) is recorded in
  ``<folder>/inputs.json`` when the run starts; a resume with anything changed stops (exit 2) naming every
  changed field, instead of mixing old and new results.
- ``UsageLedger``: call accounting that appends every count to ``<folder>/usage.jsonl`` the moment it is
  made and starts from what earlier (killed) processes appended, so reported usage equals what the
  endpoint served across any number of kills, a request in flight at a kill counted as unknown (it is booked
  before it is sent: ``Accounting.book``); calls redone from the response cache count as cache hits.
  ``eval`` hands it to its hub; an evolution attaches its own to the hub's accounting (``Accounting.attach``),
  so each run of an ablation, sharing one hub, keeps its own ledger.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import sys
import weakref
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import orjson

from memevo.agents.llm.accounting import Accounting, Counts, EndpointUsage, RoleUsage, UsageReport
from memevo.core.atomic_files import write_json_atomic
from memevo.core.errors import DamagedFileError, RunFailedError, UserInputError
from memevo.core.full_disk import FULL_ERRNOS, allocate_past_end, full_disk
from memevo.core.run_files import damage, delete_and_resume, read_json
from memevo.core.setting_names import given, setting
from memevo.environments.amemgym.data.models import Item

log = logging.getLogger("memevo.environments")

LOCK_FILE = ".lock"
INPUTS_FILE = "inputs.json"
LEDGER_FILE = "usage.jsonl"
KIND_FILE = "run_kind.json"
LEDGER_RESERVE_BYTES = 64 * 1024
"""Disk space kept allocated past the ledger's end: room for some 300 counts of calls still answered once the disk
is full."""

RunKind = Literal["evolution", "ablation", "eval"]
KIND_COMMANDS: dict[str, str] = {"evolution": "memevo evolve", "ablation": "memevo ablate", "eval": "memevo eval"}
"""The command that makes (and resumes) each kind of run folder."""
KIND_MARKERS: tuple[tuple[str, RunKind], ...] = (("ablation.json", "ablation"), ("config.json", "evolution"),
                                                 ("run", "eval"), ("summary.json", "eval"))
"""How a folder written before ``run_kind.json`` shows its kind: the first of these files it holds."""


def check_writable(folder: Path, *, field: str) -> None:
    """Refuse a folder path that is a file, lies under a file, or cannot be created or written; ``field`` is the
    setting that named it (``run_dir``), spelled by the front end in effect."""
    folder, shown = Path(folder), setting(field)
    if folder.exists() and not folder.is_dir():
        raise UserInputError("is a file, not a folder", source=str(folder), field=shown)
    existing = folder
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise UserInputError(f"lies under {existing}, which is a file", source=str(folder), field=shown)
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UserInputError(f"{existing} is not writable", source=str(folder), field=shown)


class RunFolderLock:
    """An exclusive ``flock`` on ``<folder>/.lock`` for as long as this process holds it."""

    def __init__(self, folder: Path, *, field: str) -> None:
        self.folder = Path(folder)
        self.path = self.folder / LOCK_FILE
        self.field = field
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise ``UserInputError`` naming the process that holds it."""
        self.folder.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
                os.close(fd)
                raise UserInputError(
                    f"run folder is in use by process {holder}; wait for it to finish or stop it",
                    source=str(self.folder),
                    field=setting(self.field),
                ) from None
            if self._same_file(fd):
                break
            os.close(fd)  # the file was removed (a failed start cleaning up) while we waited: lock the new one
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def _same_file(self, fd: int) -> bool:
        try:
            return os.stat(self.path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            return False

    def release(self, *, remove: bool = False) -> None:
        """Let go of the lock; ``remove`` also deletes the lock file (only its holder may)."""
        if self._fd is None:
            return
        if remove:
            self.path.unlink(missing_ok=True)
        os.close(self._fd)  # closing the descriptor drops the flock
        self._fd = None


def recorded_kind(folder: Path) -> RunKind | None:
    """The kind of run ``folder`` holds (``run_kind.json``, else its files), None for a folder without a run. A
    damaged ``run_kind.json`` in a folder whose files show its kind counts as that kind (``claim_run_folder``
    writes it again)."""
    path = Path(folder) / KIND_FILE
    by_files = next((kind for name, kind in KIND_MARKERS if (Path(folder) / name).exists()), None)
    if not path.exists():
        return by_files
    try:
        kind = json.loads(path.read_text(encoding="utf-8"))["kind"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        if by_files is not None:
            return by_files
        raise DamagedFileError(damage(error), source=str(path), remedy="write {\"kind\": \"evolution\"}, \"ablation\" or "
                               "\"eval\" into it, whichever command made the folder") from None
    if kind not in KIND_COMMANDS:
        raise UserInputError(f"unknown kind {kind!r} (known: {', '.join(KIND_COMMANDS)})", source=str(path),
                             field="kind")
    return kind  # type: ignore[no-any-return]


def _record_kind(path: Path, kind: RunKind) -> bool:
    """Write ``run_kind.json`` when it is missing, or damaged (``check_kind`` found ``kind`` by the folder's files
    then, and it is written again, saying so); True if it was missing."""
    if not path.exists():
        write_json_atomic(path, {"kind": kind})
        return True
    try:
        json.loads(path.read_text(encoding="utf-8"))["kind"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        log.warning("%s: %s; written again as %r, the kind its folder's files show", path, damage(error), kind)
        write_json_atomic(path, {"kind": kind})
    return False


def check_kind(folder: Path, kind: RunKind, *, field: str) -> None:
    """Refuse a folder that holds another kind of run, naming both (nothing is written)."""
    found = recorded_kind(folder)
    if found is not None and found != kind:
        raise UserInputError(
            f"holds {_a(found)} run (made by {KIND_COMMANDS[found]}), not {_a(kind)} run: {KIND_COMMANDS[kind]} "
            f"cannot start or resume one here; continue it with {KIND_COMMANDS[found]} --resume, or choose "
            f"another {setting(field)}", source=str(folder), field=setting(field))


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


@contextmanager
def claim_run_folder(folder: Path, *, field: str, kind: RunKind) -> Iterator[Path]:
    """Check ``folder`` is writable and holds no other kind of run, lock it for the body's work and record its
    kind; on bad input (``UserInputError``) remove what the claim itself created, so a refused start leaves
    the disk as it found it. A full disk met before the run's own work reports it (the lock, the kind, the
    inputs) is one line too."""
    try:
        with _claimed(Path(folder), field=field, kind=kind) as claimed:
            yield claimed
    except OSError as error:
        full = full_disk(error)
        if full is None:
            raise
        again = f" with {given('resume')}" if (Path(folder) / INPUTS_FILE).exists() else ""  # the run had begun
        raise RunFailedError(f"{full}; free space, then run the command again{again}") from error


@contextmanager
def _claimed(folder: Path, *, field: str, kind: RunKind) -> Iterator[Path]:
    check_writable(folder, field=field)
    check_kind(folder, kind, field=field)
    created = [parent for parent in (folder, *folder.parents) if not parent.exists()]
    had_lock_file = (folder / LOCK_FILE).exists()
    lock = RunFolderLock(folder, field=field)
    lock.acquire()
    kind_path = folder / KIND_FILE
    wrote_kind = False
    try:
        check_kind(folder, kind, field=field)  # again, now that no other process can be writing it
        wrote_kind = _record_kind(kind_path, kind)
        yield folder
    except UserInputError:
        if wrote_kind and {path.name for path in folder.iterdir()} <= {LOCK_FILE, KIND_FILE}:
            kind_path.unlink()  # the refused start left nothing the kind describes
        lock.release(remove=not had_lock_file)
        for parent in created:  # deepest first; a folder that got content stays
            try:
                parent.rmdir()
            except OSError:
                break
        raise
    finally:
        lock.release()


def item_fingerprints(items: Sequence[Item]) -> dict[str, str]:
    """A content hash per user: a change of one answer choice changes its user's entry."""
    return {item.id: hashlib.sha256(item.model_dump_json().encode()).hexdigest()[:16] for item in items}


def changed_fields(stored: Any, current: Any, path: str = "") -> list[str]:
    """Dotted paths (``config.rounds_init``, ``data.u3``, ``policy.prompts.write_prompt``) where two JSON
    values differ; a key present on one side only counts as changed."""
    if isinstance(stored, dict) and isinstance(current, dict):
        changed = []
        for key in sorted(set(stored) | set(current), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in stored or key not in current:
                changed.append(where)
            else:
                changed.extend(changed_fields(stored[key], current[key], where))
        return changed
    return [] if stored == current else [path or "(root)"]


def check_inputs(folder: Path, inputs: dict[str, Any], *, may_add: Collection[str] = ()) -> None:
    """Record ``inputs`` on a run's first start; on a resume, refuse any difference, naming each field, except a
    field of ``may_add`` that the recorded inputs lack: it is recorded now, and from then on checked like the rest."""
    path = Path(folder) / INPUTS_FILE
    current = json.loads(json.dumps(inputs, ensure_ascii=False))
    if not path.exists():
        write_json_atomic(path, current)
        return
    stored = read_json(path, remedy=delete_and_resume("it", "the inputs given then are recorded again, unchecked: "
                                                      "give the same data, config and policy as before"))
    changed = changed_fields(stored, current)
    added = [field for field in changed if field in may_add and _lacks(stored, field)]
    changed = [field for field in changed if field not in added]
    if changed:
        shown = ", ".join(changed[:8]) + (f" and {len(changed) - 8} more" if len(changed) > 8 else "")
        raise UserInputError(
            f"the inputs changed since this run started ({shown}); resume needs the same data, config and "
            "policy, or choose a new folder",
            source=str(path),
            field=changed[0],
        )
    if added:
        write_json_atomic(path, current)


def _lacks(inputs: Any, field: str) -> bool:
    """Whether the dotted ``field`` is absent from ``inputs`` (a mapping on the way, but no value at the end)."""
    *parents, last = field.split(".")
    for key in parents:
        inputs = inputs.get(key) if isinstance(inputs, dict) else None
    return isinstance(inputs, dict) and last not in inputs


def ledger_entries(text: str) -> Iterator[tuple[str, RoleUsage]]:
    """(role, usage) per line of a ledger's text; a line torn by a kill is skipped."""
    for line in text.splitlines():
        try:
            entry = json.loads(line)
            role = entry.pop("role")
            yield role, RoleUsage.model_validate(entry)
        except (json.JSONDecodeError, KeyError, ValueError):
            continue


def _ledger_text(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.exists() else ""


def _summed(text: str) -> UsageReport:
    """The usage in a ledger's text, summed per role and per server (its ``endpoint`` lines)."""
    by_role: dict[str, RoleUsage] = {}
    for role, usage in ledger_entries(text):
        by_role[role] = by_role.get(role, RoleUsage()).plus(usage)
    by_endpoint: dict[str, EndpointUsage] = {}
    for line in text.splitlines():
        if line.startswith('{"endpoint":'):
            try:
                entry = json.loads(line)
                url = entry.pop("endpoint")
                by_endpoint[url] = by_endpoint.get(url, EndpointUsage()).plus(EndpointUsage.model_validate(entry))
            except (json.JSONDecodeError, ValueError):
                continue
    return UsageReport(by_role=by_role, by_endpoint=by_endpoint)


def read_ledger(path: Path) -> UsageReport:
    """The usage a ledger holds, read without touching the file (its run may still be writing it)."""
    return _summed(_ledger_text(Path(path)))


class UsageLedger(Accounting):
    """Accounting whose every count is also appended to a ledger file as it is made.

    It starts from the ledger's earlier lines, so ``report()`` is the usage of the whole run over all its
    processes. One ``write`` per count in append mode: a ``kill -9`` can lose at most the
    count in progress at that instant, never a finished result's calls. A torn last line is skipped. Space for the
    next counts is kept allocated (``_reserve``), so a disk filling up ends the run without losing a count.
    """

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = Path(path)
        earlier = _ledger_text(self.path)
        summed = _summed(earlier)
        for role, usage in summed.by_role.items():
            super()._add(role, usage.model_dump())
        for url, requests in summed.by_endpoint.items():
            super()._add_endpoint(url, requests.model_dump())
        if earlier and not earlier.endswith("\n"):
            with self.path.open("a", encoding="utf-8") as ledger:  # end a line torn by a kill: the next count starts clean
                ledger.write("\n")
        # Opened once (a count is on the hot path of every call); closed by ``close`` or when collected.
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._closer = weakref.finalize(self, os.close, self._fd)
        self._end = os.fstat(self._fd).st_size
        self._reserved_to = 0
        self._reserve()

    def _add(self, role: str, counts: Counts) -> None:
        super()._add(role, counts)
        self._append({"role": role, **counts})

    def _add_endpoint(self, url: str, counts: Counts) -> None:
        super()._add_endpoint(url, counts)
        self._append({"endpoint": url, **counts})

    def _append(self, entry: dict[str, object]) -> None:
        # orjson: json.dumps cost ~9 us of this per-call line, orjson ~1 us (the same JSON, without spaces).
        self._end += os.write(self._fd, orjson.dumps(entry, option=orjson.OPT_APPEND_NEWLINE))
        if self._reserved_to - self._end < LEDGER_RESERVE_BYTES // 2:
            self._reserve()

    def _reserve(self) -> None:
        """Keep ``LEDGER_RESERVE_BYTES`` allocated past the ledger's end. When the disk is too full for that, the
        count just made is on disk already and the run ends on the full disk here, while the calls still answered
        meanwhile have the rest of the reserve for their counts."""
        try:
            allocate_past_end(self._fd, self._end, LEDGER_RESERVE_BYTES)
        except OSError as error:
            if error.errno in FULL_ERRNOS:
                raise
            self._reserved_to = sys.maxsize  # a file system without fallocate: counts are written unreserved
            return
        self._reserved_to = self._end + LEDGER_RESERVE_BYTES

    def close(self) -> None:
        """Close the ledger file; later counts would fail, so a run closes it when it stops counting."""
        self._closer()
