"""TEST DOUBLE: an in-process OpenAI-compatible HTTP server that injects faults and latency.

It serves ``POST /v1/chat/completions``, ``POST /v1/embeddings`` (and ``GET /v1/models``) on 127.0.0.1 from a thread, so
tests and the gateway benchmark can exercise real HTTP: planned faults are consumed one per
request (an HTTP status, or a delay longer than the client's timeout), every request body and
its headers are recorded, and the peak number of requests in flight at once is measured.
Usage is deterministic: prompt tokens = words in all messages (or embedded inputs), completion tokens =
words in the reply. Embeddings default to hashed bag-of-words vectors; tests may pass their own ``embed``.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[dict[str, Any]], str]
Embed = Callable[[str], list[float]]
EMBEDDINGS_PATH = "/v1/embeddings"


@dataclass(frozen=True)
class Fault:
    """One planned misbehaviour: answer with ``status`` (and an error body), after ``delay_s``."""

    status: int | None = None
    delay_s: float = 0.0
    message: str = "injected fault"
    retry_after_s: float | None = None


def echo_reply(body: dict[str, Any]) -> str:
    """Default reply: the last user message echoed back."""
    return "echo: " + body["messages"][-1]["content"]


def hashed_words_vector(text: str, dimensions: int = 16) -> list[float]:
    """Default embedding: word counts folded into ``dimensions`` buckets by CRC32 (stable across runs)."""
    vector = [0.0] * dimensions
    for word in text.lower().split():
        vector[zlib.crc32(word.encode()) % dimensions] += 1.0
    return vector


def word_count(text: str) -> int:
    return len(text.split())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default backlog of 5 refuses connections under a burst of 16+
    connections = 0
    """Connections accepted so far."""

    def process_request(self, request: Any, client_address: Any) -> None:
        self.connections += 1  # the serving thread alone accepts
        super().process_request(request, client_address)


class FaultServer:
    """Context manager; ``url`` is the ``/v1`` base URL to give the gateway."""

    def __init__(
        self,
        reply: Reply = echo_reply,
        *,
        latency_s: float = 0.0,
        embed: Embed = hashed_words_vector,
        models: tuple[str, ...] = ("fault-server",),
        port: int = 0,
    ) -> None:
        self.reply = reply
        self.models = models
        self.embed = embed
        self.latency_s = latency_s
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.peak_in_flight = 0
        self._in_flight = 0
        self._faults: deque[Fault] = deque()
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", port), self._handler_class())
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    @property
    def connections(self) -> int:
        """TCP connections accepted so far."""
        return self._server.connections

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def plan(self, *faults: Fault) -> None:
        """Queue faults for the next requests, in order; later requests succeed."""
        with self._lock:
            self._faults.extend(faults)

    def __enter__(self) -> FaultServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _begin(self, body: dict[str, Any], headers: dict[str, str], path: str = "") -> Fault | None:
        with self._lock:
            self.requests.append(body)
            self.paths.append(path)
            self.headers.append(headers)
            self._in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self._in_flight)
            return self._faults.popleft() if self._faults else None

    def _end(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def parse_body(self, raw: bytes) -> dict[str, Any]:
        """The request's JSON (a benchmark double swaps in a faster parser)."""
        return json.loads(raw)

    def completion(self, body: dict[str, Any]) -> dict[str, Any]:
        text = self.reply(body)
        prompt_tokens = sum(word_count(message["content"]) for message in body["messages"])
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": word_count(text),
                "total_tokens": prompt_tokens + word_count(text),
            },
        }

    def embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        inputs = [body["input"]] if isinstance(body["input"], str) else body["input"]
        tokens = sum(word_count(text) for text in inputs)
        return {
            "object": "list",
            "model": body["model"],
            "data": [
                {"object": "embedding", "index": index, "embedding": self.embed(text)}
                for index, text in enumerate(inputs)
            ],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # Headers and body go out as two writes; without this, Nagle + delayed ACK add ~40 ms.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output quiet
                return

            def do_GET(self) -> None:
                listed = [{"id": name, "object": "model"} for name in server.models]
                self._send(200, {"object": "list", "data": listed})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                if len(raw) < length or not raw:  # the client hung up mid-request (e.g. a cancelled call)
                    return
                body = server.parse_body(raw)
                received = {name.lower(): value for name, value in self.headers.items()}
                fault = server._begin(body, received, self.path)
                headers: dict[str, str] = {}
                try:
                    time.sleep(server.latency_s + (fault.delay_s if fault else 0.0))
                    if fault is not None and fault.status is not None:
                        if fault.retry_after_s is not None:
                            headers = {"Retry-After": str(fault.retry_after_s)}
                        status = fault.status
                        payload = {"error": {"message": fault.message, "type": "injected", "code": fault.status}}
                    elif self.path.endswith(EMBEDDINGS_PATH):
                        status, payload = 200, server.embeddings(body)
                    else:
                        status, payload = 200, server.completion(body)
                finally:
                    # Out of flight before answering: once the client holds the reply it may send its next
                    # request, which must not find this one still counted.
                    server._end()
                try:
                    self._send(status, payload, headers)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test): nothing to answer

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        return Handler


def main() -> None:
    """Serve as a separate process until killed (tests kill it to play a crashing model server)."""
    import argparse

    parser = argparse.ArgumentParser(description="TEST DOUBLE: a fault-injecting OpenAI-compatible server")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--stall-on", default="", help="chats whose last message contains this text...")
    parser.add_argument("--stall-s", type=float, default=0.0, help="...wait this long before the reply")
    args = parser.parse_args()

    def reply(body: dict[str, Any]) -> str:
        if args.stall_on and args.stall_on in body["messages"][-1]["content"]:
            time.sleep(args.stall_s)
        return echo_reply(body)

    with FaultServer(reply, port=args.port):
        threading.Event().wait()


if __name__ == "__main__":
    main()
