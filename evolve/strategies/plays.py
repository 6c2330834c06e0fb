"""The episodes a generation strategy asks for: a candidate evaluated on users (with its progress bar and log lines),
search users played across their splits, and speculative episodes (``episode.speculate``, ``speculation``).

The loop and every strategy share one ``Plays``, so an evaluation is logged and shown the same way whoever asks.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from functools import cached_property
from typing import TYPE_CHECKING

from memevo.environments.score_text import FigureName, data_figure_name
from memevo.environments.short_ids import short_user_id
from memevo.evolve.candidates import Candidate
from memevo.evolve.config import EvolveConfig
from memevo.evolve.evaluation import CandidateEval, Evaluator, PruneHook, Pruner, UserOutcome
from memevo.evolve.events import EvaluationPhase, Observers, objective_name
from memevo.evolve.records import Instance

if TYPE_CHECKING:
    from memevo.evolve.runtime import Split

log = logging.getLogger("memevo.evolve")


class Plays:
    """Evaluations and speculative episodes of one run's candidates."""

    def __init__(self, config: EvolveConfig, split: Split, evaluator: Evaluator, observers: Observers, *,
                 tuner: Callable[[], Pruner], calls: Callable[[], int]) -> None:
        self.config = config
        self.split = split
        self.evaluator = evaluator
        self.observers = observers
        self.tuner = tuner
        self.calls = calls
        """The run's calls so far (for the log line of each evaluation)."""

    @property
    def users(self) -> dict[str, list[str]]:
        """The search users by split."""
        return {"train": self.split.train, "val": self.split.val}

    @property
    def width(self) -> int:
        """How many users this process plays at once, over all of its evaluations."""
        return self.evaluator.episode_config.max_concurrent_users

    @cached_property
    def figure(self) -> FigureName:
        """What the log lines call a user's headline figure: ``accuracy`` only when every question of the run's data
        is multiple choice, ``score`` (a mean of per-question credit) otherwise, as the run's metric names do."""
        return data_figure_name(self.evaluator.environment, self.evaluator.items.values())

    async def evaluate(self, candidate: Candidate, split: str, user_ids: list[str], *,
                       trial: int | Callable[[], int] | None = None, label: str | None = None) -> CandidateEval:
        """The evaluation (``evaluation``) with its progress; ``trial`` receives the values for pruning."""
        prune = None if trial is None else PruneHook(self.tuner, trial if callable(trial) else lambda: trial)
        name = label or split

        def progress(outcome: UserOutcome) -> None:
            log.info("gen %d %s %s user %s: %s %.3f", candidate.generation, candidate.label, name,
                     short_user_id(outcome.user_id, self.evaluator.items), self.figure, outcome.accuracy)

        periods = sum(self.evaluator.n_periods(user) for user in user_ids)
        with self.observers.phase(EvaluationPhase(candidate.label, name, periods)) as bar:
            result = await self.evaluator.evaluate(candidate, split, user_ids, label=label, prune=prune,
                                                   on_user=progress, on_period=bar.advance)
        log.info("gen %d %s %s: %s %.3f%s (spend so far: %d calls)", candidate.generation, candidate.label, name,
                 objective_name(self.config.objective, self.figure), result.score, " PRUNED" if result.pruned else "", self.calls())
        return result

    async def play(self, candidate: Candidate, users: list[str], *,
                   parent_of: int | None = None) -> dict[Instance, float]:
        """The candidate's values on these search users, each split's users evaluated under its own label and all
        splits at once (the episodes stay in the split's store, so a longer list later plays only the new users).
        A parent's plays for generation ``parent_of`` have labels of their own (``train_parent_of_003``): the
        summaries of what kept it (its train and validation results) stay as they were."""
        chosen = {split: [user for user in users if user in members] for split, members in self.users.items()}
        played = await asyncio.gather(*(
            self.evaluate(candidate, split, members,
                          label=None if parent_of is None else f"{split}_parent_of_{parent_of:03d}")
            for split, members in chosen.items() if members))
        values: dict[Instance, float] = {}
        for result in played:  # in the splits' order, as one after the other would give
            values |= result.instances()
        return values

    @property
    def capped(self) -> bool:
        """Whether a call, token or dollar budget is set: calls made sooner could move where the run stops."""
        budget = self.config.budget
        return (budget.max_calls, budget.max_tokens, budget.max_dollars) != (None, None, None)

    @property
    def speculation(self) -> str:
        """``episode.speculate`` in effect: off while a spend budget is set (``capped``)."""
        return "off" if self.capped else self.config.episode.speculate

    def speculate(self, candidate: Candidate, users: list[str]) -> None:
        """Speculative episodes (``speculation``) of these search users, each in its split's store, in this order; a
        candidate of the last generation also plays the test users (it may be the best)."""
        for split, members in self.users.items():
            self.evaluator.speculate(candidate, split, [user for user in dict.fromkeys(users) if user in members])
        if candidate.generation == self.config.budget.generations and candidate.origin != "seed":
            self.evaluator.speculate(candidate, "test", self.split.test)

    def speculate_test(self, candidate: Candidate) -> None:
        """The test users of a candidate that may end the run as its best, when speculation is on."""
        if self.speculation != "off":
            self.start_test([candidate])

    def start_test(self, candidates: Iterable[Candidate]) -> None:
        """The test users of candidates the run's end scores whatever happens next, played from now rather than
        when the end asks for them: the same episodes and calls, sooner. They go through the speculative store
        (``speculation``), so nothing the run reports sees them before the end adopts them. Not under a spend
        budget (``capped``): the end plays them then, as before."""
        if self.capped:
            return
        for candidate in candidates:
            self.evaluator.speculate(candidate, "test", self.split.test)

    async def cancel(self, candidate_ids: Iterable[str] | None = None, *, keep_split: str | None = None) -> None:
        """Stop speculative episodes (``speculation.Speculator.cancel``)."""
        await self.evaluator.speculation.cancel(candidate_ids, keep_split=keep_split)
