"""JSON POSTs to an OpenAI-compatible endpoint through httpx, with failures sorted into two kinds.

The gateway only ever POSTs a JSON body and reads a JSON reply, so it does not need the openai SDK's request
models: its typed call cost 8.5 ms of CPU and 42 ms per call where this transport takes 1.5 and 6, and its untyped
``post`` gained nothing over this one (``benchmarks/gateway.py``, README "The HTTP client"). httpx keeps
connections alive, reads the proxy and certificate variables users set (``HTTPS_PROXY``, ``HTTP_PROXY``,
``ALL_PROXY``, ``NO_PROXY``) and is maintained by others. Certificates are the system's (as Python's ``ssl``
finds them, so ``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` apply) or ``REQUESTS_CA_BUNDLE``'s: httpx alone would
trust certifi's list only, and miss the company certificate a user added to the system. Failures come
back as ``TransientHTTPError`` (worth retrying) or ``RefusedHTTPError`` (not), so the retry policy stays in
the gateway; error text an endpoint sent is redacted before anyone sees it.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import ssl
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

import httpx

from memevo.agents.llm.config import check_url
from memevo.agents.llm.proxies import check_proxies, set_proxy_variables
from memevo.agents.llm.sync_bridge import bridge_loop, run_sync
from memevo.agents.redact import redact
from memevo.core.errors import UserInputError

RETRYABLE_STATUS = frozenset({408, 429})
DIRECT = {"all://127.0.0.1": None, "all://localhost": None, "all://[::1]": None}
"""Loopback endpoints (the embedded model, a local server) are reached directly whatever ``NO_PROXY`` says: a
proxy elsewhere would reach its own loopback, not this machine's."""
T = TypeVar("T")
Body = bytes | Sequence[bytes]
"""A JSON request body, whole or as parts in order (a long history's body comes in chunks, see
``encoded_messages``; they are joined once here)."""
_UNSENDABLE_HEADER = re.compile(r"[^\x20-\x7e]")


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
    """POSTs JSON to ``<base_url>/<path>`` with a bearer key read from ``api_key`` when a client is made.

    An httpx client's connections belong to the event loop they were opened on, and one left on a loop that is
    gone cannot be closed. So requests made on the ``home_loop`` (the loop of an ``async with LLMHub()``, which
    closes its client before that loop ends) use a client of that loop; requests from any other loop go through
    one client on the sync bridge's loop. Each client keeps up to ``max_connections`` connections alive: the
    gateway's concurrency limit, so a burst never waits for a connection and none is reopened between calls.
    """

    def __init__(self, base_url: str, *, api_key: Callable[[], str], timeout_s: float, max_connections: int,
                 home_loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        try:
            check_url(self.base_url)
        except ValueError as error:
            raise UserInputError(str(error), field="base_url") from None
        check_proxies()  # here, before any request: a client is made at the first one
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.max_connections = max_connections
        self.home_loop = home_loop
        self._clients: dict[bool, httpx.AsyncClient] = {}  # at_home -> client, each touched on its loop only

    async def post(self, path: str, payload: Body) -> dict[str, Any]:
        """POST ``payload`` (UTF-8 JSON); the decoded JSON reply, or ``TransientHTTPError`` / ``RefusedHTTPError``."""
        body = payload if isinstance(payload, bytes) else b"".join(payload)
        if self._at_home():
            reply = await self._exchange(path, body, at_home=True)
        else:
            reply = await self._on_bridge(self._exchange(path, body, at_home=False))
        if reply.status_code >= 400:
            detail = redact(_error_detail(reply.content, reply.status_code))
            if reply.status_code >= 500 or reply.status_code in RETRYABLE_STATUS:
                raise TransientHTTPError(f"HTTP {reply.status_code}: {detail}",
                                         retry_after_s=_seconds(reply.headers.get("retry-after")))
            raise RefusedHTTPError(reply.status_code, detail)
        try:
            decoded = json.loads(reply.content)
        except ValueError as error:
            raise TransientHTTPError(redact(f"reply is not JSON: {reply.content[:200]!r}")) from error
        if not isinstance(decoded, dict):
            raise TransientHTTPError(redact(f"reply is not a JSON object: {reply.content[:200]!r}"))
        return decoded

    def _at_home(self) -> bool:
        return self.home_loop is not None and asyncio.get_running_loop() is self.home_loop

    def _client(self, *, at_home: bool) -> httpx.AsyncClient:
        client = self._clients.get(at_home)
        if client is None or client.is_closed:
            key = self.api_key()
            if _UNSENDABLE_HEADER.search(key):  # the key is never echoed: it may be half of a real one
                raise UserInputError("the API key cannot be sent: it has a line break, a control character or a "
                                     "non-ASCII letter", field="api_key_env")
            client = self._clients[at_home] = httpx.AsyncClient(
                headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
                timeout=self.timeout_s, trust_env=True, mounts=DIRECT, verify=_tls_context(self.base_url),
                limits=httpx.Limits(max_connections=self.max_connections,
                                    max_keepalive_connections=self.max_connections))
        return client

    async def _exchange(self, path: str, body: bytes, *, at_home: bool) -> httpx.Response:
        """Runs on the home loop or the bridge loop: the reply to one POST, read whole."""
        client = self._client(at_home=at_home)
        try:
            async with asyncio.timeout(self.timeout_s):  # a deadline for the whole request, as httpx's are per step
                return await client.post(f"{self.base_url}/{path}", content=body)
        except (TimeoutError, httpx.TimeoutException) as error:
            raise TransientHTTPError(f"request timed out after {self.timeout_s:g} s") from error
        except httpx.TransportError as error:  # refused, reset, closed mid-reply, unreadable reply, TLS, proxy
            raise TransientHTTPError(redact(f"connection error: {type(error).__name__}: {error}"),
                                     connection=True) from error

    @staticmethod
    async def _on_bridge(coroutine: Coroutine[Any, Any, T]) -> T:
        """Await ``coroutine`` on the bridge loop from any loop (cancelling this cancels it there)."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, bridge_loop()))

    async def _close_client(self, at_home: bool) -> None:
        client = self._clients.pop(at_home, None)
        if client is not None:
            await client.aclose()

    async def aclose(self) -> None:
        """Close the clients (the home loop's only when called on it)."""
        if self._at_home():
            await self._close_client(at_home=True)
        await self._on_bridge(self._close_client(at_home=False))

    def close(self) -> None:
        """Close the bridge's client from synchronous code (the hub's ``close``)."""
        if False in self._clients:
            run_sync(self._close_client(at_home=False))


def _tls_context(base_url: str) -> ssl.SSLContext:
    """The certificates when TLS may be spoken (an https endpoint or proxy); else a context that trusts nothing,
    which costs nothing to make (loading the system's certificates does)."""
    proxies = [value for _, value in set_proxy_variables()]
    if any(url.startswith("https:") for url in (base_url, *proxies)):
        return _certificates()
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


@functools.cache
def _certificates() -> ssl.SSLContext:
    """The certificates servers are checked against, loaded once per process (~60 ms)."""
    bundle = os.environ.get("REQUESTS_CA_BUNDLE")
    if not bundle or os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context()
    try:
        return (ssl.create_default_context(capath=bundle) if os.path.isdir(bundle)
                else ssl.create_default_context(cafile=bundle))
    except (OSError, ssl.SSLError) as error:
        raise UserInputError(f"cannot load certificates from {bundle}: {error}", field="REQUESTS_CA_BUNDLE") from None


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
