"""Many items of one environment played at once: ``run_episodes``'s scheduling for any ``Environment``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from memevo.agents.base import MemoryAgent
from memevo.core.errors import UserInputError
from memevo.environments.item_run import ItemRun, OnPeriod
from memevo.environments.protocol import Environment
from memevo.environments.records import EpisodeResult
from memevo.environments.runner import SessionSource, bounded_gather
from memevo.environments.store import RunStore


async def run_items(
    environment: Environment[Any],
    make_agent: Callable[[], MemoryAgent],
    items: Sequence[Any],
    sessions: SessionSource | None,
    store: RunStore | None = None,
    *,
    on_period: OnPeriod | None = None,
    traces: bool = True,
) -> list[EpisodeResult]:
    """``run_episodes`` for any environment: a fresh agent per item, longest chain first, at most
    ``max_concurrent_users`` at once, resumable through ``store``; results in ``items`` order."""
    ids = [environment.item_id(item) for item in items]
    repeated = sorted(item_id for item_id, n in Counter(ids).items() if n > 1)
    if repeated:
        raise UserInputError(f"item ids used by more than one item: {', '.join(map(repr, repeated[:5]))}", field="id")
    order = sorted(range(len(items)), key=lambda index: -environment.chain_length(items[index]))
    episodes = await bounded_gather([items[index] for index in order], lambda item: environment.run_item(
        make_agent(), item, sessions, ItemRun(store=store, on_period=on_period, traces=traces),
    ), environment.episode.max_concurrent_users)
    by_index = dict(zip(order, episodes, strict=True))
    return [by_index[index] for index in range(len(items))]

