"""Persistent response cache, so reruns of an evaluation cost no tokens and give identical replies.

The key is the SHA-256 of the canonical JSON of everything that shapes a reply: who answers (the
endpoint identity), model, messages, temperature, max_tokens, response format and the sample index
(distinct samples at temperature > 0). The endpoint identity is the base URL for a remote server, and
the GGUF file's content hash for the embedded model, whose port changes on every start: a reply from
one server is never served as another's, and the embedded model's replies survive restarts.
Stored with diskcache (SQLite underneath), which is safe across threads and processes. Writes go to one
background thread that commits whatever has queued up in one transaction, so a reply's caller does not
wait for SQLite; reads see queued writes at once. A write lost to a crash only costs a request again.
"""

from __future__ import annotations

import hashlib
import json
import queue
import threading
from collections import OrderedDict
from functools import cached_property
from pathlib import Path
from typing import Any

import diskcache
from pydantic import BaseModel, ConfigDict

from memevo.agents.llm.protocol import Message

KEY_VERSION = 2
"""Bump when the key layout changes, so stale entries are never read back (1 had no endpoint identity)."""
_BODY_HEAD = b'{"messages":'


class CacheRequest(BaseModel):
    """The parts of a request that decide its reply."""

    model_config = ConfigDict(frozen=True)

    endpoint: str
    model: str
    messages: list[Message]
    temperature: float
    max_tokens: int
    response_format: dict[str, Any] | None
    sample_index: int

    @cached_property
    def chat_body(self) -> bytes:
        """The chat completion request body (UTF-8 JSON) with the messages in canonical form, built in one piece:
        the key hashes the messages straight out of it, so a long history is copied once per call."""
        messages = b",".join(map(_message_json, self.messages))
        return b"".join([_BODY_HEAD, b"[", messages, b"]", self._body_tail])

    @property
    def messages_json(self) -> memoryview:
        """The messages' canonical JSON: a view into ``chat_body``, not a copy."""
        return memoryview(self.chat_body)[len(_BODY_HEAD) : len(self.chat_body) - len(self._body_tail)]

    @cached_property
    def _body_tail(self) -> bytes:
        fields = {"model": self.model, "temperature": self.temperature, "max_tokens": self.max_tokens}
        if self.response_format is not None:
            fields["response_format"] = self.response_format
        return ("".join(f',"{name}":{canonical_json(value)}' for name, value in fields.items()) + "}").encode()

    @cached_property
    def key(self) -> str:
        """SHA-256 of the canonical JSON of ``{"v": KEY_VERSION, **fields}``, computed once per request.

        The text is hashed in pieces around ``messages_json`` (keys in sorted order), so the messages,
        nearly all of a request, are encoded once per call and not again for the body.
        """
        fields = {
            "endpoint": self.endpoint, "max_tokens": self.max_tokens, "messages": None, "model": self.model,
            "response_format": self.response_format, "sample_index": self.sample_index,
            "temperature": self.temperature, "v": KEY_VERSION,
        }  # fmt: skip
        digest = hashlib.sha256(b"{")
        for position, (name, value) in enumerate(fields.items()):
            digest.update(f'{"," if position else ""}"{name}":'.encode())
            digest.update(self.messages_json if name == "messages" else canonical_json(value).encode("utf-8"))
        digest.update(b"}")
        return digest.hexdigest()


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, UTF-8 as is: one text per value."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _message_json(message: Message) -> bytes:
    """``canonical_json(message)`` as UTF-8; a ``{"role", "content"}`` message with a long content is encoded once
    per content string object."""
    if len(message) == 2 and "role" in message and "content" in message:
        return _STRINGS.message(message["role"], message["content"])
    return _encode_message(message)


def _encode_message(message: Message) -> bytes:
    return canonical_json(message).encode("utf-8")


class _EncodedStrings:
    """The JSON encoding of recently seen messages with long contents, by content object identity, within a
    byte budget.

    A native agent resends its whole history on every call as the very same string objects, so encoding
    each message once (instead of the whole history per call) removes most of the per-call CPU on long runs.
    An entry holds its string, so its id cannot be reused while the entry lives.
    """

    def __init__(self, budget_bytes: int, shortest: int = 256) -> None:
        self.budget_bytes = budget_bytes
        self.shortest = shortest
        self._entries: OrderedDict[int, tuple[str, str, bytes]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def message(self, role: str, content: str) -> bytes:
        """The canonical JSON of ``{"role": role, "content": content}``."""
        if not isinstance(content, str) or len(content) < self.shortest:
            return _encode_message({"role": role, "content": content})
        entry = self._entries.get(id(content))  # a racing eviction only costs an encoding
        if entry is not None and entry[0] is content and entry[1] == role:
            return entry[2]
        encoded = _encode_message({"role": role, "content": content})
        with self._lock:
            self._entries[id(content)] = (content, role, encoded)
            self._bytes += len(encoded)
            while self._bytes > self.budget_bytes and self._entries:
                self._bytes -= len(self._entries.popitem(last=False)[1][2])
        return encoded


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

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._store = diskcache.Cache(str(self.directory))
        self._pending: dict[str, str] = {}  # queued for the writer, not yet committed
        self._lock = threading.Lock()
        self._queue: queue.Queue[tuple[str, str] | None] = queue.Queue()
        self._writer = threading.Thread(target=self._write_batches, name="memevo-cache-writer", daemon=True)
        self._writer.start()

    def get(self, request: CacheRequest) -> CachedReply | None:
        with self._lock:
            raw = self._pending.get(request.key)
        if raw is None:
            raw = self._store.get(request.key)
        return None if raw is None else CachedReply.model_validate_json(raw)

    def put(self, request: CacheRequest, reply: CachedReply) -> None:
        raw = reply.model_dump_json()
        with self._lock:
            self._pending[request.key] = raw
        self._queue.put((request.key, raw))

    def flush(self) -> None:
        """Wait until every queued write is committed."""
        self._queue.join()

    def _write_batches(self) -> None:
        while True:
            batch = [self._queue.get()]
            while not self._queue.empty():
                batch.append(self._queue.get_nowait())
            entries = [entry for entry in batch if entry is not None]
            try:
                with self._store.transact():
                    for key, raw in entries:
                        self._store.set(key, raw)
                with self._lock:
                    for key, raw in entries:
                        if self._pending.get(key) is raw:
                            del self._pending[key]
            finally:
                for _ in batch:
                    self._queue.task_done()
            if len(entries) < len(batch):  # the stop signal from close()
                return

    def __len__(self) -> int:
        self.flush()
        return len(self._store)

    def close(self) -> None:
        """Commit what is queued, stop the writer and close the store."""
        if self._writer.is_alive():
            self._queue.put(None)
            self._writer.join()
        self._store.close()
