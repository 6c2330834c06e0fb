"""Claims, heartbeats, take-over and the shared rate limit on an SQLite store (no server needed)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from memevo.agents.llm.limiter import shared_rate_from_env
from memevo.agents.llm.rate_bucket import RateLimits, SharedRateBucket
from memevo.core.errors import UserInputError
from memevo.evolve.workers.claims import DONE, RUNNING, ClaimStore


def test_two_workers_never_claim_one_unit_and_take_a_silent_ones_over(tmp_path: Path) -> None:
    store = ClaimStore(f"sqlite:///{tmp_path / 'claims.db'}")
    store.register("job", ["a", "b", "c"])
    store.register("job", ["a", "b", "c"])  # a second worker registers the same units: nothing doubles
    assert store.claim("job", "w1", grace_s=60) == "a"
    assert store.claim("job", "w2", grace_s=60) == "b"
    store.finish("job", "b", "w2")
    assert store.claim("job", "w2", grace_s=60) == "c"
    assert store.claim("job", "w3", grace_s=60) is None  # a and c are held by live workers
    time.sleep(1.2)
    assert store.beat("job", "c", "w2")
    assert store.claim("job", "w3", grace_s=1.0) == "a"  # w1 went silent past the grace period
    assert not store.beat("job", "a", "w1")  # w1 learns it lost the unit
    store.finish("job", "a", "w1")  # and its late finish changes nothing
    assert store.states("job") == {"a": RUNNING, "b": DONE, "c": RUNNING}
    assert store.claim_counts("job") == {"a": 2, "b": 1, "c": 1}


def test_concurrent_claims_hand_each_unit_to_one_worker(tmp_path: Path) -> None:
    store = ClaimStore(f"sqlite:///{tmp_path / 'claims.db'}")
    units = [f"u{number}" for number in range(20)]
    store.register("job", units)
    won: list[str] = []

    def worker(name: str) -> None:
        mine = ClaimStore(f"sqlite:///{tmp_path / 'claims.db'}")
        while (unit := mine.claim("job", name, grace_s=60)) is not None:
            won.append(unit)
            mine.finish("job", unit, name)

    threads = [threading.Thread(target=worker, args=(f"w{number}",)) for number in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(won) == sorted(units)


def test_a_shared_bucket_holds_the_request_rate_across_workers(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'rate.db'}"
    limits = RateLimits(requests_per_minute=600)  # 10 a second, at most one second's worth at once
    granted: list[float] = []

    def worker() -> None:
        bucket = SharedRateBucket(url, "key", limits)
        end = time.monotonic() + 2.0
        while time.monotonic() < end:
            wait = bucket.try_take(1)
            if wait == 0:
                granted.append(time.monotonic())
            else:
                time.sleep(wait)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    span = max(granted) - min(granted)
    assert span > 1.5 and len(granted) <= 10 + 10 * span + 1  # the burst plus the refill, not 4 workers' worth


def test_tokens_taken_as_an_estimate_are_settled_with_the_count(tmp_path: Path) -> None:
    bucket = SharedRateBucket(f"sqlite:///{tmp_path / 'rate.db'}", "key", RateLimits(tokens_per_minute=6000))
    taken = time.monotonic()
    assert bucket.try_take(50) == 0.0
    bucket.settle(150)  # the endpoint counted 200
    _, tokens = bucket.levels()
    refilled = 100 * (time.monotonic() - taken) + 1  # at most this much flowed back in since (100 a second)
    assert -100 - 1 < tokens < -100 + refilled  # one second's capacity (100) less the 200 counted
    assert bucket.try_take(1) > 0  # in debt: the next request waits


def test_token_estimates_read_encoded_bodies() -> None:
    from memevo.agents.llm.limiter import estimate_tokens

    assert estimate_tokens(b"x" * 400) == 100
    assert estimate_tokens([b"x" * 200, b"y" * 200]) == 100
    assert estimate_tokens({"messages": [{"content": "x" * 400}]}) > 100


def test_rate_limits_come_from_the_environment(tmp_path: Path) -> None:
    assert shared_rate_from_env("http://x/v1", tmp_path, {}) is None
    bucket = shared_rate_from_env("http://x/v1", tmp_path, {"MEMEVO_REQUESTS_PER_MINUTE": "120",
                                                             "MEMEVO_RATE_KEY": "team-key"})
    assert bucket is not None and bucket.name == "team-key" and (tmp_path / "rate-limits.db").exists()
    with pytest.raises(UserInputError, match="MEMEVO_TOKENS_PER_MINUTE"):
        shared_rate_from_env("http://x/v1", tmp_path, {"MEMEVO_TOKENS_PER_MINUTE": "lots"})


def test_the_gateway_holds_the_shared_rate(tmp_path: Path, monkeypatch) -> None:
    import asyncio

    from memevo.agents.llm.config import LLMConfig
    from memevo.agents.llm.hub import LLMHub
    from tests.doubles.fault_server import FaultServer

    monkeypatch.setenv("MEMEVO_REQUESTS_PER_MINUTE", "600")  # 10 a second, a burst of 10
    monkeypatch.setenv("MEMEVO_TOKENS_PER_MINUTE", "600000")  # not binding: its estimate and settling must pass
    monkeypatch.setenv("OPENAI_API_KEY", "test")

    async def burst(hub: LLMHub, url: str) -> float:
        gateway = hub.client(LLMConfig(model="fault-server", base_url=url, max_concurrency=8, max_retries=0))
        started = time.monotonic()
        await asyncio.gather(*(gateway.chat([{"role": "user", "content": f"q{n}"}], role="agent") for n in range(25)))
        return time.monotonic() - started

    with FaultServer() as server, LLMHub(cache_dir=tmp_path, use_cache=False) as hub:
        elapsed = asyncio.run(burst(hub, server.url))
        bucket = hub.client(LLMConfig(model="fault-server", base_url=server.url, max_concurrency=8)).limit.rate
    assert len(server.requests) == 25 and elapsed > 1.3  # 10 at once, then 15 at 10 a second
    assert bucket is not None and bucket.name == server.url and (tmp_path / "rate-limits.db").exists()


def test_a_worker_that_finished_the_work_succeeds_when_another_failed(tmp_path: Path,
                                                                      capfd: pytest.CaptureFixture[str]) -> None:
    from memevo.evolve.workers.launch import sibling_workers

    with sibling_workers(1, tmp_path / "missing.yaml", tmp_path / "run", f"sqlite:///{tmp_path / 'w.db'}", [],
                         command_name="evolve"):
        pass  # this worker's body returned: every unit is done, so the other's failure cost nothing
    lines = capfd.readouterr().err.strip().splitlines()
    assert lines[-1].startswith("memevo: 1 of 1 other worker(s) failed (exit 2)")


@pytest.mark.parametrize(("silent_s", "taken_over"), [(5.0, False), (11.0, True)])
def test_a_dead_workers_unit_is_handed_over_within_about_ten_seconds(tmp_path: Path, silent_s: float,
                                                                     taken_over: bool) -> None:
    from sqlalchemy import text

    from memevo.evolve.workers.worker import WorkerSettings

    store = ClaimStore(f"sqlite:///{tmp_path / 'claims.db'}")
    store.register("job", ["a"])
    assert store.claim("job", "dead", grace_s=60) == "a"
    with store.engine.begin() as db:  # its last heartbeat, silent_s ago
        db.execute(text(f"UPDATE memevo_work_units SET heartbeat = heartbeat - {silent_s}"))
    defaults = WorkerSettings(store="sqlite://")
    assert defaults.heartbeat_s * 4 <= defaults.grace_s  # several beats missed before a live worker loses its unit
    assert (store.claim("job", "heir", grace_s=defaults.grace_s) == "a") is taken_over
