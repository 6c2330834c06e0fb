"""The world family of the strategy benchmark (benchmarks/worlds): seeded, its scores and oracle match real
episodes, its proposer follows the drawn mix."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks.strategies import Clean, arm_strategy, make_config, run_arm, winners_curse
from benchmarks.worlds.backend import WorldBackend
from benchmarks.worlds.family import family_world
from benchmarks.worlds.rules import NOISE_RANGE, SYNONYMS, WorldRules, draw_rules
from benchmarks.worlds.scoring import accuracy, oracle
from memevo.agents.policy import MemoryPolicy
from memevo.environments.amemgym.data.io import save_items

SEEDS = range(40)


def random_text(rules: WorldRules, rng: random.Random) -> str:
    words = [word for category in rules.categories for word in rules.words(category)] + ["weather"]
    return "\n".join(f"- {word}" for word in rng.sample(words, k=rng.randint(0, len(words))))


def test_a_seed_draws_the_same_world_and_users_every_time() -> None:
    assert draw_rules(7) == draw_rules(7)
    assert family_world(7, 6).items == family_world(7, 6).items
    assert len({draw_rules(seed).model_dump_json() for seed in SEEDS}) == len(SEEDS)


def test_drawn_rules_stay_in_their_ranges() -> None:
    for seed in SEEDS:
        rules = draw_rules(seed)
        assert NOISE_RANGE[0] <= rules.noise <= NOISE_RANGE[1]
        assert rules.helpful + rules.neutral + rules.harmful == pytest.approx(1)
        assert min(rules.helpful, rules.neutral, rules.harmful) > 0
        assert all(set(words) <= {category, SYNONYMS[category]} for category, words in rules.names.items())
    assert {draw_rules(seed).uses_feedback for seed in SEEDS} == {True, False}
    assert {draw_rules(seed).capacity is None for seed in SEEDS} == {True, False}


def test_the_writer_keeps_what_the_rules_say() -> None:
    rules = WorldRules(seed=0, questions={"commute": 1, "plant": 1, "pet": 1, "city": 0}, pairs=[],
                       names={"commute": ["travel"], "plant": ["plant", "garden"], "pet": ["pet"], "city": ["city"]},
                       cancels=[("pet", "city")], capacity=3, noise=0.1, helpful=0.4, neutral=0.4, harmful=0.2,
                       uses_feedback=False, seed_lines=[])
    assert rules.kept("- commute\n- garden") == {"plant"}  # commute is kept only as "travel"
    assert rules.kept("- travel\n- garden\n- pet") == {"commute", "plant", "pet"}
    assert rules.kept("- travel\n- pet\n- city") == {"commute"}  # pet and city cancel
    assert rules.kept("- weather\n- travel\n- garden\n- pet") == {"commute", "plant"}  # capacity: 3 lines read


def test_the_worked_out_accuracy_and_the_oracle_match_real_episodes(tmp_path: Path) -> None:
    rng = random.Random(0)
    for seed in (0, 2, 5):
        world = family_world(seed, 12)
        rules = draw_rules(seed)
        save_items(world.items, tmp_path / f"items{seed}.json")
        clean = Clean(make_config(tmp_path / f"items{seed}.json", seed, {}, 1, 1, 1), world, tmp_path / f"clean{seed}")
        test_items = [item for item in world.items if item.id in clean.test]
        best = oracle(rules, test_items)
        assert world.oracle is not None and world.oracle(clean.test) == best.score
        for text in [best.memory_types, "\n".join(rules.seed_lines), random_text(rules, rng)]:
            for short_term in (0, 4):  # the benchmark's seed policy, the AWI default
                real = clean.score(MemoryPolicy(kind="awi", short_term=short_term, prompts={"memory_types": text}))
                assert real == pytest.approx(accuracy(rules, test_items, text))
                assert real <= best.score + 1e-9


def test_no_text_beats_the_oracle() -> None:
    rng = random.Random(1)
    for seed in SEEDS:
        rules = draw_rules(seed)
        items = family_world(seed, 4).items
        best = oracle(rules, items)
        assert accuracy(rules, items, best.memory_types) == best.score
        assert all(accuracy(rules, items, random_text(rules, rng)) <= best.score for _ in range(30))


def proposals(rules: WorldRules, text: str, count: int) -> list[str]:
    backend = WorldBackend(rules, family_world(rules.seed, 4).items)
    return [backend._step(text, "", f"request {i}", 0)[0] for i in range(count)]


def test_the_proposer_follows_the_mix_and_reruns_alike() -> None:
    rules = draw_rules(3).model_copy(update={"uses_feedback": False})
    items = family_world(3, 4).items
    start = "\n".join(rules.seed_lines)
    before = accuracy(rules, items, start)
    for helpful, harmful in ((1.0, 0.0), (0.0, 1.0)):
        world = rules.model_copy(update={"helpful": helpful, "neutral": 0.0, "harmful": harmful})
        texts = proposals(world, start, 20)
        assert texts == proposals(world, start, 20)
        effects = [accuracy(world, items, text) - before for text in texts]
        assert all(effect > 0 for effect in effects) if helpful else all(effect < 0 for effect in effects)


def test_a_proposer_that_uses_feedback_adds_only_what_it_names() -> None:
    rules = draw_rules(3).model_copy(update={"uses_feedback": True, "helpful": 0.5, "neutral": 0.5, "harmful": 0.0})
    backend = WorldBackend(rules, family_world(3, 4).items)
    named = rules.categories[0]
    added = {backend._step("", f"a {named} of x", f"request {i}", 0)[0] for i in range(20)}
    assert added <= {f"\n- {word}" for word in rules.words(named)}


def test_a_world_run_knows_its_seed_and_oracle_and_the_share_of_headroom() -> None:
    run = run_arm("family", 500, "none", 0.3, 1)
    assert run.oracle_test is not None and run.oracle_test > run.seed_test
    assert run.best_test == run.seed_test and run.headroom == 0
    assert replace(run, best_test=run.oracle_test).headroom == pytest.approx(1)
    assert replace(run, oracle_test=run.seed_test).headroom is None  # no headroom: n/a, not a division by zero


def test_a_generation_without_a_race_round_has_no_parent_to_compare(tmp_path: Path) -> None:
    """A race file with no rounds (the generation raced nothing) is skipped, not read as a first round."""
    race = tmp_path / "generations" / "gen_002" / "race.json"
    race.parent.mkdir(parents=True)
    race.write_text("[]")
    seed = SimpleNamespace(id="seed")
    history = [SimpleNamespace(generation=1, parent_id="seed"), SimpleNamespace(generation=2, parent_id="kept")]
    clean = SimpleNamespace(items=family_world(0, 1).items)
    result = SimpleNamespace(seed=seed, history=history)
    policies = {"kept": MemoryPolicy(kind="awi")}
    assert winners_curse(tmp_path, result, policies, clean, ["user-0"], 0.3) == []  # type: ignore[arg-type]


def test_an_arm_word_names_the_proposer() -> None:
    assert arm_strategy("acc+every") == {"proposers": ["accumulate"], "first_accepted": False}
    assert arm_strategy("reflect") == {"proposers": ["reflection"]}
