"""The quickstart config, reduced in size, run end to end on the real embedded model (SmolLM2-135M).

It checks what a new user sees: the run finishes with seed and best scored on the test user, spend is
counted, MLflow holds the run, and ``memevo report`` re-prints it from disk.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from mlflow.tracking import MlflowClient

from memevo.agents.llm.hub import LLMHub
from memevo.evolve.config import parse_evolve_config
from memevo.evolve.loop import run_evolution
from memevo.evolve.report import report_run

QUICKSTART = Path(__file__).resolve().parent.parent / "experiments" / "quickstart.yaml"


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_reduced_quickstart_on_the_local_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    data = yaml.safe_load(QUICKSTART.read_text(encoding="utf-8"))
    data["data"]["synth"].update(users=3, periods=0, questions=1)
    data["split"] = {"train": 1, "val": 1, "test": 1, "seed": 0}
    config = parse_evolve_config(data, source=QUICKSTART)
    run_dir = tmp_path / "quickstart"

    with LLMHub(cache_dir=tmp_path / "cache") as hub:
        result = run_evolution(config, run_dir=run_dir, hub=hub, resume=False)
        assert hub.local_server_url is not None, "no endpoint configured: the embedded model must have served"

    assert result.seed_scores.n_users == result.best_scores.n_users == 1
    assert 0.0 <= result.best_scores.accuracy <= 1.0
    assert len(result.history) == 2  # generation 0 (seed) and one evolution generation
    total = result.usage.total()
    assert total.calls > 0 and total.prompt_tokens > 0 and total.cache_hits < total.calls

    ids = json.loads((run_dir / "mlflow_ids.json").read_text())
    client = MlflowClient(tracking_uri=f"sqlite:///{(run_dir / 'mlflow.db').resolve()}")
    parent = client.get_run(ids["parent"]["id"])
    assert parent.info.status == "FINISHED" and "test_best_accuracy" in parent.data.metrics

    text = report_run(run_dir)
    assert "Stopped:" in text and "| total |" in text and "memevo ui --run-dir" in text
    assert (run_dir / "report" / "test_periods.png").exists()
