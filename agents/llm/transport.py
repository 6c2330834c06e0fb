"""A thin JSON-over-HTTP client for OpenAI-compatible endpoints.

The gateway only ever POSTs a JSON body and reads a JSON reply, so it does not need the openai SDK's
request models: their per-call transform of every message cost several milliseconds of CPU per call
(measured: SDK 4.6-6.1 ms, httpx 1.6-2.6 ms, aiohttp 0.5-0.7 ms per sequential call at zero latency),
enough to make a run CPU-bound with a few calls in flight; ``http11`` (kept-alive asyncio connections, the
reply read by httptools) needs ~0.12-0.18 ms. Failures come back as two kinds only:
``TransientHTTPError`` (worth retrying) and ``RefusedHTTPError`` (not), so the retry policy stays in
the gateway.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

from memevo.agents.errors import UserInputError
from memevo.agents.llm.http11 import ConnectionPool, check_url
from memevo.agents.llm.sync_bridge import bridge_loop, run_sync
from memevo.agents.redact import redact

RETRYABLE_STATUS = frozenset({408, 429})
T = TypeVar("T")
Body = bytes | Sequence[bytes]
"""A JSON request body, whole or as parts to send in order (each one write: a long history's body comes in chunks
of about 64 KB, see ``encoded_messages``)."""


class TransientHTTPError(Exception):
    """A timeout, a lost connection, HTTP 408/429 or 5xx: the same request may succeed later."""

    def __init__(self, failure: str, *, retry_after_s: float | None = None, connection: bool = False) -> None:
        super().__init__(failure)
        self.failure = failure
        self.retry_after_s = retry_after_s
        self.connection = connection  # no HTTP answer at all: the server may be gone


class RefusedHTTPError(Exception):
    """Any other HTTP error status: the endpoint will refuse the same request again."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"HTTP {status}: {detail}")
        self.status = status
        self.detail = detail


class JSONTransport:
    """POSTs JSON to ``<base_url>/<path>`` with a bearer key read from ``api_key`` when a pool opens.

    A connection belongs to the loop it was opened on, and one left on a loop that is gone cannot be closed.
    So requests made on the ``home_loop`` (the loop of an ``async with LLMHub()``, which closes its pool before
    that loop ends) use a pool of that loop; requests from any other loop go through one pool on the sync
    bridge's loop. The bridge costs two
    thread hand-offs per request (measured: about 0.35 ms more CPU per call at 16 in flight), so a run's own
    loop does not take it.
    """

    def __init__(self, base_url: str, *, api_key: Callable[[], str], timeout_s: float,
                 home_loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        try:
            check_url(self.base_url)
        except ValueError as error:
            raise UserInputError(str(error), field="base_url") from None
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.home_loop = home_loop
        self._pools: dict[bool, ConnectionPool] = {}  # at_home -> pool, each touched on its loop only

    async def post(self, path: str, payload: Body) -> dict[str, Any]:
        """POST ``payload`` (UTF-8 JSON); the decoded JSON reply, or ``TransientHTTPError`` / ``RefusedHTTPError``."""
        if self._at_home():
            status, body, retry_after = await self._exchange(path, payload, at_home=True)
        else:
            status, body, retry_after = await self._on_bridge(self._exchange(path, payload, at_home=False))
        if status >= 400:
            detail = redact(_error_detail(body, status))
            if status >= 500 or status in RETRYABLE_STATUS:
                raise TransientHTTPError(f"HTTP {status}: {detail}", retry_after_s=_seconds(retry_after))
            raise RefusedHTTPError(status, detail)
        try:
            decoded = json.loads(body)
        except ValueError as error:
            raise TransientHTTPError(redact(f"reply is not JSON: {body[:200]!r}")) from error
        if not isinstance(decoded, dict):
            raise TransientHTTPError(redact(f"reply is not a JSON object: {body[:200]!r}"))
        return decoded

    def _at_home(self) -> bool:
        return self.home_loop is not None and asyncio.get_running_loop() is self.home_loop

    async def open_connections(self, count: int) -> None:
        """Open up to ``count`` connections ahead of the requests, waiting at most the request timeout (on the home
        loop only; elsewhere they open as needed). What cannot be opened in time the requests open, or report."""
        if not self._at_home():
            return
        try:
            async with asyncio.timeout(self.timeout_s):
                await self._pool(at_home=True).open(count)
        except TimeoutError:
            pass

    def _pool(self, *, at_home: bool) -> ConnectionPool:
        pool = self._pools.get(at_home)
        if pool is None or pool.closed:
            try:
                pool = self._pools[at_home] = ConnectionPool(
                    self.base_url, {"Authorization": f"Bearer {self.api_key()}", "Content-Type": "application/json"})
            except ValueError as error:  # the URL was checked already: the key has a line break or a non-ASCII letter
                raise UserInputError(f"the API key cannot be sent: {error}", field="api_key_env") from None
        return pool

    async def _exchange(self, path: str, body: Body, *, at_home: bool) -> tuple[int, bytes, str | None]:
        """Runs on the home loop or the bridge loop: status, body and Retry-After of one POST."""
        pool = self._pool(at_home=at_home)
        parts = [body] if isinstance(body, bytes) else list(body)
        try:
            async with asyncio.timeout(self.timeout_s):
                reply = await pool.post(path, parts, sum(map(len, parts)))
        except TimeoutError as error:
            raise TransientHTTPError(f"request timed out after {self.timeout_s:g} s") from error
        except OSError as error:  # refused, reset, closed mid-reply, unreadable reply, TLS failure
            raise TransientHTTPError(f"connection error: {type(error).__name__}: {error}", connection=True) from error
        return reply.status, reply.body, reply.headers.get("retry-after")

    @staticmethod
    async def _on_bridge(coroutine: Coroutine[Any, Any, T]) -> T:
        """Await ``coroutine`` on the bridge loop from any loop (cancelling this cancels it there)."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, bridge_loop()))

    async def _close_pool(self, at_home: bool) -> None:
        pool = self._pools.pop(at_home, None)
        if pool is not None:
            pool.close()

    async def aclose(self) -> None:
        """Close the pools (the home loop's only when called on it)."""
        if self._at_home():
            await self._close_pool(at_home=True)
        await self._on_bridge(self._close_pool(at_home=False))

    def close(self) -> None:
        """Close the bridge's pool from synchronous code (the hub's ``close``)."""
        if False in self._pools:
            run_sync(self._close_pool(at_home=False))


def _error_detail(body: bytes, status: int) -> str:
    """The server's own error message when it sent one (OpenAI's ``{"error": {"message": ...}}``), else the body."""
    try:
        decoded = json.loads(body)
    except ValueError:
        decoded = None
    if isinstance(decoded, dict):
        error = decoded.get("error", decoded)
        message = error.get("message") if isinstance(error, dict) else error
        if isinstance(message, str) and message:
            return message
    text = body.decode("utf-8", "replace").strip()
    return text[:500] or f"status {status}"


def _seconds(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
