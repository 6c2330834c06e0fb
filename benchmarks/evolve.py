"""Evolution benchmark: LLM calls saved by pruning, and the speed-up of concurrent candidate evaluation.

Everything runs through the real ``LLMHub``/gateway over HTTP against an in-process OpenAI-compatible
endpoint with injected latency (tests/doubles/fault_server.py) that answers like the category double
(tests/doubles/category_backend.py), so the agent's memory depends on its prompt and the proposer's
first sample helps while its other samples hurt (``mixed`` mode).

1. Pruning: the same evolution with the median pruner and without; agent calls (requests that reached
   the endpoint for the agent role) and the best validation score of each.
2. Concurrency: the same evolution (K candidates, tuned hyperparameters) with candidates evaluated one
   at a time and all at once; wall time of each.

Run: ``python benchmarks/evolve.py [--latency 0.02] [--concurrency-latency 0.1]`` from the repository root.
Measured 2026-11-26 on the shared 2-core box (load ~10): pruning saved 24% of agent calls (612 -> 468)
at equal best validation score (1.000); concurrency x1.76 (candidates) and x2.32 (candidates + users).
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memevo.agents.llm.hub import LLMHub  # noqa: E402
from memevo.environments.data.io import save_items  # noqa: E402
from memevo.evolve.config import parse_evolve_config  # noqa: E402
from memevo.evolve.loop import EvolutionResult, run_evolution  # noqa: E402
from tests.doubles.category_backend import CategoryBackend, category_world  # noqa: E402
from tests.doubles.fault_server import FaultServer  # noqa: E402


def config(data: Path, url: str, **overrides: Any) -> Any:
    llm = {"model": "category-double", "base_url": url, "max_concurrency": 32, "max_retries": 0}
    base: dict[str, Any] = {
        "name": "bench",
        "seed": {"policy": {"kind": "awi", "update_every": 2, "short_term": 0, "llm": llm,
                            "prompts": {"memory_types": "- commute (how the user gets to work)"}}},
        "components": ["memory_types"],
        "data": {"path": str(data)},
        "split": {"train": 3, "val": 2, "test": 1},
        "budget": {"generations": 2, "candidates": 3},
        "episode": {"rounds_init": 1, "rounds_update": 1, "user_concurrency": 1, "candidate_concurrency": 1},
        "llm": {"proposer": llm},
        "tracking": {"enabled": False},
        "upper_bound": False,
        "objective": "accuracy",
        "optuna": {"n_startup_trials": 1},
    }
    for key, value in overrides.items():
        base[key] = {**base.get(key, {}), **value}
    return parse_evolve_config(base)


def run(data: Path, latency: float, workdir: Path, name: str, **overrides: Any) -> tuple[EvolutionResult, int, float]:
    backend = CategoryBackend(category_world(8, 3), proposer_mode="mixed")  # same users as ``data``
    with FaultServer(backend.http_reply, latency_s=latency) as server, \
            LLMHub(cache_dir=workdir / f"cache-{name}", use_cache=False) as hub:
        started = time.perf_counter()
        result = run_evolution(config(data, server.url, **overrides), run_dir=workdir / name, hub=hub, resume=False)
        elapsed = time.perf_counter() - started
        agent_calls = hub.accounting.report().by_role["agent"].calls
    return result, agent_calls, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.02, help="Injected seconds per request (pruning part).")
    parser.add_argument("--concurrency-latency", type=float, default=0.1,
                        help="Injected seconds per request (concurrency part: latency-bound, like a remote API).")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        data = workdir / "data.json"
        save_items(category_world(8, 3), data)

        pruned, pruned_calls, _ = run(data, args.latency, workdir, "median", optuna={"pruner": "median"})
        full, full_calls, _ = run(data, args.latency, workdir, "none", optuna={"pruner": "none"})
        best = {label: r.history[-1].parent_val for label, r in (("median", pruned), ("none", full))}
        n_pruned = sum(len(g.pruned) for g in pruned.history)
        print(f"pruning: agent calls {full_calls} without -> {pruned_calls} with the median pruner "
              f"({1 - pruned_calls / full_calls:.0%} saved, {n_pruned} candidate(s) pruned); "
              f"best validation score {best['none']:.3f} vs {best['median']:.3f}")

        tuned = {"hyperparameters": {"update_every": {"choices": [1, 2]}, "short_term": {"choices": [0, 2]}},
                 "optuna": {"pruner": "none"}, "budget": {"generations": 1, "candidates": 3},
                 "split": {"train": 2, "val": 1, "test": 1}, "episode": {"max_periods": 2},
                 "strategy": {"first_accepted": False}}  # a generation's candidates at once
        latency = args.concurrency_latency
        seq, _, sequential = run(data, latency, workdir, "seq", **tuned)
        _, _, candidates = run(data, latency, workdir, "cand", **{**tuned, "episode": {
            "max_periods": 2, "candidate_concurrency": 3}})
        _, _, everything = run(data, latency, workdir, "all", **{**tuned, "episode": {
            "max_periods": 2, "candidate_concurrency": 3, "user_concurrency": 2}})
        n_candidates = len(seq.history[1].train)
        print(f"concurrency ({latency * 1000:.0f} ms per request, 1 generation, {n_candidates} candidates, "
              f"seed and test evaluations included): sequential {sequential:.1f} s; candidates concurrent "
              f"{candidates:.1f} s (x{sequential / candidates:.2f}); candidates and users concurrent "
              f"{everything:.1f} s (x{sequential / everything:.2f})")


if __name__ == "__main__":
    main()
