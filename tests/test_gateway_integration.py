"""The real embedded model: SmolLM2-135M-Instruct served by llama-cpp-python, reached through the gateway."""

from __future__ import annotations

from pathlib import Path

import pytest

from memevo.agents.llm.accounting import Accounting
from memevo.agents.llm.cache import ResponseCache
from memevo.agents.llm.config import LOCAL_MODEL_NAME, LLMConfig
from memevo.agents.llm.gateway import LLMGateway
from memevo.agents.llm.local_server import LocalModelServer
from memevo.agents.llm.protocol import LLMRequestError

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "population_millions": {"type": "number"}},
    "required": ["city", "population_millions"],
}


@pytest.mark.integration
async def test_real_local_model_chat_json_and_context_limit(tmp_path: Path):
    with LocalModelServer(n_ctx=2048) as server:
        gateway = LLMGateway(
            LLMConfig(model=LOCAL_MODEL_NAME, max_tokens=48),
            base_url=server.url,
            cache=ResponseCache(tmp_path),
            accounting=Accounting(),
        )
        reply = await gateway.chat(
            [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}], role="agent"
        )
        assert "paris" in reply.text.lower()
        assert reply.model == LOCAL_MODEL_NAME and reply.prompt_tokens > 0 and reply.completion_tokens > 0

        parsed, json_reply = await gateway.chat_json(
            [{"role": "user", "content": "Describe Paris as JSON with its population in millions."}],
            role="generator",
            json_schema=SCHEMA,
        )
        assert isinstance(parsed, dict) and set(SCHEMA["required"]) <= parsed.keys()
        assert isinstance(parsed["city"], str) and isinstance(parsed["population_millions"], int | float)
        assert json_reply.finish_reason == "stop"

        with pytest.raises(LLMRequestError, match="HTTP 400"):
            await gateway.chat([{"role": "user", "content": "word " * 2500}], role="agent")
        await gateway.aclose()
    report = gateway.accounting.report()
    assert report.by_role["agent"].errors == 1 and report.total().dollars == 0.0
