"""The short-term buffer and write cycle that AWI, RAG and AWE share (reference E.2, E.3).

Units are messages: each exchange adds two (user, assistant). Whenever the buffer holds at least
``update_every + short_term`` messages, the oldest ``update_every`` are popped and written to memory;
the rest stay as raw context. With ``update_every`` >= 2 (every released config) this is exactly
AMemGym's one check per exchange; the loop only matters for ``update_every`` = 1, where a single
check would let the buffer grow without bound.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Collection
from datetime import datetime
from typing import Any, TypeVar

from memevo.agents.base import AgentAnswer, MemoryAgent, ScoredOptions
from memevo.agents.llm.protocol import ChatClient, LLMJSONError, Message, Role
from memevo.agents.policy import MemoryPolicy
from memevo.agents.prompts.answer import ANSWER_PLACEHOLDERS, NO_MEMORIES
from memevo.agents.prompts.dates import today
from memevo.agents.templates import render
from memevo.core.lazy_model import LazyModel

T = TypeVar("T")


class BufferedMessage(LazyModel):
    """A raw message waiting in the short-term buffer, with the simulated time it arrived."""

    role: str
    content: str
    time: datetime


class WriteCounters(LazyModel):
    """How memory writes went: LLM write requests, retries after a malformed reply, replies given up on."""

    requests: int = 0
    retries: int = 0
    failures: int = 0


class MalformedReply(ValueError):
    """The LLM's JSON parsed but does not have the shape the write step needs."""


class BufferedMemoryAgent(MemoryAgent):
    """An agent that answers from (memory text + raw buffer) and writes the buffer out in batches."""

    def __init__(self, policy: MemoryPolicy, llm: ChatClient) -> None:
        super().__init__(policy, llm)
        self.buffer: list[BufferedMessage] = []
        self.counters = WriteCounters()

    @abstractmethod
    async def memory_text(self, query: str) -> str:
        """The memory lines to show for ``query`` (empty string when there are none)."""

    @abstractmethod
    async def write(self, batch: list[BufferedMessage]) -> None:
        """Commit flushed messages to long-term memory."""

    @abstractmethod
    def memory_state(self) -> Any:
        """The long-term memory as JSON-serializable data."""

    @abstractmethod
    def load_memory_state(self, data: Any) -> None:
        """Restore ``memory_state`` output."""

    async def respond(self, message: str, now: datetime) -> str:
        reply = await self._reply(await self.memory_text(message), message, now)
        await self._take_exchange(message, reply, now)
        return reply

    async def answer(
        self, prompt: str, *, query: str, now: datetime, json_schema: dict[str, Any] | None = None,
        role: Role = "agent",
    ) -> AgentAnswer:
        memory = await self.memory_text(prompt if self.policy.amemgym_compat else query)
        return AgentAnswer(text=await self._reply(memory, prompt, now, json_schema, role), consulted_memory=memory)

    async def score_options(self, prompt: str, options: list[str], *, query: str, now: datetime,
                            role: Role = "agent") -> ScoredOptions:
        memory = await self.memory_text(prompt if self.policy.amemgym_compat else query)
        scores = await self.score_in_context(self._answer_messages(memory, prompt, now), options, role)
        return ScoredOptions(scores=scores, consulted_memory=memory)

    async def ingest(self, user_message: str, assistant_message: str, now: datetime) -> None:
        await self._take_exchange(user_message, assistant_message, now)

    async def end_session(self, now: datetime) -> None:
        if self.policy.flush_on_session_end:
            while self.buffer:
                await self._flush_oldest()

    def state(self) -> dict[str, Any]:
        return {
            "buffer": [m.model_dump(mode="json") for m in self.buffer],
            "counters": self.counters.model_dump(),
            "memory": self.memory_state(),
        }

    def load_state(self, state: dict[str, Any]) -> None:
        self.buffer = [BufferedMessage.model_validate(m) for m in state["buffer"]]
        self.counters = WriteCounters.model_validate(state["counters"])
        self.load_memory_state(state["memory"])

    async def _take_exchange(self, user_message: str, assistant_message: str, now: datetime) -> None:
        self.buffer.append(BufferedMessage(role="user", content=user_message, time=now))
        self.buffer.append(BufferedMessage(role="assistant", content=assistant_message, time=now))
        while len(self.buffer) >= self.policy.update_every + self.policy.short_term:
            await self._flush_oldest()

    async def _flush_oldest(self) -> None:
        batch = self.buffer[: self.policy.update_every]
        del self.buffer[: self.policy.update_every]
        await self.write(batch)

    async def _reply(
        self, memory: str, message: str, now: datetime, json_schema: dict[str, Any] | None = None,
        role: Role = "agent",
    ) -> str:
        messages = self._answer_messages(memory, message, now)
        return (await self.llm.chat(messages, role=role, json_schema=json_schema)).text

    def _answer_messages(self, memory: str, message: str, now: datetime) -> list[Message]:
        """The answer prompt with ``memory`` and ``{today}`` (``now``'s date), the raw buffer, then ``message``."""
        # AMemGym showed an empty memory list as nothing at all
        empty = "" if self.policy.amemgym_compat else NO_MEMORIES
        values = {"memories": memory or empty, "today": today(now)}
        system = render(self.prompt("answer_system_prompt"), values, set(ANSWER_PLACEHOLDERS))
        messages: list[Message] = [{"role": "system", "content": system}]
        messages += [{"role": m.role, "content": m.content} for m in self.buffer]
        messages.append({"role": "user", "content": message})
        return messages

    async def ask_prompt(
        self,
        name: str,
        placeholders: Collection[str],
        at: datetime,
        values: dict[str, str],
        schema: dict[str, Any],
        parse: Callable[[Any], T],
    ) -> T | None:
        """The policy's ``name`` prompt filled with ``values`` and ``today`` (the simulated date ``at``),
        asked as one JSON write request (see ``ask_json``)."""
        prompt = render(self.prompt(name), {**values, "today": today(at)}, set(placeholders))
        return await self.ask_json(prompt, schema, parse)

    async def ask_json(self, prompt: str, schema: dict[str, Any], parse: Callable[[Any], T]) -> T | None:
        """One JSON write request, retried once on a malformed reply, then skipped and counted (None). It is capped
        at the policy's ``write_max_tokens`` (JSON cut at its cap is lost or repaired into less), not the reply cap.

        Under ``amemgym_compat`` the request is sent in plain JSON mode, without ``schema``, as the
        reference did; the retry stays (the reference's run crashed on such a reply instead).

        The retry shows the model its unusable reply and a reminder naming what was wrong, so it is a
        different request (at temperature 0 a bare resend mostly gets the same reply back, from the
        model or from the response cache).
        """
        self.counters.requests += 1
        messages: list[Message] = [{"role": "user", "content": prompt}]
        # AMemGym sent write requests in plain JSON mode (response_format json_object), with no schema.
        sent_schema = None if self.policy.amemgym_compat else schema
        for attempt in range(2):
            try:
                data, reply = await self.llm.chat_json(messages, role="agent", json_schema=sent_schema,
                                                       max_tokens=self.policy.write_max_tokens)
            except LLMJSONError as error:
                raw, problem = error.raw_text, "it was not valid JSON"
            else:
                try:
                    return parse(data)
                except MalformedReply as error:
                    raw, problem = reply.text, str(error)
            if attempt == 0:
                self.counters.retries += 1
                messages = [*messages, {"role": "assistant", "content": raw}, format_reminder(problem)]
        self.counters.failures += 1
        return None


def format_reminder(problem: str) -> Message:
    """The user turn that asks again after an unusable write reply, saying what was wrong with it."""
    return {
        "role": "user",
        "content": f"That reply could not be used: {problem}. "
        "Reply again with only the JSON the instructions above ask for, and nothing else.",
    }
