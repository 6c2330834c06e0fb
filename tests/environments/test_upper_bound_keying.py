"""The upper bound keyed as AMemGym keys it under ``amemgym_compat``: every choice asked, a period's score looked up by
the state alone, the later question's reply winning when two questions of a user share a state."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from memevo.agents.llm.accounting import Accounting
from memevo.agents.llm.config import LLMConfig
from memevo.agents.llm.gateway import LLMGateway
from memevo.core.errors import UserInputError
from memevo.environments.amemgym.prompts import load_amemgym_prompts
from memevo.environments.metrics import UpperBoundTable
from memevo.environments.metrics.upper_bound import UpperBoundEntry, compute_upper_bound, needed_states
from memevo.environments.runner import EpisodeConfig
from memevo.environments.table_cache import cached_table
from tests.doubles.amemgym_reference import CHECKOUT, NO_CHECKOUT, AMemGymReference, has_checkout
from tests.doubles.fault_server import FaultServer
from tests.doubles.scripted_agents import make_item
from tests.doubles.scripted_llm import ScriptedLLM


def shared_state_item():  # type: ignore[no-untyped-def]
    """``make_item``'s user whose question 1 asks about the same variables, with the same choices, as question 0."""
    item = make_item("user-1", n_periods=4)
    twin = item.qas[0].model_copy(update={"query": "Question 1 again: what now, given my diet and budget?"})
    return item.model_copy(update={"qas": [item.qas[0], twin, *item.qas[2:]]})


def table(item, *, keyed_by_state: bool) -> UpperBoundTable:  # type: ignore[no-untyped-def]
    """Question 0 answered right given any state, question 1 wrong."""
    return UpperBoundTable(keyed_by_state=keyed_by_state, entries=[
        UpperBoundEntry(item_id=item.id, question_index=q, state=list(state), correct=q != 1)
        for q, state in needed_states(item, every_choice=True)])


def test_a_shared_state_takes_the_later_questions_reply_only_under_amemgym_keying() -> None:
    item = shared_state_item()
    periods = range(len(item.periods))
    assert [table(item, keyed_by_state=True).score(item, p, 0) for p in periods] == [0.0] * len(item.periods)
    assert [table(item, keyed_by_state=False).score(item, p, 0) for p in periods] == [1.0] * len(item.periods)
    assert table(item, keyed_by_state=True).score(item, 0, 2) == 1.0  # a state no later question offers is its own


async def test_compat_asks_every_choice_of_every_question_and_memevo_only_the_gold_states() -> None:
    item = shared_state_item()
    llm = ScriptedLLM(lambda messages, role, wants_json: '{"answer": 1}')
    compat = await compute_upper_bound(llm, [item], amemgym_compat=True)
    assert len(llm.calls) == sum(len(question.answer_choices) for question in item.qas) > len(needed_states(item))
    assert compat.keyed_by_state and compat.covers([item])
    own = await compute_upper_bound(ScriptedLLM(lambda messages, role, wants_json: '{"answer": 1}'), [item])
    assert not own.keyed_by_state and len(own.entries) == len(needed_states(item))


@pytest.mark.skipif(not has_checkout(), reason=NO_CHECKOUT)
async def test_shared_states_score_as_amemgyms_own_evaluator(tmp_path: Path) -> None:
    """On AMemGym's evaluator from a checkout (``MEMEVO_AMEMGYM_SOURCE``): the same upper bound per (period,
    question) when two questions share their states and are answered differently."""
    item = shared_state_item()

    def reply(messages, role, wants_json):  # type: ignore[no-untyped-def]
        return '{"answer": 1}' if "Question 1 again" in messages[-1]["content"] else '{"answer": 2}'

    theirs = AMemGymReference(reply).upper_bound([item], tmp_path / "amemgym")
    prompts = load_amemgym_prompts(CHECKOUT)
    config = EpisodeConfig(amemgym_compat=True, question_prompts=prompts.questions)
    ours = await cached_table(UpperBoundTable, ScriptedLLM(reply), [item], tmp_path / "upper_bound.json", config)
    scores = [[ours.score(item, p, q) for q in range(len(item.qas))] for p in range(len(item.periods))]
    assert scores == theirs[0]
    own = await cached_table(UpperBoundTable, ScriptedLLM(reply), [item], tmp_path / "own.json",
                             config.model_copy(update={"amemgym_compat": False}))
    assert [[own.score(item, p, q) for q in range(len(item.qas))] for p in range(len(item.periods))] != theirs[0]


async def test_a_likelihood_table_on_a_remote_endpoint_is_refused_before_any_request_or_line(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="memevo.environments")
    with FaultServer(lambda body: "ok") as server:
        gateway = LLMGateway(LLMConfig(model="remote"), base_url=server.url, cache=None, accounting=Accounting())
        with pytest.raises(UserInputError, match="likelihood") as caught:
            await cached_table(UpperBoundTable, gateway, [make_item()], tmp_path / "upper_bound.json",
                               EpisodeConfig(answer_mode="likelihood"))
        assert server.requests == [] and caught.value.field == "episode.answer_mode"
    assert "asking the bare model" not in caplog.text
