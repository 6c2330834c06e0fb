"""``memevo eval`` runs the mem0 and amem kinds end to end against the fake endpoint (chat and embeddings over HTTP):
on a replayed benchmark (a LoCoMo stand-in) and on-policy on an AMemGym file, and resumes from their saved state."""

from __future__ import annotations

import json
from importlib.util import find_spec
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from memevo.environments.eval_cli import eval_command
from memevo.environments.registry import ENVIRONMENTS
from tests.doubles.fault_server import FaultServer
from tests.doubles.memory_system_replies import memory_system_reply
from tests.doubles.registries import register_for_test
from tests.doubles.replay_environment import tiny_items

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
AGENTS = {
    "mem0": "kind: mem0\nembedding_model: fake-embed\nupdate_every: 2\nshort_term: 0\n",
    "amem": "kind: amem\nretrieval: embedding\nembedding_model: fake-embed\nupdate_every: 2\nshort_term: 0\n",
}


def run_eval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, url: str, *env_args: str) -> dict:
    monkeypatch.setenv("MEMEVO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    agent = tmp_path / "agent.yaml"
    agent.write_text(AGENTS[kind] + f"llm:\n  model: fake-chat\n  base_url: {url}\n")
    app = typer.Typer()
    app.command()(eval_command)
    args = ["--agent", str(agent), "--out", str(tmp_path / "out"), *env_args]
    for extra in ([], ["--resume"]):
        result = CliRunner().invoke(app, [*args, *extra])
        assert result.exit_code == 0, result.output + repr(result.exception)
    return json.loads((tmp_path / "out" / "summary.json").read_text())


@pytest.mark.parametrize("kind", ["mem0", "amem"])
def test_a_replayed_benchmark(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    if kind == "mem0" and find_spec("mem0") is None:
        pytest.skip("needs pip install 'memevo[mem0]'")
    register_for_test(monkeypatch, ENVIRONMENTS, "locomo", "tests.doubles.replay_environment:TinyReplayEnvironment")
    data = tmp_path / "bench.json"
    data.write_text(json.dumps([item.model_dump(mode="json") for item in tiny_items(2)]))
    with FaultServer(memory_system_reply) as server:
        summary = run_eval(tmp_path, monkeypatch, kind, server.url, "--env", str(data), "--environment", "locomo")
        assert "/v1/embeddings" in server.paths and any("response_format" in body for body in server.requests)
    assert summary["environment"] == "locomo" and summary["n_items"] == 2
    assert summary["usage"]["by_role"]["agent"]["calls"] > 0


@pytest.mark.parametrize("kind", ["mem0", "amem"])
def test_amemgym_on_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    if kind == "mem0" and find_spec("mem0") is None:
        pytest.skip("needs pip install 'memevo[mem0]'")
    with FaultServer(memory_system_reply) as server:
        summary = run_eval(tmp_path, monkeypatch, kind, server.url, "--env", str(FIXTURES / "amemgym_small.json"),
                           "--users", "1", "--simulator", "template")
        assert "/v1/embeddings" in server.paths
    assert summary["scores"]["write_requests"] > 0
