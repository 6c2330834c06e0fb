"""HTTP/1.1 POSTs of JSON bodies to one endpoint over kept-alive asyncio connections; the protocol is h11's.

aiohttp's general machinery (URL and header objects, cookie jar, tracing, timers, stream readers) cost
~0.4 ms of CPU per request at zero latency whatever the body size, twice what the request itself needs, and
~0.3 s of start-up to import. An OpenAI-compatible endpoint needs one request shape: h11 (the sans-I/O
protocol library under httpcore) writes the request and reads the reply (framed by ``Content-Length``,
chunked, or the end of the connection; the request asks for ``identity``, so never compressed); this module
only keeps the connections. A reply h11 cannot read is a ``ProtocolError``, which callers treat like a lost
connection. A ``ConnectionPool`` belongs to the event loop it was first used on (asyncio transports do).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

import h11

MAX_HEAD_BYTES = 64 * 1024
COALESCE_BYTES = 64 * 1024
"""A first body part up to this size is sent in one write with the request's head (copying it costs less)."""


class ProtocolError(ConnectionError):
    """The server's reply is not HTTP/1.x this client can read (or the connection ended inside it)."""


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    """Lower-cased names; a repeated header keeps its last value."""
    body: bytes


_END = h11.EndOfMessage()


class _Parts:
    """A request body as parts to write in order, standing for their bytes in one ``h11.Data`` event."""

    def __init__(self, parts: Iterable[bytes]) -> None:
        self.parts = list(parts)
        self._size = sum(map(len, self.parts))

    def __len__(self) -> int:
        return self._size


class _Connection(asyncio.Protocol):
    """One TCP (or TLS) connection: one request at a time, the reply read by h11 as its bytes arrive."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.lost = False
        self._protocol = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD_BYTES)
        self._waiter: asyncio.Future[Reply] | None = None
        self._reply: tuple[int, dict[str, str]] | None = None
        self._parts: list[bytes] = []
        self._trusted = True

    @property
    def reusable(self) -> bool:
        return (self._trusted and not self.lost and self.transport is not None and not self.transport.is_closing()
                and self._protocol.our_state is h11.IDLE and self._protocol.their_state is h11.IDLE)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self._waiter is None or self._waiter.done():
            self._trusted = False  # bytes nobody asked for: this connection cannot be trusted any more
            return
        self._protocol.receive_data(data)
        self._advance()

    def eof_received(self) -> bool:
        if self._waiter is not None and not self._waiter.done():
            self._protocol.receive_data(b"")
            self._advance()
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.eof_received()  # a reply framed by the end of the connection is complete now
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(ProtocolError(f"the server closed the connection ({exc or 'no reply'})"))

    async def exchange(self, target: str, headers: list[tuple[str, str]], body: Iterable[bytes]) -> Reply:
        """Send one request and wait for its whole reply."""
        assert self.transport is not None
        self._waiter = asyncio.get_running_loop().create_future()
        self._reply, self._parts = None, []
        head = self._protocol.send(h11.Request(method="POST", target=target, headers=headers))
        # One Data event for the whole body (h11's sendfile support: all it needs of the data is its length; each
        # event cost ~25 us, and a long history's body has a dozen chunks); the parts are written as they are.
        whole = _Parts(body)
        parts = [part for piece in self._protocol.send_with_data_passthrough(h11.Data(data=whole))  # type: ignore[arg-type]
                 for part in (whole.parts if piece is whole else (piece,))]
        # Each write is a send() on the socket (~25 us of CPU, several times that in wall time on a busy machine),
        # so the head goes out with the first part when that is no larger than a chunk of a long body.
        if parts and len(parts[0]) <= COALESCE_BYTES:
            parts[0] = head + parts[0]
        else:
            parts.insert(0, head)
        for part in parts:
            self.transport.write(part)  # not writelines, which joins (copies) the pieces first
        self.transport.write(self._protocol.send(_END))
        try:
            return await self._waiter
        finally:
            self._waiter = None
            if self.transport.get_write_buffer_size():  # replied before reading all we sent: not reusable
                self._trusted = False
            elif self._protocol.our_state is h11.DONE and self._protocol.their_state is h11.DONE:
                self._protocol.start_next_cycle()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def _advance(self) -> None:
        """Read the events that have arrived; settle the waiter once the reply is complete (or unreadable)."""
        waiter = self._waiter
        assert waiter is not None
        try:
            while (event := self._protocol.next_event()) is not h11.NEED_DATA:
                if isinstance(event, h11.Response):
                    self._reply = (event.status_code, {name.decode("latin-1"): value.decode("latin-1")
                                                       for name, value in event.headers})
                elif isinstance(event, h11.Data):
                    self._parts.append(event.data)
                elif isinstance(event, h11.EndOfMessage):
                    assert self._reply is not None
                    waiter.set_result(Reply(*self._reply, b"".join(self._parts)))
                    return
                elif isinstance(event, h11.ConnectionClosed):
                    raise ProtocolError("the server closed the connection before its reply ended")
                # an InformationalResponse (100 Continue): the real reply follows
        except h11.RemoteProtocolError as error:
            self._trusted = False
            waiter.set_exception(ProtocolError(f"unreadable reply: {error}"))
        except ProtocolError as error:
            self._trusted = False
            waiter.set_exception(error)


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
        self._headers = [("Host", host_header), ("Accept-Encoding", "identity"), *headers.items()]
        self._idle: list[_Connection] = []
        self._ssl: ssl.SSLContext | None = None
        self.closed = False

    async def post(self, path: str, body: list[bytes], size: int) -> Reply:
        """POST ``body`` (its parts sent in order, ``size`` bytes in all) to ``<base path>/<path>``."""
        connection = await self._connection()
        try:
            reply = await connection.exchange(f"{self.base_path}/{path}", [*self._headers, ("Content-Length", str(size))],
                                              body)
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
