"""The gateway against a real HTTP server that injects faults: retries, refusals, cache, limit, JSON, embeddings."""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from pathlib import Path

import pytest

from memevo.agents.llm.accounting import Accounting
from memevo.agents.llm.cache import KEY_VERSION, CachedReply, CacheRequest, ResponseCache
from memevo.agents.llm.config import LOCAL_MODEL_NAME, LLMConfig
from memevo.agents.llm.gateway import LLMGateway, response_format_for
from memevo.agents.llm.pricing import table_price
from memevo.agents.llm.protocol import ChatClient, EmbeddingClient, LLMError, LLMJSONError, LLMRequestError
from memevo.core.errors import UserInputError
from tests.doubles.fault_server import Fault, FaultServer

HELLO = [{"role": "user", "content": "hello there"}]


@pytest.fixture
def server():
    with FaultServer() as running:
        yield running


def make_gateway(
    server: FaultServer, cache: ResponseCache | None = None, *, sleep=asyncio.sleep, **config: object
) -> LLMGateway:
    settings = {"model": "test-model", "timeout_s": 2.0, "max_retries": 3, **config}
    return LLMGateway(
        LLMConfig(**settings),
        base_url=server.url,
        cache=cache,
        accounting=Accounting(),
        backoff_base_s=0.01,
        sleep=sleep,
    )


def reopen_on_the_same_folder(server: FaultServer, first: LLMGateway, folder: Path) -> LLMGateway:
    """A second gateway with its own cache object, after the first run's queued writes are committed."""
    first.cache.close()
    return make_gateway(server, cache=ResponseCache(folder))


def test_gateway_satisfies_the_chat_and_embedding_protocols(server):
    assert isinstance(make_gateway(server), ChatClient)
    assert isinstance(make_gateway(server), EmbeddingClient)


@pytest.mark.parametrize(
    "fault", [Fault(status=429), Fault(status=500), Fault(status=503), Fault(delay_s=2.5)], ids=str
)
async def test_transient_failures_are_retried(server, fault):
    gateway = make_gateway(server)
    server.plan(fault, fault)
    reply = await gateway.chat(HELLO, role="agent")
    assert reply.text == "echo: hello there"
    assert len(server.requests) == 3
    usage = gateway.accounting.report().by_role["agent"]
    assert (usage.calls, usage.retries, usage.errors) == (1, 2, 0)


async def test_bad_request_fails_at_once_naming_status_and_message(server):
    gateway = make_gateway(server)
    server.plan(Fault(status=400, message="maximum context length exceeded"))
    with pytest.raises(LLMRequestError, match="HTTP 400: maximum context length exceeded"):
        await gateway.chat(HELLO, role="agent")
    assert len(server.requests) == 1
    assert gateway.accounting.report().by_role["agent"].errors == 1


@pytest.mark.parametrize("status", [401, 404, 422])
async def test_other_client_errors_are_not_retried(server, status):
    gateway = make_gateway(server)
    server.plan(Fault(status=status))
    with pytest.raises(LLMRequestError, match=f"HTTP {status}"):
        await gateway.chat(HELLO, role="agent")
    assert len(server.requests) == 1


async def test_gives_up_after_max_retries(server):
    gateway = make_gateway(server, max_retries=2)
    server.plan(*[Fault(status=500, message="boom")] * 5)
    with pytest.raises(LLMError, match="failed after 3 attempt.*HTTP 500: boom") as caught:
        await gateway.chat(HELLO, role="judge")
    assert not isinstance(caught.value, LLMRequestError)
    assert len(server.requests) == 3
    usage = gateway.accounting.report().by_role["judge"]
    assert (usage.calls, usage.retries, usage.errors) == (0, 2, 1)


async def test_retry_after_header_sets_the_wait_before_the_retry(server):
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    gateway = make_gateway(server, sleep=record)
    server.plan(Fault(status=429, retry_after_s=0.3), Fault(status=429), Fault(status=429, retry_after_s=99))
    await gateway.chat(HELLO, role="agent")
    assert len(server.requests) == 4
    # Asked-for wait; then plain backoff (base 0.01 s, step 2, jitter 50-100 %); then capped at 30 s.
    assert waits[0] == 0.3 and 0.01 <= waits[1] <= 0.02 and waits[2] == gateway.backoff_cap_s == 30.0


async def test_cache_hit_returns_identical_reply_without_a_request(server, tmp_path: Path):
    first = make_gateway(server, cache=ResponseCache(tmp_path))
    original = await first.chat(HELLO, role="agent")
    # A fresh gateway and cache object on the same folder: the hit must come from disk.
    second = reopen_on_the_same_folder(server, first, tmp_path)
    again = await second.chat(HELLO, role="agent")
    assert len(server.requests) == 1
    assert again.cached and not original.cached
    assert (again.text, again.prompt_tokens, again.completion_tokens, again.model) == (
        original.text,
        original.prompt_tokens,
        original.completion_tokens,
        original.model,
    )
    usage = second.accounting.report().by_role["agent"]
    assert (usage.calls, usage.cache_hits, usage.prompt_tokens) == (1, 1, original.prompt_tokens)


async def test_cache_key_covers_sampling_and_format(server, tmp_path: Path):
    gateway = make_gateway(server, cache=ResponseCache(tmp_path))
    await gateway.chat(HELLO, role="agent")
    await gateway.chat(HELLO, role="agent", sample_index=1)
    await gateway.chat(HELLO, role="agent", temperature=0.7)
    await gateway.chat(HELLO, role="agent", max_tokens=7)
    await gateway.chat(HELLO, role="agent", json_mode=True)
    await gateway.chat(HELLO, role="agent", sample_index=1)
    assert len(server.requests) == 5


async def test_without_cache_every_call_reaches_the_server(server):
    gateway = make_gateway(server, cache=None)
    await gateway.chat(HELLO, role="agent")
    await gateway.chat(HELLO, role="agent")
    assert len(server.requests) == 2


async def test_concurrency_limit_is_never_exceeded(server):
    server.latency_s = 0.05
    gateway = make_gateway(server, max_concurrency=3)
    await asyncio.gather(*(gateway.chat([{"role": "user", "content": f"q{i}"}], role="agent") for i in range(12)))
    assert len(server.requests) == 12
    assert server.peak_in_flight == 3


def test_concurrency_limit_holds_across_event_loops_and_threads(server):
    server.latency_s = 0.05
    gateway = make_gateway(server, max_concurrency=2)

    async def burst(tag: str) -> None:
        await asyncio.gather(*(gateway.chat([{"role": "user", "content": f"{tag}{i}"}], role="agent") for i in range(4)))

    threads = [threading.Thread(target=asyncio.run, args=(burst(tag),)) for tag in "abc"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(server.requests) == 12
    assert server.peak_in_flight == 2


async def test_token_accounting_sums_per_role(server):
    gateway = make_gateway(server)
    replies = [
        await gateway.chat([{"role": "user", "content": "one two three"}], role="agent"),
        await gateway.chat([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}], role="agent"),
        await gateway.chat([{"role": "user", "content": "a b c d e"}], role="user_simulator"),
    ]
    report = gateway.accounting.report()
    assert report.by_role["agent"].prompt_tokens == 3 + 3
    assert report.by_role["agent"].completion_tokens == replies[0].completion_tokens + replies[1].completion_tokens
    assert report.by_role["user_simulator"].prompt_tokens == 5
    total = report.total()
    assert total.calls == 3
    assert total.prompt_tokens == sum(reply.prompt_tokens for reply in replies) == 11
    assert total.completion_tokens == sum(reply.completion_tokens for reply in replies)


async def test_json_schema_is_sent_in_the_llama_cpp_form(server):
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    server.reply = lambda body: '{"a": 1}'
    parsed, _ = await make_gateway(server).chat_json(HELLO, role="generator", json_schema=schema)
    assert parsed == {"a": 1}
    assert server.requests[0]["response_format"] == {"type": "json_object", "schema": schema}


def test_openai_endpoints_get_the_json_schema_form():
    schema = {"type": "object"}
    assert response_format_for("https://api.openai.com/v1", schema, False)["type"] == "json_schema"
    assert response_format_for("https://api.openai.com/v1", None, True) == {"type": "json_object"}
    assert response_format_for("http://127.0.0.1:8000/v1", None, False) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": [1, 2]}', {"a": [1, 2]}),
        ('Sure! {"a": 1, "b": "x",}', {"a": 1, "b": "x"}),
        ('```json\n[{"a": 1}]\n```', [{"a": 1}]),
        ('{"a": "unterminated', {"a": "unterminated"}),
    ],
)
async def test_chat_json_repairs_sloppy_json(server, text, expected):
    server.reply = lambda body: text
    parsed, reply = await make_gateway(server).chat_json(HELLO, role="generator")
    assert parsed == expected
    assert reply.text == text
    assert server.requests[0]["response_format"] == {"type": "json_object"}


@pytest.mark.parametrize("text", ["I cannot answer that.", "42", '"just a string"', ""])
async def test_chat_json_raises_a_counted_error_for_non_json(server, text):
    server.reply = lambda body: text
    gateway = make_gateway(server)
    with pytest.raises(LLMJSONError) as caught:
        await gateway.chat_json(HELLO, role="proposer")
    assert caught.value.raw_text == text
    usage = gateway.accounting.report().by_role["proposer"]
    assert (usage.calls, usage.errors, usage.unknown_calls) == (1, 1, 0)


async def test_a_request_is_unknown_from_before_it_is_sent_until_its_answer_or_failure_is_counted(server, tmp_path):
    """Booked as it leaves (not while it waits for a slot), settled in the count of its answer or failure; a
    cancelled one is counted as cancelled, not unknown (nobody killed the process). Cache hits book nothing."""
    gateway = make_gateway(server, cache=ResponseCache(tmp_path), max_retries=0, max_concurrency=1)

    def usage():
        return gateway.accounting.report().by_role["agent"]

    server.plan(Fault(delay_s=0.5))
    in_flight = asyncio.create_task(gateway.chat(HELLO, role="agent"))
    waiting = asyncio.create_task(gateway.chat([{"role": "user", "content": "waiting"}], role="agent"))
    while not server.requests:
        await asyncio.sleep(0.01)
    assert (usage().unknown_calls, usage().calls) == (1, 0)
    await asyncio.gather(in_flight, waiting)
    assert (usage().unknown_calls, usage().calls) == (0, 2)
    await gateway.chat(HELLO, role="agent")
    server.plan(Fault(status=400))
    with pytest.raises(LLMRequestError):
        await gateway.chat([{"role": "user", "content": "refused"}], role="agent")
    assert (usage().unknown_calls, usage().calls, usage().cache_hits, usage().errors) == (0, 3, 1, 1)
    await gateway.embed(["a", "b"], role="agent", model="embedder")
    await gateway.embed(["a"], role="agent", model="embedder")
    assert (usage().unknown_calls, usage().calls, usage().cache_hits) == (0, 5, 2)
    server.plan(Fault(delay_s=1.0))
    cancelled = asyncio.create_task(gateway.chat([{"role": "user", "content": "cancelled"}], role="agent"))
    while len(server.requests) < 5:
        await asyncio.sleep(0.01)
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert (usage().unknown_calls, usage().cancelled_calls, usage().calls) == (0, 1, 5)


async def test_messages_and_sampling_reach_the_server_unchanged(server):
    gateway = make_gateway(server, temperature=0.3, max_tokens=33)
    await gateway.chat(HELLO, role="agent")
    await gateway.chat(HELLO, role="agent", temperature=0.0, max_tokens=5)
    first, second = server.requests
    assert first["messages"] == HELLO and first["model"] == "test-model"
    assert (first["temperature"], first["max_tokens"]) == (0.3, 33)
    assert (second["temperature"], second["max_tokens"]) == (0.0, 5)
    assert "response_format" not in first
    assert json.dumps(first).count("sk-") == 0


async def test_api_key_is_sent_but_never_stored_or_reported(server, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("MEMEVO_TEST_KEY", "sk-secret-4242")
    gateway = make_gateway(server, cache=ResponseCache(tmp_path), api_key_env="MEMEVO_TEST_KEY")
    await gateway.chat(HELLO, role="agent")
    server.plan(Fault(status=401, message="invalid key"))
    with pytest.raises(LLMRequestError) as caught:
        await gateway.chat(HELLO, role="agent", sample_index=1)
    assert server.headers[0]["authorization"] == "Bearer sk-secret-4242"
    assert "sk-secret-4242" not in str(caught.value)
    assert "sk-secret-4242" not in gateway.accounting.report().model_dump_json()
    assert all(b"sk-secret-4242" not in path.read_bytes() for path in tmp_path.rglob("*") if path.is_file())


EMBED_TEXTS = ["red apple pie", "blue sky", "red apple pie"]


async def test_embed_returns_one_vector_per_text_in_order_and_is_accounted(server):
    gateway = make_gateway(server)
    vectors = await gateway.embed(EMBED_TEXTS, role="agent", model="test-embed")
    assert vectors == [server.embed(text) for text in EMBED_TEXTS]
    assert server.paths == ["/v1/embeddings"]
    # Duplicates are sent once; the request goes to this gateway's endpoint with the embeddings model.
    assert server.requests[0]["input"] == ["red apple pie", "blue sky"]
    assert server.requests[0]["model"] == "test-embed"
    usage = gateway.accounting.report().by_role["agent"]
    assert (usage.calls, usage.cache_hits, usage.prompt_tokens, usage.completion_tokens) == (1, 0, 3 + 2, 0)


async def test_embed_cache_hit_sends_no_request_and_a_partial_hit_sends_only_the_new_text(server, tmp_path: Path):
    first = make_gateway(server, cache=ResponseCache(tmp_path))
    original = await first.embed(["red apple pie", "blue sky"], role="agent", model="test-embed")
    second = reopen_on_the_same_folder(server, first, tmp_path)
    assert await second.embed(["blue sky", "red apple pie"], role="agent", model="test-embed") == original[::-1]
    assert len(server.requests) == 1
    usage = second.accounting.report().by_role["agent"]
    assert (usage.calls, usage.cache_hits, usage.prompt_tokens) == (1, 1, 5)

    await second.embed(["blue sky", "green grass grows"], role="agent", model="test-embed")
    assert server.requests[-1]["input"] == ["green grass grows"]
    # Another model, or the same text as a chat message, is a different cache entry.
    await second.embed(["blue sky"], role="agent", model="other-embed")
    await second.chat([{"role": "user", "content": "blue sky"}], role="agent")
    assert len(server.requests) == 4


async def test_a_partial_embedding_cache_hit_prices_only_the_texts_sent(server, tmp_path: Path):
    model = "text-embedding-3-small"  # priced in litellm's table, so the dollars can be checked
    first = make_gateway(server, cache=ResponseCache(tmp_path))
    await first.embed(["red apple pie"], role="agent", model=model)
    cached_tokens = first.accounting.report().by_role["agent"].prompt_tokens
    second = reopen_on_the_same_folder(server, first, tmp_path)
    await second.embed(["red apple pie", "blue sky"], role="agent", model=model)
    usage = second.accounting.report().by_role["agent"]
    sent_tokens = usage.prompt_tokens - cached_tokens
    assert cached_tokens > 0 and sent_tokens > 0
    assert usage.dollars == pytest.approx(sent_tokens * table_price(model).prompt / 1_000_000)


async def test_embed_retries_transient_failures_and_refuses_bad_requests(server):
    gateway = make_gateway(server)
    server.plan(Fault(status=500), Fault(status=429))
    assert await gateway.embed(["blue sky"], role="generator", model="test-embed") == [server.embed("blue sky")]
    assert len(server.requests) == 3
    usage = gateway.accounting.report().by_role["generator"]
    assert (usage.calls, usage.retries, usage.errors) == (1, 2, 0)

    server.plan(Fault(status=400, message="model does not support embeddings"))
    with pytest.raises(LLMRequestError, match="test-embed .*HTTP 400: model does not support embeddings"):
        await gateway.embed(["new text"], role="generator", model="test-embed")
    assert len(server.requests) == 4
    assert gateway.accounting.report().by_role["generator"].errors == 1


async def test_embed_shares_the_concurrency_limit_with_chat(server):
    server.latency_s = 0.05
    gateway = make_gateway(server, max_concurrency=2)
    await asyncio.gather(
        *(gateway.embed([f"text {i}"], role="agent", model="test-embed") for i in range(4)),
        *(gateway.chat([{"role": "user", "content": f"q{i}"}], role="agent") for i in range(4)),
    )
    assert len(server.requests) == 8 and server.peak_in_flight == 2


async def test_embed_with_the_embedded_model_config_asks_its_endpoint(server, monkeypatch):
    """The embedded server answers /v1/embeddings now: a config on it sends the request instead of refusing."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    gateway = LLMGateway(LLMConfig(model=LOCAL_MODEL_NAME), base_url=server.url, cache=None, accounting=Accounting())
    assert await gateway.embed(["blue sky"], role="agent", model="test-embed") == [server.embed("blue sky")]
    assert server.paths == ["/v1/embeddings"]


async def test_a_long_history_arrives_whole_when_sent_in_chunks(server):
    """The body goes out as parts regrouped into chunks (small ones joined, large ones alone): the server must
    receive exactly the canonical request."""
    messages = [{"role": "user" if i % 2 else "assistant", "content": f"message {i} " + "x" * (i * 997 % 90_000)}
                for i in range(40)]
    reply = await make_gateway(server).chat(messages, role="agent", json_schema={"type": "object"})
    assert reply.text.startswith("echo: message 39")
    assert server.requests == [{"messages": messages, "model": "test-model", "temperature": 0.0, "max_tokens": 512,
                                "response_format": {"type": "json_object", "schema": {"type": "object"}}}]


@pytest.mark.parametrize("response_format", [None, {"type": "json_object", "schema": {"type": "object"}}])
def test_cache_key_hashes_the_canonical_request_with_each_message_by_its_hash(response_format):
    """The key is the hash of the canonical request in which each message stands for its own hash (so a long
    history's messages are hashed once, not on every call); the body is the canonical request."""
    long = "ünïcode, \"quotes\", \\ and\nnewlines " * 40  # long enough to be encoded once and reused
    messages = [{"role": "user", "content": "héllo \"x\""}, {"role": "assistant", "content": long}]
    request = CacheRequest(endpoint="http://h/v1", model="m", messages=messages,
                           temperature=0.5, max_tokens=64, response_format=response_format, sample_index=2)

    def canonical(value):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    hashed = [hashlib.sha256(canonical(message)).hexdigest() for message in messages]
    whole = canonical({"v": KEY_VERSION, **request.model_dump(), "messages": hashed})
    assert request.key == hashlib.sha256(whole).hexdigest()
    again = CacheRequest(**{**request.model_dump(), "messages": [*messages, {"role": "user", "content": long}]})
    assert json.loads(b"".join(again.chat_body())) == {"messages": again.messages, "model": "m", "temperature": 0.5, "max_tokens": 64,
                                           **({} if response_format is None else {"response_format": response_format})}
    other = CacheRequest(**{**request.model_dump(), "messages": [messages[0], {"role": "user", "content": long}]})
    assert len({request.key, again.key, other.key}) == 3  # the same content under another role is another request


@pytest.mark.parametrize(("messages", "temperature", "response_format"), [
    ([], 0.0, None),
    ([{"role": "user", "content": "x"}], 1e-05, {"b": ["é", 1], "a": None}),
    ([{"role": "tool", "content": "y", "n": "1"}, {"role": "user", "content": "\u2028\x00"}], 0.7, {}),
])
def test_cache_key_is_the_canonical_formula_for_any_message_list_and_field_text(messages, temperature, response_format):
    """The key's JSON and the body are put together from parts, not by the JSON encoder: they must equal its
    text for an empty list, odd messages, small floats and fields holding quotes and non-ASCII text."""
    request = CacheRequest(endpoint='http://h/"ü"', model='m"\\', messages=messages, temperature=temperature,
                           max_tokens=1, response_format=response_format, sample_index=3)
    hashed = [hashlib.sha256(json.dumps(m, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode())
              .hexdigest() for m in messages]
    whole = json.dumps({"v": KEY_VERSION, **request.model_dump(), "messages": hashed}, sort_keys=True,
                       separators=(",", ":"), ensure_ascii=False)
    assert request.key == hashlib.sha256(whole.encode()).hexdigest()
    body = {"messages": messages, "model": request.model, "temperature": temperature, "max_tokens": 1}
    if response_format is not None:
        body["response_format"] = response_format
    sent = b"".join(request.chat_body()).decode()
    assert json.loads(sent) == body and f'"temperature":{json.dumps(temperature)},' in sent


def test_cache_writes_from_many_threads_are_read_at_once_and_all_committed_by_close(tmp_path: Path):
    """Puts are committed in batches by one writer woken once per idle spell: each is readable as soon as it is
    put, ``flush`` waits for all of them, and what ``close`` committed is there when the folder is reopened."""
    cache = ResponseCache(tmp_path, write_delay_s=0.01)
    requests = [CacheRequest(endpoint="e", model="m", messages=[{"role": "user", "content": f"q{i}"}],
                             temperature=0.0, max_tokens=1, response_format=None, sample_index=0) for i in range(200)]

    def put_some(start: int) -> None:
        for request in requests[start::4]:
            cache.put(request, CachedReply(text=request.messages[0]["content"], model="m", prompt_tokens=1,
                                           completion_tokens=1, finish_reason="stop"))
            assert cache.get(request).text == request.messages[0]["content"]

    threads = [threading.Thread(target=put_some, args=(start,)) for start in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    cache.flush()
    assert not cache._pending and len(cache._store) == 200
    late = CacheRequest(**{**requests[0].model_dump(), "sample_index": 1})
    cache.put(late, CachedReply(text="late", model="m", prompt_tokens=0, completion_tokens=0, finish_reason=None))
    cache.close()
    reopened = ResponseCache(tmp_path)
    assert len(reopened) == 201 and reopened.get(late).text == "late"
    reopened.close()


@pytest.mark.parametrize(("broken", "reason"), [("cache.db", "not a database"), ("sub", "could not be created")])
def test_a_cache_that_cannot_be_opened_is_named_when_first_used_and_closes_quietly(tmp_path: Path, broken: str,
                                                                                    reason: str):
    """The writer makes and opens the store in the background: a folder holding no database, or one that cannot be
    made (under a file), surfaces at the first lookup as a user error naming the folder (not a traceback from the
    thread), and closing the cache after it raises nothing."""
    (tmp_path / "cache.db").write_text("not a database")
    folder = tmp_path if broken == "cache.db" else tmp_path / "cache.db" / broken
    cache = ResponseCache(folder)
    request = CacheRequest(endpoint="e", model="m", messages=HELLO, temperature=0.0, max_tokens=1,
                           response_format=None, sample_index=0)
    with pytest.raises(UserInputError, match=f"cannot be opened .*{reason}.*--no-cache") as raised:
        cache.get(request)
    assert raised.value.source == str(folder)
    cache.close()


def test_a_request_that_starts_with_an_earlier_ones_messages_reuses_their_chunks_and_is_never_confused():
    """A native agent resends its history with new messages at the end: the body of the part seen before is the
    chunks joined then, the key and body equal those made from scratch, and messages equal in identity but changed
    in value (or another list of the same sizes) are encoded afresh."""
    from memevo.agents.llm.encoded_messages import CHUNK_BYTES, _Prefixes

    def request(messages):
        return CacheRequest(endpoint="e", model="m", messages=messages, temperature=0.0, max_tokens=1,
                            response_format=None, sample_index=0)

    def canonical(messages):
        hashed = [hashlib.sha256(json.dumps(m, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode())
                  .hexdigest() for m in messages]
        whole = json.dumps({"v": KEY_VERSION, **request(messages).model_dump(), "messages": hashed}, sort_keys=True,
                           separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(whole.encode()).hexdigest()

    history = [{"role": "user" if i % 2 else "assistant", "content": chr(65 + i) * (CHUNK_BYTES // 3)} for i in range(9)]
    first = request([*history, {"role": "user", "content": "tail one"}])
    history += [{"role": "user", "content": "more"}, {"role": "assistant", "content": "reply"}]
    second = request([*history, {"role": "user", "content": "tail two"}])
    for sent in (first, second):
        assert json.loads(b"".join(sent.chat_body())) == {"messages": sent.messages, "model": "m", "temperature": 0.0,
                                                           "max_tokens": 1}
        assert sent.key == canonical(sent.messages)
    first_chunks, second_chunks = first.chat_body(), second.chat_body()
    assert len(first_chunks) > 2 and all(a is b for a, b in zip(first_chunks[:-1], second_chunks, strict=False))
    history[3]["content"] = "changed in place"  # the same dict, another value
    third = request([*history, {"role": "user", "content": "tail three"}])
    assert third.key == canonical(third.messages) and json.loads(b"".join(third.chat_body()))["messages"] == third.messages
    other = [{"role": m["role"], "content": m["content"].lower()} for m in history]
    fourth = request([*other, {"role": "user", "content": "t"}])
    assert fourth.key == canonical(fourth.messages) and json.loads(b"".join(fourth.chat_body()))["messages"] == other + [
        {"role": "user", "content": "t"}]
    small = _Prefixes(budget_bytes=1)  # keeps nothing: every request is encoded from scratch
    for _ in range(2):
        assert json.loads(b"".join(small.encode(third.messages).body(b"]}"))) == {"messages": third.messages}


def test_flush_and_close_commit_at_once_instead_of_waiting_for_more_replies(tmp_path: Path):
    """The writer waits ``write_delay_s`` for more replies to join a transaction; a flush or a close cuts that wait
    short (a run's end waited out up to a whole delay). With a delay of a minute, both return within seconds."""
    cache = ResponseCache(tmp_path, write_delay_s=60.0)
    requests = [CacheRequest(endpoint="e", model="m", messages=[{"role": "user", "content": f"q{i}"}],
                             temperature=0.0, max_tokens=1, response_format=None, sample_index=0) for i in range(2)]
    reply = CachedReply(text="a", model="m", prompt_tokens=1, completion_tokens=1, finish_reason="stop")
    finished = threading.Event()

    def put_flush_and_close() -> None:
        cache.put(requests[0], reply)
        cache.flush()
        assert not cache._pending
        cache.put(requests[1], reply)
        cache.close()
        finished.set()

    threading.Thread(target=put_flush_and_close, daemon=True).start()
    assert finished.wait(10.0), "flush or close waited for the writer's delay"
    reopened = ResponseCache(tmp_path)
    assert len(reopened) == 2
    reopened.close()


def test_the_cache_is_culled_to_its_size_limit_when_it_closes_not_on_each_write(tmp_path: Path):
    """Writes skip diskcache's cull (half their CPU); ``close`` culls once, so the folder still keeps to its limit,
    and the folder's own settings are not changed for other processes."""
    import diskcache

    diskcache.Cache(str(tmp_path), size_limit=50_000).close()
    cache = ResponseCache(tmp_path, write_delay_s=0.0)
    for index in range(100):
        request = CacheRequest(endpoint="e", model="m", messages=[{"role": "user", "content": f"q{index}"}],
                               temperature=0.0, max_tokens=1, response_format=None, sample_index=0)
        cache.put(request, CachedReply(text="x" * 2000, model="m", prompt_tokens=1, completion_tokens=1,
                                       finish_reason="stop"))
    cache.flush()
    assert cache._store.volume() > 50_000 and len(cache._store) == 100
    cache.close()
    reopened = diskcache.Cache(str(tmp_path))
    assert reopened.volume() <= 50_000 < 100 * 2000 and reopened.cull_limit == 10
    reopened.close()
