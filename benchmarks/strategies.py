"""Strategy benchmark: memevo's loop against no evolution, best-of-N and GEPA, at the same call budget.

Two kinds of worlds. ``family`` (benchmarks/worlds/, the one the report uses): world ``seed`` draws its own rules
(which facts a memory-types text makes the writer keep and under which word, questions needing two facts,
cancelling pairs, a length cost, answer noise from 10% to 40%, the proposer's mix of helpful, neutral and harmful
edits, feedback-blind or feedback-using) and knows its oracle, so every result is also the share of the headroom
(oracle minus seed, noise-free on the test users) it closes; its protocol is benchmarks/worlds/PROTOCOL.md.
The project's three hand-made worlds are built from the category double (tests/doubles/category_backend.py, a
TEST DOUBLE, not a model): a fact reaches memory only when the memory-types section names its category; the seed
names two categories of one question each; the proposer makes one small step per sample (adds a category, or on
later samples drops one the text names); every agent answer is replaced by a random option with probability
``--noise`` (seeded by the request, so reruns and resumes see the same noise). The worlds differ in what a step does:

- ``category``: six categories asked about by 1-3 questions per period; a step adds one seen in the feedback
  (helps by 1-3 questions in 10) or drops one (hurts);
- ``neutral``: the same plus six categories announced but never asked, and steps drawn from every category of the
  world: most adds change the notes and nothing else;
- ``interact``: questions that need two categories at once: naming one of a pair is worth nothing for them until
  the other is named too, and dropping one then costs both.

Arms, each given the same budget of calls (``--budget-episodes`` times the calls of one seed episode of the world;
agent and proposer calls together, as ``budget.max_calls`` counts them): ``memevo`` (EvolveConfig's default
strategy: no ``strategy`` section),
``none`` (no evolution: the seed), ``best-of-n`` (one generation of as many proposals from the seed as the budget
plays on the validation users, the best there kept after a check on one train user), ``gepa`` (GEPA 0.1.4 through
``gepa.optimize``, see benchmarks/gepa_arm.py), and memevo strategies named by ``+``-joined words: ``mean``,
``paired`` or ``sequential`` (acceptance), ``first`` (``first_accepted: true``), ``every`` (false), ``race1`` (1 user
per race round), ``c0.8`` (confidence), ``e0.02`` (minimum effect), ``gate1`` (minibatch), ``reflect`` or ``acc`` (proposer ``reflection`` or ``accumulate``), ``vraced``
(``winner_validation: raced``), ``seed1`` (``seed_users: first_round``),
``nofutile`` (``futility: false``). ``one-at-a-time`` is
EvolveConfig's previous default (``mean+first``).

Per world, seed (a new world, split and noise for each) and arm one run goes in-process. Reported per world and arm:
the noise-free held-out accuracy of the arm's final best (a fresh evaluation of it on the 4 test users without
answer noise), its paired difference to memevo's default over seeds (mean, wins/ties/losses, two-sided Wilcoxon
signed-rank p, ties split), the share of the headroom closed where the world knows its oracle, candidates accepted
and false acceptances (accepted but below their parent noise-free), the calls the search spent (all, agent,
proposer), the wall time of a run (search and noise-free scoring), every run's figures per seed, and for memevo's
loops the winner's curse: how far the parent's score on the users its children are compared on lies above its
noise-free score there. Tune on other seeds than the ones reported
(``--first-seed``): a setting chosen on the reported worlds would be fitted to their noise.

Run: ``python benchmarks/strategies.py [--seeds 16] [--first-seed 0] [--worlds category,neutral,interact,family]
[--arms memevo,none,best-of-n,gepa] [--budget-episodes 40] [--jobs 2]`` from the repository root.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from statistics import fmean, pstdev
from typing import Any

from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.gepa_arm import MemevoAdapter, run_gepa  # noqa: E402
from benchmarks.worlds.base import WorldRun  # noqa: E402
from benchmarks.worlds.family import family_world  # noqa: E402
from memevo.agents.policy import MemoryPolicy  # noqa: E402
from memevo.agents.registry import agent_spec, build_agent  # noqa: E402
from memevo.environments.amemgym.data.io import save_items  # noqa: E402
from memevo.environments.amemgym.simulators.factory import make_simulator  # noqa: E402
from memevo.evolve.candidates import Candidate  # noqa: E402
from memevo.evolve.config import EvolveConfig, parse_evolve_config  # noqa: E402
from memevo.evolve.evaluation import CandidateEval, Evaluator  # noqa: E402
from memevo.evolve.loop import run_evolution  # noqa: E402
from memevo.evolve.proposers import ProposerSettings, make_proposer  # noqa: E402
from memevo.evolve.records import EvolutionResult, GenerationPlan  # noqa: E402
from memevo.evolve.runtime import episode_config, make_split  # noqa: E402
from memevo.evolve.selection.race import RaceRecord  # noqa: E402
from tests.doubles.category_backend import CategoryBackend, CategoryHub, category_world  # noqa: E402

QUESTIONS = {"commute": 1, "instrument": 3, "beverage": 2, "genre": 1, "plant": 2, "footwear": 1}
"""Questions per period about each category (the category world)."""
NEVER_ASKED = dict.fromkeys(["pet", "sport", "cuisine", "hobby", "color", "city"], 0)


SEED_TYPES = "- commute (how the user gets to work)\n- footwear (the shoes the user wears)"
SPLIT = {"train": 4, "val": 4, "test": 4}
USERS = sum(SPLIT.values())


@dataclass(frozen=True)
class World:
    """One of the project's three hand-made worlds: the same rules at every seed, the noise from ``--noise``."""

    questions: dict[str, int]
    pairs: dict[tuple[str, str], int] = field(default_factory=dict)
    steps_from: str = "feedback"

    def at(self, seed: int, noise: float) -> WorldRun:
        items = category_world(USERS, 3, seed=seed, questions=self.questions, pairs=self.pairs)
        return WorldRun(items=items, seed_types=SEED_TYPES, noise=noise, backend=lambda answer_noise: CategoryBackend(
            items, proposer_mode="step", answer_noise=answer_noise, seed=seed, steps_from=self.steps_from),
            label=f"noise {noise:.2f}")


WORLDS: dict[str, Callable[[int, float], WorldRun]] = {
    "category": World(QUESTIONS).at,
    "neutral": World(QUESTIONS | NEVER_ASKED, steps_from="world").at,
    "interact": World({"commute": 1, "footwear": 1, "instrument": 2, "beverage": 1, "plant": 1},
                      {("instrument", "genre"): 2, ("beverage", "plant"): 2}).at,
    "family": lambda seed, _noise: family_world(seed, USERS),
}
CANDIDATES = 3
"""Proposals per generation (memevo) and proposer samples cycled per iteration (GEPA)."""
PROPOSER_WORDS = {"reflect": "reflection", "acc": "accumulate"}
"""Arm words naming the proposer (``strategy.proposers``)."""
REFERENCE = "memevo"
ARMS = ["memevo", "none", "best-of-n", "gepa"]


def arm_strategy(arm: str) -> dict[str, Any]:
    """The ``strategy`` section a memevo arm stands for (see the module docstring)."""
    if arm == "memevo":
        return {}  # EvolveConfig's default strategy, whatever it is when the benchmark runs
    if arm == "one-at-a-time":
        return {"acceptance": "mean", "first_accepted": True}
    if arm == "best-of-n":
        return {"acceptance": "mean", "first_accepted": False, "minibatch": 1}
    strategy: dict[str, Any] = {}
    for word in arm.split("+"):
        if word in ("mean", "paired", "sequential"):
            strategy["acceptance"] = word
        elif word in ("first", "every"):
            strategy["first_accepted"] = word == "first"
        elif word.startswith("race"):
            strategy["race_users"] = int(word.removeprefix("race"))
        elif word.startswith("gate"):
            strategy["minibatch"] = int(word.removeprefix("gate")) or None
        elif word[:1] == "c":
            strategy["confidence"] = float(word[1:])
        elif word == "nofutile":
            strategy["futility"] = False
        elif word == "seed1":
            strategy["seed_users"] = "first_round"
        elif word == "vraced":
            strategy["winner_validation"] = "raced"
        elif word in PROPOSER_WORDS:
            strategy["proposers"] = [PROPOSER_WORDS[word]]
        elif word[:1] == "e":
            strategy["min_effect"] = float(word[1:])
        else:
            raise SystemExit(f"--arms: unknown word '{word}' in arm '{arm}'")
    return strategy


def make_config(data: Path, seed: int, strategy: dict[str, Any], max_calls: int, generations: int,
                candidates: int, seed_types: str = SEED_TYPES) -> EvolveConfig:
    return parse_evolve_config({
        "name": "strategies",
        "seed": {"policy": {"kind": "awi", "update_every": 2, "short_term": 0, "prompts": {"memory_types": seed_types}}},
        "components": ["memory_types"],
        "data": {"path": str(data)},
        "split": {**SPLIT, "seed": seed},
        "budget": {"generations": generations, "candidates": candidates, "max_calls": max_calls},
        "episode": {"rounds_init": 1, "rounds_update": 1, "user_concurrency": 1, "candidate_concurrency": 1},
        "tracking": {"enabled": False},
        "upper_bound": False,  # the memory score's perfect-information answers: calls no other arm spends
        "optuna": {"seed": seed},
        "strategy": strategy,
    })


@dataclass
class ArmRun:
    best_test: float
    accepted: int
    false_accepted: int
    calls: int
    seed_test: float = 0.0
    """The seed's noise-free held-out accuracy (no evolution) in the same world."""
    oracle_test: float | None = None
    """The best reachable noise-free held-out accuracy, where the world knows it."""
    agent_calls: int = 0
    proposer_calls: int = 0
    wall_s: float = 0.0
    curse: list[float] = field(default_factory=list)
    """Per comparison with a parent that was itself selected: its noisy minus noise-free score on those users."""

    @property
    def headroom(self) -> float | None:
        """The share of the headroom (oracle minus seed) the arm closed; None when there is none to close."""
        if self.oracle_test is None or self.oracle_test - self.seed_test <= 1e-9:
            return None
        return (self.best_test - self.seed_test) / (self.oracle_test - self.seed_test)


class Clean:
    """Noise-free accuracy of policies on any users (their real quality), each evaluation done once."""

    def __init__(self, config: EvolveConfig, world: WorldRun, folder: Path) -> None:
        self.backend = world.backend(0.0)
        self.config, self.items, self.folder = config, world.items, folder
        self.test = make_split(world.items, config).test

    def per_user(self, policy: MemoryPolicy, users: Sequence[str]) -> dict[str, float]:
        evaluator = Evaluator(  # one per call: each call runs its own event loop
            root=self.folder, items=self.items, make_agent=lambda policy: build_agent(policy, self.backend),
            simulator=make_simulator("template", self.config.split.seed),
            episode_config=episode_config(self.config, MemoryPolicy(kind="awi")))
        result = asyncio.run(evaluator.evaluate(Candidate(policy=policy), "clean", sorted(users), label="clean"))
        return {user.user_id: user.accuracy for user in result.users}

    def score(self, policy: MemoryPolicy, users: Sequence[str] | None = None) -> float:
        return fmean(self.per_user(policy, users or self.test).values())


def seed_policy(config: EvolveConfig) -> MemoryPolicy:
    assert config.seed.policy is not None
    return config.seed.policy


def episode_calls(world: WorldRun, seed: int, config: EvolveConfig, folder: Path) -> int:
    """The calls of one seed episode in this world (the budget's unit)."""
    backend = world.backend(0.0)
    evaluator = Evaluator(root=folder, items=world.items, make_agent=lambda policy: build_agent(policy, backend),
                          simulator=make_simulator("template", seed),
                          episode_config=episode_config(config, seed_policy(config)))
    asyncio.run(evaluator.evaluate(Candidate(policy=seed_policy(config)), "probe", [world.items[0].id]))
    return len(backend.calls)


def noisy_per_user(run_dir: Path, candidate_id: str, generation: int) -> dict[str, float]:
    """The candidate's noisy accuracy per user: its own train and validation results, and as the parent of
    ``generation`` (sequential acceptance plays a parent on a race's users under labels of their own)."""
    out: dict[str, float] = {}
    for label in ("train", "val", f"train_parent_of_{generation:03d}", f"val_parent_of_{generation:03d}"):
        path = run_dir / "evals" / candidate_id / f"{label}.json"
        if path.exists():
            out |= {u.user_id: u.accuracy for u in CandidateEval.model_validate_json(path.read_text()).users}
    return out


def winners_curse(run_dir: Path, result: EvolutionResult, policies: dict[str, MemoryPolicy], clean: Clean,
                  val_users: list[str], noise: float) -> list[float]:
    """Per generation whose parent was kept by selection (not the seed): the parent's noisy mean accuracy on the users
    its children were compared on (the race's users, or the validation users) minus what the noise leads one to
    expect there, ``(1 - noise) x noise-free + noise x chance`` (chance: one over the options of each question)."""
    chance = fmean(1 / len(question.answer_choices) for question in clean.items[0].qas)
    gaps = []
    for outcome in result.history[1:]:
        if outcome.parent_id == result.seed.id or outcome.parent_id not in policies:
            continue
        race = run_dir / "generations" / f"gen_{outcome.generation:03d}" / "race.json"
        rounds = json.loads(race.read_text()) if race.exists() else None
        if rounds == []:  # no race was played in this generation: no parent compared
            continue
        users = RaceRecord.model_validate(rounds[0]).users if rounds else val_users
        noisy = noisy_per_user(run_dir, outcome.parent_id, outcome.generation)
        users = [u for u in users if u in noisy]
        if users:
            truth = clean.per_user(policies[outcome.parent_id], users)
            gaps.append(fmean(noisy[u] - ((1 - noise) * truth[u] + noise * chance) for u in users))
    return gaps


def role_calls(backend: CategoryBackend, role: str) -> int:
    return sum(call["role"] == role for call in backend.calls)


def run_memevo(workdir: Path, world: WorldRun, seed: int, arm: str, max_calls: int) -> ArmRun:
    run_dir = workdir / "run"
    data = workdir / "data.json"
    save_items(world.items, data)
    best_of_n = arm == "best-of-n"
    generations, candidates = (1, 24) if best_of_n else (50, CANDIDATES)
    config = make_config(data, seed, arm_strategy(arm), max_calls, generations, candidates, world.seed_types)
    backend = world.backend(world.noise)
    result = run_evolution(config, run_dir=run_dir, hub=CategoryHub(backend), resume=False)
    plans = [GenerationPlan.model_validate_json(path.read_text())
             for path in sorted((run_dir / "generations").glob("gen_*/plan.json"))]
    known = {result.seed.id: result.seed.policy} | {c.id: c.policy for plan in plans for c in plan.candidates}
    parents = {c.id: c.parent_id for plan in plans for c in plan.candidates}
    accepted = [i for o in result.history[1:] for i in o.accepted_ids]
    clean = Clean(config, world, workdir / "clean")
    scores = {cid: clean.score(known[cid]) for cid in {result.best.id, *accepted, *(parents[i] for i in accepted)}}
    last = max(o.generation for o in result.history)
    spend = json.loads((run_dir / "generations" / f"gen_{last:03d}" / "spend.json").read_text())
    return ArmRun(
        best_test=scores[result.best.id], accepted=len(accepted),
        false_accepted=sum(scores[i] < scores[parents[i] or ""] for i in accepted),
        calls=sum(role["calls"] for role in spend["by_role"].values()),
        agent_calls=spend["by_role"].get("agent", {}).get("calls", 0),
        proposer_calls=spend["by_role"].get("proposer", {}).get("calls", 0),
        curse=winners_curse(run_dir, result, known, clean, make_split(world.items, config).val, world.noise),
    )


def run_gepa_arm(workdir: Path, world: WorldRun, seed: int, max_calls: int) -> ArmRun:
    data = workdir / "data.json"
    save_items(world.items, data)
    config = make_config(data, seed, {}, max_calls, 1, CANDIDATES, world.seed_types)
    split = make_split(world.items, config)
    backend = world.backend(world.noise)
    hub = CategoryHub(backend)
    seed_pol = seed_policy(config)

    def evaluator() -> Evaluator:
        return Evaluator(root=workdir / "gepa", items=world.items,
                         make_agent=lambda policy: build_agent(policy, backend),
                         simulator=make_simulator("template", seed), episode_config=episode_config(config, seed_pol))

    adapter = MemevoAdapter(
        config=config, seed=seed_pol, spec=agent_spec("awi"), items={item.id: item for item in world.items},
        make_evaluator=evaluator, proposer=make_proposer("reflection", ProposerSettings(lm=hub.dspy_lm(config.llm.proposer))),
        train_users=set(split.train), samples_per_iteration=CANDIDATES,
    )
    outcome = run_gepa(adapter, config.components, split.train, split.val, lambda: len(backend.calls), max_calls,
                       seed, workdir / "gepa-run")
    clean = Clean(config, world, workdir / "clean")
    scores = [clean.score(policy) for policy in outcome.policies]
    pool = [(i, parent) for i, parent in enumerate(outcome.parents) if i > 0 and parent is not None]
    return ArmRun(best_test=clean.score(outcome.best), accepted=len(pool),
                  false_accepted=sum(scores[i] < scores[parent] for i, parent in pool), calls=len(backend.calls),
                  agent_calls=role_calls(backend, "agent"), proposer_calls=role_calls(backend, "proposer"))


def run_arm(world_name: str, seed: int, arm: str, noise: float, budget_episodes: int) -> ArmRun:
    world = WORLDS[world_name](seed, noise)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        save_items(world.items, workdir / "items.json")
        config = make_config(workdir / "items.json", seed, {}, 1, 1, 1, world.seed_types)
        max_calls = budget_episodes * episode_calls(world, seed, config, workdir / "probe")
        clean = Clean(config, world, workdir / "clean")
        seed_test = clean.score(seed_policy(config))
        oracle_test = world.oracle(clean.test) if world.oracle else None
        if arm == "none":
            run = ArmRun(best_test=seed_test, accepted=0, false_accepted=0, calls=0)
        elif arm == "gepa":
            run = run_gepa_arm(workdir, world, seed, max_calls)
        else:
            run = run_memevo(workdir, world, seed, arm, max_calls)
    return replace(run, seed_test=seed_test, oracle_test=oracle_test, wall_s=time.monotonic() - started)


def paired(rows: list[ArmRun], reference: list[ArmRun]) -> str:
    """The reference minus this arm over seeds: mean, wins/ties/losses of the reference, two-sided Wilcoxon p."""
    diffs = [ref.best_test - row.best_test for row, ref in zip(rows, reference, strict=True)]
    wins, ties = sum(d > 1e-9 for d in diffs), sum(abs(d) <= 1e-9 for d in diffs)
    if not any(abs(d) > 1e-9 for d in diffs):
        return f"+0.000, 0/{ties}/0, p n/a (no difference)"
    p_value = stats.wilcoxon(diffs, zero_method="zsplit").pvalue
    return f"{fmean(diffs):+.3f}, {wins}/{ties}/{len(diffs) - wins - ties}, p {p_value:.3f}"


def headroom_text(rows: list[ArmRun]) -> str:
    shares = [row.headroom for row in rows if row.headroom is not None]
    if not shares:
        return "n/a (no world with headroom: oracle not above the seed, or unknown)"
    left_out = len(rows) - len(shares)
    return f"{fmean(shares):.0%}" + (f" ({left_out} runs n/a: no headroom)" if left_out else "")


def table(title: str, runs: dict[str, list[ArmRun]]) -> list[str]:
    reference = runs.get(REFERENCE)
    lines = [f"**{title}**", "",
             f"| arm | held-out accuracy (noise-free) | headroom closed | {REFERENCE} minus arm (mean, W/T/L, p) | "
             "accepted | false acceptances | calls spent | agent calls | proposer calls | wall time per run | "
             "winner's curse (parent's bar above its expected noisy score) |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for arm, rows in runs.items():
        best = [r.best_test for r in rows]
        accepted, false = sum(r.accepted for r in rows), sum(r.false_accepted for r in rows)
        share = f"{false}/{accepted} = {false / accepted:.0%}" if accepted else "0/0"
        versus = "-" if arm == REFERENCE or reference is None else paired(rows, reference)
        curse = [g for r in rows for g in r.curse]
        curse_text = f"{fmean(curse):+.3f} ({len(curse)} parents)" if curse else "n/a (no selected parent compared)"
        lines.append(f"| {arm} | {fmean(best):.3f} ± {pstdev(best):.3f} | {headroom_text(rows)} | {versus} | {accepted} | "
                     f"{share} | {fmean(r.calls for r in rows):.0f} | {fmean(r.agent_calls for r in rows):.0f} | "
                     f"{fmean(r.proposer_calls for r in rows):.1f} | {fmean(r.wall_s for r in rows):.1f} s | {curse_text} |")
    return lines


def run_table(title: str, labels: dict[int, str], runs: dict[str, list[ArmRun]]) -> list[str]:
    """Every run of one world: per seed, the seed's and the oracle's held-out accuracy and each arm's, with the
    share of the headroom it closed."""
    arms = list(runs)
    lines = [f"**{title}: every run**", "", "| seed | world | seed prompt | oracle | " + " | ".join(arms) + " |",
             "|---|---|---|---|" + "---|" * len(arms)]
    for index, (seed, label) in enumerate(labels.items()):
        first = runs[arms[0]][index]
        oracle = "n/a (unknown)" if first.oracle_test is None else f"{first.oracle_test:.3f}"
        cells = []
        for arm in arms:
            row = runs[arm][index]
            closed = "n/a" if row.headroom is None else f"{row.headroom:.0%}"
            cells.append(f"{row.best_test:.3f} ({closed})")
        lines.append(f"| {seed} | {label} | {first.seed_test:.3f} | {oracle} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=16)
    parser.add_argument("--first-seed", type=int, default=0, help="Seeds run are first-seed .. first-seed+seeds-1.")
    parser.add_argument("--noise", type=float, default=0.3, help="Share of agent answers replaced at random.")
    parser.add_argument("--budget-episodes", type=int, default=40, help="The call budget, in seed episodes.")
    parser.add_argument("--worlds", default="category,neutral,interact",
                        help=f"Comma-separated, of {', '.join(WORLDS)} (default: %(default)s).")
    parser.add_argument("--jobs", type=int, default=1, help="Runs in parallel (processes).")
    parser.add_argument("--arms", default=",".join(ARMS), help="Comma-separated arm names (default: %(default)s).")
    parser.add_argument("--per-seed", type=Path, help="Also write every run's figures here (JSON: world, arm, seed).")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    arms, worlds = args.arms.split(","), args.worlds.split(",")
    for arm in arms:
        if arm not in ("none", "gepa"):
            arm_strategy(arm)  # a typo fails before any run
    for world in worlds:
        if world not in WORLDS:
            raise SystemExit(f"--worlds: unknown world '{world}' (known: {', '.join(WORLDS)})")
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    with ProcessPoolExecutor(args.jobs) as pool:
        futures = {(world, arm, seed): pool.submit(run_arm, world, seed, arm, args.noise, args.budget_episodes)
                   for world in worlds for seed in seeds for arm in arms}
        runs = {world: {arm: [futures[world, arm, seed].result() for seed in seeds] for arm in arms}
                for world in worlds}
    if args.per_seed:
        args.per_seed.write_text(json.dumps({world: {arm: {seed: asdict(futures[world, arm, seed].result()) for seed in seeds}
                                                     for arm in arms} for world in worlds}, indent=1))
    print(f"{args.seeds} seeds ({seeds.start}-{seeds.stop - 1}), answer noise {args.noise} (family: each world's "
          f"own), budget "
          f"{args.budget_episodes} seed episodes of calls, train/val/test users {SPLIT['train']}/{SPLIT['val']}/"
          f"{SPLIT['test']}; means over seeds ± sd\n")
    for world in worlds:
        print("\n".join(table(f"world: {world}", runs[world])) + "\n")
    for world in worlds:
        labels = {seed: WORLDS[world](seed, args.noise).label for seed in seeds}
        print("\n".join(run_table(f"world: {world}", labels, runs[world])) + "\n")
    if len(worlds) > 1:
        pooled = {arm: [row for world in worlds for row in runs[world][arm]] for arm in arms}
        print("\n".join(table(f"all worlds ({len(worlds)} x {args.seeds} paired runs)", pooled)))


if __name__ == "__main__":
    main()
