"""The loop under ``strategy.acceptance: sequential`` on the category double: races on users fresh for the
parent, one line of kept candidates, a resume to the identical result, bad values named."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from memevo.core.errors import UserInputError
from memevo.environments.amemgym.data.io import save_items
from memevo.evolve.candidates import Candidate
from memevo.evolve.evaluation import CandidateEval, Evaluator
from memevo.evolve.loop import GenerationPlan
from memevo.evolve.selection.race import RaceRecord
from memevo.evolve.strategies import Plays
from tests.doubles.category_backend import CategoryBackend, category_world
from tests.doubles.line_proposers import register_proposer_double
from tests.evolve.test_evolve_loop import CrashingBackend, Killed, _comparable, _served, evolve

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")

RACE = {"acceptance": "sequential", "first_accepted": False}
OPTIONS: dict[str, Any] = {
    "split": {"train": 3, "val": 3, "test": 2},
    "budget": {"generations": 3, "candidates": 3},
    "episode": {"rounds_init": 1, "rounds_update": 1, "user_concurrency": 1},
}
WORLD = category_world(8, 3)


@pytest.fixture(autouse=True)
def _eight_users(tmp_path: Path) -> None:
    save_items(WORLD, tmp_path / "data.json")  # the data file the runs read (test_evolve_loop's has 6 users)


def _races(run_dir: Path, generation: int) -> list[RaceRecord]:
    path = run_dir / "generations" / f"gen_{generation:03d}" / "race.json"
    return [RaceRecord.model_validate(record) for record in json.loads(path.read_text())]


def test_children_race_only_on_users_that_did_not_select_their_parent(tmp_path: Path) -> None:
    result, _ = evolve(tmp_path, "race", CategoryBackend(WORLD, proposer_mode="step", answer_noise=0.2),
                       strategy=RACE, **OPTIONS)
    selected_on = {result.seed.id: set[str]()}
    kept = [result.seed.id]
    for outcome in result.history[1:]:
        plan = GenerationPlan.model_validate_json(
            (tmp_path / "race" / "generations" / f"gen_{outcome.generation:03d}" / "plan.json").read_text())
        assert plan.parent_id == kept[-1]  # one line: the parent is the last candidate kept
        (record,) = _races(tmp_path / "race", outcome.generation)
        assert not set(record.users) & selected_on[plan.parent_id]
        assert len(record.users) <= 3  # at most half of the 6 search users: the winner leaves the rest fresh
        assert outcome.accepted_ids == ([record.winner_id] if record.winner_id else [])
        if record.winner_id:
            selected_on[record.winner_id] = set(record.selected_on)
            assert record.rounds[-1].verdicts[record.winner_id].state == "better"
        kept.append(outcome.kept_id)
    assert len(selected_on) > 1, "no candidate was kept"
    assert result.best.id == kept[-1]
    assert result.best_scores.accuracy > result.seed_scores.accuracy


def test_first_accepted_races_one_candidate_at_a_time_until_one_is_kept(tmp_path: Path) -> None:
    result, _ = evolve(tmp_path, "first", CategoryBackend(WORLD, proposer_mode="step"),
                       strategy={**RACE, "first_accepted": True}, **OPTIONS)
    ended_early = 0
    for outcome in result.history[1:]:
        records = _races(tmp_path / "first", outcome.generation)
        plan = GenerationPlan.model_validate_json(
            (tmp_path / "first" / "generations" / f"gen_{outcome.generation:03d}" / "plan.json").read_text())
        assert [r.candidate_ids for r in records] == [[c.id] for c in plan.candidates[:len(records)]]
        assert [r.winner_id for r in records[:-1]] == [None] * (len(records) - 1)
        ended_early += bool(outcome.not_needed)
        assert outcome.not_needed == [c.id for c in plan.candidates[len(records):]]
    assert ended_early, "no generation ended at its first kept candidate"


def test_the_last_race_starts_the_best_s_and_the_seed_s_test_users_beside_the_winner_s_validation(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the last race kept its winner, the run's end scores it and the seed on the test users whatever happens
    next: their episodes start before the winner's validation users are played, and change no result or call."""
    events: list[tuple[str, str, str]] = []
    speculate, evaluate = Evaluator.speculate, Evaluator.evaluate

    def spied_speculate(self: Evaluator, candidate: Candidate, split: str, user_ids: Sequence[str]) -> None:
        events.append(("start", candidate.id, split))
        speculate(self, candidate, split, user_ids)

    async def spied_evaluate(self: Evaluator, candidate: Candidate, split: str, user_ids: Sequence[str],
                             **options: Any) -> CandidateEval:
        result = await evaluate(self, candidate, split, user_ids, **options)
        events.append(("evaluated", candidate.id, options.get("label") or split))
        return result

    monkeypatch.setattr(Evaluator, "speculate", spied_speculate)
    monkeypatch.setattr(Evaluator, "evaluate", spied_evaluate)
    options = {**OPTIONS, "budget": {"generations": 1, "candidates": 3}}
    early, early_backend = evolve(tmp_path, "early", CategoryBackend(WORLD, proposer_mode="step"), strategy=RACE,
                                  **options)
    assert early.best.id != early.seed.id, "the last race kept no candidate"
    validated = max(i for i, event in enumerate(events) if event == ("evaluated", early.best.id, "val"))
    assert {("start", early.best.id, "test"), ("start", early.seed.id, "test")} <= set(events[:validated])

    monkeypatch.setattr(Plays, "start_test", lambda self, candidates: None)  # the end plays them, as before
    late, late_backend = evolve(tmp_path, "late", CategoryBackend(WORLD, proposer_mode="step"), strategy=RACE,
                                **options)
    assert _comparable(early) == _comparable(late)
    assert early.usage.total() == _served(early_backend) and _served(early_backend) == _served(late_backend)


@pytest.mark.parametrize(("fraction", "strategy"), [(0.3, RACE), (0.7, RACE), (0.5, {**RACE, "first_accepted": True})])
def test_a_killed_race_resumes_to_the_identical_result(tmp_path: Path, fraction: float,
                                                       strategy: dict[str, Any]) -> None:
    whole, full_backend = evolve(tmp_path, "whole", CategoryBackend(WORLD, proposer_mode="step"), strategy=strategy,
                                 **OPTIONS)
    killed_backend = CrashingBackend(WORLD, proposer_mode="step", crash_after=int(len(full_backend.calls) * fraction))
    with pytest.raises(Killed):
        evolve(tmp_path, "killed", killed_backend, strategy=strategy, **OPTIONS)
    resumed, resumed_backend = evolve(tmp_path, "killed", CategoryBackend(WORLD, proposer_mode="step"), resume=True,
                                      strategy=strategy, **OPTIONS)
    assert _comparable(resumed) == _comparable(whole)
    assert resumed.usage.total() == _served(killed_backend, resumed_backend)
    for outcome in whole.history[1:]:
        assert _races(tmp_path / "killed", outcome.generation) == _races(tmp_path / "whole", outcome.generation)


@pytest.mark.parametrize(("strategy", "field"), [
    ({"acceptance": "sequential", "parents": "pareto"}, "strategy.parents"),
    ({"acceptance": "sequential", "minibatch": 1}, "strategy.minibatch"),
    ({"acceptance": "sequential", "order": "train_first"}, "strategy.order"),
    ({"acceptance": "sequential", "race_users": 0}, "strategy.race_users"),
])
def test_bad_sequential_values_name_their_field(tmp_path: Path, strategy: dict[str, Any], field: str) -> None:
    with pytest.raises(UserInputError) as caught:
        evolve(tmp_path, "bad", strategy=strategy)
    assert caught.value.field == field
    assert not (tmp_path / "bad").exists()


def test_a_race_too_small_to_accept_anything_says_so(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="memevo.evolve")
    result, _ = evolve(tmp_path, "tiny", CategoryBackend(WORLD, proposer_mode="step"), strategy={**RACE, "confidence": 0.9},
                       split={"train": 1, "val": 1, "test": 2}, budget={"generations": 1, "candidates": 1})
    assert "too few for the sequential test to accept anything" in caplog.text  # 1 user x 3 periods: p >= 1/8
    assert result.best.id == result.seed.id


def test_a_generation_without_candidates_keeps_its_parent(tmp_path: Path) -> None:
    result, _ = evolve(tmp_path, "none", CategoryBackend(WORLD, proposer_mode="garbage"), strategy=RACE, **OPTIONS)
    assert [outcome.kept_id for outcome in result.history] == [result.seed.id] * 4
    assert _races(tmp_path / "none", 1) == []


def _users_in(summary: Path) -> set[str]:
    return {user["user_id"] for user in json.loads(summary.read_text())["users"]} if summary.exists() else set()


def test_a_parent_plays_only_the_rounds_its_race_reaches(tmp_path: Path) -> None:
    strategy = {**RACE, "seed_users": "all", "winner_validation": "all"}  # a kept candidate on every validation user
    result, _ = evolve(tmp_path, "lazy", CategoryBackend(WORLD, proposer_mode="step", answer_noise=0.2),
                       strategy=strategy, **OPTIONS)
    evals = tmp_path / "lazy" / "evals"
    seed_train = _users_in(evals / result.seed.id / "train.json")
    ended_early = 0
    for outcome in result.history[1:]:
        (record,) = _races(tmp_path / "lazy", outcome.generation)
        parent = evals / outcome.parent_id
        as_parent = set().union(*(_users_in(parent / f"{split}_parent_of_{outcome.generation:03d}.json")
                                  for split in ("train", "val")))
        reached = set(record.rounds[-1].users) if record.rounds else set()
        assert reached <= as_parent
        extra = as_parent - reached  # at most the one train user played for a parent without train episodes
        assert len(extra) <= 1 and extra <= seed_train
        ended_early += len(reached) < len(record.users)
        # what kept the parent stays as it was: every validation user (its score in the pool)
        assert len(_users_in(parent / "val.json")) == OPTIONS["split"]["val"]
    assert ended_early, "no race ended before its last round"


def test_a_rejected_candidate_proposed_again_is_never_raced_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    register_proposer_double(monkeypatch, "same-first", "SameFirstProposerDouble")
    result, _ = evolve(tmp_path, "repeat", strategy={**RACE, "proposers": ["same-first"]},
                       **{**OPTIONS, "budget": {"generations": 3, "candidates": 2}})
    # no line of the double names a category the questions ask about: every candidate was rejected
    assert all(outcome.kept_id == result.seed.id for outcome in result.history)
    planned: list[str] = []
    for generation in (1, 2, 3):
        plan = GenerationPlan.model_validate_json(
            (tmp_path / "repeat" / "generations" / f"gen_{generation:03d}" / "plan.json").read_text())
        assert len(plan.candidates) == 2  # the repeat was asked for again, and a new sample filled its slot
        assert plan.stats.duplicates == (generation > 1)
        planned += [candidate.id for candidate in plan.candidates]
    assert len(planned) == len(set(planned))  # no policy raced in two generations



def test_parents_play_only_what_races_need_under_first_round_seed_and_raced_validation(tmp_path: Path) -> None:
    """``seed_users: first_round``: the seed plays the first race's first round (at least one train and one
    validation user), not every search user; ``winner_validation: raced``: a kept candidate's validation score is
    on the validation users that decided it (or on one), not on every validation user."""
    strategy = {**RACE, "seed_users": "first_round", "winner_validation": "raced"}
    result, _ = evolve(tmp_path, "needed", CategoryBackend(WORLD, proposer_mode="step"), strategy=strategy, **OPTIONS)
    evals = tmp_path / "needed" / "evals"
    seed_train, seed_val = (_users_in(evals / result.seed.id / f"{split}.json") for split in ("train", "val"))
    (first,) = _races(tmp_path / "needed", 1)
    assert seed_train and seed_val and set(first.users[:2]) <= seed_train | seed_val
    assert len(seed_train | seed_val) <= 3 < OPTIONS["split"]["train"] + OPTIONS["split"]["val"]
    kept = 0
    for outcome in result.history[1:]:
        for record in _races(tmp_path / "needed", outcome.generation):
            if record.winner_id is None:
                continue
            kept += 1
            val = _users_in(evals / record.winner_id / "val.json")
            decided = val & set(record.selected_on)
            assert val == decided if decided else len(val) == 1
    assert kept, "no candidate was kept"
