"""The ablation's events: what its observers are handed, in order, on a run, a resume and a failure; MLflow's parent
run and its nested evolutions as the ablation's observer writes them; and a tracker added as one module and one
registry entry (``tests.doubles.recording_tracker``), which the arms' configs name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from mlflow.tracking import MlflowClient

from memevo.evolve.ablation import run as ablation_module
from memevo.evolve.ablation.config import load_ablation_config
from memevo.evolve.ablation.events import (
    AblationContext,
    AblationEnded,
    AblationObserver,
    AblationObservers,
    AblationStarted,
    EvolutionFinished,
    SummaryReady,
)
from memevo.evolve.ablation.manifest import load_manifest
from memevo.evolve.ablation.records import find_arm_records
from memevo.evolve.ablation.run import run_ablation
from memevo.evolve.observers.mlflow_tracker import MlflowTracker
from tests.doubles import recording_ablation_observer, recording_tracker
from tests.doubles.recording_ablation_observer import RECORDED, RecordingAblationObserver
from tests.evolve.test_ablation_run import make_hub, write_tiny_ablation

UNITS = [("no-evolution", 0), ("complete", 0)]


def _kinds(events: list[Any]) -> list[str]:
    return [type(event).__name__ for event in events]


def _mlflow_state(uri: str, experiment: str) -> dict[str, Any]:
    """The ablation's parent runs with their params, tags, metric rows and artifacts, and who each child names."""
    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    assert found is not None
    parents = client.search_runs([found.experiment_id], "tags.`memevo.kind` = 'ablation'")
    state: dict[str, Any] = {"parents": []}
    for parent in parents:
        run_id = parent.info.run_id
        state["parents"].append({
            "id": run_id, "status": parent.info.status, "params": parent.data.params, "tags": parent.data.tags,
            "rows": {name: sorted((row.value, row.timestamp, row.step) for row in client.get_metric_history(run_id, name))
                     for name in parent.data.metrics},
            "artifacts": sorted(entry.path for entry in client.list_artifacts(run_id)),
            "children": sorted((run.info.run_name, run.info.run_id) for run in client.search_runs(
                [found.experiment_id], f"tags.`mlflow.parentRunId` = '{run_id}'")),
        })
    return state


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """MLflow's ablation observer, with the recording double told each event after it."""
    mlflow_observer = MlflowTracker.make_ablation_observer

    def both(tracker: MlflowTracker, context: AblationContext) -> AblationObserver:
        observers = AblationObservers()
        observers.add("mlflow", mlflow_observer(tracker, context))
        observers.add("recording", RecordingAblationObserver())
        return observers

    monkeypatch.setattr(MlflowTracker, "make_ablation_observer", both)
    RECORDED.clear()
    return RECORDED


def test_observers_get_the_events_in_order_and_a_resume_writes_the_same_runs(tmp_path: Path,
                                                                            recorded: list[Any]) -> None:
    config = load_ablation_config(write_tiny_ablation(tmp_path, seeds=[0]))
    run_dir = tmp_path / "run"
    outcome = run_ablation(config, run_dir=run_dir, hub=make_hub(), progress=lambda _: None)

    assert _kinds(recorded) == ["AblationStarted", "EvolutionFinished", "EvolutionFinished", "SummaryReady",
                                "AblationEnded"]
    finished = [event.record for event in recorded if isinstance(event, EvolutionFinished)]
    assert [(record.arm, record.seed) for record in finished] == UNITS
    assert {(record.arm, record.seed): record for record in finished} == \
        {(record.arm, record.seed): record for record in find_arm_records(run_dir)}  # as saved
    ready = recorded[3]
    assert isinstance(ready, SummaryReady) and ready.summary == outcome.summary and ready.outputs == outcome.outputs
    assert recorded[-1] == AblationEnded(succeeded=True)

    manifest = load_manifest(run_dir)
    assert manifest is not None and manifest.parent_run_id == outcome.parent_run_id
    state = _mlflow_state(manifest.tracking_uri, manifest.name)
    (parent,) = state["parents"]
    assert parent["id"] == outcome.parent_run_id and parent["status"] == "FINISHED"
    # each evolution's run is MLflow's (the first observer that keeps one names it), nested under the parent
    assert sorted(run_id for _, run_id in parent["children"]) == sorted(str(record.evolution_run_id)
                                                                         for record in finished)
    assert {parent["tags"][f"evolution_run.{arm}.seed-{seed}"] for arm, seed in UNITS} == \
        {record.evolution_run_id for record in finished}
    assert parent["params"]["arms"] == str(["no-evolution", "complete"]) and parent["rows"]
    assert all(len(rows) == 1 for rows in parent["rows"].values())
    assert {"ablation.md", "ablation_arms.csv"} <= set(parent["artifacts"])

    recorded.clear()
    again = run_ablation(config, run_dir=run_dir, hub=make_hub(), resume=True, progress=lambda _: None)
    # the resume skips both evolutions but tells the observers again; MLflow holds the same runs and rows
    assert _kinds(recorded) == ["AblationStarted", "EvolutionFinished", "EvolutionFinished", "SummaryReady",
                                "AblationEnded"]
    assert [event.record for event in recorded if isinstance(event, EvolutionFinished)] == finished
    assert again.parent_run_id == outcome.parent_run_id
    assert _mlflow_state(manifest.tracking_uri, manifest.name) == state


class Killed(Exception):
    """Stands for an error in the middle of an (arm, seed)."""


def test_a_failed_ablation_ends_its_events_unsucceeded(tmp_path: Path, recorded: list[Any],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    config = load_ablation_config(write_tiny_ablation(tmp_path, seeds=[0]))

    def fail(*args: object, **kwargs: object) -> None:
        raise Killed

    monkeypatch.setattr(ablation_module, "run_evolution", fail)
    with pytest.raises(Killed):
        run_ablation(config, run_dir=tmp_path / "run", hub=make_hub(), progress=lambda _: None)
    assert recorded == [AblationStarted(), AblationEnded(succeeded=False)]
    manifest = load_manifest(tmp_path / "run")
    assert manifest is not None
    assert _mlflow_state(manifest.tracking_uri, manifest.name)["parents"][0]["status"] == "FAILED"


def test_a_new_tracker_for_the_ablation_is_one_module_and_one_registry_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recording_tracker.register(monkeypatch)
    recording_ablation_observer.RECORDED.clear()
    ablation_file = write_tiny_ablation(tmp_path, seeds=[0])
    base = yaml.safe_load((tmp_path / "base.yaml").read_text())
    base["tracking"]["tracker"] = recording_tracker.NAME  # the arms' configs name the tracker
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(base))
    config = load_ablation_config(ablation_file)
    run_dir = tmp_path / "run"
    outcome = run_ablation(config, run_dir=run_dir, hub=make_hub(), progress=lambda _: None)

    assert _kinds(RECORDED) == ["AblationStarted", "EvolutionFinished", "EvolutionFinished", "SummaryReady",
                                "AblationEnded"]
    # the records name the evolution's run as this tracker gave it; no MLflow parent run was made
    assert {(record.arm, record.evolution_run_id) for record in find_arm_records(run_dir)} == \
        {(arm, f"recorded-{arm}-seed-{seed}") for arm, seed in UNITS}
    manifest = load_manifest(run_dir)
    assert manifest is not None and manifest.parent_run_id is None and outcome.parent_run_id is None
    assert manifest.tracking_uri == str(run_dir / "recorded-store.json")  # the tracker's default store
    assert not list(run_dir.rglob("mlflow.db"))  # nothing was logged to MLflow


def test_a_worker_taking_the_summary_over_logs_its_rows_at_the_stamp_the_dead_writer_saved(tmp_path: Path) -> None:
    config = load_ablation_config(write_tiny_ablation(tmp_path, seeds=[0]))
    run_dir = tmp_path / "run"
    run_ablation(config, run_dir=run_dir, hub=make_hub(), progress=lambda _: None)  # the writer, then it "died"
    manifest = load_manifest(run_dir)
    assert manifest is not None and manifest.summary_stamp is not None
    before = _mlflow_state(manifest.tracking_uri, manifest.name)

    stale, observers = ablation_module.start_ablation(config, run_dir, resume=True)
    stale.summary_stamp = None  # what a worker that read the manifest before the summary holds
    ablation_module.finish_ablation(observers, stale, run_dir)
    assert stale.summary_stamp == manifest.summary_stamp
    assert _mlflow_state(manifest.tracking_uri, manifest.name) == before, "no summary row written twice"
