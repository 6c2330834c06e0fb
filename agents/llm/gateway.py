"""The one async client every part of memevo uses to reach an OpenAI-compatible endpoint.

It adds what the raw SDK call lacks for long evaluation runs: a concurrency limit shared across
event loops, retries with exponential backoff and jitter for transient failures only (429, 408,
5xx, timeouts, connection errors), a persistent response cache, lenient JSON parsing and per-role
accounting. Embedding requests (``embed``) share all of it, so retrieval is no side door around the
limits or the bill. The SDK's own retries are switched off so there is exactly one retry policy.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import urlparse

import json_repair
import openai
from openai import AsyncOpenAI

from memevo.agents.errors import UserInputError
from memevo.agents.llm.accounting import Accounting
from memevo.agents.llm.cache import CachedReply, CacheRequest, ResponseCache
from memevo.agents.llm.config import LOCAL_MODEL_NAME, LLMConfig
from memevo.agents.llm.limiter import ConcurrencyLimit
from memevo.agents.llm.protocol import ChatReply, LLMError, LLMJSONError, LLMRequestError, Message, Role

RETRYABLE_STATUS = frozenset({408, 429})
OPENAI_HOST_SUFFIXES = ("openai.com", "openai.azure.com")
EMBEDDING_FORMAT: dict[str, Any] = {"type": "embedding"}
"""The ``response_format`` of an embedding cache entry: no chat request has it, so the two never collide."""

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]


def response_format_for(base_url: str, json_schema: dict[str, Any] | None, json_mode: bool) -> dict[str, Any] | None:
    """The ``response_format`` this endpoint understands.

    OpenAI itself takes ``json_schema``; llama-cpp-python's server (and the other local servers,
    which accept or ignore the extra key) take ``json_object`` with a ``schema`` and then constrain
    decoding to it. Plain ``json_object`` is only used when no schema is given.
    """
    if json_schema is None:
        return {"type": "json_object"} if json_mode else None
    host = urlparse(base_url).hostname or ""
    if host.endswith(OPENAI_HOST_SUFFIXES):
        return {"type": "json_schema", "json_schema": {"name": "reply", "schema": json_schema, "strict": False}}
    return {"type": "json_object", "schema": json_schema}


def parse_json_reply(text: str) -> Any:
    """Strict JSON first, then json_repair; anything but an object or array is an ``LLMJSONError``."""
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        parsed = json_repair.loads(text)
    if not isinstance(parsed, dict | list):
        raise LLMJSONError(f"reply is not a JSON object or array: {text[:200]!r}", raw_text=text)
    return parsed


class LLMGateway:
    """Implements ``ChatClient`` for one model at one endpoint."""

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
        backoff_base_s: float = 0.5,
        backoff_cap_s: float = 30.0,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.config = config
        self.base_url = base_url.rstrip("/")
        self.endpoint_identity = endpoint_identity or self.base_url
        # Raises ``LLMError`` when the server process behind this endpoint is gone (the embedded model).
        self.health_check = health_check
        self.cache = cache
        self.accounting = accounting
        self.limit = limit or ConcurrencyLimit(config.max_concurrency)
        self.limit.lower_to(config.max_concurrency)
        self.backoff_base_s = backoff_base_s
        self.backoff_cap_s = backoff_cap_s
        self.sleep = sleep  # the wait between retries; tests pass a recorder instead of waiting
        # httpx connection pools belong to one event loop, so each loop gets its own SDK client.
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncOpenAI] = weakref.WeakKeyDictionary()
        self._clients_lock = threading.Lock()

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
                completion = await self._send(
                    role, request.model, lambda client: client.chat.completions.create(**self._payload(request))
                )
                stored = _stored_reply(completion, request.model)
            except LLMError:
                self.accounting.record_error(role, wall_s=time.monotonic() - started)
                raise
            if self.cache is not None:
                self.cache.put(request, stored)
            cached = False
        else:
            cached = True
        latency = time.monotonic() - started
        self.accounting.record_call(
            role,
            model=stored.model,
            prompt_tokens=stored.prompt_tokens,
            completion_tokens=stored.completion_tokens,
            wall_s=latency,
            cached=cached,
        )
        return ChatReply(**stored.model_dump(), cached=cached, latency_s=latency)

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
        if self.config.model == LOCAL_MODEL_NAME and self.config.resolved_base_url() is None:
            raise UserInputError(
                f"the embedded local model server ({LOCAL_MODEL_NAME}) serves no embeddings: use retrieval "
                f"'bm25', or set llm.base_url (or OPENAI_BASE_URL) to an endpoint serving '{model}'",
                field="retrieval",
            )
        requests = {text: _embedding_request(self.endpoint_identity, model, text) for text in dict.fromkeys(texts)}
        if not requests:
            return []
        started = time.monotonic()
        found: dict[str, CachedReply] = {}
        if self.cache is not None:
            looked_up = {text: self.cache.get(request) for text, request in requests.items()}
            found = {text: stored for text, stored in looked_up.items() if stored is not None}
        missing = [text for text in requests if text not in found]
        sent_tokens = 0
        if missing:
            try:
                response = await self._send(
                    role,
                    model,
                    lambda client: client.embeddings.create(model=model, input=missing, encoding_format="float"),
                )
                fresh = _stored_embeddings(response, missing, model)
            except LLMError:
                self.accounting.record_error(role, wall_s=time.monotonic() - started)
                raise
            if self.cache is not None:
                for text, stored in fresh.items():
                    self.cache.put(requests[text], stored)
            found.update(fresh)
            sent_tokens = sum(stored.prompt_tokens for stored in fresh.values())
        self.accounting.record_call(
            role,
            model=model,
            prompt_tokens=sum(found[text].prompt_tokens for text in requests),
            completion_tokens=0,
            wall_s=time.monotonic() - started,
            cached=not missing,
            sent_prompt_tokens=sent_tokens,
        )
        return [json.loads(found[text].text) for text in texts]

    async def _send(self, role: Role, model: str, call: Callable[[AsyncOpenAI], Awaitable[T]]) -> T:
        """One logical request: retried on transient failures, refused at once on the others.

        A connection failure is first checked against the server's health: retrying a dead process
        would only hide its crash behind a connection error.
        """
        attempts = self.config.max_retries + 1
        for attempt in range(attempts):
            try:
                async with self.limit.slot():
                    if self.health_check is not None:
                        self.health_check()
                    return await call(self._client())
            except (openai.APITimeoutError, openai.APIConnectionError) as error:
                if self.health_check is not None:
                    self.health_check()
                failure, retry_after = f"{type(error).__name__}: {error}", None
            except openai.APIStatusError as error:
                status = error.status_code
                if status < 500 and status not in RETRYABLE_STATUS:
                    raise LLMRequestError(
                        f"{model} at {self.base_url} refused the request: HTTP {status}: {_detail(error)}"
                    ) from error
                failure, retry_after = f"HTTP {status}: {_detail(error)}", _retry_after_s(error)
            if attempt + 1 < attempts:
                self.accounting.record_retry(role)
                await self.sleep(self._delay(attempt, retry_after))
        raise LLMError(f"{model} at {self.base_url} failed after {attempts} attempt(s): {failure}")

    def _payload(self, request: CacheRequest) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": request.model,
            "messages": request.messages,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.response_format is not None:
            payload["response_format"] = request.response_format
        return payload

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with jitter (50-100 % of the step), at least what the server asked for."""
        step = min(self.backoff_cap_s, self.backoff_base_s * 2**attempt)
        delay = step * random.uniform(0.5, 1.0)
        return min(self.backoff_cap_s, max(delay, retry_after or 0.0))

    def _client(self) -> AsyncOpenAI:
        loop = asyncio.get_running_loop()
        with self._clients_lock:
            client = self._clients.get(loop)
            if client is None:
                client = AsyncOpenAI(
                    base_url=self.base_url,
                    api_key=self.config.api_key(),
                    timeout=self.config.timeout_s,
                    max_retries=0,
                )
                self._clients[loop] = client
            return client

    async def aclose(self) -> None:
        """Close the SDK client of the running loop; clients of other loops go with their loop."""
        with self._clients_lock:
            client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.close()


def _detail(error: openai.APIStatusError) -> str:
    """The server's own error message when it sent one, else the SDK's summary."""
    body = error.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"]
    return error.message


def _retry_after_s(error: openai.APIStatusError) -> float | None:
    value = error.response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _stored_reply(completion: Any, model: str) -> CachedReply:
    if not completion.choices:
        raise LLMError(f"{model}: the endpoint returned no choices")
    choice = completion.choices[0]
    usage = completion.usage
    return CachedReply(
        text=choice.message.content or "",
        model=completion.model or model,
        prompt_tokens=usage.prompt_tokens if usage else 0,
        completion_tokens=usage.completion_tokens if usage else 0,
        finish_reason=choice.finish_reason,
    )


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


def _stored_embeddings(response: Any, texts: list[str], model: str) -> dict[str, CachedReply]:
    """One cache entry per text (the vector as JSON text), matched to the inputs by ``index``."""
    data = sorted(response.data, key=lambda item: item.index)
    if len(data) != len(texts):
        raise LLMError(f"{model}: the endpoint returned {len(data)} embeddings for {len(texts)} texts")
    total = response.usage.prompt_tokens if response.usage else 0
    share, extra = divmod(total, len(texts))
    return {
        text: CachedReply(
            text=json.dumps(item.embedding),
            model=response.model or model,
            prompt_tokens=share + (position < extra),
            completion_tokens=0,
            finish_reason=None,
        )
        for position, (text, item) in enumerate(zip(texts, data, strict=True))
    }
