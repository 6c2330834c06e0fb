"""Multiple-choice questions put to the bare LLM: no agent, no memory (upper bound, no-memory baseline)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import NamedTuple, TypeVar

from memevo.agents.base import AgentAnswer
from memevo.agents.llm.protocol import ChatClient, Message, Role
from memevo.environments.qa import ChoiceOutcome, answer_schema, ask_choice

E = TypeVar("E")


class BareQuestion(NamedTuple):
    """One prompt to ask, its number of options, and the key that seeds the compat random fallback."""

    prompt: str
    n_choices: int
    rng_key: tuple[object, ...]


async def ask_bare_llm(
    llm: ChatClient,
    question: BareQuestion,
    *,
    role: Role,
    constrained: bool,
    json_mode: bool,
    amemgym_compat: bool,
) -> ChoiceOutcome:
    """Ask as one user message; ``constrained`` sends the answer's JSON schema, else ``json_mode`` chooses
    between plain JSON mode and free decoding."""
    schema = answer_schema(question.n_choices) if constrained else None

    async def ask(text: str) -> AgentAnswer:
        messages: list[Message] = [{"role": "user", "content": text}]
        reply = await llm.chat(messages, role=role, json_schema=schema, json_mode=json_mode)
        return AgentAnswer(text=reply.text)

    return await ask_choice(ask, question.prompt, question.n_choices, amemgym_compat=amemgym_compat,
                            rng_key=question.rng_key)


async def ask_all(
    llm: ChatClient,
    questions: Sequence[BareQuestion],
    to_entry: Callable[[int, ChoiceOutcome], E],
    *,
    role: Role,
    constrained: bool,
    json_mode: bool,
    amemgym_compat: bool,
    max_concurrency: int,
    on_entry: Callable[[E], None] | None,
) -> list[E]:
    """Every question with bounded concurrency; ``to_entry(index, outcome)`` makes each record, which is
    passed to ``on_entry`` as soon as it exists (progress)."""
    semaphore = asyncio.Semaphore(max_concurrency)

    async def one(index: int, question: BareQuestion) -> E:
        async with semaphore:
            outcome = await ask_bare_llm(llm, question, role=role, constrained=constrained, json_mode=json_mode,
                                         amemgym_compat=amemgym_compat)
        entry = to_entry(index, outcome)
        if on_entry:
            on_entry(entry)
        return entry

    return list(await asyncio.gather(*(one(i, q) for i, q in enumerate(questions))))
