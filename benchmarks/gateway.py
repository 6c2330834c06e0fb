"""Gateway benchmark: speed-up from concurrency, the gateway's own overhead per call, and its HTTP client's.

Runs against the fault server (tests/doubles/fault_server.py), so no model is needed:
1. N calls with injected latency at max_concurrency 1 versus 16 -> the speed-up ratio;
2. at zero latency, sequential calls through a raw AsyncOpenAI client versus the gateway (without
   cache, and with a cache: miss-and-write, then hits) -> overhead per call in milliseconds;
3. the HTTP client alone, memevo's ``JSONTransport`` versus ``openai.AsyncOpenAI`` (typed ``create``, and its
   untyped ``post``), one agent-sized chat request at a time and 16 at once, against the server run as a separate
   process -> wall ms per call, requests per second, and the client process's CPU ms per call.

    python benchmarks/gateway.py [--calls 64] [--latency-ms 50] [--overhead-calls 300] [--client-calls 400]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
from openai import AsyncOpenAI

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.doubles when run as a script

from memevo.agents.llm.accounting import Accounting  # noqa: E402
from memevo.agents.llm.cache import ResponseCache  # noqa: E402
from memevo.agents.llm.config import LLMConfig  # noqa: E402
from memevo.agents.llm.gateway import LLMGateway  # noqa: E402
from memevo.agents.llm.transport import JSONTransport  # noqa: E402
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


def agent_messages() -> list[dict[str, str]]:
    """A memory agent's request: a system prompt with memories, then 16 turns of conversation."""
    system = "You are a personal assistant with a memory of the user. " + "Memory: the user likes hiking. " * 50
    turns = [{"role": "user" if index % 2 == 0 else "assistant", "content": f"turn {index}: " + "some words " * 30}
             for index in range(16)]
    return [{"role": "system", "content": system}, *turns]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def server_process(port: int) -> subprocess.Popen[bytes]:
    """The fault server in a process of its own, so this process's CPU time is the client's alone."""
    root = Path(__file__).resolve().parents[1]
    process = subprocess.Popen([sys.executable, "-m", "tests.doubles.fault_server", "--port", str(port)], cwd=root)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1.0)
            return process
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("the fault server did not start")


async def run_calls(call: Callable[[], Awaitable[object]], calls: int, width: int) -> tuple[float, float]:
    """Wall and CPU seconds of ``calls`` calls, ``width`` at a time."""
    slots = asyncio.Semaphore(width)

    async def one() -> None:
        async with slots:
            await call()

    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one() for _ in range(calls)))
    return time.perf_counter() - wall, time.process_time() - cpu


async def clients(calls: int, rounds: int) -> None:
    """Best of ``rounds`` per client and width, the clients alternating: the machine is shared and noisy."""
    port = free_port()
    process = server_process(port)
    url = f"http://127.0.0.1:{port}/v1"
    messages = agent_messages()
    payload = {"model": MODEL, "messages": messages, "temperature": 0.0, "max_tokens": 512}
    body = json.dumps(payload).encode()
    try:
        for width in (1, 16):
            transport = JSONTransport(url, api_key=lambda: "sk-bench", timeout_s=30, max_connections=width,
                                      home_loop=asyncio.get_running_loop())
            sdk = AsyncOpenAI(base_url=url, api_key="sk-bench", max_retries=0, http_client=httpx.AsyncClient(
                limits=httpx.Limits(max_connections=width, max_keepalive_connections=width)))
            runs: dict[str, Callable[[], Awaitable[object]]] = {
                "memevo JSONTransport": lambda: transport.post("chat/completions", body),
                "openai create": lambda: sdk.chat.completions.create(model=MODEL, messages=messages,  # type: ignore[arg-type]
                                                                     temperature=0.0, max_tokens=512),
                "openai post": lambda: sdk.post("/chat/completions", body=payload, cast_to=httpx.Response),
            }
            for call in runs.values():
                await run_calls(call, 20, width)  # warm up connections and code paths
            best = {name: (float("inf"), float("inf")) for name in runs}
            for _ in range(rounds):
                for name, call in runs.items():
                    wall, cpu = await run_calls(call, calls, width)
                    best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
            for name, (wall, cpu) in best.items():
                print(f"{name:22s} {width:2d} at once, {calls} calls, best of {rounds}: {1000 * wall / calls:.2f} ms "
                      f"per call, {calls / wall:.0f} requests/s, client CPU {1000 * cpu / calls:.2f} ms per call")
            await transport.aclose()
            await sdk.close()
    finally:
        process.kill()
        process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--overhead-calls", type=int, default=200)
    parser.add_argument("--client-calls", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only-clients", action="store_true", help="Run the third part only.")
    args = parser.parse_args()
    if not args.only_clients:
        asyncio.run(speedup(args.calls, args.latency_ms / 1000))
        asyncio.run(overhead(args.overhead_calls, args.rounds))
    asyncio.run(clients(args.client_calls, args.rounds))


if __name__ == "__main__":
    main()
