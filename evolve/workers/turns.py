"""The units of one evolution claimed from the shared claim store, for the loop's ``turn`` (``scheduling.Turns``).

The loop asks for a turn before each unit (generation 0, a generation's plan, each candidate, its outcome, the
end). This worker either claims the unit and does it under a heartbeat, or waits until another worker has done it
and then reads its files. While it waits it keeps trying to claim the unit, so a unit whose worker died is taken
over once its heartbeat is older than the grace period, and resumed from its files. A worker holds at most
``slots`` units at once: the others stay free for the other workers. Before a unit counts as done, ``settle`` runs (the
worker's usage written to the shared ledger), so a budget judged once a unit is done counts all of its calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import TracebackType

from memevo.evolve.workers.claims import DONE, ClaimStore, Heartbeat
from memevo.evolve.workers.worker import WorkerSettings


class SharedTurns:
    """``turn(unit)`` over the units of ``job`` in ``store``."""

    def __init__(self, store: ClaimStore, job: str, settings: WorkerSettings, *, slots: int = 1,
                 settle: Callable[[], None] = lambda: None) -> None:
        self.store, self.job, self.settings, self.settle = store, job, settings, settle
        self._slots = asyncio.Semaphore(slots)

    def turn(self, unit: str) -> Turn:
        return Turn(self, unit)

    def widened(self, slots: int) -> SharedTurns:
        """The same units with ``slots`` of this worker's own, beside these (a candidate's users played at once,
        ``user_units``)."""
        return SharedTurns(self.store, self.job, self.settings, slots=slots, settle=self.settle)

    async def claim_or_wait(self, unit: str) -> bool:
        """True once this worker holds ``unit`` (a slot taken), False once another worker has done it."""
        store, job, settings = self.store, self.job, self.settings
        await asyncio.to_thread(store.register, job, [unit])
        while True:
            if not self._slots.locked():
                await self._slots.acquire()
                won = await asyncio.to_thread(store.claim, job, settings.name, grace_s=settings.grace_s, units=[unit])
                if won is not None:
                    return True
                self._slots.release()
            if (await asyncio.to_thread(store.states, job)).get(unit) == DONE:
                return False
            await asyncio.sleep(settings.poll_s)

    def release_slot(self) -> None:
        self._slots.release()


class Turn:
    """One unit's turn: claimed (beating its heartbeat, done on a clean exit, handed back on an error) or waited for."""

    def __init__(self, turns: SharedTurns, unit: str) -> None:
        self.turns, self.unit = turns, unit
        self._heartbeat: Heartbeat | None = None

    async def __aenter__(self) -> bool:
        turns = self.turns
        if not await turns.claim_or_wait(self.unit):
            return False
        self._heartbeat = Heartbeat(turns.store, turns.job, self.unit, turns.settings.name, turns.settings.heartbeat_s)
        self._heartbeat.__enter__()
        return True

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        if self._heartbeat is None:
            return
        self._heartbeat.__exit__(kind, error, trace)
        turns, worker = self.turns, self.turns.settings.name
        try:
            if kind is None:
                turns.settle()
                turns.store.finish(turns.job, self.unit, worker)
            else:  # the next claim (this worker's resume, or another worker) continues from its files
                turns.store.release(turns.job, self.unit, worker)
        finally:
            turns.release_slot()
