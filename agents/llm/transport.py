"""A thin JSON-over-HTTP client for OpenAI-compatible endpoints.

The gateway only ever POSTs a JSON body and reads a JSON reply, so it does not need the openai SDK's
request models: their per-call transform of every message cost several milliseconds of CPU per call
(measured: SDK 4.6-6.1 ms, httpx 1.6-2.6 ms, aiohttp 0.5-0.7 ms per sequential call at zero latency),
enough to make a run CPU-bound with a few calls in flight. Failures come back as two kinds only:
``TransientHTTPError`` (worth retrying) and ``RefusedHTTPError`` (not), so the retry policy stays in
the gateway.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine, Iterator, Sequence
from typing import Any, TypeVar

import aiohttp
import aiohttp.payload
from aiohttp.abc import AbstractStreamWriter

from memevo.agents.llm.sync_bridge import bridge_loop, run_sync

RETRYABLE_STATUS = frozenset({408, 429})
CHUNK_BYTES = 64 * 1024
T = TypeVar("T")
Body = bytes | Sequence[bytes]
"""A JSON request body, whole or as parts to send in order."""


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
    """POSTs JSON to ``<base_url>/<path>`` with a bearer key read from ``api_key`` when a session opens.

    An aiohttp session belongs to the loop it was made on, and one left on a loop that is gone cannot be
    closed (aiohttp then reports it unclosed at exit). So requests made on the ``home_loop`` (the loop of an
    ``async with LLMHub()``, which closes its session before that loop ends) use a session of that loop;
    requests from any other loop go through one session on the sync bridge's loop. The bridge costs two
    thread hand-offs per request (measured: about 0.35 ms more CPU per call at 16 in flight), so a run's own
    loop does not take it.
    """

    def __init__(self, base_url: str, *, api_key: Callable[[], str], timeout_s: float,
                 home_loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.home_loop = home_loop
        self._sessions: dict[bool, aiohttp.ClientSession] = {}  # at_home -> session, each touched on its loop only

    async def post(self, path: str, payload: Body) -> dict[str, Any]:
        """POST ``payload`` (UTF-8 JSON); the decoded JSON reply, or ``TransientHTTPError`` / ``RefusedHTTPError``."""
        url = f"{self.base_url}/{path}"
        if self._at_home():
            status, body, retry_after = await self._exchange(url, payload, at_home=True)
        else:
            status, body, retry_after = await self._on_bridge(self._exchange(url, payload, at_home=False))
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

    def _at_home(self) -> bool:
        return self.home_loop is not None and asyncio.get_running_loop() is self.home_loop

    async def _exchange(self, url: str, body: Body, *, at_home: bool) -> tuple[int, bytes, str | None]:
        """Runs on the home loop or the bridge loop: status, body and Retry-After of one POST."""
        session = self._sessions.get(at_home)
        if session is None or session.closed:
            session = self._sessions[at_home] = aiohttp.ClientSession(
                headers={"Authorization": f"Bearer {self.api_key()}", "Content-Type": "application/json"},
                timeout=aiohttp.ClientTimeout(total=self.timeout_s),
                connector=aiohttp.TCPConnector(limit=0),  # the gateway's limiter bounds what is in flight
            )
        try:
            data = body if isinstance(body, bytes) else _PartsPayload(body)
            async with session.post(url, data=data) as response:
                return response.status, await response.read(), response.headers.get("retry-after")
        except TimeoutError as error:
            raise TransientHTTPError(f"request timed out after {self.timeout_s:g} s") from error
        except aiohttp.ClientError as error:
            raise TransientHTTPError(f"connection error: {type(error).__name__}: {error}", connection=True) from error

    @staticmethod
    async def _on_bridge(coroutine: Coroutine[Any, Any, T]) -> T:
        """Await ``coroutine`` on the bridge loop from any loop (cancelling this cancels it there)."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, bridge_loop()))

    async def _close_session(self, at_home: bool) -> None:
        session = self._sessions.pop(at_home, None)
        if session is not None:
            await session.close()

    async def aclose(self) -> None:
        """Close the sessions (the home loop's only when called on it)."""
        if self._at_home():
            await self._close_session(at_home=True)
        await self._on_bridge(self._close_session(at_home=False))

    def close(self) -> None:
        """Close the bridge's session from synchronous code (the hub's ``close``)."""
        if False in self._sessions:
            run_sync(self._close_session(at_home=False))


class _PartsPayload(aiohttp.payload.Payload):
    """A body given as parts, written in chunks of about ``CHUNK_BYTES``: small parts are joined, a large one
    goes out as it is. Joining a native agent's history (hundreds of KB) into one buffer per call, as
    aiohttp then does again with the headers, was the largest CPU cost per call, mostly in page faults."""

    def __init__(self, parts: Sequence[bytes]) -> None:
        super().__init__(parts, content_type="application/json")
        self._size = sum(map(len, parts))

    def decode(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        return b"".join(self._value).decode(encoding, errors)

    async def write(self, writer: AbstractStreamWriter) -> None:
        for chunk in _chunks(self._value):
            await writer.write(chunk)


def _chunks(parts: Sequence[bytes]) -> Iterator[bytes]:
    """``parts`` regrouped in order: runs of small parts joined up to ``CHUNK_BYTES``, large parts alone."""
    run: list[bytes] = []
    size = 0
    for part in parts:
        if run and size + len(part) > CHUNK_BYTES:
            yield b"".join(run)
            run, size = [], 0
        run.append(part)
        size += len(part)
    if run:
        yield b"".join(run)


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
