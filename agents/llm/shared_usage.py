"""One usage ledger for every worker process of a run, in the database they share (``shared_database``).

Each worker counts its calls as any ``Accounting`` does and keeps its totals in its own row (job, worker, role),
written by a background thread every ``flush_s`` and before every ``report``; a report sums the rows of every
worker of the job. So a budget judged on it counts the calls of all workers, up to the last ``flush_s`` of the
others' (the calls in flight at that moment); a worker killed loses at most its last ``flush_s`` of counts here
(its run folder's ledger file keeps them). Rows are only ever replaced by their own worker: no lost update.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memevo.agents.llm.accounting import Accounting, Counts, EndpointUsage, RoleUsage, UsageReport
from memevo.agents.shared_database import create_table, shared_engine

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

TABLE = "memevo_usage"
FIELDS = tuple(RoleUsage.model_fields)
WHOLE = {name for name, field in RoleUsage.model_fields.items() if field.annotation is int}
SERVER = "@"
"""A row whose role starts with it holds a server's requests (``@<url>``), in the columns of the same names:
calls are its answered requests, errors its failed attempts."""
AS_COLUMNS = {"requests": "calls", "failures": "errors", "prompt_tokens": "prompt_tokens",
              "completion_tokens": "completion_tokens"}


def _role_usage(sums: Sequence[float]) -> RoleUsage:
    """A role's sums as read back (every column is a float in the table)."""
    return RoleUsage(**{name: round(value) if name in WHOLE else value for name, value in zip(FIELDS, sums, strict=True)})


def _add_missing_columns(engine: Engine) -> None:
    """A ledger made by an earlier version lacks the figures counted since (``cancelled_calls``): added, as 0."""
    from sqlalchemy import inspect, text
    from sqlalchemy.exc import DBAPIError

    present = {column["name"] for column in inspect(engine).get_columns(TABLE)}
    for name in FIELDS:
        if name not in present:
            try:
                with engine.begin() as db:
                    db.execute(text(f"ALTER TABLE {TABLE} ADD COLUMN {name} DOUBLE PRECISION NOT NULL DEFAULT 0"))
            except DBAPIError:  # another worker added it at the same moment
                pass


class SharedUsage(Accounting):
    """This worker's counts, kept in the shared database at ``url``; ``report`` is every worker's of ``job``."""

    def __init__(self, url: str, job: str, worker: str, *, flush_s: float = 1.0) -> None:
        super().__init__()
        self.engine: Engine = shared_engine(url)
        self.job, self.worker = job, worker
        columns = ", ".join(f"{name} DOUBLE PRECISION NOT NULL DEFAULT 0" for name in FIELDS)
        create_table(self.engine, f"{TABLE} (job TEXT NOT NULL, worker TEXT NOT NULL, role TEXT NOT NULL, {columns}, "
                     "PRIMARY KEY (job, worker, role))")
        _add_missing_columns(self.engine)
        self._written: dict[str, Counts] = {}
        self._write_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._flush_every, args=(flush_s,), name="memevo-shared-usage",
                                        daemon=True)
        self._thread.start()

    def _flush_every(self, seconds: float) -> None:
        while not self._stop.wait(seconds):
            self.flush()

    def flush(self) -> None:
        """Write this worker's totals of every role that changed since the last write."""
        from sqlalchemy import text
        from sqlalchemy.exc import IntegrityError

        with self._write_lock:
            with self._lock:
                totals = {role: dict(counts) for role, counts in self._by_role.items()}
                totals |= {SERVER + url: {name: 0.0 for name in FIELDS} | {AS_COLUMNS[name]: value
                                                                           for name, value in counts.items()}
                           for url, counts in self._by_endpoint.items()}
            assignments = ", ".join(f"{name} = :{name}" for name in FIELDS)
            for role, counts in totals.items():
                if self._written.get(role) == counts:
                    continue
                values = {"job": self.job, "worker": self.worker, "role": role, **counts}
                with self.engine.begin() as db:
                    updated = db.execute(text(f"UPDATE {TABLE} SET {assignments} WHERE job = :job AND worker = :worker "
                                              "AND role = :role"), values).rowcount
                if not updated:
                    try:
                        with self.engine.begin() as db:
                            db.execute(text(f"INSERT INTO {TABLE} (job, worker, role, {', '.join(FIELDS)}) VALUES "
                                            f"(:job, :worker, :role, {', '.join(':' + name for name in FIELDS)})"),
                                       values)
                    except IntegrityError:  # cannot happen for one worker's own row; keep the next flush trying
                        continue
                self._written[role] = counts

    def report(self) -> UsageReport:
        """Every worker's usage of the job (by role and by server), this worker's counts written first."""
        from sqlalchemy import text

        self.flush()
        summed = ", ".join(f"SUM({name})" for name in FIELDS)
        with self.engine.connect() as db:
            rows = db.execute(text(f"SELECT role, {summed} FROM {TABLE} WHERE job = :job GROUP BY role ORDER BY role"),
                              {"job": self.job}).all()
        sums = {str(row[0]): _role_usage(tuple(row[1:])) for row in rows}
        return UsageReport(
            by_role={role: usage for role, usage in sums.items() if not role.startswith(SERVER)},
            by_endpoint={role.removeprefix(SERVER): EndpointUsage(**{name: getattr(usage, column)
                                                                     for name, column in AS_COLUMNS.items()})
                         for role, usage in sums.items() if role.startswith(SERVER)})

    def close(self) -> None:
        """Stop the background writes and write the last counts."""
        self._stop.set()
        self._thread.join()
        self.flush()
