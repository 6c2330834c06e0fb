"""The mem0 kind: Mem0's library behind the gateway, against the fake endpoint (chat and embeddings, real HTTP)."""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from collections.abc import AsyncIterator
from importlib.util import find_spec

import pytest

from memevo.agents.base import MemoryAgent
from memevo.agents.llm.accounting import Accounting
from memevo.agents.llm.config import LLMConfig
from memevo.agents.llm.gateway import LLMGateway
from memevo.agents.memory_systems.mem0_agent import import_mem0, mem0_can_use
from memevo.agents.memory_systems.mem0_prompts import FACT_EXTRACTION_PROMPT
from memevo.agents.policy import MemoryPolicy
from memevo.agents.registry import build_agent, validate_policy
from memevo.core.errors import UserInputError
from tests.agents.test_agents_support import day, scripted
from tests.doubles.fault_server import FaultServer
from tests.doubles.memory_system_replies import memory_system_reply

# Found, not imported: the agent imports Mem0 itself, with its telemetry off.
pytestmark = pytest.mark.skipif(find_spec("mem0") is None, reason="needs pip install 'memevo[mem0]'")

POLICY = MemoryPolicy(kind="mem0", update_every=2, short_term=0, top_k=5, embedding_model="fake-embed")
EVOLVED_FACTS = ("Write down each thing the user tells about themselves; the date is {today}.\n"
                 'Return JSON only, in the form {"facts": ["first fact", "second fact"]}.')
EVOLVED_UPDATE = "Merge new facts into memory; never delete anything. Today is {today}."


@pytest.fixture
async def server() -> AsyncIterator[FaultServer]:
    with FaultServer(memory_system_reply) as running:
        yield running


def agent_on(server: FaultServer, policy: MemoryPolicy = POLICY) -> tuple[MemoryAgent, Accounting]:
    accounting = Accounting()
    gateway = LLMGateway(LLMConfig(model="fake-chat"), base_url=server.url, cache=None, accounting=accounting)
    return build_agent(policy, gateway), accounting


async def tell(agent: MemoryAgent, *lines: str) -> None:
    for i, line in enumerate(lines):
        await agent.respond(line, day(i))


def write_requests(server: FaultServer) -> list[list[dict[str, str]]]:
    return [body["messages"] for body in server.requests if "response_format" in body]


async def test_the_policys_prompts_are_the_ones_mem0_sends(server):
    policy = POLICY.with_prompts(fact_extraction_prompt=EVOLVED_FACTS, update_memory_prompt=EVOLVED_UPDATE)
    agent, _ = agent_on(server, policy)
    await tell(agent, "I live in Paris")
    extraction, update = write_requests(server)
    assert extraction[0] == {"role": "system", "content": EVOLVED_FACTS.replace("{today}", "2021-03-01")}
    assert extraction[1]["content"].startswith("Input:\nuser: I live in Paris")
    assert update[0]["content"].startswith("Merge new facts into memory; never delete anything. Today is 2021-03-01.")


async def test_the_policys_memory_types_and_answer_prompt_are_the_ones_sent(server):
    policy = POLICY.with_prompts(memory_types="- the user's pets and nothing else",
                                 answer_system_prompt="Answer from what you remember:\n{memories}")
    agent, _ = agent_on(server, policy)
    await tell(agent, "I live in Paris")
    extraction, _ = write_requests(server)
    assert "- the user's pets and nothing else" in extraction[0]["content"]
    await agent.answer("q", query="where do I live?", now=day(9))
    (answer,) = [body["messages"] for body in server.requests if "response_format" not in body
                 and body.get("messages") and body["messages"][-1]["content"] == "q"]
    assert answer[0]["role"] == "system"
    assert answer[0]["content"].startswith("Answer from what you remember:\n- [") and "I live in Paris" in answer[0]["content"]


async def test_the_default_prompts_are_memevos_with_the_simulated_date(server):
    agent, _ = agent_on(server)
    await tell(agent, "I live in Paris", "I keep bees")
    systems = [messages[0]["content"] for messages in write_requests(server) if messages[0]["role"] == "system"]
    assert len(systems) == 2 and systems[1].startswith(FACT_EXTRACTION_PROMPT.split("{memory_types}")[0])
    assert "Today is 2021-03-02." in systems[1] and "{" + "today}" not in systems[1]


async def test_mem0_updates_a_memory_and_retrieves_by_embedding(server):
    agent, accounting = agent_on(server)
    await tell(agent, "I live in Paris", "I love oolong tea", "I moved to Oslo")
    memory = (await agent.answer("q", query="where do I live?", now=day(9))).consulted_memory
    # The updated memory keeps the creation time of the one it replaced (Mem0 stamps updates with the wall clock).
    assert [line.split("] ", 1)[1] for line in memory.splitlines()] == ["I moved to Oslo", "I love oolong tea"]
    assert all(line.startswith("- [") and "2021, " in line for line in memory.splitlines())  # simulated dates
    assert "/v1/embeddings" in server.paths
    usage = accounting.report().by_role["agent"]
    assert usage.calls == len(server.requests) and usage.prompt_tokens > 0
    assert agent.state()["counters"]["requests"] == 6  # extraction and update, per write


async def test_top_k_limits_what_a_reply_sees(server):
    agent, _ = agent_on(server, POLICY.with_hyperparameters(top_k=1))
    await tell(agent, "I live in Paris", "I love oolong tea")
    assert len((await agent.answer("q", query="tea", now=day(9))).consulted_memory.splitlines()) == 1


async def test_answers_do_not_change_state_and_state_round_trips(server):
    agent, _ = agent_on(server)
    await tell(agent, "I live in Paris", "I love oolong tea")
    before = json.dumps(agent.state())
    answer = await agent.answer("q", query="tea", now=day(9))
    assert json.dumps(agent.state()) == before
    twin, _ = agent_on(server)
    twin.load_state(json.loads(before))
    assert twin.state() == agent.state()
    assert await twin.answer("q", query="tea", now=day(9)) == answer


async def test_concurrent_answers_leave_the_saved_vectors_as_they_were(server):
    """Qdrant's in-process store hands back a vector in other bits after searches; the state keeps the endpoint's."""
    agent, _ = agent_on(server)
    await tell(agent, "I live in Paris", "I love oolong tea", "My dog is Rex")
    before = json.dumps(agent.state())
    await asyncio.gather(*(agent.answer("q", query=q, now=day(9)) for q in ("home?", "tea?", "dog?", "Rex")))
    assert json.dumps(agent.state()) == before


async def test_an_empty_agent_round_trips_and_answers_from_nothing(server):
    agent, _ = agent_on(server)
    twin, _ = agent_on(server)
    twin.load_state(json.loads(json.dumps(agent.state())))
    assert (await twin.answer("q", query="tea", now=day(1))).consulted_memory == ""


def test_mem0_needs_an_embeddings_model_and_a_client_that_embeds():
    with pytest.raises(UserInputError, match="agent kind 'mem0' needs embedding_model"):
        build_agent(MemoryPolicy(kind="mem0"), scripted())
    with pytest.raises(UserInputError, match="can embed texts; ScriptedLLM cannot") as caught:
        build_agent(POLICY, scripted())
    assert caught.value.field == "llm"


def test_a_missing_extra_is_one_line_naming_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "mem0.memory.main", None)  # import fails as if mem0ai were absent
    with pytest.raises(UserInputError) as caught:
        build_agent(POLICY, scripted())
    assert str(caught.value).count("\n") == 0 and "pip install 'memevo[mem0]'" in str(caught.value)


def test_an_evolved_fact_prompt_must_keep_the_reply_format():
    with pytest.raises(UserInputError, match="missing output-format clause") as caught:
        validate_policy(POLICY.with_prompts(fact_extraction_prompt="List the facts."))
    assert caught.value.field == "prompts.fact_extraction_prompt"


async def test_a_reply_mem0_cannot_read_is_counted_as_a_failed_write():
    def reply(body: dict) -> str:
        return "no facts today" if "response_format" in body else "ok"

    with FaultServer(reply) as server:
        agent, _ = agent_on(server)
        await tell(agent, "I live in Paris")
    assert agent.state()["counters"] == {"requests": 1, "retries": 0, "failures": 1}
    assert (await agent.answer("q", query="Paris", now=day(2))).consulted_memory == ""


async def test_facts_mem0_skips_every_one_of_are_a_failed_write():
    """Small models write facts as objects; Mem0 drops those without "fact" or "text" and stores nothing."""
    def reply(body: dict) -> str:
        return json.dumps({"facts": [{"name": "John", "age": 25}]}) if "response_format" in body else "ok"

    with FaultServer(reply) as server:
        agent, _ = agent_on(server)
        await tell(agent, "I live in Paris")
    assert agent.state()["counters"] == {"requests": 1, "retries": 0, "failures": 1}
    assert (await agent.answer("q", query="Paris", now=day(2))).consulted_memory == ""


@pytest.mark.parametrize(("reply", "usable"), [
    ('{"facts": []}', True), ('{"facts": [{"fact": "Lives in Paris"}, {"name": "x"}]}', True),
    ('```json\n{"memory": []}\n```', True), ('{"facts": [""]}', False), ('{"answer": "Paris"}', False),
])
def test_which_write_replies_mem0_can_use(reply, usable):
    import_mem0()
    assert mem0_can_use(reply) is usable


def test_mem0s_telemetry_is_off_even_when_mem0_was_imported_with_it_on(monkeypatch):
    monkeypatch.setenv("MEM0_TELEMETRY", "True")
    telemetry = importlib.import_module("mem0.memory.telemetry")
    monkeypatch.setattr(telemetry, "MEM0_TELEMETRY", True)
    import_mem0()
    assert telemetry.MEM0_TELEMETRY is False and sys.modules["mem0.memory.main"].MEM0_TELEMETRY is False
