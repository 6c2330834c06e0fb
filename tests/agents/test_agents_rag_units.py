"""RAG's memory units: one memory per message (BM25-M / Emb-M) or per session (BM25-S / Emb-S)."""

from memevo.agents.policy import MemoryPolicy
from memevo.agents.prompts.dates import dated
from memevo.agents.rag import RAGAgent
from tests.agents.test_agents_support import day, make, reloaded, scripted


def session_agent(**fields) -> RAGAgent:
    agent = make("rag", scripted(chat="ok"), update_every=2, short_term=2, memory_unit="session", **fields)
    assert isinstance(agent, RAGAgent)
    return agent


async def test_a_session_is_one_memory_growing_as_its_messages_are_flushed():
    agent = session_agent()
    await agent.respond("I keep bees", day(0))
    await agent.respond("The hive is on the roof", day(0))
    assert [m.text for m in agent.store.all()] == ["USER INPUT: I keep bees\nASSISTANT RESPONSE: ok"]
    await agent.respond("Honey is sold on Fridays", day(0))
    assert [m.text for m in agent.store.all()] == [
        "USER INPUT: I keep bees\nASSISTANT RESPONSE: ok\nUSER INPUT: The hive is on the roof\nASSISTANT RESPONSE: ok"]


async def test_the_end_of_a_session_flushes_its_last_messages_into_it_and_closes_it():
    agent = session_agent()
    await agent.respond("I keep bees", day(0))
    await agent.respond("The hive is on the roof", day(0))
    await agent.end_session(day(0))
    assert agent.buffer == []
    await agent.respond("I moved to Oslo", day(5))
    await agent.end_session(day(5))
    texts = [m.text for m in agent.store.all()]
    assert len(texts) == 2 and texts[0].endswith("USER INPUT: The hive is on the roof\nASSISTANT RESPONSE: ok")
    assert texts[1] == "USER INPUT: I moved to Oslo\nASSISTANT RESPONSE: ok"


async def test_session_retrieval_returns_the_whole_session():
    agent = session_agent(top_k=1)
    for text, when in (("I keep bees", 0), ("The hive is on the roof", 0)):
        await agent.respond(text, day(when))
    await agent.end_session(day(0))
    await agent.respond("I moved to Oslo", day(5))
    await agent.end_session(day(5))
    answer = await agent.answer("q", query="where is the hive?", now=day(6))
    assert answer.consulted_memory.startswith(f"- {dated('USER INPUT: I keep bees', day(0))}\n")
    assert "roof" in answer.consulted_memory


async def test_the_open_session_survives_a_state_round_trip():
    agent = session_agent()
    await agent.respond("I keep bees", day(0))
    await agent.respond("The hive is on the roof", day(0))
    twin = reloaded(agent, scripted(chat="ok"))
    for each in (agent, twin):
        await each.respond("Honey is sold on Fridays", day(0))
    assert twin.state() == agent.state() and len(twin.store.all()) == 1  # type: ignore[attr-defined]


async def test_message_units_keep_the_policy_id_and_state_of_before():
    policy = MemoryPolicy(kind="rag")
    assert "memory_unit" not in policy.canonical_json()
    assert MemoryPolicy(kind="rag", memory_unit="session").policy_id != policy.policy_id
    agent = make("rag", scripted(chat="ok"), update_every=2, short_term=0)
    await agent.respond("I keep bees", day(0))
    await agent.end_session(day(0))
    assert set(agent.state()["memory"]) == {"memories", "history", "next_id"}
    assert len(agent.store.all()) == 2  # type: ignore[attr-defined]
