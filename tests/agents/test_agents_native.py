"""Native: the whole conversation as context, optional token budget, pure answers."""

import json

from memevo.agents.native import approx_tokens
from memevo.agents.prompts.dates import session_header
from tests.agents.test_agents_support import day, make, reloaded, scripted


async def test_whole_history_is_sent_and_kept():
    llm = scripted(chat="ok")
    agent = make("native", llm)
    for i in range(3):
        await agent.respond(f"m{i}", day(i))
    dates = [session_header(day(i)) for i in range(3)]
    assert [m["content"] for m in llm.calls[-1]["messages"]] == [f"{dates[0]}\nm0", "ok", f"{dates[1]}\nm1", "ok",
                                                                 f"{dates[2]}\nm2"]
    assert len(agent.history) == 6


async def test_token_budget_drops_oldest_messages_first():
    llm = scripted(chat="ok")
    agent = make("native", llm, context_token_budget=30)
    for i in range(6):
        await agent.respond("x" * 40, day(0))  # 14 approx tokens per user message, 5 per reply, one date line
    sent = llm.calls[-1]["messages"]
    assert sum(approx_tokens(m) for m in sent) <= 30
    assert sent[-1]["content"] == "x" * 40 and sent[-2]["content"] == "ok"
    assert len(agent.history) == 12  # the budget trims the prompt, not the stored history


async def test_system_prompt_component_and_pure_answer():
    llm = scripted(chat="A")
    agent = make("native", llm, prompts={"system_prompt": "Be brief {not a slot}."})
    await agent.respond("I am Ana", day(0))
    before = json.dumps(agent.state())
    answer = await agent.answer("Name? (1) Ana", query="Name?", now=day(1))
    assert json.dumps(agent.state()) == before
    assert answer.consulted_memory == f"user: {session_header(day(0))}\nI am Ana\nassistant: A"
    assert llm.calls[-1]["messages"][0] == {"role": "system", "content": "Be brief {not a slot}."}
    twin = reloaded(agent, scripted(chat="A"))
    assert twin.state() == agent.state()


async def test_each_session_starts_with_its_date_once_and_compat_shows_none():
    llm = scripted(chat="ok")
    agent = make("native", llm)
    await agent.ingest("I adopted Rex", "nice", day(0))
    await agent.ingest("He is two", "ok", day(0))
    await agent.end_session(day(0))
    twin = reloaded(agent, scripted(chat="ok"))
    await twin.ingest("Rex learned to sit", "", day(5))
    contents = [m["content"] for m in twin.history if m["role"] == "user"]
    assert contents == [f"{session_header(day(0))}\nI adopted Rex", "He is two",
                        f"{session_header(day(5))}\nRex learned to sit"]
    assert "6 March 2021" in session_header(day(5))
    compat = make("native", scripted(chat="ok"), amemgym_compat=True)
    await compat.ingest("I adopted Rex", "nice", day(0))
    assert compat.history[0]["content"] == "I adopted Rex" and "shown_date" not in compat.state()
