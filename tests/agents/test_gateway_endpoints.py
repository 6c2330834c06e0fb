"""Several endpoints of one model share the load: spread by queue length, a down endpoint's requests served by the
other, each endpoint's own rate limit, the same replies as one endpoint, and configs without extra endpoints hashed
as before."""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
import sys
import time
from pathlib import Path

import pytest
import yaml

from memevo.agents.config_file import load_policy
from memevo.agents.llm.config import LLMConfig
from memevo.agents.llm.hub import LLMHub
from memevo.agents.policy import MemoryPolicy
from memevo.core.errors import UserInputError
from memevo.evolve.cli import main as cli
from tests.doubles.fault_server import FaultServer

FIXTURE = Path(__file__).parents[1] / "fixtures" / "amemgym_small.json"
QUESTIONS = [[{"role": "user", "content": f"question {n}"}] for n in range(24)]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    for name in ("MEMEVO_REQUESTS_PER_MINUTE", "MEMEVO_TOKENS_PER_MINUTE", "MEMEVO_RATE_STORE", "MEMEVO_RATE_KEY",
                 "MEMEVO_CONCURRENCY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def _ask_all(hub: LLMHub, config: LLMConfig) -> list[str]:
    async def run() -> list[str]:
        gateway = hub.client(config)
        replies = await asyncio.gather(*(gateway.chat(messages, role="agent") for messages in QUESTIONS))
        return [reply.text for reply in replies]

    return asyncio.run(run())


def _closed_port_url() -> str:
    """A loopback URL where nothing listens: connections are refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_the_load_is_spread_within_each_limit_and_replies_equal_one_endpoints(tmp_path: Path) -> None:
    with FaultServer(latency_s=0.05) as first, FaultServer(latency_s=0.05) as second:
        with LLMHub(cache_dir=tmp_path, use_cache=False) as hub:
            both = LLMConfig(model="m", base_url=first.url, extra_base_urls=(second.url,), max_concurrency=3)
            spread = _ask_all(hub, both)
            assert hub.client(both).width == 6
            counts = hub.endpoint_counts()
        with LLMHub(cache_dir=tmp_path, use_cache=False) as hub:
            alone = _ask_all(hub, LLMConfig(model="m", base_url=first.url, max_concurrency=3))
    assert spread == alone == [f"echo: question {n}" for n in range(24)]
    assert len(second.requests) >= 8 and len(first.requests) - 24 >= 8  # both served a fair share
    assert first.peak_in_flight <= 3 and second.peak_in_flight <= 3 and second.peak_in_flight == 3
    assert counts == {first.url: (24 - len(second.requests), 0), second.url: (len(second.requests), 0)}


def test_a_down_endpoints_requests_go_to_the_other_without_waiting_out_the_backoff(tmp_path: Path) -> None:
    down = _closed_port_url()
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    with FaultServer() as up, LLMHub(cache_dir=tmp_path, use_cache=False) as hub:
        config = LLMConfig(model="m", base_url=down, extra_base_urls=(up.url,), max_concurrency=4, max_retries=1)
        hub.client(config).sleep = record
        replies = _ask_all(hub, config)
        counts = hub.endpoint_counts()
    assert replies == [f"echo: question {n}" for n in range(24)] and len(up.requests) == 24
    assert counts[up.url] == (24, 0) and counts[down][0] == 0 and counts[down][1] >= 1
    assert waits == []  # each retry went to the endpoint that was up at once


def test_a_failed_attempt_is_retried_at_the_other_endpoint(tmp_path: Path) -> None:
    from tests.doubles.fault_server import Fault

    with FaultServer() as first, FaultServer() as second, LLMHub(cache_dir=tmp_path, use_cache=False) as hub:
        first.plan(Fault(status=503))
        config = LLMConfig(model="m", base_url=first.url, extra_base_urls=(second.url,), max_retries=1)
        reply = asyncio.run(hub.client(config).chat(QUESTIONS[0], role="agent"))
        usage = hub.accounting.report().by_role["agent"]
    assert reply.text == "echo: question 0" and len(first.requests) == len(second.requests) == 1
    assert (usage.calls, usage.retries, usage.errors) == (1, 1, 0)


def test_each_endpoint_keeps_its_own_rate_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMEVO_REQUESTS_PER_MINUTE", "600")  # 10 a second and a burst of 10, per endpoint
    with FaultServer() as first, FaultServer() as second, LLMHub(cache_dir=tmp_path, use_cache=False) as hub:
        config = LLMConfig(model="m", base_url=first.url, extra_base_urls=(second.url,), max_concurrency=8,
                           max_retries=0)
        questions = [[{"role": "user", "content": f"q{n}"}] for n in range(40)]

        async def run() -> float:
            started = time.monotonic()
            await asyncio.gather(*(hub.client(config).chat(messages, role="agent") for messages in questions))
            return time.monotonic() - started

        elapsed = asyncio.run(run())
        buckets = [route.limit.rate for route in hub.client(config).routes]
    assert [bucket.name for bucket in buckets if bucket is not None] == [first.url, second.url]
    for server in (first, second):  # its burst, then 10 a second: never more
        assert len(server.requests) <= 10 + 10 * elapsed + 1, (len(server.requests), elapsed)
    assert len(first.requests) >= 10 and len(second.requests) >= 10 and elapsed > 0.7  # 20 at once, 20 at 20/s


def test_cached_replies_are_keyed_by_the_first_endpoint(tmp_path: Path) -> None:
    with FaultServer() as first, FaultServer() as second:
        with LLMHub(cache_dir=tmp_path) as hub:
            _ask_all(hub, LLMConfig(model="m", base_url=first.url, extra_base_urls=(second.url,), max_concurrency=2))
        served = len(first.requests) + len(second.requests)
        with LLMHub(cache_dir=tmp_path) as hub:
            _ask_all(hub, LLMConfig(model="m", base_url=first.url))
    assert served == 24 and len(first.requests) + len(second.requests) == 24  # the second run asked nothing


def test_configs_without_extra_endpoints_keep_their_ids() -> None:
    llm = LLMConfig(model="gpt-4.1-mini", base_url="http://127.0.0.1:9/v1")
    assert "extra_base_urls" not in llm.model_dump() and "extra_base_urls" not in llm.model_dump_json()
    policy = MemoryPolicy(kind="rag", llm=llm)
    assert policy.policy_id == "aa429a135b066bf0"  # as computed before the field existed
    dumped = json.dumps(LLMConfig(model="m", base_url="http://h/v1").model_dump(mode="json"), sort_keys=True)
    assert hashlib.sha256(dumped.encode()).hexdigest()[:16] == "2ca5b5eed95886f8"
    wider = MemoryPolicy(kind="rag", llm=llm.model_copy(update={"extra_base_urls": ("http://127.0.0.1:10/v1",)}))
    assert wider.policy_id == policy.policy_id  # more endpoints change the speed, not the replies
    assert wider.llm.model_dump()["extra_base_urls"] == ("http://127.0.0.1:10/v1",)


@pytest.mark.parametrize(("extra", "says"), [
    (["http://b/v1", "ftp://c/v1"], "not an http(s) URL: 'ftp://c/v1'"),
    (["http://b/v1", "http://b/v1/"], "lists http://b/v1 twice"),
    (["http://a/v1"], "lists http://a/v1 twice"),
])
def test_a_bad_endpoint_list_names_the_file_and_field(extra: list[str], says: str, tmp_path: Path) -> None:
    source = tmp_path / "agent.yaml"
    source.write_text(yaml.safe_dump({"kind": "native", "llm": {"model": "m", "base_url": "http://a/v1",
                                                                  "extra_base_urls": extra}}))
    with pytest.raises(UserInputError) as raised:
        load_policy(source)
    message = str(raised.value)
    assert str(source) in message and "llm.extra_base_urls" in message and says in message, message
    assert "\n" not in message


def test_memevo_eval_exits_2_on_a_repeated_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = tmp_path / "agent.yaml"
    agent.write_text("kind: native\nllm: {model: m, base_url: 'http://a/v1', extra_base_urls: ['http://a/v1']}\n")
    monkeypatch.setattr(sys, "argv", ["memevo", "eval", "--agent", str(agent), "--env", str(FIXTURE),
                                      "--out", str(tmp_path / "out"), "--simulator", "template"])
    with pytest.raises(SystemExit) as exited:
        cli.main()
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert str(agent) in err and "extra_base_urls" in err and "twice" in err, err


def test_a_resume_may_add_endpoints() -> None:
    from memevo.evolve.config import without_widths

    payload = {"llm": {"agent": {"model": "m", "base_url": "http://a/v1", "extra_base_urls": ["http://b/v1"]}}}
    assert without_widths(payload) == {"llm": {"agent": {"model": "m", "base_url": "http://a/v1"}}}
