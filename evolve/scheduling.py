"""When a generation's candidates start: all at once (up to ``episode.candidate_concurrency``), or one at a time until
one is accepted (``strategy.first_accepted``), each only while the budget allows.

The scheduler decides only the order and the starts; what a candidate run does and whether it is accepted are the
loop's. One at a time goes in the plan's order, so a resume takes the same path; all at once gives the same results
under any interleaving, since each candidate's episodes are seeded and stored on their own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Protocol

from memevo.evolve.candidates import Candidate
from memevo.evolve.evaluation import CandidateEval
from memevo.evolve.events import Progress
from memevo.evolve.spend import BudgetKeeper


@dataclass(frozen=True)
class CandidateRun:
    """What happened to one candidate in its generation."""

    train: CandidateEval | None
    val: CandidateEval | None = None
    minibatch: CandidateEval | None = None

    @property
    def gated(self) -> bool:
        """Stopped by the minibatch gate before validation (train first)."""
        return self.minibatch is not None and self.train is None and self.val is None

    @property
    def pruned(self) -> bool:
        return self.train is not None and self.train.pruned

    @property
    def train_skipped(self) -> bool:
        """Validation first: not run on all train users (rejected on validation, or checked on a minibatch)."""
        return self.val is not None and self.train is None

    @property
    def train_check(self) -> CandidateEval | None:
        """The evaluation on train users the trial is told: all of them, or validation first the minibatch."""
        return self.train or (self.minibatch if self.val is not None else None)

    def evals(self) -> dict[str, CandidateEval | None]:
        return {"minibatch": self.minibatch, "train": self.train, "val": self.val}


class Turns(Protocol):
    """Who does a unit of a run's work (``gen-003/<candidate>``, ``finish``) when several processes run it: ``turn``
    enters when this process holds the unit (True) or another one has done it (False: its files are written, and
    what it told observers is not told again). The units' code is the resumable code of one process, so both
    ways end with the same files."""

    def turn(self, unit: str) -> AbstractAsyncContextManager[bool]: ...


class OneProcess:
    """Every unit is this process's: the run as one process."""

    @asynccontextmanager
    async def turn(self, unit: str) -> AsyncIterator[bool]:
        yield True


RunOne = Callable[[Candidate], Awaitable[CandidateRun]]
Settle = Callable[[Candidate, CandidateRun], Awaitable[tuple[CandidateRun, bool]]]
"""One at a time: the candidate's run completed (e.g. checked on the train users) and whether it was accepted."""


@dataclass(frozen=True)
class Scheduled:
    """The runs of the candidates tried, in the plan's order (None: not started, the budget was spent); the
    candidates after them were not needed. ``budget_stop`` names the budget that kept one from starting."""

    runs: list[CandidateRun | None]
    budget_stop: str | None


class CandidateScheduler:
    """Starts a generation's candidates and asks the budget keeper before each one."""

    def __init__(self, budget: BudgetKeeper, *, concurrency: int | None, started: Callable[[str], bool],
                 turns: Turns | None = None) -> None:
        self.budget = budget
        self.concurrency = concurrency
        self.started = started
        """Whether a candidate was started by a killed process: it was allowed to start, so it continues."""
        self.turns = turns or OneProcess()
        """Several worker processes: each candidate (its budget check and its run) is one unit of work."""

    async def run(self, candidates: Sequence[Candidate], run_one: RunOne, progress: Progress, *,
                  settle: Settle | None = None, spent: Callable[[], str | None] | None = None) -> Scheduled:
        """All candidates at once, or with ``settle`` one at a time until one is accepted; ``spent`` judges the
        budget before each start (default: the budget keeper's)."""
        spent = spent or self.budget.spent
        semaphore = asyncio.Semaphore(self.concurrency or len(candidates) or 1)
        stops: list[str] = []

        async def start(candidate: Candidate) -> CandidateRun | None:
            async with self.turns.turn(f"gen-{candidate.generation:03d}/{candidate.id}"), semaphore:
                exceeded = None if self.started(candidate.id) else spent()
                if exceeded:
                    stops.append(exceeded)
                    return None
                result = await run_one(candidate)
                progress.advance()
                return result

        if settle is None:
            runs = list(await asyncio.gather(*(start(candidate) for candidate in candidates)))
        else:
            runs = []
            for candidate in candidates:
                result, accepted = await start(candidate), False
                if result is not None:  # one worker's unit too: the others then read what it stored
                    async with self.turns.turn(f"gen-{candidate.generation:03d}/{candidate.id}/settle"):
                        result, accepted = await settle(candidate, result)
                runs.append(result)
                if accepted:
                    break
        progress.skip(len(candidates) - len(runs))  # not needed: the bar counts what was run
        return Scheduled(runs=runs, budget_stop=stops[0] if stops else None)
