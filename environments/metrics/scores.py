"""Scores of a set of episodes: accuracy, random baseline, upper bound, normalised memory score (F.1-F.4).

``memory_score`` is AMemGym's: the mean of per-(user, period) cell ratios ``(acc - rand) / (ub - rand)``,
not a ratio of means. A cell whose upper bound is *below* random keeps its sign-flipped ratio, as in the
reference; only a cell with ``ub == rand`` exactly (where the reference divided by zero, I.8) is left out,
and counted in ``n_excluded``. ``n_memory_points`` says how many cells the score rests on.

``pooled_memory_score`` is ``(acc - rand) / (ub - rand)`` of the question-weighted means, i.e.
``(sum acc - sum rand) / (sum ub - sum rand)`` over all questions: one ratio instead of a mean of noisy
ones, so it is stable on small runs where a cell of two questions can swing AMemGym's mean by +-10.

``no_memory_accuracy`` is MemGym's memory-isolated baseline (the same LLM answering with no memory at
all); ``memory_gain`` is the agent's accuracy minus it: what memory adds over what the model guesses.

An upper-bound reply that could not be read counts as wrong, which lowers the upper bound and raises the
memory score; every aggregate therefore reports how many distinct upper-bound replies behind it were
unreadable (``upper_bound_format_errors``) and their share (``upper_bound_format_error_rate``).

Both memory scores of an aggregate are None, with ``memory_na_reason`` saying why, whenever its upper bound
is not measurably above random or too often unreadable (``measurable.memory_not_measurable``): a ratio over a
denominator that is noise is no score.

Any environment's episodes score here: accuracy is the mean of each record's ``value`` (1 or 0 for a choice, the
[0, 1] credit of a free-text answer), the random baseline is AMemGym's for its items, 1/n for another multiple-choice
question, and None (n/a) as soon as a free-text answer is among the questions; ``per_category`` groups the
questions by the benchmark's category. Once free text is scored, accuracy is a mean of per-question credit, so
``scoring`` counts the questions per method and ``score_meaning`` says what the figure is; ``category_mean`` and
``abstention`` are LongMemEval's task-averaged and abstention accuracies (any benchmark's, where it has them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import Any

from memevo.core.lazy_model import LazyModel
from memevo.environments.amemgym.data.models import Item
from memevo.environments.metrics._items import item_lookup, item_of
from memevo.environments.metrics.baseline import random_baseline
from memevo.environments.metrics.failure import (
    DEFAULT_MIN_PROBE_COVERAGE,
    FailureSplit,
    ProbeCoverage,
    failure_split,
    probe_coverage,
)
from memevo.environments.metrics.measurable import memory_not_measurable, position_collapse
from memevo.environments.metrics.no_memory import NoMemoryTable
from memevo.environments.metrics.upper_bound import UpperBoundEntry, UpperBoundTable
from memevo.environments.records import SCORING_NAMES, EpisodeResult, PeriodResult, QARecord, ScoringMethod


class Cell(LazyModel):
    """One (user, period): question-averaged accuracy, baseline and upper bound."""

    user_id: str
    period: int
    n_questions: int
    accuracy: float
    random_baseline: float | None
    """None when a question here is free text (no option to guess)."""
    upper_bound: float | None
    format_errors: int
    random_fallbacks: int
    upper_bound_replies: list[UpperBoundEntry] = []
    """The upper-bound replies behind ``upper_bound``, one per question (empty without an upper bound)."""
    no_memory: float | None = None
    """Question-averaged accuracy of the no-memory baseline (None when it was not run)."""
    write_requests: int | None = None
    """Memory writes the agent asked its LLM for during this period (None for agents without a write path)."""
    write_failures: int | None = None
    """Of those, writes given up on because the reply could not be used."""

    @property
    def excluded(self) -> bool:
        """The reference's division by zero: upper bound exactly equal to random."""
        return self.upper_bound is not None and self.upper_bound == self.random_baseline

    @property
    def inverted(self) -> bool:
        """Upper bound below random: the ratio is kept, with its sign flipped, as in the reference."""
        return self.upper_bound is not None and self.random_baseline is not None and self.upper_bound < self.random_baseline

    @property
    def memory_score(self) -> float | None:
        """AMemGym's per-cell ratio (negative below random, sign-flipped when ub < rand)."""
        if self.upper_bound is None or self.random_baseline is None or self.excluded:
            return None
        return (self.accuracy - self.random_baseline) / (self.upper_bound - self.random_baseline)


class ScoreSummary(LazyModel):
    """What every aggregate (overall, per period, per user) reports."""

    n_questions: int
    accuracy: float
    random_baseline: float | None
    """None (n/a) when free-text questions are among them."""
    upper_bound: float | None
    memory_score: float | None
    n_memory_points: int
    """Cells (user, period) the memory score is the mean of."""
    n_excluded: int
    """Cells left out because their upper bound equals random exactly."""
    n_inverted: int = 0
    """Cells among the used ones whose upper bound is below random (their ratio has a flipped sign)."""
    pooled_memory_score: float | None = None
    """(sum acc - sum rand) / (sum ub - sum rand) over all questions; None whenever ``memory_score`` is."""
    memory_na_reason: str | None = None
    """Why both memory scores are None (no upper bound, or one not measurably above random); None when defined."""
    no_memory_accuracy: float | None = None
    """Accuracy of the same LLM answering with no memory at all (None when not run)."""
    memory_gain: float | None = None
    """``accuracy - no_memory_accuracy``: what the agent's memory adds over guessing."""
    write_requests: int | None = None
    """Memory writes asked of the LLM (None when no agent here has a write path)."""
    write_failures: int | None = None
    """Writes given up on because the reply could not be used (they change nothing in memory)."""
    write_failure_rate: float | None = None
    format_error_rate: float
    random_fallback_rate: float
    upper_bound_format_errors: int | None = None
    """Distinct upper-bound replies behind these scores that could not be read (None without an upper bound)."""
    upper_bound_format_error_rate: float | None = None
    """Their share of the distinct upper-bound replies behind these scores."""


class CategoryScores(LazyModel):
    """The questions of one benchmark category."""

    category: str
    n_questions: int
    accuracy: float
    """Mean credit (``QARecord.value``) over the category's questions."""


class PeriodScores(ScoreSummary):
    period: int
    n_users: int
    failure: FailureSplit | None = None
    probes: ProbeCoverage | None = None


class UserScores(ScoreSummary):
    """One user's scores, for paired comparisons between candidates on the same users."""

    user_id: str
    per_period_accuracy: list[float]
    per_period_memory: list[float | None]
    per_period_questions: list[int] = []
    """Questions per period (empty in records written before it was kept)."""


class Scores(ScoreSummary):
    n_users: int
    per_period: list[PeriodScores]
    failure: FailureSplit | None = None
    """None when undiagnosed, or when too few probes could be read (see ``probes``)."""
    probes: ProbeCoverage | None = None
    answer_collapse: str | None = None
    """Names an answer-position collapse of the agent's answers (one option for nearly every question)."""
    answer_mode: str | None = None
    """How the agent answered its multiple-choice questions ('generated' or 'likelihood', both joined by '+' when
    mixed); None when there were none."""
    per_category: list[CategoryScores] = []
    """Per benchmark category, in first-seen order (empty when no question has a category)."""
    scoring: dict[str, int] = {}
    """Questions per scoring method ('choice', 'token_f1', ...), in first-seen order."""
    score_meaning: str = "share of multiple-choice questions answered right"
    """What ``accuracy`` is: the share answered right, or a mean of per-question credit by the methods in ``scoring``."""
    category_mean: float | None = None
    """The unweighted mean of the categories' scores (LongMemEval's task-averaged accuracy); None under two
    categories."""
    abstention: CategoryScores | None = None
    """The questions unanswerable from the sessions (LongMemEval's abstention accuracy); None when there are none."""


def _write_counts(result: PeriodResult) -> dict[str, int | None]:
    writes = result.memory_writes
    return {"write_requests": None if writes is None else writes.requests,
            "write_failures": None if writes is None else writes.failures}


def record_baseline(item: object, record: QARecord) -> float | None:
    """What guessing scores on one question: AMemGym's random baseline for its items, 1/n for another
    multiple-choice question, None for free text."""
    if isinstance(item, Item):
        return random_baseline(item, record.period, record.question_index)
    return 1 / record.n_choices if record.n_choices else None


def _mean_baseline(item: object, records: Sequence[QARecord]) -> float | None:
    values = [record_baseline(item, record) for record in records]
    return None if any(value is None for value in values) else fmean(value or 0.0 for value in values)


def cells(episodes: Sequence[EpisodeResult], items: Sequence[Any], upper_bound: UpperBoundTable | None,
          no_memory: NoMemoryTable | None = None) -> list[Cell]:
    """One cell per (episode, period) that asked at least one question; ``items`` are any environment's (named by
    ``id``); the upper bound and no-memory tables are AMemGym's."""
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
                accuracy=fmean(r.value for r in records),
                random_baseline=_mean_baseline(item, records),
                upper_bound=fmean(e.correct for e in replies) if replies else None,
                format_errors=sum(r.format_error for r in records),
                random_fallbacks=sum(r.random_fallback for r in records),
                upper_bound_replies=replies,
                no_memory=None if no_memory is None
                else fmean(no_memory.correct(item, r.period, r.question_index) for r in records),
                **_write_counts(result),
            ))
    return out


def _write_summary(group: Sequence[Cell]) -> dict[str, float | int | None]:
    known = [cell for cell in group if cell.write_requests is not None]
    if not known:
        return {"write_requests": None, "write_failures": None, "write_failure_rate": None}
    requests = sum(cell.write_requests or 0 for cell in known)
    failures = sum(cell.write_failures or 0 for cell in known)
    return {"write_requests": requests, "write_failures": failures,
            "write_failure_rate": failures / requests if requests else 0.0}


def mean_of_ratios(group: Sequence[Cell]) -> float | None:
    """AMemGym's memory score as its formula reads, over the cells that define a ratio (no measurability check)."""
    ratios = [cell.memory_score for cell in group if cell.memory_score is not None]
    return fmean(ratios) if ratios else None


def pooled_ratio(group: Sequence[Cell]) -> float | None:
    """(sum acc - sum rand) / (sum ub - sum rand) over the questions, as the formula reads (None at 0/0)."""
    if not group or any(cell.upper_bound is None or cell.random_baseline is None for cell in group):
        return None
    gain = sum((cell.accuracy - (cell.random_baseline or 0.0)) * cell.n_questions for cell in group)
    room = sum(((cell.upper_bound or 0.0) - (cell.random_baseline or 0.0)) * cell.n_questions for cell in group)
    return None if room == 0 else gain / room


def summarize(group: Sequence[Cell]) -> dict[str, float | int | str | None]:
    """Question-weighted means and both memory scores, which are None with a reason when the group's upper
    bound does not measurably beat random."""
    n = sum(cell.n_questions for cell in group)
    n_ratios = sum(cell.memory_score is not None for cell in group)
    has_ub = all(cell.upper_bound is not None for cell in group)
    has_no_memory = all(cell.no_memory is not None for cell in group)
    replies = {entry.key: entry for cell in group for entry in cell.upper_bound_replies}
    ub_errors = sum(entry.format_error for entry in replies.values())

    def weighted(values: Sequence[float | None]) -> float:
        return sum((v or 0.0) * cell.n_questions for v, cell in zip(values, group, strict=True)) / n

    accuracy = weighted([c.accuracy for c in group])
    rand = weighted([c.random_baseline for c in group]) if all(c.random_baseline is not None for c in group) else None
    upper = weighted([c.upper_bound for c in group]) if has_ub else None
    no_memory = weighted([c.no_memory for c in group]) if has_no_memory else None
    ub_error_rate = ub_errors / len(replies) if has_ub and replies else None
    reason = (memory_not_measurable(n_questions=n, upper_bound=upper, random_baseline=rand,
                                    upper_bound_unreadable=ub_error_rate)
              if rand is not None else "no random baseline (free-text answers)")
    measurable = reason is None
    return {
        "n_questions": n,
        "accuracy": accuracy,
        "random_baseline": rand,
        "upper_bound": upper,
        "memory_score": mean_of_ratios(group) if measurable else None,
        "n_memory_points": n_ratios,
        "n_excluded": sum(cell.excluded for cell in group),
        "n_inverted": sum(cell.inverted for cell in group),
        "pooled_memory_score": pooled_ratio(group) if measurable else None,
        "memory_na_reason": reason,
        "no_memory_accuracy": no_memory,
        "memory_gain": None if no_memory is None else accuracy - no_memory,
        "format_error_rate": sum(c.format_errors for c in group) / n,
        "random_fallback_rate": sum(c.random_fallbacks for c in group) / n,
        "upper_bound_format_errors": ub_errors if has_ub else None,
        "upper_bound_format_error_rate": (ub_error_rate or 0.0) if has_ub else None,
        **_write_summary(group),
    }


def score_episodes(
    episodes: Sequence[EpisodeResult],
    items: Sequence[Any],
    upper_bound: UpperBoundTable | None = None,
    *,
    no_memory: NoMemoryTable | None = None,
    min_probe_coverage: float = DEFAULT_MIN_PROBE_COVERAGE,
) -> Scores:
    """Overall and per-period scores; memory score only with an upper-bound table, memory gain only
    with a no-memory table, failure split only when at least ``min_probe_coverage`` of it is readable."""
    all_cells = cells(episodes, items, upper_bound, no_memory)
    if not all_cells:
        raise ValueError("no answered questions to score")
    records = [qa for episode in episodes for period in episode.periods for qa in period.qa]
    per_category = category_scores(records)
    scoring = dict(Counter(qa.scoring for qa in records))

    def diagnosis(period: int | None) -> dict[str, object]:
        return {"failure": failure_split(episodes, items, period, min_probe_coverage),
                "probes": probe_coverage(episodes, items, period, min_probe_coverage)}

    periods = sorted({cell.period for cell in all_cells})
    per_period = [
        PeriodScores(period=period, n_users=len(group), **diagnosis(period), **summarize(group))
        for period in periods
        for group in [[cell for cell in all_cells if cell.period == period]]
    ]
    return Scores(
        n_users=len({cell.user_id for cell in all_cells}),
        per_period=per_period,
        answer_collapse=position_collapse(qa.choice for qa in records if qa.scoring == "choice"),
        answer_mode="+".join(sorted({qa.answer_mode for qa in records if qa.n_choices})) or None,
        per_category=per_category,
        scoring=scoring,
        score_meaning=score_meaning(scoring),
        category_mean=fmean(c.accuracy for c in per_category) if len(per_category) > 1 else None,
        abstention=abstention_scores(records),
        **diagnosis(None),
        **summarize(all_cells),
    )


def score_meaning(scoring: Mapping[ScoringMethod, int]) -> str:
    """What accuracy is over questions scored by ``scoring`` (method -> questions)."""
    if set(scoring) <= {"choice"}:
        return "share of multiple-choice questions answered right"
    methods = ", ".join(f"{SCORING_NAMES.get(method, method)} on {n}" for method, n in scoring.items())
    return f"mean per-question credit: {methods}"


def abstention_scores(records: Sequence[QARecord]) -> CategoryScores | None:
    """Mean credit of the abstention questions; None when there are none."""
    values = [record.value for record in records if record.abstention]
    return CategoryScores(category="abstention", n_questions=len(values), accuracy=fmean(values)) if values else None


def category_scores(records: Sequence[QARecord]) -> list[CategoryScores]:
    """Mean credit per category, in first-seen order; questions without a category are left out."""
    groups: dict[str, list[float]] = {}
    for record in records:
        if record.category is not None:
            groups.setdefault(record.category, []).append(record.value)
    return [CategoryScores(category=name, n_questions=len(values), accuracy=fmean(values))
            for name, values in groups.items()]


def user_scores(
    episodes: Sequence[EpisodeResult], items: Sequence[Any], upper_bound: UpperBoundTable | None = None,
    *, no_memory: NoMemoryTable | None = None,
) -> list[UserScores]:
    """Per-user scores in episode order."""
    out = []
    for episode in episodes:
        group = cells([episode], items, upper_bound, no_memory)
        if not group:
            continue
        out.append(UserScores(
            user_id=episode.user_id,
            per_period_accuracy=[cell.accuracy for cell in group],
            per_period_memory=[cell.memory_score for cell in group],
            per_period_questions=[cell.n_questions for cell in group],
            **summarize(group),
        ))
    return out
