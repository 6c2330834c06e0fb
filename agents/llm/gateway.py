"""The one async client every part of memevo uses to reach an OpenAI-compatible endpoint.

It adds what the raw SDK call lacks for long evaluation runs: a concurrency limit shared across
event loops, retries with exponential backoff and jitter for transient failures only (429, 408,
5xx, timeouts, connection errors), a persistent response cache, lenient JSON parsing and per-role
accounting. Embedding requests (``embed``) share all of it, so retrieval is no side door around the
limits or the bill. Every request is booked in the accounting as it is sent and settled by the count of its
answer (made once the answer is in the cache) or of its failure: at a kill, each request served or in flight is
counted as answered or as unknown, and no counted answer is asked for again. Requests go out through
``transport.JSONTransport`` (httpx rather than the openai SDK, whose request transform dominated the CPU cost per
call), so there is one retry policy.
"""

from __future__ import annotations

import asyncio
import functools
import json
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import urlparse

from memevo.agents.llm.accounting import Accounting
from memevo.agents.llm.cache import CachedReply, CacheRequest, ResponseCache, canonical_json
from memevo.agents.llm.config import LLMConfig
from memevo.agents.llm.endpoints import Route, another_awake, next_route
from memevo.agents.llm.limiter import ConcurrencyLimit
from memevo.agents.llm.llama_server import OPTION_LOGPROBS_PATH
from memevo.agents.llm.pricing import Pricing
from memevo.agents.llm.protocol import (
    ChatReply,
    LLMError,
    LLMJSONError,
    LLMRequestError,
    Message,
    OptionLogprob,
    Role,
)
from memevo.agents.llm.transport import Body, JSONTransport, RefusedHTTPError, TransientHTTPError
from memevo.agents.llm.urgency import in_urgency_order
from memevo.core.errors import UserInputError

OPENAI_HOST_SUFFIXES = ("openai.com", "openai.azure.com")
EMBEDDING_FORMAT: dict[str, Any] = {"type": "embedding"}
"""The ``response_format`` of an embedding cache entry: no chat request has it, so the two never collide."""

Sleep = Callable[[float], Awaitable[None]]


def response_format_for(base_url: str, json_schema: dict[str, Any] | None, json_mode: bool) -> dict[str, Any] | None:
    """The ``response_format`` this endpoint understands.

    OpenAI itself takes ``json_schema``; llama-cpp-python's server (and the other local servers,
    which accept or ignore the extra key) take ``json_object`` with a ``schema`` and then constrain
    decoding to it. Plain ``json_object`` is only used when no schema is given.
    """
    if json_schema is None:
        return {"type": "json_object"} if json_mode else None
    if _is_openai(base_url):
        return {"type": "json_schema", "json_schema": {"name": "reply", "schema": json_schema, "strict": False}}
    return {"type": "json_object", "schema": json_schema}


@functools.cache
def _is_openai(base_url: str) -> bool:
    """Whether ``base_url`` is OpenAI's own API (parsed once per URL: it is asked on every call)."""
    return (urlparse(base_url).hostname or "").endswith(OPENAI_HOST_SUFFIXES)


def parse_json_reply(text: str) -> Any:
    """Strict JSON first, then json_repair; anything but an object or array is an ``LLMJSONError``."""
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        import json_repair  # ~30 ms to import: only once a reply needs repairing, not at every start

        parsed = json_repair.loads(text)
    if not isinstance(parsed, dict | list):
        raise LLMJSONError(f"reply is not a JSON object or array: {text[:200]!r}", raw_text=text)
    return parsed


class LLMGateway:
    """Implements ``ChatClient`` for one model at one endpoint, or at several sharing the load (``more_endpoints``,
    each with its own concurrency limit; see ``endpoints``). ``base_url`` is the first one: the replies' identity
    in the cache."""

    def __init__(
        self,
        config: LLMConfig,
        *,
        base_url: str,
        cache: ResponseCache | None,
        accounting: Accounting,
        limit: ConcurrencyLimit | None = None,
        endpoint_identity: str | None = None,
        health_check: Callable[[], None] | None = None,
        home_loop: asyncio.AbstractEventLoop | None = None,
        likelihood_available: bool = False,
        more_endpoints: Sequence[tuple[str, ConcurrencyLimit]] = (),
        backoff_base_s: float = 0.5,
        backoff_cap_s: float = 30.0,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.config = config
        self.base_url = base_url.rstrip("/")
        self.endpoint_identity = endpoint_identity or self.base_url
        # Raises ``LLMError`` when the server process behind this endpoint is gone (the embedded model).
        self.health_check = health_check
        # Whether the endpoint serves ``OPTION_LOGPROBS_PATH`` (memevo's embedded server does, others do not).
        self.likelihood_available = likelihood_available
        self.cache = cache
        self.accounting = accounting
        # The config's price for its model, else litellm's table, else free when the endpoint is on this machine.
        self.pricing = Pricing({config.model: config.price} if config.price is not None else None,
                               endpoint=self.base_url)
        self.backoff_base_s = backoff_base_s
        self.backoff_cap_s = backoff_cap_s
        self.sleep = sleep  # the wait between retries; tests pass a recorder instead of waiting
        endpoints = [(self.base_url, limit or ConcurrencyLimit(config.concurrency(embedded=False))),
                     *more_endpoints]
        # Requests made on ``home_loop`` skip the sync bridge's thread (see ``JSONTransport``).
        self.routes = [Route(url, url_limit, JSONTransport(url, api_key=config.api_key, timeout_s=config.timeout_s,
                                                          max_connections=url_limit.limit, home_loop=home_loop))
                       for url, url_limit in endpoints]
        self.limit = self.routes[0].limit  # the first endpoint's (``width`` counts them all)

    @property
    def width(self) -> int:
        """Requests this gateway's endpoints take at once, all together."""
        return sum(route.limit.limit for route in self.routes)

    async def chat(
        self,
        messages: list[Message],
        *,
        role: Role,
        json_schema: dict[str, Any] | None = None,
        json_mode: bool = False,
        temperature: float | None = None,
        max_tokens: int | None = None,
        sample_index: int = 0,
    ) -> ChatReply:
        request = CacheRequest(
            endpoint=self.endpoint_identity,
            model=self.config.model,
            messages=messages,
            temperature=self.config.temperature if temperature is None else temperature,
            max_tokens=self.config.max_tokens if max_tokens is None else max_tokens,
            response_format=response_format_for(self.base_url, json_schema, json_mode),
            sample_index=sample_index,
        )
        started = time.monotonic()
        stored = self.cache.get(request) if self.cache is not None else None
        if stored is None:
            try:
                completion = await self._send(role, request.model, "chat/completions", request.chat_body())
                stored = _stored_reply(completion, request.model)
            except LLMError:
                self.accounting.record_error(role, wall_s=time.monotonic() - started, booked=True)
                raise
            if self.cache is not None:
                self.cache.put(request, stored)  # in the cache's journal before the count settles the booking
            cached = False
        else:
            cached = True
        latency = time.monotonic() - started
        self.accounting.record_call(
            role,
            model=request.model,  # the name a price is set for (a reply may name a dated snapshot of it)
            prompt_tokens=stored.prompt_tokens,
            completion_tokens=stored.completion_tokens,
            wall_s=latency,
            cached=cached,
            booked=not cached,
            pricing=self.pricing,
        )
        if not cached:  # once the call is recorded: a kill while waiting here loses no answered call's usage
            await in_urgency_order()
        # Built without validation: every field comes from a validated ``CachedReply``.
        return ChatReply.model_construct(text=stored.text, model=stored.model, prompt_tokens=stored.prompt_tokens,
                                         completion_tokens=stored.completion_tokens, cached=cached, latency_s=latency,
                                         finish_reason=stored.finish_reason)

    async def chat_json(
        self,
        messages: list[Message],
        *,
        role: Role,
        json_schema: dict[str, Any] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        sample_index: int = 0,
    ) -> tuple[Any, ChatReply]:
        reply = await self.chat(
            messages,
            role=role,
            json_schema=json_schema,
            json_mode=True,
            temperature=temperature,
            max_tokens=max_tokens,
            sample_index=sample_index,
        )
        try:
            return parse_json_reply(reply.text), reply
        except LLMJSONError:
            self.accounting.record_error(role)
            raise

    async def embed(self, texts: list[str], *, role: Role, model: str) -> list[list[float]]:
        """Embeddings of ``texts`` (in order) from the embeddings ``model`` at this endpoint.

        Each text is cached on its own (key: model + text), so only unseen texts are sent, in one request.
        Accounting counts one call per ``embed`` (a cache hit when nothing was sent) and the prompt tokens
        of all texts, but prices only the texts sent; the endpoint reports tokens per request, so they are
        shared evenly among its texts.
        """
        requests = {text: _embedding_request(self.endpoint_identity, model, text) for text in dict.fromkeys(texts)}
        if not requests:
            return []
        started = time.monotonic()

        async def fetch(missing: list[str]) -> dict[str, CachedReply]:
            body = canonical_json({"model": model, "input": missing, "encoding_format": "float"}).encode("utf-8")
            return _stored_embeddings(await self._send(role, model, "embeddings", body), missing, model)

        found, missing = await self._per_item_cached(requests, fetch, role=role, started=started)
        sent_tokens = sum(found[text].prompt_tokens for text in missing)
        self.accounting.record_call(
            role,
            model=model,
            prompt_tokens=sum(found[text].prompt_tokens for text in requests),
            completion_tokens=0,
            wall_s=time.monotonic() - started,
            cached=not missing,
            sent_prompt_tokens=sent_tokens,
            booked=bool(missing),
            pricing=self.pricing,
        )
        return [json.loads(found[text].text) for text in texts]

    async def option_logprobs(self, messages: list[Message], options: list[str], *, role: Role) -> list[OptionLogprob]:
        """Each option's log-probability as the assistant's reply to ``messages`` (in order), from the embedded
        server's option route. Each (messages, option) is cached on its own; the options not cached go in one
        request, which the accounting books as one call of the chat's prompt tokens."""
        if not self.likelihood_available:
            raise UserInputError(
                f"{self.config.model} at {self.base_url} cannot score answer options by likelihood (only memevo's "
                "embedded model can): use answer_mode 'generated'", field="answer_mode")
        requests = {option: _option_request(self.endpoint_identity, self.config.model, messages, option)
                    for option in dict.fromkeys(options)}
        started = time.monotonic()

        async def fetch(missing: list[str]) -> dict[str, CachedReply]:
            body = canonical_json({"model": self.config.model, "messages": messages, "options": missing})
            response = await self._send(role, self.config.model, OPTION_LOGPROBS_PATH.removeprefix("/v1/"),
                                        body.encode("utf-8"))
            return _stored_option_scores(response, missing, self.config.model)

        found, missing = await self._per_item_cached(requests, fetch, role=role, started=started)
        self.accounting.record_call(role, model=self.config.model, prompt_tokens=found[options[0]].prompt_tokens,
                                    completion_tokens=0,
                                    wall_s=time.monotonic() - started, cached=not missing, booked=bool(missing),
                                    pricing=self.pricing)
        return [OptionLogprob.model_validate_json(found[option].text) for option in options]

    async def _per_item_cached(
        self, requests: dict[str, CacheRequest], fetch: Callable[[list[str]], Awaitable[dict[str, CachedReply]]], *,
        role: Role, started: float,
    ) -> tuple[dict[str, CachedReply], list[str]]:
        """Replies for every key of ``requests``: cached ones from the cache, the rest from one ``fetch`` of the
        missing keys, stored as they come (embeddings and option scores are cached per item, sent in one batch).
        Returns the replies and the keys that were fetched; a failed fetch is booked as an error and raised."""
        found: dict[str, CachedReply] = {}
        if self.cache is not None:
            looked_up = {key: self.cache.get(request) for key, request in requests.items()}
            found = {key: reply for key, reply in looked_up.items() if reply is not None}
        missing = [key for key in requests if key not in found]
        if missing:
            try:
                fresh = await fetch(missing)
            except LLMError:
                self.accounting.record_error(role, wall_s=time.monotonic() - started, booked=True)
                raise
            if self.cache is not None:
                for key, reply in fresh.items():
                    self.cache.put(requests[key], reply)
            found.update(fresh)
        return found, missing

    async def _send(self, role: Role, model: str, path: str, payload: Body) -> dict[str, Any]:
        """One logical request: retried on transient failures, refused at once on the others. Booked as it is first
        sent: the caller settles it with the count of its answer or failure, this method a cancellation.

        A connection failure is first checked against the server's health: retrying a dead process
        would only hide its crash behind a connection error.
        """
        attempts = self.config.max_retries + 1
        booked = False
        try:
            for attempt in range(attempts):
                route = next_route(self.routes)
                try:
                    async with route.limit.slot(payload) as ticket:
                        if attempt == 0:  # once it has a slot: a request waiting for one is not sent yet
                            self.accounting.book(role)
                            booked = True
                        if self.health_check is not None:
                            self.health_check()
                        completion = await route.transport.post(path, payload)
                        ticket.settle(completion)
                        route.succeeded()
                        self.accounting.record_endpoint(route.url, completion)
                        return completion
                except RefusedHTTPError as error:
                    self.accounting.record_endpoint(route.url, None)
                    raise LLMRequestError(f"{model} at {route.url} refused the request: {error}") from error
                except TransientHTTPError as error:
                    self.accounting.record_endpoint(route.url, None)
                    if error.connection and self.health_check is not None:
                        self.health_check()
                    failure, retry_after = error.failure, error.retry_after_s
                    route.failed_for(self._delay(route.failed_in_a_row, retry_after))
                if attempt + 1 < attempts:
                    self.accounting.record_retry(role)
                    if not another_awake(self.routes, route):  # else another endpoint takes the retry at once
                        await self.sleep(self._delay(attempt, retry_after))
            raise LLMError(f"{model} at {route.url} failed after {attempts} attempt(s): {failure}")
        except asyncio.CancelledError:  # the run stopped waiting (a pruned or stopped play): not lost to a kill
            if booked:
                self.accounting.record_cancel(role)
            raise

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with jitter (50-100 % of the step), at least what the server asked for."""
        step = min(self.backoff_cap_s, self.backoff_base_s * 2**attempt)
        delay = step * random.uniform(0.5, 1.0)
        return min(self.backoff_cap_s, max(delay, retry_after or 0.0))

    async def aclose(self) -> None:
        """Close the HTTP sessions (a later request opens a new one)."""
        for route in self.routes:
            await route.transport.aclose()

    def close(self) -> None:
        """``aclose`` for synchronous callers."""
        for route in self.routes:
            route.transport.close()


def _stored_reply(completion: dict[str, Any], model: str) -> CachedReply:
    """The parts of an OpenAI-format chat completion worth keeping; a malformed one is an ``LLMError``."""
    try:
        choices = completion.get("choices") or []
        if not choices:
            raise LLMError(f"{model}: the endpoint returned no choices")
        choice = choices[0]
        usage = completion.get("usage") or {}
        return CachedReply(
            text=(choice.get("message") or {}).get("content") or "",
            model=completion.get("model") or model,
            prompt_tokens=usage.get("prompt_tokens") or 0,
            completion_tokens=usage.get("completion_tokens") or 0,
            finish_reason=choice.get("finish_reason"),
        )
    except (AttributeError, TypeError, ValueError) as error:
        raise LLMError(f"{model}: malformed chat completion from the endpoint ({error})") from error


def _option_request(endpoint: str, model: str, messages: list[Message], option: str) -> CacheRequest:
    """The cache key of one option's score after ``messages``: a response format no chat request has."""
    return CacheRequest(endpoint=endpoint, model=model, messages=messages, temperature=0.0, max_tokens=0,
                        response_format={"type": "option_logprob", "option": option}, sample_index=0)


def _stored_option_scores(response: dict[str, Any], options: list[str], model: str) -> dict[str, CachedReply]:
    """One cache entry per option (its ``OptionLogprob`` as JSON), matched to the options by position."""
    try:
        scores = [OptionLogprob.model_validate(entry) for entry in response["options"]]
        prompt_tokens = int((response.get("usage") or {}).get("prompt_tokens") or 0)
    except (KeyError, TypeError, ValueError) as error:
        raise LLMError(f"{model}: malformed option scores from the endpoint ({error!r})") from error
    if len(scores) != len(options):
        raise LLMError(f"{model}: the endpoint scored {len(scores)} options of {len(options)}")
    return {option: CachedReply(text=score.model_dump_json(), model=model, prompt_tokens=prompt_tokens,
                                completion_tokens=0, finish_reason=None)
            for option, score in zip(options, scores, strict=True)}


def _embedding_request(endpoint: str, model: str, text: str) -> CacheRequest:
    """The cache key of one text's embedding: endpoint, model and text, in a form no chat request takes."""
    return CacheRequest(
        endpoint=endpoint,
        model=model,
        messages=[{"role": "embedding_input", "content": text}],
        temperature=0.0,
        max_tokens=0,
        response_format=EMBEDDING_FORMAT,
        sample_index=0,
    )


def _stored_embeddings(response: dict[str, Any], texts: list[str], model: str) -> dict[str, CachedReply]:
    """One cache entry per text (the vector as JSON text), matched to the inputs by ``index``."""
    try:
        data = sorted(response["data"], key=lambda item: item["index"])
        total = (response.get("usage") or {}).get("prompt_tokens") or 0
        vectors = [item["embedding"] for item in data]
    except (KeyError, TypeError, AttributeError) as error:
        raise LLMError(f"{model}: malformed embeddings reply from the endpoint ({error!r})") from error
    if len(vectors) != len(texts):
        raise LLMError(f"{model}: the endpoint returned {len(vectors)} embeddings for {len(texts)} texts")
    share, extra = divmod(total, len(texts))
    return {
        text: CachedReply(
            text=json.dumps(vector),
            model=response.get("model") or model,
            prompt_tokens=share + (position < extra),
            completion_tokens=0,
            finish_reason=None,
        )
        for position, (text, vector) in enumerate(zip(texts, vectors, strict=True))
    }
