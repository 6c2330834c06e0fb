"""Units of work that worker processes claim from one shared database, with heartbeats and take-over.

Optuna's RDB storage is the model: a worker marks its unit running and beats a heartbeat; a unit whose heartbeat
is older than the grace period belongs to a dead worker and may be claimed again (its folder resumes where that
worker stopped). Every change is one conditional UPDATE, atomic in PostgreSQL and in SQLite, so two workers never
both win one unit. Units are claimed in the order they were registered: the order a single process runs them in.
"""

from __future__ import annotations

import logging
import threading
from types import TracebackType
from typing import TYPE_CHECKING

from memevo.agents.shared_database import create_table, database_now, shared_engine

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

log = logging.getLogger("memevo.evolve")

TABLE = "memevo_work_units"
PENDING, RUNNING, DONE = "pending", "running", "done"


class ClaimStore:
    """The units of every job in the database at ``url`` (table created on first use)."""

    def __init__(self, url: str) -> None:
        self.engine: Engine = shared_engine(url)
        self._now = database_now(self.engine)
        create_table(self.engine, f"{TABLE} (job TEXT NOT NULL, unit TEXT NOT NULL, position INTEGER NOT NULL, "
                     "state TEXT NOT NULL, worker TEXT, heartbeat DOUBLE PRECISION, claims INTEGER NOT NULL, "
                     "PRIMARY KEY (job, unit))")

    def register(self, job: str, units: list[str]) -> None:
        """Add the units not registered yet (every worker registers the same list; the first one adds them)."""
        from sqlalchemy import text
        from sqlalchemy.exc import IntegrityError

        for position, unit in enumerate(units):
            try:
                with self.engine.begin() as db:
                    db.execute(text(f"INSERT INTO {TABLE} (job, unit, position, state, claims) SELECT CAST(:job AS TEXT), "
                                    f"CAST(:unit AS TEXT), CAST(:position AS INTEGER), '{PENDING}', 0 WHERE NOT EXISTS "
                                    f"(SELECT 1 FROM {TABLE} WHERE job = :job AND unit = :unit)"),
                               {"job": job, "unit": unit, "position": position})
            except IntegrityError:
                pass

    def claim(self, job: str, worker: str, *, grace_s: float, units: list[str] | None = None) -> str | None:
        """Claim the first pending unit, or one whose worker's heartbeat is older than ``grace_s`` (None: none
        is free now); ``units`` limits the choice."""
        from sqlalchemy import text

        free = f"(state = '{PENDING}' OR (state = '{RUNNING}' AND heartbeat < {self._now} - CAST(:grace AS DOUBLE PRECISION)))"
        with self.engine.connect() as db:
            candidates = [row[0] for row in db.execute(text(f"SELECT unit FROM {TABLE} WHERE job = :job AND {free} "
                                                            "ORDER BY position"), {"job": job, "grace": grace_s})]
        for unit in candidates:
            if units is not None and unit not in units:
                continue
            with self.engine.begin() as db:
                won = db.execute(text(f"UPDATE {TABLE} SET state = '{RUNNING}', worker = :worker, heartbeat = {self._now}, "
                                      f"claims = claims + 1 WHERE job = :job AND unit = :unit AND {free}"),
                                 {"job": job, "unit": unit, "worker": worker, "grace": grace_s})
            if won.rowcount == 1:
                return str(unit)
        return None

    def beat(self, job: str, unit: str, worker: str) -> bool:
        """Refresh the heartbeat; False when the unit is no longer this worker's (taken over after a stall)."""
        return self._update(job, unit, worker, f"heartbeat = {self._now}") == 1

    def finish(self, job: str, unit: str, worker: str) -> None:
        self._update(job, unit, worker, f"state = '{DONE}'")

    def release(self, job: str, unit: str, worker: str) -> None:
        """Hand the unit back (its worker failed cleanly): the next claim resumes it."""
        self._update(job, unit, worker, f"state = '{PENDING}', worker = NULL")

    def _update(self, job: str, unit: str, worker: str, assignment: str) -> int:
        from sqlalchemy import text

        with self.engine.begin() as db:
            return int(db.execute(text(f"UPDATE {TABLE} SET {assignment} WHERE job = :job AND unit = :unit AND "
                                       f"worker = :worker AND state = '{RUNNING}'"),
                                  {"job": job, "unit": unit, "worker": worker}).rowcount)

    def states(self, job: str) -> dict[str, str]:
        from sqlalchemy import text

        with self.engine.connect() as db:
            return {str(unit): str(state) for unit, state in
                    db.execute(text(f"SELECT unit, state FROM {TABLE} WHERE job = :job"), {"job": job})}

    def claim_counts(self, job: str) -> dict[str, int]:
        """How many times each unit was claimed (1 each when no worker died)."""
        from sqlalchemy import text

        with self.engine.connect() as db:
            return {str(unit): int(claims) for unit, claims in
                    db.execute(text(f"SELECT unit, claims FROM {TABLE} WHERE job = :job"), {"job": job})}


class Heartbeat:
    """Beats a claimed unit's heartbeat from a thread while the unit runs."""

    def __init__(self, store: ClaimStore, job: str, unit: str, worker: str, interval_s: float) -> None:
        self.store, self.job, self.unit, self.worker, self.interval_s = store, job, unit, worker, interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat-{unit}", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                if not self.store.beat(self.job, self.unit, self.worker):
                    log.warning("%s: unit %s was taken over by another worker (this one stalled past the grace "
                                "period)", self.worker, self.unit)
                    return
            except Exception as error:  # a database hiccup: the next beat tries again
                log.warning("%s: heartbeat of %s failed: %s", self.worker, self.unit, error)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
