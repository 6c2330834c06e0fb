"""Every built-in agent kind end to end against the real local model (SmolLM2-135M via llama-cpp).

A hand-made two-period item driven directly (agents may not import environments): one two-round
session per period, with a simulated-time prefix on the first message, an end-of-session flush, then a question.
The checks are about the records, not the tiny model's accuracy.
"""

import json
from datetime import datetime

import pytest

from memevo.agents.llm.config import LLMConfig
from memevo.agents.llm.hub import LLMHub
from memevo.agents.policy import MemoryPolicy
from memevo.agents.registry import build_agent

pytestmark = pytest.mark.integration

PERIODS = [
    [(datetime(2021, 1, 5, 10), ["I just started a new job as a baker in Lyon.", "Any tips for waking up at 4am?"])],
    [(datetime(2021, 5, 3, 9), ["I quit the bakery and now I teach yoga.", "What should I charge per class?"])],
]
QUESTION = "What is my current job?"
PROMPT = f"{QUESTION}\n(1) baker\n(2) yoga teacher\n(3) nurse\nReply with the number of the best choice."


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    with LLMHub(cache_dir=tmp_path_factory.mktemp("llm-cache")) as hub:
        yield hub


@pytest.mark.parametrize("kind", ["native", "rag", "awi", "awe"])
async def test_agent_runs_two_periods_on_the_local_model(hub, kind):
    policy = MemoryPolicy(
        kind=kind, update_every=2, short_term=2, top_k=5, flush_on_session_end=True, llm=LLMConfig(max_tokens=64)
    )
    agent = build_agent(policy, hub.client(policy.llm))
    answers = []
    for sessions in PERIODS:
        for when, messages in sessions:
            for index, message in enumerate(messages):
                text = f"[Current Time: {when:%Y-%m-%d}]\n{message}" if index == 0 else message
                reply = await agent.respond(text, when)
                assert isinstance(reply, str)
            await agent.end_session(when)
        state = json.dumps(agent.state())
        answer = await agent.answer(PROMPT, query=QUESTION, now=sessions[-1][0])
        assert json.dumps(agent.state()) == state, "answer() changed the state"
        assert isinstance(answer.text, str) and answer.text.strip()
        answers.append(answer)

    state = json.loads(json.dumps(agent.state()))
    twin = build_agent(policy, hub.client(policy.llm))
    twin.load_state(state)
    assert twin.state() == state
    if kind == "native":
        assert len(state["history"]) == 8 and "yoga" in answers[-1].consulted_memory
    else:
        assert state["buffer"] == []  # flushed at every session end
        assert state["counters"]["requests"] >= (0 if kind == "rag" else 4)
    if kind == "rag":
        assert len(state["memory"]["memories"]) == 8
        assert "yoga" in answers[-1].consulted_memory
    if kind == "awi":
        # The tiny model may produce unusable notes, but every write must be accounted for.
        assert state["counters"]["failures"] <= state["counters"]["requests"]
        assert all(isinstance(n["value"], str) and n["value"] for n in state["memory"])
    if kind == "awe":
        assert all(isinstance(m["text"], str) for m in state["memory"]["memories"])
    usage = hub.accounting.report().by_role["agent"]
    assert usage.calls > 0 and usage.prompt_tokens > 0
