"""The long-context baseline (reference E.1): the whole conversation is the memory.

With ``context_token_budget`` set, the oldest messages are dropped until the prompt fits. Tokens are
approximated as ``ceil(characters / 4) + 4`` per message (no tokenizer dependency; English text runs
about four characters per token, plus a few tokens of chat framing). The system prompt and the
newest message are always kept.

Each session's first message is preceded by its date (``DATE: 8 May 2023, 13:56``), as LoCoMo's baseline writes
it, so questions about when things happened can be answered; under ``amemgym_compat`` no date is added, as in
AMemGym.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from memevo.agents.base import AgentAnswer, AgentSpec, MemoryAgent, ScoredOptions
from memevo.agents.llm.protocol import ChatClient, Message, Role
from memevo.agents.policy import MemoryPolicy
from memevo.agents.prompts.answer import NATIVE_SYSTEM
from memevo.agents.prompts.dates import session_header
from memevo.agents.registry import register_agent


def approx_tokens(message: Message) -> int:
    """Rough token count of one chat message (see the module docstring)."""
    return math.ceil(len(message["content"]) / 4) + 4


@register_agent("native")
class NativeAgent(MemoryAgent):
    """Replies with the entire conversation history (optionally trimmed to a token budget) as context."""

    spec = AgentSpec(
        kind="native",
        description="Whole conversation as context; optional token budget drops the oldest messages.",
        components=(NATIVE_SYSTEM,),
    )

    def __init__(self, policy: MemoryPolicy, llm: ChatClient) -> None:
        super().__init__(policy, llm)
        self.history: list[Message] = []
        self.shown_date: str | None = None
        """The last session date written into the history; a message at another date starts with its own."""
        # The consulted memory of the last answer, keyed by (history length, kept length): every question of a
        # period consults the same history, so it is rendered once, not once per question (it can be megabytes).
        self._rendered: tuple[tuple[int, int], str] | None = None

    def _context(self, message: str) -> tuple[list[Message], list[Message]]:
        """(messages to send, the part of the history they include)."""
        system = self.prompt("system_prompt")
        head: list[Message] = [{"role": "system", "content": system}] if system else []
        tail: list[Message] = [{"role": "user", "content": message}]
        kept = list(self.history)
        budget = self.policy.context_token_budget
        if budget is not None:
            used = sum(approx_tokens(m) for m in head + tail + kept)
            while kept and used > budget:
                used -= approx_tokens(kept.pop(0))
        return head + kept + tail, kept

    async def respond(self, message: str, now: datetime) -> str:
        message = self._dated(message, now)
        messages, _ = self._context(message)
        reply = (await self.llm.chat(messages, role="agent")).text
        self._remember(message, reply)
        return reply

    async def answer(
        self, prompt: str, *, query: str, now: datetime, json_schema: dict[str, Any] | None = None,
        role: Role = "agent",
    ) -> AgentAnswer:
        messages, kept = self._context(prompt)
        reply = (await self.llm.chat(messages, role=role, json_schema=json_schema)).text
        return AgentAnswer(text=reply, consulted_memory=self._consulted(kept))

    async def score_options(self, prompt: str, options: list[str], *, query: str, now: datetime,
                            role: Role = "agent") -> ScoredOptions:
        messages, kept = self._context(prompt)
        scores = await self.score_in_context(messages, options, role)
        return ScoredOptions(scores=scores, consulted_memory=self._consulted(kept))

    def _consulted(self, kept: list[Message]) -> str:
        """``kept`` (a suffix of the history) as text, reused while the history and the suffix stay the same."""
        key = (len(self.history), len(kept))
        if self._rendered is None or self._rendered[0] != key:
            self._rendered = (key, "\n".join(f"{m['role']}: {m['content']}" for m in kept))
        return self._rendered[1]

    async def ingest(self, user_message: str, assistant_message: str, now: datetime) -> None:
        self._remember(self._dated(user_message, now), assistant_message)

    def _dated(self, message: str, now: datetime) -> str:
        """``message`` preceded by the session's date line when it is the first one at ``now``'s date."""
        header = session_header(now)
        if self.policy.amemgym_compat or header == self.shown_date:
            return message
        self.shown_date = header
        return f"{header}\n{message}"

    def _remember(self, user_message: str, assistant_message: str) -> None:
        self.history.append({"role": "user", "content": user_message})
        self.history.append({"role": "assistant", "content": assistant_message})

    async def end_session(self, now: datetime) -> None:
        """Nothing is pending: every message is already in the history."""

    def state(self) -> dict[str, Any]:
        shown = {} if self.shown_date is None else {"shown_date": self.shown_date}
        return {"history": [dict(m) for m in self.history], **shown}

    def load_state(self, state: dict[str, Any]) -> None:
        self.history = [{"role": m["role"], "content": m["content"]} for m in state["history"]]
        self.shown_date = state.get("shown_date")
        self._rendered = None
