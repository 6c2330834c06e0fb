"""The user-simulator contract used by the episode runner."""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime

from memevo.agents.llm.protocol import Message
from memevo.environments.data.models import Item, Session


class UserSimulator(ABC):
    """Writes the user's next message in a session; it must never reveal a state-schema value."""

    @abstractmethod
    async def follow_up(
        self,
        item: Item,
        period_index: int,
        session: Session,
        messages: list[Message],
        now: datetime,
    ) -> str:
        """The next user message, given the session so far (``messages`` alternate user/assistant)."""
