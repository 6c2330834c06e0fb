"""The LLM role-play user simulator: what it is shown, and that it can never send a schema value."""

from __future__ import annotations

from datetime import datetime

from memevo.environments.amemgym.data.models import Item
from memevo.environments.amemgym.simulators.llm import NEUTRAL_FOLLOW_UPS, LLMUserSimulator
from tests.doubles.scripted_llm import ScriptedLLM

NOW = datetime(2021, 1, 1, 20, 15, 0)


def make_item() -> Item:
    session = {"event": None, "exposed_states": {"diet": "vegan"}, "query": "Any dinner ideas for a plant-only eater?",
               "messages": [], "session_time": "2021-01-01 20:15:00"}
    return Item.model_validate({
        "id": "u1", "start_time": "2020-10-01",
        "user_profile": {"uuid": "u1", "name": "Ana Lee", "age": 30, "gender": "Female", "marital_status": "single",
                         "education_level": "bachelors", "occupation": "nurse", "formatted_str": "name: Ana Lee\nage: 30"},
        "state_schema": {"diet": ["vegan", "omnivore"], "city_size": ["big city", "small town"]},
        "periods": [{"period_start": None, "period_end": "2021-03-01", "sessions": [session],
                     "state": {"diet": "vegan", "city_size": "big city"},
                     "updates": {"diet": {"old": None, "new": "vegan"}, "city_size": {"old": None, "new": "big city"}},
                     "update_cnts": {"diet": 0, "city_size": 0}}],
        "qas": [],
    })


def conversation(rounds: int) -> list[dict[str, str]]:
    messages = [{"role": "user", "content": "[Current Time: 2021-01-01 20:15:00]\nAny dinner ideas?"}]
    for index in range(rounds):
        messages.append({"role": "assistant", "content": f"assistant turn {index}"})
        messages.append({"role": "user", "content": f"user turn {index}"})
    return messages[:-1]


async def test_prompt_marks_schema_do_not_reveal_and_respects_window() -> None:
    item = make_item()
    llm = ScriptedLLM(lambda messages, role, wants_json: "Could you suggest something quick for weeknights?")
    simulator = LLMUserSimulator(llm, window=2)
    reply = await simulator.follow_up(item, 0, item.periods[0].sessions[0], conversation(3), NOW)
    assert reply == "Could you suggest something quick for weeknights?"
    call = llm.calls[0]
    assert call["role"] == "user_simulator" and not call["json"]
    system, user = call["messages"][0]["content"], call["messages"][1]["content"]
    assert "DO NOT REVEAL" in system and "- diet: vegan, omnivore" in system and "big city" in system
    assert "name: Ana Lee" in system and "written on 2020-10-01" in system
    assert "Current date: 2021-01-01 20:15:00" in system  # session time, not period_end 2021-03-01
    assert "[Current Time: 2021-01-01 20:15:00]\nAny dinner ideas for a plant-only eater?" in user
    assert "user turn 1" in user and "assistant turn 2" in user
    assert "assistant turn 1" not in user and "user turn 0" not in user


async def test_window_is_configurable() -> None:
    item = make_item()
    llm = ScriptedLLM(lambda messages, role, wants_json: "And for lunch?")
    await LLMUserSimulator(llm, window=3).follow_up(item, 0, item.periods[0].sessions[0], conversation(3), NOW)
    user = llm.calls[0]["messages"][1]["content"]
    assert "assistant turn 1" in user and "user turn 0" not in user


async def test_leaking_reply_is_reasked_then_replaced() -> None:
    item = make_item()
    replies = iter(["As a Vegan, what should I cook?", "Living in a BIG CITY, where do I shop?"])
    llm = ScriptedLLM(lambda messages, role, wants_json: next(replies))
    simulator = LLMUserSimulator(llm, seed=3)
    reply = await simulator.follow_up(item, 0, item.periods[0].sessions[0], conversation(1), NOW)
    assert reply in NEUTRAL_FOLLOW_UPS
    assert "vegan" in llm.calls[1]["messages"][-1]["content"] and "must not reveal" in llm.calls[1]["messages"][-1]["content"]
    assert (simulator.stats.calls, simulator.stats.reasked, simulator.stats.fallbacks) == (1, 1, 1)


async def test_second_try_is_used_when_clean() -> None:
    item = make_item()
    replies = iter(["I'm vegan, so?", "What spices go well with lentils?"])
    simulator = LLMUserSimulator(ScriptedLLM(lambda messages, role, wants_json: next(replies)))
    reply = await simulator.follow_up(item, 0, item.periods[0].sessions[0], conversation(1), NOW)
    assert reply == "What spices go well with lentils?"
    assert (simulator.stats.reasked, simulator.stats.fallbacks) == (1, 0)
