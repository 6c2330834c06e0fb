"""Longest remaining chain first: the limiter's queue and replies that land together."""

from __future__ import annotations

import asyncio

from memevo.agents.llm.limiter import ConcurrencyLimit
from memevo.agents.llm.urgency import Chain, chain_remaining, current_chain, in_urgency_order, urgency
from memevo.environments.amemgym.simulators.template import TemplateUserSimulator
from memevo.environments.runner import EpisodeConfig, run_episode
from tests.agents.test_agents_support import make
from tests.doubles.scripted_agents import make_item
from tests.doubles.scripted_llm import ScriptedLLM


async def _in_chain(remaining: int, work) -> None:
    with chain_remaining(Chain(remaining)):
        await work(remaining)


async def test_a_freed_slot_goes_to_the_most_urgent_waiter_then_in_arrival_order():
    limit = ConcurrencyLimit(1)
    await limit._acquire()
    served: list[int] = []

    async def wait_for_slot(remaining: int) -> None:
        async with limit.slot():
            served.append(remaining)

    waiters = [asyncio.create_task(_in_chain(remaining, wait_for_slot)) for remaining in (1, 7, 0, 3, 7)]
    await asyncio.sleep(0)
    limit._release()
    await asyncio.gather(*waiters)
    assert served == [7, 7, 3, 1, 0]
    assert limit.in_flight == 0


async def test_replies_of_one_turn_go_on_most_urgent_first():
    landed = asyncio.get_running_loop().create_future()
    went_on: list[int] = []

    async def reply_lands(remaining: int) -> None:
        await landed  # all wake in the same turn, as replies read from one poll do
        await in_urgency_order()
        went_on.append(remaining)

    tasks = [asyncio.create_task(_in_chain(remaining, reply_lands)) for remaining in (2, 9, 5)]
    outside = asyncio.create_task(reply_lands(0))  # no chain announced: does not wait its turn
    await asyncio.sleep(0)
    landed.set_result(None)
    await asyncio.gather(*tasks, outside)
    assert went_on == [0, 9, 5, 2]


def test_outside_a_chain_urgency_is_zero_and_advancing_changes_nothing():
    assert urgency() == 0
    current_chain().advance()
    assert urgency() == 0


async def test_an_episode_announces_its_chain_and_shortens_it_as_it_goes():
    item = make_item()
    config = EpisodeConfig()
    seen: list[int] = []

    def reply(messages, role, wants_json) -> str:
        seen.append(urgency())
        return '{"answer": "A"}' if wants_json else "noted"

    await run_episode(make("native", ScriptedLLM(reply)), item, TemplateUserSimulator(seed=0), config)
    rounds = sum(len(period.sessions) * config.rounds(index) for index, period in enumerate(item.periods))
    assert seen[0] == rounds + len(item.periods)  # every conversation round and every period's questions
    assert seen == sorted(seen, reverse=True) and seen[-1] >= 1
