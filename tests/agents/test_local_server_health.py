"""A model server process that dies is reported at once, with its signal, log and the fix; never retried.

``DoubleModelServer`` is a TEST DOUBLE: memevo's real ``LocalModelServer`` lifecycle (start, first-chat
proof, health check, death message) around the fault-server double run as a separate process, so the
tests can kill it mid-request without a model.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from memevo.agents.llm.accounting import Accounting
from memevo.agents.llm.config import LLMConfig
from memevo.agents.llm.gateway import LLMGateway
from memevo.agents.llm.local_server import (
    LocalModelServer,
    LocalServerDiedError,
    exit_description,
    repair_advice,
)
from memevo.core.errors import RunFailedError

REPO = Path(__file__).resolve().parents[2]
HELLO = [{"role": "user", "content": "hello there, how are you today"}]


class DoubleModelServer(LocalModelServer):
    """TEST DOUBLE: the fault server as the 'model' process; chats saying "hello there" stall 30 s."""

    def __init__(self, model_path: Path) -> None:
        super().__init__(model_path, startup_timeout_s=30)

    def _command(self, model_path: Path) -> list[str]:
        return [sys.executable, "-m", "tests.doubles.fault_server", "--port", str(self.port),
                "--stall-on", "hello there", "--stall-s", "30"]  # fmt: skip


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "double.gguf"
    path.write_bytes(b"not a real model, only an identity")
    return path


def gateway_on(server: LocalModelServer) -> LLMGateway:
    return LLMGateway(
        LLMConfig(model="m", max_retries=5, timeout_s=60),
        base_url=server.url,
        cache=None,
        accounting=Accounting(),
        endpoint_identity=server.identity,
        health_check=server.health_check,
    )


@pytest.mark.parametrize(("sig", "named"), [(signal.SIGKILL, "SIGKILL"), (signal.SIGSEGV, "SIGSEGV")])
async def test_a_server_killed_mid_request_fails_the_call_at_once(model_file, monkeypatch, sig, named):
    monkeypatch.chdir(REPO)
    with DoubleModelServer(model_file) as server:
        gateway = gateway_on(server)
        call = asyncio.create_task(gateway.chat(HELLO, role="agent"))
        await asyncio.sleep(1.0)  # the request is in flight, the double stalls it for 30 s
        started = time.monotonic()
        os.kill(server._process.pid, sig)
        with pytest.raises(LocalServerDiedError) as caught:
            await call
        assert time.monotonic() - started < 5
        message = str(caught.value)
        assert f"killed by signal {named}" in message and "Last lines of its log" in message
        assert gateway.accounting.report().by_role["agent"].retries <= 1  # no retry loop against a corpse
        if sig == signal.SIGSEGV:
            assert "make reinstall-llama" in message and "-DGGML_NATIVE=OFF" in message
        with pytest.raises(LocalServerDiedError):  # every later call too, without touching the network
            await gateway.chat(HELLO, role="agent")


def test_start_proves_the_server_with_a_multi_token_chat(model_file, monkeypatch):
    monkeypatch.chdir(REPO)
    with DoubleModelServer(model_file) as server:
        assert server.identity.startswith("embedded:") and len(server.identity) == len("embedded:") + 64
        assert server.running


def test_a_server_that_dies_before_its_first_chat_is_reported(model_file, monkeypatch):
    class DiesOnFirstChat(DoubleModelServer):
        def _prove_it_answers(self) -> None:
            os.kill(self._process.pid, signal.SIGSEGV)
            super()._prove_it_answers()

    monkeypatch.chdir(REPO)
    with pytest.raises(LocalServerDiedError, match="killed by signal SIGSEGV"):
        DiesOnFirstChat(model_file).start()


def test_exit_descriptions_and_advice():
    assert exit_description(-11) == "killed by signal SIGSEGV (11)"
    assert exit_description(3) == "exited with code 3"
    assert "CMAKE_ARGS=" in repair_advice(-int(signal.SIGILL))
    assert "--resume" in repair_advice(-int(signal.SIGKILL)) and "CMAKE_ARGS" not in repair_advice(-9)


def test_server_failing_its_first_chat_is_a_run_failure(model_file, monkeypatch):
    class RefusesChat(DoubleModelServer):
        def _command(self, model_path: Path) -> list[str]:
            return [sys.executable, "-c", REFUSING_SERVER, str(self.port)]

    monkeypatch.chdir(REPO)
    with pytest.raises(RunFailedError, match="refused its first chat: HTTP 500"):
        RefusesChat(model_file).start()


REFUSING_SERVER = """
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def _reply(self, status, body):
        self.send_response(status); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def do_GET(self): self._reply(200, b'{"data": []}')
    def do_POST(self): self._reply(500, b'{"error": "boom"}')
HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""
