"""A-Mem as the agent kind ``amem``, written here after the paper (Xu et al., 2025) with its prompts evolvable.

No package is used: PyPI's ``a-mem`` is a third party's MCP server (not the authors' code), and both it and the
authors' repository embed with a sentence-transformers model fetched from a model hub at run time. Here each
flushed batch of messages becomes one note; the LLM gives it keywords, tags and a context line (note
construction); the ``NEIGHBOURS`` most similar stored notes are shown to the LLM, which picks those to link (link
generation, links kept both ways); the LLM then rewrites the context and tags of the linked notes the new note
changes (memory evolution: one request for all of them, where the paper asks per note). A note is ranked by its
content with its keywords, tags and context, by the policy's retrieval (embeddings as in the paper, or BM25); a
reply sees the ``top_k`` best notes and up to ``top_k`` notes linked to them, oldest first.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from memevo.agents.base import AgentSpec
from memevo.agents.buffered import BufferedMemoryAgent, BufferedMessage, MalformedReply
from memevo.agents.llm.protocol import ChatClient
from memevo.agents.memory_systems.amem_prompts import EVOLUTION_COMPONENT, LINK_COMPONENT, NOTE_COMPONENT
from memevo.agents.policy import MemoryPolicy
from memevo.agents.prompts.answer import answer_component
from memevo.agents.prompts.dates import dated
from memevo.agents.registry import register_agent
from memevo.agents.retrieval import make_retriever
from memevo.core.lazy_model import LazyModel

NEIGHBOURS = 5
"""Stored notes shown to the LLM when it links a new note (the paper's k for link generation)."""
_STRINGS: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
NOTE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"keywords": _STRINGS, "tags": _STRINGS, "context": {"type": "string"}},
    "required": ["keywords", "tags", "context"],
}
LINK_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"links": _STRINGS}, "required": ["links"]}
EVOLUTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"updates": {"type": "array", "items": {
        "type": "object",
        "properties": {"id": {"type": "string"}, "context": {"type": "string"}, "tags": _STRINGS},
        "required": ["id"],
    }}},
    "required": ["updates"],
}


class Note(LazyModel):
    """One A-Mem note: the messages it holds, the LLM's description of them and its links (note ids)."""

    id: int
    content: str
    timestamp: datetime
    keywords: list[str] = []
    tags: list[str] = []
    context: str = ""
    links: list[int] = []

    def ranked_text(self) -> str:
        """What retrieval compares with a query: the content with its keywords, tags and context."""
        return (f"{self.content}\nkeywords: {', '.join(self.keywords)}\ntags: {', '.join(self.tags)}\n"
                f"context: {self.context}")

    def shown(self, index: int) -> dict[str, Any]:
        """The note as a write prompt lists it, under the local id ``index``."""
        return {"id": str(index), "content": self.content, "context": self.context, "tags": self.tags}


def _strings(data: dict[str, Any], key: str) -> list[str]:
    value = data.get(key, [])
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise MalformedReply(f"{key} must be a list of strings")
    return [v.strip() for v in value if v.strip()]


def parse_note(data: Any) -> dict[str, Any]:
    """Keywords, tags (lists of strings; a comma-separated string is accepted) and a context string."""
    if not isinstance(data, dict) or not isinstance(data.get("context", ""), str):
        raise MalformedReply('expected {"keywords": [...], "tags": [...], "context": "..."}')
    return {"keywords": _strings(data, "keywords"), "tags": _strings(data, "tags"),
            "context": data.get("context", "").strip()}


def _local_id(raw: Any, shown: int) -> int:
    text = str(raw).strip()
    if not text.isdigit() or int(text) >= shown:
        raise MalformedReply(f"id {text!r} is not one of the {shown} notes shown")
    return int(text)


def link_parser(shown: int) -> Callable[[Any], list[int]]:
    """A parser for link replies that may only name one of the ``shown`` notes."""

    def parse(data: Any) -> list[int]:
        if not isinstance(data, dict) or not isinstance(data.get("links"), list):
            raise MalformedReply('expected {"links": [ids]}')
        return sorted({_local_id(raw, shown) for raw in data["links"]})

    return parse


def evolution_parser(shown: int) -> Callable[[Any], dict[int, dict[str, Any]]]:
    """A parser for evolution replies: shown note -> its new context and/or tags."""

    def parse(data: Any) -> dict[int, dict[str, Any]]:
        if not isinstance(data, dict) or not isinstance(data.get("updates"), list):
            raise MalformedReply('expected {"updates": [{"id": ..., "context": ..., "tags": [...]}]}')
        changes: dict[int, dict[str, Any]] = {}
        for update in data["updates"]:
            if not isinstance(update, dict):
                raise MalformedReply("each update must be an object")
            change: dict[str, Any] = {}
            if isinstance(update.get("context"), str) and update["context"].strip():
                change["context"] = update["context"].strip()
            if "tags" in update:
                change["tags"] = _strings(update, "tags")
            changes[_local_id(update.get("id"), shown)] = change
        return changes

    return parse


@register_agent("amem")
class AMemAgent(BufferedMemoryAgent):
    """Notes with keywords, tags and context, linked to related notes and revised as new notes arrive."""

    spec = AgentSpec(
        kind="amem",
        description="A-Mem (after the paper): notes with keywords/tags/context, LLM-chosen links, memory evolution "
        "of linked notes; top-k retrieval plus linked notes.",
        components=(NOTE_COMPONENT, LINK_COMPONENT, EVOLUTION_COMPONENT, answer_component(in_context=False)),
        hyperparameters=("update_every", "short_term", "top_k"),
    )

    def __init__(self, policy: MemoryPolicy, llm: ChatClient) -> None:
        super().__init__(policy, llm)
        self.notes: list[Note] = []
        self.retriever = make_retriever(policy, llm)

    async def similar(self, text: str, k: int) -> list[Note]:
        """The ``k`` stored notes most similar to ``text``, best first."""
        found = await self.retriever.rank(text, [n.ranked_text() for n in self.notes], k)
        return [self.notes[i] for i in found]

    async def write(self, batch: list[BufferedMessage]) -> None:
        at = batch[-1].time
        content = "\n".join(f"{m.role}: {m.content}" for m in batch)
        attributes = await self.ask_prompt(
            "note_prompt", NOTE_COMPONENT.placeholders, at, {"content": content}, NOTE_SCHEMA, parse_note)
        note = Note(id=max((n.id for n in self.notes), default=-1) + 1, content=content, timestamp=at,
                    **(attributes or {}))
        candidates = await self.similar(note.ranked_text(), NEIGHBOURS)
        self.notes.append(note)
        linked = await self._link(note, candidates, at) if candidates else []
        if linked:
            await self._evolve(note, linked, at)

    async def _link(self, note: Note, candidates: list[Note], at: datetime) -> list[Note]:
        """Link generation: the candidates the LLM relates to ``note``, linked both ways."""
        values = {"note": note.ranked_text(),
                  "candidates": json.dumps([c.shown(i) for i, c in enumerate(candidates)], ensure_ascii=False)}
        chosen = await self.ask_prompt(
            "link_prompt", LINK_COMPONENT.placeholders, at, values, LINK_SCHEMA, link_parser(len(candidates)))
        linked = [candidates[i] for i in chosen or []]
        for other in linked:
            note.links.append(other.id)
            other.links.append(note.id)
        return linked

    async def _evolve(self, note: Note, linked: list[Note], at: datetime) -> None:
        """Memory evolution: the new context and tags the LLM gives the linked notes ``note`` changes."""
        values = {"note": note.ranked_text(),
                  "neighbours": json.dumps([n.shown(i) for i, n in enumerate(linked)], ensure_ascii=False)}
        changes = await self.ask_prompt("evolution_prompt", EVOLUTION_COMPONENT.placeholders, at, values,
                                        EVOLUTION_SCHEMA, evolution_parser(len(linked)))
        for index, change in (changes or {}).items():
            for field, value in change.items():
                setattr(linked[index], field, value)

    async def memory_text(self, query: str) -> str:
        hits = await self.similar(query, self.policy.top_k)
        seen = {n.id for n in hits}
        by_id = {n.id: n for n in self.notes}
        linked: list[Note] = []
        for note_id in (i for hit in hits for i in hit.links):
            if note_id not in seen:
                seen.add(note_id)
                linked.append(by_id[note_id])
        shown = sorted(hits + linked[: self.policy.top_k], key=lambda n: (n.timestamp, n.id))
        return "\n".join(
            f"- {dated(n.content.replace(chr(10), ' / '), n.timestamp)} (context: {n.context}; tags: {', '.join(n.tags)})"
            for n in shown)

    def memory_state(self) -> list[dict[str, Any]]:
        return [n.model_dump(mode="json") for n in self.notes]

    def load_memory_state(self, data: list[dict[str, Any]]) -> None:
        self.notes = [Note.model_validate(n) for n in data]
