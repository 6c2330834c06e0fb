"""AMemGym's LLM role-play user simulator (D.2), with a guard that makes leaking state impossible.

The model sees the profile, the profile date (the item's start), the current date, the opening query
with its time prefix, the last ``window`` messages and the state schema marked do-not-reveal.

Two deliberate differences from the reference:
- "Current date" is the session's simulated time (``now``), not the period's end (I.11): the user
  should not live in the future of the conversation they are having. ``current_date="period_end"``
  restores the reference's convention (``--amemgym-compat``).
- Every reply is checked for schema values written verbatim (whole phrase, any case). A leaking reply
  is asked for again once; if it still leaks, a neutral follow-up is sent instead. ``stats`` counts
  both, so a run can report how often the model had to be overruled.
"""

from __future__ import annotations

import json
import random
from datetime import datetime
from typing import Literal

from memevo.agents.llm.protocol import ChatClient, Message
from memevo.agents.templates import render
from memevo.core.lazy_model import LazyModel
from memevo.environments.amemgym.data.models import Item, Session
from memevo.environments.amemgym.generation.queries import mentions
from memevo.environments.amemgym.simulators.base import UserSimulator, opening_message

NEUTRAL_FOLLOW_UPS = (
    "Thanks, that helps. Could you go into a bit more detail on that?",
    "Interesting. What would you suggest as a first step?",
    "Okay, and what should I watch out for?",
    "That makes sense. Is there anything else I should consider?",
)
LAST_RESORT = "Go on, please."
TEMPLATE_PLACEHOLDERS = {"start_date", "profile", "current_date", "query", "context", "state_schema"}


class SimulatorStats(LazyModel):
    """How often the simulator was called, had to re-ask, or fell back to a neutral message."""

    calls: int = 0
    reasked: int = 0
    fallbacks: int = 0


class LLMUserSimulator(UserSimulator):
    """Keeps a session going as the user without revealing any state-schema value."""

    def __init__(self, llm: ChatClient, *, window: int = 2, seed: int = 0, temperature: float = 0.2,
                 current_date: Literal["session", "period_end"] = "session", template: str | None = None) -> None:
        """``template``: a single-message prompt read from an AMemGym checkout (placeholders
        ``TEMPLATE_PLACEHOLDERS``) instead of memevo's system + user messages."""
        if window < 1:
            raise ValueError("window must be at least 1")
        self.llm = llm
        self.current_date = current_date
        self.template = template
        self.window = window
        self.seed = seed
        self.temperature = temperature
        self.stats = SimulatorStats()

    def prompt(self, item: Item, session: Session, messages: list[Message], now: datetime,
               period_index: int = 0) -> list[Message]:
        """The messages sent to the model; public so tests and logs can inspect exactly what it saw."""
        today = (item.periods[period_index].period_end if self.current_date == "period_end"
                 else now.strftime("%Y-%m-%d %H:%M:%S"))
        if self.template is not None:
            return [{"role": "user", "content": self._from_template(item, session, messages, today)}]
        schema = "\n".join(f"- {name}: {', '.join(values)}" for name, values in item.state_schema.items())
        recent = messages[max(1, len(messages) - self.window):]
        transcript = "\n\n".join(f"{m['role'].upper()}: {m['content']}" for m in recent) or "(no replies yet)"
        system = (
            "You play the user described below, chatting with an AI assistant. Stay in character.\n"
            f"Your profile (written on {item.start_time}):\n{item.user_profile.formatted_str}\n\n"
            f"Current date: {today}\n\n"
            "DO NOT REVEAL: the facts below describe your private situation. Never state, hint at or confirm any "
            f"of these values, in any wording:\n{schema}\n\n"
            "Rules: if the assistant asks for clarification, answer only with details that are not among the facts "
            "above; otherwise ask a natural follow-up on a related topic. Do not repeat what your first message "
            "said and do not volunteer personal details. Write only your next message, one to three sentences."
        )
        user = (
            f"Your first message in this conversation:\n{opening_message(session)}\n\n"
            f"Most recent messages:\n{transcript}\n\nWrite your next message to the assistant."
        )
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def _from_template(self, item: Item, session: Session, messages: list[Message], today: str) -> str:
        assert self.template is not None
        recent = messages[max(0, len(messages) - self.window):]
        values = {
            "start_date": item.start_time,
            "profile": item.user_profile.formatted_str,
            "current_date": today,
            "query": opening_message(session),
            "context": "\n".join(f"{m['role'].title()}: {m['content']}" for m in recent),
            "state_schema": json.dumps(item.state_schema, indent=2, ensure_ascii=False),
        }
        return render(self.template, values, TEMPLATE_PLACEHOLDERS)

    def leaks(self, item: Item, text: str) -> list[str]:
        """Schema values that ``text`` contains verbatim."""
        return sorted({value for values in item.state_schema.values() for value in values if mentions(text, value)})

    async def follow_up(
        self, item: Item, period_index: int, session: Session, messages: list[Message], now: datetime
    ) -> str:
        self.stats.calls += 1
        conversation = self.prompt(item, session, messages, now, period_index)
        for attempt in range(2):
            reply = await self.llm.chat(
                conversation, role="user_simulator", temperature=self.temperature, sample_index=attempt
            )
            text = reply.text.strip()
            leaked = self.leaks(item, text)
            if text and not leaked:
                return text
            if attempt == 0:
                self.stats.reasked += 1
                problem = f"it mentions {', '.join(leaked)}, which you must not reveal" if leaked else "it was empty"
                conversation = [
                    *conversation,
                    {"role": "assistant", "content": text},
                    {"role": "user", "content": f"That message cannot be sent: {problem}. Write a different next message."},
                ]
        self.stats.fallbacks += 1
        return self._neutral(item, session, len(messages))

    def _neutral(self, item: Item, session: Session, turn: int) -> str:
        """A seeded neutral follow-up that itself contains no schema value."""
        safe = [text for text in NEUTRAL_FOLLOW_UPS if not self.leaks(item, text)]
        if not safe:
            return LAST_RESORT
        return random.Random(f"{self.seed}:{item.id}:{session.session_time}:{turn}").choice(safe)
