"""``memevo llm check`` against the fault server, and bad flags exiting with code 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from memevo.agents.llm.cli import app
from memevo.core.errors import RunFailedError, UserInputError
from tests.doubles.fault_server import Fault, FaultServer

runner = CliRunner()


def json_or_echo(body: dict) -> str:
    return '{"city": "Paris", "country": "France"}' if "response_format" in body else "Paris."


@pytest.mark.parametrize(
    "flags", [["--max-tokens", "-5"], ["--timeout-s", "0"], ["--no-such-flag"], ["--max-tokens", "many"]]
)
def test_bad_flags_exit_2(flags):
    result = runner.invoke(app, ["check", *flags])
    assert result.exit_code == 2, result.output


def test_check_prints_model_latency_and_tokens(tmp_path: Path):
    with FaultServer(json_or_echo) as server:
        args = ["check", "--base-url", server.url, "--model", "m", "--cache-dir", str(tmp_path)]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        assert "chat: model=m latency=" in result.output and "from=endpoint" in result.output
        assert '{"city": "Paris", "country": "France"}' in result.output
        assert server.requests[1]["response_format"]["schema"]["required"] == ["city", "country"]
        again = runner.invoke(app, args)
        assert again.output.count("from=cache") == 2 and len(server.requests) == 2
        uncached = runner.invoke(app, [*args, "--no-cache"])
        assert "from=cache" not in uncached.output and len(server.requests) == 4


def test_check_failure_is_a_run_failure(tmp_path: Path):
    with FaultServer() as server:
        server.plan(Fault(status=401, message="bad key"))
        result = runner.invoke(app, ["check", "--base-url", server.url, "--no-cache"])
    assert isinstance(result.exception, RunFailedError)
    assert "HTTP 401: bad key" in str(result.exception)


def test_remote_model_without_endpoint_names_the_field(monkeypatch, tmp_path: Path):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    result = runner.invoke(app, ["check", "--model", "gpt-4o", "--cache-dir", str(tmp_path)])
    assert isinstance(result.exception, UserInputError)
    assert result.exception.field == "model"
