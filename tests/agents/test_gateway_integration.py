"""The real embedded model: SmolLM2-135M-Instruct served by llama-cpp-python, reached through the hub."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from memevo.agents.llm.config import LOCAL_MODEL_NAME, LLMConfig, default_embedding_model
from memevo.agents.llm.hub import LLMHub
from memevo.agents.llm.llama_build import forbidden_features, installed_system_info
from memevo.agents.llm.local_server import LocalModelServer
from memevo.agents.llm.protocol import LLMRequestError
from memevo.core.errors import RunFailedError
from memevo.environments.amemgym.data.io import save_items
from tests.doubles.scripted_agents import make_item

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


@pytest.mark.integration
def test_the_installed_llama_cpp_has_no_avx512_or_amx_code_paths():
    info = installed_system_info()
    assert "AVX2" in info or "AVX" in info, info  # the report is the one we parse
    assert forbidden_features(info) == [], f"a native build crashes on AVX-512/AMX CPUs: {info}"


@pytest.mark.integration
async def test_the_embedded_server_answers_a_multi_token_chat(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    async with LLMHub(cache_dir=tmp_path) as hub:
        reply = await hub.client(LLMConfig(max_tokens=16)).chat(
            [{"role": "user", "content": "Please list three fruits that are usually red or yellow."}], role="agent"
        )
    assert reply.prompt_tokens > 10 and reply.completion_tokens > 0 and reply.text.strip()


def _children(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of the processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append((int(entry.name), cmdline))
    return found


@pytest.mark.integration
def test_killing_the_embedded_server_ends_the_run_at_once_and_keeps_finished_periods(tmp_path: Path):
    save_items([make_item(n_periods=4)], tmp_path / "data.json")
    (tmp_path / "agent.yaml").write_text("kind: native\nllm:\n  max_tokens: 24\n")
    out = tmp_path / "out"
    env = {key: value for key, value in os.environ.items() if key not in ("OPENAI_BASE_URL", "MEMEVO_MODEL")}
    run = subprocess.Popen(
        [sys.executable, "-m", "memevo.evolve.cli", "eval", "--agent", str(tmp_path / "agent.yaml"),
         "--env", str(tmp_path / "data.json"), "--out", str(out)],
        env={**env, "MEMEVO_CACHE_DIR": str(tmp_path / "cache")}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    finished = out / "run" / "users" / "user-1" / "period_00.json.gz"
    deadline = time.monotonic() + 400
    while not finished.exists() and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert finished.exists(), run.communicate(timeout=30)
    servers = [pid for pid, cmdline in _children(run.pid) if "memevo.agents.llm.llama_server" in cmdline]
    assert len(servers) == 1
    killed_at = time.monotonic()
    os.kill(servers[0], signal.SIGKILL)
    _, stderr = run.communicate(timeout=30)
    assert time.monotonic() - killed_at < 5, stderr
    assert run.returncode == 1, stderr
    assert "killed by signal SIGKILL" in stderr and "Last lines of its log" in stderr
    assert finished.exists()  # finished work is kept


@pytest.mark.integration
async def test_the_embedded_server_embeds_texts_with_its_default_embedding_model(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    config = LLMConfig()
    model = default_embedding_model(config)
    assert model is not None
    async with LLMHub(cache_dir=tmp_path, use_cache=False) as hub:
        gateway = hub.client(config)
        texts = ["I hike in the mountains every weekend.", "The stock market fell today.",
                 "I hike in the mountains every weekend."]
        vectors = await gateway.embed(texts, role="agent", model=model)
        assert len(vectors) == 3 and len({len(vector) for vector in vectors}) == 1 and len(vectors[0]) > 100
        assert vectors[0] == vectors[2] and vectors[0] != vectors[1]
        with pytest.raises(LLMRequestError, match="HTTP 400"):  # another model's name is not answered with SmolLM2's
            await gateway.embed(["x"], role="agent", model="text-embedding-3-small")
        # chats still work after the embeddings context was loaded
        reply = await gateway.chat([{"role": "user", "content": "Say hello."}], role="agent")
        assert reply.text
    assert hub.accounting.report().by_role["agent"].prompt_tokens > 0
