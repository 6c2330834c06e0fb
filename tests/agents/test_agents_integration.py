"""Every built-in agent kind through the real episode runner against the real local model (SmolLM2-135M).

A tiny procedural world (one user, period 0 plus one update period, one session each, two questions)
played live with the template user simulator, so the agents see exactly what ``memevo eval`` feeds them:
timed opening messages, a follow-up, session ends, constrained multiple-choice questions. The checks
are about the records being complete and valid, not about the tiny model's accuracy.
"""

import json

import pytest

from memevo.agents.llm.config import LLMConfig
from memevo.agents.llm.hub import LLMHub
from memevo.agents.policy import MemoryPolicy
from memevo.agents.registry import build_agent
from memevo.environments.amemgym.data.models import Item
from memevo.environments.amemgym.simulators.template import TemplateUserSimulator
from memevo.environments.amemgym.synth import SynthConfig, synthesize
from memevo.environments.records import EpisodeResult
from memevo.environments.runner import EpisodeConfig, run_episode

pytestmark = pytest.mark.integration

EPISODE = EpisodeConfig(rounds_init=1, rounds_update=2)


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    with LLMHub(cache_dir=tmp_path_factory.mktemp("llm-cache")) as hub:
        yield hub


@pytest.fixture(scope="module")
def item() -> Item:
    config = SynthConfig(
        users=1, periods=1, questions=2, states_per_question=1, sessions_init=1, changes_per_period=1, seed=3
    )
    (only,) = synthesize(config)
    return only


def check_records(result: EpisodeResult, item: Item) -> None:
    assert result.user_id == item.id
    assert [p.period for p in result.periods] == list(range(len(item.periods)))
    for period in result.periods:
        sessions = item.periods[period.period].sessions
        assert len(period.transcripts) == len(sessions)
        for transcript in period.transcripts:
            assert [m["role"] for m in transcript] == ["user", "assistant"] * EPISODE.rounds(period.period)
            assert all(isinstance(m["content"], str) for m in transcript)
            assert transcript[0]["content"].startswith("[Current Time: ")
        assert sorted(q.question_index for q in period.qa) == list(range(len(item.qas)))
        for record in period.qa:
            assert record.period == period.period and record.prompt.strip() and record.raw_reply.strip()
            assert record.n_choices == len(item.qas[record.question_index].answer_choices)
            assert 1 <= record.gold <= record.n_choices
            if record.format_error:
                assert record.choice is None and not record.correct
            else:
                assert 1 <= record.choice <= record.n_choices
                assert record.correct == (record.choice == record.gold)
    assert EpisodeResult.model_validate_json(result.model_dump_json()) == result


@pytest.mark.parametrize("kind", ["native", "rag", "awi", "awe"])
async def test_agent_kind_through_the_episode_runner(hub, item, kind):
    policy = MemoryPolicy(
        kind=kind, update_every=2, short_term=2, top_k=5, flush_on_session_end=True, llm=LLMConfig(max_tokens=48)
    )
    llm = hub.client(policy.llm)
    agent = build_agent(policy, llm)
    before = hub.accounting.report()
    result = await run_episode(agent, item, TemplateUserSimulator(seed=0), EPISODE)

    check_records(result, item)
    state = json.loads(json.dumps(agent.state()))
    twin = build_agent(policy, llm)
    twin.load_state(state)
    assert twin.state() == state
    if kind != "native":
        assert state["buffer"] == []  # flushed at every session end
        counters = state["counters"]
        assert counters["failures"] <= counters["requests"] and counters["retries"] <= counters["requests"]
        assert counters["requests"] >= (0 if kind == "rag" else len(item.periods))
    spent = hub.accounting.report().minus(before).by_role["agent"]
    rounds = sum(EPISODE.rounds(p) * len(item.periods[p].sessions) for p in range(len(item.periods)))
    assert spent.calls >= rounds + len(item.periods) * len(item.qas) and spent.prompt_tokens > 0
