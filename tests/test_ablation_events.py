"""The ablation's events: what its observers are handed, in order, on a run, a resume and a failure; MLflow's parent
run and its nested evolutions as the ablation's observer writes them; and a tracker added as one module and one
registry entry (``tests.doubles.recording_ablation_observer``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from memevo.evolve.ablation import run as ablation_module
from memevo.evolve.ablation.config import load_ablation_config
from memevo.evolve.ablation.events import AblationEnded, AblationStarted, EvolutionFinished, SummaryReady
from memevo.evolve.ablation.records import find_arm_records
from memevo.evolve.ablation.run import load_manifest, run_ablation
from memevo.evolve.observers import ablation_observers
from tests.doubles import recording_ablation_observer
from tests.doubles.recording_ablation_observer import RECORDED
from tests.test_ablation_run import make_hub, write_tiny_ablation

RECORDING = "tests.doubles.recording_ablation_observer"
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
    """The recording double, after MLflow in the registry."""
    monkeypatch.setitem(ablation_observers.ABLATION_OBSERVERS, "recording", RECORDING)
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
    monkeypatch.setattr(ablation_observers, "ABLATION_OBSERVERS", {"recording": RECORDING})
    recording_ablation_observer.RECORDED.clear()
    config = load_ablation_config(write_tiny_ablation(tmp_path, seeds=[0]))
    run_dir = tmp_path / "run"
    outcome = run_ablation(config, run_dir=run_dir, hub=make_hub(), progress=lambda _: None)

    assert _kinds(RECORDED) == ["AblationStarted", "EvolutionFinished", "EvolutionFinished", "SummaryReady",
                                "AblationEnded"]
    # the records name the evolution's run as this tracker gave it; no MLflow parent run was made
    assert {(record.arm, record.evolution_run_id) for record in find_arm_records(run_dir)} == \
        {(arm, f"recorded-{arm}-seed-{seed}") for arm, seed in UNITS}
    manifest = load_manifest(run_dir)
    assert manifest is not None and manifest.parent_run_id is None and outcome.parent_run_id is None
    assert _mlflow_state(manifest.tracking_uri, manifest.name)["parents"] == []
