"""Persistent response cache, so reruns of an evaluation cost no tokens and give identical replies.

The key is the SHA-256 of the canonical JSON of everything that shapes a reply: who answers (the
endpoint identity), model, messages, temperature, max_tokens, response format and the sample index
(distinct samples at temperature > 0). The endpoint identity is the base URL for a remote server, and
the GGUF file's content hash for the embedded model, whose port changes on every start: a reply from
one server is never served as another's, and the embedded model's replies survive restarts.
Stored with diskcache (SQLite underneath), which is safe across threads and processes.
"""

from __future__ import annotations

import hashlib
import json
from functools import cached_property
from pathlib import Path
from typing import Any

import diskcache
from pydantic import BaseModel, ConfigDict

from memevo.agents.llm.protocol import Message

KEY_VERSION = 2
"""Bump when the key layout changes, so stale entries are never read back (1 had no endpoint identity)."""


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
    def key(self) -> str:
        """Computed once per request, however often the cache is consulted."""
        payload = {"v": KEY_VERSION, **self.model_dump()}
        canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


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

    def get(self, request: CacheRequest) -> CachedReply | None:
        raw = self._store.get(request.key)
        return None if raw is None else CachedReply.model_validate_json(raw)

    def put(self, request: CacheRequest, reply: CachedReply) -> None:
        self._store.set(request.key, reply.model_dump_json())

    def __len__(self) -> int:
        return len(self._store)

    def close(self) -> None:
        self._store.close()
