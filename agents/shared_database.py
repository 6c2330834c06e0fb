"""A database that several worker processes share (PostgreSQL across machines, an SQLite file on one machine).

The shared rate limit and the work claims both keep small tables in it, change them only by conditional
statements that are atomic in both engines, and read time from the database's own clock so that workers whose
clocks differ still agree. The engine, the clock and a table creation that tolerates a race live here once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

DATABASE_NOW = {"postgresql": "CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION)",
                "sqlite": "((julianday('now') - 2440587.5) * 86400.0)"}
"""Seconds since the epoch by the database's clock, per dialect."""


def shared_engine(url: str) -> Engine:
    """An engine on ``url``: connections checked before use on a server (one may have been dropped), and a
    long busy timeout on SQLite (several processes write one file)."""
    from sqlalchemy import create_engine

    sqlite = url.startswith("sqlite")
    return create_engine(url, pool_pre_ping=not sqlite, connect_args={"timeout": 30} if sqlite else {})


def database_now(engine: Engine) -> str:
    """The SQL expression of the database's clock in seconds (see ``DATABASE_NOW``)."""
    return DATABASE_NOW[engine.dialect.name]


def create_table(engine: Engine, definition: str) -> None:
    """``CREATE TABLE IF NOT EXISTS <definition>``, also when another process creates it at the same moment:
    PostgreSQL's IF NOT EXISTS is not atomic, and the loser fails on the catalog's unique index."""
    from sqlalchemy import text
    from sqlalchemy.exc import IntegrityError, ProgrammingError

    try:
        with engine.begin() as db:
            db.execute(text(f"CREATE TABLE IF NOT EXISTS {definition}"))
    except (IntegrityError, ProgrammingError):
        pass
