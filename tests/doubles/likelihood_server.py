"""TEST DOUBLE: an in-process HTTP endpoint that scores answer options with scripted log-probabilities.

It serves the embedded server's option route (``OPTION_LOGPROBS_PATH``) and ``POST /v1/chat/completions`` on
127.0.0.1 from a thread, so the gateway's likelihood path runs over real HTTP. ``score(messages, option)`` gives
each option's summed log-probability; the token count is the option's word count. Every request body is
recorded. It never stands in for a real model outside tests.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memevo.agents.llm.llama_server import OPTION_LOGPROBS_PATH

Score = Callable[[list[dict[str, str]], str], float]
CHAT_REPLY = '{"answer": 1}'
"""What the chat route always replies: a model that names option 1 whatever it is asked."""


class LikelihoodServer:
    """Context manager; ``url`` is the ``/v1`` base URL to give the gateway."""

    def __init__(self, score: Score) -> None:
        self.score = score
        self.requests: list[dict[str, Any]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def option_requests(self) -> list[dict[str, Any]]:
        return [body for body in self.requests if "options" in body]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        double = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - the http.server hook's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                double.requests.append(body)
                if self.path == OPTION_LOGPROBS_PATH:
                    reply: dict[str, Any] = {
                        "options": [{"logprob": double.score(body["messages"], option), "tokens": len(option.split())}
                                    for option in body["options"]],
                        "usage": {"prompt_tokens": 7, "completion_tokens": 0},
                    }
                else:
                    reply = {"choices": [{"message": {"content": CHAT_REPLY}, "finish_reason": "stop"}],
                             "usage": {"prompt_tokens": 7, "completion_tokens": 3}}
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        return Handler

    def __enter__(self) -> LikelihoodServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
