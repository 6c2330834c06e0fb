"""AWE: fact extraction, add/update/delete/keep against similar memories, malformed replies, SQLite."""

import json

from memevo.agents.awe import AWEAgent
from memevo.agents.policy import MemoryPolicy
from memevo.agents.prompts.dates import dated
from tests.agents.test_agents_support import day, json_calls, make, reloaded, scripted


def texts(agent) -> list[str]:
    return [m.text for m in agent.store.all()]


async def test_add_update_delete_keep():
    replies = [
        '{"facts": ["Lives in Oslo", "Has a cat named Tom"]}',  # empty store: both added without asking
        '{"facts": ["Moved from Oslo to Bergen"]}',
        '{"action": "update", "id": "0", "text": "Lives in Bergen (moved from Oslo)"}',
        '{"facts": ["Cat Tom passed away"]}',
        '{"action": "delete", "id": "0"}',
        '{"facts": ["Lives in Bergen"]}',
        '{"action": "keep"}',
        '{"facts": ["Plays chess in Bergen"]}',
        '{"action": "add", "text": "Plays chess weekly"}',
    ]
    llm = scripted(replies)
    agent = make("awe", llm, update_every=2, short_term=0)
    await agent.respond("I live in Oslo with my cat Tom", day(1))
    assert texts(agent) == ["Lives in Oslo", "Has a cat named Tom"]
    await agent.respond("We moved to Bergen", day(40))
    assert texts(agent) == ["Lives in Bergen (moved from Oslo)", "Has a cat named Tom"]
    assert agent.store.all()[0].updated_at == day(40) and agent.store.all()[0].created_at == day(1)
    await agent.respond("Sadly Tom died", day(50))
    assert texts(agent) == ["Lives in Bergen (moved from Oslo)"]
    await agent.respond("Bergen is rainy", day(51))
    await agent.respond("I joined a chess club in Bergen", day(52))
    assert texts(agent) == ["Lives in Bergen (moved from Oslo)", "Plays chess weekly"]
    assert [h["event"] for h in agent.store.history()] == ["add", "add", "update", "delete", "add"]
    assert agent.counters.failures == 0
    # The update prompt showed the similar memories with local ids and the simulated date.
    update_prompt = json_calls(llm)[2]
    assert '{"id": "0", "text": "Lives in Oslo"}' in update_prompt and "Today is 2021-04-10." in update_prompt


async def test_out_of_range_id_is_retried_then_skipped():
    replies = ['{"facts": ["Likes jazz"]}', '{"facts": ["Likes jazz a lot"]}', '{"action": "delete", "id": "7"}', '{"action": "update"}']
    llm = scripted(replies)
    agent = make("awe", llm, update_every=2, short_term=0)
    await agent.respond("jazz", day(1))
    await agent.respond("jazz!", day(2))
    assert texts(agent) == ["Likes jazz"]
    assert agent.counters.model_dump() == {"requests": 3, "retries": 1, "failures": 1}
    # The retry carried the bad reply and a reminder naming the problem.
    retry = [call["messages"] for call in llm.calls if call["json"]][-1]
    assert retry[1] == {"role": "assistant", "content": '{"action": "delete", "id": "7"}'}
    assert "could not be used: id '7' is not one of the 1 memories shown." in retry[2]["content"]


async def test_malformed_fact_list_is_counted_not_fatal():
    agent = make("awe", scripted(['{"facts": "not a list"}', '{"facts": [1, 2]}']), update_every=2, short_term=0)
    await agent.respond("hello", day(1))
    assert texts(agent) == [] and agent.counters.failures == 1


async def test_answer_retrieves_top_k_and_changes_nothing():
    agent = make("awe", scripted(['{"facts": ["Allergic to peanuts", "Drives a red Volvo car"]}'], chat="ok"), update_every=2, short_term=0, top_k=1)
    await agent.respond("facts", day(1))
    before = json.dumps(agent.state())
    answer = await agent.answer("Which car? (1) Volvo (2) Fiat", query="which car do I drive?", now=day(3))
    assert answer.consulted_memory == f"- {dated('Drives a red Volvo car', day(1))}"
    assert json.dumps(agent.state()) == before


async def test_state_round_trip_and_sqlite_file(tmp_path):
    replies = ['{"facts": ["Runs marathons"]}', '{"facts": ["Runs ultra marathons now"]}', '{"action": "update", "id": "0", "text": "Runs ultra marathons"}']
    db = tmp_path / "mem.db"
    agent = AWEAgent(MemoryPolicy(kind="awe", update_every=2, short_term=0), scripted(replies), db_path=str(db))
    await agent.respond("running", day(1))
    await agent.respond("more running", day(2))
    agent.store.close()
    reopened = AWEAgent(agent.policy, scripted(), db_path=str(db))
    assert texts(reopened) == ["Runs ultra marathons"]
    twin = reloaded(reopened, scripted())
    assert twin.state() == reopened.state()
    assert twin.store.history() == reopened.store.history()
    # Ids continue after restore, never reusing a deleted id.
    twin.store.add("new", day(3))
    assert [m.id for m in twin.store.all()] == [0, 1]
