"""Usage per server: a role spread over several endpoints (``llm.extra_base_urls``) has its requests and tokens
counted per URL, in the run's ledger file and in the ledger workers share."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from memevo.agents.llm.config import LLMConfig
from memevo.agents.llm.hub import LLMHub
from memevo.agents.llm.shared_usage import SharedUsage
from memevo.environments.rundir import UsageLedger, read_ledger
from tests.doubles.fault_server import FaultServer

QUESTIONS = [[{"role": "user", "content": f"question {n}"}] for n in range(16)]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    for name in ("MEMEVO_REQUESTS_PER_MINUTE", "MEMEVO_TOKENS_PER_MINUTE", "MEMEVO_RATE_STORE", "MEMEVO_CONCURRENCY",
                 "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def _down_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/v1"


def test_requests_and_tokens_are_counted_per_server_in_the_ledger(tmp_path: Path) -> None:
    down = _down_url()
    ledger = UsageLedger(tmp_path / "usage.jsonl")
    shared = SharedUsage(f"sqlite:///{tmp_path / 'shared.db'}", "run", "worker", flush_s=60)
    with FaultServer(latency_s=0.02) as first, FaultServer(latency_s=0.02) as second, \
            LLMHub(cache_dir=tmp_path, use_cache=False) as hub:
        hub.accounting.attach(ledger)
        hub.accounting.attach(shared)
        config = LLMConfig(model="m", base_url=down, extra_base_urls=(first.url, second.url), max_concurrency=2,
                           max_retries=2)

        async def ask() -> None:
            gateway = hub.client(config)
            gateway.sleep = lambda seconds: asyncio.sleep(0)
            await asyncio.gather(*(gateway.chat(messages, role="agent") for messages in QUESTIONS))

        asyncio.run(ask())
        served = {first.url: len(first.requests), second.url: len(second.requests)}
    ledger.close()
    shared.close()
    report = read_ledger(tmp_path / "usage.jsonl")
    assert report.by_role["agent"].calls == 16  # the per-server lines leave the role's counts as they were
    assert {url: usage.requests for url, usage in report.by_endpoint.items() if url != down} == served
    assert sum(served.values()) == 16 and min(served.values()) > 0
    assert report.by_endpoint[down].requests == 0 and report.by_endpoint[down].failures >= 1
    answered = sum(usage.prompt_tokens for usage in report.by_endpoint.values())
    assert answered == report.by_role["agent"].prompt_tokens > 0
    assert UsageLedger(tmp_path / "usage.jsonl").report().by_endpoint == report.by_endpoint  # read back on resume
    other_worker = SharedUsage(f"sqlite:///{tmp_path / 'shared.db'}", "run", "other")
    try:
        assert other_worker.report().by_endpoint == report.by_endpoint  # what every worker of the run reads
    finally:
        other_worker.close()
