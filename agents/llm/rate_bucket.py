"""A requests- and tokens-per-minute limit shared by every worker process: a token bucket kept in a database.

Workers on one machine or many, each with its own gateway, must together stay under one API key's limits. A
bucket is one row; a request takes from it in one conditional UPDATE (atomic in PostgreSQL and in SQLite), and
the refill is computed from the database's own clock, so workers whose clocks differ still agree. A bucket holds
at most ``burst_s`` seconds of its rate, so any minute sees at most the limit plus that burst. Tokens are taken
as an estimate before the request and settled with the count the endpoint reports after it (the level may go
below zero: the next request then waits for the debt to refill).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from memevo.agents.shared_database import create_table, database_now, shared_engine
from memevo.core.lazy_model import LazyModel

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

UNLIMITED = 1e15
"""The rate and size of a dimension that has no limit (large enough never to bind, small enough to add to)."""
TABLE = "memevo_rate_buckets"


class RateLimits(LazyModel):
    """One API key's limits; None: that dimension is not limited."""

    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    burst_s: float = 1.0


class SharedRateBucket:
    """The bucket ``name`` in the database at ``url`` (created on first use, shared by every process using it)."""

    def __init__(self, url: str, name: str, limits: RateLimits, *, max_wait_s: float = 1.0) -> None:
        self.name = name
        self.limits = limits
        self.max_wait_s = max_wait_s
        self.engine: Engine = shared_engine(url)
        self._now = database_now(self.engine)
        rpm, tpm = limits.requests_per_minute, limits.tokens_per_minute
        self._rates = {"r_rate": rpm / 60 if rpm else UNLIMITED, "t_rate": tpm / 60 if tpm else UNLIMITED}
        self._sizes = {"r_cap": max(1.0, self._rates["r_rate"] * limits.burst_s),
                       "t_cap": max(1.0, self._rates["t_rate"] * limits.burst_s)}
        self._create()

    def _create(self) -> None:
        from sqlalchemy import text
        from sqlalchemy.exc import IntegrityError

        create_table(self.engine, f"{TABLE} (name TEXT PRIMARY KEY, requests DOUBLE PRECISION NOT NULL, "
                     "tokens DOUBLE PRECISION NOT NULL, updated DOUBLE PRECISION NOT NULL)")
        try:
            with self.engine.begin() as db:
                db.execute(text(f"INSERT INTO {TABLE} (name, requests, tokens, updated) "
                                f"SELECT CAST(:name AS TEXT), {_real('r_cap')}, {_real('t_cap')}, {self._now} WHERE NOT EXISTS "
                                f"(SELECT 1 FROM {TABLE} WHERE name = :name)"), {"name": self.name, **self._sizes})
        except IntegrityError:  # inserted by another process meanwhile
            pass

    def _level(self, column: str, rate: str, cap: str) -> str:
        grown = f"{column} + ({self._now} - updated) * {_real(rate)}"
        return f"(CASE WHEN {grown} > {_real(cap)} THEN {_real(cap)} ELSE {grown} END)"

    def try_take(self, tokens: float) -> float:
        """Take one request and ``tokens``: 0.0 when granted, else the seconds to wait before trying again."""
        from sqlalchemy import text

        requests, token_level = self._level("requests", "r_rate", "r_cap"), self._level("tokens", "t_rate", "t_cap")
        values = {"name": self.name, "cost": tokens, **self._rates, **self._sizes}
        with self.engine.begin() as db:
            taken = db.execute(text(f"UPDATE {TABLE} SET requests = {requests} - 1, tokens = {token_level} - {_real('cost')}, "
                                    f"updated = {self._now} WHERE name = :name AND {requests} >= 1 "
                                    f"AND {token_level} > 0"), values).rowcount
            if taken:
                return 0.0
            row = db.execute(text(f"SELECT {requests}, {token_level} FROM {TABLE} WHERE name = :name"), values).one()
        short = max((1 - row[0]) / self._rates["r_rate"], -row[1] / self._rates["t_rate"], 0.001)
        return min(short, self.max_wait_s)

    async def take(self, tokens: float) -> None:
        """Wait until one request and ``tokens`` fit under the shared limits, then take them."""
        while (wait := await asyncio.to_thread(self.try_take, tokens)) > 0:
            await asyncio.sleep(wait)

    def settle(self, extra_tokens: float) -> None:
        """Charge tokens used beyond the estimate taken (a negative figure gives back what was not used)."""
        from sqlalchemy import text

        if extra_tokens == 0 or self.limits.tokens_per_minute is None:
            return
        with self.engine.begin() as db:
            db.execute(text(f"UPDATE {TABLE} SET tokens = tokens - {_real('extra')} WHERE name = :name"),
                       {"name": self.name, "extra": extra_tokens})

    def levels(self) -> tuple[float, float]:
        """Requests and tokens in the bucket now (for tests and the benchmark)."""
        from sqlalchemy import text

        values = {"name": self.name, **self._rates, **self._sizes}
        with self.engine.connect() as db:
            row = db.execute(text(f"SELECT {self._level('requests', 'r_rate', 'r_cap')}, "
                                  f"{self._level('tokens', 't_rate', 't_cap')} FROM {TABLE} WHERE name = :name"),
                             values).one()
        return float(row[0]), float(row[1])


def _real(parameter: str) -> str:
    """A bound number typed for PostgreSQL, which cannot infer the type of a parameter inside CASE."""
    return f"CAST(:{parameter} AS DOUBLE PRECISION)"
