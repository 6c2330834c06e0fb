"""Gateway benchmark: speed-up from concurrency, and the gateway's own overhead per call.

Runs against the in-process fault server (tests/doubles/fault_server.py), so no model is needed:
1. N calls with injected latency at max_concurrency 1 versus 16 -> the speed-up ratio;
2. at zero latency, sequential calls through a raw AsyncOpenAI client versus the gateway (without
   cache, and with a cache: miss-and-write, then hits) -> overhead per call in milliseconds.

    python benchmarks/gateway.py [--calls 64] [--latency-ms 50] [--overhead-calls 300]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

from openai import AsyncOpenAI

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.doubles when run as a script

from memevo.agents.llm.accounting import Accounting  # noqa: E402
from memevo.agents.llm.cache import ResponseCache  # noqa: E402
from memevo.agents.llm.config import LLMConfig  # noqa: E402
from memevo.agents.llm.gateway import LLMGateway  # noqa: E402
from tests.doubles.fault_server import FaultServer  # noqa: E402

MODEL = "bench-model"


def prompt(index: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"question number {index}"}]


def gateway_for(url: str, concurrency: int, cache: ResponseCache | None = None) -> LLMGateway:
    config = LLMConfig(model=MODEL, max_concurrency=concurrency, max_retries=0)
    return LLMGateway(config, base_url=url, cache=cache, accounting=Accounting())


async def timed_gather(gateway: LLMGateway, calls: int) -> float:
    started = time.perf_counter()
    await asyncio.gather(*(gateway.chat(prompt(i), role="agent") for i in range(calls)))
    elapsed = time.perf_counter() - started
    await gateway.aclose()
    return elapsed


async def sequential_gateway(gateway: LLMGateway, calls: int, offset: int) -> float:
    started = time.perf_counter()
    for index in range(calls):
        await gateway.chat(prompt(offset + index), role="agent")
    return time.perf_counter() - started


async def sequential_raw(client: AsyncOpenAI, calls: int, offset: int) -> float:
    started = time.perf_counter()
    for index in range(calls):
        await client.chat.completions.create(
            model=MODEL, messages=prompt(offset + index), temperature=0.0, max_tokens=512
        )
    return time.perf_counter() - started


async def speedup(calls: int, latency_s: float) -> None:
    with FaultServer(latency_s=latency_s) as server:
        serial = await timed_gather(gateway_for(server.url, 1), calls)
        parallel = await timed_gather(gateway_for(server.url, 16), calls)
        print(f"{calls} calls at {latency_s * 1000:.0f} ms latency: concurrency 1 {serial:.2f}s, "
              f"concurrency 16 {parallel:.2f}s, speed-up x{serial / parallel:.1f} (peak in flight {server.peak_in_flight})")


async def overhead(calls: int, rounds: int) -> None:
    """Alternate raw and gateway rounds and keep each one's best round: the machine is shared and noisy."""
    with FaultServer() as server, tempfile.TemporaryDirectory() as folder:
        raw = AsyncOpenAI(base_url=server.url, api_key="sk-bench", max_retries=0)
        plain = gateway_for(server.url, 16)
        cached = gateway_for(server.url, 16, ResponseCache(Path(folder)))
        await sequential_raw(raw, 20, 0)  # warm up connections and code paths
        await sequential_gateway(plain, 20, 0)
        best = {"raw": float("inf"), "gateway": float("inf"), "miss": float("inf"), "hit": float("inf")}
        for round_index in range(rounds):
            offset = (round_index + 1) * 1_000_000
            times = {
                "raw": await sequential_raw(raw, calls, offset),
                "gateway": await sequential_gateway(plain, calls, offset),
                "miss": await sequential_gateway(cached, calls, offset),
                "hit": await sequential_gateway(cached, calls, offset),
            }
            best = {name: min(best[name], 1000 * seconds / calls) for name, seconds in times.items()}
        print(f"zero latency, {calls} sequential calls, best of {rounds} rounds, ms per call: "
              f"raw openai {best['raw']:.2f}, gateway no cache {best['gateway']:.2f} "
              f"(overhead {best['gateway'] - best['raw']:+.2f}), gateway cache miss+write {best['miss']:.2f} "
              f"(overhead {best['miss'] - best['raw']:+.2f}), cache hit {best['hit']:.3f}")
        await raw.close()
        await plain.aclose()
        await cached.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--overhead-calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(speedup(args.calls, args.latency_ms / 1000))
    asyncio.run(overhead(args.overhead_calls, args.rounds))


if __name__ == "__main__":
    main()
