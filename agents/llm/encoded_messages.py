"""The messages of a chat request as the cache key and the request body need them, reused across calls.

A native agent resends its whole history on every call: the very same message objects in the same order, with
one or a few new ones at the end. Encoding, hashing and joining them afresh on every call cost CPU growing with
the history (measured: ~0.7 ms per call at 400 messages). Two memories make a call cost what its new messages do:

- per message, by the identity of its content object: its canonical JSON (UTF-8) and, when asked, its SHA-256
  (``_EncodedStrings``);
- per prefix: for all the messages of a request but its last, their digests as the key's text and their
  encodings as body chunks of about ``CHUNK_BYTES`` (``_Prefixes``). A later request that begins with those very
  messages (found by the identity of the prefix's last message, then compared by value: role, content and
  nothing else in each) starts from there and encodes only what follows.

Each memory holds what it describes, so an id in it cannot be reused while its entry lives, and each stays
within a byte budget (least recently used first out).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from json.encoder import encode_basestring  # type: ignore[attr-defined]  # the C encoder's
from operator import itemgetter
from typing import Any, Generic, TypeVar

from memevo.agents.llm.protocol import Message

CHUNK_BYTES = 64 * 1024
"""Body parts are runs of encodings joined up to this size (one write each), large encodings alone."""
BODY_HEAD = b'{"messages":['
LOOKBACK = 8
"""How many of a request's last messages are tried as the end of a known prefix (a native agent's request adds
a user turn and a reply to the previous one's prefix, and its own new message)."""
_ENTRY_OVERHEAD = 200
"""Bytes an entry takes besides its JSON (entry, digest, dictionary slot), counted against the budget."""
V = TypeVar("V")
_ROLE = itemgetter("role")
_CONTENT = itemgetter("content")


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, UTF-8 as is: one text per value."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(slots=True, eq=False)
class _Encoded:
    content: Any
    role: Any
    json: bytes
    digest: str | None = None

    def hex_digest(self) -> str:
        if self.digest is None:
            self.digest = hashlib.sha256(self.json).hexdigest()
        return self.digest


class _Memory(Generic[V]):
    """Entries by the id of an object each holds (so that id is not reused while its entry lives); once their sizes
    pass ``budget_bytes``, the least recently remembered (or touched) go first."""

    def __init__(self, budget_bytes: int, size: Callable[[V], int]) -> None:
        self.budget_bytes = budget_bytes
        self.entries: OrderedDict[int, V] = OrderedDict()
        self._size = size
        self._bytes = 0
        self._lock = threading.Lock()

    def touched(self, key: int) -> V | None:
        """The entry under ``key``, now the most recently used."""
        with self._lock:
            found = self.entries.get(key)
            if found is not None:
                self.entries.move_to_end(key)
        return found

    def put(self, key: int, value: V) -> None:
        size = self._size(value)
        with self._lock:
            replaced = self.entries.pop(key, None)
            if replaced is not None:
                self._bytes -= self._size(replaced)
            self.entries[key] = value
            self._bytes += size
            while self._bytes > self.budget_bytes and self.entries:
                self._bytes -= self._size(self.entries.popitem(last=False)[1])


class _EncodedStrings:
    """The JSON encoding and its SHA-256 of recently seen messages, by content object identity, within a byte budget."""

    def __init__(self, budget_bytes: int) -> None:
        self._memory: _Memory[_Encoded] = _Memory(budget_bytes, lambda entry: len(entry.json) + _ENTRY_OVERHEAD)

    def entries(self, messages: list[Message]) -> list[_Encoded]:
        """``entry`` of each message, with the common case (a known content object) inlined."""
        known = self._memory.entries.get
        found = []
        for message in messages:
            content = message.get("content")
            entry = known(id(content))
            if entry is None or entry.content is not content or entry.role != message.get("role") or len(message) != 2:
                entry = self.entry(message)
            found.append(entry)
        return found

    def entry(self, message: Message) -> _Encoded:
        """``canonical_json(message)`` as UTF-8 (``json``), and its SHA-256 on demand (``hex_digest()``)."""
        content, role = message.get("content"), message.get("role")
        if not (len(message) == 2 and isinstance(role, str) and isinstance(content, str)):  # ``_plain``, narrowing
            return _Encoded(content, role, canonical_json(message).encode("utf-8"))
        entry = self._memory.entries.get(id(content))  # a racing eviction only costs an encoding
        if entry is not None and entry.content is content and entry.role == role:
            return entry
        # Its canonical JSON put together from its two strings (keys sorted: content, role): ~30% cheaper than the
        # encoder for the same text (a test holds them equal).
        entry = _Encoded(content, role, f'{{"content":{encode_basestring(content)},"role":{encode_basestring(role)}}}'
                         .encode("utf-8"))
        self._memory.put(id(content), entry)
        return entry


def _plain(message: Message, role: Any, content: Any) -> bool:
    """A message of a string role and a string content only: the kind whose encoding is remembered."""
    return len(message) == 2 and isinstance(role, str) and isinstance(content, str)


@dataclass(slots=True, eq=False)
class EncodedMessages:
    """The messages of one request: their digests joined by ``","`` (the key's text) and the body from its
    head through the last message, as full chunks and a run still open."""

    digests: str
    chunks: list[bytes]
    run: list[bytes]
    run_bytes: int

    def body(self, tail: bytes) -> list[bytes]:
        """The whole body, ``tail`` closing it, as parts to send in order."""
        return [*self.chunks, b"".join([*self.run, tail])]

    def extended(self, entries: list[_Encoded], first: bool) -> EncodedMessages:
        """These messages followed by ``entries`` (``first``: nothing precedes them); self is left as it was."""
        chunks, run, run_bytes = list(self.chunks), list(self.run), self.run_bytes
        digests = [self.digests] if not first else []
        for entry in entries:
            parts = (entry.json,) if first else (b",", entry.json)
            first = False
            for part in parts:
                if run and run_bytes + len(part) > CHUNK_BYTES:
                    chunks.append(b"".join(run))
                    run, run_bytes = [], 0
                run.append(part)
                run_bytes += len(part)
            digests.append(entry.hex_digest())
        return EncodedMessages('","'.join(digests), chunks, run, run_bytes)

    @property
    def size(self) -> int:
        return sum(map(len, self.chunks)) + self.run_bytes + len(self.digests)


_EMPTY = EncodedMessages("", [], [BODY_HEAD], len(BODY_HEAD))


@dataclass(slots=True, eq=False)
class _Prefix:
    last: Message
    """The prefix's last message: its id is the entry's key (held, so the id stays its own)."""
    roles: list[Any]
    contents: list[Any]
    """Role and content of each message, compared by value (at C speed, mostly by identity) when a request seems
    to start with this prefix."""
    encoded: EncodedMessages


class _Prefixes:
    """Recent requests' messages but the last, by the identity of their last message, within a byte budget."""

    def __init__(self, budget_bytes: int) -> None:
        self._memory: _Memory[_Prefix] = _Memory(budget_bytes, _size)

    def encode(self, messages: list[Message]) -> EncodedMessages:
        """``messages`` encoded, from the longest remembered prefix on; their prefix is remembered in turn."""
        start = self._longest(messages)
        known = len(start.roles) if start is not None else 0
        entries = STRINGS.entries(messages[known:])
        before = start.encoded if start is not None else _EMPTY
        if len(messages) - known < 2:
            return before.extended(entries, first=not known)
        prefix = before.extended(entries[:-1], first=not known)
        fresh = messages[known:-1]
        if all(_plain(message, entry.role, entry.content) for message, entry in zip(fresh, entries, strict=False)):
            roles = (start.roles if start is not None else []) + [entry.role for entry in entries[:-1]]
            contents = (start.contents if start is not None else []) + [entry.content for entry in entries[:-1]]
            self._memory.put(id(messages[-2]), _Prefix(messages[-2], roles, contents, prefix))
        return prefix.extended(entries[-1:], first=False)

    def _longest(self, messages: list[Message]) -> _Prefix | None:
        for back in range(2, min(len(messages), LOOKBACK) + 1):
            last = messages[-back]
            found = self._memory.touched(id(last))
            if found is None or found.last is not last or len(found.roles) != len(messages) - back + 1:
                continue
            head = messages[: len(found.roles)]
            try:
                same = (list(map(_CONTENT, head)) == found.contents and list(map(_ROLE, head)) == found.roles
                        and set(map(len, head)) == {2})
            except (KeyError, TypeError):
                return None
            return found if same else None
        return None


def _size(prefix: _Prefix) -> int:
    return prefix.encoded.size + _ENTRY_OVERHEAD * len(prefix.roles)


STRINGS = _EncodedStrings(budget_bytes=64 * 1024 * 1024)
PREFIXES = _Prefixes(budget_bytes=64 * 1024 * 1024)
