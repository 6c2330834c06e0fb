"""The user-simulator contract used by the episode runner, and the opening message both share."""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime

from memevo.agents.llm.protocol import Message
from memevo.environments.amemgym.data.models import Item, Session


def opening_message(session: Session) -> str:
    """The session's first user message exactly as the agent receives it (D.1 step 2): the only place
    the reference let simulated time reach the agent, kept for compatibility."""
    return f"[Current Time: {session.session_time}]\n{session.query}"


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
