"""Write / read / utilisation failure split (AMemGym F.5, with the fractional rule of its website).

The reference repository only counted write and read failures (I.9). Here every incorrect answer
contributes exactly 1, shared among its failed required states: a state is *failed* when the probe at
question time got it wrong; it is a *write* failure if the probe was also wrong right after the state
was last written, else a *read* failure. With no failed state the error is a *utilisation* failure.
So write + read + utilisation = 1 - accuracy, per period and overall.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel

from memevo.environments.data.models import Item
from memevo.environments.metrics._items import item_lookup, item_of
from memevo.environments.records import EpisodeResult, ProbeRecord


class FailureSplit(BaseModel):
    """Failure rates as shares of all questions asked (correct answers count as successes)."""

    write: float
    read: float
    utilization: float
    n_questions: int


def write_position(item: Item, period: int, key: str) -> int:
    """The last period up to ``period`` whose updates contain ``key``; period 0 writes every variable."""
    for candidate in range(period, 0, -1):
        if key in item.periods[candidate].updates:
            return candidate
    return 0


def question_failure(
    probes: dict[tuple[int, int], ProbeRecord], item: Item, period: int, question_index: int
) -> tuple[float, float, float]:
    """(write, read, utilisation) shares of one incorrect answer; they sum to 1."""
    probe = probes[(period, question_index)]
    failed = [key for key, ok in probe.correct.items() if not ok]
    if not failed:
        return 0.0, 0.0, 1.0
    n_write = sum(not probes[(write_position(item, period, key), question_index)].correct[key] for key in failed)
    return n_write / len(failed), (len(failed) - n_write) / len(failed), 0.0


def _probe_index(episode: EpisodeResult) -> dict[tuple[int, int], ProbeRecord]:
    probes = {(probe.period, probe.question_index): probe for result in episode.periods for probe in result.probes}
    expected = sum(len(result.qa) for result in episode.periods)
    if len(probes) != expected:
        raise ValueError(
            f"user {episode.user_id}: {len(probes)} diagnosis probes for {expected} questions; "
            "the failure split needs a probe for every question (run with diagnose on)"
        )
    return probes


def failure_terms(episode: EpisodeResult, item: Item) -> Iterable[tuple[int, tuple[float, float, float]]]:
    """(period, (write, read, utilisation)) for every question of the episode; zeros when correct."""
    probes = _probe_index(episode)
    for result in episode.periods:
        for record in result.qa:
            if record.correct:
                yield result.period, (0.0, 0.0, 0.0)
            else:
                yield result.period, question_failure(probes, item, result.period, record.question_index)


def failure_split(
    episodes: Sequence[EpisodeResult], items: Sequence[Item], period: int | None = None
) -> FailureSplit | None:
    """Rates over all questions (or one period's); None when no episode was diagnosed."""
    if not any(result.probes for episode in episodes for result in episode.periods):
        return None
    by_id = item_lookup(items)
    totals = [0.0, 0.0, 0.0]
    count = 0
    for episode in episodes:
        for term_period, shares in failure_terms(episode, item_of(episode, by_id)):
            if period is None or term_period == period:
                count += 1
                totals = [total + share for total, share in zip(totals, shares, strict=True)]
    if count == 0:
        return None
    write, read, utilization = (total / count for total in totals)
    return FailureSplit(write=write, read=read, utilization=utilization, n_questions=count)
