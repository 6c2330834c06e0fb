"""The end of an outer-loop run: seed and best scored on the test users (and on the test environment's items when
the config names one), the result saved and told to the observers."""

from __future__ import annotations

import asyncio

from memevo.agents.llm.accounting import RoleUsage
from memevo.environments.metrics import Scores, UserScores
from memevo.evolve.candidates import Candidate
from memevo.evolve.cross_test import CrossTestResult, cross_test
from memevo.evolve.events import FinalScoringPhase, Progress, RunEnded
from memevo.evolve.records import EvolutionResult, GenerationOutcome, write_record
from memevo.evolve.runtime import RunBase
from memevo.evolve.spend import BudgetKeeper


class FinalScoring:
    """Scores a run's seed and best once its generations are over."""

    def __init__(self, run: RunBase, budget: BudgetKeeper) -> None:
        self.run = run
        self.budget = budget

    async def _test_scores(self, candidate: Candidate, bar: Progress) -> tuple[Scores, list[UserScores]]:
        """Scores on the test users (never empty: the split guarantees at least one)."""
        run = self.run
        await run.evaluator.evaluate(candidate, "test", run.split.test, on_period=bar.advance)
        return run.scores(candidate.id, "test", run.split.test)

    async def _cross_test(self, best: Candidate) -> CrossTestResult | None:
        """Seed and best on the test environment's items (``test_environment``), None without one."""
        run, test = self.run, self.run.config.test_environment
        if run.cross_evaluator is None or test is None:
            return None
        data = test.data.path or "synth"
        with run.observers.phase(FinalScoringPhase(2 * sum(run.cross_evaluator.n_periods(user)
                                                   for user in run.cross_evaluator.items))):
            return await cross_test(run.cross_evaluator, run.seed, best, environment=test.environment, data=data,
                                    run_dir=run.run_dir)

    async def result(self, best: Candidate, history: list[GenerationOutcome], stop: str) -> EvolutionResult:
        """The run's result, written to ``result.json`` and told as ``RunEnded``."""
        run = self.run
        periods = 2 * sum(run.evaluator.n_periods(user) for user in run.split.test)
        with run.observers.phase(FinalScoringPhase(periods)) as bar:
            # both at once; the seed once when it is the best (one candidate's store is written by one evaluation)
            both = [run.seed] if best.id == run.seed.id else [run.seed, best]
            scored = await asyncio.gather(*(self._test_scores(candidate, bar) for candidate in both))
            (seed_scores, seed_users), (best_scores, best_users) = scored[0], scored[-1]
        cross = await self._cross_test(best)
        result = EvolutionResult(
            protocol="outer_loop", environment=run.config.environment, objective=run.config.objective,
            seed=run.seed, best=best,
            seed_scores=seed_scores, best_scores=best_scores, seed_user_scores=seed_users,
            best_user_scores=best_users, history=history, stop_reason=stop, usage=self.budget.report(),
        )
        write_record(run.run_dir / "result.json", result)
        costs = {candidate.id: run.evaluator.costs.total(candidate.id) or RoleUsage() for candidate in both}
        run.observers.notify(RunEnded(result, cross, costs))
        return result
