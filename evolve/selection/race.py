"""Stopping a validation evaluation early (validation first): a candidate whose running mean on the first
validation users is below its parent's on the same users by more than a margin is not run on the rest.

It plugs into the evaluator as a pruner: the evaluator reports the running mean after each user but the
last, in user order, so the decision does not depend on which user finished first and a resumed run
stops at the same place. The parent's values are from its own validation evaluation (no extra calls).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import fmean

from memevo.evolve.records import Instance


class ParentMargin:
    """A pruner (``evaluation.Pruner``) comparing a candidate with its parent user prefix by user prefix."""

    def __init__(self, parent: Mapping[Instance, float], users: Sequence[str], margin: float) -> None:
        self.parent = parent
        self.users = list(users)
        self.margin = margin

    def uses_per_user_values(self) -> bool:
        return False  # the running mean over the users so far

    def report(self, number: int, value: float, step: int) -> bool:
        """True when the candidate's mean over the first ``step + 1`` users trails the parent's by more than the
        margin (``number``, the trial, is not needed: the parent is the reference)."""
        del number
        seen = set(self.users[: step + 1])
        values = [value for (user, _), value in self.parent.items() if user in seen]
        return bool(values) and value < fmean(values) - self.margin
