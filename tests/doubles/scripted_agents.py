"""TEST DOUBLES: scripted memory agents, a scripted user simulator and a small world builder.

They implement the real ``MemoryAgent`` / ``UserSimulator`` contracts without any LLM, so runner and
metric tests can predict scores exactly:
- ``OracleAgent`` reads the item's true state (a perfect memory and a perfect utiliser);
- ``KeywordMemoryAgent`` remembers user messages (optionally only the last ``window``) and recovers a
  state by finding the newest message that names one of the schema's values: an honest memory whose
  failures are real forgetting;
- ``AmnesiacAgent`` remembers nothing and picks an option at random (seeded by the question and time);
- ``UnreadableAgent`` never answers in the requested format;
- ``CrashingAgent`` raises after a number of replies (a killed run); ``StateChangingAnswerAgent`` breaks
  the rule that ``answer`` leaves state alone.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from datetime import datetime
from typing import Any

from memevo.agents.base import AgentAnswer, AgentSpec, MemoryAgent
from memevo.agents.llm.protocol import Message
from memevo.agents.policy import MemoryPolicy
from memevo.environments.amemgym.data.models import (
    AnswerChoice,
    Item,
    Period,
    Question,
    Session,
    StateUpdate,
    UserProfile,
)
from memevo.environments.amemgym.simulators.base import UserSimulator
from memevo.environments.diagnosis import build_probe_prompt
from tests.doubles.scripted_llm import ScriptedLLM


def _no_llm(messages: list[Message], role: str, wants_json: bool) -> str:
    raise AssertionError("scripted agents never call the LLM")


class ScriptedAgent(MemoryAgent):
    """Shared machinery: a log of user messages, recorded calls, JSON replies chosen by ``believe``."""

    spec = AgentSpec(kind="scripted", description="TEST DOUBLE")

    def __init__(self, item: Item, policy: MemoryPolicy | None = None) -> None:
        super().__init__(policy or MemoryPolicy(kind="scripted"), ScriptedLLM(_no_llm))
        self.item = item
        self.log: list[str] = []
        self.ended_sessions: list[str] = []
        self.responded: list[tuple[str, str]] = []
        self.answer_calls: list[dict[str, Any]] = []

    async def respond(self, message: str, now: datetime) -> str:
        self.responded.append((message, now.isoformat(sep=" ")))
        self.log.append(message)
        return f"Noted ({len(self.log)})."

    async def ingest(self, user_message: str, assistant_message: str, now: datetime) -> None:
        self.log.append(user_message)

    async def end_session(self, now: datetime) -> None:
        self.ended_sessions.append(now.isoformat(sep=" "))

    def state(self) -> dict[str, Any]:
        return {"log": list(self.log), "ended_sessions": list(self.ended_sessions)}

    def load_state(self, state: dict[str, Any]) -> None:
        self.log = list(state["log"])
        self.ended_sessions = list(state["ended_sessions"])

    def believe(self, key: str, now: datetime) -> str | None:
        """The agent's belief about one state variable; None if it has none."""
        return None

    def _question(self, query: str) -> Question:
        return next(q for q in self.item.qas if query.startswith(q.query))

    def pick(self, question: Question, beliefs: list[str | None], rng: random.Random) -> int:
        """1-based option matching the beliefs best; ties broken at random."""
        scores = [sum(b == s for b, s in zip(beliefs, c.state)) for c in question.answer_choices]
        best = [i + 1 for i, score in enumerate(scores) if score == max(scores)]
        return rng.choice(best)

    async def answer(
        self, prompt: str, *, query: str, now: datetime, json_schema: dict[str, Any] | None = None,
        role: str = "agent",
    ) -> AgentAnswer:
        self.answer_calls.append(
            {"prompt": prompt, "query": query, "now": now.isoformat(sep=" "), "json_schema": json_schema, "role": role}
        )
        question = self._question(query)
        keys = question.required_info
        beliefs = [self.believe(key, now) for key in keys]
        memory = json.dumps(beliefs)
        if prompt.startswith(build_probe_prompt({k: self.item.state_schema[k] for k in keys})):
            return AgentAnswer(text=json.dumps(dict(zip(keys, beliefs, strict=True))), consulted_memory=memory)
        seed = hashlib.sha256(f"{query}|{now}".encode()).digest()
        choice = self.pick(question, beliefs, random.Random(seed))
        return AgentAnswer(text=f'Here you go:\n```json\n{{"answer": {choice}}}\n```', consulted_memory=memory)


class OracleAgent(ScriptedAgent):
    """Knows the true state at the end of the period ``now`` falls in."""

    def believe(self, key: str, now: datetime) -> str | None:
        day = now.date().isoformat()
        period = max(i for i, p in enumerate(self.item.periods) if p.period_end <= day)
        return self.item.periods[period].state[key]


class KeywordMemoryAgent(ScriptedAgent):
    """Recalls a variable from the newest remembered message naming one of its values."""

    def __init__(self, item: Item, window: int | None = None, policy: MemoryPolicy | None = None) -> None:
        super().__init__(item, policy)
        self.window = window

    async def respond(self, message: str, now: datetime) -> str:
        reply = await super().respond(message, now)
        if self.window is not None:
            self.log = self.log[-self.window:]
        return reply

    def believe(self, key: str, now: datetime) -> str | None:
        for message in reversed(self.log):
            for value in self.item.state_schema[key]:
                if re.search(rf"\b{re.escape(value)}\b", message):
                    return value
        return None


class AmnesiacAgent(ScriptedAgent):
    """Remembers nothing: every option is equally likely."""


class CrashingAgent(OracleAgent):
    """Raises on the reply number ``crash_at`` (1-based), as a killed process would stop."""

    def __init__(self, item: Item, crash_at: int) -> None:
        super().__init__(item)
        self.crash_at = crash_at

    async def respond(self, message: str, now: datetime) -> str:
        if len(self.responded) + 1 == self.crash_at:
            raise RuntimeError("simulated crash")
        return await super().respond(message, now)


class StateChangingAnswerAgent(OracleAgent):
    """Breaks the contract: answering a question writes to memory."""

    async def answer(
        self, prompt: str, *, query: str, now: datetime, json_schema: dict[str, Any] | None = None,
        role: str = "agent",
    ) -> AgentAnswer:
        self.log.append(query)
        return await super().answer(prompt, query=query, now=now, json_schema=json_schema, role=role)


class UnreadableAgent(OracleAgent):
    """Knows everything but never replies in the requested format."""

    async def answer(
        self, prompt: str, *, query: str, now: datetime, json_schema: dict[str, Any] | None = None,
        role: str = "agent",
    ) -> AgentAnswer:
        await super().answer(prompt, query=query, now=now, json_schema=json_schema, role=role)
        return AgentAnswer(text="I would go with the second one.", consulted_memory="")


class ScriptedSimulator(UserSimulator):
    """A deterministic user: follow-ups that reveal nothing; calls are recorded."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def follow_up(self, item: Item, period_index: int, session: Session, messages: list[Message],
                        now: datetime) -> str:
        self.calls.append({"period": period_index, "n_messages": len(messages), "now": now})
        return f"Thanks. Could you tell me more? (round {len(messages) // 2 + 1})"


# ---- a small world, built with the real pydantic models -------------------------------------------------

_VARIABLES = {
    "diet": ["vegan", "vegetarian", "omnivore", "pescatarian"],
    "budget": ["frugal", "moderate", "generous", "lavish"],
    "city": ["Paris", "Rome", "Oslo", "Lima"],
    "fitness": ["sedentary", "jogger", "cyclist", "swimmer"],
    "pet": ["cat", "dog", "parrot", "hamster"],
}


def make_item(user_id: str = "user-1", *, n_periods: int = 4, seed: int = 0, choices: int = 4) -> Item:
    """A small valid item: every session names exactly its exposed values; questions need two variables.

    Period p >= 1 changes one variable (cycling through them) in one session. Each question's choices
    are the visited value tuples padded with unvisited ones up to ``choices``.
    """
    rng = random.Random(f"{user_id}|{seed}")
    keys = list(_VARIABLES)
    state = {key: rng.choice(values) for key, values in _VARIABLES.items()}
    periods = []
    for p in range(n_periods):
        date = f"{2020 + p}-01-01"
        if p == 0:
            changed = dict(state)
            updates = {k: StateUpdate(old=None, new=v) for k, v in state.items()}
            sessions = [
                Session(exposed_states={k: state[k]}, query=f"Quick note: my {k} is {state[k]}.",
                        session_time=f"{date} 0{i}:00:00")
                for i, k in enumerate(keys)
            ]
        else:
            key = keys[(p - 1) % len(keys)]
            new = rng.choice([v for v in _VARIABLES[key] if v != state[key]])
            updates = {key: StateUpdate(old=state[key], new=new)}
            state = {**state, key: new}
            changed = {key: new}
            sessions = [Session(event="change", exposed_states=changed,
                                query=f"Update: my {key} is now {new}.", session_time=f"{date} 00:00:00")]
        periods.append(Period(period_start=None if p == 0 else f"{2019 + p}-01-02", period_end=date,
                              sessions=sessions, state=dict(state), updates=updates,
                              update_cnts={k: 0 for k in keys}))
    qas = []
    for q, pair in enumerate([("diet", "budget"), ("city", "diet"), ("fitness", "pet"), ("budget", "city")]):
        visited = []
        for period in periods:
            tup = [period.state[k] for k in pair]
            if tup not in visited:
                visited.append(tup)
        tuples = list(visited)
        while len(tuples) < max(choices, len(visited)):
            candidate = [rng.choice(_VARIABLES[k]) for k in pair]
            if candidate not in tuples:
                tuples.append(candidate)
        rng.shuffle(tuples)
        qas.append(Question(
            query=f"Question {q}: what do you suggest for me, given my {pair[0]} and {pair[1]}?",
            required_info=list(pair),
            answer_choices=[AnswerChoice(state=t, answer=f"Advice for {' and '.join(t)}.",
                                         type="experience" if t in visited else "random") for t in tuples],
        ))
    profile = UserProfile(uuid=user_id, age=40, gender="female", marital_status="single",
                          education_level="bachelors", occupation="nurse", formatted_str=f"name: {user_id}")
    return Item(id=user_id, start_time="2020-01-01", user_profile=profile, state_schema=dict(_VARIABLES),
                periods=periods, qas=qas)
