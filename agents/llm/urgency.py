"""Which of several ready requests goes first: the one whose caller has the most calls still to make in order.

Users of an evaluation wait on the endpoint in chains (a reply, then the next request built from it), so the
run lasts as long as its longest chain plus the client's own time between the links. When many replies land
at once, the event loop handles them one after the other, and a user that waits its turn at every link of a
long chain ends last. Serving the longest remaining chain first (list scheduling's critical-path rule) lets
users with slack wait instead. A caller announces its remaining chain with ``chain_remaining``; requests
outside any announced chain (a proposer, a generator, a baseline table) have urgency 0: their replies go on at
once, and when the endpoint's limit is reached they get a slot after the waiting chains' requests.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from weakref import WeakKeyDictionary


class Chain:
    """The calls one caller still has to make in order (an estimate: only the order of urgencies matters)."""

    def __init__(self, remaining: int) -> None:
        self.remaining = remaining

    def advance(self) -> None:
        """One link made."""
        self.remaining = max(0, self.remaining - 1)


_current: ContextVar[Chain | None] = ContextVar("memevo_chain", default=None)


@contextmanager
def chain_remaining(chain: Chain) -> Iterator[Chain]:
    """Requests made inside (in this task and the tasks it starts) carry ``chain``'s urgency."""
    token = _current.set(chain)
    try:
        yield chain
    finally:
        _current.reset(token)


def current_chain() -> Chain:
    """The chain announced by the caller (a throw-away one outside any: advancing it changes nothing)."""
    return _current.get() or Chain(0)


def urgency() -> int:
    """The remaining chain of the caller making a request now; 0 outside any chain."""
    chain = _current.get()
    return 0 if chain is None else chain.remaining


class _ReadyReplies:
    """Callers whose replies landed in the same turn of one event loop, released most urgent first on the next."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self._release_scheduled = False

    async def turn(self, urgency: int) -> None:
        future = self._loop.create_future()
        heapq.heappush(self._waiting, (-urgency, next(self._order), future))
        if not self._release_scheduled:
            # Runs after every callback already queued in this turn, so all replies of the turn are in.
            self._release_scheduled = True
            self._loop.call_soon(self._release)
        await future

    def _release(self) -> None:
        self._release_scheduled = False
        while self._waiting:
            _, _, future = heapq.heappop(self._waiting)
            if not future.done():
                future.set_result(None)


_ready: WeakKeyDictionary[asyncio.AbstractEventLoop, _ReadyReplies] = WeakKeyDictionary()


async def in_urgency_order() -> None:
    """Wait until the more urgent callers whose replies landed in this turn have gone on (no wait outside a
    chain)."""
    mine = urgency()
    if mine == 0:
        return
    loop = asyncio.get_running_loop()
    ready = _ready.get(loop)
    if ready is None:
        ready = _ready[loop] = _ReadyReplies(loop)
    await ready.turn(mine)
