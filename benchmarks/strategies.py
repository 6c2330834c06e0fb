"""Strategy benchmark: parent selection, acceptance and the minibatch gate, on a test-double world.

The world is a weighted category world of the category double (tests/doubles/category_backend.py, a
TEST DOUBLE, not a model): a fact reaches memory only when the memory-types section names its category,
and the categories are asked about by different numbers of questions per period (``QUESTIONS``: 10 in
all, as in AMemGym). The seed names two categories of one question each. The proposer is in ``step``
mode: each proposal adds one category seen in the evidence (a gain of one to three questions per period)
or, on later samples, drops one the text names (a loss of one to three), so helpful proposals vary in
size and the commonest harm, one question in ten, is small against the noise: every agent answer is
replaced by a random option with probability ``--noise`` (seeded, so reruns and resumes see the same
noise). A mean-only acceptance on two validation users then does keep worse candidates at times.

Per seed (a new world, split and noise for each) and arm, one evolution runs in-process. Reported per arm:

- best test score: the memory score of the run's best candidate on the test users, measured WITHOUT
  answer noise (a fresh noise-free evaluation with its own upper bound), i.e. its real quality;
- agent calls to reach it: agent-role calls the run had spent when the generation that accepted its
  best candidate ended (``generations/gen_XXX/spend.json``; the seed's generation 0 when nothing won);
- agent calls in all: the whole run's agent calls, test scoring of seed and best included;
- false acceptances: accepted candidates whose noise-free test score is below their parent's;
- agent calls to reach the reference's best (``--reference``, the earlier default): on each seed, the calls spent
  when the run's best first scored at least the reference arm's best on that seed (noise-free, on test), a
  time-to-target measure that does not penalise an arm for improving further later.

An arm is named by ``+``-joined words: ``elitist`` or ``pareto`` (parents), ``mean`` or ``paired``
(acceptance), ``c0.8`` (paired confidence), ``e0.02`` (paired minimum effect), ``gate1`` (a minibatch of
1 train user; ``gate0``: none), ``tfirst`` or ``vfirst`` (``strategy.order``: train users
first, the minibatch a gate before the full evaluation, so ``tfirst+gate3`` is a train gate before
validation; or validation first, the minibatch the train users a candidate preferred on validation is
checked on, all of them with ``gate0``), ``nocomplete`` (``strategy.complete_parent_train: false``), ``every``
(``strategy.first_accepted: false``: a generation's candidates all on validation, not one at a time until
one is kept); unnamed settings
keep EvolveConfig's defaults. Tune on other seeds than the ones you report (``--first-seed``): a setting
chosen on the reported worlds would be fitted to their noise.

Run: ``python benchmarks/strategies.py [--seeds 10] [--first-seed 0] [--noise 0.4] [--jobs 2] [--arms A,B]``
from the repository root (about half a minute per seed and arm on a shared 2-core machine).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
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

QUESTIONS = {"commute": 1, "instrument": 3, "beverage": 2, "genre": 1, "plant": 2, "footwear": 1}
"""Questions per period about each category."""
SEED_TYPES = "- commute (how the user gets to work)\n- footwear (the shoes the user wears)"
"""The seed names two categories of one question each, so dropping either is a small harm."""
ARMS = [
    "elitist+mean",
    "elitist+mean+tfirst+gate0",
    "elitist+mean+every",
    "elitist+mean+tfirst+gate3",
    "pareto+mean+tfirst+gate3",
    "pareto+mean",
]
"""The arms run by default: EvolveConfig's default first (validation first, one candidate at a time until one is
kept, a minibatch of 2 train users), then the earlier defaults (train first with no gate; validation first with
every candidate on validation), the train gates, Pareto parents."""
REFERENCE = "elitist+mean+tfirst+gate0"
"""The earlier default (train first, no gate): the arm whose best score the others are timed to reach."""


def arm_strategy(arm: str) -> dict[str, Any]:
    """The ``strategy`` section an arm name stands for (see the module docstring)."""
    strategy: dict[str, Any] = {}
    for word in arm.split("+"):
        if word in ("elitist", "pareto"):
            strategy["parents"] = word
        elif word in ("mean", "paired"):
            strategy["acceptance"] = word
        elif word in ("vfirst", "tfirst"):
            strategy["order"] = "validation_first" if word == "vfirst" else "train_first"
        elif word.startswith("gate"):
            strategy["minibatch"] = int(word.removeprefix("gate")) or None
        elif word == "nocomplete":
            strategy["complete_parent_train"] = False
        elif word == "every":
            strategy["first_accepted"] = False
        elif word[:1] == "c":
            strategy["confidence"] = float(word[1:])
        elif word[:1] == "e":
            strategy["min_effect"] = float(word[1:])
        else:
            raise SystemExit(f"--arms: unknown word '{word}' in arm '{arm}'")
    return strategy


@dataclass
class ArmRun:
    best_test: float
    calls_to_best: int
    calls_total: int
    accepted: int
    false_accepted: int
    progress: list[tuple[int, float]]
    """Per generation: agent calls spent when it ended, and the noise-free test score of the run's best then."""

    def calls_to_reach(self, target: float) -> int | None:
        """Agent calls spent when the run's best first scored at least ``target`` on test (None: never)."""
        return next((calls for calls, score in self.progress if score >= target - 1e-9), None)


def make_config(data: Path, seed: int, generations: int, val_users: int, strategy: dict[str, Any]) -> EvolveConfig:
    return parse_evolve_config(
        {
            "name": "strategies",
            "seed": {
                "policy": {
                    "kind": "awi",
                    "update_every": 2,
                    "short_term": 0,
                    "prompts": {"memory_types": SEED_TYPES},
                }
            },
            "components": ["memory_types"],
            "data": {"path": str(data)},
            "split": {"train": 3, "val": val_users, "test": 4, "seed": seed},
            "budget": {"generations": generations, "candidates": 3},
            "episode": {"rounds_init": 1, "rounds_update": 1, "user_concurrency": 1, "candidate_concurrency": 1},
            "tracking": {"enabled": False},
            "optuna": {"seed": seed},
            "strategy": strategy,
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
        objective="accuracy",
    )
    evaluator.upper_bound = await compute_upper_bound(backend, test_items, constrained=True, seed=config.split.seed)
    return {c.id: (await evaluator.evaluate(c, "test", test_ids)).score for c in candidates}


def run_arm(workdir: Path, seed: int, arm: str, noise: float, generations: int, val_users: int) -> ArmRun:
    items = category_world(10, 3, seed=seed, questions=QUESTIONS)
    run_dir = workdir / f"{arm}-{seed}".replace("+", "_")
    data = workdir / f"{run_dir.name}.data.json"  # one file per run: runs may go in parallel
    save_items(items, data)
    config = make_config(data, seed, generations, val_users, arm_strategy(arm))
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
        {result.best.id, result.seed.id}
        | {c.id for c in accepted}
        | {c.parent_id for c in accepted if c.parent_id}
        | {o.kept_id for o in result.history}
    )
    clean = asyncio.run(clean_test_scores(config, items, [known[i] for i in sorted(needed)], run_dir / "clean"))
    won = next((o.generation for o in result.history if result.best.id in o.accepted_ids), 0)
    spent = {o.generation: agent_calls(run_dir / "generations" / f"gen_{o.generation:03d}" / "spend.json")
             for o in result.history}
    return ArmRun(
        best_test=clean[result.best.id],
        calls_to_best=spent[won],
        calls_total=result.usage.by_role["agent"].calls,
        accepted=len(accepted),
        false_accepted=sum(clean[c.id] < clean[c.parent_id or ""] for c in accepted),
        progress=[(spent[o.generation], clean[o.kept_id]) for o in result.history],
    )


def calls_to_reference(rows: list[ArmRun], reference: list[ArmRun]) -> str:
    """Mean agent calls an arm spent until its best first scored the reference arm's best on the same seed; a
    seed where it never did counts with all its calls (so the mean is then a lower bound, marked ">=")."""
    reached = [row.calls_to_reach(ref.best_test) for row, ref in zip(rows, reference, strict=True)]
    calls = [hit if hit is not None else row.calls_total for hit, row in zip(reached, rows, strict=True)]
    missed = sum(hit is None for hit in reached)
    bound = ">= " if missed else ""
    return f"{bound}{fmean(calls):.0f} ({pstdev(calls):.0f}), reached on {len(rows) - missed}/{len(rows)} seeds"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=0, help="Seeds run are first-seed .. first-seed+seeds-1.")
    parser.add_argument("--noise", type=float, default=0.4, help="Share of agent answers replaced at random.")
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--val-users", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=1, help="Runs in parallel (processes).")
    parser.add_argument("--arms", default=",".join(ARMS), help="Comma-separated arm names (default: %(default)s).")
    parser.add_argument("--reference", default=REFERENCE, help="The arm whose best score, per seed, the others "
                        "are timed to reach (default: %(default)s; no such column when it is not run).")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    arms = args.arms.split(",")
    for arm in arms:
        arm_strategy(arm)  # a typo fails before any run
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    with tempfile.TemporaryDirectory() as tmp, ProcessPoolExecutor(args.jobs) as pool:
        futures = {
            (arm, seed): pool.submit(run_arm, Path(tmp), seed, arm, args.noise, args.generations, args.val_users)
            for seed in seeds
            for arm in arms
        }
        runs = {arm: [futures[arm, seed].result() for seed in seeds] for arm in arms}
    print(f"{args.arms}: seeds {seeds.start}-{seeds.stop - 1} done", file=sys.stderr)
    print(
        f"{args.seeds} seeds ({seeds.start}-{seeds.stop - 1}), answer noise {args.noise}, "
        f"{args.generations} generations x 3 candidates, train/val/test users 3/{args.val_users}/4; "
        "means over seeds (sd)\n"
    )
    reference = runs.get(args.reference)
    to_reference = f" | agent calls to reach {args.reference}'s best" if reference else ""
    print(
        "| arm | best test memory score (noise-free) | agent calls to reach it | agent calls in all "
        f"| accepted | false acceptances{to_reference} |"
    )
    print("|---|---|---|---|---|---|" + ("---|" if reference else ""))
    for arm, rows in runs.items():
        best = [r.best_test for r in rows]
        to_best = [r.calls_to_best for r in rows]
        accepted = sum(r.accepted for r in rows)
        false = sum(r.false_accepted for r in rows)
        share = f"{false}/{accepted} = {false / accepted:.0%}" if accepted else "0/0"
        line = (
            f"| {arm} | {fmean(best):.3f} ({pstdev(best):.3f}) | {fmean(to_best):.0f} ({pstdev(to_best):.0f}) "
            f"| {fmean(r.calls_total for r in rows):.0f} | {accepted} | {share} |"
        )
        if reference:
            line += f" {calls_to_reference(rows, reference)} |"
        print(line)


if __name__ == "__main__":
    main()
