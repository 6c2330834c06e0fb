"""AWI: the LLM writes labelled notes kept in context (reference E.2), with its defects fixed.

Differences from AMemGym, on purpose: timestamps are simulated time (that of the newest flushed
message, I.11), notes are shown in that order, and a changed note moves to the end of the list; the
reply is validated as a JSON object of strings (numbers are accepted and turned into strings; null or
"" deletes the label, I.28); a malformed reply is retried once, then skipped and counted in
``counters.failures`` instead of crashing; prompts never go through ``str.format``.

Under ``amemgym_compat`` a changed note keeps its place in the list (the order the write prompt shows)
and notes are shown in the order they were last written, as AMemGym did by sorting on its wall-clock
write time; ``written`` numbers the writes so no clock is needed. The validation above stays.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from memevo.agents.base import AgentSpec
from memevo.agents.buffered import BufferedMemoryAgent, BufferedMessage, MalformedReply
from memevo.agents.llm.protocol import ChatClient
from memevo.agents.policy import MemoryPolicy
from memevo.agents.prompts.answer import answer_component
from memevo.agents.prompts.awi import MEMORY_TYPES_COMPONENT, WRITE_COMPONENT, WRITE_PLACEHOLDERS
from memevo.agents.registry import register_agent
from memevo.core.lazy_model import LazyModel

WRITE_SCHEMA: dict[str, Any] = {"type": "object", "additionalProperties": {"type": ["string", "null"]}}


class NoteEntry(LazyModel):
    """One in-context memory entry."""

    label: str
    value: str
    timestamp: datetime
    written: int = 0
    """The agent's write (1, 2, ...) that last set this note; 0 in states saved before it was recorded."""


def parse_note_changes(data: Any) -> dict[str, str | None]:
    """Validate a write reply: label -> new value, None meaning delete."""
    if not isinstance(data, dict):
        raise MalformedReply(f"expected a JSON object mapping labels to strings, got a {type(data).__name__}")
    changes: dict[str, str | None] = {}
    for label, value in data.items():
        if not isinstance(label, str) or not label.strip():
            raise MalformedReply(f"bad label {label!r}")
        if isinstance(value, bool) or not isinstance(value, str | int | float | None):
            raise MalformedReply(f"the value of '{label}' is a {type(value).__name__}, not a string")
        text = None if value is None else str(value).strip()
        changes[label.strip()] = text or None
    return changes


@register_agent("awi")
class AWIAgent(BufferedMemoryAgent):
    """In-context labelled notes, rewritten by the LLM from each flushed batch of messages."""

    spec = AgentSpec(
        kind="awi",
        description="Agentic write, in-context memory of labelled notes (AMemGym AWI).",
        components=(WRITE_COMPONENT, MEMORY_TYPES_COMPONENT, answer_component(in_context=True)),
        hyperparameters=("update_every", "short_term"),
    )

    def __init__(self, policy: MemoryPolicy, llm: ChatClient) -> None:
        super().__init__(policy, llm)
        self.notes: list[NoteEntry] = []

    async def memory_text(self, query: str) -> str:
        return "\n".join(f"- {n.label}: {n.value}" for n in self.shown_notes())

    def shown_notes(self) -> list[NoteEntry]:
        """Oldest first: by simulated time, or under compat by write (ties keep the list's order)."""
        if self.policy.amemgym_compat:
            return sorted(self.notes, key=lambda n: n.written)
        return sorted(self.notes, key=lambda n: n.timestamp)

    async def write(self, batch: list[BufferedMessage]) -> None:
        at = batch[-1].time
        indent = 2 if self.policy.amemgym_compat else None  # AMemGym's rendering, under compat
        values = {
            "memory_types": self.prompt("memory_types"),
            "current_memories": json.dumps({n.label: n.value for n in self.notes}, ensure_ascii=False, indent=indent),
            "conversation": self.conversation_text(batch, indent),
        }
        changes = await self.ask_prompt(
            "write_prompt", WRITE_PLACEHOLDERS, at, values, WRITE_SCHEMA, parse_note_changes
        )
        written = max((n.written for n in self.notes), default=0) + 1
        for label, value in (changes or {}).items():
            self.set_note(
                label, None if value is None else NoteEntry(label=label, value=value, timestamp=at, written=written)
            )

    def conversation_text(self, batch: list[BufferedMessage], indent: int | None) -> str:
        """The flushed messages as the write prompt shows them: AMemGym's JSON list of role/content messages, or
        under ``write_conversation: lines`` one "role: text" line each, which a small model does not copy into
        its notes as it copies JSON."""
        if self.policy.write_conversation == "lines":
            return "\n".join(f"{m.role}: {m.content}" for m in batch)
        return json.dumps([{"role": m.role, "content": m.content} for m in batch], ensure_ascii=False, indent=indent)

    def set_note(self, label: str, note: NoteEntry | None) -> None:
        """Replace, add or (``note`` None) delete ``label``: a replaced note moves to the end of the list, or
        under compat keeps its place."""
        place = next((index for index, n in enumerate(self.notes) if n.label == label), None)
        if self.policy.amemgym_compat and place is not None and note is not None:
            self.notes[place] = note
            return
        self.notes = [n for n in self.notes if n.label != label]
        if note is not None:
            self.notes.append(note)

    def memory_state(self) -> list[dict[str, Any]]:
        return [n.model_dump(mode="json") for n in self.notes]

    def load_memory_state(self, data: list[dict[str, Any]]) -> None:
        self.notes = [NoteEntry.model_validate(n) for n in data]
