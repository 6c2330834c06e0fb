"""One very short evolution end to end on the real local model (SmolLM2-135M through llama-cpp).

1 user per split, 2 periods, 2 questions, 1 generation, K=1, through the real ``memevo evolve``
command. A 135M model rarely writes a usable proposal through DSPy, so this checks that the whole
path runs and records everything, not that evolution helps.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from memevo.evolve.cli.main import app

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.timeout(1200)]


def test_short_evolution_on_the_local_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMEVO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    llm = {"model": "smollm2-135m-instruct", "max_tokens": 24, "max_concurrency": 2}
    config = {
        "name": "integration",
        "seed": {"policy": {"kind": "awi", "llm": llm}},
        "components": ["memory_types"],
        "data": {"synth": {"users": 3, "periods": 1, "questions": 2, "seed": 1}},
        "split": {"train": 1, "val": 1, "test": 1},
        "budget": {"generations": 1, "candidates": 1},
        "episode": {"rounds_init": 1, "rounds_update": 1, "max_periods": 2, "max_questions": 2},
        "llm": {"proposer": {**llm, "max_tokens": 160}},
        "upper_bound": False,
        "objective": "accuracy",
    }
    path = tmp_path / "evolve.yaml"
    path.write_text(yaml.safe_dump(config))
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(app, ["evolve", str(path), "--run-dir", str(run_dir)])
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert "test accuracy" in result.output
    outcome = json.loads((run_dir / "result.json").read_text())
    assert outcome["protocol"] == "outer_loop" and len(outcome["history"]) == 2
    stats = outcome["history"][1]["stats"]
    assert stats["total"] == 1 and stats["accepted"] + stats["rejected"] == 1
    usage = outcome["usage"]["by_role"]
    assert usage["agent"]["calls"] > 0 and usage["proposer"]["calls"] >= 1
    assert (run_dir / "mlflow.db").exists()
    print(result.output, stats)
