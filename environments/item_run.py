"""How one item is played beyond the agent and its sessions, shared by the ``Environment`` protocol and the episode
runner (which both need it, so it lives below both)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memevo.agents.base import MemoryAgent
from memevo.environments.records import PeriodResult

if TYPE_CHECKING:
    from memevo.environments.store import RunStore

AfterPeriod = Callable[[MemoryAgent, PeriodResult], Awaitable[None]]
"""Called after a period's questions, before its state is saved (in-episode evolution hooks here)."""
OnPeriod = Callable[[PeriodResult], None]
"""Progress callback: called once per finished (or resumed) period."""


@dataclass(frozen=True)
class ItemRun:
    """How an item is played, beyond the agent and its sessions: where finished periods are kept (a killed run
    resumes per period), the user id records carry (default: the item's), hooks after each period, and whether
    the periods keep their traces. One value, so every environment's ``run_item`` has the same short signature."""

    store: RunStore | None = None
    user_id: str | None = None
    after_period: AfterPeriod | None = None
    on_period: OnPeriod | None = None
    traces: bool = True


PLAIN_RUN = ItemRun()
"""An item played once, in memory, with traces: what tests and off-line scorers ask for."""
