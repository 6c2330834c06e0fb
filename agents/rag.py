"""RAG: raw messages become memories, no LLM in the write path (AMemGym rag, mem0 infer=False).

``memory_unit`` picks what one memory is, once, at construction: one message (AMemGym's RAG and MemoryBench's
BM25-M / Emb-M) or one whole session (MemoryBench's BM25-S / Emb-S). A session memory is written as soon as the
session's first messages are flushed and grows with each flush, so the session in progress is searchable too; at
the session's end the buffer is flushed into it and it is closed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memevo.agents.base import AgentSpec
from memevo.agents.buffered import BufferedMessage
from memevo.agents.external import ExternalMemoryAgent
from memevo.agents.llm.protocol import ChatClient
from memevo.agents.policy import MemoryPolicy
from memevo.agents.prompts.answer import answer_component
from memevo.agents.registry import register_agent
from memevo.agents.store import MemoryStore

PREFIXES = {"user": "USER INPUT: ", "assistant": "ASSISTANT RESPONSE: "}


def prefixed(message: BufferedMessage) -> str:
    """A message as RAG stores it: AMemGym's role prefix, then the text."""
    return PREFIXES[message.role] + message.content


class MessageUnits:
    """Each flushed message is one memory."""

    closes_sessions = False

    def write(self, store: MemoryStore, batch: list[BufferedMessage]) -> None:
        for message in batch:
            store.add(prefixed(message), message.time)

    def close_session(self) -> None:
        """Nothing is open between messages."""

    def state(self) -> dict[str, Any]:
        return {}

    def load_state(self, data: dict[str, Any]) -> None:
        """Message units keep no state of their own."""


class SessionUnits:
    """Each session is one memory: its prefixed messages, one per line, in order."""

    closes_sessions = True

    def __init__(self) -> None:
        self.open_memory: int | None = None
        """The store id of the session in progress; None between sessions."""

    def write(self, store: MemoryStore, batch: list[BufferedMessage]) -> None:
        lines = "\n".join(prefixed(message) for message in batch)
        at = batch[-1].time
        if self.open_memory is None:
            self.open_memory = store.add(lines, at)
            return
        text = next(m.text for m in store.all() if m.id == self.open_memory)
        store.update(self.open_memory, f"{text}\n{lines}", at)

    def close_session(self) -> None:
        self.open_memory = None

    def state(self) -> dict[str, Any]:
        return {"open_session_memory": self.open_memory}

    def load_state(self, data: dict[str, Any]) -> None:
        self.open_memory = data.get("open_session_memory")


@register_agent("rag")
class RAGAgent(ExternalMemoryAgent):
    """Stores flushed messages verbatim (with AMemGym's role prefix), by message or by session, and retrieves the
    top k."""

    spec = AgentSpec(
        kind="rag",
        description="Raw messages stored verbatim, one memory per message or per session; top-k retrieval by BM25 "
        "or embeddings.",
        components=(answer_component(in_context=False),),
        hyperparameters=("update_every", "short_term", "top_k"),
    )

    def __init__(self, policy: MemoryPolicy, llm: ChatClient, *, db_path: str = ":memory:") -> None:
        super().__init__(policy, llm, db_path=db_path)
        self.units = SessionUnits() if policy.memory_unit == "session" else MessageUnits()

    async def write(self, batch: list[BufferedMessage]) -> None:
        self.units.write(self.store, batch)

    async def end_session(self, now: datetime) -> None:
        if self.units.closes_sessions:
            while self.buffer:  # the session's last messages belong to its memory, not to the next session's
                await self._flush_oldest()
        else:
            await super().end_session(now)
        self.units.close_session()

    def memory_state(self) -> dict[str, Any]:
        return {**self.store.dump(), **self.units.state()}

    def load_memory_state(self, data: dict[str, Any]) -> None:
        self.store.restore(data)
        self.units.load_state(data)
