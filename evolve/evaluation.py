"""Evaluating a candidate on a set of users: the one place that runs episodes and scores them, once.

Each (candidate, split) has its own ``RunStore`` under ``<run_dir>/evals/<candidate id>/<split>/``, so a
killed evaluation resumes per period, and a summary JSON per evaluation (``<split>.json``, or another
``label`` such as the minibatch gate's) written when it finishes, so a finished one is never recomputed. A summary
is keyed by everything that made it (split, the users asked for in their order, objective): asked again under the
same label for other users, the evaluation runs (their stored episodes are reused) and the summary is replaced.
A minibatch on some train users shares the train store: the full train evaluation reuses its episodes.
Users run concurrently, but intermediate values go to the pruner in user order (prefix by prefix), so whether a
candidate is pruned does not depend on which user finished first.

Episodes are played by the run's environment (``environments.protocol``): live with the simulator for AMemGym,
from the items' own sessions for the replayed benchmarks. Every summary keeps, per user and period, both accuracy
and AMemGym's memory ratio (None elsewhere); ``objective`` picks the
one the loop compares (accuracy unless a config asks for ``amemgym_memory_score`` explicitly). Scores, and episodes without their transcripts and consulted memories, are kept in
memory once loaded.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Protocol

from pydantic import BeforeValidator

from memevo.agents.base import MemoryAgent
from memevo.agents.policy import MemoryPolicy
from memevo.core.atomic_files import write_json_atomic
from memevo.core.lazy_model import LazyModel
from memevo.core.run_files import read_model
from memevo.environments.amemgym.environment import AMemGymEnvironment
from memevo.environments.amemgym.simulators.base import UserSimulator
from memevo.environments.item_run import AfterPeriod, ItemRun
from memevo.environments.metrics import Scores, UpperBoundTable, UserScores, score_episodes, user_scores
from memevo.environments.protocol import Environment
from memevo.environments.records import EpisodeResult
from memevo.environments.runner import EpisodeConfig
from memevo.environments.store import RunStore
from memevo.evolve.candidate_costs import CandidateCosts
from memevo.evolve.candidates import Candidate
from memevo.evolve.cells import pooled_mean
from memevo.evolve.config import Objective, stored_objective
from memevo.evolve.records import SUMMARY_REMEDY, Instance
from memevo.evolve.speculation import Speculator


class UserOutcome(LazyModel):
    """One user's accuracy and memory score, overall and per period (memory None where undefined), with each
    period's questions (empty in a summary written before they were kept: its cells then weigh 1)."""

    user_id: str
    accuracy: float
    period_accuracy: list[float]
    memory_score: float | None = None
    period_memory: list[float | None] = []
    period_questions: list[int] = []

    def value(self, objective: Objective) -> float | None:
        return self.memory_score if objective == "amemgym_memory_score" else self.accuracy

    def period_values(self, objective: Objective) -> list[float | None]:
        return list(self.period_memory) if objective == "amemgym_memory_score" else list(self.period_accuracy)

    def period_weights(self, objective: Objective) -> list[int]:
        """Each period's weight in a mean over cells: its questions for accuracy, 1 for AMemGym's ratio."""
        if objective == "amemgym_memory_score" or len(self.period_questions) != len(self.period_accuracy):
            return [1] * len(self.period_accuracy)
        return list(self.period_questions)


def user_outcome(episode: EpisodeResult, item: Any, table: UpperBoundTable | None) -> UserOutcome:
    (scored,) = user_scores([episode], [item], table)
    return UserOutcome(
        user_id=episode.user_id, accuracy=scored.accuracy, period_accuracy=scored.per_period_accuracy,
        memory_score=scored.memory_score, period_memory=scored.per_period_memory,
        period_questions=scored.per_period_questions,
    )


class CandidateEval(LazyModel):
    """A candidate's result on one split; ``pruned`` ones cover only a prefix of the users."""

    candidate_id: str
    split: str
    objective: Annotated[Objective, BeforeValidator(stored_objective)] = "accuracy"
    users: list[UserOutcome] = []
    n_users_total: int
    pruned: bool = False
    requested: list[str] = []
    """The users asked for, in order (a pruned result covers a prefix of them)."""

    def made_by(self, split: str, user_ids: Sequence[str], objective: Objective) -> bool:
        """Whether this is the result of evaluating ``user_ids`` of ``split`` for ``objective``. A summary written
        before ``requested`` was kept is matched on the users it covers (a pruned one, a prefix of them)."""
        asked = list(user_ids)
        if self.requested:
            users_match = self.requested == asked
        else:
            covered = [user.user_id for user in self.users]
            users_match = covered == asked or (self.pruned and covered == asked[:len(covered)])
        return self.split == split and self.objective == objective and users_match

    def instances(self) -> dict[Instance, float]:
        """The objective per (user, period) where it is defined, each cell weighted (``Instance``): what paired
        tests and Pareto compare."""
        return {
            Instance(user.user_id, period, weight): value
            for user in self.users
            for period, (value, weight) in enumerate(zip(user.period_values(self.objective),
                                                         user.period_weights(self.objective), strict=True))
            if value is not None
        }

    @property
    def score(self) -> float:
        """The objective over the defined (user, period) cells, pooled over questions for accuracy (a weighted mean,
        ``cells``), AMemGym's mean of cell ratios for its memory score: what the loop maximizes."""
        return pooled_mean(self.instances())

    def user_value(self, user: UserOutcome) -> float:
        """One user's objective value (0 when it is undefined for every period)."""
        value = user.value(self.objective)
        return 0.0 if value is None else value

    @property
    def period_scores(self) -> list[float]:
        """Each period's objective over users (where defined), weighted as ``score`` is."""
        if not self.users:
            return []
        n_periods = min(len(user.period_accuracy) for user in self.users)
        return [pooled_mean({Instance(u.user_id, p, u.period_weights(self.objective)[p]): value for u in self.users
                             if (value := u.period_values(self.objective)[p]) is not None})
                for p in range(n_periods)]


class Pruner(Protocol):
    """What an evaluation reports its intermediate values to (the tuner)."""

    def uses_per_user_values(self) -> bool: ...

    def report(self, number: int, value: float, step: int) -> bool: ...


@dataclass(frozen=True)
class PruneHook:
    """Which Optuna trial receives this evaluation's intermediate values. Both are looked up at the first report,
    after the first user's episode, so a tuner still opening its study does not hold the episodes back."""

    tuner: Callable[[], Pruner]
    trial_number: Callable[[], int]


class Evaluator:
    """Runs candidates' episodes for the loop; all file locations live here. ``environment`` plays and scores the
    items (default: AMemGym's, with ``episode_config``); ``simulator`` is its user simulator, None for an environment
    that replays its own sessions."""

    def __init__(
        self,
        *,
        root: Path,
        items: Sequence[Any],
        make_agent: Callable[[MemoryPolicy], MemoryAgent],
        simulator: UserSimulator | None,
        episode_config: EpisodeConfig,
        objective: Objective = "accuracy",
        environment: Environment[Any] | None = None,
    ) -> None:
        self.root = root
        self.environment = environment or AMemGymEnvironment(episode_config)
        self.items = {self.environment.item_id(item): item for item in items}
        self.make_agent = make_agent
        self.simulator = simulator if self.environment.sessions == "on_policy" else None
        self.episode_config = episode_config
        self.objective = objective
        self.upper_bound: UpperBoundTable | None = None
        """Set by the run before any evaluation is scored when the memory score is wanted."""
        self.upper_bound_pending: asyncio.Future[Any] | None = None
        """The upper bound's computation while it runs beside the first episodes: a user's outcome waits for it."""
        self._episodes: dict[tuple[str, str, str], EpisodeResult] = {}
        # Users at once over every evaluation of the run (the candidates of a generation share them), so the
        # endpoint stays full while the agents in memory stay as many as it serves.
        self._user_slots = asyncio.Semaphore(episode_config.max_concurrent_users)
        self._playing: set[tuple[str, str, str]] = set()
        """(candidate, split, user) an evaluation is playing: not speculated again."""
        self.speculation = Speculator(root, self._play_slotted)
        self.costs = CandidateCosts(root)
        """The calls each candidate's episodes made (``candidate_costs``)."""
        self._scores: dict[tuple[str, str, tuple[str, ...]], tuple[Scores, list[UserScores]]] = {}

    def n_periods(self, user_id: str) -> int:
        """The periods of a user's episode (its question points)."""
        return self.environment.n_periods(self.items[user_id])

    def store(self, candidate_id: str, split: str) -> RunStore:
        return RunStore(self.root / "evals" / candidate_id / split, owner=self.root / "evals" / candidate_id)

    def _summary_path(self, candidate_id: str, label: str) -> Path:
        return self.root / "evals" / candidate_id / f"{label}.json"

    def started(self, candidate_id: str) -> bool:
        """Whether any evaluation of this candidate began (in this or an earlier process)."""
        return (self.root / "evals" / candidate_id).exists()

    def finished(self, candidate_id: str, label: str) -> CandidateEval | None:
        path = self._summary_path(candidate_id, label)
        if not path.exists():
            return None
        return read_model(path, CandidateEval, remedy=SUMMARY_REMEDY)

    def episodes(self, candidate_id: str, split: str, user_ids: Sequence[str], *,
                 traces: bool = False) -> list[EpisodeResult]:
        """The stored episodes of the given users that finished every period. Kept in memory once read,
        ``without_traces``; with ``traces`` (evidence for a proposal, once per generation) read whole from disk
        and not kept, so memory does not grow with every candidate's transcripts and consulted memories."""
        out = []
        for user_id in user_ids:
            key = (candidate_id, split, user_id)
            if traces or key not in self._episodes:
                episode = self.store(candidate_id, split).load_episode(user_id)
                if episode is None or len(episode.periods) < self.n_periods(user_id):
                    continue
                if traces:
                    out.append(episode)
                    continue
                self._episodes[key] = episode.without_traces()
            out.append(self._episodes[key])
        return out

    def scores(self, candidate_id: str, split: str, user_ids: Sequence[str]) -> tuple[Scores, list[UserScores]] | None:
        """Full scores of the finished episodes of these users (computed once), None when none finished."""
        key = (candidate_id, split, tuple(user_ids))
        if key not in self._scores:
            episodes = self.episodes(candidate_id, split, user_ids)
            if not episodes:
                return None
            items = [self.items[e.user_id] for e in episodes]
            self._scores[key] = (score_episodes(episodes, items, self.upper_bound),
                                 user_scores(episodes, items, self.upper_bound))
        return self._scores[key]

    async def run_user(
        self, policy: MemoryPolicy, user_id: str, store: RunStore, *, after_period: AfterPeriod | None = None,
        on_period: Callable[[], None] | None = None,
    ) -> EpisodeResult:
        def saved(_: object) -> None:
            if on_period:
                on_period()

        return await self.environment.run_item(
            self.make_agent(policy),
            self.items[user_id],
            self.simulator,
            ItemRun(store=store, user_id=user_id, after_period=after_period, on_period=saved),
        )

    async def _play_slotted(self, candidate: Candidate, user_id: str, store: RunStore) -> EpisodeResult:
        with self.costs.charged(candidate.id):
            async with self._user_slots:
                return await self.run_user(candidate.policy, user_id, store)

    def speculate(self, candidate: Candidate, split: str, user_ids: Sequence[str]) -> None:
        """Start playing users the loop may ask for later (``speculation``), except those an evaluation has."""
        store = self.store(candidate.id, split)

        def needed(user_id: str) -> bool:
            return (candidate.id, split, user_id) in self._playing or store.user_dir(user_id).exists()

        self.speculation.start(candidate, split, user_ids, needed=needed)

    async def evaluate(
        self,
        candidate: Candidate,
        split: str,
        user_ids: Sequence[str],
        *,
        label: str | None = None,
        prune: PruneHook | None = None,
        on_user: Callable[[UserOutcome], None] | None = None,
        on_period: Callable[[], None] | None = None,
    ) -> CandidateEval:
        """Evaluate (or load) ``candidate`` on ``user_ids``; stops early when the pruner says so.
        ``on_period`` is called after each user's period is played (for a progress bar)."""
        label = label or split
        done = self.finished(candidate.id, label)
        if done is not None and done.made_by(split, user_ids, self.objective):
            return done
        store = self.store(candidate.id, split)

        async def one(user_id: str) -> UserOutcome:
            key = (candidate.id, split, user_id)
            self._playing.add(key)
            try:
                await self.speculation.adopt(candidate.id, split, user_id, store)
                async with self._user_slots:
                    episode = await self.run_user(candidate.policy, user_id, store, on_period=on_period)
            finally:
                self._playing.discard(key)
            self._episodes[(candidate.id, split, user_id)] = episode.without_traces()
            if self.upper_bound_pending is not None:
                await asyncio.shield(self.upper_bound_pending)  # scored against the table once it is there
            return user_outcome(episode, self.items[user_id], self.upper_bound)

        with self.costs.charged(candidate.id):  # the tasks inherit the charge
            tasks = [asyncio.create_task(one(user_id)) for user_id in user_ids]
        result = CandidateEval(candidate_id=candidate.id, split=split, objective=self.objective,
                               n_users_total=len(user_ids), requested=list(user_ids))
        try:
            for step, task in enumerate(tasks):
                result.users.append(await task)
                if on_user:
                    on_user(result.users[-1])
                if prune is not None and step < len(tasks) - 1:
                    pruner = prune.tuner()
                    value = result.user_value(result.users[-1]) if pruner.uses_per_user_values() else result.score
                    if pruner.report(prune.trial_number(), value, step):
                        result.pruned = True
                        break
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        write_json_atomic(self._summary_path(candidate.id, label), json.loads(result.model_dump_json()))
        self.costs.save(candidate.id)
        return result
