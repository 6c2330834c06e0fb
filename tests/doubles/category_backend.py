"""TEST DOUBLE: a scripted LLM whose memory writing depends on the write prompt in a documented way.

It makes evolution measurable without a real model. The world (``category_world``) has one state
variable per *category word* (commute, instrument, beverage, genre; a weighted world may add plant and
footwear and ask several questions about one category). Users announce changes as "my <category> is
now <value>". Question texts never contain a category word; answer choices do.

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
others; ``step`` makes one small change per sample, drawn from a hash of the request, the sample
index and ``seed``: add one category seen in the feedback (``steps_from="world"``: any category of the world,
asked about or not), or (on later samples, one time in two) drop one the text names, so some proposals help and
some hurt; ``garbage`` replies with unparsable
prose; ``drop_placeholders`` returns a whole prompt without its placeholders and output-format clause
plus an unknown ``{bogus}`` placeholder. Asked for line edits (the delta proposer's ``edits`` field)
it returns the same change as ``ADD:``/``REMOVE n`` edits.

``answer_noise`` p: with probability p an agent's answer is a uniformly drawn option instead of the
informed one, decided by a hash of (seed, prompt, notes), so a rerun (or a resumed run) sees the same
noise. Upper-bound answers stay exact: one table serves every candidate, so its noise would not be
selection noise.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import random
import re
from collections.abc import Mapping
from datetime import date, timedelta
from typing import Any

from memevo.agents.llm.accounting import Accounting
from memevo.agents.llm.config import LLMConfig
from memevo.agents.llm.dspy_lm import GatewayLM
from memevo.agents.llm.protocol import ChatReply, Message, Role
from memevo.environments.amemgym.data.models import (
    AnswerChoice,
    Item,
    Period,
    Question,
    Session,
    StateUpdate,
    UserProfile,
)
from tests.doubles.scripted_llm import ScriptedLLM

CATEGORIES: dict[str, list[str]] = {
    "commute": ["bike", "bus", "car"],
    "instrument": ["piano", "violin", "drums"],
    "beverage": ["tea", "coffee", "juice"],
    "genre": ["jazz", "rock", "folk"],
}
"""The default world's categories (one question each)."""
MORE_CATEGORIES: dict[str, list[str]] = {
    "plant": ["fern", "cactus", "orchid"],
    "footwear": ["boots", "sandals", "sneakers"],
    "pet": ["cat", "dog", "parrot"],
    "sport": ["tennis", "rowing", "climbing"],
    "cuisine": ["thai", "greek", "mexican"],
    "hobby": ["chess", "pottery", "knitting"],
    "color": ["green", "orange", "purple"],
    "city": ["oslo", "lima", "perth"],
    "vehicle": ["scooter", "van", "tram"],
    "snack": ["nuts", "crackers", "grapes"],
}
"""Further categories a weighted world (``questions=...``) may ask about, or announce and never ask (0 questions)."""
ANNOUNCE = re.compile(r"my (\w+) is now (\w+)")
FIELD = re.compile(r"\[\[ ## (\w+) ## \]\]\n(.*?)(?=\n\n\[\[ ## |\Z)", re.DOTALL)
NOTE = re.compile(r"^- (\w+): (\w+)\s*$", re.MULTILINE)
STATE_BLOCK = re.compile(r"situation are:\n(\{.*?\})\n", re.DOTALL)
FIELD_NAMES = re.compile(r"`(\w+)` \(")
NUMBERED = re.compile(r"^\d+\. ")


def _unit(key: str) -> float:
    """A number in [0, 1) fixed by ``key`` (stable across processes, unlike ``hash``)."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2**64


def _profile(user: int) -> UserProfile:
    return UserProfile(
        uuid=f"u{user}", name=f"User {user}", age=30 + user, gender="n/a", marital_status="single",
        education_level="college", occupation="tester", formatted_str=f"User {user}, a tester.",
    )


def category_world(n_users: int = 6, n_periods: int = 3, seed: int = 0,
                   questions: Mapping[str, int] | None = None,
                   pairs: Mapping[tuple[str, str], int] | None = None) -> list[Item]:
    """Small deterministic items: every category changes in every period (new random value).

    ``questions`` (category -> number of questions about it, from ``CATEGORIES`` and ``MORE_CATEGORIES``)
    weights the categories: naming a category in the write prompt is then worth that many questions per
    period, so proposals differ in how much they help or hurt; a category with 0 questions is announced and never
    asked, so naming it changes the notes and nothing else. ``pairs`` ((category, category) -> number of questions)
    adds questions that need both categories' values (one choice per pair of values): naming one of the two is
    worth nothing for them until the other is named too. By default one question per ``CATEGORIES``.
    """
    counts = dict(questions) if questions is not None else dict.fromkeys(CATEGORIES, 1)
    pair_counts = dict(pairs or {})
    vocabulary = CATEGORIES | MORE_CATEGORIES
    named = dict.fromkeys([*counts, *(cat for pair in pair_counts for cat in pair)])
    schema = {cat: vocabulary[cat] for cat in named}
    rng = random.Random(seed)
    items = []
    for user in range(n_users):
        periods: list[Period] = []
        state: dict[str, str] = {}
        day = date(2024, 1, 1)
        for p in range(n_periods):
            new_state = {cat: rng.choice([v for v in values if v != state.get(cat)]) for cat, values in schema.items()}
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
        asked = [[cat] for cat, count in counts.items() for _ in range(count)]
        asked += [list(pair) for pair, count in pair_counts.items() for _ in range(count)]
        qas = [
            Question(
                query=f"Which option should I pick for plan number {i + 1}?", required_info=needed,
                answer_choices=[
                    AnswerChoice(state=list(values), type="experience", answer="Something for " + " and ".join(
                        f"a {cat} of {value}" for cat, value in zip(needed, values, strict=True)))
                    for values in itertools.product(*(schema[cat] for cat in needed))
                ],
            )
            for i, needed in enumerate(asked)
        ]
        items.append(Item(id=f"user-{user}", start_time="2024-01-01", user_profile=_profile(user),
                          state_schema=schema, periods=periods, qas=qas))
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
                 accounting: Accounting | None = None, answer_noise: float = 0.0, seed: int = 0,
                 steps_from: str = "feedback") -> None:
        super().__init__(self._reply)
        self.answer_noise = answer_noise
        self.seed = seed
        self.questions = {q.query: q for item in items for q in item.qas}
        self.categories = list(dict.fromkeys(cat for item in items for cat in item.state_schema))
        self.proposer_mode = proposer_mode
        self.steps_from = steps_from
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
        draw = _unit(f"noise|{self.seed}|{prompt}|{messages[0]['content']}")
        if block is None and draw < self.answer_noise:  # the agent's answers; the upper bound stays exact
            choice = 1 + int(_unit(f"pick|{self.seed}|{prompt}") * len(question.answer_choices))
        return f'```json\n{{"answer": {choice}}}\n```'

    def _step(self, current: str, feedback: str, key: str, sample: int) -> tuple[str, list[str]]:
        """One small change (see the module docstring): the new text and its line edits."""
        lines = current.splitlines()
        named = [i for i, line in enumerate(lines) if any(re.search(rf"\b{c}\b", line) for c in self.categories)]
        source = feedback if self.steps_from == "feedback" else " ".join(self.categories)
        missing = [c for c in self.categories if re.search(rf"\b{c}\b", source) and not re.search(rf"\b{c}\b", current.lower())]
        if named and sample and (not missing or _unit(f"drop|{key}") < 0.5):
            drop = named[int(_unit(f"which|{key}") * len(named))]
            return "\n".join(line for i, line in enumerate(lines) if i != drop), [f"REMOVE {drop + 1}"]
        if not missing:
            return current, []
        add = missing[int(_unit(f"add|{key}") * len(missing))]
        return current + f"\n- {add}", [f"ADD: - {add}"]

    def _propose(self, messages: list[Message], wants_json: bool, creative: bool, sample: int) -> str:
        mode = self.proposer_mode
        if mode == "mixed":
            mode = "forget" if creative else "categories"
        if mode == "garbage":
            return "Sorry, I am not sure what you want me to do here."
        fields = dict(FIELD.findall(messages[-1]["content"]))
        system = messages[0]["content"]
        delta_mode = "edits" in FIELD_NAMES.findall(system)
        types_mode = "new_types" in system
        source = "numbered_lines" if delta_mode else "current_types" if types_mode else "current_text"
        current = fields.get(source, "").strip()
        if delta_mode:
            current = "\n".join(NUMBERED.sub("", line) for line in current.splitlines())
        feedback = fields.get("feedback", "").lower()
        edits: list[str] = []
        if mode == "drop_placeholders":
            new = "Write down useful facts about the user, like {bogus}, as plain sentences."
        elif mode == "forget":
            new = "- the weather today (small talk only)"
            edits = [f"REWRITE {i + 1}: - the weather today" for i in range(len(current.splitlines()))]
        elif mode == "step":
            new, edits = self._step(current, feedback, f"{self.seed}|{sample}|{messages[-1]['content']}", sample)
        else:
            missing = [c for c in self.categories if re.search(rf"\b{c}\b", feedback) and not re.search(rf"\b{c}\b", current.lower())]
            new = current + "".join(f"\n- {c}" for c in missing)
            edits = [f"ADD: - {c}" for c in missing]
        if delta_mode:
            out: dict[str, Any] = {"edits": edits}
        else:
            out = {"new_types" if types_mode else "new_text": new,
                   "changes": ["added a category"] if new != current else []}
        if wants_json:
            return json.dumps(out)
        parts = [f"[[ ## {name} ## ]]\n{value if isinstance(value, str) else json.dumps(value)}" for name, value in out.items()]
        return "\n\n".join(parts) + "\n\n[[ ## completed ## ]]"

    def _reply(self, messages: list[Message], role: Role, wants_json: bool, creative: bool = False,
               sample: int = 0) -> str:
        if role == "proposer":
            wants_json = wants_json or "Respond with a JSON object" in messages[-1]["content"]
            return self._propose(messages, wants_json, creative, sample)
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
        text = self._reply(messages, role, json_mode or json_schema is not None, bool(temperature), sample_index)
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
