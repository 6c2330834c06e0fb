"""The evolution loop (``memevo evolve``): choose a parent, propose, tune, evaluate, accept, repeat.

Generation 0 evaluates the seed on train and validation users; the seed starts the pool. Each later
generation picks a parent from the pool (``strategy.parents``), renders the evidence of the parent's
train episodes, lets the configured proposers write K variants, lets Optuna set each variant's
hyperparameters, and evaluates the candidates. Under ``strategy.acceptance: sequential`` (the default) the
candidates race against their parent on train and validation users together, only on users whose episodes did not
select the parent, and a paired sequential test keeps at most one (``selection.race``); the kept candidate is the
next parent and the last one kept is the run's best. Under the other rules they go through the minibatch gate
when it is on, then on the train users (pruning weak ones early) and on the validation users. A candidate joins the
pool when the acceptance rule (``strategy.acceptance``) prefers it to its parent on validation. With
``strategy.order: validation_first`` the validation users come first; the candidates the rule prefers
there are run on the train users (all, or the gate's minibatch), best first, until one is not worse than
its parent over those and the validation users together: only that one joins the pool, and no train
episode is spent on the others. Under ``strategy.first_accepted`` (on by default) the candidates go one at a
time instead, each checked on the train users as soon as the rule prefers it on validation, and the first
one kept ends the generation: the later ones are not needed and never run. A pool candidate chosen as
parent runs on the remaining train users then (its evidence; the scores go to its own MLflow run), unless
``strategy.complete_parent_train`` is off. The best of the pool on validation is the run's best; at the end
seed and best are scored on test users. Every comparison uses the one configured ``objective``.

Everything is saved in the run folder as it finishes (the generation's first trial number before its
proposals, its plan before any evaluation, each evaluation, each generation's outcome; every LLM call in
the usage ledger as it is counted), so ``resume=True`` recomputes nothing finished and ends with the same
result as an uninterrupted run: the pool is rebuilt from the saved outcomes, trials asked for an unsaved
plan are handed out again, and every random choice is seeded (by the generation, or the trial).

Budgets are checked before each generation and before each candidate starts (``spend.BudgetKeeper``): once one
is spent, the run stops, and a generation's candidates that had not started are left out (the stop reason says so).
When candidates start is the scheduler's (``scheduling``). The loop tells what happened as events (``events``); the
observers (``plugins``: the tracker, the terminal, the score plot) record them; the tuner tells its own trials.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from memevo.agents.registry import agent_spec
from memevo.core.atomic_files import write_json_atomic
from memevo.core.run_files import RESTORE, delete_and_resume, read_json
from memevo.environments.metrics import Scores, UserScores
from memevo.environments.resume import run_resumable
from memevo.environments.score_text import data_figure_name
from memevo.evolve import runtime
from memevo.evolve.candidates import Candidate
from memevo.evolve.config import EvolveConfig
from memevo.evolve.cross_test import CrossTestResult, cross_test
from memevo.evolve.deferred import Deferred
from memevo.evolve.evaluation import CandidateEval, PruneHook, UserOutcome
from memevo.evolve.events import (
    CandidatesPhase,
    EvaluationPhase,
    FinalScoringPhase,
    GenerationEnded,
    GenerationPlanned,
    ParentTrainCompleted,
    Progress,
    RunEnded,
    objective_name,
)
from memevo.evolve.evidence import evidence_from_episodes, render_evidence
from memevo.evolve.proposers import ProposalContext, propose_all
from memevo.evolve.records import (
    EvolutionResult,
    GenerationOutcome,
    GenerationPlan,
    Instance,
    ProposalStats,
    read_record,
    write_record,
)
from memevo.evolve.scheduling import CandidateRun, CandidateScheduler, OneProcess, Scheduled, Turns
from memevo.evolve.selection import Decision, MinibatchGate, best_of, make_acceptance, make_parent_selector
from memevo.evolve.selection.gate import not_worse
from memevo.evolve.selection.parents import mean_score
from memevo.evolve.selection.race import RaceRecord, looks, race, race_users
from memevo.evolve.selection.sequential import SequentialTest
from memevo.evolve.spend import BudgetKeeper

if TYPE_CHECKING:
    from memevo.evolve.tuner import Tuner

log = logging.getLogger("memevo.evolve")


def open_tuner(config: EvolveConfig, *, storage: str, first_trial: dict[str, int], metric: str) -> Tuner:
    """The run's tuner; Optuna loads and opens its study here, in the start-up thread (``deferred``)."""
    from memevo.evolve.tuner import Tuner

    return Tuner(config.optuna, {str(name): space for name, space in config.hyperparameters.items()}, storage=storage,
                 study_name=config.name, first_trial=first_trial, metric=metric)


__all__ = ["EvolutionResult", "GenerationOutcome", "GenerationPlan", "OuterLoop", "evolve", "run_evolution"]


class OuterLoop(runtime.RunBase):
    """One evolution run over generations (see the module docstring)."""

    def __init__(self, config: EvolveConfig, run_dir: Path, hub: runtime.Hub, *, resume: bool,
                 turns: Turns | None = None) -> None:
        super().__init__(config, run_dir, hub, resume=resume)
        self.spec = agent_spec(self.seed.policy.kind)
        self.budget = BudgetKeeper(config.budget, self.usage)
        self.turns = turns or OneProcess()
        """Worker processes sharing this run (``memevo.evolve.workers``): who does generation 0, each generation's
        plan, candidates and outcome, and the end; each unit is the resumable code one process runs."""
        self.scheduler = CandidateScheduler(self.budget, concurrency=config.episode.candidate_concurrency,
                                            started=self.evaluator.started, turns=self.turns)
        self.start_later.defer(self.observers.warm_up)
        strategy = config.strategy
        self.parents = make_parent_selector(strategy.parents, seed=config.split.seed)
        self.acceptance = make_acceptance(strategy.acceptance, strategy.test_confidence, strategy.min_effect)
        self.gate = MinibatchGate(strategy.minibatch, config.split.seed) if strategy.minibatch else None
        self.candidates: dict[str, Candidate] = {self.seed.id: self.seed}
        self.pool: list[Candidate] = []
        self.val_instances: dict[str, dict[Instance, float]] = {}
        self.sequential = strategy.acceptance == "sequential"
        self.selected_on: dict[str, list[str]] = {self.seed.id: []}
        """Sequential acceptance: per kept candidate, the users whose episodes decided to keep it."""

    def make_tuner(self) -> Deferred[Tuner]:
        """The Optuna study the loop asks for each candidate's hyperparameters (and tells, ``Tuner.close_generation``),
        opened once the first requests are in flight (``deferred``)."""
        config = self.config
        return self.start_later.defer(partial(
            open_tuner, config, storage=config.optuna.storage or f"sqlite:///{(self.run_dir / 'optuna.db').resolve()}",
            first_trial={name: getattr(self.seed.policy, name) for name in config.hyperparameters},
            metric=objective_name(config.objective, data_figure_name(self.evaluator.environment, self.users))),
            first=True)

    @property
    def tuner(self) -> Tuner:
        """The run's Optuna tuner; the first use waits for its study to open."""
        assert self.deferred_tuner is not None  # ``make_tuner``
        return self.deferred_tuner.result()

    def _gen_dir(self, generation: int) -> Path:
        return self.run_dir / "generations" / f"gen_{generation:03d}"

    @property
    def _users(self) -> dict[str, list[str]]:
        return {"train": self.split.train, "val": self.split.val}

    def _admit(self, candidate_ids: list[str]) -> None:
        """Add accepted candidates to the pool with their validation values (also when resuming)."""
        for candidate_id in candidate_ids:
            if candidate_id in self.val_instances:
                continue
            val = self.evaluator.finished(candidate_id, "val")
            assert val is not None, f"accepted candidate {candidate_id} has no validation result"
            self.pool.append(self.candidates[candidate_id])
            self.val_instances[candidate_id] = val.instances()

    # ----- evaluation ---------------------------------------------------------------------------

    async def _evaluate(self, candidate: Candidate, split: str, user_ids: list[str], *,
                        trial: int | Callable[[], int] | None = None, label: str | None = None) -> CandidateEval:
        prune = None if trial is None else PruneHook(lambda: self.tuner, trial if callable(trial) else lambda: trial)
        name = label or split

        def progress(outcome: UserOutcome) -> None:
            log.info("gen %d %s %s user %s: accuracy %.3f", candidate.generation, candidate.label, name,
                     outcome.user_id, outcome.accuracy)

        periods = sum(self.evaluator.n_periods(user) for user in user_ids)
        with self.observers.phase(EvaluationPhase(candidate.label, name, periods)) as bar:
            result = await self.evaluator.evaluate(candidate, split, user_ids, label=label, prune=prune,
                                                   on_user=progress, on_period=bar.advance)
        log.info("gen %d %s %s: %s %.3f%s (spend so far: %d calls)", candidate.generation, candidate.label, name,
                 self.config.objective, result.score, " PRUNED" if result.pruned else "",
                 self.usage.report().total().calls)
        return result

    async def _minibatch(self, candidate: Candidate, parent: Candidate | None) -> CandidateEval | None:
        """The gate's evaluation, or None when the candidate passed it (or there is no gate or parent)."""
        if self.gate is None or parent is None:
            return None
        users = self.gate.sample(self.split.train, candidate.generation)
        result = await self._evaluate(candidate, "train", users, label="minibatch")
        parent_train = self.evaluator.finished(parent.id, "train")
        assert parent_train is not None
        parent_values = {key: value for key, value in parent_train.instances().items() if key[0] in users}
        if self.gate.passes(result.instances(), parent_values):
            return None
        log.info("gen %d %s: stopped by the minibatch gate", candidate.generation, candidate.label)
        return result

    async def _run_candidate(self, candidate: Candidate, parent: Candidate | None) -> CandidateRun:
        """Gate, then train users (reporting to the candidate's trial, so it can be pruned), then validation;
        validation first, only the validation users (the train users follow in ``_confirm_on_train``)."""
        if parent is not None and self._validation_first:
            if self._speculation != "off":
                self._speculate(candidate, self._check_users(candidate, parent))
            return CandidateRun(train=None, val=await self._evaluate(candidate, "val", self.split.val))
        gated = await self._minibatch(candidate, parent)
        if gated is not None:
            return CandidateRun(train=None, minibatch=gated)
        train = await self._evaluate(candidate, "train", self.split.train, trial=candidate.trial_number)
        if train.pruned:
            return CandidateRun(train=train)
        return CandidateRun(train=train, val=await self._evaluate(candidate, "val", self.split.val))

    @property
    def _validation_first(self) -> bool:
        return self.config.strategy.order == "validation_first"

    @property
    def _speculation(self) -> str:
        """``episode.speculate`` in effect: off while a call, token or dollar budget is set (speculative calls would
        move where the run stops)."""
        budget = self.config.budget
        capped = (budget.max_calls, budget.max_tokens, budget.max_dollars) != (None, None, None)
        return "off" if capped else self.config.episode.speculate

    def _speculate(self, candidate: Candidate, users: list[str]) -> None:
        """Speculative episodes (``speculation``) of these search users, each in its split's store, in this order; a
        candidate of the last generation also plays the test users (it may be the best)."""
        for split, members in self._users.items():
            self.evaluator.speculate(candidate, split, [user for user in dict.fromkeys(users) if user in members])
        if candidate.generation == self.config.budget.generations and candidate.origin != "seed":
            self.evaluator.speculate(candidate, "test", self.split.test)

    async def close(self) -> None:
        await self.evaluator.speculation.cancel()
        await super().close()

    def _check_users(self, candidate: Candidate, parent: Candidate) -> list[str]:
        """Validation first: the train users a candidate preferred on validation is checked on (see
        ``_confirm_on_train``)."""
        parent_users = [user.user_id for user in self._parent_train(parent).users]
        if len(parent_users) < len(self.split.train):  # the parent kept its minibatch: check on the same users
            return parent_users
        return self.gate.sample(self.split.train, candidate.generation) if self.gate else self.split.train

    async def _confirm_on_train(self, ran: list[tuple[Candidate, CandidateRun]],
                                parent: Candidate) -> tuple[list[tuple[Candidate, CandidateRun]], bool]:
        """Validation first: the candidates the acceptance rule prefers on validation are run on the train users
        (all, or the gate's minibatch) one at a time, best on validation first, until one is not worse than its
        parent over those train users and the validation users together. That one would be kept (the best
        accepted on validation); the others are never run on the train users. A candidate checked on a
        minibatch runs on the other train users only if it becomes a parent (``_plan``: its evidence); when it does
        not (``strategy.complete_parent_train`` off), its candidates are checked on its minibatch users. One at
        a time and in a fixed order, so a resume takes the same path. Also says whether one was confirmed."""
        val_scores = {i: result.val.score for i, (_, result) in enumerate(ran)
                      if result.val is not None and self._decide(result.val, parent).accepted}
        preferred = sorted(val_scores, key=lambda i: -val_scores[i])  # stable: equal scores keep the plan's order
        parent_train = self._parent_train(parent)
        confirmed = list(ran)
        for i in preferred:
            candidate, result = ran[i]
            users = self._check_users(candidate, parent)
            if len(users) == len(self.split.train):
                check = await self._evaluate(candidate, "train", users)
                confirmed[i] = (candidate, CandidateRun(train=check, val=result.val))
            else:
                check = await self._evaluate(candidate, "train", users, label="minibatch")
                confirmed[i] = (candidate, CandidateRun(train=None, val=result.val, minibatch=check))
            if self._confirms(check, result.val, parent_train, parent):
                return confirmed, True
        return confirmed, False

    async def _settle(self, candidate: Candidate, result: CandidateRun, parent: Candidate) -> tuple[CandidateRun, bool]:
        """``strategy.first_accepted``: each candidate is checked on the train users right after validation
        (``_confirm_on_train``); the scheduler stops at the first one accepted."""
        [(_, result)], accepted = await self._confirm_on_train([(candidate, result)], parent)
        return result, accepted

    def _parent_train(self, parent: Candidate) -> CandidateEval:
        """The parent's train evaluation: on all train users, or (``strategy.complete_parent_train`` off) the
        minibatch it was checked on."""
        parent_train = self.evaluator.finished(parent.id, "train") or self.evaluator.finished(parent.id, "minibatch")
        assert parent_train is not None, f"parent {parent.id} has no train result"
        return parent_train

    def _confirms(self, check: CandidateEval, val: CandidateEval | None, parent_train: CandidateEval,
                  parent: Candidate) -> bool:
        """Not worse than the parent over the train users checked and the validation users together."""
        assert val is not None
        return not_worse(check.instances() | val.instances(), parent_train.instances() | self.val_instances[parent.id])

    # ----- the race (sequential acceptance) ------------------------------------------------------

    @property
    def _search_users(self) -> list[str]:
        return [*self.split.train, *self.split.val]

    def _incumbent(self, history: list[GenerationOutcome]) -> Candidate:
        """Sequential acceptance keeps one line: each kept candidate beat the one before it on fresh users."""
        return self.candidates[history[-1].kept_id]

    async def _play(self, candidate: Candidate, users: list[str], *,
                    parent_of: int | None = None) -> dict[Instance, float]:
        """The candidate's values on these search users, each split's users evaluated under its own label and all
        splits at once (the episodes stay in the split's store, so a longer list later plays only the new users).
        A parent's plays for generation ``parent_of`` have labels of their own (``train_parent_of_003``): the
        summaries of what kept it (its train and validation results) stay as they were."""
        chosen = {split: [user for user in users if user in members] for split, members in self._users.items()}
        played = await asyncio.gather(*(
            self._evaluate(candidate, split, members,
                           label=None if parent_of is None else f"{split}_parent_of_{parent_of:03d}")
            for split, members in chosen.items() if members))
        values: dict[Instance, float] = {}
        for result in played:  # in the splits' order, as one after the other would give
            values |= result.instances()
        return values

    def _round_player(self, generation: int, parent: Candidate, group: list[Candidate],
                      record: RaceRecord) -> Callable[[Candidate, list[str]], Awaitable[dict[Instance, float]]]:
        """``play`` for a race that asks for the parent and then the candidates still in it one after the other on
        the same users: the first ask of a round starts them all at once, and each ask takes its own result. The same
        plays as one at a time, so the same values and calls; a round's plays not asked for (an error ended the race)
        are cancelled."""
        started: dict[tuple[str, tuple[str, ...]], asyncio.Future[dict[Instance, float]]] = {}

        async def play(candidate: Candidate, users: list[str]) -> dict[Instance, float]:
            staying = record.rounds[-1].staying if record.rounds else [c.id for c in group]
            if (parent.id, tuple(users)) not in started:
                started[(parent.id, tuple(users))] = asyncio.ensure_future(
                    self._play(parent, users, parent_of=generation))
            for other in group:
                key = (other.id, tuple(users))
                if other.id in staying and key not in started:
                    started[key] = asyncio.ensure_future(self._play(other, users))
            try:
                return await started[(candidate.id, tuple(users))]
            except BaseException:
                for future in started.values():
                    future.cancel()
                raise

        return play

    def _race_users(self, generation: int, parent: Candidate) -> list[str]:
        return race_users(self._search_users, self.selected_on[parent.id], self.config.split.seed, generation)

    async def _play_evidence(self, generation: int, parent: Candidate) -> None:
        """Sequential acceptance: the parent's evidence is its episodes on the train users it has played (the race
        that kept it, or generation 0). A parent with none plays one train user, the first its race will play (a
        round that reaches that user then costs the parent nothing more)."""
        if not self.split.train or self.evaluator.episodes(parent.id, "train", self.split.train):
            return
        upcoming = [user for user in self._race_users(generation, parent) if user in self.split.train]
        await self._play(parent, (upcoming or self.split.train)[:1], parent_of=generation)

    def _race_path(self, generation: int) -> Path:
        return self._gen_dir(generation) / "race.json"

    def _remember_selection(self, outcome: GenerationOutcome) -> None:
        """The users that decided to keep the generation's winner (from its race record, also when resuming)."""
        if not self.sequential or not outcome.accepted_ids:
            return
        stored = read_json(self._race_path(outcome.generation),
                           remedy=f"{RESTORE}: the users that decided the kept candidate are only recorded there")
        records = [RaceRecord.model_validate(r) for r in stored]
        (winner,) = [r for r in records if r.winner_id is not None]
        self.selected_on[winner.winner_id or ""] = winner.selected_on

    async def _race(self, generation: int, parent: Candidate, plan: GenerationPlan) -> tuple[
            list[tuple[Candidate, CandidateRun]], list[Candidate], list[Candidate], list[Candidate], list[str]]:
        """The generation's race (``selection.race``): all candidates together, or under ``strategy.first_accepted``
        one at a time until one is kept. Returns the candidates run, not started (budget), not needed and accepted,
        and the budget reason if one stopped it. Rounds started by a killed process continue without a budget
        check; the winner then plays the validation users it has not (its validation score, as every kept
        candidate has one)."""
        strategy = self.config.strategy
        users = self._race_users(generation, parent)
        test = SequentialTest(strategy.test_confidence, strategy.min_effect, looks(len(users), strategy.race_users))
        instances = sum(self.evaluator.n_periods(user) for user in users)
        if not test.can_accept(instances):
            log.warning("gen %d: its race has %d (user, period) instance(s), too few for the sequential test to accept "
                        "anything at confidence %g (give more train or validation users, or strategy.acceptance: mean)",
                        generation, instances, strategy.test_confidence)
        started_path = self._gen_dir(generation) / "race_started.json"
        started = int(read_json(started_path, remedy=delete_and_resume(
            "it", "the race's rounds are checked against the budget again"))["rounds"]) if started_path.exists() else 0
        rounds_begun = [0]
        budget_stop: list[str] = []

        def may_start(_: int) -> str | None:
            number = rounds_begun[0]
            rounds_begun[0] += 1
            if number >= started:
                exceeded = self.budget.spent()
                if exceeded:
                    budget_stop.append(exceeded)
                    return exceeded
                write_json_atomic(started_path, {"rounds": number + 1})
            return None

        records: list[RaceRecord] = []

        def save(_: RaceRecord | None = None) -> None:
            write_json_atomic(self._race_path(generation), [json.loads(r.model_dump_json()) for r in records])

        groups = [[c] for c in plan.candidates] if strategy.first_accepted else [plan.candidates][:len(plan.candidates)]
        with self.observers.phase(CandidatesPhase(generation, len(plan.candidates))) as bar:
            for index, group in enumerate(groups):
                if self._speculation == "candidate" or (self._speculation == "generation" and index == 0):
                    for candidate in group if self._speculation == "candidate" else plan.candidates:
                        self._speculate(candidate, [*users, *self.split.val])  # the winner plays every validation user
                    self._speculate(parent, users)
                record = RaceRecord(parent_id=parent.id, candidate_ids=[c.id for c in group], users=users)
                records.append(record)
                await race(group, parent, users, chunk=strategy.race_users, test=test,
                           play=self._round_player(generation, parent, group, record), may_start=may_start,
                           record=record, on_round=save)
                bar.advance(len(group))
                await self.evaluator.speculation.cancel(c.id for c in group if c.id != record.winner_id)
                if record.winner_id is not None or record.stop_reason is not None:
                    break
            bar.skip(len(plan.candidates) - sum(len(record.candidate_ids) for record in records))
        save()  # also a generation without candidates has its (empty) record
        raced = {cid for record in records for round_ in record.rounds for cid in round_.verdicts}
        for record in records:
            log.info("gen %d race of %d candidate(s) on %d user(s): %s", generation, len(record.candidate_ids),
                     len(record.users), "; ".join(f"{self.candidates[cid].label} {verdict.reason}"
                                                  for round_ in record.rounds[-1:]
                                                  for cid, verdict in round_.verdicts.items()))
        accepted = [self.candidates[r.winner_id] for r in records if r.winner_id is not None]
        await self.evaluator.speculation.cancel(c.id for c in plan.candidates if c not in accepted)
        await self.evaluator.speculation.cancel([parent.id], keep_split="test")  # test users: for the best (``_finish``)
        for winner in accepted:
            await self._play(winner, self.split.val)
        await self.evaluator.speculation.cancel((c.id for c in accepted), keep_split="test")
        ran = [(c, CandidateRun(train=self.evaluator.finished(c.id, "train"), val=self.evaluator.finished(c.id, "val")))
               for c in plan.candidates if c.id in raced]
        left = [c for c in plan.candidates if c.id not in raced]
        return (ran, left if budget_stop else [], [] if budget_stop else left, accepted, budget_stop)

    # ----- proposals ----------------------------------------------------------------------------

    def _started_path(self, generation: int) -> Path:
        return self._gen_dir(generation) / "trials.json"

    def _first_trial(self, generation: int) -> int:
        """The number of the generation's first trial, saved when the generation starts (before its
        proposals): a process killed before the plan was saved leaves trials that the resumed one hands out
        again (same numbers, no failed trial). The file also says the generation passed its budget check."""
        path = self._started_path(generation)
        if not path.exists():
            write_json_atomic(path, {"first_trial": self.tuner.next_number()})
        remedy = delete_and_resume("it", "the generation's trials are then numbered from the study's next one")
        return int(read_json(path, remedy=remedy)["first_trial"])

    async def _plan(self, generation: int, parent: Candidate) -> GenerationPlan:
        path = self._gen_dir(generation) / "plan.json"
        stored = read_record(path, GenerationPlan)
        if stored is not None:
            return stored
        first_trial = self._first_trial(generation)
        if self.sequential:
            await self._play_evidence(generation, parent)
        elif self.config.strategy.complete_parent_train:
            await self._complete_parent_train(parent)
        episodes = self.evaluator.episodes(parent.id, "train", self.split.train, traces=True)
        evidence = render_evidence(evidence_from_episodes(episodes, self.items, self.config.feedback, self.environment),
                                   self.config.evidence_max_tokens)
        context = ProposalContext(
            generation=generation, parent=parent, evidence=evidence, task=self.config.task, bounds=self.bounds,
            components=[self.spec.component(name) for name in self.config.components], pool=tuple(self.pool),
            val_instances=self.val_instances, lineage=self.candidates,
        )
        self.tuner.reuse_from(first_trial)
        candidates, stats = await self._candidates(context)
        plan = GenerationPlan(generation=generation, parent_id=parent.id, feedback=evidence,
                              candidates=candidates, stats=stats)
        write_record(path, plan)
        return plan

    async def _candidates(self, context: ProposalContext) -> tuple[list[Candidate], ProposalStats]:
        """The generation's K candidates: the proposers' variants with Optuna's hyperparameters. A candidate whose
        policy is already known (an ancestor, an earlier proposal, another proposer's same text) would waste its
        slot: the proposers are asked again for that many new samples, at most ``strategy.resamples`` times; then the
        generation has fewer candidates (logged). Under sequential acceptance only the kept line counts as known."""
        parent, wanted = context.parent, self.config.budget.candidates
        candidates: list[Candidate] = []
        stats = ProposalStats()
        # Sequential acceptance judges a candidate only on the users of its own race: one proposed again later (not
        # kept, so not in the line) races again on that generation's fresh users, its stored episodes reused.
        seen = {candidate.id for candidate in self.pool} if self.sequential else set(self.candidates)
        resamples, drawn = self.config.strategy.resamples, Counter[int]()
        for attempt in range(resamples + 1):
            variants, made = await propose_all(self.proposers, context, wanted, drawn)
            stats.add(made)
            repeated = 0
            for variant in variants:
                if not variant.prompts and not self.config.hyperparameters:
                    continue
                number, params = self.tuner.ask()
                policy = parent.policy.with_prompts(**variant.prompts).with_hyperparameters(**params)
                if policy.policy_id in seen:
                    self.tuner.repeated(number)
                    repeated += 1
                    continue
                seen.add(policy.policy_id)
                changed = bool(variant.prompts)
                candidate = Candidate(
                    policy=policy, parent_id=parent.id, generation=context.generation, index=len(candidates),
                    origin="proposal" if changed else "tuning", changes=variant.changes, trial_number=number,
                    proposer=variant.proposer if changed else None,
                    other_parent_id=variant.other_parent_id if changed else None,
                )
                self.tuner.annotate(number, candidate_id=candidate.id)
                candidates.append(candidate)
            stats.duplicates += repeated
            if not repeated:
                break
            if attempt == resamples:
                log.info("gen %d: %d proposal(s) still repeated a known policy after %d new tries: %d candidate(s) "
                         "instead of %d", context.generation, repeated, resamples, len(candidates),
                         self.config.budget.candidates)
                break
            log.info("gen %d: %d proposal(s) repeated a known policy; asking for %d new one(s)", context.generation,
                     repeated, repeated)
            wanted = repeated
        return candidates, stats

    async def _complete_parent_train(self, parent: Candidate) -> None:
        """A parent checked on a minibatch only (validation first) runs on the other train users, its evidence; the
        scores and its answers table (now with every train user) go to its own MLflow candidate run, also when a
        killed process ran them and the resume logs them."""
        train = self.evaluator.finished(parent.id, "train") or await self._evaluate(parent, "train", self.split.train)
        checked_on_minibatch = self._validation_first and self.evaluator.finished(parent.id, "minibatch") is not None
        if checked_on_minibatch:
            self.observers.notify(ParentTrainCompleted(parent, train))

    # ----- generations --------------------------------------------------------------------------

    async def _generation_zero(self) -> GenerationOutcome:
        path = self._gen_dir(0) / "outcome.json"
        stored = read_record(path, GenerationOutcome)
        if stored is not None:
            return stored
        # Train and validation users at once: the seed is never pruned (no trial is complete yet), so nothing
        # waits on its train score. Its trial is asked at its first report to the pruner (or after its episodes), so
        # the first requests do not wait for Optuna's study.
        seed_trial = Deferred(lambda: self.tuner.seed_trial())
        if self._speculation != "off":  # the seed is scored on the test users in any case
            self.evaluator.speculate(self.seed, "test", self.split.test)
        train, val = await asyncio.gather(self._evaluate(self.seed, "train", self.split.train, trial=seed_trial.result),
                                          self._evaluate(self.seed, "val", self.split.val))
        seed = self.seed.model_copy(update={"trial_number": seed_trial.result()})
        assert not train.pruned, "the seed was pruned"
        run = CandidateRun(train=train, val=val)
        outcome = GenerationOutcome(
            generation=0, parent_id=seed.id, kept_id=seed.id, accepted=True, accepted_ids=[seed.id],
            train={seed.id: train.score}, val={seed.id: val.score}, pruned=[], parent_val=val.score,
            stats=ProposalStats(),
        )
        self._end_generation(outcome, [(seed, run)], feedback="")
        write_record(path, outcome)
        return outcome

    async def _generation(self, generation: int, parent: Candidate) -> GenerationOutcome:
        path = self._gen_dir(generation) / "outcome.json"
        stored = read_record(path, GenerationOutcome)
        if stored is not None:
            return stored
        plan = await self._plan(generation, parent)
        self.observers.notify(GenerationPlanned(plan, parent))
        if self._speculation != "off" and generation == self.config.budget.generations:  # the best so far may stay it
            incumbent = parent if self.sequential else best_of(self.pool, self.val_instances)
            self.evaluator.speculate(incumbent, "test", self.split.test)
        gathered = None
        if not self.sequential:  # the race's rounds are one process's (several workers refuse it: ``workers``)
            if self._speculation == "generation" and self._validation_first:
                for candidate in plan.candidates:
                    self._speculate(candidate, [*self.split.val, *self._check_users(candidate, parent)])
            with self.observers.phase(CandidatesPhase(generation, len(plan.candidates))) as bar:
                gathered = await self._schedule(plan.candidates, parent, bar)
        async with self.turns.turn(f"gen-{generation:03d}/outcome") as mine:
            if not mine:  # ended by another worker: its observers logged it
                outcome = read_record(path, GenerationOutcome)
                assert outcome is not None, f"generation {generation} ended in another worker without its outcome"
                return outcome
            return await self._outcome(generation, parent, plan, gathered)

    async def _outcome(self, generation: int, parent: Candidate, plan: GenerationPlan,
                       gathered: Scheduled | None) -> GenerationOutcome:
        """The generation's race (sequential acceptance) or its scheduled candidates decided, logged and saved."""
        path = self._gen_dir(generation) / "outcome.json"
        if gathered is None:
            ran, not_started, not_needed, accepted, budget_stop = await self._race(generation, parent, plan)
        else:
            budget_stop = [] if gathered.budget_stop is None else [gathered.budget_stop]
            tried, not_needed = plan.candidates[:len(gathered.runs)], plan.candidates[len(gathered.runs):]
            not_started = [c for c, result in zip(tried, gathered.runs, strict=True) if result is None]
            ran = [(c, result) for c, result in zip(tried, gathered.runs, strict=True) if result is not None]
            if self._validation_first and not self.config.one_candidate_at_a_time:
                ran, _ = await self._confirm_on_train(ran, parent)
            accepted = [c for c, result in ran if self._accepts(c, result, parent)]
            await self.evaluator.speculation.cancel(c.id for c in plan.candidates if c not in accepted)
            await self.evaluator.speculation.cancel(keep_split="test")  # test users: for the best (``_finish``)
        scores = {**self.val_instances, **{c.id: r.val.instances() for c, r in ran if r.val is not None}}
        kept = (accepted[0] if accepted else parent) if self.sequential else best_of([*self.pool, *accepted], scores)
        stop = None
        if not_started:
            stop = (f"{budget_stop[0]}: {len(not_started)} of {len(plan.candidates)} candidate(s) of "
                    f"generation {generation} not started")
        outcome = GenerationOutcome(
            generation=generation, parent_id=parent.id, kept_id=kept.id, accepted=bool(accepted),
            accepted_ids=[c.id for c in accepted],
            train={c.id: r.train.score for c, r in ran if r.train is not None},
            val={c.id: r.val.score for c, r in ran if r.val is not None},
            pruned=[c.id for c, r in ran if r.pruned], gated=[c.id for c, r in ran if r.gated],
            train_skipped=[c.id for c, r in ran if r.train_skipped],
            parent_val=mean_score(scores, kept), stats=plan.stats, not_started=[c.id for c in not_started],
            not_needed=[c.id for c in not_needed], stop_reason=stop,
        )
        self._end_generation(outcome, ran, feedback=plan.feedback, never_run=not_started + not_needed)
        write_record(path, outcome)
        return outcome

    async def _schedule(self, candidates: list[Candidate], parent: Candidate, bar: Progress) -> Scheduled:
        """The candidates through the scheduler: all at once, or (``one_candidate_at_a_time``) until one is accepted."""
        one_at_a_time = self.config.one_candidate_at_a_time
        return await self.scheduler.run(
            candidates, lambda candidate: self._run_candidate(candidate, parent), bar,
            settle=(lambda candidate, result: self._settle(candidate, result, parent)) if one_at_a_time else None)

    def _end_generation(self, outcome: GenerationOutcome, ran: list[tuple[Candidate, CandidateRun]], *, feedback: str,
                        never_run: list[Candidate] | None = None) -> None:
        """Every observer has the generation's end (its runs logged, then its trials closed: each trial names its
        candidate's run) before its outcome is saved, so a kill in between repeats it on resume."""
        event = GenerationEnded(
            outcome=outcome, ran=ran, never_run=never_run or [], lineage=self.candidates, feedback=feedback,
            usage=self.budget.recorded(self._gen_dir(outcome.generation)), spend=self.budget.report().total())
        self.observers.notify(event)
        self.tuner.close_generation(event, self.evaluator, self.observers.links)

    def _decide(self, val: CandidateEval, parent: Candidate) -> Decision:
        return self.acceptance.decide(val.instances(), self.val_instances[parent.id])

    def _accepts(self, candidate: Candidate, result: CandidateRun, parent: Candidate) -> bool:
        """The acceptance rule on validation; validation first, the candidate must also have been checked on train
        users (``_confirm_on_train``) and be not worse than its parent over those and the validation users."""
        if result.val is None:
            return False
        decision = self._decide(result.val, parent)
        if decision.accepted and self._validation_first:
            parent_train = self._parent_train(parent)
            check = result.train_check
            if check is None:
                decision = Decision(accepted=False, reason=f"{decision.reason}; not run on the train users: a "
                                    "candidate better on validation was confirmed there first")
            else:
                confirmed = self._confirms(check, result.val, parent_train, parent)
                decision = Decision(accepted=confirmed, reason=f"{decision.reason}; {len(check.users)} train user(s) "
                                    f"and validation together: {'not worse' if confirmed else 'worse'} than the parent")
        log.info("gen %d %s: %s (%s)", candidate.generation, candidate.label,
                 "accepted" if decision.accepted else "not accepted", decision.reason)
        return decision.accepted

    # ----- the run ------------------------------------------------------------------------------

    async def run(self) -> EvolutionResult:
        async with self.turns.turn("gen-000"):  # the upper-bound table and the seed's episodes
            table = asyncio.ensure_future(self.upper_bound_table(self.users))
            self.evaluator.upper_bound_pending = table  # the seed's episodes play meanwhile; their scores wait for it
            try:
                history = [await self._generation_zero()]
                await table
            finally:
                table.cancel()
                self.evaluator.upper_bound_pending = None
        self._admit(history[0].accepted_ids)
        stale, stop = 0, "max generations"
        for generation in range(1, self.config.budget.generations + 1):
            stored = read_record(self._gen_dir(generation) / "outcome.json", GenerationOutcome)
            parent = self._incumbent(history) if self.sequential else self.parents.select(
                self.pool, self.val_instances, generation)
            async with self.turns.turn(f"gen-{generation:03d}/plan"):  # another worker's decision: the same one
                exceeded = None if stored is not None else self._stop_before(generation, stale)
                if exceeded is None:
                    plan = await self._plan(generation, parent)
            if exceeded is not None:
                stop = exceeded
                break
            for candidate in plan.candidates:
                self.candidates[candidate.id] = candidate
            outcome = stored or await self._generation(generation, parent)
            history.append(outcome)
            self._admit(outcome.accepted_ids)
            self._remember_selection(outcome)
            stale = 0 if outcome.accepted else stale + 1
            if outcome.stop_reason:
                stop = outcome.stop_reason
                break
        best = self._incumbent(history) if self.sequential else best_of(self.pool, self.val_instances)
        return await self._finish(best, history, stop)

    def _stop_before(self, generation: int, stale: int) -> str | None:
        """The budget or patience that ends the run before this generation (a started one continues). Budgets only
        grow spent, so a worker that reads this after another decided gets the same answer."""
        if self._started_path(generation).exists():
            return None
        exceeded = self.budget.spent()
        if exceeded is None and self.config.budget.patience is not None and stale >= self.config.budget.patience:
            exceeded = f"patience ({self.config.budget.patience})"
        return exceeded

    async def _test_scores(self, candidate: Candidate, bar: Progress) -> tuple[Scores, list[UserScores]]:
        """Scores on the test users (never empty: the split guarantees at least one)."""
        await self.evaluator.evaluate(candidate, "test", self.split.test, on_period=bar.advance)
        return self.scores(candidate.id, "test", self.split.test)

    async def _cross_test(self, best: Candidate) -> CrossTestResult | None:
        """Seed and best on the test environment's items (``test_environment``), None without one."""
        test = self.config.test_environment
        if self.cross_evaluator is None or test is None:
            return None
        data = test.data.path or "synth"
        with self.observers.phase(FinalScoringPhase(2 * sum(self.cross_evaluator.n_periods(user)
                                                    for user in self.cross_evaluator.items))):
            return await cross_test(self.cross_evaluator, self.seed, best, environment=test.environment, data=data,
                                    run_dir=self.run_dir)

    async def _finish(self, best: Candidate, history: list[GenerationOutcome], stop: str) -> EvolutionResult:
        async with self.turns.turn("finish") as mine:
            if not mine:  # scored and logged by another worker
                stored = read_record(self.run_dir / "result.json", EvolutionResult)
                assert stored is not None, "the run ended in another worker without its result"
                return stored
            return await self._score_and_end(best, history, stop)

    async def _score_and_end(self, best: Candidate, history: list[GenerationOutcome], stop: str) -> EvolutionResult:
        await self.evaluator.speculation.cancel(set(self.candidates) - {self.seed.id, best.id})
        with self.observers.phase(FinalScoringPhase(2 * sum(self.evaluator.n_periods(user) for user in self.split.test))) as bar:
            # both at once; the seed once when it is the best (one candidate's store is written by one evaluation)
            both = [self.seed] if best.id == self.seed.id else [self.seed, best]
            scored = await asyncio.gather(*(self._test_scores(candidate, bar) for candidate in both))
            (seed_scores, seed_users), (best_scores, best_users) = scored[0], scored[-1]
        cross = await self._cross_test(best)
        result = EvolutionResult(
            protocol="outer_loop", environment=self.config.environment, objective=self.config.objective,
            seed=self.seed, best=best,
            seed_scores=seed_scores, best_scores=best_scores, seed_user_scores=seed_users,
            best_user_scores=best_users, history=history, stop_reason=stop, usage=self.budget.report(),
        )
        write_record(self.run_dir / "result.json", result)
        self.observers.notify(RunEnded(result, cross))
        return result


async def evolve(config: EvolveConfig, *, run_dir: Path, hub: runtime.Hub, resume: bool) -> EvolutionResult:
    """Async form of ``run_evolution`` (for callers already inside an event loop; several workers on one run:
    ``memevo.evolve.workers.evolve_worker``)."""
    run_dir = Path(run_dir)
    if config.protocol == "amemgym_period":
        from memevo.evolve.in_episode import InEpisodeEvolution

        run: OuterLoop | InEpisodeEvolution = InEpisodeEvolution(config, run_dir, hub, resume=resume)
    else:
        run = OuterLoop(config, run_dir, hub, resume=resume)
    try:
        return await run.run()
    finally:
        await run.close()


def run_evolution(config: EvolveConfig, *, run_dir: Path, hub: runtime.Hub, resume: bool) -> EvolutionResult:
    """Run (or resume) one evolution to the end and return seed vs best on the test users.

    Nothing is written to ``run_dir`` until the config has been checked against the data; with
    ``resume`` a folder without a run starts one."""
    return run_resumable(evolve(config, run_dir=run_dir, hub=hub, resume=resume))
