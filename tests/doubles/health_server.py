"""TEST DOUBLE for the ``mlflow ui`` process ``memevo ui`` starts: ``python -m tests.doubles.health_server PORT
DELAY_S RECORD``. It writes its environment's MLFLOW_SERVER_ENABLE_JOB_EXECUTION to RECORD, waits DELAY_S (MLflow's
slow start), then answers ``GET /health`` once with 200 and exits 0. A negative DELAY_S exits with code 3 without
ever listening (a server that dies on start)."""

from __future__ import annotations

import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer


class _Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
        self.wfile.write(b"OK")

    def log_message(self, format: str, *args: object) -> None:
        return None


def main() -> int:
    port, delay, record = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    with open(record, "w", encoding="utf-8") as file:
        json.dump({"job_execution": os.environ.get("MLFLOW_SERVER_ENABLE_JOB_EXECUTION")}, file)
    if delay < 0:
        return 3
    time.sleep(delay)
    with HTTPServer(("127.0.0.1", port), _Health) as server:
        server.handle_request()
    return 0


if __name__ == "__main__":
    sys.exit(main())
