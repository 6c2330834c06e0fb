"""What every caller may rely on from an LLM client: the gateway and the test doubles both satisfy it."""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import ConfigDict

from memevo.core.errors import MemevoError
from memevo.core.lazy_model import LazyModel

Role = Literal["agent", "probe", "upper_bound", "baseline", "user_simulator", "generator", "proposer", "judge"]
ROLES: tuple[Role, ...] = (
    "agent", "probe", "upper_bound", "baseline", "user_simulator", "generator", "proposer", "judge"
)
"""``probe``: the diagnosis state probes; ``upper_bound``: the bare LLM told the true state; ``baseline``:
the bare LLM with no memory at all (memory-isolated score)."""

Message = dict[str, str]
"""One chat message: ``{"role": "system" | "user" | "assistant", "content": str}``."""


class ChatReply(LazyModel):
    """One completion as the caller sees it, whether it came from the network or the cache."""

    model_config = ConfigDict(frozen=True)

    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    latency_s: float = 0.0
    finish_reason: str | None = None


class OptionLogprob(LazyModel):
    """How likely the model finds one option's text as its whole reply: summed log-probability and token count."""

    model_config = ConfigDict(frozen=True)

    logprob: float
    tokens: int


class LLMError(MemevoError):
    """The endpoint could not produce a reply (after the allowed retries)."""


class LLMRequestError(LLMError):
    """A request the endpoint refused outright (HTTP 400 and the like): never retried."""


class LLMJSONError(LLMError):
    """The reply was not valid JSON even after lenient repair; callers count these."""

    def __init__(self, message: str, *, raw_text: str) -> None:
        self.raw_text = raw_text
        super().__init__(message)


@runtime_checkable
class ChatClient(Protocol):
    """An async chat client with per-role accounting."""

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
        """Return one completion; ``json_mode``/``json_schema`` ask the server for a JSON object."""
        ...

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
        """Ask for JSON and parse it leniently; raise ``LLMJSONError`` when it still does not parse."""
        ...


@runtime_checkable
class EmbeddingClient(Protocol):
    """A client that can also embed texts. Kept apart from ``ChatClient`` so chat-only doubles stay valid;
    embedding retrieval asks for it with ``isinstance(llm, EmbeddingClient)``."""

    async def embed(self, texts: list[str], *, role: Role, model: str) -> list[list[float]]:
        """One vector per text, in order, from the embeddings ``model``."""
        ...


@runtime_checkable
class LikelihoodClient(Protocol):
    """A client that can also score texts as the assistant's reply (likelihood answers). Kept apart from
    ``ChatClient`` so chat-only doubles stay valid; ``likelihood_available`` says whether the endpoint behind
    this client can (only the embedded server can)."""

    @property
    def likelihood_available(self) -> bool: ...

    async def option_logprobs(self, messages: list[Message], options: list[str], *, role: Role) -> list[OptionLogprob]:
        """Each option's log-probability as the reply to ``messages``, in order."""
        ...
