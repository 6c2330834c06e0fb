"""A malformed proxy variable ends in one line naming it and exit 2, before any request; usable ones pass."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from memevo.agents.llm.proxies import PROXY_VARIABLES, check_proxies
from memevo.agents.llm.transport import JSONTransport
from memevo.core.errors import UserInputError
from memevo.evolve.cli import main as cli
from tests.doubles.fault_server import FaultServer


@pytest.fixture(autouse=True)
def no_proxy_from_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*PROXY_VARIABLES, "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.mark.parametrize(("variable", "value", "problem"), [
    ("HTTP_PROXY", "http://[::1", "not a URL"),
    ("HTTP_PROXY", "junk", "no scheme and no port"),
    ("https_proxy", "ftp://proxy.test:21", "the scheme 'ftp'"),
    ("ALL_PROXY", "http://:3128", "no host"),
    ("HTTPS_PROXY", "http://proxy.test:99999", "the port 99999 is out of range"),
])
def test_a_malformed_proxy_names_its_variable_and_the_problem(monkeypatch: pytest.MonkeyPatch, variable: str,
                                                              value: str, problem: str) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(UserInputError) as caught:
        check_proxies()
    assert caught.value.field == variable and problem in caught.value.message


def test_a_proxys_password_is_not_echoed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "gopher://me:hunter2@proxy.test:70")
    with pytest.raises(UserInputError) as caught:
        check_proxies()
    assert "hunter2" not in str(caught.value) and "gopher://***@proxy.test:70" in str(caught.value)


@pytest.mark.parametrize("value", ["http://proxy.test:3128", "https://proxy.test", "proxy.test:3128",
                                   "http://user:pass@proxy.test:8080", "http://[::1]:3128", "[::1]:3128"])
def test_usable_proxies_pass(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("HTTPS_PROXY", value)
    check_proxies()


def test_a_transport_refuses_a_malformed_proxy_before_any_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://[::1")
    with FaultServer() as server, pytest.raises(UserInputError, match="HTTP_PROXY"):
        JSONTransport(server.url, api_key=lambda: "k", timeout_s=5, max_connections=1)
    assert server.requests == []


@pytest.mark.parametrize("model_named", [True, False], ids=["model named", "model asked of the endpoint"])
@pytest.mark.parametrize("value", ["http://[::1", "junk"])
def test_the_command_exits_2_with_one_line_naming_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], value: str,
    model_named: bool,
) -> None:
    monkeypatch.setenv("MEMEVO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HTTP_PROXY", value)
    if model_named:
        monkeypatch.setenv("MEMEVO_MODEL", "gpt-4.1-mini")
    else:
        monkeypatch.delenv("MEMEVO_MODEL", raising=False)
    with FaultServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setattr(sys, "argv", ["memevo", "llm", "check"])
        with pytest.raises(SystemExit) as exited:
            cli.main()
        assert server.requests == []
    lines = capsys.readouterr().err.strip().splitlines()
    assert exited.value.code == 2
    assert len(lines) == 1 and "HTTP_PROXY" in lines[0] and lines[0].startswith("memevo: error:")
