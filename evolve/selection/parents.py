"""Parent selection: which pool candidate the next generation mutates.

``elitist`` always takes the best mean on validation (memevo's first loop). ``pareto`` keeps every
candidate that is best on at least one validation (user, period) and samples a parent weighted by how
many instances it leads, so a candidate that is strong on some users keeps being explored even when its
mean is not the best (GEPA's rule; the dominance pruning and sampling are ``gepa.gepa_utils``'s). The
sample is seeded by (seed, generation), so a resumed run picks the same parents.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Protocol

from gepa.gepa_utils import select_program_candidate_from_pareto_front

from memevo.evolve.candidates import Candidate
from memevo.evolve.cells import pooled_mean
from memevo.evolve.records import Instance

Scores = Mapping[str, Mapping[Instance, float]]
"""Per candidate id, its objective per validation instance."""


def mean_score(scores: Scores, candidate: Candidate) -> float:
    return pooled_mean(scores.get(candidate.id, {}))


def best_of(pool: Sequence[Candidate], scores: Scores) -> Candidate:
    """The best validation mean; ties go to the earlier candidate."""
    return max(pool, key=lambda c: mean_score(scores, c))  # max keeps the first of equals


class ParentSelector(Protocol):
    def select(self, pool: Sequence[Candidate], scores: Scores, generation: int) -> Candidate: ...


class ElitistSelector:
    def __init__(self, seed: int = 0) -> None:
        del seed  # deterministic without randomness

    def select(self, pool: Sequence[Candidate], scores: Scores, generation: int) -> Candidate:
        return best_of(pool, scores)


def pareto_fronts(pool: Sequence[Candidate], scores: Scores) -> dict[Instance, set[int]]:
    """Per validation instance, the pool positions with the best value there."""
    instances = sorted({key for candidate in pool for key in scores.get(candidate.id, {})})
    fronts: dict[Instance, set[int]] = {}
    for instance in instances:
        values = {i: scores[c.id][instance] for i, c in enumerate(pool) if instance in scores.get(c.id, {})}
        top = max(values.values())
        fronts[instance] = {i for i, value in values.items() if value == top}
    return fronts


class ParetoSelector:
    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def select(self, pool: Sequence[Candidate], scores: Scores, generation: int) -> Candidate:
        if len(pool) == 1:
            return pool[0]
        rng = random.Random(f"pareto|{self.seed}|{generation}")
        means = [mean_score(scores, candidate) for candidate in pool]
        return pool[select_program_candidate_from_pareto_front(pareto_fronts(pool, scores), means, rng)]
