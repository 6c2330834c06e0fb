"""The sequential paired test and the race of a generation's candidates (``strategy.acceptance: sequential``)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest

from memevo.agents.policy import MemoryPolicy
from memevo.evolve.candidates import Candidate
from memevo.evolve.records import Instance
from memevo.evolve.selection.race import RaceRecord, race, race_users
from memevo.evolve.selection.sequential import SequentialTest

USERS = [f"u{i}" for i in range(8)]
PERIODS = 3


def _candidate(name: str) -> Candidate:
    return Candidate(policy=MemoryPolicy(kind="awi", prompts={"memory_types": name}))


def _values(per_user: Mapping[str, float], users: list[str]) -> dict[Instance, float]:
    return {(user, period): per_user.get(user, per_user["*"]) for user in users for period in range(PERIODS)}


def test_ties_are_no_evidence_and_clear_gains_or_losses_decide() -> None:
    test = SequentialTest(confidence=0.9, min_effect=0.0, looks=1)
    assert test.verdict([0.0] * 12).state == "open"  # a candidate that changes nothing is never better
    assert test.verdict([0.1] * 9 + [0.0] * 3).state == "better"
    assert test.verdict([-0.1] * 9 + [0.0] * 3).state == "worse"
    assert test.verdict([0.1, -0.1] * 6).state == "open"


def test_the_error_is_spent_over_the_looks() -> None:
    gains = [0.1] * 5  # p = 1/32 one-sided: enough at one look, not when four looks share 0.1
    assert SequentialTest(0.9, 0.0, looks=1).verdict(gains).state == "better"
    assert SequentialTest(0.9, 0.0, looks=4).verdict(gains).state == "open"
    assert SequentialTest(0.9, 0.2, looks=1).verdict(gains).state != "better"  # below min_effect
    assert SequentialTest(0.9, 0.0, looks=1).can_accept(4) and not SequentialTest(0.9, 0.0, looks=1).can_accept(3)


def test_race_users_leave_out_the_parent_s_selection_users_and_take_at_most_half() -> None:
    chosen = race_users(USERS, ["u1", "u2"], seed=0, generation=3)
    assert len(chosen) == 4 and not {"u1", "u2"} & set(chosen)
    assert chosen == race_users(USERS, ["u2", "u1"], seed=0, generation=3)  # seeded: a resume gets the same
    assert chosen != race_users(USERS, ["u1", "u2"], seed=0, generation=4)


def _race(gains: dict[str, dict[str, float]], first_only: bool = False) -> tuple[RaceRecord, dict[str, int]]:
    """A race of candidates whose per-user gains over a parent at 0.5 are given (``*``: every other user)."""
    candidates = [_candidate(name) for name in gains]
    parent = _candidate("parent")
    played: dict[str, int] = {}

    async def play(candidate: Candidate, users: list[str]) -> dict[Instance, float]:
        name = candidate.policy.prompts["memory_types"]
        played[name] = len(users)
        return {key: 0.5 + value for key, value in _values({"*": 0.0, **gains.get(name, {})}, users).items()}

    group = candidates[:1] if first_only else candidates
    record = RaceRecord(parent_id="p", candidate_ids=[c.id for c in group], users=USERS)
    test = SequentialTest(0.9, 0.0, looks=4)
    asyncio.run(race(group, parent, USERS, chunk=2, test=test, play=play, may_start=lambda _: None, record=record,
                     on_round=lambda _: None))
    return record, played


def test_a_lucky_first_candidate_does_not_end_the_race_before_a_helpful_one_is_measured() -> None:
    lucky = {"u0": 0.3, "u1": 0.3, "*": 0.0}  # ahead on the first round only
    record, played = _race({"lucky": lucky, "helpful": {"u0": 0.2, "u1": 0.2, "*": 0.2}, "neutral": {"*": 0.0}})
    assert record.winner_id == _candidate("helpful").id
    assert played["neutral"] == 2  # halved out after the first round
    assert played["parent"] == len(record.rounds[-1].users)  # the parent plays only the rounds played
    assert record.selected_on == record.rounds[-1].users


def test_worse_candidates_and_ones_without_gain_leave_after_the_round_that_shows_it() -> None:
    record, played = _race({"a": {"*": 0.0}, "b": {"*": 0.0}, "worse": {"*": -0.3},
                            "late": {"u0": 0.1, "u1": 0.0, "u2": -0.3, "u3": -0.3, "*": 0.1}})
    assert record.winner_id is None
    assert record.rounds[0].verdicts[_candidate("worse").id].state == "worse" and played["worse"] == 2
    assert record.rounds[0].verdicts[_candidate("a").id].state == "open"  # all ties: no evidence either way
    assert record.rounds[0].staying == [_candidate("late").id]  # no gain on the first round's users: futile
    assert len(record.rounds) == 2 and record.rounds[-1].staying == []  # its gain gone after the second round
    assert played == {"a": 2, "b": 2, "worse": 2, "late": 4, "parent": 4}


def test_a_race_decided_in_its_first_round_never_plays_the_parent_on_later_users() -> None:
    record, played = _race({"helpful": {"*": 0.4}})
    assert record.winner_id == _candidate("helpful").id and len(record.rounds) == 1
    assert played == {"helpful": 2, "parent": 2}


@pytest.mark.parametrize("stop_at", [0, 1])
def test_a_budget_stop_keeps_what_the_rounds_played_support(stop_at: int) -> None:
    candidates, parent = [_candidate("helpful")], _candidate("parent")
    record = RaceRecord(parent_id=parent.id, candidate_ids=[candidates[0].id], users=USERS)

    async def play(candidate: Candidate, users: list[str]) -> dict[Instance, float]:
        return _values({"*": 0.5 if candidate is parent else 0.9}, users)

    asyncio.run(race(candidates, parent, USERS, chunk=4, test=SequentialTest(0.9, 0, 2),
                     play=play, may_start=lambda index: "call budget" if index >= stop_at else None, record=record,
                     on_round=lambda _: None))
    assert record.stop_reason == ("call budget" if stop_at == 0 else None)
    assert (record.winner_id is not None) == (stop_at == 1)


def test_without_futility_a_candidate_leaves_only_when_found_worse() -> None:
    gains = {"late": {"u0": 0.1, "u1": -0.2, "*": 0.3}, "worse": {"*": -0.3}}  # no gain on the first round's users
    candidates, parent = [_candidate(name) for name in gains], _candidate("parent")

    async def play(candidate: Candidate, users: list[str]) -> dict[Instance, float]:
        name = candidate.policy.prompts["memory_types"]
        return {key: 0.5 + value for key, value in _values({"*": 0.0, **gains.get(name, {})}, users).items()}

    outcomes = {}
    for futility in (True, False):
        record = RaceRecord(parent_id="p", candidate_ids=[c.id for c in candidates], users=USERS)
        asyncio.run(race(candidates, parent, USERS, chunk=2, test=SequentialTest(0.9, 0.0, looks=4), play=play,
                         may_start=lambda _: None, record=record, on_round=lambda _: None, futility=futility))
        outcomes[futility] = record
    assert outcomes[True].rounds[0].staying == [] and outcomes[True].winner_id is None
    assert outcomes[False].rounds[0].staying == [_candidate("late").id]  # the worse one leaves either way
    assert outcomes[False].winner_id == _candidate("late").id
