"""The multiple-choice question prompt (AMemGym F.1/F.2) and its strict parser.

The reference turned any unreadable reply into a random answer and indexed with 0 or negative numbers
from the end (defects I.3-I.5). Here a reply must hold a JSON object whose ``answer`` is an int in
1..n; prose or code fences around it are tolerated, anything else is a format error. One retry with a
short reminder is allowed. ``amemgym_compat`` reproduces the reference's random fallback instead, with a
random generator seeded per (user, period, question) so results do not depend on call order (I.14).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

from pydantic import ConfigDict

from memevo.agents.base import AgentAnswer
from memevo.agents.templates import render
from memevo.core.lazy_model import LazyModel
from memevo.environments.amemgym.data.models import Question

AnswerMode = Literal["generated", "likelihood"]
"""How an answer was given: the model named an option, or each option's text was scored (``answering``)."""
AnsweredBy = Literal["generated", "likelihood", "calibrated_likelihood"]
"""What an answer's record says: its ``AnswerMode``, with likelihood answers calibrated by the options' likelihood
under a content-free prompt named apart."""

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)

ANSWER_INSTRUCTION = (
    'Reply with nothing except a JSON object of the form {"answer": <option number>} '
    "inside a ```json fenced block."
)


def _choice_lines(question: Question) -> str:
    return "\n".join(f"{number}: {choice.answer}" for number, choice in enumerate(question.answer_choices, start=1))


class QuestionPrompts(LazyModel):
    """Templates for the evaluation prompts, used instead of memevo's wording (``--amemgym-source``).

    Placeholders: ``qa`` {query} {choices}; ``upper_bound`` {query} {state} {choices}; ``probe``
    {state_schema}. Choices are ``"<n>: <answer>"`` lines and state and schema are indented JSON, as the
    reference rendered them; every other brace is left as written.
    """

    model_config = ConfigDict(frozen=True)

    qa: str
    upper_bound: str
    probe: str

    @property
    def digest(self) -> str:
        """Names these texts in stored tables, so a table asked with other prompts is not reused."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:16]


def prompts_digest(prompts: QuestionPrompts | None) -> str:
    """``""`` for memevo's own wording, else the templates' digest."""
    return "" if prompts is None else prompts.digest


QA_PLACEHOLDERS = {"query", "choices"}
UPPER_BOUND_PLACEHOLDERS = {"query", "state", "choices"}
PROBE_PLACEHOLDERS = {"state_schema"}


def build_qa_prompt(question: Question, prompts: QuestionPrompts | None = None) -> str:
    """The question put to the agent at the end of a period (F.1 order)."""
    if prompts is not None:
        return render(prompts.qa, {"query": question.query, "choices": _choice_lines(question)}, QA_PLACEHOLDERS)
    return (
        f"{question.query}\n\n"
        "Which of the options below suits my current situation best? Weigh my present preferences and "
        "circumstances.\n\n"
        f"Options:\n{_choice_lines(question)}\n\n"
        f"{ANSWER_INSTRUCTION}"
    )


def build_upper_bound_prompt(question: Question, state: dict[str, str], prompts: QuestionPrompts | None = None) -> str:
    """The question with the relevant true state spelled out (F.2): it measures pure utilisation."""
    if prompts is not None:
        values = {"query": question.query, "state": json.dumps(state, ensure_ascii=False, indent=2),
                  "choices": _choice_lines(question)}
        return render(prompts.upper_bound, values, UPPER_BOUND_PLACEHOLDERS)
    return (
        f"{question.query}\n\n"
        "My current relevant preferences and situation are:\n"
        f"{json.dumps(state, ensure_ascii=False, indent=2)}\n\n"
        "Given that, which of the options below suits my current situation best?\n\n"
        f"Options:\n{_choice_lines(question)}\n\n"
        f"{ANSWER_INSTRUCTION}"
    )


def build_cloze_prompt(question: Question) -> str:
    """The question for likelihood answers: no option list and no reply format, since the reply scored is each
    option's text itself."""
    return f"{question.query}\n\nWhat do you advise, given my current preferences and circumstances?"


def build_cloze_upper_bound_prompt(question: Question, state: dict[str, str]) -> str:
    """The likelihood question with the relevant true state spelled out, one ``name: value`` line each."""
    facts = "\n".join(f"- {name.replace('_', ' ')}: {value}" for name, value in state.items())
    return (f"{question.query}\n\nMy current situation:\n{facts}\n\n"
            "What do you advise, given my current preferences and circumstances?")


def answer_schema(n_choices: int) -> dict[str, Any]:
    """The JSON schema of a valid reply to an ``n_choices`` question, for constrained decoding.

    An integer ``enum`` is the form llama.cpp's schema-to-grammar converter handles most reliably.
    """
    return {
        "type": "object",
        "properties": {"answer": {"type": "integer", "enum": list(range(1, n_choices + 1))}},
        "required": ["answer"],
    }


def choice_reminder(n_choices: int) -> str:
    """Appended to the prompt when the first reply could not be read."""
    return (
        "\n\nYour previous reply could not be read. Reply again with only a JSON object "
        f'{{"answer": N}}, where N is an option number from 1 to {n_choices}.'
    )


def extract_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text``: inside a code fence, the whole text, or embedded in prose."""
    candidates = [*(block.strip() for block in _FENCE.findall(text)), text.strip()]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    return None


_REFERENCE_FENCE = re.compile(r"```json(.*?)```", re.DOTALL)


def reference_json_object(text: str) -> dict[str, Any] | None:
    """The reference's reading (``amemgym_compat``): the first ```json fenced block, else the whole text,
    must be a JSON object; prose around an unfenced object, or any other fence, is not read (I.5)."""
    fenced = _REFERENCE_FENCE.search(text)
    try:
        value = json.loads(fenced.group(1).strip() if fenced else text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def parse_choice(text: str, n_choices: int, *, amemgym_compat: bool = False) -> int | None:
    """The 1-based option number in ``text``, or None if the reply is not a valid choice (read as the
    reference read it under ``amemgym_compat``; a number outside 1..n is never a choice, I.3)."""
    obj = reference_json_object(text) if amemgym_compat else extract_json_object(text)
    if obj is None:
        return None
    value = obj.get("answer")
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 1 <= value <= n_choices else None


def fallback_rng(*key: object) -> random.Random:
    """A generator seeded from ``key`` alone, so a draw never depends on what ran before it."""
    digest = hashlib.sha256("|".join(map(str, key)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


class ChoiceOutcome(LazyModel):
    """What asking one multiple-choice question produced."""

    choice: int | None
    raw_reply: str
    retry_reply: str | None = None
    format_error: bool = False
    random_fallback: bool = False
    consulted_memory: str = ""
    answer_mode: AnsweredBy = "generated"


Ask = Callable[[str], Awaitable[AgentAnswer]]


async def ask_choice(
    ask: Ask,
    prompt: str,
    n_choices: int,
    *,
    amemgym_compat: bool = False,
    rng_key: Sequence[object] = (),
) -> ChoiceOutcome:
    """Ask, parse strictly, retry once; in compat mode draw a seeded random option instead of retrying."""
    first = await ask(prompt)
    choice = parse_choice(first.text, n_choices, amemgym_compat=amemgym_compat)
    if choice is not None:
        return ChoiceOutcome(choice=choice, raw_reply=first.text, consulted_memory=first.consulted_memory)
    if amemgym_compat:
        drawn = fallback_rng(*rng_key).randint(1, n_choices)
        return ChoiceOutcome(
            choice=drawn,
            raw_reply=first.text,
            format_error=True,
            random_fallback=True,
            consulted_memory=first.consulted_memory,
        )
    second = await ask(prompt + choice_reminder(n_choices))
    choice = parse_choice(second.text, n_choices)
    return ChoiceOutcome(
        choice=choice,
        raw_reply=first.text,
        retry_reply=second.text,
        format_error=choice is None,
        consulted_memory=second.consulted_memory,
    )
