"""MLflow as the ablation's observer: one parent run per ablation, each (arm, seed) evolution's run nested under it.

The parent run is created once, tagged with the hash of the manifest, and found by that tag on resume (also when a
kill came before its id was noted in the manifest); each evolution's run is attached to it as a child
(``mlflow.parentRunId``) once it finished. Every write may be repeated by a resume or another worker: params and
tags with the same value are stored once, and the summary's metric rows carry a timestamp noted in the manifest
before their first write, so a repeat after a kill adds no row.
"""

from __future__ import annotations

import time
from pathlib import Path

from mlflow.entities import Metric
from mlflow.tracking import MlflowClient

from memevo.core.run_files import delete_and_resume, read_json
from memevo.evolve.ablation.events import (
    AblationContext,
    AblationEnded,
    AblationEvent,
    AblationObserver,
    AblationStarted,
    EvolutionFinished,
    SummaryReady,
)
from memevo.evolve.ablation.manifest import load_manifest
from memevo.evolve.ablation.records import ArmSeedRecord
from memevo.evolve.ablation.render import arm_table
from memevo.evolve.ablation.run import summary_metrics
from memevo.evolve.ablation.summary import AblationSummary
from memevo.evolve.tracking.ablation_pages import ablation_note
from memevo.evolve.tracking.store import (
    MLFLOW_IDS_FILE,
    PARENT_TAG,
    default_tracking_uri,
    find_run,
    retire_default_experiment,
)

MANIFEST_TAG = "memevo.ablation_manifest"
"""The ablation parent run's tag: the hash of the manifest as first written."""


class AblationMlflowObserver(AblationObserver):
    """Opens the parent run when the ablation starts, nests each finished evolution, logs the summary, closes."""

    def __init__(self, context: AblationContext) -> None:
        self.context = context
        self.client = MlflowClient(tracking_uri=context.manifest.tracking_uri)

    @property
    def parent_id(self) -> str:
        run_id = self.context.manifest.parent_run_id
        assert run_id is not None, "the parent run is opened when the ablation starts"
        return run_id

    def notify(self, event: AblationEvent) -> None:
        match event:
            case AblationStarted():
                self._open_parent()
            case EvolutionFinished(record):
                self._attach(record)
            case SummaryReady(summary, outputs):
                self._log_summary(summary, outputs)
            case AblationEnded(succeeded):
                self.client.set_terminated(self.parent_id, status="FINISHED" if succeeded else "FAILED")

    def evolution_run(self, folder: Path) -> str | None:
        """The evolution's MLflow parent run, as its tracker recorded it (None when tracking was off)."""
        ids_path = folder / MLFLOW_IDS_FILE
        if not ids_path.exists():
            return None
        ids = read_json(ids_path, remedy=delete_and_resume("it", "this arm's evolution is then not nested under the "
                                                                      "ablation's run"))
        parent = ids.get("parent") if isinstance(ids, dict) else None
        return parent.get("id") if isinstance(parent, dict) else None

    def _open_parent(self) -> None:
        """The ablation's run: created on first start, found by its manifest tag on resume, with its params
        (logging the same param again is a no-op)."""
        manifest, run_dir, client = self.context.manifest, self.context.run_dir, self.client
        if manifest.parent_run_id is not None:
            client.update_run(manifest.parent_run_id, status="RUNNING")
            return
        experiment = client.get_experiment_by_name(manifest.name)
        if experiment is not None:
            experiment_id = experiment.experiment_id
        else:
            local = manifest.tracking_uri.startswith("sqlite")
            location = (run_dir / "mlartifacts").resolve().as_uri() if local else None
            experiment_id = client.create_experiment(manifest.name, artifact_location=location)
        if manifest.tracking_uri == default_tracking_uri(run_dir):
            retire_default_experiment(client)
        run_id = find_run(client, experiment_id, MANIFEST_TAG, manifest.digest())
        if run_id is None:
            tags = {"memevo.kind": "ablation", MANIFEST_TAG: manifest.digest()}
            run_id = client.create_run(experiment_id, run_name=f"ablation-{manifest.name}", tags=tags).info.run_id
        else:
            client.update_run(run_id, status="RUNNING")
        for key in ("arms", "seeds", "baseline", "ci_method", "confidence"):
            client.log_param(run_id, key, getattr(manifest, key))
        client.log_param(run_id, "run_dir", str(run_dir.resolve()))
        manifest.parent_run_id = run_id
        manifest.save(run_dir)

    def _attach(self, record: ArmSeedRecord) -> None:
        """Nest an (arm, seed)'s evolution run under the ablation's run (tags: repeating them is a no-op)."""
        if record.evolution_run_id:
            self.client.set_tag(record.evolution_run_id, PARENT_TAG, self.parent_id)
            self.client.set_tag(self.parent_id, f"evolution_run.{record.arm}.seed-{record.seed}",
                                record.evolution_run_id)

    def _log_summary(self, summary: AblationSummary, outputs: dict[str, Path]) -> None:
        manifest, client, run_id = self.context.manifest, self.client, self.parent_id
        if manifest.summary_stamp is None:  # a worker taking the summary over reads the stamp its writer saved
            saved = load_manifest(self.context.run_dir)
            manifest.summary_stamp = None if saved is None else saved.summary_stamp
        if manifest.summary_stamp is None:
            manifest.summary_stamp = int(time.time() * 1000)
            manifest.save(self.context.run_dir)
        rows = [Metric(name, float(value), manifest.summary_stamp, 0) for name, value in summary_metrics(summary).items()]
        client.log_batch(run_id, metrics=rows)
        client.set_tag(run_id, "memevo.environment", summary.environment)  # a tag: the summary is logged again on resume
        for name, value in ablation_note(summary, arm_table(summary)).items():
            client.set_tag(run_id, name, value)
        for path in outputs.values():
            client.log_artifact(run_id, str(path))

