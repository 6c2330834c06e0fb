"""Cost of each environment per item and per question: LLM calls and prompt tokens by role (the agent's, the
user simulator's and the judge's apart), and wall time, against the fake endpoint (tests/doubles/fault_server.py).

Each replayed benchmark reads a small synthetic file in its real format (tests/doubles/benchmark_files.py, written
in a temporary folder; sizes are flags) and replays every item into a fresh agent; AMemGym plays a procedural world
of the same number of users and questions (2 update periods, so its questions are asked 3 times) on-policy with its
LLM user simulator. All go through memevo's gateway, the judge under its ``judge`` role. The endpoint answers
instantly (or after ``--latency-ms``) with a canned reply: "yes" to a judge's yes/no question, "3" to a rating,
option 1 to a multiple-choice question, a short sentence to everything else, so the calls and tokens are what the
environments *send*; tokens are the fault server's word counts. A second pass over the same data with a response
cache shows the judge served from it.

    python benchmarks/environments.py [--kinds native,rag] [--latency-ms 0] [--items 3] [--questions 8]
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

from memevo.agents.llm.accounting import Accounting, RoleUsage  # noqa: E402
from memevo.agents.llm.cache import ResponseCache  # noqa: E402
from memevo.agents.llm.config import LLMConfig  # noqa: E402
from memevo.agents.llm.gateway import LLMGateway  # noqa: E402
from memevo.agents.policy import MemoryPolicy  # noqa: E402
from memevo.agents.registry import build_agent  # noqa: E402
from memevo.environments.amemgym.data.io import save_items  # noqa: E402
from memevo.environments.amemgym.simulators.factory import make_simulator  # noqa: E402
from memevo.environments.amemgym.synth import SynthConfig, synthesize  # noqa: E402
from memevo.environments.registry import make_environment  # noqa: E402
from memevo.environments.runner import EpisodeConfig  # noqa: E402
from tests.doubles.benchmark_files import WRITERS  # noqa: E402
from tests.doubles.fault_server import FaultServer  # noqa: E402


def canned_reply(body: dict[str, Any]) -> str:
    prompt = body["messages"][-1]["content"]
    if "yes or no" in prompt:
        return "yes"
    if "Reply with the number only" in prompt:
        return "3"
    if '{"answer"' in prompt:
        return '{"answer": 1}'
    return "I remember that you moved to Lisbon in May."


AMEMGYM_PERIODS = 2
"""Update periods of the AMemGym world: its questions are asked after period 0 and after each update."""


def write_amemgym(folder: Path, items: int, questions: int) -> Path:
    """A procedural AMemGym world: ``items`` users, ``questions`` questions each."""
    path = folder / "amemgym.json"
    save_items(synthesize(SynthConfig(users=items, periods=AMEMGYM_PERIODS, questions=questions, seed=0)), path)
    return path


ENVIRONMENTS = {"amemgym": write_amemgym, **WRITERS}
ON_POLICY = {"amemgym"}
"""Played live with the environment's LLM user simulator (the others replay their recorded sessions)."""


async def run(name: str, path: Path, kind: str, gateway: LLMGateway) -> tuple[int, int, float]:
    environment = make_environment(name, EpisodeConfig(), judge=gateway)
    items = environment.load_items(path)
    started = time.perf_counter()
    questions = 0
    for number, item in enumerate(items):
        agent = build_agent(MemoryPolicy(kind=kind), gateway)
        simulator = make_simulator("llm", seed=number, llm=gateway) if name in ON_POLICY else None
        episode = await environment.run_item(agent, item, simulator)
        questions += sum(len(period.qa) for period in episode.periods)
    return len(items), questions, time.perf_counter() - started


def row(name: str, kind: str, items: int, questions: int, wall: float, usage: dict[str, RoleUsage]) -> str:
    agent, judge = usage.get("agent", RoleUsage()), usage.get("judge", RoleUsage())
    simulator = usage.get("user_simulator", RoleUsage())
    hits = f"{judge.cache_hits}/{judge.calls}" if judge.calls else "n/a (no judge)"
    sim = f"{simulator.calls / items:.1f}" if name in ON_POLICY else "n/a (replay)"
    return (f"{name:<17} {kind:<12} {items:>5} {questions:>5}  {agent.calls / items:>8.1f} {agent.calls / questions:>7.2f}"
            f"  {agent.prompt_tokens / items:>10,.0f} {agent.prompt_tokens / questions:>9,.0f}  {sim:>12}"
            f"  {judge.calls / questions:>7.2f} {hits:>14}  {wall / items * 1000:>8.0f} "
            f"{wall / questions * 1000:>7.1f}")


async def main(kinds: list[str], latency_s: float, items: int, questions: int) -> None:
    header = (f"{'environment':<17} {'agent':<12} {'items':>5} {'qs':>5}  {'calls/it':>8} {'calls/q':>7}"
              f"  {'tokens/it':>10} {'tokens/q':>9}  {'sim calls/it':>12}  {'judge/q':>7} {'judge hits':>14}"
              f"  {'ms/item':>8} {'ms/q':>7}")
    print("calls and tokens are the 'agent' role's; sim and judge columns the 'user_simulator' and 'judge' roles' own "
          f"calls; qs = questions asked (AMemGym asks its questions after each of its {AMEMGYM_PERIODS + 1} periods); "
          f"latency {latency_s * 1000:.0f} ms")
    print(header)
    with FaultServer(canned_reply, latency_s=latency_s) as server, tempfile.TemporaryDirectory() as folder:
        for name, writer in ENVIRONMENTS.items():
            path = writer(Path(folder), items, questions)
            for kind in kinds:
                for cached in (False, True):
                    accounting = Accounting()
                    cache = ResponseCache(Path(folder) / f"cache-{name}-{kind}") if cached else None
                    gateway = LLMGateway(LLMConfig(model="fault-server", max_concurrency=4, max_retries=0),
                                         base_url=server.url, cache=cache, accounting=accounting)
                    if cached:  # fill the cache, then measure the pass it serves
                        await run(name, path, kind, gateway)
                        accounting = Accounting()
                        gateway.accounting = accounting
                    counts = await run(name, path, kind, gateway)
                    await gateway.aclose()
                    label = f"{kind}+cache" if cached else kind
                    print(row(name, label, *counts, accounting.report().by_role))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kinds", default="native,rag", help="agent kinds, comma-separated")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--items", type=int, default=3, help="items per environment")
    parser.add_argument("--questions", type=int, default=8, help="questions per item")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.kinds.split(","), arguments.latency_ms / 1000, arguments.items, arguments.questions))
