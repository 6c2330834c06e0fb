"""TEST DOUBLE: replies a fake OpenAI-compatible endpoint (``FaultServer``) gives the Mem0 and A-Mem agents.

Only for tests: it answers a write request by rule, never as a model would. Facts are the user's lines of the
conversation; Mem0's update request adds each new fact, except that a fact saying "moved to" replaces a stored
"live in" memory; A-Mem's note request gives keywords (the fact's longer words), one tag and a context line; every
other request is answered "ok".
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any


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
    return "{}"
