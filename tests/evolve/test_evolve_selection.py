"""Parent selection, acceptance and the minibatch gate on hand-made validation values."""

from __future__ import annotations

import pytest

from memevo.agents.policy import MemoryPolicy
from memevo.evolve.candidates import Candidate
from memevo.evolve.proposers.delta import apply_edits
from memevo.evolve.proposers.merge import merge_text
from memevo.evolve.selection import MinibatchGate, best_of, make_acceptance, make_parent_selector
from memevo.evolve.selection.parents import pareto_fronts


def candidate(types: str, parent: str | None = None) -> Candidate:
    return Candidate(policy=MemoryPolicy(kind="awi", prompts={"memory_types": types}), parent_id=parent)


A, B, C = candidate("- a"), candidate("- b"), candidate("- c")
USERS = ("u1", "u2")


def values(*row: float) -> dict[tuple[str, int], float]:
    return {(USERS[i // 2], i % 2): value for i, value in enumerate(row)}


def test_elitist_takes_the_best_mean_and_the_earlier_on_ties() -> None:
    scores = {A.id: values(1, 0, 0, 0), B.id: values(0, 1, 1, 0), C.id: values(0, 1, 1, 0)}
    selector = make_parent_selector("elitist", seed=0)
    assert selector.select([A, B, C], scores, 1) == B
    assert best_of([A, B, C], scores) == B


def test_pareto_samples_only_the_frontier_by_coverage_and_repeats_per_generation() -> None:
    # A leads on one instance, B on three, C on none (dominated by B).
    scores = {A.id: values(1, 0, 0, 0), B.id: values(0, 1, 1, 1), C.id: values(0, 1, 0, 1)}
    assert pareto_fronts([A, B, C], scores)[("u1", 0)] == {0}
    selector = make_parent_selector("pareto", seed=3)
    picks = [selector.select([A, B, C], scores, generation) for generation in range(200)]
    assert C not in picks
    assert 0.1 < picks.count(A) / len(picks) < 0.45  # 1 of 4 leading instances
    again = make_parent_selector("pareto", seed=3)
    assert [again.select([A, B, C], scores, g) for g in range(200)] == picks


def test_mean_acceptance_takes_any_gain() -> None:
    mean = make_acceptance("mean", 0.9, 0.0)
    assert mean.decide(values(1, 0, 0, 0), values(0, 0, 0, 0)).accepted
    assert not mean.decide(values(0, 0, 0, 0), values(0, 0, 0, 0)).accepted


def test_paired_acceptance_needs_a_consistent_gain() -> None:
    paired = make_acceptance("paired", 0.9, 0.0)
    assert not paired.decide(values(1, 0, 0, 0), values(0, 0, 0, 0)).accepted  # one lucky instance
    assert not paired.decide(values(1, 0, 1, 0), values(0, 1, 0, 1)).accepted  # no gain on average
    assert paired.decide(values(1, 0.75, 1, 0.75), values(0.5, 0.5, 0.5, 0.5)).accepted
    assert paired.decide(values(1, 1, 1, 1), values(0.5, 0.5, 0.5, 0.5)).accepted  # constant gain
    strict = make_acceptance("paired", 0.9, 0.5)
    assert not strict.decide(values(1, 1, 1, 1), values(0.5, 0.5, 0.5, 0.5)).accepted  # not above min_effect
    assert not paired.decide({("u1", 0): 1.0}, {("u1", 0): 0.0}).accepted  # one instance cannot be tested


def test_minibatch_gate_is_seeded_and_stops_a_worse_candidate() -> None:
    gate = MinibatchGate(users=2, seed=1)
    train = ["u1", "u2", "u3", "u4"]
    assert gate.sample(train, 3) == gate.sample(train, 3) and len(gate.sample(train, 3)) == 2
    assert MinibatchGate(users=9, seed=1).sample(train, 1) == train
    parent = values(0.5, 0.5, 0.5, 0.5)
    assert gate.passes(values(0.5, 0.5, 0.5, 0.5), parent)
    assert not gate.passes(values(0.5, 0.25, 0.5, 0.5), parent)


def test_delta_edits_apply_to_the_original_line_numbers() -> None:
    text, applied = apply_edits(
        "- a\n- b\n- c", ["REMOVE 1", "REWRITE 3: - c (new)", "ADD: - d", "REMOVE 9", "nonsense"]
    )
    assert text == "- b\n- c (new)\n- d"
    assert applied == ["REMOVE 1", "REWRITE 3: - c (new)", "ADD: - d"]


@pytest.mark.parametrize(
    ("parent", "other", "ancestor", "merged"),
    [
        ("- a\n- b", "- a", "- a", "- a\n- b"),  # only the parent changed
        ("- a", "- a\n- c", "- a", "- a\n- c"),  # only the other changed
        ("- a\n- b", "- a\n- c", "- a", "- a\n- b\n- c"),  # both changed: the other's new lines appended
    ],
)
def test_merge_takes_the_changed_side(parent: str, other: str, ancestor: str, merged: str) -> None:
    assert merge_text(parent, other, ancestor) == merged
