"""Every built-in agent asks its LLM with the schema ``answer`` is given, and with none otherwise."""

from __future__ import annotations

import pytest

from tests.agents.test_agents_support import converse, day, make
from tests.doubles.scripted_llm import ScriptedLLM

SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer", "enum": [1, 2]}}, "required": ["answer"]}


@pytest.mark.parametrize("kind", ["native", "rag", "awi", "awe"])
async def test_answer_passes_the_schema_to_the_llm(kind: str) -> None:
    def handler(messages, role, wants_json):  # type: ignore[no-untyped-def]
        if messages[-1]["content"] == "Pick one.":
            return '{"answer": 2}'
        return "{}" if wants_json else "Noted."

    llm = ScriptedLLM(handler)
    agent = make(kind, llm)
    await converse(agent, 3)
    before = agent.state()
    constrained = await agent.answer("Pick one.", query="Pick", now=day(9), json_schema=SCHEMA)
    free = await agent.answer("Pick one.", query="Pick", now=day(9))
    assert constrained.text == '{"answer": 2}'  # raw reply text, parsed by the runner
    last_two = llm.calls[-2:]
    assert [call["json_schema"] for call in last_two] == [SCHEMA, None]
    assert all(call["messages"][-1]["content"] == "Pick one." for call in last_two)
    assert agent.state() == before and free.text
