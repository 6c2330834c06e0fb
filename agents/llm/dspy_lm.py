"""A DSPy language model whose every call goes through an ``LLMGateway``.

DSPy optimisers and modules then share the gateway's cache, concurrency limit, retries and per-role
accounting instead of calling the endpoint through LiteLLM behind memevo's back. DSPy 3.4 calls a
custom ``BaseLM`` through its legacy ``forward``/``aforward`` interface without its own cache or
retries (the gateway owns both). DSPy marks that interface deprecated for 3.5 and warns about it;
the port to an lm15 engine is a contained change in this module.

Sync calls (``forward``: DSPy modules are sync by default) run the gateway on the process-wide
bridge loop (see ``sync_bridge``), so they work from plain scripts, from worker threads of a
running event loop and from DSPy's parallel executor alike.
"""

from __future__ import annotations

import asyncio
from typing import Any

import dspy
from pydantic import BaseModel

from memevo.agents.llm.gateway import LLMGateway
from memevo.agents.llm.protocol import ChatReply, Message, Role
from memevo.agents.llm.sync_bridge import run_sync

SAMPLES_PER_ROLLOUT = 1000
"""DSPy's ``rollout_id`` r and candidate i map to sample index (r + 1) * 1000 + i (i < 1000)."""


class GatewayLM(dspy.BaseLM):
    """``dspy.BaseLM`` routed through ``gateway`` and accounted under ``role``."""

    def __init__(self, gateway: LLMGateway, *, role: Role = "proposer") -> None:
        super().__init__(
            model=gateway.config.model,
            model_type="chat",
            temperature=gateway.config.temperature,
            max_tokens=gateway.config.max_tokens,
            cache=False,
            num_retries=0,
        )
        self.gateway = gateway
        self.role = role

    @property
    def supported_params(self) -> set[str]:
        """What ``aforward`` honours; DSPy's JSONAdapter only asks for JSON when listed here."""
        return {"response_format", "temperature", "max_tokens", "n", "rollout_id"}

    @property
    def supports_response_schema(self) -> bool:
        """True: the gateway sends DSPy's output schema, which local servers enforce while decoding."""
        return True

    def forward(self, prompt: str | None = None, messages: list[Message] | None = None, **kwargs: Any) -> dict:
        return run_sync(self.aforward(prompt=prompt, messages=messages, **kwargs))

    async def aforward(self, prompt: str | None = None, messages: list[Message] | None = None, **kwargs: Any) -> dict:
        options = {**self.kwargs, **kwargs}
        chat_messages = messages or [{"role": "user", "content": prompt or ""}]
        count = options.get("n") or 1
        json_schema, json_mode = _json_request(options.get("response_format"))
        first_sample = _first_sample_index(options.get("rollout_id"))
        replies = await asyncio.gather(
            *(
                self.gateway.chat(
                    chat_messages,
                    role=self.role,
                    json_schema=json_schema,
                    json_mode=json_mode,
                    temperature=options.get("temperature"),
                    max_tokens=options.get("max_tokens") or options.get("max_completion_tokens"),
                    sample_index=first_sample + index,
                )
                for index in range(count)
            )
        )
        return _openai_shaped(replies, self.model)


def _first_sample_index(rollout_id: Any) -> int:
    return 0 if rollout_id is None else (int(rollout_id) + 1) * SAMPLES_PER_ROLLOUT


def _json_request(response_format: Any) -> tuple[dict[str, Any] | None, bool]:
    """Translate DSPy's ``response_format`` (dict or pydantic class) into (json_schema, json_mode)."""
    if response_format is None:
        return None, False
    if isinstance(response_format, type) and issubclass(response_format, BaseModel):
        return response_format.model_json_schema(), True
    if isinstance(response_format, dict):
        kind = response_format.get("type")
        if kind == "json_schema":
            return response_format.get("json_schema", {}).get("schema"), True
        if kind == "json_object":
            return response_format.get("schema"), True
    return None, False


def _openai_shaped(replies: list[ChatReply], model: str) -> dict[str, Any]:
    prompt_tokens = sum(reply.prompt_tokens for reply in replies)
    completion_tokens = sum(reply.completion_tokens for reply in replies)
    return {
        "model": replies[0].model if replies else model,
        "choices": [
            {
                "index": index,
                "message": {"role": "assistant", "content": reply.text},
                "finish_reason": reply.finish_reason or "stop",
            }
            for index, reply in enumerate(replies)
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
