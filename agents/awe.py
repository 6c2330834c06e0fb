"""AWE: an LLM-curated external store (AMemGym awe, i.e. mem0 with infer=True), without mem0.

Each flushed batch goes through fact extraction; each fact is then compared with the
``SIMILAR_LIMIT`` most similar stored memories and the LLM picks add / update / delete / keep. When no
stored memory shares anything with the fact it is added without asking. Ids shown to the LLM are
small local numbers ("0", "1", ...) mapped back to store ids, so it cannot touch memories it was not
shown. Malformed replies are retried once, then skipped and counted. Dates are simulated time.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

from memevo.agents.base import AgentSpec
from memevo.agents.buffered import BufferedMessage, MalformedReply
from memevo.agents.external import ExternalMemoryAgent
from memevo.agents.prompts.answer import answer_component
from memevo.agents.prompts.awe import (
    EXTRACT_PLACEHOLDERS,
    FACT_EXTRACTION_COMPONENT,
    UPDATE_COMPONENT,
    UPDATE_PLACEHOLDERS,
)
from memevo.agents.prompts.awi import MEMORY_TYPES_COMPONENT
from memevo.agents.registry import register_agent
from memevo.agents.store import StoredMemory
from memevo.core.lazy_model import LazyModel

SIMILAR_LIMIT = 5
FACTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
    "required": ["facts"],
}
DECISION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["add", "update", "delete", "keep"]},
        "id": {"type": "string"},
        "text": {"type": "string"},
    },
    "required": ["action"],
}


class Decision(LazyModel):
    """What to do with one fact; ``target`` indexes the memories shown."""

    action: Literal["add", "update", "delete", "keep"]
    target: int | None = None
    text: str = ""


def parse_facts(data: Any) -> list[str]:
    """Accept {"facts": [...]} (or a bare list) of strings; empty strings are dropped."""
    facts = data.get("facts") if isinstance(data, dict) else data
    if not isinstance(facts, list) or not all(isinstance(f, str) for f in facts):
        raise MalformedReply("expected {\"facts\": [strings]}")
    return [f.strip() for f in facts if f.strip()]


def decision_parser(shown: int) -> Callable[[Any], Decision]:
    """A parser for update replies that may only target one of the ``shown`` memories."""

    def parse(data: Any) -> Decision:
        if not isinstance(data, dict) or data.get("action") not in ("add", "update", "delete", "keep"):
            raise MalformedReply("expected an object with action add/update/delete/keep")
        text = data.get("text") or ""
        if not isinstance(text, str):
            raise MalformedReply("text must be a string")
        target = None
        if data["action"] in ("update", "delete"):
            raw = str(data.get("id", "")).strip()
            if not raw.isdigit() or int(raw) >= shown:
                raise MalformedReply(f"id {raw!r} is not one of the {shown} memories shown")
            target = int(raw)
        return Decision(action=data["action"], target=target, text=text.strip())

    return parse


@register_agent("awe")
class AWEAgent(ExternalMemoryAgent):
    """Extracts facts from flushed messages and reconciles each with the store before storing it."""

    spec = AgentSpec(
        kind="awe",
        description="Agentic write, external store: fact extraction, then add/update/delete/keep per fact.",
        components=(
            FACT_EXTRACTION_COMPONENT,
            UPDATE_COMPONENT,
            MEMORY_TYPES_COMPONENT,
            answer_component(in_context=False),
        ),
        hyperparameters=("update_every", "short_term", "top_k"),
    )

    async def write(self, batch: list[BufferedMessage]) -> None:
        at = batch[-1].time
        values = {
            "memory_types": self.prompt("memory_types"),
            "conversation": "\n".join(f"{m.role}: {m.content}" for m in batch),
        }
        facts = await self.ask_prompt(
            "fact_extraction_prompt", EXTRACT_PLACEHOLDERS, at, values, FACTS_SCHEMA, parse_facts
        )
        for fact in facts or []:
            await self._reconcile(fact, at)

    async def _reconcile(self, fact: str, at: datetime) -> None:
        similar: list[StoredMemory] = await self.search(fact, SIMILAR_LIMIT)
        if not similar:
            self.store.add(fact, at)
            return
        shown = json.dumps([{"id": str(i), "text": m.text} for i, m in enumerate(similar)], ensure_ascii=False)
        values = {"existing_memories": shown, "new_fact": fact}
        decision = await self.ask_prompt(
            "update_prompt", UPDATE_PLACEHOLDERS, at, values, DECISION_SCHEMA, decision_parser(len(similar))
        )
        if decision is None or decision.action == "keep":
            return
        if decision.action == "add":
            self.store.add(decision.text or fact, at)
            return
        target = decision.target
        assert target is not None, "the parser gives update and delete a target"
        if decision.action == "update":
            self.store.update(similar[target].id, decision.text or fact, at)
        else:
            self.store.delete(similar[target].id, at)
