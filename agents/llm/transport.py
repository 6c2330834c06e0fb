"""A thin JSON-over-HTTP client for OpenAI-compatible endpoints.

The gateway only ever POSTs a JSON body and reads a JSON reply, so it does not need the openai SDK's
request models: their per-call transform of every message cost several milliseconds of CPU per call
(measured: SDK 4.6-6.1 ms, httpx 1.6-2.6 ms, aiohttp 0.5-0.7 ms per sequential call at zero latency),
enough to make a run CPU-bound with a few calls in flight. Failures come back as two kinds only:
``TransientHTTPError`` (worth retrying) and ``RefusedHTTPError`` (not), so the retry policy stays in
the gateway. aiohttp sessions belong to one event loop, so each loop gets its own.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import aiohttp

from memevo.agents.llm.sync_bridge import bridge_loop, run_sync

RETRYABLE_STATUS = frozenset({408, 429})
T = TypeVar("T")


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
    """POSTs JSON to ``<base_url>/<path>`` with a bearer key read from ``api_key`` when the session opens.

    The one aiohttp session lives on the sync bridge's loop, whichever loop the caller runs on: an aiohttp
    session belongs to the loop it was made on, and one per caller loop could not be closed once that
    loop was gone (aiohttp then reports it unclosed at exit).
    """

    def __init__(self, base_url: str, *, api_key: Callable[[], str], timeout_s: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout_s = timeout_s
        self._session: aiohttp.ClientSession | None = None  # touched only on the bridge loop

    async def post(self, path: str, payload: bytes) -> dict[str, Any]:
        """POST ``payload`` (UTF-8 JSON); the decoded JSON reply, or ``TransientHTTPError`` / ``RefusedHTTPError``."""
        status, body, retry_after = await self._on_bridge(self._exchange(f"{self.base_url}/{path}", payload))
        if status >= 400:
            detail = _error_detail(body, status)
            if status >= 500 or status in RETRYABLE_STATUS:
                raise TransientHTTPError(f"HTTP {status}: {detail}", retry_after_s=_seconds(retry_after))
            raise RefusedHTTPError(status, detail)
        try:
            decoded = json.loads(body)
        except ValueError as error:
            raise TransientHTTPError(f"reply is not JSON: {body[:200]!r}") from error
        if not isinstance(decoded, dict):
            raise TransientHTTPError(f"reply is not a JSON object: {body[:200]!r}")
        return decoded

    async def _exchange(self, url: str, data: bytes) -> tuple[int, bytes, str | None]:
        """Runs on the bridge loop: status, body and Retry-After of one POST."""
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                headers={"Authorization": f"Bearer {self.api_key()}", "Content-Type": "application/json"},
                timeout=aiohttp.ClientTimeout(total=self.timeout_s),
                connector=aiohttp.TCPConnector(limit=0),  # the gateway's limiter bounds what is in flight
            )
        try:
            async with self._session.post(url, data=data) as response:
                return response.status, await response.read(), response.headers.get("retry-after")
        except TimeoutError as error:
            raise TransientHTTPError(f"request timed out after {self.timeout_s:g} s") from error
        except aiohttp.ClientError as error:
            raise TransientHTTPError(f"connection error: {type(error).__name__}: {error}", connection=True) from error

    @staticmethod
    async def _on_bridge(coroutine: Coroutine[Any, Any, T]) -> T:
        """Await ``coroutine`` on the bridge loop from any loop (cancelling this cancels it there)."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, bridge_loop()))

    async def _close_session(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def aclose(self) -> None:
        await self._on_bridge(self._close_session())

    def close(self) -> None:
        """Close the session from synchronous code (the hub's ``close``)."""
        if self._session is not None:
            run_sync(self._close_session())


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
