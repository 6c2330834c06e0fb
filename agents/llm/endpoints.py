"""The endpoints one gateway sends a model's requests to, and which of them takes the next attempt.

Several servers of one model (say a vLLM server per machine) share a run's load: each attempt goes to the endpoint
whose queue is shortest for its size, (in flight + waiting) / limit, counted on the endpoint's concurrency limit that
every gateway on that URL shares; ties go to the earlier endpoint, so a light load stays on the first one (and in
its prefix cache). An endpoint that failed rests for a back-off that grows with its failures in a row (a server that
is down is tried about once per back-off, not by every request); attempts go to the others meanwhile.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from memevo.agents.llm.limiter import ConcurrencyLimit
from memevo.agents.llm.transport import JSONTransport


class Route:
    """One endpoint as one gateway uses it: its shared limit, the gateway's HTTP client to it and what it did."""

    def __init__(self, url: str, limit: ConcurrencyLimit, transport: JSONTransport) -> None:
        self.url = url
        self.limit = limit
        self.transport = transport
        self.resting_until = 0.0  # time.monotonic() before which another endpoint is preferred
        self.served = 0
        self.failed = 0
        self.failed_in_a_row = 0

    def load(self) -> float:
        """Requests in flight or waiting here, per slot."""
        return (self.limit.in_flight + self.limit.waiting) / self.limit.limit

    def succeeded(self) -> None:
        self.served += 1
        self.failed_in_a_row = 0

    def failed_for(self, seconds: float) -> None:
        """Count a failure and prefer the other endpoints for ``seconds``."""
        self.failed += 1
        self.failed_in_a_row += 1
        self.resting_until = max(self.resting_until, time.monotonic() + seconds)

    def resting(self, now: float) -> bool:
        return self.resting_until > now


def next_route(routes: Sequence[Route]) -> Route:
    """The least loaded endpoint not resting; when all rest, the one whose rest ends first."""
    if len(routes) == 1:  # the common case, on every request: nothing to choose
        return routes[0]
    now = time.monotonic()
    awake = [route for route in routes if not route.resting(now)]
    if not awake:
        return min(routes, key=lambda route: route.resting_until)
    return min(awake, key=Route.load)  # min keeps the first of equals


def another_awake(routes: Sequence[Route], failed: Route) -> bool:
    """Whether an endpoint other than ``failed`` may take a retry now (then it need not wait out the back-off)."""
    now = time.monotonic()
    return any(route is not failed and not route.resting(now) for route in routes)
