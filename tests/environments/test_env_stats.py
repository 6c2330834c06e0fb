"""Dataset figures on the hand-written fixture, checked against counts worked out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from memevo.environments.amemgym.data.io import load_items
from memevo.environments.amemgym.stats import compute_stats

FIXTURE = Path(__file__).parents[1] / "fixtures" / "amemgym_small.json"


def test_fixture_counts() -> None:
    figures = compute_stats(load_items(FIXTURE))
    # user 1: 2 + 1 + 2 sessions, user 2: 3 + 2 + 1; period-0 sessions have 1 round, later ones 2.
    assert (figures.users, figures.periods, figures.sessions, figures.rounds) == (2, 6, 11, 8 + 9)
    assert (figures.questions, figures.scored_points) == (4, 12)
    assert figures.state_variables_mean == 3.5
    assert figures.mean_changes_per_period == 2.0  # 2, 3 and 2, 1
    assert figures.mean_choices_per_question == 4.0
    assert figures.random_baseline == 0.25
    # Replies: user 1 has 2 one-round + 3 two-round sessions = 2*250 + 3*(2*250 + 30) = 2090; user 2: 2340.
    assert figures.mean_transcript_tokens == pytest.approx(figures.query_tokens / 2 + (2090 + 2340) / 2, abs=1)
    total_chars = sum(len(s.query) for item in load_items(FIXTURE) for p in item.periods for s in p.sessions)
    assert total_chars // 4 < figures.query_tokens < total_chars // 4 + 11 * 10


def test_rounds_change_rounds_and_tokens() -> None:
    items = load_items(FIXTURE)
    base = compute_stats(items)
    more = compute_stats(items, rounds_init=2, rounds_update=5)
    assert more.rounds == 5 * 2 + 6 * 5
    assert more.max_transcript_tokens > base.max_transcript_tokens


def test_random_baseline_counts_matching_choices() -> None:
    items = load_items(FIXTURE)
    choices = items[0].qas[0].answer_choices
    choices.append(choices[0].model_copy())  # 5 choices, period 0's gold appears twice
    figures = compute_stats(items)
    # user 1 question 0: period 0 -> 2/5, periods 1, 2 -> 1/5; the other 9 points -> 1/4.
    assert figures.random_baseline == pytest.approx((2 / 5 + 1 / 5 + 1 / 5 + 9 * 0.25) / 12)
