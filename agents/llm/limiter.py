"""A concurrency limit shared by every event loop and thread that talks to one endpoint.

``asyncio.Semaphore`` binds to the first loop that waits on it, but a gateway is used from the main
loop, from DSPy's worker threads (through the sync bridge loop) and from tests' own loops. This
limiter keeps its count under a ``threading.Lock`` and wakes a waiter on that waiter's own loop, so
the peak number of in-flight requests never exceeds the limit whichever loops are involved. Waiters get a
freed slot most urgent first (see ``urgency``), in arrival order among equals.

With a ``SharedRateBucket`` the limiter also holds the endpoint's requests and tokens per minute across every
worker process: a request that has a slot then waits for the bucket, and its ``RateTicket`` settles the tokens
the endpoint reports. ``shared_rate_from_env`` reads those limits from the environment.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import json
import os
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from memevo.agents.llm.rate_bucket import RateLimits, SharedRateBucket
from memevo.agents.llm.urgency import urgency
from memevo.core.errors import UserInputError

RPM_ENV, TPM_ENV, RATE_STORE_ENV, RATE_KEY_ENV = ("MEMEVO_REQUESTS_PER_MINUTE", "MEMEVO_TOKENS_PER_MINUTE",
                                                  "MEMEVO_RATE_STORE", "MEMEVO_RATE_KEY")
CHARS_PER_TOKEN = 4
"""The estimate of a request's tokens before the endpoint counts them (settled with its count after)."""

_Waiter = tuple[int, int, asyncio.AbstractEventLoop, "asyncio.Future[None]"]


class ConcurrencyLimit:
    """Counts in-flight requests; ``lower_to`` may only tighten the limit, never loosen it."""

    def __init__(self, limit: int, rate: SharedRateBucket | None = None) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self._limit = limit
        self.rate = rate
        self._in_flight = 0
        self._lock = threading.Lock()
        self._waiters: list[_Waiter] = []  # a heap: most urgent, then earliest, first
        self._arrivals = itertools.count()

    @property
    def limit(self) -> int:
        return self._limit

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @property
    def waiting(self) -> int:
        """Requests waiting for a slot."""
        return len(self._waiters)

    def lower_to(self, limit: int) -> None:
        """Apply a smaller limit (another config sharing the endpoint asked for less)."""
        with self._lock:
            self._limit = min(self._limit, limit)

    @asynccontextmanager
    async def slot(self, payload: Any = None) -> AsyncIterator[RateTicket]:
        """A slot for one request with ``payload`` (its tokens estimated for the shared rate limit, if any)."""
        await self._acquire()
        try:
            ticket = RateTicket(self.rate, estimate_tokens(payload) if self.rate is not None else 0)
            if self.rate is not None:
                await self.rate.take(ticket.estimate)
            yield ticket
        finally:
            self._release()

    async def _acquire(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._in_flight < self._limit and not self._waiters:
                self._in_flight += 1
                return
            entry = (-urgency(), next(self._arrivals), loop, loop.create_future())
            heapq.heappush(self._waiters, entry)
        future = entry[3]
        try:
            await future
        except asyncio.CancelledError:
            with self._lock:
                queued = entry in self._waiters
                if queued:
                    self._waiters.remove(entry)
                    heapq.heapify(self._waiters)
            # Not queued any more means the slot was handed over: give it back unless the
            # hand-over callback will do so itself (it does when it finds the future cancelled).
            if not queued and future.done() and not future.cancelled():
                self._release()
            raise

    def _release(self) -> None:
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        with self._lock:
            while self._waiters and self._in_flight <= self._limit:
                _, _, loop, future = heapq.heappop(self._waiters)
                try:
                    # The slot passes to the waiter without the count changing; on this very loop without waking
                    # it through its self-pipe (a syscall per hand-over when every slot is taken).
                    if loop is here:
                        loop.call_soon(self._hand_over, future)
                    else:
                        loop.call_soon_threadsafe(self._hand_over, future)
                    return
                except RuntimeError:  # that waiter's loop is closed: try the next one
                    continue
            self._in_flight -= 1

    def _hand_over(self, future: asyncio.Future[None]) -> None:
        if future.cancelled():
            self._release()
        else:
            future.set_result(None)


class RateTicket:
    """The tokens a request took from the shared bucket; ``settle`` charges what the endpoint counted instead."""

    def __init__(self, rate: SharedRateBucket | None, estimate: int) -> None:
        self.rate = rate
        self.estimate = estimate

    def settle(self, completion: Any) -> None:
        usage = completion.get("usage") if isinstance(completion, Mapping) else None
        used = usage.get("total_tokens") if isinstance(usage, Mapping) else None
        if self.rate is not None and isinstance(used, int):
            self.rate.settle(used - self.estimate)


def estimate_tokens(payload: Any) -> int:
    """A request's prompt tokens before the endpoint counts them: its JSON body (encoded already, as bytes or
    parts of bytes, or a mapping) at ~4 characters a token."""
    if isinstance(payload, bytes):
        size = len(payload)
    elif isinstance(payload, Sequence) and all(isinstance(part, bytes) for part in payload):
        size = sum(len(part) for part in payload)
    else:
        size = len(json.dumps(payload, default=str))
    return max(1, size // CHARS_PER_TOKEN)


def shared_rate_from_env(endpoint: str, cache_dir: Path, environ: Mapping[str, str] = os.environ) -> SharedRateBucket | None:
    """The shared bucket of ``endpoint`` when ``$MEMEVO_REQUESTS_PER_MINUTE`` or ``$MEMEVO_TOKENS_PER_MINUTE`` is set.

    It lives in ``$MEMEVO_RATE_STORE`` (a database URL every worker reaches, e.g. the workers' PostgreSQL), else in
    an SQLite file in the response cache folder (workers on this machine). ``$MEMEVO_RATE_KEY`` names the bucket
    (default: the endpoint's URL): several endpoints served under one API key share its limit by naming one key."""
    limits = {field: _positive(environ, name) for field, name in
              (("requests_per_minute", RPM_ENV), ("tokens_per_minute", TPM_ENV))}
    if not any(limits.values()):
        return None
    store = environ.get(RATE_STORE_ENV) or f"sqlite:///{cache_dir / 'rate-limits.db'}"
    if RATE_STORE_ENV not in environ:
        cache_dir.mkdir(parents=True, exist_ok=True)
    return SharedRateBucket(store, environ.get(RATE_KEY_ENV) or endpoint, RateLimits(**limits))


def _positive(environ: Mapping[str, str], name: str) -> float | None:
    raw = environ.get(name)
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if value <= 0:
        raise UserInputError(f"must be a positive number per minute, got {raw!r}", source="environment", field=name)
    return value
