"""Size and difficulty figures of a data set: how much a run costs and what chance alone scores.

Token estimate (documented, approximate): opening queries and the ``[Current Time: ...]`` prefix count
as characters / 4; every round after the first adds a simulated user follow-up of
``FOLLOW_UP_TOKENS``; every round adds an assistant reply of ``REPLY_TOKENS`` (typical chat-model advice
length). The result is the length of one user's full on-policy transcript, i.e. the context a
long-context agent must hold by the last period.
"""

from __future__ import annotations

from statistics import mean

from memevo.core.lazy_model import LazyModel
from memevo.environments.amemgym.data.models import Item

CHARS_PER_TOKEN = 4
REPLY_TOKENS = 250
FOLLOW_UP_TOKENS = 30
_TIME_PREFIX_CHARS = len("[Current Time: 2020-10-01 19:00:00]\n")


class DatasetStats(LazyModel):
    """Counts are totals over users unless named ``mean_`` or ``max_``."""

    users: int
    periods: int
    sessions: int
    rounds: int
    questions: int
    scored_points: int
    state_variables_mean: float
    mean_changes_per_period: float
    mean_choices_per_question: float
    random_baseline: float
    query_tokens: int
    mean_transcript_tokens: float
    max_transcript_tokens: int
    rounds_init: int
    rounds_update: int


def compute_stats(items: list[Item], *, rounds_init: int = 1, rounds_update: int = 2) -> DatasetStats:
    """Figures for ``items`` run with the given rounds per session (period 0 / later periods)."""
    sessions = rounds = query_tokens = 0
    transcripts = []
    changes = []
    for item in items:
        transcript = 0
        for index, period in enumerate(item.periods):
            per_session = rounds_init if index == 0 else rounds_update
            sessions += len(period.sessions)
            rounds += per_session * len(period.sessions)
            if index > 0:
                changes.append(len(period.updates))
            for session in period.sessions:
                opening = (len(session.query) + _TIME_PREFIX_CHARS) // CHARS_PER_TOKEN
                query_tokens += opening
                transcript += opening + per_session * REPLY_TOKENS + (per_session - 1) * FOLLOW_UP_TOKENS
        transcripts.append(transcript)
    choices = [len(q.answer_choices) for item in items for q in item.qas]
    chances = [_chance(item, p, q) for item in items for p in range(len(item.periods)) for q in range(len(item.qas))]
    return DatasetStats(
        users=len(items),
        periods=sum(len(item.periods) for item in items),
        sessions=sessions,
        rounds=rounds,
        questions=len(choices),
        scored_points=len(chances),
        state_variables_mean=_mean([len(item.state_schema) for item in items]),
        mean_changes_per_period=_mean(changes),
        mean_choices_per_question=_mean(choices),
        random_baseline=_mean(chances),
        query_tokens=query_tokens,
        mean_transcript_tokens=_mean(transcripts),
        max_transcript_tokens=max(transcripts, default=0),
        rounds_init=rounds_init,
        rounds_update=rounds_update,
    )


def _chance(item: Item, period: int, question: int) -> float:
    """Expected accuracy of a uniform random choice (reference F.3): matching choices / choices."""
    qa = item.qas[question]
    state = item.periods[period].state
    if not qa.answer_choices or any(key not in state for key in qa.required_info):
        return 0.0
    target = [state[key] for key in qa.required_info]
    return sum(choice.state == target for choice in qa.answer_choices) / len(qa.answer_choices)


def _mean(values: list[int] | list[float]) -> float:
    return float(mean(values)) if values else 0.0
