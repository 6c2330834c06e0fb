"""The small HTTP/1.1 client against a raw TCP server that answers with scripted bytes: every reply framing an
endpoint may use (length, chunked with trailers, end of connection), kept-alive reuse, and replies it cannot read."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable

import pytest

from memevo.agents.errors import UserInputError
from memevo.agents.llm.http11 import MAX_HEAD_BYTES, ConnectionPool, ProtocolError
from memevo.agents.llm.transport import JSONTransport, TransientHTTPError

Script = Callable[[bytes], list[bytes]]
"""What the server writes back for one request (its head and body as received), piece by piece; it closes the
connection after a reply framed by its end, one saying ``Connection: close``, or one ending with ``b""``."""


class RawServer:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[bytes] = []
        self.connections = 0
        self.server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        host, port = self.server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}/v1"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length"))
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                pieces = self.script(request)
                if not pieces:
                    break
                for piece in pieces:
                    writer.write(piece)
                    await writer.drain()
                    await asyncio.sleep(0.001)  # arrive in separate reads
                sent = b"".join(pieces).lower()
                if not pieces[-1] or b"connection: close" in sent or not (b"content-length" in sent or b"chunked" in sent):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Script], RawServer]]:
    servers: list[RawServer] = []

    async def start(script: Script) -> RawServer:
        raw = RawServer(script)
        raw.server = await asyncio.start_server(raw.handle, "127.0.0.1", 0)
        servers.append(raw)
        return raw

    yield start
    for raw in servers:
        assert raw.server is not None
        raw.server.close()


def reply_with(*pieces: bytes) -> Script:
    return lambda request: list(pieces)


async def post(pool: ConnectionPool, text: str = '{"q": 1}') -> tuple[int, bytes]:
    body = text.encode()
    reply = await pool.post("chat/completions", [body[:3], body[3:]], len(body))
    return reply.status, reply.body


async def test_a_length_framed_reply_is_read_and_the_connection_kept(serve):
    server = await serve(reply_with(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n", b"X-A: b\r\n\r\n{\"ok\"", b": 1}"))
    pool = ConnectionPool(server.url, {"Authorization": "Bearer k"})
    assert await post(pool) == (200, b'{"ok": 1}')
    assert await post(pool) == (200, b'{"ok": 1}')
    assert server.connections == 1
    head, _, body = server.requests[0].partition(b"\r\n\r\n")
    assert head.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n") and b"Authorization: Bearer k" in head
    assert body == b'{"q": 1}'
    pool.close()


async def test_connections_opened_ahead_serve_requests_made_at_once(serve):
    server = await serve(reply_with(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"))
    pool = ConnectionPool(server.url, {})
    await pool.open(3)
    await pool.open(2)  # already there: none more
    await asyncio.sleep(0.01)  # let the server count them
    assert server.connections == 3
    assert await asyncio.gather(*(post(pool) for _ in range(3))) == [(200, b"{}")] * 3
    assert server.connections == 3
    pool.close()


async def test_connections_that_cannot_be_opened_ahead_are_left_to_the_requests():
    listener = await asyncio.start_server(lambda reader, writer: None, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    listener.close()
    await listener.wait_closed()  # nothing listens there any more: every connection is refused
    pool = ConnectionPool(f"http://127.0.0.1:{port}/v1", {})
    await pool.open(2)  # no error here
    with pytest.raises(OSError):
        await post(pool)  # the request reports it
    transport = JSONTransport(f"http://127.0.0.1:{port}/v1", api_key=lambda: "k", timeout_s=5,
                              home_loop=asyncio.get_running_loop())
    await transport.open_connections(2)
    with pytest.raises(TransientHTTPError, match="connection error"):
        await transport.post("chat/completions", b"{}")


async def test_a_chunked_reply_with_extensions_and_trailers_is_decoded(serve):
    server = await serve(reply_with(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;x=y\r\n{\"a\"\r\n",
                                    b"5\r\n: 12}\r\n0\r\n", b"Trailer-A: 1\r\n\r\n"))
    pool = ConnectionPool(server.url, {})
    assert await post(pool) == (200, b'{"a": 12}')
    assert await post(pool) == (200, b'{"a": 12}')
    assert server.connections == 1
    pool.close()


async def test_a_reply_framed_by_the_end_of_the_connection_is_read_and_not_reused(serve):
    server = await serve(reply_with(b"HTTP/1.1 503 Busy\r\nRetry-After: 2\r\n\r\n", b"busy"))
    pool = ConnectionPool(server.url, {})
    reply = await pool.post("x", [b"{}"], 2)
    assert (reply.status, reply.body, reply.headers["retry-after"]) == (503, b"busy", "2")
    await pool.post("x", [b"{}"], 2)
    assert server.connections == 2


async def test_connection_close_and_an_interim_reply(serve):
    server = await serve(reply_with(b"HTTP/1.1 100 Continue\r\n\r\n",
                                    b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"))
    pool = ConnectionPool(server.url, {})
    assert await post(pool) == (200, b"{}")
    assert await post(pool) == (200, b"{}")
    assert server.connections == 2


@pytest.mark.parametrize("pieces", [
    [b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{\"cut\": ", b""],  # closed inside the body
    [b"SMTP ready\r\n\r\n"],  # not HTTP
    [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", b""],  # a bad chunk size
    [],  # closed without a reply
])
async def test_an_unreadable_reply_is_a_protocol_error(serve, pieces):
    server = await serve(reply_with(*pieces))
    pool = ConnectionPool(server.url, {})
    with pytest.raises(ProtocolError):
        await asyncio.wait_for(post(pool), 5)


async def test_the_transport_turns_failures_into_transient_errors(serve):
    server = await serve(reply_with())  # hangs up on every request
    transport = JSONTransport(server.url, api_key=lambda: "k", timeout_s=5, home_loop=asyncio.get_running_loop())
    with pytest.raises(TransientHTTPError) as lost:
        await transport.post("chat/completions", b"{}")
    assert lost.value.connection

    async def stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(5)

    silent = await asyncio.start_server(stall, "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    slow = JSONTransport(f"http://127.0.0.1:{port}/v1", api_key=lambda: "k", timeout_s=0.2,
                         home_loop=asyncio.get_running_loop())
    with pytest.raises(TransientHTTPError, match="timed out after 0.2 s"):
        await slow.post("chat/completions", [b"{", b"}"])
    silent.close()


async def test_the_transport_decodes_a_json_reply_sent_in_parts(serve):
    payload = {"choices": [{"message": {"content": "é" * 3000}}]}
    data = json.dumps(payload, ensure_ascii=False).encode()
    server = await serve(reply_with(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(data), data[:100], data[100:]))
    transport = JSONTransport(server.url, api_key=lambda: "k", timeout_s=5, home_loop=asyncio.get_running_loop())
    assert await transport.post("chat/completions", [b"{", b"}"]) == payload
    await transport.aclose()


@pytest.mark.parametrize("url", ["ftp://host/v1", "localhost:8000/v1", "http://host:99999/v1"])
def test_a_base_url_that_is_not_http_is_a_user_error(url):
    with pytest.raises(UserInputError, match="base_url"):
        JSONTransport(url, api_key=lambda: "k", timeout_s=1)


@pytest.mark.parametrize("key", ["k\r\nX-Injected: 1", "cl\u00e9", "k\u20ac"])
def test_a_header_that_would_split_the_request_or_is_not_ascii_is_refused(key):
    with pytest.raises(ValueError, match="Authorization"):
        ConnectionPool("http://127.0.0.1:1/v1", {"Authorization": f"Bearer {key}"})


async def test_an_api_key_a_header_cannot_carry_is_a_user_error_naming_its_setting():
    transport = JSONTransport("http://127.0.0.1:1/v1", api_key=lambda: "s3cr\nt", timeout_s=1)
    with pytest.raises(UserInputError, match="API key cannot be sent") as caught:
        await transport.post("chat/completions", b"{}")
    assert caught.value.field == "api_key_env" and "s3cr" not in str(caught.value)  # the key is not echoed


async def test_a_reply_head_longer_than_the_limit_is_a_protocol_error(serve):
    server = await serve(reply_with(b"HTTP/1.1 200 OK\r\n", b"X-Long: " + b"a" * (MAX_HEAD_BYTES + 10) + b"\r\n"))
    pool = ConnectionPool(server.url, {})
    with pytest.raises(ProtocolError, match="head is longer"):
        await asyncio.wait_for(post(pool), 5)
