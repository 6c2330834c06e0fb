"""The one repair loop every LLM stage uses: ask for JSON, validate, feed the errors back, re-ask."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from memevo.agents.llm.protocol import ChatClient, LLMJSONError, Message, Role
from memevo.core.errors import MemevoError

Validator = Callable[[Any], list[str]]
"""Returns the problems found in a parsed reply; an empty list means it is accepted."""


class StageError(MemevoError):
    """A stage gave up for one user; the pipeline reports it with the user and stage names."""

    def __init__(self, stage: str, message: str) -> None:
        self.stage = stage
        self.detail = message
        super().__init__(f"stage '{stage}': {message}")


async def ask_json(
    llm: ChatClient,
    messages: list[Message],
    *,
    stage: str,
    schema: dict[str, Any],
    validate: Validator,
    temperature: float,
    repair_turns: int,
    role: Role = "generator",
) -> Any:
    """Return the first reply that parses and passes ``validate``.

    A rejected reply stays in the conversation, followed by the list of problems, so the model
    repairs its own answer (AMemGym's multi-turn fix), and every turn is validated afresh: the
    reference re-validated a stale first reply after retrying (I.24).
    """
    conversation = list(messages)
    problems: list[str] = []
    for _ in range(repair_turns + 1):
        try:
            parsed, reply = await llm.chat_json(conversation, role=role, json_schema=schema, temperature=temperature)
            text = reply.text
            problems = validate(parsed)
        except LLMJSONError as exc:
            text, problems = exc.raw_text, ["the reply was not valid JSON"]
        if not problems:
            return parsed
        conversation = [
            *conversation,
            {"role": "assistant", "content": text},
            {"role": "user", "content": repair_request(problems)},
        ]
    raise StageError(stage, f"no valid reply after {repair_turns} repair turns; last problems: {problems}")


def repair_request(problems: list[str]) -> str:
    listed = "\n".join(f"- {problem}" for problem in problems)
    return f"Your answer has these problems:\n{listed}\nReply again with the whole corrected JSON object."


def dumps(value: Any) -> str:
    """Compact JSON for prompts (keeps prompts short for small models)."""
    return json.dumps(value, ensure_ascii=False)


def string_schema() -> dict[str, Any]:
    return {"type": "string", "minLength": 1}


def object_schema(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    """A closed JSON object schema; every property is required unless ``required`` says otherwise."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
        "additionalProperties": False,
    }


def array_schema(items: dict[str, Any], *, min_items: int = 0, max_items: int | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "array", "items": items, "minItems": min_items}
    if max_items is not None:
        schema["maxItems"] = max_items
    return schema


def text_field(key: str) -> tuple[dict[str, Any], Validator]:
    """Schema and validator of the common reply ``{key: non-empty string}``."""

    def validate(parsed: Any) -> list[str]:
        ok = isinstance(parsed, dict) and isinstance(parsed.get(key), str) and parsed[key].strip()
        return [] if ok else [f"reply must be an object with a non-empty '{key}'"]

    return object_schema({key: string_schema()}), validate


def prompt(system: str, user: str) -> list[Message]:
    """The two-message conversation every stage opens with."""
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
