"""The minibatch gate: a proposal is first scored beside its parent on a few train users.

Only a proposal that is not worse than its parent there goes on to the full train and validation
evaluation (GEPA's cheap check before a full evaluation). The users are a sample of the train users
seeded by (seed, generation), the same for every candidate of a generation; the parent's values come
from its own train evaluation, so the gate costs only the candidate's minibatch episodes, which the
full train evaluation then reuses.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from memevo.evolve.cells import pooled_mean
from memevo.evolve.records import Instance


class MinibatchGate:
    def __init__(self, users: int, seed: int) -> None:
        self.users = users
        self.seed = seed

    def sample(self, train_users: Sequence[str], generation: int) -> list[str]:
        """This generation's minibatch, in train order."""
        if self.users >= len(train_users):
            return list(train_users)
        chosen = set(random.Random(f"minibatch|{self.seed}|{generation}").sample(sorted(train_users), self.users))
        return [user for user in train_users if user in chosen]

    def passes(self, candidate: Mapping[Instance, float], parent: Mapping[Instance, float]) -> bool:
        return not_worse(candidate, parent)


def not_worse(candidate: Mapping[Instance, float], parent: Mapping[Instance, float]) -> bool:
    """Not worse than the parent on the instances both have (the gate's rule, and the train check of a
    candidate evaluated validation first)."""
    common = [key for key in candidate if key in parent]
    if not common:
        return True
    return pooled_mean({key: candidate[key] for key in common}) >= pooled_mean({key: parent[key] for key in common})
