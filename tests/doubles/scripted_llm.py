"""TEST DOUBLE: a scripted chat client for unit tests. It never stands in for a real model elsewhere.

A handler receives the messages, the role and whether JSON was asked for, and returns the reply text.
Calls are recorded (messages, role, whether JSON was asked, the JSON schema if any, the token cap, reply) so tests can
assert what was sent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import json_repair

from memevo.agents.llm.protocol import ChatReply, LLMJSONError, Message, Role

Handler = Callable[[list[Message], Role, bool], str]


class ScriptedLLM:
    """Implements ``ChatClient`` by calling ``handler``; counts calls and rough tokens per role."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.calls: list[dict[str, Any]] = []

    async def chat(
        self,
        messages: list[Message],
        *,
        role: Role,
        json_schema: dict[str, Any] | None = None,
        json_mode: bool = False,
        temperature: float | None = None,
        max_tokens: int | None = None,
        sample_index: int = 0,
    ) -> ChatReply:
        wants_json = json_mode or json_schema is not None
        text = self.handler(messages, role, wants_json)
        self.calls.append(
            {"messages": messages, "role": role, "json": wants_json, "json_schema": json_schema,
             "max_tokens": max_tokens, "reply": text}
        )
        prompt_tokens = sum(len(m["content"].split()) for m in messages)
        return ChatReply(text=text, model="scripted", prompt_tokens=prompt_tokens, completion_tokens=len(text.split()))

    async def chat_json(
        self,
        messages: list[Message],
        *,
        role: Role,
        json_schema: dict[str, Any] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        sample_index: int = 0,
    ) -> tuple[Any, ChatReply]:
        reply = await self.chat(messages, role=role, json_schema=json_schema, json_mode=True, max_tokens=max_tokens)
        try:
            return json.loads(reply.text), reply
        except json.JSONDecodeError:
            repaired = json_repair.loads(reply.text)
            if repaired in ("", None):
                raise LLMJSONError("reply is not JSON", raw_text=reply.text) from None
            return repaired, reply

    def calls_for(self, role: Role) -> list[dict[str, Any]]:
        return [call for call in self.calls if call["role"] == role]
