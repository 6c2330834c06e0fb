"""A DSPy language model whose every call goes through an ``LLMGateway``.

DSPy optimisers and modules then share the gateway's cache, concurrency limit, retries and per-role
accounting instead of calling the endpoint through LiteLLM behind memevo's back. DSPy 3.4 takes a
custom backend as an engine (``complete(Request) -> Response``) handed to ``dspy.LM``; the LM keeps
DSPy's history, callbacks and adapters, while its own response cache and retries are switched off
because the gateway owns both.

Two things the engine contract leaves out are restored here. DSPy strips ``n`` and ``rollout_id``
from the engine's ``Request`` and asks for ``n`` candidates as ``n`` identical requests, but the
gateway's cache tells samples apart only by ``sample_index``. So ``GatewayLM.__call__``/``acall``
record each public call's sample indices in a context variable; the engine fetches all of them
concurrently on the first request and hands out one reply per request. (A direct ``lm.forward()``
bypasses that entry point and gets sample 0 for every candidate; DSPy modules never call it.)

Sync calls (DSPy modules are sync by default) run the gateway on the process-wide bridge loop (see
``sync_bridge``), so they work from plain scripts, from worker threads of a running event loop and
from DSPy's parallel executor alike.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

import dspy
from dspy.lm15 import (
    Config,
    InvalidRequestError,
    ProviderError,
    Request,
    Response,
    TextPart,
    UnsupportedFeatureError,
    Usage,
    response_to_events,
)
from dspy.lm15 import Message as LMMessage

from memevo.agents.llm.gateway import LLMGateway
from memevo.agents.llm.protocol import ChatReply, LLMError, LLMRequestError, Message, Role
from memevo.agents.llm.sync_bridge import run_sync

if TYPE_CHECKING:
    from dspy._vendor.lm15.types import StreamEvent  # the type DSPy's own Engine protocol names

SAMPLES_PER_ROLLOUT = 1000
"""DSPy's ``rollout_id`` r and candidate i map to sample index (r + 1) * 1000 + i (i < 1000)."""

_PROVIDER = "memevo-gateway"
_HONOURED_CONFIG = {"temperature", "max_tokens", "response_format"}
_DEFAULT_CONFIG = Config()
_FINISH_REASONS = {"length": "length", "content_filter": "content_filter"}


@dataclass
class _Samples:
    """The sample indices of one public LM call, and the replies fetched for them."""

    indices: tuple[int, ...]
    replies: list[ChatReply] = field(default_factory=list)
    used: int = 0


_current_samples: ContextVar[_Samples | None] = ContextVar("memevo_gateway_lm_samples", default=None)


class GatewayEngine:
    """DSPy engine (sync ``complete``) sending each ``Request`` through ``gateway`` under ``role``.

    ``supports_response_schema`` and ``supported_params`` are the capability hints DSPy reads off a
    custom engine; the JSON adapter only asks for structured output when they allow it, and the
    gateway sends DSPy's output schema, which local servers enforce while decoding.
    """

    supports_response_schema = True
    supported_params = frozenset({"response_format", "temperature", "max_tokens", "n", "rollout_id"})

    def __init__(self, gateway: LLMGateway, role: Role) -> None:
        self.gateway = gateway
        self.role = role

    def complete(self, request: Request) -> Response:
        # Read the call's samples here: the bridge loop runs the coroutine in its own context.
        return run_sync(self.respond(request, _current_samples.get()))

    def stream(self, request: Request) -> Iterator[StreamEvent]:
        """The whole reply as one delta (the gateway does not stream tokens), so ``dspy.streamify`` works."""
        return response_to_events(self.complete(request))

    async def respond(self, request: Request, samples: _Samples | None) -> Response:
        """One candidate's ``Response``; the first candidate of a call fetches them all at once."""
        messages = _chat_messages(request)
        options = _chat_options(request.config)
        if samples is None:  # a direct lm.forward()/aforward() call
            return _response(await self._chat(messages, options, 0), request)
        if not samples.replies:
            samples.replies = list(
                await asyncio.gather(*(self._chat(messages, options, index) for index in samples.indices))
            )
        if samples.used == len(samples.replies):
            raise RuntimeError(f"DSPy asked for more than the {len(samples.indices)} candidates of this call")
        samples.used += 1
        return _response(samples.replies[samples.used - 1], request)

    async def _chat(self, messages: list[Message], options: dict[str, Any], sample_index: int) -> ChatReply:
        """One gateway call; its failures become the lm15 errors DSPy maps onto its ``LMError`` family."""
        try:
            return await self.gateway.chat(messages, role=self.role, sample_index=sample_index, **options)
        except LLMRequestError as error:
            raise InvalidRequestError(str(error), provider=_PROVIDER) from error
        except LLMError as error:
            raise ProviderError(str(error), provider=_PROVIDER) from error


class AsyncGatewayEngine:
    """The awaitable counterpart DSPy uses for ``acall``; same gateway, same role."""

    def __init__(self, engine: GatewayEngine) -> None:
        self.engine = engine

    async def complete(self, request: Request) -> Response:
        return await self.engine.respond(request, _current_samples.get())

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        for event in response_to_events(await self.complete(request)):
            yield event


class GatewayLM(dspy.LM):
    """``dspy.LM`` routed through ``gateway`` and accounted under ``role``."""

    def __init__(self, gateway: LLMGateway, *, role: Role = "proposer") -> None:
        engine = GatewayEngine(gateway, role)
        super().__init__(
            model=gateway.config.model,
            cache=False,
            num_retries=0,
            engine=engine,
            async_engine=AsyncGatewayEngine(engine),
        )
        # Set after construction: dspy.LM vets these against OpenAI reasoning-model rules meant for
        # requests it sends itself; here the gateway sends them, exactly as configured.
        self.kwargs.update(temperature=gateway.config.temperature, max_tokens=gateway.config.max_tokens)
        self.gateway = gateway
        self.role = role

    def __call__(self, prompt: Any = None, *, messages: Any = None, **kwargs: Any) -> Any:
        with self._samples(prompt, kwargs):
            return super().__call__(prompt, messages=messages, **kwargs)

    async def acall(self, prompt: Any = None, *, messages: Any = None, **kwargs: Any) -> Any:
        with self._samples(prompt, kwargs):
            return await super().acall(prompt, messages=messages, **kwargs)

    @contextmanager
    def _samples(self, prompt: Any, kwargs: dict[str, Any]) -> Iterator[None]:
        """Expose this call's sample indices (from ``n`` and ``rollout_id``) to the engine."""
        options = {**self.kwargs, **kwargs}
        explicit_request = isinstance(prompt, Request) or "request" in kwargs  # one Response, no ``n``
        count = 1 if explicit_request else options.get("n") or 1
        rollout_id = options.get("rollout_id")
        first = 0 if rollout_id is None else (int(rollout_id) + 1) * SAMPLES_PER_ROLLOUT
        token = _current_samples.set(_Samples(indices=tuple(range(first, first + count))))
        try:
            yield
        finally:
            _current_samples.reset(token)


def _text(parts: str | tuple[Any, ...], where: str) -> str:
    if isinstance(parts, str):
        return parts
    for index, part in enumerate(parts):
        if not isinstance(part, TextPart):
            raise UnsupportedFeatureError(
                f"the memevo gateway sends text only; {where}.parts[{index}] is {part.type}",
                feature=f"{where}.parts[{index}]",
            )
    return "\n".join(part.text for part in parts)


def _chat_messages(request: Request) -> list[Message]:
    """The request's system prompt and messages as the gateway's chat messages (text only)."""
    if request.tools:
        raise UnsupportedFeatureError("the memevo gateway does not send tools", feature="tools")
    messages: list[Message] = []
    if request.system is not None:
        messages.append({"role": "system", "content": _text(request.system, "system")})
    for index, message in enumerate(request.messages):
        messages.append({"role": message.role, "content": _text(message.parts, f"messages[{index}]")})
    return messages


def _chat_options(config: Config) -> dict[str, Any]:
    """``gateway.chat`` keyword arguments; any other generation setting is refused, not dropped."""
    refused = [
        f"config.{spec.name}"
        for spec in fields(Config)
        if spec.name not in _HONOURED_CONFIG and getattr(config, spec.name) != getattr(_DEFAULT_CONFIG, spec.name)
    ]
    if refused:
        raise UnsupportedFeatureError(f"the memevo gateway does not send {', '.join(refused)}", feature=refused[0])
    json_schema, json_mode = _json_request(config.response_format)
    return {
        "temperature": config.temperature,
        "max_tokens": config.max_tokens,
        "json_schema": json_schema,
        "json_mode": json_mode,
    }


def _json_request(response_format: dict[str, Any] | None) -> tuple[dict[str, Any] | None, bool]:
    """Canonical ``response_format`` (``json_object`` or ``json_schema``) as (json_schema, json_mode)."""
    kind = (response_format or {}).get("type")
    if kind == "json_schema":
        return response_format["schema"], True  # type: ignore[index]
    return None, kind == "json_object"


def _response(reply: ChatReply, request: Request) -> Response:
    return Response(
        id=None,
        model=reply.model or request.model,
        message=LMMessage.assistant([TextPart(reply.text)]),
        finish_reason=_FINISH_REASONS.get(reply.finish_reason or "", "stop"),
        usage=Usage(input_tokens=reply.prompt_tokens, output_tokens=reply.completion_tokens),
    )
