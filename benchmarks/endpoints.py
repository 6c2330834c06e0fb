"""Endpoints benchmark: throughput of one model served by 1 versus 2 endpoints of equal latency.

Each endpoint is a latency double (tests/doubles/latency_server.py) taking ``--concurrency`` requests at once, the
limit memevo keeps per endpoint; the same ``--calls`` requests go through one hub, once to one endpoint and once
to two. Prints calls per second for each, their ratio, each endpoint's share and whether the replies are equal.

    python benchmarks/endpoints.py [--calls 200] [--latency-ms 50] [--concurrency 4]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.doubles when run as a script

from memevo.agents.llm.config import LLMConfig  # noqa: E402
from memevo.agents.llm.hub import LLMHub  # noqa: E402
from tests.doubles.latency_server import LatencyServer  # noqa: E402

MODEL = "bench-model"


def complete(body: dict[str, Any]) -> dict[str, Any]:
    text = "echo: " + body["messages"][-1]["content"]
    return {"model": body["model"], "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                                 "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 4, "completion_tokens": 4, "total_tokens": 8}}


async def run(config: LLMConfig, calls: int, cache_dir: Path) -> tuple[float, list[str], dict[str, tuple[int, int]]]:
    """Seconds for ``calls`` requests at once, their replies, and each endpoint's (served, failed)."""
    async with LLMHub(cache_dir=cache_dir, use_cache=False) as hub:
        gateway = hub.client(config)
        started = time.perf_counter()
        replies = await asyncio.gather(*(gateway.chat([{"role": "user", "content": f"question {n}"}], role="agent")
                                         for n in range(calls)))
        elapsed = time.perf_counter() - started
        return elapsed, [reply.text for reply in replies], hub.endpoint_counts()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    latency = args.latency_ms / 1000
    with (tempfile.TemporaryDirectory() as cache, LatencyServer(complete, latency_s=latency) as first,
          LatencyServer(complete, latency_s=latency) as second):
        common = {"model": MODEL, "base_url": first.url, "max_concurrency": args.concurrency, "max_retries": 0}
        one_s, one_replies, _ = asyncio.run(run(LLMConfig(**common), args.calls, Path(cache)))
        two_s, two_replies, counts = asyncio.run(
            run(LLMConfig(**common, extra_base_urls=(second.url,)), args.calls, Path(cache)))
        shares = [counts[server.url][0] for server in (first, second)]
    print(f"{args.calls} calls, {args.latency_ms:g} ms latency, {args.concurrency} in flight per endpoint")
    print(f"1 endpoint : {one_s:6.2f} s  {args.calls / one_s:7.1f} calls/s")
    print(f"2 endpoints: {two_s:6.2f} s  {args.calls / two_s:7.1f} calls/s  "
          f"(served {shares[0]} + {shares[1]})")
    print(f"ratio 2/1  : {one_s / two_s:.2f}x   replies equal: {one_replies == two_replies}")


if __name__ == "__main__":
    main()
