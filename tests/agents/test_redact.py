"""Endpoint error bodies reach the user with anything that looks like a key removed (``agents/redact.py``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from memevo.agents.redact import REDACTED, redact
from memevo.evolve.cli import main as cli
from tests.doubles.fault_server import Fault, FaultServer

FIXTURE = Path(__file__).parents[1] / "fixtures" / "amemgym_small.json"
CANARY = "canary-3f9a1c77e02b4d6c"


@pytest.mark.parametrize(("text", "gone", "kept"), [
    (f"Incorrect API key provided: {CANARY}", CANARY, "Incorrect API key provided: "),  # the configured key, any form
    ('{"error": "bad header Authorization: Bearer abc.DEF-123_xyz"}', "abc.DEF-123_xyz", "Bearer [redacted]"),
    ("invalid key sk-proj-AbCdEf0123456789xyz for org", "sk-proj-AbCdEf0123456789xyz", "invalid key "),
    ('{"api_key": "hunter2hunter2", "model": "m"}', "hunter2hunter2", '"api_key": "[redacted]", "model": "m"'),
    ("token=ghp_aaaaBBBBccccDDDDeeee1234 rejected", "ghp_aaaaBBBBccccDDDDeeee1234", "token=[redacted] rejected"),
    ("session 9f8e7d6c5b4a39281706f5e4d3c2b1a0ffee expired", "9f8e7d6c5b4a39281706f5e4d3c2b1a0ffee", "session "),
])
def test_redact_removes_what_looks_like_a_key(text: str, gone: str, kept: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_ENDPOINT_API_KEY", CANARY)
    shown = redact(text)
    assert gone not in shown and REDACTED in shown and kept in shown, shown


@pytest.mark.parametrize("text", [
    "max_tokens must be at most 4096 (got 5000)",
    "model 'gpt-4.1-mini' not found; key: messages is required",
    "rate limit reached for requests, retry after 20s",
])
def test_redact_leaves_ordinary_error_text_alone(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")  # too short to be told from a word: not replaced
    assert redact(text) == text


def test_an_endpoint_echoing_the_key_in_its_401_is_shown_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMEVO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    with FaultServer() as server:
        server.plan(Fault(status=401, message=f"Incorrect API key provided: {CANARY}. Find yours at example.com"))
        (tmp_path / "agent.yaml").write_text(f"kind: native\nllm: {{model: m, base_url: '{server.url}'}}\n")
        monkeypatch.setattr(sys, "argv", ["memevo", "eval", "--agent", str(tmp_path / "agent.yaml"), "--env",
                                          str(FIXTURE), "--out", str(tmp_path / "out"), "--simulator", "template"])
        with pytest.raises(SystemExit) as exited:
            cli.main()
        assert server.headers and server.headers[0]["authorization"] == f"Bearer {CANARY}"
    err = capsys.readouterr().err
    assert exited.value.code == 1, err
    assert CANARY not in err and "HTTP 401: Incorrect API key provided: [redacted]. Find yours at example.com" in err
    assert not any(CANARY in path.read_text(errors="replace") for path in (tmp_path / "out").rglob("*")
                   if path.is_file())
    assert json.loads((tmp_path / "out" / "run_kind.json").read_text()) == {"kind": "eval"}
