"""One multiple-choice question put to the bare LLM: no agent, no memory (upper bound, no-memory baseline)."""

from __future__ import annotations

from memevo.agents.base import AgentAnswer
from memevo.agents.llm.protocol import ChatClient, Message, Role
from memevo.environments.qa import ChoiceOutcome, answer_schema, ask_choice


async def ask_bare_llm(
    llm: ChatClient,
    prompt: str,
    n_choices: int,
    *,
    role: Role,
    constrained: bool,
    json_mode: bool,
    amemgym_compat: bool,
    rng_key: tuple[object, ...],
) -> ChoiceOutcome:
    """Ask ``prompt`` as one user message; ``constrained`` sends the answer's JSON schema, else
    ``json_mode`` chooses between plain JSON mode and free decoding."""
    schema = answer_schema(n_choices) if constrained else None

    async def ask(text: str) -> AgentAnswer:
        messages: list[Message] = [{"role": "user", "content": text}]
        reply = await llm.chat(messages, role=role, json_schema=schema, json_mode=json_mode)
        return AgentAnswer(text=reply.text)

    return await ask_choice(ask, prompt, n_choices, amemgym_compat=amemgym_compat, rng_key=rng_key)
