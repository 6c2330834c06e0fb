"""The world family: world ``seed`` draws its rules (rules.py), its users, and knows its oracle (scoring.py)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from benchmarks.worlds.backend import WorldBackend
from benchmarks.worlds.base import WorldRun
from benchmarks.worlds.rules import draw_rules
from benchmarks.worlds.scoring import oracle
from memevo.environments.amemgym.data.models import Item, Session
from tests.doubles.category_backend import category_world

PERIODS = 3
CLOSING = 2
"""Small-talk sessions closing each period: an AWI policy keeping ``short_term`` raw messages (4 by default, 0 in
the benchmark's seed) writes an exchange only ``short_term / 2`` exchanges later, so without them a period's last
announcements could reach its notes after the questions. scoring.py assumes every announcement is written before
them, for any ``short_term`` up to 4 (tests/benchmarks/test_benchmark_worlds.py checks it against real episodes)."""


def with_closing_sessions(item: Item) -> Item:
    periods = []
    for period in item.periods:
        last = datetime.strptime(period.sessions[-1].session_time, "%Y-%m-%d %H:%M:%S")
        closing = [Session(exposed_states={}, query="Thanks, that is all for today.",
                           session_time=f"{last + timedelta(hours=i + 1):%Y-%m-%d %H:%M:%S}") for i in range(CLOSING)]
        periods.append(period.model_copy(update={"sessions": [*period.sessions, *closing]}))
    return item.model_copy(update={"periods": periods})


def family_world(seed: int, users: int) -> WorldRun:
    """World ``seed`` of the family with ``users`` users (its answer noise is one of its drawn rules)."""
    rules = draw_rules(seed)
    items = [with_closing_sessions(item) for item in category_world(
        users, PERIODS, seed=seed, questions=rules.questions,
        pairs={(first, second): count for first, second, count in rules.pairs})]
    by_id = {item.id: item for item in items}

    def best(user_ids: Sequence[str]) -> float:
        return oracle(rules, [by_id[user] for user in user_ids]).score

    return WorldRun(items=items, seed_types="\n".join(rules.seed_lines), noise=rules.noise,
                    backend=lambda noise: WorldBackend(rules, items, answer_noise=noise), oracle=best,
                    label=rules.summary())
