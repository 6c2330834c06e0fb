"""Per-role usage and estimated spend, so every run can say what it cost and who spent it.

Token counts include cache hits (they measure the workload, which stays the same on a rerun);
dollars include only requests that reached an endpoint (the money actually spent). Prices come from ``pricing``
(the config's ``price``, else litellm's model table, else free for a server on this machine); a call no price is
known for costs 0 and is counted in ``unpriced_calls``, so a report never pretends a paid model was free.

A request is booked (``book``) before it is sent and settled by the count of its answer or its failure, in one
count with it: a process killed in between leaves it booked, counted in ``unknown_calls`` (the endpoint may have
served and billed it) rather than missing from the usage. A request the run itself stopped waiting for (a pruned or
stopped play cancels its task) is settled as cancelled: its cost is not known either, but nobody killed anything.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Self

from memevo.agents.llm.pricing import TABLE_PRICING, Pricing
from memevo.core.lazy_model import LazyModel

UNPRICED_FIX = "no known price: set llm.price"


class Tally(LazyModel):
    """Usage figures that add up field by field."""

    def plus(self, other: Self) -> Self:
        return type(self)(**{name: getattr(self, name) + getattr(other, name) for name in type(self).model_fields})

    def minus(self, other: Self) -> Self:
        return type(self)(**{name: getattr(self, name) - getattr(other, name) for name in type(self).model_fields})


class RoleUsage(Tally):
    """Totals for one role. ``calls`` counts completed replies, cached or not."""

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall_s: float = 0.0
    dollars: float = 0.0
    errors: int = 0
    retries: int = 0
    unpriced_calls: int = 0
    unknown_calls: int = 0
    """Requests sent whose answer no count recorded: in flight, or lost to a kill. Neither their tokens nor their
    dollars are known; the endpoint may have served them."""
    cancelled_calls: int = 0
    """Requests sent that the run stopped waiting for (their task was cancelled): the endpoint may have served them,
    at a cost not known."""


class EndpointUsage(Tally):
    """What one server (a base URL) was sent: requests it answered, attempts that failed there (each retry is one),
    and the tokens of its answers. Cache hits reach no server and are not here."""

    requests: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class UsageReport(LazyModel):
    """A snapshot of usage by role, and of the requests by server (``llm.extra_base_urls`` spreads a role over
    several)."""

    by_role: dict[str, RoleUsage] = {}
    by_endpoint: dict[str, EndpointUsage] = {}

    def total(self) -> RoleUsage:
        total = RoleUsage()
        for usage in self.by_role.values():
            total = total.plus(usage)
        return total

    def minus(self, other: UsageReport) -> UsageReport:
        """Usage between ``other`` (the earlier snapshot) and this one."""
        return UsageReport(
            by_role={
                role: usage.minus(other.by_role.get(role, RoleUsage())) for role, usage in self.by_role.items()
            }
        )


Counts = dict[str, float]
"""Some fields of a ``RoleUsage`` as plain numbers, the non-zero ones in field order: what one count adds. Plain
dictionaries because a count is made on every call, where building and adding pydantic models cost more."""
_ZERO_ROLE: Counts = RoleUsage().model_dump()
_ZERO_ENDPOINT: Counts = EndpointUsage().model_dump()


def _add_into(table: dict[str, Counts], key: str, counts: Counts, zero: Counts) -> None:
    """Add ``counts`` to the totals of ``key`` in ``table``, starting them at ``zero``; the caller holds the lock."""
    totals = table.get(key)
    if totals is None:
        totals = table[key] = dict(zero)
    for name, value in counts.items():
        totals[name] += value


def _nonzero(**fields: float) -> Counts:
    return {name: value for name, value in fields.items() if value}


_charged: ContextVar[tuple[Accounting, ...]] = ContextVar("memevo_charged_accountings", default=())


@contextmanager
def charged_to(accounting: Accounting) -> Iterator[None]:
    """Calls counted inside (in this task and the tasks it starts) are also counted in ``accounting``: the usage of
    one piece of work, such as one candidate's episodes, among others sharing a hub."""
    token = _charged.set((*_charged.get(), accounting))
    try:
        yield
    finally:
        _charged.reset(token)


class Accounting:
    """Thread-safe accumulator shared by all gateways of a hub.

    Other accountings can be attached (``attach``): each also counts every later call, e.g. the usage
    ledger of one run among several that share a hub."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_role: dict[str, Counts] = {}
        self._by_endpoint: dict[str, Counts] = {}
        self._attached: tuple[Accounting, ...] = ()

    def attach(self, other: Accounting) -> None:
        """Count every later call in ``other`` too (until ``detach``)."""
        self._attached = (*self._attached, other)

    def detach(self, other: Accounting) -> None:
        self._attached = tuple(attached for attached in self._attached if attached is not other)

    def book(self, role: str) -> None:
        """A request is about to be sent: it counts as unknown until the count of its answer or failure settles it
        (``booked=True``)."""
        self._count(role, {"unknown_calls": 1})

    def record_call(
        self,
        role: str,
        *,
        model: str,
        prompt_tokens: int,
        completion_tokens: int,
        wall_s: float,
        cached: bool,
        sent_prompt_tokens: int | None = None,
        booked: bool = False,
        pricing: Pricing = TABLE_PRICING,
    ) -> None:
        """Count one call of ``model``, priced by ``pricing``. Tokens include cache hits (the workload); dollars only
        what reached the endpoint.

        ``sent_prompt_tokens`` is for a call answered partly from the cache (a batch of embeddings):
        the share of ``prompt_tokens`` that was actually sent. By default all of it, or none when cached.
        ``booked``: the call's request was booked, and this count settles it.
        """
        prices = None if cached else pricing.price_for(model)
        dollars = 0.0
        if prices is not None:
            dollars = prices.dollars(prompt_tokens if sent_prompt_tokens is None else sent_prompt_tokens,
                                     completion_tokens)
        self._count(role, _nonzero(
            calls=1,
            cache_hits=int(cached),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            wall_s=wall_s,
            dollars=dollars,
            unpriced_calls=int(prices is None and not cached),
            unknown_calls=-int(booked),
        ))

    def record_error(self, role: str, *, wall_s: float = 0.0, booked: bool = False) -> None:
        """Count one failed call; ``booked``: its request was booked, and this count settles it."""
        self._count(role, _nonzero(wall_s=wall_s, errors=1, unknown_calls=-int(booked)))

    def record_cancel(self, role: str) -> None:
        """Settle a booked request whose task was cancelled before its answer came."""
        self._count(role, {"unknown_calls": -1, "cancelled_calls": 1})

    def record_retry(self, role: str) -> None:
        self._count(role, {"retries": 1})

    def record_endpoint(self, url: str, completion: Mapping[str, Any] | None) -> None:
        """One attempt at the server ``url``: answered (``completion``, whose usage gives the tokens) or failed
        (None)."""
        if completion is None:
            self._add_endpoint(url, {"failures": 1})
            return
        usage = completion.get("usage") or {}
        self._add_endpoint(url, _nonzero(requests=1, prompt_tokens=usage.get("prompt_tokens") or 0,
                                         completion_tokens=usage.get("completion_tokens") or 0))

    def _count(self, role: str, counts: Counts) -> None:
        """Add a call's ``counts`` here and in the accountings it is charged to (``charged_to``)."""
        self._add(role, counts)
        for charged in _charged.get():
            charged._add(role, counts)

    def _add_endpoint(self, url: str, counts: Counts) -> None:
        with self._lock:
            _add_into(self._by_endpoint, url, counts, _ZERO_ENDPOINT)
        for attached in self._attached:
            attached._add_endpoint(url, counts)

    def _add(self, role: str, counts: Counts) -> None:
        with self._lock:
            _add_into(self._by_role, role, counts, _ZERO_ROLE)
        for attached in self._attached:
            attached._add(role, counts)

    def report(self) -> UsageReport:
        with self._lock:
            return UsageReport(by_role={role: RoleUsage(**totals) for role, totals in self._by_role.items()},
                               by_endpoint={url: EndpointUsage(**totals) for url, totals in self._by_endpoint.items()})


def dollars_text(usage: RoleUsage) -> str:
    """The spend in dollars, or why there is no dollar figure (cached, or a model without a known price: the fix is
    named, since the model was named when its first call went out)."""
    billed = usage.calls - usage.cache_hits
    if billed == 0:
        return "$0 (every reply came from the cache)" if usage.calls else "$0 (no calls)"
    if usage.unpriced_calls >= billed:
        return f"unpriced ({UNPRICED_FIX})"
    not_known = usage.unknown_calls + usage.cancelled_calls
    unknown = f" + {not_known} call(s) of unknown cost" if not_known else ""
    if usage.unpriced_calls:
        return f"${usage.dollars:.4f} + {usage.unpriced_calls} unpriced call(s){unknown} ({UNPRICED_FIX})"
    return f"${usage.dollars:.4f}{unknown}"


def priced_dollars(usage: RoleUsage) -> float | None:
    """The dollars of the priced calls; None when every billed call is unpriced (a 0 would read as free)."""
    billed = usage.calls - usage.cache_hits
    return None if billed and usage.unpriced_calls >= billed else usage.dollars


def dollars_cell(usage: RoleUsage) -> str:
    """The spend for a table cell: ``$0.0123``, ``unpriced``, or ``$0.0123 + unpriced`` when some calls had no
    price (a 0.0000 would read as free)."""
    dollars = priced_dollars(usage)
    if dollars is None:
        return "unpriced"
    return f"${dollars:.4f}" + (" + unpriced" if usage.unpriced_calls else "")
