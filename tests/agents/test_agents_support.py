"""Shared helpers for the agent tests (no tests here). The LLM is always the ScriptedLLM TEST DOUBLE."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from memevo.agents.base import MemoryAgent
from memevo.agents.llm.protocol import Message, Role
from memevo.agents.policy import MemoryPolicy
from memevo.agents.registry import build_agent
from tests.doubles.scripted_llm import ScriptedLLM

T0 = datetime(2021, 3, 1, 9, 0)


def day(n: int) -> datetime:
    """Simulated time ``n`` days after T0."""
    return T0 + timedelta(days=n)


def scripted(json_replies: list[str] | Callable[[str], str] = (), chat: str = "Noted.") -> ScriptedLLM:
    """A double answering JSON requests from a queue (or a function of the prompt, '{}' when the queue
    is empty) and every chat request with ``chat``."""
    queue = list(json_replies) if not callable(json_replies) else None

    def handler(messages: list[Message], role: Role, wants_json: bool) -> str:
        assert role == "agent"
        if not wants_json:
            return chat
        if queue is None:
            return json_replies(messages[-1]["content"])
        return queue.pop(0) if queue else "{}"

    return ScriptedLLM(handler)


def make(kind: str, llm: ScriptedLLM, **fields: Any) -> MemoryAgent:
    return build_agent(MemoryPolicy(kind=kind, **fields), llm)


def reloaded(agent: MemoryAgent, llm: ScriptedLLM) -> MemoryAgent:
    """A fresh agent of the same policy restored from ``agent.state()`` after a JSON round trip."""
    twin = build_agent(agent.policy, llm)
    twin.load_state(json.loads(json.dumps(agent.state())))
    return twin


def json_calls(llm: ScriptedLLM) -> list[str]:
    """The prompt text of every JSON (write) request, in order."""
    return [c["messages"][-1]["content"] for c in llm.calls if c["json"]]


async def converse(agent: MemoryAgent, rounds: int, start: int = 1) -> None:
    """Rounds u<i>/reply, one simulated day apart."""
    for i in range(start, start + rounds):
        await agent.respond(f"u{i}", day(i))
