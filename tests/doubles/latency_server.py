"""BENCHMARK DOUBLE: an OpenAI-compatible endpoint that answers every request after a fixed latency, and
spends as little time of its own as it can doing so.

The fault server (``fault_server.py``) is built for tests: a thread per connection, ``http.server``'s header
parsing and a JSON parser holding one lock. Measured with a minimal client (``http.client``, one thread per
user, in another process) at 50 ms latency: one user saw 51.5 ms per request, but 8 users sending together
saw 53.2 ms (2 KB bodies) and 55.5 ms (50 KB bodies): under bursts its threads wait on each other, so a
throughput benchmark charged the client for the server's queueing. This double serves every connection
from one asyncio loop in a thread of its own: it reads a request's head and body, answers after the latency,
and keeps each request's arrival and finish time (``spans``) and the peak number in flight. It serves
``POST .../chat/completions`` (the reply from a function of the parsed body), ``GET .../models``, nothing
else, and expects what memevo's client sends: HTTP/1.1 with a ``Content-Length`` body, keep-alive.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import orjson

Completion = Callable[[dict[str, Any]], dict[str, Any]]
MODEL = "latency-server"


class LatencyServer:
    """Context manager; ``url`` is the ``/v1`` base URL. ``completion`` makes a chat completion's JSON from the
    parsed request body."""

    def __init__(self, completion: Completion, *, latency_s: float) -> None:
        self.completion = completion
        self.latency_s = latency_s
        self.spans: list[tuple[float, float]] = []
        self.peak_in_flight = 0
        self._in_flight = 0
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def url(self) -> str:
        assert self._server is not None, "use the server inside its with-block"
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}/v1"

    def reset(self) -> None:
        """Forget the spans and the peak (between measured runs)."""
        asyncio.run_coroutine_threadsafe(self._reset(), self._loop).result()

    def __enter__(self) -> LatencyServer:
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=256))
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._loop.call_soon_threadsafe(self._server.close)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    async def _reset(self) -> None:
        self.spans, self.peak_in_flight = [], 0

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                method, target = head.split(b" ", 2)[:2]
                length = _content_length(head)
                body = await reader.readexactly(length) if length else b""
                if method == b"GET" and target.endswith(b"/models"):
                    writer.write(_response(orjson.dumps({"object": "list", "data": [{"id": MODEL,
                                                                                     "object": "model"}]})))
                    continue
                writer.write(_response(await self._complete(orjson.loads(body))))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client closed the connection
        finally:
            writer.close()

    async def _complete(self, body: dict[str, Any]) -> bytes:
        started = time.monotonic()
        self._in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self._in_flight)
        await asyncio.sleep(self.latency_s)
        reply = orjson.dumps(self.completion(body))
        self._in_flight -= 1  # out of flight before answering: the client's next request must not find it counted
        self.spans.append((started, time.monotonic()))
        return reply


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def _response(payload: bytes) -> bytes:
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(payload)
            + payload)
