"""A paired sequential test: is a candidate better than its parent on the instances both were run on?

The evidence is the per-(user, period) gain of candidate over parent on the same users, each weighted by the
cell's questions (``cells.paired_gains``: their mean is the gain pooled over questions). After each look (a race
round, see ``race``) a one-sided Wilcoxon signed-rank test asks both ways: better by more than ``min_effect``, or
worse. A tie (gain 0) is counted as a tie, half a rank each way (``zero_method="zsplit"``), not dropped: a
candidate that changes nothing the users ask about never shows a gain. The test may stop at any look, so the
error allowed is spent over the looks (Bonferroni: each look at ``(1 - confidence) / looks``): a neutral candidate
is accepted at any look with probability at most ``1 - confidence``. The candidates of a generation are separate
hypotheses: a race keeps at most one of them, and since its successors are compared with it on fresh users, a
neutral one kept costs no inflated bar, only the episodes it took.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import Literal

from memevo.core.lazy_model import LazyModel
from memevo.evolve.cells import paired_gains
from memevo.evolve.records import Instance
from memevo.evolve.selection.acceptance import Decision

State = Literal["better", "worse", "open"]


class Verdict(LazyModel):
    """The test at one look: ``open`` until the evidence is strong enough either way."""

    state: State
    mean_gain: float
    n: int
    p_better: float
    p_worse: float

    @property
    def reason(self) -> str:
        return (f"mean gain {self.mean_gain:+.3f} on {self.n} paired instance(s), p(better) {self.p_better:.4f}, "
                f"p(worse) {self.p_worse:.4f}: {self.state}")


def one_sided_p(differences: Sequence[float], alternative: Literal["greater", "less"]) -> float:
    """Wilcoxon signed-rank p-value, ties split; 1 when there is nothing to rank (no instance, or all ties)."""
    if not any(differences):
        return 1.0
    from scipy import stats  # loaded at the first race round, not at start-up

    return float(stats.wilcoxon(differences, zero_method="zsplit", alternative=alternative).pvalue)


class SequentialTest:
    def __init__(self, confidence: float, min_effect: float, looks: int) -> None:
        self.min_effect = min_effect
        self.level = (1 - confidence) / max(1, looks)

    def can_accept(self, instances: int) -> bool:
        """Whether this many instances, all gains, can reach the level (the signed-rank test's smallest one-sided
        p-value on n instances is 2^-n)."""
        return 0.5**instances < self.level

    def verdict(self, gains: Sequence[float]) -> Verdict:
        p_better = one_sided_p([gain - self.min_effect for gain in gains], "greater")
        p_worse = one_sided_p(gains, "less")
        state: State = "better" if p_better < self.level else "worse" if p_worse < self.level else "open"
        return Verdict(state=state, mean_gain=fmean(gains) if gains else 0.0, n=len(gains), p_better=p_better,
                       p_worse=p_worse)


class SequentialAcceptance:
    """The test as an ``Acceptance`` rule: one look at one candidate (the race looks round by round)."""

    def __init__(self, confidence: float = 0.9, min_effect: float = 0.0) -> None:
        self.test = SequentialTest(confidence, min_effect, looks=1)

    def decide(self, candidate: Mapping[Instance, float], parent: Mapping[Instance, float]) -> Decision:
        verdict = self.test.verdict(paired_gains(candidate, parent))
        return Decision(accepted=verdict.state == "better", reason=verdict.reason)
