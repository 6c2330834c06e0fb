"""The template user simulator: varied, deterministic follow-ups that never name a schema value."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from memevo.environments.amemgym.data.models import Item
from memevo.environments.amemgym.simulators.template import TemplateUserSimulator, _value_pattern, names_a_value
from memevo.environments.amemgym.synth import SynthConfig, synthesize
from memevo.environments.amemgym.synth.simulator_parts import SimulatorParts

NOW = dt.datetime(2021, 1, 1, 20, 0)


async def _all_follow_ups(simulator: TemplateUserSimulator, items: list[Item]) -> list[tuple[Item, str]]:
    replies = []
    for item in items:
        for index, period in enumerate(item.periods):
            for session in period.sessions:
                messages = [{"role": "user", "content": session.query}, {"role": "assistant", "content": "Sure."}]
                replies.append((item, await simulator.follow_up(item, index, session, messages, NOW)))
    return replies


async def test_follow_ups_never_name_a_schema_value_and_vary() -> None:
    items = synthesize(SynthConfig(users=3, periods=4, questions=10, seed=21))
    replies = await _all_follow_ups(TemplateUserSimulator(seed=0), items)
    for item, reply in replies:
        lowered = reply.lower()
        assert not [v for vs in item.state_schema.values() for v in vs if v.lower() in lowered], reply
    assert len({reply for _, reply in replies}) > len(replies) // 2


async def test_deterministic_per_seed() -> None:
    items = synthesize(SynthConfig(users=1, periods=2, questions=3, seed=22))
    first = await _all_follow_ups(TemplateUserSimulator(seed=1), items)
    again = await _all_follow_ups(TemplateUserSimulator(seed=1), items)
    other = await _all_follow_ups(TemplateUserSimulator(seed=2), items)
    assert first == again
    assert first != other


async def test_skips_templates_that_contain_a_value() -> None:
    item = synthesize(SynthConfig(users=1, periods=1, questions=2, seed=23))[0]
    key = next(iter(item.state_schema))
    item.state_schema[key] = [*item.state_schema[key], "got it", "first step"]
    parts = SimulatorParts(deflections=["Let's keep it general."], acknowledgements=["Got it.", "Thanks."],
                           asks=["What is the first step?", "How would I know if it's working?"])
    simulator = TemplateUserSimulator(seed=0, parts=parts)
    session = item.periods[0].sessions[0]
    replies = {await simulator.follow_up(item, 0, session, [{"role": "user", "content": "hi"}] * n, NOW)
               for n in range(12)}
    assert replies == {"Thanks. How would I know if it's working?"}
    assert not any(re.search(r"got it|first step", reply, re.IGNORECASE) for reply in replies)


async def test_falls_back_when_every_template_names_a_value() -> None:
    item = synthesize(SynthConfig(users=1, periods=0, questions=1, seed=24))[0]
    key = next(iter(item.state_schema))
    item.state_schema[key] = [*item.state_schema[key], "thanks"]
    parts = SimulatorParts(deflections=["Thanks."], acknowledgements=["Thanks."], asks=["Thanks again?"])
    simulator = TemplateUserSimulator(parts=parts)
    reply = await simulator.follow_up(item, 0, item.periods[0].sessions[0], [], NOW)
    assert reply == "Could you say a bit more about that?"


async def test_deflects_when_the_assistant_asks_a_question() -> None:
    item = synthesize(SynthConfig(users=1, periods=1, questions=2, seed=25))[0]
    session = item.periods[1].sessions[0]
    simulator = TemplateUserSimulator()
    deflections = simulator.parts.deflections
    asked = [{"role": "user", "content": session.query}, {"role": "assistant", "content": "How often do you do it?"}]
    told = [{"role": "user", "content": session.query}, {"role": "assistant", "content": "Here is a plan."}]
    deflected = await simulator.follow_up(item, 1, session, asked, NOW)
    answered = await simulator.follow_up(item, 1, session, told, NOW)
    assert any(deflected.startswith(d) for d in deflections)
    assert not any(answered.startswith(d) for d in deflections)


@pytest.mark.parametrize("size", [1, 2, 7, 120, 400])
def test_the_lazy_shuffle_draws_what_a_full_random_sample_would(size):
    """Follow-ups take the first candidate of a seeded full-length ``random.sample`` that does not leak; the
    simulator draws them one at a time instead, which must give the very same order for every seed."""
    import random

    from memevo.environments.amemgym.simulators.template import shuffled

    population = [f"line {index}" for index in range(size)]
    for seed in ("0|user 1|3|2024-01-01 10:00:00|2", "7|u|0|t|0", *map(str, range(20))):
        assert list(shuffled(random.Random(seed), population)) == random.Random(seed).sample(population, size)


@pytest.mark.parametrize(("text", "leaks"), [
    ("I love Board Games with friends!", True),  # any case, a multi-word value
    ("art.", True),  # punctuation is a boundary
    ("a party tonight", False),  # inside another word
    ("artistic cycling to workers", False),  # a value followed by more of a word
    ("cycling to work", True),
    ("nothing here", False),
    ("snake_art", False),  # an underscore is part of a word
    ("Été: ART!", True),  # non-ASCII text goes through the regular expression
    ("l'artiste", False),
])
def test_the_leak_check_matches_whole_values_in_any_case(text, leaks):
    assert names_a_value(text, ("art", "board games with friends", "cycling to work")) is leaks


def test_the_ascii_leak_check_agrees_with_the_regular_expression():
    """The lower-cased comparison stands in for the expression on ASCII text: both must give the same verdict,
    values that overlap, repeat, sit at either end or hold the expression's special characters included."""
    import random

    words = ["art", "Art", "arts", "c++", "a.b", "x", "Board games", "_", "9", "games", "(x)"]
    rng = random.Random(7)
    for _ in range(2000):
        values = tuple(sorted(set(rng.sample(words, rng.randint(1, 4)))))
        text = rng.choice(["", " ", "-", "_"]).join(rng.choice(words + ["the", ".", "?"]) for _ in range(rng.randint(0, 6)))
        assert names_a_value(text, values) is (_value_pattern(values).search(text) is not None), (text, values)
    assert names_a_value("anything", ()) is False
