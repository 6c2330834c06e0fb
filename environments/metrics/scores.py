"""Scores of a set of episodes: accuracy, random baseline, upper bound, normalised memory score (F.1-F.4).

The memory score is a mean of per-(user, period) ratios ``(acc - rand) / (ub - rand)``, not a ratio of
means, exactly as the reference. Where ``ub - rand`` is not positive (the reference divided by zero; I.8)
that (user, period) is left out and counted in ``n_excluded``: no score is invented.

An upper-bound reply that could not be read counts as wrong, which lowers the upper bound and raises the
memory score; every aggregate therefore reports how many distinct upper-bound replies behind it were
unreadable (``upper_bound_format_errors``) and their share (``upper_bound_format_error_rate``).
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import fmean

from pydantic import BaseModel

from memevo.environments.data.models import Item
from memevo.environments.metrics._items import item_lookup, item_of
from memevo.environments.metrics.baseline import random_baseline
from memevo.environments.metrics.failure import FailureSplit, failure_split
from memevo.environments.metrics.upper_bound import UpperBoundEntry, UpperBoundTable
from memevo.environments.records import EpisodeResult

MIN_HEADROOM = 1e-9
"""Smallest ``ub - rand`` for which a (user, period) memory score is defined."""


class Cell(BaseModel):
    """One (user, period): question-averaged accuracy, baseline and upper bound."""

    user_id: str
    period: int
    n_questions: int
    accuracy: float
    random_baseline: float
    upper_bound: float | None
    format_errors: int
    random_fallbacks: int
    upper_bound_replies: list[UpperBoundEntry] = []
    """The upper-bound replies behind ``upper_bound``, one per question (empty without an upper bound)."""

    @property
    def excluded(self) -> bool:
        return self.upper_bound is not None and self.upper_bound - self.random_baseline <= MIN_HEADROOM

    @property
    def memory_score(self) -> float | None:
        if self.upper_bound is None or self.excluded:
            return None
        return (self.accuracy - self.random_baseline) / (self.upper_bound - self.random_baseline)


class _Summary(BaseModel):
    """What every aggregate (overall, per period, per user) reports."""

    n_questions: int
    accuracy: float
    random_baseline: float
    upper_bound: float | None
    memory_score: float | None
    n_memory_points: int
    n_excluded: int
    format_error_rate: float
    random_fallback_rate: float
    upper_bound_format_errors: int | None = None
    """Distinct upper-bound replies behind these scores that could not be read (None without an upper bound)."""
    upper_bound_format_error_rate: float | None = None
    """Their share of the distinct upper-bound replies behind these scores."""


class PeriodScores(_Summary):
    period: int
    n_users: int
    failure: FailureSplit | None = None


class UserScores(_Summary):
    """One user's scores, for paired comparisons between candidates on the same users."""

    user_id: str
    per_period_accuracy: list[float]
    per_period_memory: list[float | None]


class Scores(_Summary):
    n_users: int
    per_period: list[PeriodScores]
    failure: FailureSplit | None = None


def cells(episodes: Sequence[EpisodeResult], items: Sequence[Item], upper_bound: UpperBoundTable | None) -> list[Cell]:
    """One cell per (episode, period) that asked at least one question."""
    by_id = item_lookup(items)
    out = []
    for episode in episodes:
        item = item_of(episode, by_id)
        for result in episode.periods:
            if not result.qa:
                continue
            records = result.qa
            replies = [] if upper_bound is None else [
                upper_bound.entry(item, r.period, r.question_index) for r in records
            ]
            out.append(Cell(
                user_id=episode.user_id,
                period=result.period,
                n_questions=len(records),
                accuracy=fmean(r.correct for r in records),
                random_baseline=fmean(random_baseline(item, r.period, r.question_index) for r in records),
                upper_bound=fmean(e.correct for e in replies) if replies else None,
                format_errors=sum(r.format_error for r in records),
                random_fallbacks=sum(r.random_fallback for r in records),
                upper_bound_replies=replies,
            ))
    return out


def summarize(group: Sequence[Cell]) -> dict[str, float | int | None]:
    """Question-weighted means, and the mean of the defined per-cell memory ratios."""
    n = sum(cell.n_questions for cell in group)
    ratios = [cell.memory_score for cell in group if cell.memory_score is not None]
    has_ub = all(cell.upper_bound is not None for cell in group)
    replies = {entry.key: entry for cell in group for entry in cell.upper_bound_replies}
    ub_errors = sum(entry.format_error for entry in replies.values())

    def weighted(values: Sequence[float]) -> float:
        return sum(v * cell.n_questions for v, cell in zip(values, group, strict=True)) / n

    return {
        "n_questions": n,
        "accuracy": weighted([c.accuracy for c in group]),
        "random_baseline": weighted([c.random_baseline for c in group]),
        "upper_bound": weighted([c.upper_bound or 0.0 for c in group]) if has_ub else None,
        "memory_score": fmean(ratios) if ratios else None,
        "n_memory_points": len(ratios),
        "n_excluded": sum(cell.excluded for cell in group),
        "format_error_rate": sum(c.format_errors for c in group) / n,
        "random_fallback_rate": sum(c.random_fallbacks for c in group) / n,
        "upper_bound_format_errors": ub_errors if has_ub else None,
        "upper_bound_format_error_rate": ub_errors / len(replies) if has_ub else None,
    }


def score_episodes(
    episodes: Sequence[EpisodeResult], items: Sequence[Item], upper_bound: UpperBoundTable | None = None
) -> Scores:
    """Overall and per-period scores; memory score only when an upper-bound table is given."""
    all_cells = cells(episodes, items, upper_bound)
    if not all_cells:
        raise ValueError("no answered questions to score")
    periods = sorted({cell.period for cell in all_cells})
    per_period = [
        PeriodScores(
            period=period,
            n_users=len(group),
            failure=failure_split(episodes, items, period),
            **summarize(group),
        )
        for period in periods
        for group in [[cell for cell in all_cells if cell.period == period]]
    ]
    return Scores(
        n_users=len({cell.user_id for cell in all_cells}),
        per_period=per_period,
        failure=failure_split(episodes, items),
        **summarize(all_cells),
    )


def user_scores(
    episodes: Sequence[EpisodeResult], items: Sequence[Item], upper_bound: UpperBoundTable | None = None
) -> list[UserScores]:
    """Per-user scores in episode order."""
    out = []
    for episode in episodes:
        group = cells([episode], items, upper_bound)
        if not group:
            continue
        out.append(UserScores(
            user_id=episode.user_id,
            per_period_accuracy=[cell.accuracy for cell in group],
            per_period_memory=[cell.memory_score for cell in group],
            **summarize(group),
        ))
    return out
