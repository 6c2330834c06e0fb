"""What the four published benchmarks add to the off-policy base (``environments.replay``): notes on oddities in
valid data, kept as the files are read (``memevo env validate`` prints them), and a judged item refused before
its sessions are replayed when no judge is configured, rather than after.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memevo.agents.base import MemoryAgent
from memevo.core.errors import UserInputError
from memevo.environments.item_run import PLAIN_RUN, ItemRun
from memevo.environments.records import EpisodeResult
from memevo.environments.replay import ReplayEnvironment, ReplayItem

if TYPE_CHECKING:
    from memevo.agents.llm.protocol import ChatClient
    from memevo.environments.runner import EpisodeConfig, SessionSource


class BenchmarkEnvironment(ReplayEnvironment):
    def __init__(self, episode: EpisodeConfig, *, judge: ChatClient | None = None) -> None:
        super().__init__(episode, judge=judge)
        self.load_warnings: list[str] = []
        """Oddities in the data the last ``load_items`` read (valid records a user should know about)."""

    async def run_item(
        self,
        agent: MemoryAgent,
        item: ReplayItem,
        sessions: SessionSource | None,
        run: ItemRun = PLAIN_RUN,
    ) -> EpisodeResult:
        if self.judge is None and self.judged(item):
            raise UserInputError(f"environment '{self.name}' scores some answers with an LLM judge: configure "
                                 "llm.judge", field="llm.judge")
        return await super().run_item(agent, item, sessions, run)
