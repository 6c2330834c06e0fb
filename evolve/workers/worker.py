"""What every kind of worker does: claim a unit, do it under a heartbeat, mark it done, until a list is done.

An ablation's workers claim (arm, seed) evolutions; a sweep's workers claim the trials of a generation. Both
wait for the units other workers hold, so that a unit whose worker dies is taken over after the grace period.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable

from pydantic import Field

from memevo.core.lazy_model import LazyModel
from memevo.evolve.workers.claims import DONE, ClaimStore, Heartbeat


def default_worker_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


class WorkerSettings(LazyModel):
    """Where the workers meet and how soon a silent one counts as dead."""

    store: str
    """SQLAlchemy URL of the claim store: PostgreSQL for several machines, an SQLite file for one."""
    name: str = Field(default_factory=default_worker_name)
    heartbeat_s: float = Field(2.0, gt=0)
    grace_s: float = Field(10.0, gt=0)
    """A unit whose heartbeat is older than this is taken over (keep it several heartbeats long)."""
    poll_s: float = Field(0.25, gt=0)
    """How often a worker waiting for a unit looks again (a unit done elsewhere is noticed this late)."""


def work_through(store: ClaimStore, job: str, units: list[str], settings: WorkerSettings,
                 work: Callable[[str], object], *, wait: bool = True) -> None:
    """Claim and do ``units`` one at a time until all are done (by this worker or others); ``wait``: also wait
    for those other workers hold, to take them over if they die."""
    while True:
        unit = store.claim(job, settings.name, grace_s=settings.grace_s, units=units)
        if unit is None:
            states = store.states(job)
            if not wait or all(states[name] == DONE for name in units):
                return
            time.sleep(settings.poll_s)
            continue
        try:
            with Heartbeat(store, job, unit, settings.name, settings.heartbeat_s):
                work(unit)
        except BaseException:
            store.release(job, unit, settings.name)
            raise
        store.finish(job, unit, settings.name)
