"""Evaluating a candidate on a set of users, with early stopping and on-disk results.

Each (candidate, split) has its own ``RunStore`` under ``<run_dir>/evals/<candidate id>/<split>/``, so a
killed evaluation resumes per period, and a summary JSON written when it finishes, so a finished one
is never recomputed. ``on_saved`` runs right after each of these writes (the run saves its spend
there). Users run concurrently, but intermediate values go to the pruner in user order (prefix by
prefix), so whether a candidate is pruned does not depend on which user finished first.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from memevo.agents.base import MemoryAgent
from memevo.agents.policy import MemoryPolicy
from memevo.environments.data.models import Item
from memevo.environments.records import EpisodeResult
from memevo.environments.runner import AfterPeriod, EpisodeConfig, run_episode
from memevo.environments.simulators.base import UserSimulator
from memevo.environments.store import RunStore, write_json_atomic
from memevo.evolve.candidates import Candidate
from memevo.evolve.tuner import Tuner


class UserOutcome(BaseModel):
    """One user's accuracy (all periods and questions) and its per-period values."""

    user_id: str
    accuracy: float
    period_accuracy: list[float]


def user_outcome(episode: EpisodeResult) -> UserOutcome:
    per_period = [sum(qa.correct for qa in period.qa) / max(1, len(period.qa)) for period in episode.periods]
    total = [qa.correct for period in episode.periods for qa in period.qa]
    return UserOutcome(
        user_id=episode.user_id, accuracy=sum(total) / max(1, len(total)), period_accuracy=per_period
    )


class CandidateEval(BaseModel):
    """A candidate's result on one split; ``pruned`` ones cover only a prefix of the users."""

    candidate_id: str
    split: str
    users: list[UserOutcome] = Field(default_factory=list)
    n_users_total: int
    pruned: bool = False

    @property
    def score(self) -> float:
        """Mean per-user accuracy: the objective the tuner maximizes and selection compares."""
        return sum(user.accuracy for user in self.users) / max(1, len(self.users))

    @property
    def period_scores(self) -> list[float]:
        """Mean over users of each period's accuracy."""
        if not self.users:
            return []
        n_periods = min(len(user.period_accuracy) for user in self.users)
        return [sum(u.period_accuracy[p] for u in self.users) / len(self.users) for p in range(n_periods)]


@dataclass(frozen=True)
class PruneHook:
    """Which Optuna trial receives this evaluation's intermediate values."""

    tuner: Tuner
    trial_number: int


class Evaluator:
    """Runs candidates' episodes for the loop; all file locations live here."""

    def __init__(
        self,
        *,
        root: Path,
        items: Sequence[Item],
        make_agent: Callable[[MemoryPolicy], MemoryAgent],
        simulator: UserSimulator,
        episode_config: EpisodeConfig,
        on_saved: Callable[[], None] = lambda: None,
    ) -> None:
        self.root = root
        self.items = {item.id: item for item in items}
        self.make_agent = make_agent
        self.simulator = simulator
        self.episode_config = episode_config
        self.on_saved = on_saved

    def store(self, candidate_id: str, split: str) -> RunStore:
        return RunStore(self.root / "evals" / candidate_id / split)

    def _summary_path(self, candidate_id: str, split: str) -> Path:
        return self.root / "evals" / candidate_id / f"{split}.json"

    def started(self, candidate_id: str) -> bool:
        """Whether any evaluation of this candidate began (in this or an earlier process)."""
        return (self.root / "evals" / candidate_id).exists()

    def finished(self, candidate_id: str, split: str) -> CandidateEval | None:
        path = self._summary_path(candidate_id, split)
        if not path.exists():
            return None
        return CandidateEval.model_validate_json(path.read_text(encoding="utf-8"))

    def episodes(self, candidate_id: str, split: str, user_ids: Sequence[str]) -> list[EpisodeResult]:
        """The stored episodes of the given users (those that finished)."""
        store = self.store(candidate_id, split)
        loaded = [store.load_episode(user_id) for user_id in user_ids]
        return [episode for episode in loaded if episode is not None]

    async def run_user(
        self, policy: MemoryPolicy, user_id: str, store: RunStore, *, after_period: AfterPeriod | None = None
    ) -> EpisodeResult:
        return await run_episode(
            self.make_agent(policy),
            self.items[user_id],
            self.simulator,
            self.episode_config,
            store=store,
            user_id=user_id,
            after_period=after_period,
            on_period=lambda _: self.on_saved(),
        )

    async def evaluate(
        self,
        candidate: Candidate,
        split: str,
        user_ids: Sequence[str],
        *,
        prune: PruneHook | None = None,
        on_user: Callable[[UserOutcome], None] | None = None,
    ) -> CandidateEval:
        """Evaluate (or load) ``candidate`` on ``user_ids``; stops early when the pruner says so."""
        done = self.finished(candidate.id, split)
        if done is not None:
            return done
        store = self.store(candidate.id, split)
        semaphore = asyncio.Semaphore(self.episode_config.max_concurrent_users)

        async def one(user_id: str) -> UserOutcome:
            async with semaphore:
                return user_outcome(await self.run_user(candidate.policy, user_id, store))

        tasks = [asyncio.create_task(one(user_id)) for user_id in user_ids]
        outcomes: list[UserOutcome] = []
        pruned = False
        try:
            for step, task in enumerate(tasks):
                outcomes.append(await task)
                if on_user:
                    on_user(outcomes[-1])
                if prune is not None and step < len(tasks) - 1:
                    per_user = prune.tuner.uses_per_user_values()
                    value = outcomes[-1].accuracy if per_user else sum(o.accuracy for o in outcomes) / len(outcomes)
                    if prune.tuner.report(prune.trial_number, value, step):
                        pruned = True
                        break
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        result = CandidateEval(
            candidate_id=candidate.id, split=split, users=outcomes, n_users_total=len(user_ids), pruned=pruned
        )
        write_json_atomic(self._summary_path(candidate.id, split), json.loads(result.model_dump_json()))
        self.on_saved()
        return result
