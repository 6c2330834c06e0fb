"""The speed table's floor (benchmarks/evolve.py): without speculation, a race's rounds, its next race and the best's
test wait for the decision before them, and a candidate's episodes count from the round that started them."""

from __future__ import annotations

from benchmarks.evolve import RunRecords, race_path
from memevo.evolve.records import GenerationPlan, ProposalStats
from memevo.evolve.selection.race import RaceRecord, RaceRound
from memevo.evolve.selection.sequential import State, Verdict


def plan(generation: int, parent_id: str) -> GenerationPlan:
    return GenerationPlan(generation=generation, parent_id=parent_id, feedback="", candidates=[],
                          stats=ProposalStats())


def rounds(candidate_id: str, users: list[list[str]], last: State) -> list[RaceRound]:
    states = ["open"] * (len(users) - 1) + [last]
    return [RaceRound(users=played, verdicts={candidate_id: Verdict(state=state, mean_gain=0.5, n=len(played),
                                                                     p_better=0.5, p_worse=0.5)},
                      staying=[candidate_id]) for played, state in zip(users, states, strict=True)]


def race(candidate_id: str, users: list[list[str]], *, won: bool) -> RaceRecord:
    return RaceRecord(parent_id="seed", candidate_ids=[candidate_id], users=users[-1],
                      rounds=rounds(candidate_id, users, "better" if won else "worse"),
                      winner_id=candidate_id if won else None)


def chains(**by_split: dict[str, int]) -> dict[str, dict[str, tuple[int, bool]]]:
    return {split: {user: (waits, True) for user, waits in by_user.items()} for split, by_user in by_split.items()}


def records(races: list[RaceRecord], best_id: str, best_test: int = 5) -> RunRecords:
    return RunRecords(
        seed_id="seed", plans={1: plan(1, "seed")}, races={1: races}, proposals={1: 1},
        episodes={"seed": chains(train={"a": 10, "b": 12}, val={"c": 10}, test={"t": 4}),
                  "x": chains(train={"a": 8, "b": 7}, val={"c": 9, "d": 6}, test={"t": best_test}),
                  "y": chains(train={"a": 3}, val={"c": 2})},
        best_id=best_id, speculative=False)


def test_rounds_wait_for_each_other_and_the_winner_plays_its_validation_after_its_race() -> None:
    # seed train a ends at 10 (evidence) -> proposal 11 -> round 1 (x on a, c: 9) 20 -> round 2 (x on b: 7) 27 ->
    # x's validation user d (6) 33; x's test (5) 32
    waits, path = race_path(records([race("x", [["a", "c"], ["a", "c", "b"]], won=True)], best_id="x"))
    assert waits == 33
    assert "g1 race 1 round 1 9 -> g1 race 1 round 2 7 -> winner's other episodes 6" in path


def test_a_next_race_starts_when_the_one_before_it_was_decided_and_the_best_test_after_the_last() -> None:
    # y's race (3) decides at 14; x's race from 14: 14 + 9 + 7 = 30; x's test (8) after it: 38
    lost = race("y", [["a", "c"]], won=False)
    won = race("x", [["a", "c"], ["a", "c", "b"]], won=True)
    waits, path = race_path(records([lost, won], best_id="x", best_test=8))
    assert waits == 38
    assert path.endswith("g1 race 1 round 1 3 -> g1 race 2 round 1 9 -> g1 race 2 round 2 7 -> best test 8")


def test_the_seed_plays_its_test_from_the_start_when_it_stays_the_best() -> None:
    waits, path = race_path(records([race("y", [["a", "c"]], won=False)], best_id="seed"))
    assert (waits, path) == (14, "seed -> seed train episode 10 -> g1 proposal 1 -> g1 race 1 round 1 3")
