"""Endpoint and sampling settings of one LLM, as used by agents, simulators, generators and proposers."""

from __future__ import annotations

import os
import sys
from typing import Any
from urllib.parse import urlsplit

from pydantic import (
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from memevo.agents.llm.pricing import Price, on_this_machine, table_price
from memevo.core.errors import UserInputError
from memevo.core.lazy_model import LazyModel

LOCAL_MODEL_NAME = "smollm2-135m-instruct"
LOCAL_EMBEDDING_MODEL = LOCAL_MODEL_NAME
"""The embeddings the embedded server answers ``/v1/embeddings`` with: SmolLM2 itself, mean-pooled over the text."""
MODEL_ENV = "MEMEVO_MODEL"
BASE_URL_ENV = "OPENAI_BASE_URL"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
CONCURRENCY_ENV = "MEMEVO_CONCURRENCY"
REMOTE_CONCURRENCY = 16
"""Requests in flight per remote endpoint by default: hosted APIs serve many at once, and memevo's work is waiting."""
EMBEDDED_CONCURRENCY = 1
"""The embedded llama.cpp server serves one request at a time: a second one in flight only waits there, and two
alternating chats evict each other's prefix from the model's context (each then pays its whole prompt again)."""
CONCURRENCY_HELP = (
    f"LLM requests in flight per endpoint (default: ${CONCURRENCY_ENV}, else the config's llm.max_concurrency, "
    f"else {REMOTE_CONCURRENCY} for a remote endpoint and {EMBEDDED_CONCURRENCY} for the embedded model)."
)

SPEED_ONLY_FIELDS = frozenset({"max_concurrency", "extra_base_urls", "price"})
"""Fields that change how fast replies come or what they are counted to cost, never what they are: left out of ids,
and free to change on a resume."""

_served_models: dict[str, str] = {}
"""The model each remote endpoint was found to serve, asked once per process."""


def default_model(base_url: str | None = None, api_key_env: str = DEFAULT_KEY_ENV) -> str:
    """The model of a config that names none.

    ``MEMEVO_MODEL`` when set (one variable points every role at a model); else, with an endpoint
    (``base_url`` or ``OPENAI_BASE_URL``), the one model that endpoint lists; else the embedded model.
    """
    configured = os.environ.get(MODEL_ENV)
    if configured:
        return configured
    endpoint = base_url or os.environ.get(BASE_URL_ENV)
    return served_model(endpoint, api_key_env) if endpoint else LOCAL_MODEL_NAME


def served_model(base_url: str, api_key_env: str = DEFAULT_KEY_ENV) -> str:
    """The only model ``base_url`` lists at ``/models``; several or none is a ``UserInputError`` naming MEMEVO_MODEL."""
    import httpx  # only when an endpoint must be asked: keeps start-up light

    from memevo.agents.llm.proxies import check_proxies

    check_proxies()
    base_url = base_url.rstrip("/")
    if base_url in _served_models:
        return _served_models[base_url]
    headers = {"Authorization": f"Bearer {os.environ.get(api_key_env) or 'sk-no-key-needed'}"}
    try:
        response = httpx.get(f"{base_url}/models", headers=headers, timeout=15.0)
        response.raise_for_status()
        names = [str(entry["id"]) for entry in response.json()["data"]]
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as error:
        raise UserInputError(
            f"no model is configured and {base_url}/models could not be listed ({error}); "
            f"set {MODEL_ENV} to the model name your endpoint serves",
            field=MODEL_ENV,
        ) from None
    if len(names) != 1:
        listed = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "") if names else "none"
        raise UserInputError(
            f"no model is configured and {base_url} serves {len(names)} models ({listed}); "
            f"set {MODEL_ENV} to the one to use",
            field=MODEL_ENV,
        )
    _served_models[base_url] = names[0]
    print(f"memevo: {base_url} serves one model, '{names[0]}'; using it (set {MODEL_ENV} to choose)", file=sys.stderr)
    return names[0]


class LLMConfig(LazyModel):
    """Settings for one OpenAI-compatible chat model.

    ``base_url`` None means: take ``OPENAI_BASE_URL`` if set, else start the embedded local model.
    ``model`` left out means ``MEMEVO_MODEL`` if set, else the one model a remote endpoint serves, else
    the embedded model (``default_model``); the chosen name is stored in the config, so results always
    say which model produced them.
    The API key itself is never stored here, only the name of the environment variable holding it,
    so configs can be logged and hashed safely.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    base_url: str | None = None
    api_key_env: str = DEFAULT_KEY_ENV
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(512, gt=0)
    timeout_s: float = Field(120.0, gt=0)
    max_concurrency: int | None = Field(
        None,
        ge=1,
        description=f"Requests in flight at this endpoint; unset: ${CONCURRENCY_ENV}, else {REMOTE_CONCURRENCY} "
        f"for a remote endpoint and {EMBEDDED_CONCURRENCY} for the embedded model.",
    )
    max_retries: int = Field(5, ge=0)
    extra_base_urls: tuple[str, ...] = Field(
        (),
        description="More OpenAI-compatible /v1 URLs serving the same model: each request goes to the least busy "
        "endpoint, each with its own max_concurrency and rate limit. Cached replies stay keyed by the first URL.",
    )
    price: Price | None = Field(
        None,
        description="What this model costs, USD per 1M prompt and completion tokens; unset: litellm's model table, "
        "else free for an endpoint on this machine, else unpriced.",
    )

    @field_validator("extra_base_urls")
    @classmethod
    def _distinct_urls(cls, urls: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        """Each an http(s) URL, none listed twice nor repeating ``base_url``."""
        stripped = tuple(url.rstrip("/") for url in urls)
        for url in stripped:
            check_url(url)
        first = info.data.get("base_url")
        listed = [first.rstrip("/"), *stripped] if first else list(stripped)
        repeated = [url for url in dict.fromkeys(listed) if listed.count(url) > 1]
        if repeated:
            raise ValueError(f"lists {repeated[0]} twice (base_url counts as the first endpoint)")
        return stripped

    @model_serializer(mode="wrap")
    def _without_empty_extras(self, handler: SerializerFunctionWrapHandler) -> Any:
        """No ``extra_base_urls`` nor ``price`` in a dump when unset: configs written before these fields hash as
        they did."""
        dumped = handler(self)
        if isinstance(dumped, dict):
            if not self.extra_base_urls:
                dumped.pop("extra_base_urls", None)
            if self.price is None:
                dumped.pop("price", None)
        return dumped

    @model_validator(mode="before")
    @classmethod
    def _choose_model(cls, data: Any) -> Any:
        """Fill in ``model`` from the environment or the endpoint, seeing this config's own ``base_url``."""
        if isinstance(data, dict) and not data.get("model"):
            key_env = data.get("api_key_env") or DEFAULT_KEY_ENV
            return {**data, "model": default_model(data.get("base_url"), key_env)}
        return data

    def resolved_base_url(self) -> str | None:
        """The endpoint to call: the explicit one, else ``OPENAI_BASE_URL``, else None (local model)."""
        return self.base_url or os.environ.get("OPENAI_BASE_URL") or None

    def endpoint_urls(self) -> list[str] | None:
        """Every endpoint serving this model, the first one first; None when the embedded model must serve it."""
        first = self.resolved_base_url()
        if first is None:
            if self.extra_base_urls:
                raise UserInputError("extra endpoints need a first one: set base_url or OPENAI_BASE_URL",
                                     field="extra_base_urls")
            return None
        urls = [first.rstrip("/"), *self.extra_base_urls]
        if len(set(urls)) < len(urls):
            raise UserInputError(f"repeats the endpoint {urls[0]} (from base_url or OPENAI_BASE_URL)",
                                 field="extra_base_urls")
        return urls

    def concurrency(self, *, embedded: bool, override: int | None = None) -> int:
        """Requests in flight at this endpoint: ``override`` (a ``--concurrency`` flag), else ``$MEMEVO_CONCURRENCY``,
        else ``max_concurrency``, else the default for a remote endpoint or the embedded model."""
        if override is not None:
            return override
        return env_concurrency() or self.max_concurrency or (EMBEDDED_CONCURRENCY if embedded else REMOTE_CONCURRENCY)

    def has_price(self) -> bool:
        """Whether this model's calls get a dollar figure (see ``pricing``): its ``price``, litellm's table, or an
        endpoint on this machine (the embedded model's too), free."""
        base_url = self.resolved_base_url()
        return (self.price is not None or table_price(self.model) is not None or base_url is None
                or on_this_machine(base_url))

    def api_key(self) -> str:
        """The key read from the environment at call time; local servers accept any placeholder."""
        return os.environ.get(self.api_key_env) or "sk-no-key-needed"


def default_embedding_model(config: LLMConfig) -> str | None:
    """The embeddings model when none is configured: the embedded server's when ``config`` runs on it, else None
    (a remote endpoint's embeddings model cannot be guessed)."""
    on_embedded = config.model == LOCAL_MODEL_NAME and config.endpoint_urls() is None
    return LOCAL_EMBEDDING_MODEL if on_embedded else None


def env_concurrency() -> int | None:
    """``$MEMEVO_CONCURRENCY`` as a positive integer, None when unset; anything else is a ``UserInputError``."""
    raw = os.environ.get(CONCURRENCY_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise UserInputError(f"must be a positive whole number, got {raw!r}", field=CONCURRENCY_ENV)
    return int(raw)


def check_url(base_url: str) -> None:
    """``ValueError`` unless ``base_url`` is an http(s) URL with a host and a valid port."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {base_url!r}")
    parts.port  # reading it raises ValueError for a port out of range
