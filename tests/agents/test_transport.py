"""The JSON transport (httpx) against a raw TCP server that answers with scripted bytes: every reply framing an
endpoint may use (length, chunked with trailers, end of connection), kept-alive reuse, replies it cannot read,
failures sorted into transient and refused, and the proxy and certificate variables a user sets."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from memevo.agents.llm import transport as transport_module
from memevo.agents.llm.transport import JSONTransport, RefusedHTTPError, TransientHTTPError
from memevo.core.errors import UserInputError
from tests.doubles.counting_proxy import CountingProxy
from tests.doubles.fault_server import FaultServer

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
async def serve() -> AsyncIterator[Callable[[Script], Awaitable[RawServer]]]:
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


def transport_for(url: str, *, timeout_s: float = 5, max_connections: int = 4) -> JSONTransport:
    return JSONTransport(url, api_key=lambda: "k", timeout_s=timeout_s, max_connections=max_connections,
                         home_loop=asyncio.get_running_loop())


@pytest.fixture(autouse=True)
def no_proxy_from_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "REQUESTS_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


async def test_a_length_framed_reply_is_read_and_the_connection_kept(serve):
    server = await serve(reply_with(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n", b"X-A: b\r\n\r\n{\"ok\"", b": 1}"))
    transport = transport_for(server.url)
    assert await transport.post("chat/completions", [b'{"q"', b": 1}"]) == {"ok": 1}
    assert await transport.post("chat/completions", b'{"q": 1}') == {"ok": 1}
    assert server.connections == 1
    head, _, body = server.requests[0].partition(b"\r\n\r\n")
    assert head.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n") and b"Authorization: Bearer k" in head
    assert body == b'{"q": 1}'
    await transport.aclose()


async def test_requests_made_at_once_keep_their_connections_alive_up_to_the_limit(serve):
    server = await serve(reply_with(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"))
    transport = transport_for(server.url, max_connections=3)
    for _ in range(2):
        assert await asyncio.gather(*(transport.post("x", b"{}") for _ in range(6))) == [{}] * 6
    assert server.connections == 3
    await transport.aclose()


async def test_a_chunked_reply_with_extensions_and_trailers_is_decoded(serve):
    server = await serve(reply_with(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;x=y\r\n{\"a\"\r\n",
                                    b"5\r\n: 12}\r\n0\r\n", b"Trailer-A: 1\r\n\r\n"))
    transport = transport_for(server.url)
    assert await transport.post("x", b"{}") == {"a": 12}
    assert await transport.post("x", b"{}") == {"a": 12}
    assert server.connections == 1
    await transport.aclose()


async def test_a_reply_framed_by_the_end_of_the_connection_is_read_and_not_reused(serve):
    server = await serve(reply_with(b"HTTP/1.1 503 Busy\r\nRetry-After: 2\r\n\r\n", b"busy"))
    transport = transport_for(server.url)
    for _ in range(2):
        with pytest.raises(TransientHTTPError, match="HTTP 503: busy") as busy:
            await transport.post("x", b"{}")
        assert busy.value.retry_after_s == 2.0 and not busy.value.connection
    assert server.connections == 2


async def test_connection_close_and_an_interim_reply(serve):
    server = await serve(reply_with(b"HTTP/1.1 100 Continue\r\n\r\n",
                                    b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"))
    transport = transport_for(server.url)
    assert await transport.post("x", b"{}") == {}
    assert await transport.post("x", b"{}") == {}
    assert server.connections == 2


@pytest.mark.parametrize("pieces", [
    [b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{\"cut\": ", b""],  # closed inside the body
    [b"SMTP ready\r\n\r\n"],  # not HTTP
    [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", b""],  # a bad chunk size
    [],  # closed without a reply
    [b"HTTP/1.1 200 OK\r\n", b"X-Long: " + b"a" * 200_000 + b"\r\n"],  # a head longer than any endpoint sends
])
async def test_an_unreadable_reply_is_a_lost_connection(serve, pieces):
    server = await serve(reply_with(*pieces))
    transport = transport_for(server.url)
    with pytest.raises(TransientHTTPError, match="connection error") as lost:
        await transport.post("x", b"{}")
    assert lost.value.connection


async def test_refused_connections_and_silent_servers_are_transient():
    listener = await asyncio.start_server(lambda reader, writer: None, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    listener.close()
    await listener.wait_closed()  # nothing listens there any more: every connection is refused
    with pytest.raises(TransientHTTPError, match="connection error") as refused:
        await transport_for(f"http://127.0.0.1:{port}/v1").post("chat/completions", b"{}")
    assert refused.value.connection

    async def stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(5)

    silent = await asyncio.start_server(stall, "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    with pytest.raises(TransientHTTPError, match="timed out after 0.2 s"):
        await transport_for(f"http://127.0.0.1:{port}/v1", timeout_s=0.2).post("chat/completions", [b"{", b"}"])
    silent.close()


async def test_the_transport_decodes_a_json_reply_sent_in_parts(serve):
    payload = {"choices": [{"message": {"content": "é" * 3000}}]}
    data = json.dumps(payload, ensure_ascii=False).encode()
    server = await serve(reply_with(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(data), data[:100], data[100:]))
    transport = transport_for(server.url)
    assert await transport.post("chat/completions", [b"{", b"}"]) == payload
    await transport.aclose()


async def test_error_statuses_are_sorted_and_their_bodies_redacted(serve):
    echoed = b'{"error": {"message": "Incorrect API key provided: sk-proj-abcdefgh12345678"}}'
    server = await serve(lambda request: [b"HTTP/1.1 401 Unauthorized\r\nContent-Length: %d\r\n\r\n%s"
                                          % (len(echoed), echoed)])
    with pytest.raises(RefusedHTTPError) as refused:
        await transport_for(server.url).post("x", b"{}")
    assert refused.value.status == 401 and "sk-proj" not in str(refused.value) and "[redacted]" in str(refused.value)
    limited = await serve(reply_with(b"HTTP/1.1 429 Slow down\r\nRetry-After: 3\r\nContent-Length: 0\r\n\r\n"))
    with pytest.raises(TransientHTTPError, match="HTTP 429") as transient:
        await transport_for(limited.url).post("x", b"{}")
    assert transient.value.retry_after_s == 3.0


@pytest.mark.parametrize("url", ["ftp://host/v1", "localhost:8000/v1", "http://host:99999/v1"])
def test_a_base_url_that_is_not_http_is_a_user_error(url):
    with pytest.raises(UserInputError, match="base_url"):
        JSONTransport(url, api_key=lambda: "k", timeout_s=1, max_connections=1)


@pytest.mark.parametrize("key", ["s3cr\nt", "s3cr\r\nX-Injected: 1", "s3cr\u00e9", "s3cr\u20ac"])
async def test_an_api_key_a_header_cannot_carry_is_a_user_error_naming_its_setting(key):
    transport = JSONTransport("http://127.0.0.1:1/v1", api_key=lambda: key, timeout_s=1, max_connections=1)
    with pytest.raises(UserInputError, match="API key cannot be sent") as caught:
        await transport.post("chat/completions", b"{}")
    assert caught.value.field == "api_key_env" and "s3cr" not in str(caught.value)  # the key is not echoed


def test_requests_go_through_the_proxy_the_environment_names_unless_no_proxy_says_otherwise(monkeypatch):
    """``endpoint.test`` resolves only at the proxy (as outside names do behind a company proxy); loopback
    endpoints never go through a proxy, which would reach its own loopback."""
    with FaultServer() as server, CountingProxy(routes={"endpoint.test": "127.0.0.1"}) as proxy:
        port = server.url.rsplit(":", 1)[1].split("/")[0]
        outside = f"http://endpoint.test:{port}/v1"
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        reply = asyncio.run(transport_for_sync(outside).post("chat/completions", body))
        assert reply["choices"][0]["message"]["content"] == "echo: hi"
        assert proxy.requests == [f"{outside}/chat/completions"]
        assert server.headers[-1]["authorization"] == "Bearer k"

        asyncio.run(transport_for_sync(server.url).post("chat/completions", body))  # loopback: direct
        assert len(proxy.requests) == 1 and len(server.requests) == 2

        monkeypatch.setenv("NO_PROXY", "endpoint.test")
        with pytest.raises(TransientHTTPError):  # direct now, and nothing here resolves that name
            asyncio.run(transport_for_sync(outside, timeout_s=3).post("chat/completions", body))
        assert len(proxy.requests) == 1


def transport_for_sync(url: str, *, timeout_s: float = 5) -> JSONTransport:
    """A transport used from ``asyncio.run`` loops: its requests go through the sync bridge's client."""
    return JSONTransport(url, api_key=lambda: "k", timeout_s=timeout_s, max_connections=2)


async def test_a_certificate_bundle_that_cannot_be_read_is_a_user_error_naming_its_variable(monkeypatch, tmp_path):
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tmp_path / "missing.pem"))
    transport_module._certificates.cache_clear()
    try:
        with pytest.raises(UserInputError, match="REQUESTS_CA_BUNDLE"):
            await transport_for("https://127.0.0.1:1/v1").post("x", b"{}")
        bundle = Path(tmp_path / "bundle.pem")
        bundle.write_text("not a certificate")
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(bundle))
        transport_module._certificates.cache_clear()
        with pytest.raises(UserInputError, match="cannot load certificates"):
            await transport_for("https://127.0.0.1:1/v1").post("x", b"{}")
    finally:
        transport_module._certificates.cache_clear()


async def test_a_proxy_url_httpx_cannot_use_is_a_user_error_naming_the_variable(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "gopher://proxy.test:70")
    with pytest.raises(UserInputError, match="HTTPS_PROXY"):
        await transport_for("https://api.example.test/v1").post("x", b"{}")
