"""Strategy benchmark: elitist+mean against pareto+paired, each with the minibatch gate off and on.

The world is the category double (tests/doubles/category_backend.py, a TEST DOUBLE, not a model): the
memory-types section decides which facts reach memory, so the write prompt measurably matters. The
proposer is in ``step`` mode (each proposal adds one category seen in the evidence or, on later samples,
may drop one, so some proposals hurt) and every agent answer is replaced by a random option with
probability ``--noise`` (seeded, so reruns and resumes see the same noise): validation is noisy.

Per seed (a new world, split and noise for each) and arm, one evolution runs in-process. Reported per arm:

- best test score: the memory score of the run's best candidate on the test users, measured WITHOUT
  answer noise (a fresh noise-free evaluation with its own upper bound), i.e. its real quality;
- agent calls to reach it: agent-role calls the run had spent when the generation that accepted its
  best candidate ended (``generations/gen_XXX/spend.json``; the seed's generation 0 when nothing won);
- agent calls in all: the whole run's agent calls, test scoring of seed and best included;
- false acceptances: accepted candidates whose noise-free test score is below their parent's.

Run: ``python benchmarks/strategies.py [--seeds 10] [--noise 0.4] [--val-users 2] [--generations 4]``
from the repository root (about a minute per seed on a shared 2-core machine).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean, pstdev
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memevo.agents.registry import build_agent  # noqa: E402
from memevo.environments.data.io import save_items  # noqa: E402
from memevo.environments.data.models import Item  # noqa: E402
from memevo.environments.metrics import compute_upper_bound  # noqa: E402
from memevo.environments.simulators.factory import make_simulator  # noqa: E402
from memevo.evolve.candidates import Candidate  # noqa: E402
from memevo.evolve.config import EvolveConfig, parse_evolve_config  # noqa: E402
from memevo.evolve.evaluation import Evaluator  # noqa: E402
from memevo.evolve.loop import run_evolution  # noqa: E402
from memevo.evolve.records import EvolutionResult, GenerationPlan  # noqa: E402
from memevo.evolve.runtime import episode_config, make_split  # noqa: E402
from tests.doubles.category_backend import CategoryBackend, CategoryHub, category_world  # noqa: E402

ARMS: dict[str, dict[str, Any]] = {
    "elitist+mean": {"parents": "elitist", "acceptance": "mean"},
    "elitist+mean+gate": {"parents": "elitist", "acceptance": "mean", "minibatch": 1},
    "elitist+paired": {"parents": "elitist", "acceptance": "paired"},
    "pareto+paired": {"parents": "pareto", "acceptance": "paired"},
    "pareto+paired+gate": {"parents": "pareto", "acceptance": "paired", "minibatch": 1},
}


@dataclass
class ArmRun:
    best_test: float
    calls_to_best: int
    calls_total: int
    accepted: int
    false_accepted: int


def make_config(data: Path, seed: int, generations: int, val_users: int, strategy: dict[str, Any]) -> EvolveConfig:
    return parse_evolve_config(
        {
            "name": "strategies",
            "seed": {
                "policy": {
                    "kind": "awi",
                    "update_every": 2,
                    "short_term": 0,
                    "prompts": {"memory_types": "- commute (how the user gets to work)"},
                }
            },
            "components": ["memory_types"],
            "data": {"path": str(data)},
            "split": {"train": 3, "val": val_users, "test": 4, "seed": seed},
            "budget": {"generations": generations, "candidates": 3},
            "episode": {"rounds_init": 1, "rounds_update": 1, "user_concurrency": 1, "candidate_concurrency": 1},
            "tracking": {"enabled": False},
            "optuna": {"seed": seed},
            "strategy": {"confidence": 0.8, **strategy},
        }
    )


def agent_calls(path: Path) -> int:
    return int(json.loads(path.read_text())["by_role"].get("agent", {}).get("calls", 0))


async def clean_test_scores(
    config: EvolveConfig, items: list[Item], candidates: list[Candidate], folder: Path
) -> dict[str, float]:
    """Noise-free memory score on the test users of each candidate (its real quality)."""
    backend = CategoryBackend(items)
    test_ids = make_split(items, config).test
    test_items = [item for item in items if item.id in test_ids]
    evaluator = Evaluator(
        root=folder,
        items=items,
        make_agent=lambda policy: build_agent(policy, backend),
        simulator=make_simulator("template", config.split.seed),
        episode_config=episode_config(config, candidates[0].policy),
        objective="memory_score",
    )
    evaluator.upper_bound = await compute_upper_bound(backend, test_items, constrained=True, seed=config.split.seed)
    return {c.id: (await evaluator.evaluate(c, "test", test_ids)).score for c in candidates}


def run_arm(workdir: Path, seed: int, arm: str, noise: float, generations: int, val_users: int) -> ArmRun:
    items = category_world(10, 3, seed=seed)
    data = workdir / f"data-{seed}.json"
    if not data.exists():
        save_items(items, data)
    config = make_config(data, seed, generations, val_users, ARMS[arm])
    run_dir = workdir / f"{arm}-{seed}".replace(" ", "").replace(",", "_").replace("+", "_")
    backend = CategoryBackend(items, proposer_mode="step", answer_noise=noise, seed=seed)
    result: EvolutionResult = run_evolution(config, run_dir=run_dir, hub=CategoryHub(backend), resume=False)
    plans = [
        GenerationPlan.model_validate_json(path.read_text())
        for path in sorted((run_dir / "generations").glob("gen_*/plan.json"))
    ]
    known = {result.seed.id: result.seed} | {c.id: c for plan in plans for c in plan.candidates}
    by_generation = {(plan.generation, c.id): c for plan in plans for c in plan.candidates}
    accepted = [by_generation[o.generation, i] for o in result.history[1:] for i in o.accepted_ids]
    needed = (
        {result.best.id, result.seed.id} | {c.id for c in accepted} | {c.parent_id for c in accepted if c.parent_id}
    )
    clean = asyncio.run(clean_test_scores(config, items, [known[i] for i in sorted(needed)], run_dir / "clean"))
    won = next((o.generation for o in result.history if result.best.id in o.accepted_ids), 0)
    return ArmRun(
        best_test=clean[result.best.id],
        calls_to_best=agent_calls(run_dir / "generations" / f"gen_{won:03d}" / "spend.json"),
        calls_total=result.usage.by_role["agent"].calls,
        accepted=len(accepted),
        false_accepted=sum(clean[c.id] < clean[c.parent_id or ""] for c in accepted),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--noise", type=float, default=0.4, help="Share of agent answers replaced at random.")
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--val-users", type=int, default=2)
    parser.add_argument("--arms", default=",".join(ARMS), help="Comma-separated arm names (default: all).")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    runs: dict[str, list[ArmRun]] = {arm: [] for arm in args.arms.split(",")}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.seeds):
            for arm in runs:
                runs[arm].append(run_arm(Path(tmp), seed, arm, args.noise, args.generations, args.val_users))
            print(f"seed {seed} done", file=sys.stderr)
    print(
        f"{args.seeds} seeds, answer noise {args.noise}, {args.generations} generations x 3 candidates, "
        f"train/val/test users 3/{args.val_users}/4; means over seeds (sd)\n"
    )
    print(
        "| arm | best test memory score (noise-free) | agent calls to reach it | agent calls in all "
        "| accepted | false acceptances |"
    )
    print("|---|---|---|---|---|---|")
    for arm, rows in runs.items():
        best = [r.best_test for r in rows]
        to_best = [r.calls_to_best for r in rows]
        accepted = sum(r.accepted for r in rows)
        false = sum(r.false_accepted for r in rows)
        share = f"{false}/{accepted} = {false / accepted:.0%}" if accepted else "0/0"
        print(
            f"| {arm} | {fmean(best):.3f} ({pstdev(best):.3f}) | {fmean(to_best):.0f} ({pstdev(to_best):.0f}) "
            f"| {fmean(r.calls_total for r in rows):.0f} | {accepted} | {share} |"
        )


if __name__ == "__main__":
    main()
