"""An evaluation's stored result answers only the question that made it (candidate, split, users, objective)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from memevo.agents.policy import MemoryPolicy
from memevo.agents.registry import build_agent
from memevo.environments.amemgym.simulators.factory import make_simulator
from memevo.environments.runner import EpisodeConfig
from memevo.evolve.candidates import Candidate
from memevo.evolve.evaluation import CandidateEval, Evaluator
from tests.doubles.category_backend import CategoryBackend, category_world


def _evaluator(root: Path, backend: CategoryBackend) -> Evaluator:
    return Evaluator(root=root, items=category_world(6, 2), make_agent=lambda policy: build_agent(policy, backend),
                     simulator=make_simulator("template", 0), episode_config=EpisodeConfig(rounds_init=1,
                                                                                          rounds_update=1))


def test_asking_again_for_other_users_evaluates_them_not_the_stored_ones(tmp_path: Path) -> None:
    backend = CategoryBackend(category_world(6, 2))
    evaluator = _evaluator(tmp_path, backend)
    candidate = Candidate(policy=MemoryPolicy(kind="awi", update_every=2, short_term=0))
    first, second = ["user-0", "user-1", "user-2"], ["user-3", "user-1", "user-4", "user-5"]

    def users(result: CandidateEval) -> list[str]:
        return [user.user_id for user in result.users]

    assert users(asyncio.run(evaluator.evaluate(candidate, "val", first, label="check"))) == first
    calls = len(backend.calls)
    again = asyncio.run(evaluator.evaluate(candidate, "val", second, label="check"))
    assert users(again) == second and again.n_users_total == 4
    played = len(backend.calls) - calls
    assert 0 < played  # the new users were run ...
    assert users(asyncio.run(evaluator.evaluate(candidate, "val", first, label="check"))) == first
    assert len(backend.calls) - calls == played  # ... and every stored episode was reused, not replayed
    assert users(asyncio.run(evaluator.evaluate(candidate, "val", first[::-1], label="check"))) == first[::-1]
