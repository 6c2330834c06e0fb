"""The real embedded model: SmolLM2-135M-Instruct served by llama-cpp-python, reached through the hub."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from memevo.agents.errors import RunFailedError
from memevo.agents.llm.config import LOCAL_MODEL_NAME, LLMConfig
from memevo.agents.llm.hub import LLMHub
from memevo.agents.llm.local_server import LocalModelServer
from memevo.agents.llm.protocol import LLMRequestError

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "population_millions": {"type": "number"}},
    "required": ["city", "population_millions"],
}


@pytest.mark.integration
async def test_hub_starts_the_local_model_and_gets_chat_and_json_replies(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    async with LLMHub(cache_dir=tmp_path) as hub:
        gateway = hub.client(LLMConfig(max_tokens=48))
        url = hub.local_server_url
        assert url is not None and gateway.base_url == url
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

        with pytest.raises(LLMRequestError, match="HTTP 400"):  # beyond the 8192-token context
            await gateway.chat([{"role": "user", "content": "word " * 9000}], role="agent")
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{url}/models", timeout=2)  # the hub stopped the server it started
    report = hub.accounting.report()
    assert report.by_role["agent"].errors == 1 and report.total().dollars == 0.0


@pytest.mark.integration
def test_a_server_that_cannot_start_reports_its_output(tmp_path: Path):
    not_a_model = tmp_path / "broken.gguf"
    not_a_model.write_bytes(b"not a gguf file")
    with pytest.raises(RunFailedError, match="exited with code") as caught:
        LocalModelServer(not_a_model, startup_timeout_s=60).start()
    assert "broken.gguf" in str(caught.value)
