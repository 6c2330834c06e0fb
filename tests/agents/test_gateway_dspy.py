"""DSPy traffic goes through the gateway: cached, limited and accounted under the role given."""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path

import dspy
import pytest
from dspy.utils.exceptions import LMInvalidRequestError

from memevo.agents.llm.config import LLMConfig
from memevo.agents.llm.hub import LLMHub
from memevo.agents.llm.protocol import LLMRequestError
from tests.doubles.fault_server import Fault, FaultServer


def chat_adapter_answer(body: dict) -> str:
    """A reply in DSPy ChatAdapter's field format, answering with the question's last word."""
    question = body["messages"][-1]["content"].split("[[ ## question ## ]]")[-1].split("\n\n")[0].strip()
    return f"[[ ## answer ## ]]\n{question.split()[-1]}\n\n[[ ## completed ## ]]"


@pytest.fixture
def server():
    with FaultServer(chat_adapter_answer) as running:
        yield running


@pytest.fixture
def hub(tmp_path: Path):
    with LLMHub(cache_dir=tmp_path / "cache") as opened:
        yield opened


def test_dspy_predict_is_counted_by_the_gateway(server, hub):
    lm = hub.dspy_lm(LLMConfig(model="m", base_url=server.url), role="proposer")
    with dspy.context(lm=lm, adapter=dspy.ChatAdapter()):
        prediction = dspy.Predict("question -> answer")(question="what rhymes with cat")
    assert prediction.answer == "cat"
    assert len(server.requests) == 1
    usage = hub.accounting.report().by_role["proposer"]
    assert usage.calls == 1
    assert usage.prompt_tokens == sum(len(m["content"].split()) for m in server.requests[0]["messages"])


def test_dspy_calls_hit_the_gateway_cache(server, hub):
    lm = hub.dspy_lm(LLMConfig(model="m", base_url=server.url), role="judge")
    predict = dspy.Predict("question -> answer")
    with dspy.context(lm=lm, adapter=dspy.ChatAdapter()):
        first = predict(question="say dog")
        second = predict(question="say dog")
    assert first.answer == second.answer == "dog"
    assert len(server.requests) == 1
    usage = hub.accounting.report().by_role["judge"]
    assert (usage.calls, usage.cache_hits) == (2, 1)


async def test_sync_dspy_calls_work_from_worker_threads_of_a_running_loop(server, hub):
    server.latency_s = 0.05
    config = LLMConfig(model="m", base_url=server.url, max_concurrency=2)
    lm = hub.dspy_lm(config, role="proposer")
    predict = dspy.Predict("question -> answer")

    def ask(word: str) -> str:
        with dspy.context(lm=lm, adapter=dspy.ChatAdapter()):
            return predict(question=f"repeat {word}").answer

    words = [f"w{i}" for i in range(6)]
    # Sync DSPy calls in worker threads and async gateway calls on this loop share one limit.
    gateway_calls = [hub.client(config).chat([{"role": "user", "content": f"x{i}"}], role="agent") for i in range(4)]
    answers, _ = await asyncio.gather(
        asyncio.gather(*(asyncio.to_thread(ask, word) for word in words)), asyncio.gather(*gateway_calls)
    )
    assert list(answers) == words
    assert server.peak_in_flight == 2
    assert hub.accounting.report().by_role["proposer"].calls == 6


async def test_async_dspy_calls_are_retried_by_the_gateway(server, hub):
    lm = hub.dspy_lm(LLMConfig(model="m", base_url=server.url, max_retries=2), role="generator")
    hub.client(LLMConfig(model="m", base_url=server.url, max_retries=2)).backoff_base_s = 0.01
    server.plan(Fault(status=503))
    with dspy.context(lm=lm, adapter=dspy.ChatAdapter()):
        prediction = await dspy.Predict("question -> answer").acall(question="say owl")
    assert prediction.answer == "owl"
    usage = hub.accounting.report().by_role["generator"]
    assert (usage.calls, usage.retries) == (1, 1)


async def test_gateway_failures_reach_dspy_as_lm_errors(server, hub):
    lm = hub.dspy_lm(LLMConfig(model="m", base_url=server.url), role="generator")
    server.plan(Fault(status=400, message="bad prompt"))
    with pytest.raises(LMInvalidRequestError) as raised:
        await lm.acall("hello")
    assert isinstance(raised.value.__cause__.__cause__, LLMRequestError)
    assert hub.accounting.report().by_role["generator"].errors == 1


def test_n_candidates_are_distinct_samples(server, hub):
    lm = hub.dspy_lm(LLMConfig(model="m", base_url=server.url, temperature=0.8), role="proposer")
    outputs = lm("pick", n=3)
    assert len(outputs) == 3
    assert len(server.requests) == 3  # three sample indices, three cache keys
    lm("pick", n=3)
    assert len(server.requests) == 3


def test_json_adapter_fallback_sends_the_output_schema(server, hub):
    server.reply = lambda body: '{"answer": "Rome"}' if "response_format" in body else "no idea"
    lm = hub.dspy_lm(LLMConfig(model="m", base_url=server.url), role="proposer")
    with dspy.context(lm=lm):  # default ChatAdapter, falling back to JSONAdapter on a parse failure
        prediction = dspy.Predict("question -> answer")(question="capital of Italy")
    assert prediction.answer == "Rome"
    response_format = server.requests[-1]["response_format"]
    assert response_format["type"] == "json_object" and response_format["schema"]["required"] == ["answer"]
    assert hub.accounting.report().by_role["proposer"].calls == 2


async def test_predict_raises_no_deprecation_warning(server, hub):
    lm = hub.dspy_lm(LLMConfig(model="m", base_url=server.url), role="proposer")
    predict = dspy.Predict("question -> answer")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        with dspy.context(lm=lm, adapter=dspy.ChatAdapter()):
            sync_answer = predict(question="say fox").answer
            async_answer = (await predict.acall(question="say yak")).answer
    assert (sync_answer, async_answer) == ("fox", "yak")


def test_rollout_ids_are_distinct_samples_of_one_prompt(server, hub):
    lm = hub.dspy_lm(LLMConfig(model="m", base_url=server.url, temperature=0.8), role="proposer")
    lm("pick", rollout_id=1)
    lm("pick", rollout_id=2)
    lm("pick", rollout_id=1)
    assert len(server.requests) == 2


def test_generation_settings_the_gateway_cannot_send_are_refused(server, hub):
    lm = hub.dspy_lm(LLMConfig(model="m", base_url=server.url), role="proposer")
    with pytest.raises(Exception, match="config.top_p"):
        lm("pick", top_p=0.5)
    assert server.requests == []


@pytest.mark.parametrize("is_async_program", [False, True])
async def test_streamify_receives_the_whole_reply(server, hub, is_async_program):
    lm = hub.dspy_lm(LLMConfig(model="m", base_url=server.url), role="proposer")
    predict = dspy.Predict("question -> answer")
    program = dspy.streamify(predict, is_async_program=is_async_program)
    with dspy.context(lm=lm, adapter=dspy.ChatAdapter()):
        items = [item async for item in program(question="say elk")]
    assert items[-1].answer == "elk"
    assert hub.accounting.report().by_role["proposer"].calls == 1
