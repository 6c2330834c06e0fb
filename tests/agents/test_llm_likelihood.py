"""Likelihood answers: option texts scored by an endpoint that returns known log-probabilities, chosen by
log-probability per byte whatever order the options come in, recorded as such in results and summaries."""

from __future__ import annotations

import itertools
import json
from datetime import datetime
from pathlib import Path

import pytest

from memevo.agents.llm.accounting import Accounting
from memevo.agents.llm.config import LLMConfig
from memevo.agents.llm.gateway import LLMGateway
from memevo.agents.llm.protocol import OptionLogprob
from memevo.agents.policy import MemoryPolicy
from memevo.agents.registry import build_agent
from memevo.core.errors import UserInputError
from memevo.environments.amemgym.data.models import AnswerChoice, Question
from memevo.environments.amemgym.synth import SynthConfig, synthesize
from memevo.environments.answering import (
    BareResponder,
    LikelihoodAnswers,
    answer_chooser,
    per_byte_score,
    resolve_answer_mode,
)
from memevo.environments.metrics import compute_no_memory, compute_upper_bound, score_episodes
from memevo.environments.runner import EpisodeConfig, ask_questions
from memevo.environments.score_text import score_lines
from tests.doubles.likelihood_server import LikelihoodServer
from tests.doubles.scripted_llm import ScriptedLLM

# Known summed log-probabilities: "tea" has the best sum, "a long coffee" the best per byte (-1.0 / 13 bytes).
KNOWN = {"tea": -0.9, "a long coffee": -1.0, "water": -5.0}


def _known(messages: list[dict[str, str]], option: str) -> float:
    return KNOWN[option]


def _gateway(url: str, *, likelihood: bool = True) -> LLMGateway:
    return LLMGateway(LLMConfig(model="scripted", max_retries=0), base_url=url, cache=None, accounting=Accounting(),
                      likelihood_available=likelihood)


def _question(options: list[str]) -> Question:
    return Question(query="What should I drink?", required_info=["drink"],
                    answer_choices=[AnswerChoice(state=[option], answer=option, type="experience") for option in options])


async def test_gateway_returns_the_endpoints_log_probabilities_in_order_and_books_one_call() -> None:
    with LikelihoodServer(_known) as server:
        gateway = _gateway(server.url)
        scores = await gateway.option_logprobs([{"role": "user", "content": "hi"}], ["water", "tea"], role="agent")
        await gateway.aclose()
    assert scores == [OptionLogprob(logprob=-5.0, tokens=1), OptionLogprob(logprob=-0.9, tokens=1)]
    assert server.option_requests() == [{"model": "scripted", "messages": [{"role": "user", "content": "hi"}],
                                         "options": ["water", "tea"]}]
    assert gateway.accounting.report().total().calls == 1


async def test_an_endpoint_without_option_scores_is_a_named_user_error() -> None:
    with LikelihoodServer(_known) as server:
        gateway = _gateway(server.url, likelihood=False)
        with pytest.raises(UserInputError, match="answer_mode"):
            await gateway.option_logprobs([{"role": "user", "content": "hi"}], ["tea"], role="agent")
        await gateway.aclose()
    assert server.requests == []


async def test_likelihood_picks_the_best_log_probability_per_byte_whatever_the_option_order() -> None:
    """Per byte, "a long coffee" (-1.0 / 13 bytes) beats "tea" (-0.9 / 3) although its sum is lower; and every
    order of the options yields that same text."""
    assert per_byte_score(OptionLogprob(logprob=-1.0, tokens=3), "a long coffee") > per_byte_score(
        OptionLogprob(logprob=-0.9, tokens=1), "tea")
    chosen = set()
    with LikelihoodServer(_known) as server:
        responder = BareResponder(_gateway(server.url), role="upper_bound", json_mode=False)
        for order in itertools.permutations(KNOWN):
            question = _question(list(order))
            outcome = await LikelihoodAnswers().choose(responder, "prompt", question, amemgym_compat=False,
                                                       rng_key=())
            assert outcome.choice is not None and outcome.answer_mode == "likelihood"
            chosen.add(question.answer_choices[outcome.choice - 1].answer)
            assert json.loads(outcome.raw_reply)["answer"] == outcome.choice
    assert chosen == {"a long coffee"}


def test_auto_means_likelihood_only_where_options_can_be_scored_and_not_under_compat() -> None:
    scoring, chat_only = _gateway("http://127.0.0.1:9/v1"), _gateway("http://127.0.0.1:9/v1", likelihood=False)
    assert resolve_answer_mode("auto", scoring, amemgym_compat=False) == "likelihood"
    assert resolve_answer_mode("auto", scoring, amemgym_compat=True) == "generated"
    assert resolve_answer_mode("auto", chat_only, amemgym_compat=False) == "generated"
    assert resolve_answer_mode("auto", ScriptedLLM(lambda *_: ""), amemgym_compat=False) == "generated"
    assert resolve_answer_mode("generated", scoring, amemgym_compat=False) == "generated"


def test_likelihood_prompts_list_no_options_and_refuse_amemgym_templates() -> None:
    question = _question(list(KNOWN))
    chooser = answer_chooser("likelihood", constrained=True)
    for prompt in (chooser.qa_prompt(question, None), chooser.upper_bound_prompt(question, {"drink": "tea"}, None)):
        assert question.query in prompt and "coffee" not in prompt and "answer" not in prompt
    assert "drink: tea" in chooser.upper_bound_prompt(question, {"drink": "tea"}, None)
    from memevo.environments.qa import QuestionPrompts

    with pytest.raises(UserInputError, match="answer_mode"):
        chooser.qa_prompt(question, QuestionPrompts(qa="{query}", upper_bound="{query}", probe="{state_schema}"))


async def test_agent_upper_bound_and_baseline_answer_by_likelihood_and_results_say_so(tmp_path: Path) -> None:
    """On a scoring endpoint under ``auto``: the agent's records, both tables and the summary name the mode; the
    scripted scores favour the upper bound's stated state, so it is right where the chat reply (always option 1)
    would not be."""
    (item,) = synthesize(SynthConfig(users=1, periods=1, questions=3, seed=4))

    def score(messages: list[dict[str, str]], option: str) -> float:
        text = messages[-1]["content"]
        advice = [choice for question in item.qas for choice in question.answer_choices if choice.answer == option]
        stated = any(all(value in text for value in choice.state) for choice in advice)
        return -0.01 * len(option) if stated else -1.0 * len(option)

    with LikelihoodServer(score) as server:
        gateway = _gateway(server.url)
        config = EpisodeConfig()
        agent = build_agent(MemoryPolicy(kind="awi", llm=LLMConfig(model="scripted")), gateway)
        records = await ask_questions(agent, item, 1, config, item.id, {})
        upper = await compute_upper_bound(gateway, [item], answer_mode="likelihood")
        baseline = await compute_no_memory(gateway, [item], answer_mode="likelihood")
        await gateway.aclose()
    assert {record.answer_mode for record in records} == {"likelihood"}
    assert all(record.format_error is False for record in records)
    assert upper.answer_mode == baseline.answer_mode == "likelihood"
    assert all(entry.correct for entry in upper.entries)
    assert not any("choices" in body for body in server.requests)
    from memevo.environments.records import EpisodeResult, PeriodResult

    period = PeriodResult(user_id=item.id, period=1, transcripts=[], qa=records, probes=[], memories={})
    scores = score_episodes([EpisodeResult(user_id=item.id, policy_id="p", periods=[period])], [item], upper)
    assert scores.answer_mode == "likelihood"
    assert any(line.startswith("answers: likelihood") for line in score_lines(scores))


async def test_generated_answers_stay_the_default_on_a_chat_only_endpoint() -> None:
    (item,) = synthesize(SynthConfig(users=1, periods=1, questions=2, seed=4))
    with LikelihoodServer(_known) as server:
        gateway = _gateway(server.url, likelihood=False)
        agent = build_agent(MemoryPolicy(kind="awi", llm=LLMConfig(model="scripted")), gateway)
        records = await ask_questions(agent, item, 0, EpisodeConfig(), item.id, {})
        await gateway.aclose()
    assert {record.answer_mode for record in records} == {"generated"}
    assert {record.choice for record in records} == {1}
    assert server.option_requests() == []


async def test_scoring_options_leaves_the_agent_state_untouched() -> None:
    (item,) = synthesize(SynthConfig(users=1, periods=1, questions=1, seed=4))
    with LikelihoodServer(_known) as server:
        gateway = _gateway(server.url)
        agent = build_agent(MemoryPolicy(kind="awi", short_term=4, llm=LLMConfig(model="scripted")), gateway)
        await agent.ingest("I drink tea every morning.", "Noted.", datetime(2020, 1, 1))
        before = agent.state()
        scored = await agent.score_options("What should I drink?", ["tea", "water"], query="drink?",
                                           now=datetime(2020, 1, 2))
        await gateway.aclose()
    assert agent.state() == before
    assert [score.logprob for score in scored.scores] == [-0.9, -5.0]
    (body,) = server.option_requests()
    assert body["messages"][1:] == [{"role": "user", "content": "I drink tea every morning."},
                                    {"role": "assistant", "content": "Noted."},
                                    {"role": "user", "content": "What should I drink?"}]


@pytest.mark.integration
@pytest.mark.timeout(600)
async def test_the_embedded_server_scores_options_as_a_full_evaluation_of_each_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The option route reuses the chat in the model's context and asks for logits at the option tokens only; its
    log-probabilities must equal those of evaluating chat + option from scratch with every logit kept, also for an
    option scored right after another (the context rolled back to the chat) and for a second chat."""
    import math

    import numpy as np
    from llama_cpp import Llama

    from memevo.agents.llm.hub import LLMHub
    from memevo.agents.llm.llama_server import chat_prompt_tokens
    from memevo.agents.llm.local_server import local_model_path

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    chats = [[{"role": "user", "content": "I do yoga at home every morning. What exercise advice do you have?"}],
             [{"role": "system", "content": "Notes: drinks tea."}, {"role": "user", "content": "What should I drink?"}]]
    options = ["For yoga at home: pair it with brisk walks.", "For running: add one mobility session.", "Tea."]
    async with LLMHub(cache_dir=tmp_path / "cache") as hub:
        gateway = hub.client(LLMConfig())
        served = [await gateway.option_logprobs(chat, options, role="baseline") for chat in chats]
    reference = Llama(str(local_model_path()), n_ctx=1024, logits_all=True, verbose=False)
    for chat, scores in zip(chats, served, strict=True):
        context = chat_prompt_tokens(reference, chat)
        for option, score in zip(options, scores, strict=True):
            continuation = reference.tokenize(option.encode(), add_bos=False, special=False)
            reference.reset()
            reference._ctx.kv_cache_seq_rm(-1, 0, -1)  # noqa: SLF001 - a cold start for the reference
            reference.eval(context + continuation)
            rows = reference.scores[len(context) - 1 : len(context) + len(continuation) - 1].astype(np.float64)
            expected = sum(row[token] - row.max() - math.log(np.exp(row - row.max()).sum())
                           for row, token in zip(rows, continuation, strict=True))
            assert score.tokens == len(continuation)
            assert score.logprob == pytest.approx(expected, abs=1e-3), option
