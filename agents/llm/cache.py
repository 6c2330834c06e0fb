"""Persistent response cache, so reruns of an evaluation cost no tokens and give identical replies.

The key is the SHA-256 of the canonical JSON of everything that shapes a reply: who answers (the
endpoint identity), model, messages (each by its own SHA-256), temperature, max_tokens, response format and
the sample index (distinct samples at temperature > 0). The endpoint identity is the base URL for a remote server, and
the GGUF file's content hash for the embedded model, whose port changes on every start: a reply from
one server is never served as another's, and the embedded model's replies survive restarts.
Stored with diskcache (SQLite underneath), which is safe across threads and processes. Writes go to one
background thread, woken by the first write of an idle spell, that waits ``WRITE_DELAY_S`` and commits
whatever has queued up in one transaction, so a reply's caller does not
wait for SQLite; reads see queued writes at once. A write lost to a crash only costs a request again.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property
from json.encoder import encode_basestring  # type: ignore[attr-defined]  # the C encoder's
from pathlib import Path
from typing import Any

import diskcache
from pydantic import BaseModel, ConfigDict, SkipValidation

from memevo.agents.llm.protocol import Message

KEY_VERSION = 3
"""Bump when the key layout changes, so stale entries are never read back (1 had no endpoint identity, 2 hashed
the messages' whole text on every call)."""
_BODY_HEAD = b'{"messages":['


class CacheRequest(BaseModel):
    """The parts of a request that decide its reply."""

    model_config = ConfigDict(frozen=True)

    endpoint: str
    model: str
    messages: SkipValidation[list[Message]]
    """Taken as given: validating them copied every message of a long history on every call."""
    temperature: float
    max_tokens: int
    response_format: dict[str, Any] | None
    sample_index: int

    @cached_property
    def encoded_messages(self) -> list[_Encoded]:
        """Each message's canonical encoding (and digest, when asked), looked up once for both key and body."""
        return _STRINGS.entries(self.messages)

    @cached_property
    def _format_json(self) -> str:
        return canonical_json(self.response_format)

    def chat_body(self) -> list[bytes]:
        """The chat completion request body (UTF-8 JSON, the messages in canonical form) as parts to send in order:
        a long history's messages are their cached encodings, not copied into one buffer per call."""
        parts = [_BODY_HEAD]
        for position, entry in enumerate(self.encoded_messages):
            if position:
                parts.append(b",")
            parts.append(entry.json)
        tail = (f'],"model":{_json_string(self.model)},"temperature":{_json_number(self.temperature)},'
                f'"max_tokens":{self.max_tokens}')
        if self.response_format is not None:
            tail += f',"response_format":{self._format_json}'
        parts.append((tail + "}").encode("utf-8"))
        return parts

    @cached_property
    def key(self) -> str:
        """SHA-256 of the canonical JSON of ``{"v": KEY_VERSION, **fields}`` in which ``messages`` is the list of
        each message's own SHA-256 (hex, of its canonical JSON).

        A long message's digest is computed once per content object (see ``_EncodedStrings``), so a native
        agent's history, resent whole on every call, is not hashed again on every call. The JSON is put together
        from its fields in sorted order rather than by the JSON encoder (~4 times cheaper; a test holds it to
        the encoder's text, and to every field of this model).
        """
        digests = '","'.join(entry.hex_digest() for entry in self.encoded_messages)
        whole = (f'{{"endpoint":{_json_string(self.endpoint)},"max_tokens":{self.max_tokens},'
                 f'"messages":{f"""["{digests}"]""" if self.messages else "[]"},"model":{_json_string(self.model)},'
                 f'"response_format":{self._format_json},"sample_index":{self.sample_index},'
                 f'"temperature":{_json_number(self.temperature)},"v":{KEY_VERSION}}}')
        return hashlib.sha256(whole.encode("utf-8")).hexdigest()


def _json_string(text: str) -> str:
    return encode_basestring(text)


def _json_number(number: float) -> str:
    return float.__repr__(number) if math.isfinite(number) else canonical_json(number)


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, UTF-8 as is: one text per value."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _encode_message(message: Message) -> bytes:
    return canonical_json(message).encode("utf-8")


class _EncodedStrings:
    """The JSON encoding and its SHA-256 of recently seen messages, by content object identity, within a byte budget.

    A native agent resends its whole history on every call as the very same string objects, so encoding and
    hashing each message once (instead of the whole history per call) removes most of the per-call CPU on long
    runs. An entry holds its string, so its id cannot be reused while the entry lives.
    """

    def __init__(self, budget_bytes: int) -> None:
        self.budget_bytes = budget_bytes
        self._entries: OrderedDict[int, _Encoded] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def entries(self, messages: list[Message]) -> list[_Encoded]:
        """``entry`` of each message, with the common case (a known content object) inlined: a native agent's
        history has hundreds of messages, looked up on every call."""
        known = self._entries.get
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
        if len(message) != 2 or not isinstance(role, str) or not isinstance(content, str):
            return _Encoded(content, role, _encode_message(message))
        entry = self._entries.get(id(content))  # a racing eviction only costs an encoding
        if entry is not None and entry.content is content and entry.role == role:
            return entry
        entry = _Encoded(content, role, _encode_message(message))
        with self._lock:
            self._entries[id(content)] = entry
            self._bytes += len(entry.json) + _ENTRY_OVERHEAD
            while self._bytes > self.budget_bytes and self._entries:
                self._bytes -= len(self._entries.popitem(last=False)[1].json) + _ENTRY_OVERHEAD
        return entry


@dataclass(slots=True)
class _Encoded:
    content: Any
    role: Any
    json: bytes
    digest: str | None = None

    def hex_digest(self) -> str:
        if self.digest is None:
            self.digest = hashlib.sha256(self.json).hexdigest()
        return self.digest


WRITE_DELAY_S = 0.05
"""How long the writer waits after being woken, so the replies of that spell share one transaction."""
_ENTRY_OVERHEAD = 200
"""Bytes an entry takes besides its JSON (entry, digest, dictionary slot), counted against the budget."""
_STRINGS = _EncodedStrings(budget_bytes=64 * 1024 * 1024)


class CachedReply(BaseModel):
    """What is stored per key: enough to rebuild the original ``ChatReply`` exactly."""

    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None


class ResponseCache:
    """A directory-backed map from request key to reply."""

    def __init__(self, directory: Path, write_delay_s: float = WRITE_DELAY_S) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.write_delay_s = write_delay_s
        self._store = diskcache.Cache(str(self.directory))
        self._pending: dict[str, str] = {}  # put, not yet committed
        self._unwritten: list[tuple[str, str]] = []  # put, not yet taken by the writer
        self._puts = self._commits = 0  # entries put / committed (or given up on a failed write)
        self._stopping = False
        self._lock = threading.Lock()
        self._committed = threading.Condition(self._lock)
        self._wake = threading.Event()
        self._writer = threading.Thread(target=self._write_batches, name="memevo-cache-writer", daemon=True)
        self._writer.start()

    def get(self, request: CacheRequest) -> CachedReply | None:
        with self._lock:
            raw = self._pending.get(request.key)
        if raw is None:
            raw = self._store.get(request.key)
        return None if raw is None else CachedReply.model_validate_json(raw)

    def put(self, request: CacheRequest, reply: CachedReply) -> None:
        """Queue ``reply`` for the writer; only the first put of an idle spell wakes it (a thread wake-up per call
        cost ~30 us of CPU, and each woke the writer for a one-entry transaction)."""
        raw = reply.model_dump_json()
        with self._lock:
            self._pending[request.key] = raw
            self._unwritten.append((request.key, raw))
            self._puts += 1
            first = len(self._unwritten) == 1
        if first:
            self._wake.set()

    def flush(self) -> None:
        """Wait until every queued write is committed."""
        with self._lock:
            target = self._puts
        self._wake.set()
        with self._committed:
            while self._commits < target and self._writer.is_alive():
                self._committed.wait(0.1)

    def _write_batches(self) -> None:
        while True:
            self._wake.wait()
            if not self._stopping:
                time.sleep(self.write_delay_s)  # let the replies arriving meanwhile join this transaction
            with self._lock:
                batch, self._unwritten = self._unwritten, []
                self._wake.clear()
                stopping = self._stopping
            try:
                if batch:
                    with self._store.transact():
                        for key, raw in batch:
                            self._store.set(key, raw)
                with self._lock:
                    for key, raw in batch:
                        if self._pending.get(key) is raw:
                            del self._pending[key]
            finally:
                with self._committed:
                    self._commits += len(batch)
                    self._committed.notify_all()
            if stopping:
                return

    def __len__(self) -> int:
        self.flush()
        return len(self._store)

    def close(self) -> None:
        """Commit what is queued, stop the writer and close the store."""
        if self._writer.is_alive():
            with self._lock:
                self._stopping = True
            self._wake.set()
            self._writer.join()
        self._store.close()
