"""``memevo eval --environment`` on each replayed benchmark's own format, end to end over HTTP: the items are read
before the LLM hub starts and played by another environment object, which scores them from the items alone."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from memevo.environments.eval_cli import eval_command
from tests.doubles.fault_server import FaultServer
from tests.environments.test_env_locomo import sample
from tests.environments.test_env_locomo import write as write_locomo
from tests.environments.test_env_longmemeval import record
from tests.environments.test_env_longmemeval import write as write_longmemeval
from tests.environments.test_env_memoryagentbench import rows, write_parquet
from tests.environments.test_env_memorybench import snapshot


def reply(body: dict) -> str:  # type: ignore[type-arg]
    """The judge says yes and rates 5; the agent's replies are short answers its writes accept."""
    prompt = str(body["messages"][-1]["content"])
    if "yes or no" in prompt:
        return "yes"
    if "number only" in prompt:
        return "5"
    return "City37" if "capital" in prompt else "Rex"


def locomo(folder: Path) -> tuple[list[str], int]:
    return [str(write_locomo(folder, [sample()]))], 5


def longmemeval(folder: Path) -> tuple[list[str], int]:
    return [str(write_longmemeval(folder, [record("q1", "single-session-user"), record("q2_abs", "multi-session")]))], 2


def memoryagentbench(folder: Path) -> tuple[list[str], int]:
    write_parquet(folder / "mab", rows())
    return [str(folder / "mab")], 3  # the summary task is left out: 2 + 1 questions


def memorybench(folder: Path) -> tuple[list[str], int]:
    return [str(snapshot(folder / "MemoryBench")), "--dialog-field", "dialog_mem0"], 3


@pytest.mark.parametrize("write", [locomo, longmemeval, memoryagentbench, memorybench], ids=lambda w: w.__name__)
def test_eval_scores_every_benchmark_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           write: Callable[[Path], tuple[list[str], int]]) -> None:
    monkeypatch.setenv("MEMEVO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    (data, *options), n_questions = write(tmp_path)
    app = typer.Typer()
    app.command()(eval_command)
    with FaultServer(reply) as server:
        agent = tmp_path / "agent.yaml"
        agent.write_text(f"kind: native\nllm:\n  model: gpt-4.1-mini\n  base_url: {server.url}\n")
        out = tmp_path / "out"
        result = CliRunner().invoke(app, ["--agent", str(agent), "--env", data, "--out", str(out), "--environment",
                                          write.__name__, *options])
    assert result.exit_code == 0, result.output + repr(result.exception)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["environment"] == write.__name__
    records = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
    assert len(records) == n_questions
    judged = [r for r in records if r["scoring"] == "llm_judge"]
    assert all(r["score"] == 1.0 for r in judged)  # the judge said yes (rated 5) to each
    assert bool(judged) == ("judge" in summary["usage"]["by_role"])
