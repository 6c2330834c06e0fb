"""TEST DOUBLE: a memory agent for benchmark-environment tests. It records what a replay feeds it and answers
from a script, with no LLM, so a test can predict every score."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from memevo.agents.base import AgentAnswer, AgentSpec, MemoryAgent, ScoredOptions
from memevo.agents.llm.protocol import Message, OptionLogprob
from memevo.agents.policy import MemoryPolicy
from tests.doubles.scripted_llm import ScriptedLLM


def _no_llm(messages: list[Message], role: str, wants_json: bool) -> str:
    raise AssertionError("the replay agent never calls the LLM")


class ReplayRecordingAgent(MemoryAgent):
    """Keeps every ingested exchange with its time and every session end; ``reply`` maps (prompt, memory) to
    the answer, where memory is everything ingested so far joined by newlines."""

    spec = AgentSpec(kind="replay-recording", description="TEST DOUBLE")

    def __init__(self, reply: Callable[[str, str], str]) -> None:
        super().__init__(MemoryPolicy(kind="replay-recording"), ScriptedLLM(_no_llm))
        self.reply = reply
        self.ingested: list[tuple[str, str, datetime]] = []
        self.session_ends: list[datetime] = []
        self.asked: list[tuple[str, str, datetime]] = []

    @property
    def memory(self) -> str:
        return "\n".join(f"{user}\n{assistant}" for user, assistant, _ in self.ingested)

    async def respond(self, message: str, now: datetime) -> str:
        raise AssertionError("benchmark replay is off-policy: respond is never called")

    async def ingest(self, user_message: str, assistant_message: str, now: datetime) -> None:
        self.ingested.append((user_message, assistant_message, now))

    async def end_session(self, now: datetime) -> None:
        self.session_ends.append(now)

    async def answer(self, prompt: str, *, query: str, now: datetime, json_schema: dict[str, Any] | None = None,
                     role: str = "agent") -> AgentAnswer:
        self.asked.append((prompt, query, now))
        return AgentAnswer(text=self.reply(prompt, self.memory), consulted_memory=self.memory)

    def state(self) -> dict[str, Any]:
        return {"ingested": [[u, a, t.isoformat()] for u, a, t in self.ingested]}

    def load_state(self, state: dict[str, Any]) -> None:
        self.ingested = [(u, a, datetime.fromisoformat(t)) for u, a, t in state["ingested"]]


class ReplayScoringAgent(ReplayRecordingAgent):
    """A ``ReplayRecordingAgent`` that also scores options by likelihood: ``logprob`` maps (option text, memory,
    prompt) to the option's log-probability; every scored prompt is kept in ``scored``, every schema asked with in
    ``schemas``."""

    spec = AgentSpec(kind="replay-scoring", description="TEST DOUBLE")

    def __init__(self, reply: Callable[[str, str], str], logprob: Callable[[str, str, str], float]) -> None:
        super().__init__(reply)
        self.logprob = logprob
        self.scored: list[tuple[str, list[str]]] = []
        self.schemas: list[dict[str, Any] | None] = []

    async def answer(self, prompt: str, *, query: str, now: datetime, json_schema: dict[str, Any] | None = None,
                     role: str = "agent") -> AgentAnswer:
        self.schemas.append(json_schema)
        return await super().answer(prompt, query=query, now=now, json_schema=json_schema, role=role)

    async def score_options(self, prompt: str, options: list[str], *, query: str, now: datetime,
                            role: str = "agent") -> ScoredOptions:
        self.scored.append((prompt, options))
        return ScoredOptions(scores=[OptionLogprob(logprob=self.logprob(option, self.memory, prompt), tokens=1)
                                     for option in options], consulted_memory=self.memory)
