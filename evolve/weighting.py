"""Weighted means as plain means, apart from ``stats``: selection needs them before the first request, which waits
for no scipy import."""

from __future__ import annotations

from collections.abc import Sequence


def weighted_contributions(values: Sequence[float], weights: Sequence[float]) -> list[float]:
    """Each value times its weight over the mean weight: the plain mean of these is the weighted mean, so an interval
    or a paired test over them speaks of the figure pooled over what the weights count (questions)."""
    if not values:
        return []
    mean_weight = sum(weights) / len(weights)
    return [value * weight / mean_weight for value, weight in zip(values, weights, strict=True)]
