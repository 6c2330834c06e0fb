"""TEST DOUBLE: a scripted LLM whose memory writing depends on the write prompt in a documented way.

It makes evolution measurable without a real model. The world (``category_world``) has one state
variable per *category word* (commute, instrument, beverage, genre). Users announce changes as
"my <category> is now <value>". Question texts never contain a category word; answer choices do.

As the AWI **writer** (role agent, JSON asked, a conversation JSON line in the prompt) it stores
``{category: value}`` for each announced change whose category word occurs in the write prompt
outside its JSON lines (the current notes and the conversation). So a memory-types section that
names a category is exactly what lets its facts into memory.

As the **answerer** (a question prompt with "Options:") it reads the notes ("- label: value" lines
of the system message), or the spelled-out state of an upper-bound prompt, and picks the option
whose state matches; with nothing known it picks option 1.

As the **proposer** (role proposer, DSPy chat or JSON format) it behaves per ``proposer_mode``:
``categories`` adds a line for every category word found in the feedback and not yet in the
current text (complete feedback shows choices, so it reveals categories; question-only feedback
does not); ``forget`` replaces the text with a list naming no category (a dominated candidate);
``mixed`` acts as ``categories`` for the first (temperature 0) sample and as ``forget`` for the
others; ``garbage`` replies with unparsable prose; ``drop_placeholders`` returns a whole prompt
without its placeholders and output-format clause plus an unknown ``{bogus}`` placeholder.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from datetime import date, timedelta
from typing import Any

from memevo.agents.llm.accounting import Accounting
from memevo.agents.llm.config import LLMConfig
from memevo.agents.llm.dspy_lm import GatewayLM
from memevo.agents.llm.protocol import ChatReply, Message, Role
from memevo.environments.data.models import AnswerChoice, Item, Period, Question, Session, StateUpdate, UserProfile
from tests.doubles.scripted_llm import ScriptedLLM

CATEGORIES: dict[str, list[str]] = {
    "commute": ["bike", "bus", "car"],
    "instrument": ["piano", "violin", "drums"],
    "beverage": ["tea", "coffee", "juice"],
    "genre": ["jazz", "rock", "folk"],
}
ANNOUNCE = re.compile(r"my (\w+) is now (\w+)")
FIELD = re.compile(r"\[\[ ## (\w+) ## \]\]\n(.*?)(?=\n\n\[\[ ## |\Z)", re.DOTALL)
NOTE = re.compile(r"^- (\w+): (\w+)\s*$", re.MULTILINE)
STATE_BLOCK = re.compile(r"situation are:\n(\{.*?\})\n", re.DOTALL)


def _profile(user: int) -> UserProfile:
    return UserProfile(
        uuid=f"u{user}", name=f"User {user}", age=30 + user, gender="n/a", marital_status="single",
        education_level="college", occupation="tester", formatted_str=f"User {user}, a tester.",
    )


def category_world(n_users: int = 6, n_periods: int = 3, seed: int = 0) -> list[Item]:
    """Small deterministic items: every category changes in every period (new random value)."""
    rng = random.Random(seed)
    items = []
    for user in range(n_users):
        periods: list[Period] = []
        state: dict[str, str] = {}
        day = date(2024, 1, 1)
        for p in range(n_periods):
            new_state = {cat: rng.choice([v for v in values if v != state.get(cat)]) for cat, values in CATEGORIES.items()}
            sessions = [
                Session(
                    exposed_states={cat: value}, query=f"Quick update: my {cat} is now {value}.",
                    session_time=f"{day + timedelta(days=i):%Y-%m-%d} 10:00:00",
                )
                for i, (cat, value) in enumerate(new_state.items())
            ]
            periods.append(Period(
                period_start=f"{day:%Y-%m-%d}", period_end=f"{day + timedelta(days=9):%Y-%m-%d}", sessions=sessions,
                state=new_state, updates={c: StateUpdate(old=state.get(c), new=v) for c, v in new_state.items()},
                update_cnts={c: p + 1 for c in new_state},
            ))
            state = new_state
            day += timedelta(days=10)
        qas = [
            Question(
                query=f"Which option should I pick for plan number {i + 1}?", required_info=[cat],
                answer_choices=[AnswerChoice(state=[v], answer=f"Something for a {cat} of {v}", type="experience")
                                for v in values],
            )
            for i, (cat, values) in enumerate(CATEGORIES.items())
        ]
        items.append(Item(id=f"user-{user}", start_time="2024-01-01", user_profile=_profile(user),
                          state_schema=CATEGORIES, periods=periods, qas=qas))
    return items


def _without_json_lines(text: str) -> str:
    kept = []
    for line in text.splitlines():
        try:
            value = json.loads(line.strip())
        except json.JSONDecodeError:
            kept.append(line)
            continue
        if not isinstance(value, dict | list):
            kept.append(line)
    return "\n".join(kept).lower()


class CategoryBackend(ScriptedLLM):
    """Implements ``ChatClient`` (and the ``config`` GatewayLM needs); see the module docstring.

    ``chat`` is its own (latency, temperature-driven proposals, accounting); JSON parsing and
    ``calls_for`` come from ``ScriptedLLM`` so both doubles read replies the same way.
    """

    def __init__(self, items: list[Item], *, proposer_mode: str = "categories", latency_s: float = 0.0,
                 accounting: Accounting | None = None) -> None:
        super().__init__(self._reply)
        self.questions = {q.query: q for item in items for q in item.qas}
        self.proposer_mode = proposer_mode
        self.latency_s = latency_s
        self.accounting = accounting or Accounting()
        self.config = LLMConfig(model="category-double")

    # ----- roles -----

    def _write(self, prompt: str) -> str:
        conversation = next((json.loads(line) for line in prompt.splitlines()
                             if line.startswith('[{"role"')), [])
        named = _without_json_lines(prompt)
        notes = {}
        for message in conversation:
            if message["role"] != "user":
                continue
            for category, value in ANNOUNCE.findall(message["content"]):
                if re.search(rf"\b{category}\b", named):
                    notes[category] = value
        return json.dumps(notes)

    def _answer(self, messages: list[Message]) -> str:
        prompt = messages[-1]["content"]
        question = next((q for text, q in self.questions.items() if text in prompt), None)
        if question is None:
            return "Noted."
        block = STATE_BLOCK.search(prompt)
        known = json.loads(block.group(1)) if block else dict(NOTE.findall(messages[0]["content"]))
        target = [known.get(key) for key in question.required_info]
        choice = next((i + 1 for i, c in enumerate(question.answer_choices) if c.state == target), 1)
        return f'```json\n{{"answer": {choice}}}\n```'

    def _propose(self, messages: list[Message], wants_json: bool, creative: bool) -> str:
        mode = self.proposer_mode
        if mode == "mixed":
            mode = "forget" if creative else "categories"
        if mode == "garbage":
            return "Sorry, I am not sure what you want me to do here."
        fields = dict(FIELD.findall(messages[-1]["content"]))
        types_mode = "new_types" in messages[0]["content"]
        current = fields.get("current_types" if types_mode else "current_text", "").strip()
        if mode == "drop_placeholders":
            new = "Write down useful facts about the user, like {bogus}, as plain sentences."
        elif mode == "forget":
            new = "- the weather today (small talk only)"
        else:
            feedback = fields.get("feedback", "").lower()
            missing = [c for c in CATEGORIES if re.search(rf"\b{c}\b", feedback) and not re.search(rf"\b{c}\b", current.lower())]
            new = current + "".join(f"\n- {c}" for c in missing)
        out_name = "new_types" if types_mode else "new_text"
        changes = ["added a category"] if new != current else []
        if wants_json:
            return json.dumps({out_name: new, "changes": changes})
        return f"[[ ## {out_name} ## ]]\n{new}\n\n[[ ## changes ## ]]\n{json.dumps(changes)}\n\n[[ ## completed ## ]]"

    def _reply(self, messages: list[Message], role: Role, wants_json: bool, creative: bool = False) -> str:
        if role == "proposer":
            wants_json = wants_json or "Respond with a JSON object" in messages[-1]["content"]
            return self._propose(messages, wants_json, creative)
        prompt = messages[-1]["content"]
        if wants_json and '[{"role"' in prompt and "Options:" not in prompt:
            return self._write(prompt)
        return self._answer(messages)

    # ----- ChatClient -----

    async def chat(self, messages: list[Message], *, role: Role, json_schema: dict[str, Any] | None = None,
                   json_mode: bool = False, temperature: float | None = None, max_tokens: int | None = None,
                   sample_index: int = 0) -> ChatReply:
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        text = self._reply(messages, role, json_mode or json_schema is not None, bool(temperature))
        prompt_tokens = sum(len(m["content"].split()) for m in messages)
        self.calls.append({"role": role, "messages": messages, "reply": text})
        self.accounting.record_call(role, model="category-double", prompt_tokens=prompt_tokens,
                                    completion_tokens=len(text.split()), wall_s=self.latency_s, cached=False)
        return ChatReply(text=text, model="category-double", prompt_tokens=prompt_tokens,
                         completion_tokens=len(text.split()))

    def http_reply(self, body: dict[str, Any]) -> str:
        """The same behaviour behind an HTTP endpoint (fault_server): the role is read off the prompt."""
        messages = body["messages"]
        role: Role = "proposer" if any("[[ ## " in m["content"] for m in messages) else "agent"
        return self._reply(messages, role, "response_format" in body, bool(body.get("temperature")))


class CategoryHub:
    """TEST DOUBLE for ``LLMHub``: every role talks to one ``CategoryBackend``."""

    def __init__(self, backend: CategoryBackend) -> None:
        self.backend = backend
        self.accounting = backend.accounting

    def client(self, config: LLMConfig) -> CategoryBackend:
        return self.backend

    def dspy_lm(self, config: LLMConfig, role: Role = "proposer") -> GatewayLM:
        return GatewayLM(self.backend, role=role)  # type: ignore[arg-type]
