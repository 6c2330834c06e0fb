"""Acceptance: does a candidate that has been scored on validation join the pool?

``mean`` accepts any higher validation mean (memevo's first loop; on one or two users it accepts noise).
``paired`` compares candidate and parent on the same validation (user, period) instances with a
one-sided paired t-test: it accepts when the mean gain exceeds ``min_effect`` at the configured
confidence. With no spread in the gains the test is undefined; then the gain itself decides.
"""

from __future__ import annotations

from collections.abc import Mapping
from statistics import fmean
from typing import Protocol

from memevo.core.lazy_model import LazyModel
from memevo.evolve.cells import paired_gains, pooled_mean
from memevo.evolve.records import Instance


class Decision(LazyModel):
    accepted: bool
    reason: str


class Acceptance(Protocol):
    def decide(self, candidate: Mapping[Instance, float], parent: Mapping[Instance, float]) -> Decision: ...


class MeanAcceptance:
    def __init__(self, confidence: float = 0.9, min_effect: float = 0.0) -> None:
        del confidence, min_effect  # the mean rule has no parameters

    def decide(self, candidate: Mapping[Instance, float], parent: Mapping[Instance, float]) -> Decision:
        mine, theirs = pooled_mean(candidate), pooled_mean(parent)
        return Decision(accepted=mine > theirs, reason=f"validation mean {mine:.3f} vs parent {theirs:.3f}")


class PairedAcceptance:
    def __init__(self, confidence: float = 0.9, min_effect: float = 0.0) -> None:
        self.confidence = confidence
        self.min_effect = min_effect

    def decide(self, candidate: Mapping[Instance, float], parent: Mapping[Instance, float]) -> Decision:
        gains = paired_gains(candidate, parent)
        if len(gains) < 2:
            return Decision(accepted=False, reason=f"{len(gains)} paired instance(s): too few to test")
        mean_gain = fmean(gains)
        if max(gains) == min(gains):
            accepted = mean_gain > self.min_effect
            return Decision(accepted=accepted, reason=f"constant gain {mean_gain:+.3f} on {len(gains)} instances")
        from scipy import stats  # a heavy import: loaded at the first paired decision, not at start-up

        p_value = float(stats.ttest_1samp(gains, popmean=self.min_effect, alternative="greater").pvalue)
        accepted = p_value < 1 - self.confidence
        return Decision(
            accepted=accepted, reason=f"mean gain {mean_gain:+.3f} on {len(gains)} instances, p={p_value:.3f}"
        )
