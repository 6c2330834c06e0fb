"""Mem0 (the ``mem0ai`` library) as the agent kind ``mem0``, its write prompts evolvable.

memevo's buffer decides when messages are written (``update_every``, ``short_term``); each write is one
``Memory.add`` of Mem0's: fact extraction, a vector search per fact, then one update call choosing ADD / UPDATE /
DELETE / NONE. The extra keeps Mem0 at 1.0.x, the last line with those two prompts (2.x replaced them with one
additive extraction prompt and no update step). Its LLM and embedder are the agent's gateway (``sync_clients``);
its vector store is Qdrant's in-process mode, one collection per agent, so no service is needed (Mem0 itself still
writes a user id to ~/.mem0 when imported). A memory's ``created_at`` is the simulated time of its write; memories
retrieved for a reply are listed oldest first by it, each with that date (an updated memory keeps its creation
time: Mem0 stamps updates with the wall clock). Mem0's graph memory (Mem0-G) is not offered: its LLM calls are tool calls, which the
gateway does not make.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import warnings
from datetime import datetime
from typing import Any

from memevo.agents.base import AgentSpec
from memevo.agents.buffered import BufferedMemoryAgent, BufferedMessage
from memevo.agents.llm.protocol import ChatClient
from memevo.agents.memory_systems.extras import import_extra
from memevo.agents.memory_systems.mem0_prompts import FACT_EXTRACTION_COMPONENT, UPDATE_MEMORY_COMPONENT
from memevo.agents.memory_systems.sync_clients import SyncChat, SyncEmbedder
from memevo.agents.policy import MemoryPolicy
from memevo.agents.prompts.answer import answer_component
from memevo.agents.prompts.awi import MEMORY_TYPES_COMPONENT
from memevo.agents.prompts.dates import dated
from memevo.agents.registry import register_agent
from memevo.agents.retrieval import embedding_source
from memevo.agents.templates import render

USER_ID = "user"
COLLECTION = "memevo"
UNUSED_KEY = "unused: memevo replaces this client by its gateway"


def import_mem0() -> Any:
    """Mem0's module holding ``Memory`` and ``MemoryConfig``, with Mem0's telemetry off: it would send events over
    the network. Mem0 reads ``MEM0_TELEMETRY`` once, at its import, into two module globals; when something imported
    it earlier with telemetry on, those globals are switched off here."""
    os.environ["MEM0_TELEMETRY"] = "False"
    main = import_extra("mem0.memory.main", extra="mem0", kind="mem0")
    for module in (main, sys.modules["mem0.memory.telemetry"]):
        setattr(module, "MEM0_TELEMETRY", False)  # a module global mypy cannot see
    return main


def mem0_can_use(text: str) -> bool:
    """Whether Mem0 can act on a write reply. Its own cleaning (code fences, then the outermost braces) must give a
    JSON object with a "memory" list (the update step) or a "facts" list (extraction; empty when there is nothing to
    remember) that is not made only of facts Mem0 skips (objects without "fact" or "text", as small models write
    them). Otherwise Mem0 stores nothing, with at most a log line."""
    utils = sys.modules["mem0.memory.utils"]
    for candidate in (utils.remove_code_blocks(text), utils.extract_json(text)):
        try:
            data = json.loads(candidate, strict=False)
        except json.JSONDecodeError:
            continue
        if not isinstance(data, dict):
            return False
        facts = data.get("facts")
        if isinstance(facts, list):
            return not facts or not all(_skipped_fact(fact) for fact in facts)
        return isinstance(data.get("memory"), list)
    return False


def _skipped_fact(fact: Any) -> bool:
    """A fact Mem0's ``normalize_facts`` drops: an object with neither a "fact" nor a "text" value, or ""."""
    return not (fact.get("fact") or fact.get("text")) if isinstance(fact, dict) else fact == ""


@register_agent("mem0")
class Mem0Agent(BufferedMemoryAgent):
    """Mem0's add/search pipeline behind memevo's short-term buffer and answer prompt."""

    spec = AgentSpec(
        kind="mem0",
        description="Mem0 (mem0ai library): fact extraction, then ADD/UPDATE/DELETE/NONE against similar memories; "
        "top-k vector search per reply. Needs embedding_model.",
        components=(
            FACT_EXTRACTION_COMPONENT,
            UPDATE_MEMORY_COMPONENT,
            MEMORY_TYPES_COMPONENT,
            answer_component(in_context=False),
        ),
        hyperparameters=("update_every", "short_term", "top_k"),
    )

    def __init__(self, policy: MemoryPolicy, llm: ChatClient) -> None:
        super().__init__(policy, llm)
        self.mem0 = import_mem0()
        self.embedder, self.embedding_model = embedding_source(policy, llm, "agent kind 'mem0'", field="llm")
        self.memory: Any = None
        """Mem0's ``Memory``, made at the first write (the collection needs the embedding size)."""
        self.dimensions: int | None = None

    async def write(self, batch: list[BufferedMessage]) -> None:
        at = batch[-1].time
        memory = await self._memory()
        values = {"memory_types": self.prompt("memory_types"), "today": at.date().isoformat()}
        # Mem0 reads both prompts from its config at every add, so each write carries its own simulated date.
        memory.config.custom_fact_extraction_prompt = render(
            self.prompt("fact_extraction_prompt"), values, set(FACT_EXTRACTION_COMPONENT.placeholders))
        memory.config.custom_update_memory_prompt = render(
            self.prompt("update_memory_prompt"), values, set(UPDATE_MEMORY_COMPONENT.placeholders))
        messages = [{"role": m.role, "content": m.content} for m in batch]
        await asyncio.to_thread(memory.add, messages, user_id=USER_ID, metadata={"created_at": at.isoformat()})

    async def memory_text(self, query: str) -> str:
        if self.memory is None:
            return ""
        found = await asyncio.to_thread(self.memory.search, query, user_id=USER_ID, limit=self.policy.top_k)
        shown = sorted(found["results"], key=lambda m: (m.get("created_at") or "", m["memory"]))
        return "\n".join(f"- {with_date(m)}" for m in shown)

    async def _memory(self) -> Any:
        if self.memory is None:
            probe = await self.embedder.embed(["embedding size"], role="agent", model=self.embedding_model)
            self._build(len(probe[0]))
        return self.memory

    def _build(self, dimensions: int) -> None:
        """A fresh Mem0 ``Memory`` on an empty in-process Qdrant collection of ``dimensions``-long vectors."""
        from qdrant_client import QdrantClient  # installed with mem0ai

        config = self.mem0.MemoryConfig(
            vector_store={"provider": "qdrant", "config": {
                "collection_name": COLLECTION, "embedding_model_dims": dimensions,
                "client": QdrantClient(location=":memory:")}},
            llm={"provider": "openai", "config": {"api_key": UNUSED_KEY}},
            embedder={"provider": "openai", "config": {"api_key": UNUSED_KEY}},
            history_db_path=":memory:",
        )
        with warnings.catch_warnings():  # Qdrant's in-process mode says Mem0's payload indexes do nothing there
            warnings.simplefilter("ignore", UserWarning)
            memory = self.mem0.Memory(config)
        memory.llm = SyncChat(self.llm, max_tokens=self.policy.write_max_tokens, on_reply=self._count_write)
        memory.embedding_model = SyncEmbedder(self.embedder, self.embedding_model)
        self.memory, self.dimensions = memory, dimensions

    def _count_write(self, reply: str) -> None:
        """One write request; a failure when Mem0 cannot use its reply (no JSON object, or only facts of a shape it
        skips): Mem0 then skips the step with at most a log line, and retries nothing."""
        self.counters.requests += 1
        if not mem0_can_use(reply):
            self.counters.failures += 1

    def memory_state(self) -> dict[str, Any]:
        """Every stored point (id, vector, payload) in id order; Mem0's history table is not kept. A point's vector
        is its text's embedding (Mem0 embeds a memory's text to store it), as the endpoint gave it."""
        if self.memory is None:
            return {"dimensions": None, "points": []}
        client = self.memory.vector_store.client
        count = client.count(COLLECTION).count
        points, _ = client.scroll(COLLECTION, limit=max(count, 1), with_payload=True, with_vectors=False)
        vectors = self.memory.embedding_model.vectors
        return {
            "dimensions": self.dimensions,
            "points": sorted(({"id": str(p.id), "vector": vectors[p.payload["data"]], "payload": p.payload}
                              for p in points), key=lambda p: p["id"]),
        }

    def load_memory_state(self, data: dict[str, Any]) -> None:
        self.memory, self.dimensions = None, None
        if data["dimensions"] is None:
            return
        from qdrant_client.models import PointStruct

        self._build(int(data["dimensions"]))
        if data["points"]:
            self.memory.vector_store.client.upsert(COLLECTION, [PointStruct(**p) for p in data["points"]])
        self.memory.embedding_model.vectors.update({p["payload"]["data"]: p["vector"] for p in data["points"]})


def with_date(found: dict[str, Any]) -> str:
    """A retrieved memory's text after its (simulated) creation date; the bare text when Mem0 returned none."""
    created = found.get("created_at")
    return dated(found["memory"], datetime.fromisoformat(created)) if created else str(found["memory"])
