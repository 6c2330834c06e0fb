"""Persistent response cache, so reruns of an evaluation cost no tokens and give identical replies.

The key is the SHA-256 of the canonical JSON of everything that shapes a reply: who answers (the
endpoint identity), model, messages (each by its own SHA-256), temperature, max_tokens, response format and
the sample index (distinct samples at temperature > 0). The endpoint identity is the base URL for a remote server, and
the GGUF file's content hash for the embedded model, whose port changes on every start: a reply from
one server is never served as another's, and the embedded model's replies survive restarts.
Stored with diskcache (SQLite underneath), which is safe across threads and processes. Writes go to one
background thread, woken by the first write of an idle spell, that waits ``WRITE_DELAY_S`` and commits
whatever has queued up in one transaction, so a reply's caller does not
wait for SQLite; reads see queued writes at once. Until it is committed, a reply is also in a journal file of
this process (``memevo.agents.llm.cache_journal``), written before ``put`` returns: the next process to open the
cache commits what a killed one left there, so no reply is asked for twice. The cache is culled to its size limit
when it closes, not on every write.
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
import threading
from functools import cached_property
from json.encoder import encode_basestring  # type: ignore[attr-defined]  # the C encoder's
from pathlib import Path
from typing import Any

import diskcache
from pydantic import ConfigDict, SkipValidation

from memevo.agents.llm.cache_journal import JOURNAL_FOLDER, Journal, dead_journals
from memevo.agents.llm.encoded_messages import PREFIXES, EncodedMessages, canonical_json
from memevo.agents.llm.protocol import Message
from memevo.core.errors import UserInputError
from memevo.core.lazy_model import LazyModel

KEY_VERSION = 3
"""Bump when the key layout changes, so stale entries are never read back (1 had no endpoint identity, 2 hashed
the messages' whole text on every call)."""


class CacheRequest(LazyModel):
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
    def _encoded(self) -> EncodedMessages:
        """The messages as key text and body chunks, from what earlier requests with the same start left (see
        ``memevo.agents.llm.encoded_messages``)."""
        return PREFIXES.encode(self.messages)

    @cached_property
    def _format_json(self) -> str:
        return canonical_json(self.response_format)

    def chat_body(self) -> list[bytes]:
        """The chat completion request body (UTF-8 JSON, the messages in canonical form) as parts to send in order:
        a long history is sent as the chunks joined for an earlier request, not copied into one buffer per call."""
        tail = (f'],"model":{_json_string(self.model)},"temperature":{_json_number(self.temperature)},'
                f'"max_tokens":{self.max_tokens}')
        if self.response_format is not None:
            tail += f',"response_format":{self._format_json}'
        return self._encoded.body((tail + "}").encode("utf-8"))

    @cached_property
    def key(self) -> str:
        """SHA-256 of the canonical JSON of ``{"v": KEY_VERSION, **fields}`` in which ``messages`` is the list of
        each message's own SHA-256 (hex, of its canonical JSON).

        A message's digest is computed once per content object, and the digests of a request's messages but the
        last are kept for the next request that starts with them (see ``_encoded``), so a native agent's
        history, resent whole on every call, is not hashed again on every call. The JSON is put together from its
        fields in sorted order rather than by the JSON encoder (~4 times cheaper; a test holds it to the encoder's
        text, and to every field of this model).
        """
        digests = self._encoded.digests
        whole = (f'{{"endpoint":{_json_string(self.endpoint)},"max_tokens":{self.max_tokens},'
                 f'"messages":{f"""["{digests}"]""" if self.messages else "[]"},"model":{_json_string(self.model)},'
                 f'"response_format":{self._format_json},"sample_index":{self.sample_index},'
                 f'"temperature":{_json_number(self.temperature)},"v":{KEY_VERSION}}}')
        return hashlib.sha256(whole.encode("utf-8")).hexdigest()


def _json_string(text: str) -> str:
    return encode_basestring(text)


def _json_number(number: float) -> str:
    return float.__repr__(number) if math.isfinite(number) else canonical_json(number)


WRITE_DELAY_S = 0.25
"""How long the writer waits after being woken, so the replies of that spell share one transaction. Each wake-up and
each commit costs CPU (measured on the 2-core benchmark machine: ~60 us per sleep and wake of a thread, and a cache
key that takes 27 us back to back took ~210 us more after a 10 ms sleep; the writer spent ~0.58 ms per call, wake-ups
included, when at 0.05 s a run with one call in flight woke it and committed once per call). A kill loses none of
the replies waiting meanwhile: they are in the journal; a flush or a close commits at once."""


def _commit_dead_journals(store: diskcache.Cache, folder: Path) -> None:
    """Commit the replies that killed processes left in their journals. Added, not set: a reply another process
    committed meanwhile for the same key stays the one every later run reads."""
    for journal in dead_journals(folder):
        with store.transact():
            for key, raw in journal.entries():
                store.add(key, raw)
        journal.discard()


class CachedReply(LazyModel):
    """What is stored per key: enough to rebuild the original ``ChatReply`` exactly."""

    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None


class ResponseCache:
    """A directory-backed map from request key to reply."""

    def __init__(self, directory: Path, write_delay_s: float = WRITE_DELAY_S) -> None:
        self.directory = Path(directory)  # made by the store as it opens, when missing
        self.write_delay_s = write_delay_s
        self._opened = threading.Event()
        self._opened_store: diskcache.Cache | None = None
        self._open_failure = ""  # why the store could not be opened
        self._pending: dict[str, str] = {}  # put, not yet committed
        self._unwritten: list[tuple[str, str]] = []  # put, not yet taken by the writer
        self._journal: Journal | None = None  # holds ``_unwritten``; made by the first put of a batch
        self._puts = self._commits = 0  # entries put / committed (or given up on a failed write)
        self._stopping = False
        self._lock = threading.Lock()
        self._committed = threading.Condition(self._lock)
        self._wake = threading.Event()
        self._hurry = threading.Event()  # set: commit what is queued without waiting for more (a flush, a close)
        self._writer = threading.Thread(target=self._open_then_write, name="memevo-cache-writer", daemon=True)
        self._writer.start()

    @property
    def _store(self) -> diskcache.Cache:
        """The store, once the writer has opened it: opening a new one took 11-20 ms, mostly waiting on the disk,
        which the writer spends while the run's start goes on (connecting, the first prompts)."""
        self._opened.wait()
        if self._opened_store is None:
            raise UserInputError(f"the LLM response cache cannot be opened ({self._open_failure}); remove it, point "
                                 "$MEMEVO_CACHE_DIR elsewhere or pass --no-cache", source=str(self.directory))
        return self._opened_store

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
            if self._journal is None:
                self._journal = Journal(self.directory / JOURNAL_FOLDER)
            self._journal.append(request.key, raw)
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
        self._hurry.set()
        self._wake.set()
        with self._committed:
            while self._commits < target and self._writer.is_alive():
                self._committed.wait(0.1)
        if not self._stopping:
            self._hurry.clear()

    def _open_then_write(self) -> None:
        try:
            store = diskcache.Cache(str(self.directory))
            # No cull on each write (this instance only; the folder's settings are left as they are): it queried
            # expired entries and the database's size per entry, half of a write's CPU (~55 of ~115 us, on a
            # thread that holds the GIL meanwhile). ``close`` culls once instead.
            store.reset("cull_limit", 0, update=False)
            _commit_dead_journals(store, self.directory / JOURNAL_FOLDER)
            self._opened_store = store
        except (sqlite3.Error, OSError) as error:  # not a database, a folder it may not make or write
            self._open_failure = str(error)
        finally:
            self._opened.set()
        if self._opened_store is not None:
            self._write_batches()

    def _write_batches(self) -> None:
        while True:
            self._wake.wait()
            self._hurry.wait(self.write_delay_s)  # let the replies arriving meanwhile join this transaction
            with self._lock:
                batch, self._unwritten = self._unwritten, []
                journal, self._journal = self._journal, None
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
                if journal is not None:
                    journal.discard()
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
        self._opened.wait()
        if self._opened_store is None:
            return  # never opened: nothing to commit to or close
        if self._writer.is_alive():
            with self._lock:
                self._stopping = True
            self._hurry.set()  # a writer waiting for more replies commits at once: a run's end does not wait it out
            self._wake.set()
            self._writer.join()
            self._store.cull()  # what the writes left out: expired entries, and the oldest beyond the size limit
        self._store.close()
