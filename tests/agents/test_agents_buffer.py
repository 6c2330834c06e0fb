"""Buffer arithmetic (reference E.2) against hand-worked traces, for the agents that share it."""

import json

import pytest

from tests.agents.test_agents_support import converse, day, json_calls, make, scripted


def flushed_batches(llm) -> list[list[str]]:
    """The message contents of each AWI write request, in order."""
    batches = []
    for prompt in json_calls(llm):
        conversation = prompt.split("Latest conversation (JSON list of messages):\n", 1)[1].split("\n", 1)[0]
        batches.append([m["content"] for m in json.loads(conversation)])
    return batches


async def test_awi_2_4_trace():
    # Hand-worked: the buffer holds 2, 4, 6 messages after rounds 1-3; at 6 (= 2 + 4) the oldest round
    # is written, so rounds 3, 4, 5 flush rounds 1, 2, 3 and the last two rounds stay raw.
    llm = scripted()
    agent = make("awi", llm, update_every=2, short_term=4)
    await converse(agent, 2)
    assert flushed_batches(llm) == []
    await converse(agent, 3, start=3)
    assert flushed_batches(llm) == [["u1", "Noted."], ["u2", "Noted."], ["u3", "Noted."]]
    assert [m.content for m in agent.buffer] == ["u4", "Noted.", "u5", "Noted."]
    # The reply to round 5 saw the two raw rounds before it, then the new message.
    last_chat = [c for c in llm.calls if not c["json"]][-1]["messages"]
    assert [m["content"] for m in last_chat[1:]] == ["u3", "Noted.", "u4", "Noted.", "u5"]


async def test_awi_8_0_trace():
    # Hand-worked: nothing is written until 8 messages (round 4); then all 8 go at once and the
    # buffer is empty; round 8 flushes rounds 5-8.
    llm = scripted()
    agent = make("awi", llm, update_every=8, short_term=0)
    await converse(agent, 3)
    assert flushed_batches(llm) == []
    await converse(agent, 1, start=4)
    assert flushed_batches(llm) == [[x for i in range(1, 5) for x in (f"u{i}", "Noted.")]]
    assert agent.buffer == []
    await converse(agent, 4, start=5)
    assert len(flushed_batches(llm)) == 2
    assert flushed_batches(llm)[1][0] == "u5" and agent.buffer == []


@pytest.mark.parametrize("flush", [False, True])
async def test_end_session_flushes_only_when_asked(flush):
    llm = scripted()
    agent = make("awi", llm, update_every=2, short_term=4, flush_on_session_end=flush)
    await converse(agent, 5)
    await agent.end_session(day(6))
    if flush:
        assert flushed_batches(llm)[3:] == [["u4", "Noted."], ["u5", "Noted."]]
        assert agent.buffer == []
    else:
        assert len(flushed_batches(llm)) == 3 and len(agent.buffer) == 4


async def test_rag_uses_the_same_trace_and_message_times():
    agent = make("rag", scripted(), update_every=2, short_term=4)
    await converse(agent, 4)
    rows = agent.store.all()
    assert [r.text for r in rows] == [
        "USER INPUT: u1", "ASSISTANT RESPONSE: Noted.", "USER INPUT: u2", "ASSISTANT RESPONSE: Noted.",
    ]
    assert [r.created_at for r in rows] == [day(1), day(1), day(2), day(2)]


async def test_ingest_follows_the_buffer_without_calling_the_llm_to_reply():
    llm = scripted()
    agent = make("awi", llm, update_every=2, short_term=0)
    await agent.ingest("I moved to Oslo", "Nice!", day(1))
    assert [c["json"] for c in llm.calls] == [True]
    assert flushed_batches(llm) == [["I moved to Oslo", "Nice!"]]
