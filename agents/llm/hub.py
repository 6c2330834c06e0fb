"""One place per run that owns the LLM plumbing: gateways, the shared cache and accounting, the local server.

Commands create one hub, hand ``hub.client(config)`` to whatever needs an LLM and close the hub at
the end, which also stops the embedded local model server if the hub had to start it.

Gateways are keyed by the whole config (so two roles on the same model with different temperatures
keep their own defaults), while the concurrency limit is shared per resolved endpoint: every
config on that endpoint gets at most its own concurrency in flight, all loops and threads together.
A config with ``extra_base_urls`` gets that limit, and the rate bucket, on each of its endpoints.
A hub made with ``concurrency`` (the ``--concurrency`` flag) uses that for every endpoint; otherwise
``LLMConfig.concurrency`` decides (``$MEMEVO_CONCURRENCY``, the config, then a default that is lower
for the embedded model).
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from memevo.agents.llm.accounting import Accounting
from memevo.agents.llm.cache import ResponseCache
from memevo.agents.llm.config import LOCAL_MODEL_NAME, LLMConfig
from memevo.agents.llm.gateway import LLMGateway
from memevo.agents.llm.limiter import ConcurrencyLimit, shared_rate_from_env
from memevo.agents.llm.protocol import Role
from memevo.core.errors import UserInputError

if TYPE_CHECKING:
    from memevo.agents.llm.dspy_lm import GatewayLM
    from memevo.agents.llm.local_server import LocalModelServer


def default_cache_dir() -> Path:
    """``$MEMEVO_CACHE_DIR`` if set, else ``~/.cache/memevo/llm``."""
    configured = os.environ.get("MEMEVO_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "memevo" / "llm"


class LLMHub:
    """Context manager (``with`` or ``async with``) handing out gateways that share cache and accounting."""

    def __init__(
        self,
        cache_dir: Path | None = None,
        use_cache: bool = True,
        concurrency: int | None = None,
        accounting: Accounting | None = None,
    ) -> None:
        """``accounting`` replaces the in-memory one, e.g. a ledger that persists every call of the run."""
        if concurrency is not None and concurrency < 1:
            raise UserInputError(f"must be at least 1, got {concurrency}", field="--concurrency")
        self.cache_dir = cache_dir or default_cache_dir()
        self.use_cache = use_cache
        self.concurrency = concurrency
        self.accounting = accounting if accounting is not None else Accounting()
        self._cache: ResponseCache | None = None
        self._server: LocalModelServer | None = None
        self._gateways: dict[tuple[str, LLMConfig], LLMGateway] = {}
        self._limits: dict[str, ConcurrencyLimit] = {}
        self._lock = threading.Lock()
        self._home_loop: asyncio.AbstractEventLoop | None = None  # the loop of ``async with``: its gateways' own

    def client(self, config: LLMConfig) -> LLMGateway:
        """The gateway for ``config``, starting the embedded local model if no endpoint is configured."""
        with self._lock:
            base_url, *more_urls = self._endpoints_for(config)
            gateway = self._gateways.get((base_url, config))
            if gateway is None:
                embedded = self._server if self._server is not None and base_url == self._server.url else None
                wanted = config.concurrency(embedded=embedded is not None, override=self.concurrency)
                gateway = LLMGateway(
                    config,
                    base_url=base_url,
                    cache=self._response_cache(),
                    accounting=self.accounting,
                    limit=self._limit_of(base_url, wanted),
                    endpoint_identity=embedded.identity if embedded is not None else None,
                    health_check=embedded.health_check if embedded is not None else None,
                    home_loop=self._home_loop,
                    likelihood_available=embedded is not None,
                    more_endpoints=[(url, self._limit_of(url, wanted)) for url in more_urls],
                )
                self._gateways[(base_url, config)] = gateway
            return gateway

    def endpoint_counts(self) -> dict[str, tuple[int, int]]:
        """Requests each endpoint answered and failed so far (every gateway of this hub together)."""
        counts: dict[str, tuple[int, int]] = {}
        for gateway in self._gateways.values():
            for route in gateway.routes:
                served, failed = counts.get(route.url, (0, 0))
                counts[route.url] = (served + route.served, failed + route.failed)
        return counts

    def _limit_of(self, url: str, wanted: int) -> ConcurrencyLimit:
        """The limit every gateway on ``url`` shares, with its rate bucket; the tightest setting on it wins."""
        limit = self._limits.get(url) or self._limits.setdefault(
            url, ConcurrencyLimit(wanted, shared_rate_from_env(url, self.cache_dir)))
        limit.lower_to(wanted)
        return limit

    def dspy_lm(self, config: LLMConfig, role: Role = "proposer") -> GatewayLM:
        """A ``dspy.LM`` (engine-based, so no deprecation warning) whose calls go through this hub's gateway."""
        from memevo.agents.llm.dspy_lm import GatewayLM  # dspy is heavy: only runs that propose load it

        return GatewayLM(self.client(config), role=role)

    @property
    def local_server_url(self) -> str | None:
        return self._server.url if self._server is not None else None

    def _endpoints_for(self, config: LLMConfig) -> list[str]:
        """The URLs serving ``config``'s model, the first one first: the embedded server's when none is set."""
        urls = config.endpoint_urls()
        if urls is not None:
            return urls
        if config.model != LOCAL_MODEL_NAME:
            raise UserInputError(
                f"model '{config.model}' needs an endpoint: set base_url or OPENAI_BASE_URL "
                f"(only '{LOCAL_MODEL_NAME}' runs on the embedded local server)",
                field="model",
            )
        if self._server is None:
            from memevo.agents.llm.local_server import LocalModelServer  # only runs without an endpoint load it

            self._server = LocalModelServer().start()
        return [self._server.url]

    def _response_cache(self) -> ResponseCache | None:
        if self.use_cache and self._cache is None:
            self._cache = ResponseCache(self.cache_dir)
        return self._cache

    def close(self) -> None:
        """Stop the local server if this hub started it, and close the cache."""
        with self._lock:
            for gateway in self._gateways.values():
                gateway.close()
            self._gateways.clear()
            if self._server is not None:
                self._server.stop()
                self._server = None
            if self._cache is not None:
                self._cache.close()
                self._cache = None

    async def aclose(self) -> None:
        """Also close the HTTP sessions opened on the running loop, then ``close()``."""
        for gateway in list(self._gateways.values()):
            await gateway.aclose()
        self.close()

    def __enter__(self) -> LLMHub:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> LLMHub:
        self._home_loop = asyncio.get_running_loop()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
        self._home_loop = None
