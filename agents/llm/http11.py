"""HTTP/1.1 POSTs of JSON bodies to one endpoint over kept-alive asyncio connections; replies are read by httptools.

aiohttp's general machinery (URL and header objects, cookie jar, tracing, timers, stream readers) cost
~0.4 ms of CPU per request at zero latency whatever the body size, twice what the request itself needs, and
~0.3 s of start-up to import. An OpenAI-compatible endpoint needs one request shape, so this module writes the
request head itself (its fixed lines encoded and checked once per pool) and has httptools (llhttp, the parser
under Node.js and uvicorn) read the reply, framed by ``Content-Length``, chunked, or the end of the connection;
the request asks for ``identity``, so it is never compressed. h11, used before, cost ~0.35 ms of CPU per call in
its pure-Python events, a fifth of memevo's CPU per call. Replies are read into one buffer per connection
(``asyncio.BufferedProtocol``): a plain protocol's transport allocates 256 KB for every read. A reply that
cannot be read is a ``ProtocolError``, which callers treat like a lost connection. A ``ConnectionPool``
belongs to the event loop it was first used on (asyncio transports do).
"""

from __future__ import annotations

import asyncio
import re
import ssl
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

import httptools

MAX_HEAD_BYTES = 64 * 1024
READ_BYTES = 64 * 1024
"""Size of a connection's read buffer (one ``recv_into`` per read)."""
COALESCE_BYTES = 64 * 1024
"""A first body part up to this size is sent in one write with the request's head (copying it costs less)."""
_UNSAFE_TARGET = re.compile(r"[\x00-\x20\x7f]")
_UNSAFE_HEADER = re.compile(r"[\x00\r\n]")


class ProtocolError(ConnectionError):
    """The server's reply is not HTTP/1.x this client can read (or the connection ended inside it)."""


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    """Lower-cased names; a repeated header keeps its last value."""
    body: bytes


class _Connection(asyncio.BufferedProtocol):
    """One TCP (or TLS) connection: one request at a time, the reply parsed as its bytes arrive.

    The parser calls back ``on_header``, ``on_headers_complete``, ``on_body`` and ``on_message_complete``."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.lost = False
        self._buffer = memoryview(bytearray(READ_BYTES))
        self._parser: httptools.HttpResponseParser | None = None
        self._waiter: asyncio.Future[Reply] | None = None
        self._headers: dict[str, str] = {}
        self._parts: list[bytes] = []
        self._head_bytes = 0  # read before the current reply's head ended
        self._head_done = False
        self._keep_alive = True
        self._trusted = True

    @property
    def reusable(self) -> bool:
        return (self._trusted and self._keep_alive and not self.lost and self._waiter is None
                and self.transport is not None and not self.transport.is_closing())

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._buffer

    def buffer_updated(self, nbytes: int) -> None:
        if self._waiter is None or self._waiter.done() or self._parser is None:
            self._trusted = False  # bytes nobody asked for: this connection cannot be trusted any more
            return
        try:
            self._parser.feed_data(self._buffer[:nbytes])
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as error:
            self._fail(f"unreadable reply: {error!r}")
            return
        if not self._head_done:
            self._head_bytes += nbytes
            if self._head_bytes > MAX_HEAD_BYTES:
                self._fail(f"the reply's head is longer than {MAX_HEAD_BYTES} bytes")

    def eof_received(self) -> bool:
        self._end_of_connection()
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._end_of_connection()
        self._fail(f"the server closed the connection ({exc or 'no reply'})")

    # The parser's callbacks.
    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self._head_done = True

    def on_body(self, body: bytes) -> None:
        self._parts.append(body)

    def on_message_complete(self) -> None:
        assert self._parser is not None and self._waiter is not None
        status = self._parser.get_status_code()
        if status < 200:  # an interim reply (100 Continue): the real one follows
            self._start_reply()
            return
        self._keep_alive = self._parser.should_keep_alive()
        if not self._waiter.done():
            self._waiter.set_result(Reply(status, self._headers, b"".join(self._parts)))

    async def exchange(self, head: bytes, body: Iterable[bytes]) -> Reply:
        """Send one request (``head`` ends with the blank line) and wait for its whole reply."""
        assert self.transport is not None
        self._waiter = asyncio.get_running_loop().create_future()
        self._parser = httptools.HttpResponseParser(self)
        self._start_reply()
        parts = list(body)
        # Each write is a send() on the socket, so the head goes out with the first part when that is no larger than a
        # chunk of a long body; the other parts are written as they are (not writelines, which joins them first).
        if parts and len(parts[0]) <= COALESCE_BYTES:
            parts[0] = head + parts[0]
        else:
            parts.insert(0, head)
        for part in parts:
            self.transport.write(part)
        try:
            return await self._waiter
        finally:
            self._waiter = self._parser = None
            if self.transport.get_write_buffer_size():  # replied before reading all we sent: not reusable
                self._trusted = False

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def _start_reply(self) -> None:
        self._headers, self._parts, self._head_bytes, self._head_done = {}, [], 0, False

    def _end_of_connection(self) -> None:
        """A reply framed by the end of the connection (neither a length nor chunks) is complete now."""
        if self._waiter is None or self._waiter.done() or self._parser is None or not self._head_done:
            return
        framed = "content-length" in self._headers or "chunked" in self._headers.get("transfer-encoding", "").lower()
        if not framed:
            self._keep_alive = False
            self._waiter.set_result(Reply(self._parser.get_status_code(), self._headers, b"".join(self._parts)))

    def _fail(self, failure: str) -> None:
        self._trusted = False
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(ProtocolError(failure))


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
        fields = [("Host", host_header), ("Accept-Encoding", "identity"), *headers.items()]
        for name, value in fields:
            if _UNSAFE_HEADER.search(name + value) or ":" in name or not (name + value).isascii():
                raise ValueError(f"HTTP header {name!r} has a character a header cannot hold")
        self._fields = "".join(f"{name}: {value}\r\n" for name, value in fields).encode("ascii")
        self._heads: dict[str, bytes] = {}  # path -> the head's text up to its Content-Length
        self._idle: list[_Connection] = []
        self._ssl: ssl.SSLContext | None = None
        self.closed = False

    async def post(self, path: str, body: list[bytes], size: int) -> Reply:
        """POST ``body`` (its parts sent in order, ``size`` bytes in all) to ``<base path>/<path>``."""
        head = self._heads.get(path)
        if head is None:
            target = f"{self.base_path}/{path}"
            if _UNSAFE_TARGET.search(target):
                raise ValueError(f"HTTP request target {target!r} has a space or a control character")
            head = self._heads[path] = b"POST %s HTTP/1.1\r\n%sContent-Length: " % (target.encode(), self._fields)
        connection = await self._connection()
        try:
            reply = await connection.exchange(b"%s%d\r\n\r\n" % (head, size), body)
        except BaseException:
            connection.abort()  # a half-read reply or a cancelled wait leaves the connection unusable
            raise
        if connection.reusable and not self.closed:
            self._idle.append(connection)
        else:
            connection.close()
        return reply

    async def open(self, count: int) -> None:
        """Have ``count`` idle connections, opened together: requests that start at once then go out at once (each
        one opening its own waits for the event loop to finish what every other request does first). A connection
        that cannot be opened is left out: the request that needs it opens one and reports why it cannot."""
        async def one() -> None:
            connection = await self._open()
            if self.closed:
                connection.close()
            else:
                self._idle.append(connection)  # at once: a wait cut short keeps what is open

        missing = count - len(self._idle)
        if missing <= 0 or self.closed:
            return
        for failure in await asyncio.gather(*(one() for _ in range(missing)), return_exceptions=True):
            if failure is not None and not isinstance(failure, OSError):
                raise failure

    async def _connection(self) -> _Connection:
        while self._idle:
            connection = self._idle.pop()
            if connection.reusable:
                return connection
            connection.close()
        return await self._open()

    async def _open(self) -> _Connection:
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
