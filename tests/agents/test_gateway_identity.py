"""Which model answered is part of every cache key, and a config without a model asks its endpoint."""

from __future__ import annotations

from pathlib import Path

import pytest

from memevo.agents.llm import config as llm_config
from memevo.agents.llm.accounting import Accounting
from memevo.agents.llm.cache import ResponseCache
from memevo.agents.llm.config import LOCAL_MODEL_NAME, LLMConfig
from memevo.agents.llm.gateway import LLMGateway
from memevo.core.errors import UserInputError
from tests.doubles.fault_server import FaultServer

HELLO = [{"role": "user", "content": "hello there"}]


def gateway(url: str, cache: ResponseCache, identity: str | None = None) -> LLMGateway:
    return LLMGateway(
        LLMConfig(model="same-name"), base_url=url, cache=cache, accounting=Accounting(), endpoint_identity=identity
    )


async def test_two_endpoints_with_the_same_model_name_never_share_entries(tmp_path: Path):
    cache = ResponseCache(tmp_path)
    with FaultServer(lambda body: "from A") as first, FaultServer(lambda body: "from B") as second:
        assert (await gateway(first.url, cache).chat(HELLO, role="agent")).text == "from A"
        reply = await gateway(second.url, cache).chat(HELLO, role="agent")
        assert (reply.text, reply.cached) == ("from B", False)
        assert len(second.requests) == 1
        again = await gateway(first.url, cache).chat(HELLO, role="agent")  # the same endpoint keeps its entries
        assert (again.text, again.cached) == ("from A", True)
        embedded = await gateway(first.url, cache, identity="embedded:" + "0" * 64).chat(HELLO, role="agent")
        assert not embedded.cached  # the embedded model is another answerer, whatever the URL
    cache.close()


async def test_the_embedded_model_keeps_its_entries_across_ports(tmp_path: Path):
    cache = ResponseCache(tmp_path)
    identity = "embedded:" + "ab" * 32
    with FaultServer(lambda body: "first start") as before:
        await gateway(before.url, cache, identity).chat(HELLO, role="agent")
    with FaultServer(lambda body: "second start") as after:  # a new port, the same model file
        reply = await gateway(after.url, cache, identity).chat(HELLO, role="agent")
        assert (reply.text, reply.cached, len(after.requests)) == ("first start", True, 0)
    cache.close()


async def test_embeddings_are_keyed_by_endpoint_too(tmp_path: Path):
    cache = ResponseCache(tmp_path)
    with FaultServer(embed=lambda text: [1.0, 0.0]) as first, FaultServer(embed=lambda text: [0.0, 1.0]) as second:
        assert await gateway(first.url, cache).embed(["x"], role="agent", model="e") == [[1.0, 0.0]]
        assert await gateway(second.url, cache).embed(["x"], role="agent", model="e") == [[0.0, 1.0]]
    cache.close()


@pytest.fixture
def no_model_env(monkeypatch):
    monkeypatch.delenv("MEMEVO_MODEL", raising=False)
    monkeypatch.setattr(llm_config, "_served_models", {})
    return monkeypatch


def test_without_a_model_the_one_model_an_endpoint_serves_is_used(no_model_env, capsys):
    with FaultServer(models=("served-model",)) as server:
        no_model_env.setenv("OPENAI_BASE_URL", server.url)
        assert LLMConfig().model == "served-model"
        assert LLMConfig(temperature=0.5).model == "served-model"
    assert "serves one model, 'served-model'; using it (set MEMEVO_MODEL" in capsys.readouterr().err


def test_a_config_base_url_is_asked_rather_than_the_environment(no_model_env):
    no_model_env.delenv("OPENAI_BASE_URL", raising=False)
    with FaultServer(models=("only-here",)) as server:
        assert LLMConfig(base_url=server.url).model == "only-here"
    assert LLMConfig().model == LOCAL_MODEL_NAME


@pytest.mark.parametrize("models", [("a", "b"), ()], ids=["several", "none"])
def test_several_or_no_models_is_a_usage_error_naming_memevo_model(no_model_env, models):
    with FaultServer(models=models) as server:
        no_model_env.setenv("OPENAI_BASE_URL", server.url)
        with pytest.raises(UserInputError, match=f"MEMEVO_MODEL.*serves {len(models)} models"):
            LLMConfig()


def test_memevo_model_and_an_explicit_model_need_no_endpoint(no_model_env):
    no_model_env.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    assert LLMConfig(model="explicit").model == "explicit"
    no_model_env.setenv("MEMEVO_MODEL", "from-env")
    assert LLMConfig().model == "from-env"
