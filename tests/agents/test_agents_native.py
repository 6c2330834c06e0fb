"""Native: the whole conversation as context, optional token budget, pure answers."""

import json

from memevo.agents.native import approx_tokens
from tests.agents.test_agents_support import day, make, reloaded, scripted


async def test_whole_history_is_sent_and_kept():
    llm = scripted(chat="ok")
    agent = make("native", llm)
    for i in range(3):
        await agent.respond(f"m{i}", day(i))
    assert [m["content"] for m in llm.calls[-1]["messages"]] == ["m0", "ok", "m1", "ok", "m2"]
    assert len(agent.history) == 6


async def test_token_budget_drops_oldest_messages_first():
    llm = scripted(chat="ok")
    agent = make("native", llm, context_token_budget=30)
    for i in range(6):
        await agent.respond("x" * 40, day(i))  # 14 approx tokens per user message, 5 per reply
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
    assert answer.consulted_memory == "user: I am Ana\nassistant: A"
    assert llm.calls[-1]["messages"][0] == {"role": "system", "content": "Be brief {not a slot}."}
    twin = reloaded(agent, scripted(chat="A"))
    assert twin.state() == agent.state()
