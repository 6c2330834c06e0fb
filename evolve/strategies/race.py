"""The race generation (``strategy.acceptance: sequential``, the default): the candidates race their parent on train
and validation users together, only on users whose episodes did not select the parent, and a paired sequential test
keeps at most one (``selection.race``). The kept candidate is the next parent, and the last one kept is the run's
best. Under ``strategy.first_accepted`` (on by default) the candidates race one at a time in the plan's order and
the first one kept ends the generation.

A parent plays only the users its races need: by default the seed starts on the first race's first round
(``strategy.seed_users``) and a kept candidate's validation score is on the validation users that decided it
(``strategy.winner_validation``); episodes no race decision reads would come out of the candidates' budget.

Several worker processes share a race's plays (``race_units``); rounds started by a killed process continue
without a budget check (``race_started.json``), and the record of every round (``race.json``) says which
users decided the kept candidate, so its successors race on others.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from memevo.core.atomic_files import write_json_atomic
from memevo.core.run_files import RESTORE, read_json
from memevo.evolve.candidates import Candidate
from memevo.evolve.events import CandidatesPhase
from memevo.evolve.records import GenerationOutcome, GenerationPlan, Instance
from memevo.evolve.scheduling import CandidateRun, Scheduled
from memevo.evolve.selection.race import RaceRecord, looks, race, race_users
from memevo.evolve.selection.sequential import SequentialTest
from memevo.evolve.strategies.base import GenerationStrategy, Ran, StrategyContext
from memevo.evolve.strategies.race_units import RacePlays, shared, start_round

log = logging.getLogger("memevo.evolve")


class RaceStrategy(GenerationStrategy):
    """Each generation a race against the last kept candidate (see the module docstring)."""

    def __init__(self, context: StrategyContext) -> None:
        super().__init__(context)
        self.selected_on: dict[str, list[str]] = {}
        """Per kept candidate, the users whose episodes decided to keep it (none for the seed)."""
        self.units = RacePlays(self.plays, context.turns)

    def parent(self, history: list[GenerationOutcome], generation: int) -> Candidate:
        return self.best(history)

    def best(self, history: list[GenerationOutcome]) -> Candidate:
        """The race keeps one line: each kept candidate beat the one before it on fresh users."""
        return self.lineage.candidates[history[-1].kept_id]

    def incumbent(self, parent: Candidate) -> Candidate:
        return parent

    def kept(self, parent: Candidate, accepted: list[Candidate], scores: dict[str, dict[Instance, float]]) -> Candidate:
        return accepted[0] if accepted else parent

    def _race_path(self, generation: int) -> Path:
        return self.context.gen_dir(generation) / "race.json"

    def remember(self, outcome: GenerationOutcome) -> None:
        """The users that decided to keep the generation's winner (from its race record, also when resuming)."""
        if not outcome.accepted_ids:
            return
        stored = read_json(self._race_path(outcome.generation),
                           remedy=f"{RESTORE}: the users that decided the kept candidate are only recorded there")
        records = [RaceRecord.model_validate(r) for r in stored]
        (winner,) = [r for r in records if r.winner_id is not None]
        self.selected_on[winner.winner_id or ""] = winner.selected_on

    def _race_users(self, generation: int, parent: Candidate) -> list[str]:
        return race_users([*self.split.train, *self.split.val], self.selected_on.get(parent.id, []),
                          self.config.split.seed, generation)

    def seed_users(self) -> tuple[list[str], list[str]]:
        """Under ``strategy.seed_users: first_round`` the seed plays the first race's first round (with at least one
        train user, its evidence, and one validation user, its validation score); a user it plays that no race
        needs is budget taken from the candidates."""
        if self.config.strategy.seed_users == "all":
            return super().seed_users()
        train, val = self.split.train, self.split.val
        first = race_users([*train, *val], [], self.config.split.seed, 1)[:self.config.strategy.race_users]
        return ([u for u in first if u in train] or train[:1]), ([u for u in first if u in val] or val[:1])

    async def prepare_parent(self, generation: int, parent: Candidate) -> None:
        """The parent's evidence is its episodes on the train users it has played (the race that kept it, or
        generation 0). A parent with none plays one train user, the first its race will play (a round that reaches
        that user then costs the parent nothing more)."""
        if not self.split.train or self.plays.evaluator.episodes(parent.id, "train", self.split.train):
            return
        upcoming = [user for user in self._race_users(generation, parent) if user in self.split.train]
        await self.plays.play(parent, (upcoming or self.split.train)[:1], parent_of=generation)

    def _may_start(self, generation: int, budget_stop: list[str]) -> Callable[[int], str | None]:
        """``may_start`` of the generation's races: the budget is checked before each round, except the rounds a
        killed process started (they continue)."""
        started_path = self.context.gen_dir(generation) / "race_started.json"
        rounds_begun = [0]

        def may_start(_: int) -> str | None:
            number = rounds_begun[0]
            rounds_begun[0] += 1
            exceeded = start_round(started_path, number, self.context.budget)
            if exceeded:
                budget_stop.append(exceeded)
            return exceeded

        return may_start

    def _speculate_group(self, index: int, group: list[Candidate], plan: GenerationPlan, parent: Candidate,
                         users: list[str]) -> None:
        mode = self.plays.speculation
        if mode == "candidate" or (mode == "generation" and index == 0):
            winner_val = self.split.val if self.config.strategy.winner_validation == "all" else []
            for candidate in group if mode == "candidate" else plan.candidates:
                self.plays.speculate(candidate, [*users, *winner_val])  # the winner's validation users
            self.plays.speculate(parent, users)

    def _player(self, generation: int, parent: Candidate, group: list[Candidate],
                record: RaceRecord) -> Callable[[Candidate, list[str]], Awaitable[dict[Instance, float]]]:
        """``play`` for a race that asks for the parent and then the candidates still in it one after the other on
        the same users: the first ask of a round starts them all at once, and each ask takes its own result. The same
        plays as one at a time, so the same values and calls; a round's plays not asked for (an error ended the race)
        are cancelled."""
        started: dict[tuple[str, tuple[str, ...]], asyncio.Future[dict[Instance, float]]] = {}

        async def play(candidate: Candidate, users: list[str]) -> dict[Instance, float]:
            staying = record.rounds[-1].staying if record.rounds else [c.id for c in group]
            unit = f"gen-{generation:03d}/race-{group[0].id}/users-{len(users)}"  # a round's plays: workers' units
            if (parent.id, tuple(users)) not in started:
                started[(parent.id, tuple(users))] = asyncio.ensure_future(
                    self.units.play(f"{unit}/{parent.id}", parent, users, parent_of=generation))
            for other in group:
                key = (other.id, tuple(users))
                if other.id in staying and key not in started:
                    started[key] = asyncio.ensure_future(self.units.play(f"{unit}/{other.id}", other, users))
            try:
                return await started[(candidate.id, tuple(users))]
            except BaseException:
                for future in started.values():
                    future.cancel()
                raise

        return play

    async def run_candidates(self, generation: int, parent: Candidate, plan: GenerationPlan) -> Scheduled | None:
        """With other workers, every worker races (each play one worker's unit, ``race_units``) so all take part;
        the worker that holds the outcome then races once more from the stored episodes (``decide``)."""
        if shared(self.context.turns):
            await self._races(generation, parent, plan)
        return None

    async def decide(self, generation: int, parent: Candidate, plan: GenerationPlan,
                     scheduled: Scheduled | None) -> Ran:
        """The generation's race (``selection.race``): all candidates together, or under ``strategy.first_accepted``
        one at a time until one is kept. The winner then plays the validation users it has not of those
        ``strategy.winner_validation`` names (its validation score, as every kept candidate has one)."""
        records, budget_stop = await self._races(generation, parent, plan, save=True)
        self._log(generation, records)
        return await self._close(generation, parent, plan, records, budget_stop)

    async def _races(self, generation: int, parent: Candidate, plan: GenerationPlan, *,
                     save: bool = False) -> tuple[list[RaceRecord], list[str]]:
        """The generation's races, their records written after each round when ``save``; and the budget that
        stopped them, if one did."""
        strategy = self.config.strategy
        users = self._race_users(generation, parent)
        test = SequentialTest(strategy.test_confidence, strategy.min_effect, looks(len(users), strategy.race_users))
        instances = sum(self.plays.evaluator.n_periods(user) for user in users)
        if save and not test.can_accept(instances):
            log.warning("gen %d: its race has %d (user, period) instance(s), too few for the sequential test to accept "
                        "anything at confidence %g (give more train or validation users, or strategy.acceptance: mean)",
                        generation, instances, strategy.test_confidence)
        budget_stop: list[str] = []
        may_start = self._may_start(generation, budget_stop)
        records: list[RaceRecord] = []

        def write(_: RaceRecord | None = None) -> None:
            if save:
                write_json_atomic(self._race_path(generation), [json.loads(r.model_dump_json()) for r in records])

        groups = [[c] for c in plan.candidates] if strategy.first_accepted else [plan.candidates][:len(plan.candidates)]
        with self.context.observers.phase(CandidatesPhase(generation, len(plan.candidates))) as bar:
            for index, group in enumerate(groups):
                self._speculate_group(index, group, plan, parent, users)
                record = RaceRecord(parent_id=parent.id, candidate_ids=[c.id for c in group], users=users)
                records.append(record)
                await race(group, parent, users, chunk=strategy.race_users, test=test,
                           play=self._player(generation, parent, group, record), may_start=may_start,
                           record=record, on_round=write, futility=strategy.futility)
                bar.advance(len(group))
                await self.plays.cancel(c.id for c in group if c.id != record.winner_id)
                if record.winner_id is not None or record.stop_reason is not None:
                    break
            bar.skip(len(plan.candidates) - sum(len(record.candidate_ids) for record in records))
        write()  # also a generation without candidates has its (empty) record
        return records, budget_stop

    def _winner_validation(self, record: RaceRecord) -> list[str]:
        """The validation users the race's winner plays for its validation score (``strategy.winner_validation``):
        all, or those that decided it (else the first validation user of its race, else of the split): a kept
        candidate's remaining validation users decide nothing under the race, and their episodes come out of the
        candidates' budget."""
        if self.config.strategy.winner_validation == "all":
            return self.split.val
        val = [user for user in record.users if user in self.split.val]
        decided = [user for user in record.selected_on if user in self.split.val]
        return decided or (val or self.split.val)[:1]

    def _log(self, generation: int, records: list[RaceRecord]) -> None:
        candidates = self.lineage.candidates
        for record in records:
            log.info("gen %d race of %d candidate(s) on %d user(s): %s", generation, len(record.candidate_ids),
                     len(record.users), "; ".join(f"{candidates[cid].label} {verdict.reason}"
                                                  for round_ in record.rounds[-1:]
                                                  for cid, verdict in round_.verdicts.items()))

    async def _close(self, generation: int, parent: Candidate, plan: GenerationPlan, records: list[RaceRecord],
                     budget_stop: list[str]) -> Ran:
        """The races' results: the speculation nobody needs stopped, the winner on its validation users. After the
        run's last race the best is known: its test users and the seed's start beside the winner's validation users
        (no decision is left that they could change, and no budget check); with other workers the end is its own unit."""
        raced = {cid for record in records for round_ in record.rounds for cid in round_.verdicts}
        accepted = [self.lineage.candidates[r.winner_id] for r in records if r.winner_id is not None]
        await self.plays.cancel(c.id for c in plan.candidates if c not in accepted)
        await self.plays.cancel([parent.id], keep_split="test")  # test users: for the best (the loop's end)
        if generation == self.config.budget.generations and not shared(self.context.turns):  # workers: the end's unit
            self.plays.start_test([self.lineage.seed, self.kept(parent, accepted, {})])
        for record in records:
            if record.winner_id is not None:
                await self.plays.play(self.lineage.candidates[record.winner_id], self._winner_validation(record))
        await self.plays.cancel((c.id for c in accepted), keep_split="test")
        evaluator = self.plays.evaluator
        ran = [(c, CandidateRun(train=evaluator.finished(c.id, "train"), val=evaluator.finished(c.id, "val")))
               for c in plan.candidates if c.id in raced]
        left = [c for c in plan.candidates if c.id not in raced]
        return Ran(ran=ran, not_started=left if budget_stop else [], not_needed=[] if budget_stop else left,
                   accepted=accepted, budget_stop=budget_stop[0] if budget_stop else None)
