"""TEST DOUBLE: replies a fake OpenAI-compatible endpoint (``FaultServer``) gives the Mem0 and A-Mem agents.

Only for tests: it answers a write request by rule, never as a model would. Facts are the user's lines of the
conversation; Mem0's update request adds each new fact, except that a fact saying "moved to" replaces a stored
"live in" memory; A-Mem's note request gives keywords (the facts' longer words), one tag and the facts as context,
its link request picks the listed notes sharing such a word with the new note's first line, and its evolution request
rewrites the context of each of those; every other request is answered "ok".
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from memevo.agents.memory_systems.amem_prompts import EVOLUTION_FORMAT_CLAUSE, LINK_FORMAT_CLAUSE, NOTE_FORMAT_CLAUSE


def _user_lines(text: str) -> list[str]:
    return [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("user:")]


def _mem0_update(prompt: str) -> dict[str, Any]:
    blocks = re.findall(r"```\s*(.*?)\s*```", prompt, flags=re.S)
    stored = ast.literal_eval(blocks[0]) if len(blocks) == 2 else []
    facts = ast.literal_eval(blocks[-1])
    events: list[dict[str, str]] = []
    for fact in facts:
        home = next((m for m in stored if "live in" in m["text"]), None) if "moved to" in fact else None
        if home is not None:
            events.append({"id": home["id"], "text": fact, "event": "UPDATE", "old_memory": home["text"]})
        elif all(m["text"] != fact for m in stored):
            events.append({"id": str(len(stored) + len(events)), "text": fact, "event": "ADD"})
    return {"memory": events}


def _words(lines: list[str]) -> list[str]:
    """The words of four letters or more in ``lines``, lower-cased."""
    return [w.strip(".,!?").lower() for line in lines for w in line.split() if len(w.strip(".,!?")) > 3]


def _section(prompt: str, heading: str) -> str:
    """The first line after ``heading:`` in ``prompt``."""
    return prompt.split(f"{heading}", 1)[1].split("\n", 2)[1].strip()


def _amem_note(prompt: str) -> dict[str, Any]:
    facts = _user_lines(prompt)
    return {"keywords": _words(facts), "tags": ["personal"], "context": "; ".join(facts)}


def _amem_related(prompt: str, heading: str) -> list[str]:
    """Ids of the listed notes that share a keyword of four letters or more with the new note's first line."""
    note = set(_words(_user_lines(_section(prompt, "New note"))))
    listed = json.loads(prompt.split(heading, 1)[1].split("\n", 1)[1].split("\n\n", 1)[0])
    return [n["id"] for n in listed if note & set(_words(_user_lines(n["content"])))]


def memory_system_reply(body: dict[str, Any]) -> str:
    """The reply to one chat-completions request body."""
    messages = body["messages"]
    last = messages[-1]["content"]
    if "response_format" not in body:
        return "ok"
    if last.startswith("Input:"):
        return json.dumps({"facts": _user_lines(last)})
    if "new retrieved facts" in last:
        return json.dumps(_mem0_update(last))
    if last.rstrip().endswith(NOTE_FORMAT_CLAUSE):
        return json.dumps(_amem_note(last))
    if last.rstrip().endswith(LINK_FORMAT_CLAUSE):
        return json.dumps({"links": _amem_related(last, "Similar stored notes")})
    if last.rstrip().endswith(EVOLUTION_FORMAT_CLAUSE):
        return json.dumps({"updates": [{"id": i, "context": "revised: " + _section(last, "New note")}
                                       for i in _amem_related(last, "Linked notes")]})
    return "{}"
