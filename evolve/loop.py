"""The evolution loop (``memevo evolve``): choose a parent, propose, tune, evaluate, accept, repeat.

Generation 0 evaluates the seed on train and validation users; the seed starts the pool. Each later generation asks
the run's strategy (``strategies``, chosen once by ``strategy.acceptance``) for a parent, lets it play what the
parent's evidence needs, plans the candidates (``proposers.planner``: the configured proposers write K variants and
Optuna sets each one's hyperparameters), and hands them to the strategy, which runs them and says which are accepted
and which one is kept: the race (``strategies.race``, the default) or the scheduled candidates
(``strategies.scheduled``). At the end the seed and the strategy's best are scored on the test users. Every
comparison uses the one configured ``objective``.

Everything is saved in the run folder as it finishes (the generation's first trial number before its
proposals, its plan before any evaluation, each evaluation, each generation's outcome; every LLM call in
the usage ledger as it is counted), so ``resume=True`` recomputes nothing finished and ends with the same
result as an uninterrupted run: the pool is rebuilt from the saved outcomes, trials asked for an unsaved
plan are handed out again, and every random choice is seeded (by the generation, or the trial).

Budgets are checked before each generation and each candidate's start (``spend.BudgetKeeper``): once one is spent,
the run stops, leaving out the candidates not started (the stop reason says so). The loop tells what happened as
events (``events``); observers (``plugins``: tracker, terminal, score plot) record them; the tuner tells its trials.
"""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from memevo.agents.registry import agent_spec
from memevo.core.library_log import RUN_LOG, LibraryLog
from memevo.environments.resume import run_resumable
from memevo.evolve import runtime
from memevo.evolve.candidate_records import generation_records
from memevo.evolve.candidates import Candidate
from memevo.evolve.config import EvolveConfig
from memevo.evolve.deferred import Deferred
from memevo.evolve.events import GenerationEnded, GenerationPlanned, objective_name
from memevo.evolve.final_scoring import FinalScoring
from memevo.evolve.proposers.planner import Planner
from memevo.evolve.records import (
    EvolutionResult,
    GenerationOutcome,
    GenerationPlan,
    ProposalStats,
    read_record,
    write_record,
)
from memevo.evolve.scheduling import CandidateRun, OneProcess, Scheduled, Turns
from memevo.evolve.selection.parents import mean_score
from memevo.evolve.spend import BudgetKeeper
from memevo.evolve.strategies import Lineage, Plays, StrategyContext, generation_dir, make_strategy
from memevo.evolve.user_units import end_units, spread, spread_seed

if TYPE_CHECKING:
    from memevo.evolve.tuner import Tuner

def open_tuner(config: EvolveConfig, *, storage: str, study_name: str, first_trial: dict[str, int],
               metric: str) -> Tuner:
    """The run's tuner; Optuna loads and opens its study here, in the start-up thread (``deferred``)."""
    from memevo.evolve.tuner import Tuner

    return Tuner(config.optuna, {str(name): space for name, space in config.hyperparameters.items()}, storage=storage,
                 study_name=study_name, first_trial=first_trial, metric=metric)


__all__ = ["EvolutionResult", "GenerationOutcome", "GenerationPlan", "OuterLoop", "evolve", "run_evolution"]


class OuterLoop(runtime.RunBase):
    """One evolution run over generations (see the module docstring)."""

    def __init__(self, config: EvolveConfig, run_dir: Path, hub: runtime.Hub, *, resume: bool,
                 turns: Turns | None = None, study_name: str | None = None) -> None:
        self.study_name = study_name or config.name
        """The Optuna study's name: the config's, or a worker run's own (``memevo.evolve.workers.identity``)."""
        super().__init__(config, run_dir, hub, resume=resume)
        self.budget = BudgetKeeper(config.budget, self.usage)
        self.turns = turns or OneProcess()
        """Worker processes sharing this run (``memevo.evolve.workers``): who does generation 0, each generation's
        plan, candidates and outcome, and the end; each unit is the resumable code one process runs."""
        self.start_later.defer(self.observers.warm_up)
        self.lineage = Lineage(candidates={self.seed.id: self.seed}, pool=[], val_instances={})
        self.plays = Plays(config, self.split, self.evaluator, self.observers, tuner=lambda: self.tuner,
                           calls=lambda: self.usage.report().total().calls)
        self.strategy = make_strategy(StrategyContext(
            config=config, split=self.split, plays=self.plays, lineage=self.lineage, budget=self.budget,
            turns=self.turns, observers=self.observers, run_dir=run_dir))
        spec = agent_spec(self.seed.policy.kind)
        self.planner = Planner(
            config, self._gen_dir, evaluator=self.evaluator, environment=self.environment, items=self.items,
            train_users=self.split.train, components=[spec.component(name) for name in config.components],
            bounds=self.bounds, tuner=lambda: self.tuner, proposers=lambda: self.proposers)

    def make_tuner(self) -> Deferred[Tuner]:
        """The Optuna study the loop asks for each candidate's hyperparameters (and tells, ``Tuner.close_generation``),
        opened once the first requests are in flight (``deferred``)."""
        config = self.config
        return self.start_later.defer(partial(
            open_tuner, config, storage=config.optuna.storage or f"sqlite:///{(self.run_dir / 'optuna.db').resolve()}",
            study_name=self.study_name,
            first_trial={name: getattr(self.seed.policy, name) for name in config.hyperparameters},
            metric=objective_name(config.objective, self.figure_key)),
            first=True)

    @property
    def tuner(self) -> Tuner:
        """The run's Optuna tuner; the first use waits for its study to open."""
        assert self.deferred_tuner is not None  # ``make_tuner``
        return self.deferred_tuner.result()

    def _gen_dir(self, generation: int) -> Path:
        return generation_dir(self.run_dir, generation)

    def _admit(self, candidate_ids: list[str]) -> None:
        """Add accepted candidates to the pool with their validation values (also when resuming)."""
        lineage = self.lineage
        for candidate_id in candidate_ids:
            if candidate_id in lineage.val_instances:
                continue
            val = self.evaluator.finished(candidate_id, "val")
            assert val is not None, f"accepted candidate {candidate_id} has no validation result"
            lineage.pool.append(lineage.candidates[candidate_id])
            lineage.val_instances[candidate_id] = val.instances()

    async def close(self) -> None:
        await self.plays.cancel()
        await super().close()

    async def _plan(self, generation: int, parent: Candidate) -> GenerationPlan:
        stored = self.planner.stored(generation)
        if stored is not None:
            return stored
        first_trial = self.planner.first_trial(generation)
        await self.strategy.prepare_parent(generation, parent)
        lineage = self.lineage
        return await self.planner.plan(generation, parent, first_trial, pool=lineage.pool,
                                       val_instances=lineage.val_instances, lineage=lineage.candidates)

    async def _generation_zero(self) -> GenerationOutcome:
        path = self._gen_dir(0) / "outcome.json"
        stored = read_record(path, GenerationOutcome)
        if stored is not None:
            return stored
        # Train and validation users at once: the seed is never pruned (no trial is complete yet), so nothing
        # waits on its train score. Its trial is asked at its first report to the pruner (or after its episodes), so
        # the first requests do not wait for Optuna's study.
        seed_trial = Deferred(lambda: self.tuner.seed_trial())
        self.plays.speculate_test(self.seed)  # the seed is scored on the test users in any case
        train_users, val_users = self.strategy.seed_users()
        train, val = await asyncio.gather(
            self.plays.evaluate(self.seed, "train", train_users, trial=seed_trial.result),
            self.plays.evaluate(self.seed, "val", val_users))
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
        if generation == self.config.budget.generations:  # the best so far may stay it
            self.plays.speculate_test(self.strategy.incumbent(parent))
        scheduled = await self.strategy.run_candidates(generation, parent, plan)
        async with self.turns.turn(f"gen-{generation:03d}/outcome") as mine:
            if not mine:  # ended by another worker: its observers logged it
                outcome = read_record(path, GenerationOutcome)
                assert outcome is not None, f"generation {generation} ended in another worker without its outcome"
                return outcome
            return await self._outcome(generation, parent, plan, scheduled)

    async def _outcome(self, generation: int, parent: Candidate, plan: GenerationPlan,
                       scheduled: Scheduled | None) -> GenerationOutcome:
        """The generation decided by the strategy, logged and saved."""
        decided = await self.strategy.decide(generation, parent, plan, scheduled)
        ran, accepted = decided.ran, decided.accepted
        scores = {**self.lineage.val_instances, **{c.id: r.val.instances() for c, r in ran if r.val is not None}}
        kept = self.strategy.kept(parent, accepted, scores)
        stop = None
        if decided.not_started:
            stop = (f"{decided.budget_stop}: {len(decided.not_started)} of {len(plan.candidates)} candidate(s) of "
                    f"generation {generation} not started")
        outcome = GenerationOutcome(
            generation=generation, parent_id=parent.id, kept_id=kept.id, accepted=bool(accepted),
            accepted_ids=[c.id for c in accepted],
            train={c.id: r.train.score for c, r in ran if r.train is not None},
            val={c.id: r.val.score for c, r in ran if r.val is not None},
            pruned=[c.id for c, r in ran if r.pruned], gated=[c.id for c, r in ran if r.gated],
            train_skipped=[c.id for c, r in ran if r.train_skipped],
            parent_val=mean_score(scores, kept), stats=plan.stats, not_started=[c.id for c in decided.not_started],
            not_needed=[c.id for c in decided.not_needed], stop_reason=stop,
        )
        self._end_generation(outcome, ran, feedback=plan.feedback, never_run=decided.not_started + decided.not_needed)
        write_record(self._gen_dir(generation) / "outcome.json", outcome)
        return outcome

    def _end_generation(self, outcome: GenerationOutcome, ran: list[tuple[Candidate, CandidateRun]], *, feedback: str,
                        never_run: list[Candidate] | None = None) -> None:
        """Every observer has the generation's end, its decisions and candidates' records (its runs logged, then its
        trials closed: each names its candidate's run) before its outcome is saved: a kill in between repeats it."""
        never_run = never_run or []
        decisions, records = generation_records(self.evaluator, self.plays.users, self._gen_dir(outcome.generation),
                                                outcome, ran, never_run, self.lineage.candidates)
        event = GenerationEnded(outcome=outcome, ran=ran, never_run=never_run, lineage=self.lineage.candidates,
                                feedback=feedback, usage=self.budget.recorded(self._gen_dir(outcome.generation)),
                                spend=self.budget.report().total(), decisions=decisions, records=records)
        self.observers.notify(event)
        self.tuner.close_generation(event, self.observers.links)

    async def run(self) -> EvolutionResult:
        await spread_seed(self.turns, self, self.plays, self.strategy)  # workers: the table, then the seed's users
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
            parent = self.strategy.parent(history, generation)
            async with self.turns.turn(f"gen-{generation:03d}/plan"):  # another worker's decision: the same one
                exceeded = None if stored is not None else self._stop_before(generation, stale)
                if exceeded is None:
                    plan = await self._plan(generation, parent)
            if exceeded is not None:
                stop = exceeded
                break
            for candidate in plan.candidates:
                self.lineage.candidates[candidate.id] = candidate
            outcome = stored or await self._generation(generation, parent)
            history.append(outcome)
            self._admit(outcome.accepted_ids)
            self.strategy.remember(outcome)
            stale = 0 if outcome.accepted else stale + 1
            if outcome.stop_reason:
                stop = outcome.stop_reason
                break
        return await self._finish(self.strategy.best(history), history, stop)

    def _stop_before(self, generation: int, stale: int) -> str | None:
        """The budget or patience that ends the run before this generation (a started one continues). Budgets only
        grow spent, so a worker that reads this after another decided gets the same answer."""
        if self.planner.started_path(generation).exists():
            return None
        exceeded = self.budget.spent()
        if exceeded is None and self.config.budget.patience is not None and stale >= self.config.budget.patience:
            exceeded = f"patience ({self.config.budget.patience})"
        return exceeded

    async def _finish(self, best: Candidate, history: list[GenerationOutcome], stop: str) -> EvolutionResult:
        await spread(self.turns, end_units(self, self.plays, best), width=self.plays.width)  # with other workers
        async with self.turns.turn("finish") as mine:
            if not mine:  # scored and logged by another worker
                stored = read_record(self.run_dir / "result.json", EvolutionResult)
                assert stored is not None, "the run ended in another worker without its result"
                return stored
            return await self._score_and_end(best, history, stop)

    async def _score_and_end(self, best: Candidate, history: list[GenerationOutcome], stop: str) -> EvolutionResult:
        await self.plays.cancel(set(self.lineage.candidates) - {self.seed.id, best.id})
        return await FinalScoring(self, self.budget).result(best, history, stop)


async def evolve(config: EvolveConfig, *, run_dir: Path, hub: runtime.Hub, resume: bool) -> EvolutionResult:
    """``run_evolution`` for callers already inside an event loop (a notebook's ``memevo.optimize``)."""
    run_dir = Path(run_dir)
    if config.protocol == "amemgym_period":
        from memevo.evolve.in_episode import InEpisodeEvolution

        run: OuterLoop | InEpisodeEvolution = InEpisodeEvolution(config, run_dir, hub, resume=resume)
    else:
        run = OuterLoop(config, run_dir, hub, resume=resume)
    with LibraryLog(run_dir / RUN_LOG):  # libraries' warnings: in the run folder, not on the terminal
        try:
            return await run.run()
        finally:
            await run.close()


def run_evolution(config: EvolveConfig, *, run_dir: Path, hub: runtime.Hub, resume: bool) -> EvolutionResult:
    """Run (or resume) one evolution to the end and return seed vs best on the test users.

    Nothing is written to ``run_dir`` until the config has been checked against the data; with ``resume`` a folder
    without a run starts one."""
    return run_resumable(evolve(config, run_dir=run_dir, hub=hub, resume=resume))
