"""A candidate's users as units of work that several worker processes share: the seed's first episodes and the final
test scoring, each otherwise one worker's while the others wait.

Each (candidate, split, user) is one unit: whichever worker claims it plays that user's episode into the candidate's
store, up to ``max_concurrent_users`` at once in one worker. Once every unit is done, the one worker that holds the
step (generation 0, the end) evaluates the candidate as one process does: its episodes are found finished and read
back, so the scores, the pruner's reports and the files are one process's. One process plays them in that step
itself, so nothing here runs for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Protocol, runtime_checkable

from memevo.evolve.candidates import Candidate
from memevo.evolve.runtime import RunBase
from memevo.evolve.scheduling import Turns
from memevo.evolve.strategies.base import GenerationStrategy
from memevo.evolve.strategies.plays import Plays

Play = Callable[[], Awaitable[object]]


@runtime_checkable
class WideTurns(Protocol):
    """Worker turns that can hold more units at once than a candidate's slots (``workers.turns.SharedTurns``)."""

    def widened(self, slots: int) -> Turns: ...


async def spread(turns: Turns, units: dict[str, Play], *, width: int) -> None:
    """Each unit played by whichever worker claims it (at most ``width`` at once in this one), back once all are done;
    nothing in one process."""
    if not isinstance(turns, WideTurns):
        return
    wide = turns.widened(width)

    async def one(unit: str, play: Play) -> None:
        async with wide.turn(unit) as mine:
            if mine:
                await play()

    await asyncio.gather(*(one(unit, play) for unit, play in units.items()))


def user_plays(plays: Plays, unit: str, candidates: Iterable[Candidate], splits: dict[str, list[str]]) -> dict[str, Play]:
    """One unit per (candidate, split, user) whose episode is not finished yet, named ``<unit>/<candidate>/<split>/<user>``."""
    evaluator = plays.evaluator
    units: dict[str, Play] = {}
    for candidate in candidates:
        for split, users in splits.items():
            for user in users:
                if not evaluator.episodes(candidate.id, split, [user]):
                    units[f"{unit}/{candidate.id}/{split}/{user}"] = _player(plays, candidate, split, user)
    return units


async def spread_seed(turns: Turns, run: RunBase, plays: Plays, strategy: GenerationStrategy) -> None:
    """Generation 0's units: the upper-bound table and the seed's users (those the strategy has generation 0 evaluate,
    by split), played at once as one process plays them. A user's scores wait for the table (its holder writes the
    run folder's copy, which every other worker reads once that unit is done), so they are against it as in one
    process."""
    if not isinstance(turns, WideTurns):
        return
    table = asyncio.ensure_future(_shared_table(turns, run, plays.width))
    run.evaluator.upper_bound_pending = table
    try:
        splits = dict(zip(plays.users, strategy.seed_users(), strict=True))
        await spread(turns, user_plays(plays, "gen-000", [run.seed], splits), width=plays.width)
        await table
    finally:
        table.cancel()
        run.evaluator.upper_bound_pending = None


async def _shared_table(turns: Turns, run: RunBase, width: int) -> None:
    """The upper-bound table as one worker's unit, then read by every worker."""
    await spread(turns, {"gen-000/upper-bound": lambda: run.upper_bound_table(run.users)}, width=width)
    await run.upper_bound_table(run.users)


def end_units(run: RunBase, plays: Plays, best: Candidate) -> dict[str, Play]:
    """The end's units: the seed's and the best's test users (the seed once when it is the best)."""
    both = [run.seed] if best.id == run.seed.id else [run.seed, best]
    return user_plays(plays, "finish", both, {"test": run.split.test})


def _player(plays: Plays, candidate: Candidate, split: str, user: str) -> Play:
    return lambda: plays.evaluate(candidate, split, [user])
