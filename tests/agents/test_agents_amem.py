"""The amem kind (A-Mem after its paper): notes, links, memory evolution, retrieval with linked notes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from memevo.agents.base import MemoryAgent
from memevo.agents.llm.accounting import Accounting
from memevo.agents.llm.config import LLMConfig
from memevo.agents.llm.gateway import LLMGateway
from memevo.agents.memory_systems.amem_agent import AMemAgent, evolution_parser, link_parser
from memevo.agents.memory_systems.amem_prompts import (
    EVOLUTION_FORMAT_CLAUSE,
    LINK_FORMAT_CLAUSE,
    NOTE_FORMAT_CLAUSE,
)
from memevo.agents.policy import MemoryPolicy
from memevo.agents.registry import build_agent
from tests.agents.test_agents_support import day, scripted
from tests.doubles.fault_server import FaultServer
from tests.doubles.memory_system_replies import memory_system_reply

POLICY = MemoryPolicy(kind="amem", update_every=2, short_term=0, top_k=1)
EVOLVED_NOTE = ("Label this exchange for later, dated {today}:\n{content}\n" + NOTE_FORMAT_CLAUSE)
# The fake endpoint finds the new note and the listed notes under these headings, as in the default prompts.
EVOLVED_LINK = "Join related notes.\nNew note:\n{note}\n\nSimilar stored notes:\n{candidates}\n\n" + LINK_FORMAT_CLAUSE
EVOLVED_EVOLUTION = "Refresh old notes.\nNew note:\n{note}\n\nLinked notes:\n{neighbours}\n\n" + EVOLUTION_FORMAT_CLAUSE
EVOLVED_ANSWER = "Answer from your notes:\n{memories}"


@pytest.fixture
async def server() -> AsyncIterator[FaultServer]:
    with FaultServer(memory_system_reply) as running:
        yield running


def agent_on(server: FaultServer, policy: MemoryPolicy = POLICY) -> AMemAgent:
    gateway = LLMGateway(LLMConfig(model="fake-chat"), base_url=server.url, cache=None, accounting=Accounting())
    agent = build_agent(policy, gateway)
    assert isinstance(agent, AMemAgent)
    return agent


async def tell(agent: MemoryAgent, *lines: str) -> None:
    for i, line in enumerate(lines):
        await agent.respond(line, day(i))


def prompts_sent(server: FaultServer) -> list[str]:
    return [body["messages"][-1]["content"] for body in server.requests if "response_format" in body]


async def test_a_note_gets_keywords_tags_and_context_from_the_policys_prompt(server):
    agent = agent_on(server, POLICY.with_prompts(note_prompt=EVOLVED_NOTE))
    await tell(agent, "I keep bees in Oslo")
    assert prompts_sent(server) == [EVOLVED_NOTE.replace("{today}", "2021-03-01").replace(
        "{content}", "user: I keep bees in Oslo\nassistant: ok")]
    (note,) = agent.notes
    assert note.keywords == ["keep", "bees", "oslo"] and note.tags == ["personal"]
    assert note.context == "I keep bees in Oslo" and note.links == []


async def test_the_link_evolution_and_answer_prompts_are_the_policys(server):
    policy = POLICY.with_prompts(link_prompt=EVOLVED_LINK, evolution_prompt=EVOLVED_EVOLUTION,
                                 answer_system_prompt=EVOLVED_ANSWER)
    agent = agent_on(server, policy)
    await tell(agent, "I keep bees in Oslo", "The bees swarmed today")
    _, _, link, evolution = prompts_sent(server)
    assert link.startswith("Join related notes.\nNew note:\nuser: The bees swarmed today\n")
    assert evolution.startswith("Refresh old notes.\nNew note:\nuser: The bees swarmed today\n")
    assert agent.notes[0].context == "revised: user: The bees swarmed today"  # the evolved prompt's reply was used
    await agent.answer("q", query="bees", now=day(9))
    system = server.requests[-1]["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("Answer from your notes:\n- [")


async def test_related_notes_are_linked_both_ways_and_evolved(server):
    agent = agent_on(server)
    await tell(agent, "I keep bees in Oslo", "My tea is oolong", "The bees swarmed today")
    bees, tea, swarm = agent.notes
    assert swarm.links == [bees.id] and bees.links == [swarm.id] and tea.links == []
    assert bees.context == "revised: user: The bees swarmed today"
    link_prompt, evolution_prompt = prompts_sent(server)[-2:]
    assert "Similar stored notes" in link_prompt and "Linked notes" in evolution_prompt


async def test_a_reply_sees_the_top_k_notes_and_the_notes_linked_to_them(server):
    agent = agent_on(server)
    await tell(agent, "I keep bees in Oslo", "My tea is oolong", "The bees swarmed today")
    memory = (await agent.answer("q", query="what swarmed?", now=day(9))).consulted_memory
    lines = memory.splitlines()
    assert len(lines) == 2 and "I keep bees in Oslo" in lines[0] and "swarmed" in lines[1]  # hit + its link, oldest first
    assert all(line.startswith("- [") and "2021, " in line for line in lines)  # each note with its date


async def test_embedding_retrieval_goes_through_the_gateway(server):
    agent = agent_on(server, POLICY.with_hyperparameters(retrieval="embedding", embedding_model="fake-embed"))
    await tell(agent, "I keep bees in Oslo", "My tea is oolong")
    await agent.answer("q", query="tea", now=day(9))
    assert "/v1/embeddings" in server.paths


async def test_answers_do_not_change_state_and_state_round_trips(server):
    agent = agent_on(server)
    await tell(agent, "I keep bees in Oslo", "The bees swarmed today")
    before = json.dumps(agent.state())
    answer = await agent.answer("q", query="bees", now=day(9))
    assert json.dumps(agent.state()) == before
    twin = agent_on(server)
    twin.load_state(json.loads(before))
    assert twin.state() == agent.state() and await twin.answer("q", query="bees", now=day(9)) == answer


async def test_a_malformed_note_reply_is_retried_then_the_note_is_kept_bare():
    agent = build_agent(POLICY, scripted(['["not", "an object"]', "{}"], chat="ok"))
    assert isinstance(agent, AMemAgent)
    await tell(agent, "I keep bees")
    assert (agent.counters.retries, agent.counters.failures) == (1, 0)
    assert agent.notes[0].keywords == []  # {} is a note without keywords
    agent = build_agent(POLICY, scripted(['["x"]', '["y"]'], chat="ok"))
    assert isinstance(agent, AMemAgent)
    await tell(agent, "I keep bees")
    assert (agent.counters.retries, agent.counters.failures) == (1, 1) and agent.notes[0].context == ""


def test_replies_may_only_name_notes_that_were_shown():
    from memevo.agents.buffered import MalformedReply

    assert link_parser(2)({"links": ["1", "0", "1"]}) == [0, 1]
    with pytest.raises(MalformedReply):
        link_parser(2)({"links": ["2"]})
    assert evolution_parser(1)({"updates": [{"id": "0", "tags": "a, b"}]}) == {0: {"tags": ["a", "b"]}}
    with pytest.raises(MalformedReply):
        evolution_parser(1)({"updates": [{"id": "7", "context": "x"}]})
