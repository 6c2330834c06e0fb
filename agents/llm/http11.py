"""A small HTTP/1.1 client for one job: POST a JSON body to one endpoint over kept-alive connections.

aiohttp's general machinery (URL and header objects, cookie jar, tracing, timers, stream readers) cost
~0.4 ms of CPU per request at zero latency whatever the body size, twice what the request itself needs
(measured with 16 requests in flight: aiohttp 0.43 ms per 2 KB request, this client 0.23 ms). What an
OpenAI-compatible endpoint needs is little: a request line with ``Content-Length``, and a reply framed by
``Content-Length``, ``Transfer-Encoding: chunked`` or the end of the connection, never compressed (the request
asks for ``identity``). Anything else the server sends is a ``ProtocolError``, which callers treat like a lost
connection. A ``ConnectionPool`` belongs to the event loop it was first used on (asyncio transports do).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

MAX_HEAD_BYTES = 64 * 1024


class ProtocolError(ConnectionError):
    """The server's reply is not HTTP/1.x this client can read (or the connection ended inside it)."""


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    """Lower-cased names; a repeated header keeps its last value."""
    body: bytes


class _Connection(asyncio.Protocol):
    """One TCP (or TLS) connection: one request at a time, the reply parsed as its bytes arrive."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.lost = False
        self._buffer = bytearray()
        self._waiter: asyncio.Future[Reply] | None = None
        self._head: tuple[int, dict[str, str]] | None = None
        self._keep_alive = True

    @property
    def reusable(self) -> bool:
        return not self.lost and self._keep_alive and self.transport is not None and not self.transport.is_closing()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        self._advance(eof=False)

    def eof_received(self) -> bool:
        self._advance(eof=True)
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self._waiter is not None and not self._waiter.done():
            self._advance(eof=True)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(ProtocolError(f"the server closed the connection ({exc or 'no reply'})"))

    async def exchange(self, head: bytes, body: Iterable[bytes]) -> Reply:
        """Send one request and wait for its whole reply."""
        assert self.transport is not None
        self._waiter = asyncio.get_running_loop().create_future()
        self._head, self._keep_alive = None, True
        self.transport.write(head)
        for chunk in body:
            self.transport.write(chunk)
        try:
            return await self._waiter
        finally:
            self._waiter = None
            if self.transport.get_write_buffer_size():  # replied before reading all we sent: not reusable
                self._keep_alive = False

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def _advance(self, *, eof: bool) -> None:
        """Parse what has arrived; settle the waiter once the reply is complete (or unreadable)."""
        waiter = self._waiter
        if waiter is None or waiter.done():
            if self._buffer or eof:  # bytes nobody asked for: this connection cannot be trusted any more
                self._keep_alive = False
            return
        try:
            reply = self._parse(eof)
        except ProtocolError as error:
            self._keep_alive = False
            waiter.set_exception(error)
            return
        if reply is not None:
            waiter.set_result(reply)

    def _parse(self, eof: bool) -> Reply | None:
        while self._head is None:
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buffer) > MAX_HEAD_BYTES or eof:
                    raise ProtocolError("the reply ended before its headers" if eof else "reply headers too long")
                return None
            head = self._buffer[:end].decode("latin-1")
            del self._buffer[: end + 4]
            status, headers = _read_head(head)
            if 100 <= status < 200:  # an interim reply (100 Continue): the real one follows
                continue
            self._head = (status, headers)
            if headers.get("connection", "").lower() == "close" or head.startswith("HTTP/1.0"):
                self._keep_alive = False
        status, headers = self._head
        body = self._body(headers, eof)
        if body is None:
            return None
        self._head = None
        if self._buffer:  # more than one reply's worth: this connection cannot be trusted any more
            self._keep_alive = False
        return Reply(status, headers, body)

    def _body(self, headers: dict[str, str], eof: bool) -> bytes | None:
        if "chunked" in headers.get("transfer-encoding", "").lower():
            return self._chunked_body(eof)
        length = headers.get("content-length")
        if length is not None:
            try:
                size = int(length)
            except ValueError as error:
                raise ProtocolError(f"bad Content-Length {length!r}") from error
            if len(self._buffer) < size:
                if eof:
                    raise ProtocolError(f"the reply ended after {len(self._buffer)} of {size} bytes")
                return None
            body = bytes(self._buffer[:size])
            del self._buffer[:size]
            return body
        if not eof:  # framed by the end of the connection
            return None
        self._keep_alive = False
        body = bytes(self._buffer)
        self._buffer.clear()
        return body

    def _chunked_body(self, eof: bool) -> bytes | None:
        """The decoded body once the last chunk (and any trailer) is in; the buffer is left as it was until then."""
        parts = []
        position = 0
        while True:
            line_end = self._buffer.find(b"\r\n", position)
            if line_end < 0:
                break
            size_text = bytes(self._buffer[position:line_end]).split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError as error:
                raise ProtocolError(f"bad chunk size {size_text!r}") from error
            if size == 0:  # the last chunk: then optional trailer lines and an empty line
                end = self._buffer.find(b"\r\n\r\n", line_end)
                if end < 0:
                    break
                del self._buffer[: end + 4]
                return b"".join(parts)
            start = line_end + 2
            if len(self._buffer) < start + size + 2:
                break
            parts.append(bytes(self._buffer[start: start + size]))
            position = start + size + 2
        if eof:
            raise ProtocolError("the reply ended inside its chunked body")
        return None


def _read_head(head: str) -> tuple[int, dict[str, str]]:
    lines = head.split("\r\n")
    version, _, rest = lines[0].partition(" ")
    if not version.startswith("HTTP/1."):
        raise ProtocolError(f"not an HTTP/1.x reply: {lines[0][:80]!r}")
    try:
        status = int(rest[:3])
    except ValueError as error:
        raise ProtocolError(f"bad status line {lines[0][:80]!r}") from error
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers


def check_url(base_url: str) -> SplitResult:
    """``base_url`` split, or ``ValueError`` when it is not an http(s) URL with a host (and a valid port)."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {base_url!r}")
    parts.port  # reading it raises ValueError for a port out of range
    return parts


class ConnectionPool:
    """Kept-alive connections to the server of ``base_url``, used one request at a time each."""

    def __init__(self, base_url: str, headers: dict[str, str]) -> None:
        parts = check_url(base_url)
        self.host = parts.hostname or ""
        self.tls = parts.scheme == "https"
        self.port = parts.port or (443 if self.tls else 80)
        self.base_path = parts.path.rstrip("/")
        default_port = self.port == (443 if self.tls else 80)
        host_header = self.host if default_port else f"{self.host}:{self.port}"
        if ":" in self.host:  # an IPv6 literal
            host_header = f"[{self.host}]" if default_port else f"[{self.host}]:{self.port}"
        fixed = {"Host": host_header, "Accept-Encoding": "identity", **headers}
        self._fixed_headers = "".join(f"{name}: {value}\r\n" for name, value in fixed.items())
        self._idle: list[_Connection] = []
        self._ssl: ssl.SSLContext | None = None
        self.closed = False

    async def post(self, path: str, body: list[bytes], size: int) -> Reply:
        """POST ``body`` (its parts sent in order, ``size`` bytes in all) to ``<base path>/<path>``."""
        head = (f"POST {self.base_path}/{path} HTTP/1.1\r\n{self._fixed_headers}"
                f"Content-Length: {size}\r\n\r\n").encode("latin-1")
        connection = await self._connection()
        try:
            reply = await connection.exchange(head, body)
        except BaseException:
            connection.abort()  # a half-read reply or a cancelled wait leaves the connection unusable
            raise
        if connection.reusable and not self.closed:
            self._idle.append(connection)
        else:
            connection.close()
        return reply

    async def _connection(self) -> _Connection:
        while self._idle:
            connection = self._idle.pop()
            if connection.reusable:
                return connection
            connection.close()
        loop = asyncio.get_running_loop()
        context = self._ssl_context() if self.tls else None
        _, connection = await loop.create_connection(_Connection, self.host, self.port, ssl=context)
        return connection

    def _ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:  # made on first use: loading the system's certificates costs ~60 ms
            self._ssl = ssl.create_default_context()
        return self._ssl

    def close(self) -> None:
        """Close the idle connections; connections still in use close when their request ends."""
        self.closed = True
        while self._idle:
            self._idle.pop().close()
