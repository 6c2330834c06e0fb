"""The race (``race``) when several worker processes share a run: each play of a round is one worker's unit of work,
and every worker makes the round's decisions itself, from stored episodes, in the same order.

A round is its start (the budget check), its plays (the parent and each candidate still in the race, on the round's
users) and one decision. One process holds every unit (``scheduling.OneProcess``), so its race is what it was. A
worker that did not hold a play reads the play's values from the episodes its holder stored, and writes nothing
(the play's summary file may already be a later round's). The start needs no unit: once every play of the round
before it is done, every worker sees the same spend (each holder writes its usage before its unit counts as done,
``workers.turns``), and a start one worker recorded (``race_started.json``) is a start for every other, also one
that sees the started round's first calls: budgets only grow spent.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

from memevo.core.atomic_files import write_json_atomic
from memevo.core.run_files import delete_and_resume, read_json
from memevo.evolve.candidates import Candidate
from memevo.evolve.evaluation import CandidateEval, user_outcome
from memevo.evolve.records import Instance
from memevo.evolve.scheduling import OneProcess, Turns
from memevo.evolve.spend import BudgetKeeper
from memevo.evolve.strategies.base import StrategyContext
from memevo.evolve.strategies.plays import Plays


def shared(turns: Turns) -> bool:
    """Whether other worker processes share the run's units."""
    return not isinstance(turns, OneProcess)


def rounds_started(path: Path) -> int:
    """How many of a generation's race rounds were started (by this or another process, or a killed one)."""
    if not path.exists():
        return 0
    return int(read_json(path, remedy=delete_and_resume(
        "it", "the race's rounds are checked against the budget again"))["rounds"])


def start_round(path: Path, number: int, budget: BudgetKeeper) -> str | None:
    """Start round ``number`` of a generation's races (recorded in ``path``) unless it was never started and a budget
    is spent: None, or the budget that stops it. A start recorded meanwhile by another worker wins."""
    if rounds_started(path) > number:
        return None
    exceeded = budget.spent()
    if rounds_started(path) > number:
        return None
    if exceeded is None:
        write_json_atomic(path, {"rounds": number + 1})
    return exceeded


def generation_start(context: StrategyContext, generation: int) -> Callable[[], str | None] | None:
    """With other workers, the budget judgment of a generation's candidates started at once: the one at the spend
    its plan left, where one process starts them all (a worker holding one candidate at a time would otherwise judge
    the next one after the first ones spent); recorded as the start of round 0 (``start_round``). None: one process."""
    if not shared(context.turns):
        return None
    return partial(start_round, context.gen_dir(generation) / "candidates_started.json", 0, context.budget)


class RacePlays:
    """``Plays.play`` as a unit of work (see the module docstring)."""

    def __init__(self, plays: Plays, turns: Turns) -> None:
        self.plays, self.turns = plays, turns

    async def play(self, unit: str, candidate: Candidate, users: list[str], *,
                   parent_of: int | None = None) -> dict[Instance, float]:
        """The candidate's values on ``users``: played when this process holds ``unit``, else read once its holder
        is done."""
        async with self.turns.turn(unit) as mine:
            if mine:
                return await self.plays.play(candidate, users, parent_of=parent_of)
        return self.stored(candidate.id, users)

    def stored(self, candidate_id: str, users: list[str]) -> dict[Instance, float]:
        """The values of a finished play from its stored episodes, split by split as ``Plays.play`` gives them."""
        evaluator = self.plays.evaluator
        values: dict[Instance, float] = {}
        for split, members in self.plays.users.items():
            chosen = [user for user in users if user in members]
            episodes = evaluator.episodes(candidate_id, split, chosen)
            assert len(episodes) == len(chosen), f"{candidate_id} has not played all of {chosen} in {split}"
            values |= CandidateEval(
                candidate_id=candidate_id, split=split, objective=evaluator.objective, n_users_total=len(chosen),
                requested=chosen, users=[user_outcome(episode, evaluator.items[episode.user_id], evaluator.upper_bound)
                                         for episode in episodes]).instances()
        return values
