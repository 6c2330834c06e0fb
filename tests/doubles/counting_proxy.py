"""TEST DOUBLE: a forward HTTP proxy on 127.0.0.1 that counts the requests it relays.

A client told to use it (``HTTP_PROXY``) sends ``POST http://host:port/path`` with the full URL; the double
resolves the host through ``routes`` (so tests can name an endpoint only the proxy can reach, as a corporate
proxy resolves outside names its clients cannot), forwards the request and relays the reply. Plain HTTP only:
no ``CONNECT`` tunnels.
"""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authorization", "transfer-encoding"})


class CountingProxy:
    """``with CountingProxy(routes={"endpoint.test": "127.0.0.1"}) as proxy:`` then ``proxy.url``,
    ``proxy.requests`` (the absolute URLs relayed, in order)."""

    def __init__(self, routes: dict[str, str] | None = None) -> None:
        self.routes = routes or {}
        self.requests: list[str] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> CountingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _relay(self, method: str, target: str, headers: dict[str, str], body: bytes) -> tuple[int, list[tuple[str, str]],
                                                                                             bytes]:
        with self._lock:
            self.requests.append(target)
        parts = urlsplit(target)
        host = self.routes.get(parts.hostname or "", parts.hostname or "")
        upstream = http.client.HTTPConnection(host, parts.port or 80, timeout=30)
        try:
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            upstream.request(method, path, body, headers)
            reply = upstream.getresponse()
            return reply.status, reply.getheaders(), reply.read()
        finally:
            upstream.close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output quiet
                pass

            def do_POST(self) -> None:
                self._forward()

            def do_GET(self) -> None:
                self._forward()

            def _forward(self) -> None:
                if not self.path.startswith("http://"):
                    self.send_error(400, "a proxy takes absolute URLs")
                    return
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = {name: value for name, value in self.headers.items() if name.lower() not in HOP_BY_HOP}
                status, reply_headers, reply_body = proxy._relay(self.command, self.path, headers, body)
                self.send_response(status)
                for name, value in reply_headers:
                    if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply_body)))
                self.end_headers()
                self.wfile.write(reply_body)

        return Handler
