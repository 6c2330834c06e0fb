"""The scheduled generation (``strategy.acceptance: mean`` or ``paired``): the candidates run through the scheduler,
and those the acceptance rule prefers to their parent on validation join the pool.

Train first (``strategy.order: train_first``): the minibatch gate when it is on, then the train users (pruning weak
candidates early), then the validation users. Validation first (the default order): the validation users come
first; the candidates the rule prefers there are run on the train users (all, or the gate's minibatch), best first,
until one is not worse than its parent over those and the validation users together: only that one joins the pool,
and no train episode is spent on the others. Under ``strategy.first_accepted`` the candidates go one at a time
instead, each checked on the train users as soon as the rule prefers it on validation, and the first one kept ends
the generation. A pool candidate chosen as parent runs on the remaining train users first (its evidence), unless
``strategy.complete_parent_train`` is off. The parent is chosen by ``strategy.parents``; the best of the pool on
validation is the run's best.
"""

from __future__ import annotations

import logging

from memevo.evolve.candidate_records import candidate_record
from memevo.evolve.candidates import Candidate
from memevo.evolve.evaluation import CandidateEval
from memevo.evolve.events import CandidatesPhase, ParentTrainCompleted
from memevo.evolve.records import GenerationOutcome, GenerationPlan, Instance
from memevo.evolve.scheduling import CandidateRun, CandidateScheduler, Scheduled
from memevo.evolve.selection import Decision, MinibatchGate, best_of, make_acceptance, make_parent_selector
from memevo.evolve.selection.gate import not_worse
from memevo.evolve.strategies.base import GenerationStrategy, Ran, StrategyContext
from memevo.evolve.strategies.race_units import generation_start

log = logging.getLogger("memevo.evolve")


class ScheduledStrategy(GenerationStrategy):
    """All candidates at once, or one at a time until one is accepted (see the module docstring)."""

    def __init__(self, context: StrategyContext) -> None:
        super().__init__(context)
        strategy = self.config.strategy
        self.parents = make_parent_selector(strategy.parents, seed=self.config.split.seed)
        self.acceptance = make_acceptance(strategy.acceptance, strategy.test_confidence, strategy.min_effect)
        self.gate = MinibatchGate(strategy.minibatch, self.config.split.seed) if strategy.minibatch else None
        self.scheduler = CandidateScheduler(context.budget, concurrency=self.config.episode.candidate_concurrency,
                                            started=self.plays.evaluator.started, turns=context.turns)
        self.validation_first = strategy.order == "validation_first"

    def parent(self, history: list[GenerationOutcome], generation: int) -> Candidate:
        return self.parents.select(self.lineage.pool, self.lineage.val_instances, generation)

    def best(self, history: list[GenerationOutcome]) -> Candidate:
        return best_of(self.lineage.pool, self.lineage.val_instances)

    def incumbent(self, parent: Candidate) -> Candidate:
        return self.best([])

    def kept(self, parent: Candidate, accepted: list[Candidate], scores: dict[str, dict[Instance, float]]) -> Candidate:
        return best_of([*self.lineage.pool, *accepted], scores)

    async def prepare_parent(self, generation: int, parent: Candidate) -> None:
        """A parent checked on a minibatch only (validation first) runs on the other train users, its evidence; the
        scores and its answers table (now with every train user) go to its own MLflow candidate run, also when a
        killed process ran them and the resume logs them."""
        if not self.config.strategy.complete_parent_train:
            return
        evaluator = self.plays.evaluator
        train = evaluator.finished(parent.id, "train") or await self.plays.evaluate(parent, "train", self.split.train)
        if self.validation_first and evaluator.finished(parent.id, "minibatch") is not None:
            evals = {"train": train, "val": evaluator.finished(parent.id, "val")}
            self.context.observers.notify(ParentTrainCompleted(parent, candidate_record(evaluator, self.plays.users,
                                                                                        parent, evals)))

    async def run_candidates(self, generation: int, parent: Candidate, plan: GenerationPlan) -> Scheduled:
        """The candidates through the scheduler: all at once, or (``one_candidate_at_a_time``) until one is
        accepted."""
        if self.plays.speculation == "generation" and self.validation_first:
            for candidate in plan.candidates:
                self.plays.speculate(candidate, [*self.split.val, *self._check_users(candidate, parent)])
        with self.context.observers.phase(CandidatesPhase(generation, len(plan.candidates))) as bar:
            one_at_a_time = self.config.one_candidate_at_a_time
            return await self.scheduler.run(
                plan.candidates, lambda candidate: self._run_candidate(candidate, parent), bar,
                settle=(lambda candidate, result: self._settle(candidate, result, parent)) if one_at_a_time else None,
                spent=None if one_at_a_time else generation_start(self.context, generation))

    async def decide(self, generation: int, parent: Candidate, plan: GenerationPlan,
                     scheduled: Scheduled | None) -> Ran:
        assert scheduled is not None  # ``run_candidates``
        tried, not_needed = plan.candidates[:len(scheduled.runs)], plan.candidates[len(scheduled.runs):]
        not_started = [c for c, result in zip(tried, scheduled.runs, strict=True) if result is None]
        ran = [(c, result) for c, result in zip(tried, scheduled.runs, strict=True) if result is not None]
        if self.validation_first and not self.config.one_candidate_at_a_time:
            ran, _ = await self._confirm_on_train(ran, parent)
        accepted = [c for c, result in ran if self._accepts(c, result, parent)]
        await self.plays.cancel(c.id for c in plan.candidates if c not in accepted)
        await self.plays.cancel(keep_split="test")  # test users: for the best (the loop's end)
        return Ran(ran=ran, not_started=not_started, not_needed=not_needed, accepted=accepted,
                   budget_stop=scheduled.budget_stop)

    async def _minibatch(self, candidate: Candidate, parent: Candidate | None) -> CandidateEval | None:
        """The gate's evaluation, or None when the candidate passed it (or there is no gate or parent)."""
        if self.gate is None or parent is None:
            return None
        users = self.gate.sample(self.split.train, candidate.generation)
        result = await self.plays.evaluate(candidate, "train", users, label="minibatch")
        parent_train = self.plays.evaluator.finished(parent.id, "train")
        assert parent_train is not None
        parent_values = {key: value for key, value in parent_train.instances().items() if key[0] in users}
        if self.gate.passes(result.instances(), parent_values):
            return None
        log.info("gen %d %s: stopped by the minibatch gate", candidate.generation, candidate.label)
        return result

    async def _run_candidate(self, candidate: Candidate, parent: Candidate | None) -> CandidateRun:
        """Gate, then train users (reporting to the candidate's trial, so it can be pruned), then validation;
        validation first, only the validation users (the train users follow in ``_confirm_on_train``)."""
        if parent is not None and self.validation_first:
            if self.plays.speculation != "off":
                self.plays.speculate(candidate, self._check_users(candidate, parent))
            return CandidateRun(train=None, val=await self.plays.evaluate(candidate, "val", self.split.val))
        gated = await self._minibatch(candidate, parent)
        if gated is not None:
            return CandidateRun(train=None, minibatch=gated)
        train = await self.plays.evaluate(candidate, "train", self.split.train, trial=candidate.trial_number)
        if train.pruned:
            return CandidateRun(train=train)
        return CandidateRun(train=train, val=await self.plays.evaluate(candidate, "val", self.split.val))

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
        minibatch runs on the other train users only if it becomes a parent (``prepare_parent``: its evidence); when
        it does not (``strategy.complete_parent_train`` off), its candidates are checked on its minibatch users. One
        at a time and in a fixed order, so a resume takes the same path. Also says whether one was confirmed."""
        val_scores = {i: result.val.score for i, (_, result) in enumerate(ran)
                      if result.val is not None and self._decide(result.val, parent).accepted}
        preferred = sorted(val_scores, key=lambda i: -val_scores[i])  # stable: equal scores keep the plan's order
        parent_train = self._parent_train(parent)
        confirmed = list(ran)
        for i in preferred:
            candidate, result = ran[i]
            users = self._check_users(candidate, parent)
            if len(users) == len(self.split.train):
                check = await self.plays.evaluate(candidate, "train", users)
                confirmed[i] = (candidate, CandidateRun(train=check, val=result.val))
            else:
                check = await self.plays.evaluate(candidate, "train", users, label="minibatch")
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
        evaluator = self.plays.evaluator
        parent_train = evaluator.finished(parent.id, "train") or evaluator.finished(parent.id, "minibatch")
        assert parent_train is not None, f"parent {parent.id} has no train result"
        return parent_train

    def _confirms(self, check: CandidateEval, val: CandidateEval | None, parent_train: CandidateEval,
                  parent: Candidate) -> bool:
        """Not worse than the parent over the train users checked and the validation users together."""
        assert val is not None
        parent_val = self.lineage.val_instances[parent.id]
        return not_worse(check.instances() | val.instances(), parent_train.instances() | parent_val)

    def _decide(self, val: CandidateEval, parent: Candidate) -> Decision:
        return self.acceptance.decide(val.instances(), self.lineage.val_instances[parent.id])

    def _accepts(self, candidate: Candidate, result: CandidateRun, parent: Candidate) -> bool:
        """The acceptance rule on validation; validation first, the candidate must also have been checked on train
        users (``_confirm_on_train``) and be not worse than its parent over those and the validation users."""
        if result.val is None:
            return False
        decision = self._decide(result.val, parent)
        if decision.accepted and self.validation_first:
            check = result.train_check
            if check is None:
                decision = Decision(accepted=False, reason=f"{decision.reason}; not run on the train users: a "
                                    "candidate better on validation was confirmed there first")
            else:
                confirmed = self._confirms(check, result.val, self._parent_train(parent), parent)
                decision = Decision(accepted=confirmed, reason=f"{decision.reason}; {len(check.users)} train user(s) "
                                    f"and validation together: {'not worse' if confirmed else 'worse'} than the parent")
        log.info("gen %d %s: %s (%s)", candidate.generation, candidate.label,
                 "accepted" if decision.accepted else "not accepted", decision.reason)
        return decision.accepted
