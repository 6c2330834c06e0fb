"""``memevo eval`` against the real local model (SmolLM2-135M): the whole path on a one-period world.

A 135M model rarely follows the answer format, so this checks plumbing and bookkeeping, not skill:
every question is recorded, format errors are counted (not hidden behind random answers), and the
usage table has the agent's calls. The world is tiny (about a dozen calls) to stay fast on a CPU.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from memevo.environments.data.io import save_items
from memevo.environments.eval_cli import eval_command
from tests.doubles.scripted_agents import make_item

pytestmark = pytest.mark.integration


def test_eval_with_the_local_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMEVO_CACHE_DIR", str(tmp_path / "cache"))
    item = make_item(n_periods=1)
    save_items([item.model_copy(update={"qas": item.qas[:2]})], tmp_path / "data.json")
    config = tmp_path / "agent.yaml"
    config.write_text("kind: native\nllm:\n  model: smollm2-135m-instruct\n  max_tokens: 32\n")
    app = typer.Typer()
    app.command()(eval_command)
    out = tmp_path / "out"
    args = ["--agent", str(config), "--env", str(tmp_path / "data.json"), "--out", str(out), "--upper-bound"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    summary = json.loads((out / "summary.json").read_text())
    scores = summary["scores"]
    assert scores["n_questions"] == 2 and scores["random_fallback_rate"] == 0.0
    rows = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
    assert [row["format_error"] for row in rows] == [row["choice"] is None for row in rows]
    assert summary["usage"]["by_role"]["agent"]["calls"] >= 5 + 2 + 2  # replies, questions, upper bound
