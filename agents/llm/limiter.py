"""A concurrency limit shared by every event loop and thread that talks to one endpoint.

``asyncio.Semaphore`` binds to the first loop that waits on it, but a gateway is used from the main
loop, from DSPy's worker threads (through the sync bridge loop) and from tests' own loops. This
limiter keeps its count under a ``threading.Lock`` and wakes a waiter on that waiter's own loop, so
the peak number of in-flight requests never exceeds the limit whichever loops are involved. Waiters get a
freed slot most urgent first (see ``urgency``), in arrival order among equals.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from memevo.agents.llm.urgency import urgency

_Waiter = tuple[int, int, asyncio.AbstractEventLoop, "asyncio.Future[None]"]


class ConcurrencyLimit:
    """Counts in-flight requests; ``lower_to`` may only tighten the limit, never loosen it."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self._limit = limit
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

    def lower_to(self, limit: int) -> None:
        """Apply a smaller limit (another config sharing the endpoint asked for less)."""
        with self._lock:
            self._limit = min(self._limit, limit)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        await self._acquire()
        try:
            yield
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
