"""The upper bound's unparsed replies reach MLflow next to every memory score an evolution logs."""

from __future__ import annotations

from pathlib import Path

from mlflow import MlflowClient

from memevo.core.atomic_files import write_json_atomic
from memevo.environments.metrics import UPPER_BOUND_FILE, UpperBoundEntry, UpperBoundTable
from memevo.evolve.tracking.store import Tracker


def _candidate(label: str) -> dict[str, object]:
    return {"label": label, "metrics": {"val_memory_score": 0.4}, "params": {}, "artifacts": {}}


def _metrics(tracker: Tracker, run_name: str) -> dict[str, float]:
    (run,) = tracker.client.search_runs([tracker.experiment_id], filter_string=f"attributes.run_name = '{run_name}'")
    return run.data.metrics


def test_candidates_and_final_metrics_carry_the_upper_bound_format_errors(tmp_path: Path) -> None:
    entries = [UpperBoundEntry(item_id="u", question_index=q, state=["x"], correct=q > 0, format_error=q == 0)
               for q in range(4)]
    write_json_atomic(tmp_path / UPPER_BOUND_FILE, UpperBoundTable(entries=entries).model_dump(mode="json"))
    tracker = Tracker(run_dir=tmp_path, uri=None, experiment="ub")
    tracker.start("ub", {}, {})
    tracker.log_generation(0, {"accepted": 1.0}, [_candidate("seed")])
    tracker.finish({"test_best_memory_score": 0.4}, {}, step=1, tags={}, best_run_id=None)
    for run_name in ("seed", "ub"):
        metrics = _metrics(tracker, run_name)
        assert metrics["upper_bound_format_errors"] == 1.0
        assert metrics["upper_bound_format_error_rate"] == 0.25
    assert _metrics(tracker, "seed")["val_memory_score"] == 0.4


def test_without_an_upper_bound_nothing_extra_is_logged(tmp_path: Path) -> None:
    tracker = Tracker(run_dir=tmp_path, uri=None, experiment="none")
    tracker.start("none", {}, {})
    tracker.log_generation(0, {"accepted": 1.0}, [_candidate("seed")])
    assert not any(name.startswith("upper_bound") for name in _metrics(tracker, "seed"))
    client = MlflowClient(tracker.uri)
    assert client.get_run(tracker.parent_id).data.metrics["accepted"] == 1.0
