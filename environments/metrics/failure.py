"""Write / read / utilisation failure split (AMemGym F.5, with the fractional rule of its website).

The reference repository only counted write and read failures (I.9). Every incorrect answer contributes
exactly 1, shared among its failed required states: a state is *failed* when the probe at question time
got it wrong; it is a *write* failure if the probe was also wrong right after the state was last written,
else a *read* failure. With no failed state the error is a *utilisation* failure.

The reference scored a probe value it could not read as wrong, so a model that never follows the probe
format has every error put down to writing. Here a failure is attributed only when every probe value it
needs was read; the others are *unattributed*, so write + read + utilisation + unattributed =
1 - accuracy. ``coverage`` is the share of incorrect answers that could be attributed; below the
configured minimum the split is not reported at all. ``amemgym_*`` keep the reference's rule (unreadable
= wrong) for comparison with published numbers; with every probe readable both rules agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memevo.core.lazy_model import LazyModel
from memevo.environments.amemgym.data.models import Item
from memevo.environments.metrics._items import item_lookup, item_of
from memevo.environments.records import EpisodeResult, ProbeRecord

DEFAULT_MIN_PROBE_COVERAGE = 0.9
"""Smallest share of incorrect answers with readable probes for which the split is reported."""

Shares = tuple[float, float, float]
"""(write, read, utilisation) shares of one incorrect answer; they sum to 1."""


class ProbeCoverage(LazyModel):
    """How much of the diagnosis could be read."""

    n_probes: int
    probe_format_errors: int
    """Probes with at least one value that could not be read (no JSON object, or a key missing)."""
    probe_format_error_rate: float
    n_incorrect: int
    n_attributed: int
    coverage: float
    """``n_attributed / n_incorrect`` (1.0 when every answer was correct)."""
    min_coverage: float


class FailureSplit(LazyModel):
    """Failure rates as shares of all questions asked (correct answers count as successes)."""

    write: float
    read: float
    utilization: float
    n_questions: int
    unattributed: float = 0.0
    """Share of questions answered wrongly whose failure needs a probe value that could not be read."""
    coverage: float = 1.0
    amemgym_write: float | None = None
    """The reference's rule, an unreadable probe value counting as a wrong one."""
    amemgym_read: float | None = None
    amemgym_utilization: float | None = None


def write_position(item: Item, period: int, key: str) -> int:
    """The last period up to ``period`` whose updates contain ``key``; period 0 writes every variable."""
    for candidate in range(period, 0, -1):
        if key in item.periods[candidate].updates:
            return candidate
    return 0


def question_failure(
    probes: dict[tuple[int, int], ProbeRecord], item: Item, period: int, question_index: int,
    *, unreadable_as_wrong: bool = True,
) -> Shares | None:
    """The shares of one incorrect answer; None when a needed probe value could not be read (unless
    ``unreadable_as_wrong``, the reference's rule)."""

    def state_ok(at: int, key: str) -> bool | None:
        probe = probes[(at, question_index)]
        if key in probe.unread_keys and not unreadable_as_wrong:
            return None
        return probe.correct[key]

    now = {key: state_ok(period, key) for key in item.qas[question_index].required_info}
    if None in now.values():
        return None
    failed = [key for key, ok in now.items() if not ok]
    if not failed:
        return 0.0, 0.0, 1.0
    written = [state_ok(write_position(item, period, key), key) for key in failed]
    if None in written:
        return None
    n_write = sum(not ok for ok in written)
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


class _Term(LazyModel):
    period: int
    correct: bool
    shares: Shares | None
    amemgym_shares: Shares


def failure_terms(episode: EpisodeResult, item: Item) -> Iterable[_Term]:
    """One term per question of the episode: its shares under both rules (zeros when correct)."""
    probes = _probe_index(episode)
    for result in episode.periods:
        for record in result.qa:
            if record.correct:
                zero = (0.0, 0.0, 0.0)
                yield _Term(period=result.period, correct=True, shares=zero, amemgym_shares=zero)
                continue
            args = (probes, item, result.period, record.question_index)
            reference = question_failure(*args, unreadable_as_wrong=True)
            assert reference is not None
            yield _Term(period=result.period, correct=False,
                        shares=question_failure(*args, unreadable_as_wrong=False), amemgym_shares=reference)


def _terms(episodes: Sequence[EpisodeResult], items: Sequence[Item], period: int | None) -> list[_Term]:
    by_id = item_lookup(items)
    return [
        term
        for episode in episodes
        for term in failure_terms(episode, item_of(episode, by_id))
        if period is None or term.period == period
    ]


def _diagnosed(episodes: Sequence[EpisodeResult]) -> bool:
    return any(result.probes for episode in episodes for result in episode.periods)


def probe_coverage(
    episodes: Sequence[EpisodeResult], items: Sequence[Item], period: int | None = None,
    min_coverage: float = DEFAULT_MIN_PROBE_COVERAGE,
) -> ProbeCoverage | None:
    """Probe format errors and the share of incorrect answers they leave attributable; None undiagnosed."""
    if not _diagnosed(episodes):
        return None
    probes = [p for e in episodes for r in e.periods if period is None or r.period == period for p in r.probes]
    terms = _terms(episodes, items, period)
    incorrect = [t for t in terms if not t.correct]
    attributed = sum(t.shares is not None for t in incorrect)
    errors = sum(bool(p.unread_keys) for p in probes)
    return ProbeCoverage(
        n_probes=len(probes),
        probe_format_errors=errors,
        probe_format_error_rate=errors / len(probes) if probes else 0.0,
        n_incorrect=len(incorrect),
        n_attributed=attributed,
        coverage=attributed / len(incorrect) if incorrect else 1.0,
        min_coverage=min_coverage,
    )


def failure_split(
    episodes: Sequence[EpisodeResult], items: Sequence[Item], period: int | None = None,
    min_coverage: float = DEFAULT_MIN_PROBE_COVERAGE,
) -> FailureSplit | None:
    """Rates over all questions (or one period's); None when no episode was diagnosed or when fewer than
    ``min_coverage`` of the incorrect answers have readable probes."""
    if not _diagnosed(episodes):
        return None
    terms = _terms(episodes, items, period)
    if not terms:
        return None
    incorrect = [t for t in terms if not t.correct]
    attributed = [t.shares for t in incorrect if t.shares is not None]
    coverage = len(attributed) / len(incorrect) if incorrect else 1.0
    if coverage < min_coverage:
        return None
    n = len(terms)

    def rates(shares: Sequence[Shares]) -> list[float]:
        return [sum(s[i] for s in shares) / n for i in range(3)]

    write, read, utilization = rates(attributed)
    amemgym_write, amemgym_read, amemgym_utilization = rates([t.amemgym_shares for t in incorrect])
    return FailureSplit(
        write=write, read=read, utilization=utilization, n_questions=n,
        unattributed=(len(incorrect) - len(attributed)) / n, coverage=coverage,
        amemgym_write=amemgym_write, amemgym_read=amemgym_read, amemgym_utilization=amemgym_utilization,
    )
