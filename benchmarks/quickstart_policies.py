"""Which fixed memory settings the embedded model gains from on the quickstart's world, before any search.

Generates users of the world in experiments/quickstart.yaml (same knobs, another synth seed by default, so the
users the quickstart's search and its report run on stay unseen), runs the quickstart's seed agent and variants of
it (each a change of ``update_every``, ``short_term`` or the agent kind) through the episodes with likelihood
answers, and prints each policy's accuracy with best - seed's paired 95% t-interval over the users (what the
quickstart's headline reports), beside random, the no-memory baseline and the upper bound, and what each policy's episodes cost (tokens on the wire
and the idle seconds per user they stand for, as ``benchmarks/quickstart.py`` estimates them). A setting whose
interval lies above 0 over >= 40 questions is one a search can show; the quickstart's search space is chosen from
these lines.

Run: ``python benchmarks/quickstart_policies.py [--users 10] [--synth-seed 100] [--policies seed,st4]`` from the
repository root (uses the response cache; ``--no-cache`` to measure afresh).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.quickstart import IDLE_S_PER_COMPLETION_TOKEN, IDLE_S_PER_PROMPT_TOKEN, QUICKSTART  # noqa: E402
from benchmarks.wire_counts import WireClock  # noqa: E402
from memevo.agents.llm.hub import LLMHub  # noqa: E402
from memevo.agents.policy import MemoryPolicy  # noqa: E402
from memevo.agents.registry import build_agent  # noqa: E402
from memevo.environments.amemgym.simulators.factory import make_simulator  # noqa: E402
from memevo.environments.amemgym.synth import SynthConfig, synthesize  # noqa: E402
from memevo.environments.metrics import compute_no_memory, compute_upper_bound  # noqa: E402
from memevo.environments.metrics.baseline import random_baseline  # noqa: E402
from memevo.environments.runner import EpisodeConfig, run_episodes  # noqa: E402
from memevo.evolve.config import load_evolve_config  # noqa: E402
from memevo.evolve.stats import fmt, paired_test  # noqa: E402

VARIANTS: dict[str, dict[str, Any]] = {
    "seed": {},
    "ue2": {"update_every": 2},
    "ue1": {"update_every": 1},
    "st2": {"short_term": 2},
    "st4": {"short_term": 4},
    "st8": {"short_term": 8},
    "ue2-st4": {"update_every": 2, "short_term": 4},
    "ue8": {"update_every": 8},
    "native": {"kind": "native", "prompts": {}},
}
"""Changes to the quickstart's seed policy, by name."""


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--synth-seed", type=int, default=100, help="the world's seed (the quickstart's is 0)")
    parser.add_argument("--policies", default=",".join(VARIANTS),
                        help=f"comma-separated, of: {', '.join(VARIANTS)} (the seed always runs, first)")
    parser.add_argument("--config", type=Path, default=QUICKSTART)
    parser.add_argument("--no-cache", action="store_true")
    args = parser.parse_args()
    config = load_evolve_config(args.config)
    assert config.seed.policy is not None and config.data.synth is not None
    items = synthesize(SynthConfig(**{**config.data.synth, "users": args.users, "seed": args.synth_seed}))
    seed_policy: MemoryPolicy = config.seed.policy
    print(f"load average {os.getloadavg()[0]:.2f} at start; {len(items)} users, synth seed {args.synth_seed}",
          flush=True)
    episode = EpisodeConfig(rounds_init=config.episode.rounds_init, rounds_update=config.episode.rounds_update,
                            answer_mode="likelihood", max_concurrent_users=1)
    simulator = make_simulator(config.episode.simulator, 0)
    wire = WireClock()
    async with LLMHub(use_cache=not args.no_cache) as hub:
        llm = hub.client(seed_policy.llm)
        upper = await compute_upper_bound(llm, items, answer_mode="likelihood", max_concurrency=1)
        bare = await compute_no_memory(llm, items, answer_mode="likelihood", max_concurrency=1)
        grid = [(item, p, q) for item in items for p in range(len(item.periods)) for q in range(len(item.qas))]
        print(f"{len(grid)} questions: random {mean([random_baseline(*cell) for cell in grid]):.3f}, no memory "
              f"{mean([float(bare.correct(*cell)) for cell in grid]):.3f}, upper bound "
              f"{mean([upper.score(*cell) for cell in grid]):.3f}", flush=True)
        per_user: dict[str, dict[str, float]] = {}
        for name in ["seed", *(name for name in args.policies.split(",") if name != "seed")]:
            policy = seed_policy.model_copy(update=VARIANTS[name])
            started, before = time.monotonic(), wire.totals()
            episodes = await run_episodes(lambda policy=policy: build_agent(policy, hub.client(policy.llm)),
                                          items, simulator, episode)
            per_user[name] = {item.id: mean([float(qa.correct) for period in e.periods for qa in period.qa])
                              for item, e in zip(items, episodes, strict=True)}
            calls, prompt, completion = (now - then for now, then in zip(wire.totals(), before, strict=True))
            idle = prompt * IDLE_S_PER_PROMPT_TOKEN + completion * IDLE_S_PER_COMPLETION_TOKEN
            test = paired_test(per_user["seed"], per_user[name])
            print(f"{name}: accuracy {mean(list(per_user[name].values())):.3f}; - seed {fmt(test.mean_diff)} [{fmt(test.diff_low)}, "
                  f"{fmt(test.diff_high)}] over {len(items)} users; {time.monotonic() - started:.0f} s wall at load "
                  f"{os.getloadavg()[0]:.1f}, {calls} calls on the wire, {prompt} prompt + {completion} completion "
                  f"tokens, cache hits not counted (idle estimate {idle / len(items):.0f} s per user); per user "
                  + " ".join(f"{value:.3f}" for value in per_user[name].values()), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
