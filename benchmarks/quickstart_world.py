"""Which procedural world lets the embedded model show memory: upper bound, random, no-memory and seed accuracy.

For each candidate world (questions per user, answer options, state variables per question) it generates users
until there are at least ``--min-questions`` (user, period, question) cells, then asks the embedded
SmolLM2-135M-Instruct, with likelihood answers: the upper bound (the true state written into the question), the
no-memory baseline (the question alone), and optionally the quickstart's seed agent run through the episodes
(``--seed-agent``). Each accuracy comes with a 95% Wilson interval over the cells; random is the expected accuracy
of a uniform guess. A world is good for the quickstart when the upper bound beats random by ``--target`` and the
no-memory baseline sits clearly below the upper bound.

Run: ``python benchmarks/quickstart_world.py [--seed-agent] [--worlds a,b]`` from the repository root (uses the
response cache: ``--no-cache`` to measure afresh). Figures quoted in experiments/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.wire_counts import WireClock, WireKind  # noqa: E402
from memevo.agents.llm.config import LLMConfig  # noqa: E402
from memevo.agents.llm.hub import LLMHub  # noqa: E402
from memevo.agents.policy import MemoryPolicy  # noqa: E402
from memevo.agents.registry import build_agent  # noqa: E402
from memevo.environments.amemgym.data.models import Item  # noqa: E402
from memevo.environments.amemgym.simulators.factory import make_simulator  # noqa: E402
from memevo.environments.amemgym.synth import SynthConfig, synthesize  # noqa: E402
from memevo.environments.metrics import compute_no_memory, compute_upper_bound  # noqa: E402
from memevo.environments.metrics.baseline import random_baseline  # noqa: E402
from memevo.environments.runner import EpisodeConfig, run_episodes  # noqa: E402

WORLDS: dict[str, dict[str, Any]] = {
    "one-state-4": {"questions": 5, "states_per_question": 1, "choices_per_state": 4, "min_state_variants": 4},
    "one-state-3": {"questions": 5, "states_per_question": 1, "choices_per_state": 3, "min_state_variants": 3},
    "one-state-2": {"questions": 5, "states_per_question": 1, "choices_per_state": 2, "min_state_variants": 2},
    "two-states-4": {"questions": 5, "states_per_question": 2, "choices_per_state": 2, "min_state_variants": 4},
    "one-state-4-named": {"questions": 5, "states_per_question": 1, "choices_per_state": 4, "min_state_variants": 4,
                          "answers_name_values": True},
    "one-state-4-named-q4": {"questions": 4, "states_per_question": 1, "choices_per_state": 4,
                             "min_state_variants": 4, "answers_name_values": True},
    "one-state-3-named": {"questions": 5, "states_per_question": 1, "choices_per_state": 3, "min_state_variants": 3,
                          "answers_name_values": True},
    "two-states-4-named": {"questions": 5, "states_per_question": 2, "choices_per_state": 2, "min_state_variants": 4,
                           "answers_name_values": True},
}
"""Candidate worlds: one period of updates after the first, two changes per period, as the quickstart plays."""
COMMON = {"periods": 1, "changes_per_period": 2}
Z95 = 1.959963984540054


def wilson(successes: float, n: int) -> tuple[float, float]:
    """Two-sided 95% Wilson score interval of a proportion."""
    p = successes / n
    centre = (p + Z95 * Z95 / (2 * n)) / (1 + Z95 * Z95 / n)
    spread = Z95 * math.sqrt(p * (1 - p) / n + Z95 * Z95 / (4 * n * n)) / (1 + Z95 * Z95 / n)
    return max(0.0, centre - spread), min(1.0, centre + spread)


def cells(items: list[Item]) -> list[tuple[Item, int, int]]:
    return [(item, period, q) for item in items for period in range(len(item.periods)) for q in range(len(item.qas))]


def users_for(world: dict[str, Any], min_questions: int) -> int:
    per_user = world["questions"] * (COMMON["periods"] + 1)
    return math.ceil(min_questions / per_user)


def seed_policy(reply_max_tokens: int | None = None, write_max_tokens: int | None = None,
                write_conversation: str | None = None) -> MemoryPolicy:
    """The quickstart's seed agent (experiments/quickstart.yaml), with its reply or note-write cap or the way its
    write prompt shows the conversation replaced when given (to choose them by what they cost and what the seed
    then scores)."""
    import yaml

    config = yaml.safe_load((Path(__file__).resolve().parents[1] / "experiments" / "quickstart.yaml").read_text())
    policy = MemoryPolicy.model_validate(config["seed"]["policy"])
    if write_max_tokens is not None:
        policy = policy.model_copy(update={"write_max_tokens": write_max_tokens})
    if write_conversation is not None:
        policy = policy.model_copy(update={"write_conversation": write_conversation})
    if reply_max_tokens is not None:
        policy = policy.model_copy(update={"llm": policy.llm.model_copy(update={"max_tokens": reply_max_tokens})})
    return policy


def line(name: str, values: list[bool]) -> str:
    low, high = wilson(sum(values), len(values))
    return f"{name} {sum(values) / len(values):.3f} [{low:.3f}, {high:.3f}]"


def seed_wire_line(kind: str, counts: WireKind | None, before: tuple[int, int, int, int] | None) -> str:
    """The seed agent's requests of one kind that reached the model (cache hits never do)."""
    name = {"json": "note writes", "reply": "replies"}[kind]
    if counts is None:
        return f"{name}: none reached the model"
    calls, prompt, completion, at_cap = (now - then for now, then in zip(
        (counts.calls, counts.prompt_tokens, counts.completion_tokens, counts.at_cap), before or (0, 0, 0, 0),
        strict=True))
    if not calls:
        return f"{name}: none reached the model (all from the response cache)"
    return (f"{name}: {calls} on the wire, prompt {prompt}, completion {completion} "
            f"({completion / calls:.1f} per call), {at_cap} at the cap")


async def measure(hub: LLMHub, name: str, world: dict[str, Any], args: argparse.Namespace,
                  wire: WireClock) -> dict[str, Any]:
    synth = SynthConfig(**COMMON, **world, users=users_for(world, args.min_questions), seed=args.seed)
    items = synthesize(synth)
    llm = hub.client(LLMConfig(model=args.model))
    started = time.monotonic()
    upper = await compute_upper_bound(llm, items, answer_mode="likelihood", max_concurrency=1)
    baseline = await compute_no_memory(llm, items, answer_mode="likelihood", max_concurrency=1)
    grid = cells(items)
    ub = [upper.score(item, period, q) == 1.0 for item, period, q in grid]
    nm = [baseline.correct(item, period, q) for item, period, q in grid]
    rand = sum(random_baseline(item, period, q) for item, period, q in grid) / len(grid)
    result: dict[str, Any] = {"world": name, "n": len(grid), "random": rand, "ub": sum(ub) / len(ub),
                              "margin": sum(ub) / len(ub) - rand}
    text = [f"{name}: {len(grid)} questions ({synth.users} users), random {rand:.3f}", line("upper bound", ub),
            line("no-memory", nm), f"UB - random {result['margin']:+.3f}"]
    if args.seed_agent:
        policy = seed_policy(args.reply_max_tokens, args.write_max_tokens, args.write_conversation)
        before = {kind: (counts.calls, counts.prompt_tokens, counts.completion_tokens, counts.at_cap)
                  for kind, counts in wire.kinds.items()}
        config = EpisodeConfig(rounds_init=1, rounds_update=1, answer_mode="likelihood", max_concurrent_users=1)
        simulator = make_simulator("template", 0)
        episodes = await run_episodes(lambda: build_agent(policy, hub.client(policy.llm)), items, simulator, config)
        seed = [qa.correct for episode in episodes for period in episode.periods for qa in period.qa]
        text.append(line(f"seed (caps: reply {policy.llm.max_tokens}, note write "
                         f"{policy.write_max_tokens or policy.llm.max_tokens}; conversation as "
                         f"{policy.write_conversation})", seed))
        text += [seed_wire_line(kind, wire.kinds.get(kind), before.get(kind)) for kind in ("json", "reply")]
    text.append(f"wall {time.monotonic() - started:.0f} s")
    print("  ".join(text), flush=True)
    return result


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worlds", default=",".join(WORLDS), help=f"comma-separated, of: {', '.join(WORLDS)}")
    parser.add_argument("--min-questions", type=int, default=40)
    parser.add_argument("--target", type=float, default=0.25, help="upper bound minus random to reach")
    parser.add_argument("--seed", type=int, default=0, help="the synth seed")
    parser.add_argument("--seed-agent", action="store_true", help="also run the quickstart's seed agent")
    parser.add_argument("--reply-max-tokens", type=int, help="the seed agent's reply cap (default: the quickstart's)")
    parser.add_argument("--write-max-tokens", type=int, help="the seed agent's note-write cap (default: the quickstart's)")
    parser.add_argument("--write-conversation", choices=["json", "lines"],
                        help="how the seed's write prompt shows the conversation (default: the quickstart's)")
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--no-cache", action="store_true")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores at start", flush=True)
    async with LLMHub(use_cache=not args.no_cache) as hub:
        wire = WireClock()
        results = [await measure(hub, name, WORLDS[name], args, wire) for name in args.worlds.split(",")]
    best = max(results, key=lambda result: result["margin"])
    verdict = "reaches" if best["margin"] >= args.target else "does not reach"
    print(f"best: {best['world']} (UB - random {best['margin']:+.3f} over {best['n']} questions) {verdict} the "
          f"target {args.target:+.2f}; load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    asyncio.run(main())
