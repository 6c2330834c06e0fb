"""TEST DOUBLE: a memory agent for replayed conversations, without any LLM.

``FactAgent`` remembers every ingested message of the form ``"<key> is <value>"`` (the newest value wins) and
answers a question naming a key with its value, or ``"I don't know"``; a multiple-choice prompt gets the option
number of the remembered value as ``{"answer": n}``. ``forget`` makes it keep nothing, so a test can tell memory
from luck; ``crash_after`` raises once that many messages were ingested (a killed run).
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from memevo.agents.base import AgentAnswer, AgentSpec, MemoryAgent
from memevo.agents.llm.protocol import Message, Role
from memevo.agents.policy import MemoryPolicy
from tests.doubles.scripted_llm import ScriptedLLM

_FACT = re.compile(r"^(?P<key>[\w' ]+?) is (?P<value>.+?)\.?$")
_OPTION = re.compile(r"^(\d+): (.*)$", re.MULTILINE)


def _no_llm(messages: list[Message], role: str, wants_json: bool) -> str:
    raise AssertionError("the fact agent never calls the LLM")


class FactAgent(MemoryAgent):
    spec = AgentSpec(kind="fact", description="TEST DOUBLE")

    def __init__(self, *, forget: bool = False, crash_after: int | None = None) -> None:
        super().__init__(MemoryPolicy(kind="fact"), ScriptedLLM(_no_llm))
        self.facts: dict[str, str] = {}
        self.forget = forget
        self.crash_after = crash_after
        self.ingested: list[tuple[str, str, str]] = []
        self.ended: list[str] = []

    async def respond(self, message: str, now: datetime) -> str:
        raise AssertionError("replayed sessions are ingested, never answered live")

    async def ingest(self, user_message: str, assistant_message: str, now: datetime) -> None:
        if self.crash_after is not None and len(self.ingested) >= self.crash_after:
            raise RuntimeError("killed")
        self.ingested.append((user_message, assistant_message, now.isoformat(sep=" ")))
        for text in (user_message, assistant_message):
            match = _FACT.match(text.strip())
            if match and not self.forget:
                self.facts[match["key"].lower()] = match["value"]

    async def end_session(self, now: datetime) -> None:
        self.ended.append(now.isoformat(sep=" "))

    async def answer(self, prompt: str, *, query: str, now: datetime, json_schema: dict[str, Any] | None = None,
                     role: Role = "agent") -> AgentAnswer:
        value = next((v for k, v in self.facts.items() if k in query.lower()), None)
        memory = "\n".join(f"{k}: {v}" for k, v in self.facts.items())
        options = dict((text, int(number)) for number, text in _OPTION.findall(prompt))
        if options:
            return AgentAnswer(text=json.dumps({"answer": options.get(value or "", 1)}), consulted_memory=memory)
        return AgentAnswer(text=value or "I don't know", consulted_memory=memory)

    def state(self) -> dict[str, Any]:
        return {"facts": dict(self.facts), "ingested": [list(entry) for entry in self.ingested], "ended": list(self.ended)}

    def load_state(self, state: dict[str, Any]) -> None:
        self.facts = dict(state["facts"])
        self.ingested = [tuple(entry) for entry in state["ingested"]]  # type: ignore[misc]
        self.ended = list(state["ended"])
