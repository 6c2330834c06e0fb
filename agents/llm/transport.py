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
import threading
import weakref
from collections.abc import Callable
from typing import Any

import aiohttp

RETRYABLE_STATUS = frozenset({408, 429})


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
    """POSTs JSON to ``<base_url>/<path>`` with a bearer key read from ``api_key`` when a loop's session opens."""

    def __init__(self, base_url: str, *, api_key: Callable[[], str], timeout_s: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout_s = timeout_s
        self._sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aiohttp.ClientSession] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    async def post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        """The decoded JSON reply, or ``TransientHTTPError`` / ``RefusedHTTPError``."""
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        try:
            async with self._session().post(f"{self.base_url}/{path}", data=data) as response:
                body = await response.read()
                status = response.status
                retry_after = response.headers.get("retry-after")
        except TimeoutError as error:
            raise TransientHTTPError(f"request timed out after {self.timeout_s:g} s ({type(error).__name__})") from error
        except aiohttp.ClientError as error:
            raise TransientHTTPError(f"connection error: {type(error).__name__}: {error}", connection=True) from error
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

    def _session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        with self._lock:
            session = self._sessions.get(loop)
            if session is None or session.closed:
                session = aiohttp.ClientSession(
                    headers={"Authorization": f"Bearer {self.api_key()}", "Content-Type": "application/json"},
                    timeout=aiohttp.ClientTimeout(total=self.timeout_s),
                    connector=aiohttp.TCPConnector(limit=0),  # the gateway's limiter bounds what is in flight
                )
                self._sessions[loop] = session
            return session

    async def aclose(self) -> None:
        """Close the running loop's session; sessions of other loops go with their loop."""
        with self._lock:
            session = self._sessions.pop(asyncio.get_running_loop(), None)
        if session is not None:
            await session.close()


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
