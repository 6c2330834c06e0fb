"""Multiple-choice questions put to the bare LLM: no agent, no memory (upper bound, no-memory baseline)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import NamedTuple, TypeVar

from memevo.agents.llm.protocol import ChatClient, Role
from memevo.environments.amemgym.data.models import Question
from memevo.environments.answering import AnswerChooser, BareResponder
from memevo.environments.qa import ChoiceOutcome

E = TypeVar("E")


class BareQuestion(NamedTuple):
    """One prompt to ask, the question it asks, and the key that seeds the compat random fallback."""

    prompt: str
    question: Question
    rng_key: tuple[object, ...]


async def ask_all(
    llm: ChatClient,
    questions: Sequence[BareQuestion],
    to_entry: Callable[[int, ChoiceOutcome], E],
    *,
    role: Role,
    chooser: AnswerChooser,
    json_mode: bool,
    amemgym_compat: bool,
    max_concurrency: int,
    on_entry: Callable[[E], None] | None,
) -> list[E]:
    """Every question, each as one user message, answered as ``chooser`` answers (``json_mode``: generated replies
    without a schema in plain JSON mode), with bounded concurrency; ``to_entry(index, outcome)`` makes each record,
    which is passed to ``on_entry`` as soon as it exists (progress)."""
    semaphore = asyncio.Semaphore(max_concurrency)
    responder = BareResponder(llm, role=role, json_mode=json_mode)

    async def one(index: int, question: BareQuestion) -> E:
        async with semaphore:
            outcome = await chooser.choose(responder, question.prompt, question.question,
                                           amemgym_compat=amemgym_compat, rng_key=question.rng_key)
        entry = to_entry(index, outcome)
        if on_entry:
            on_entry(entry)
        return entry

    return list(await asyncio.gather(*(one(i, q) for i, q in enumerate(questions))))
