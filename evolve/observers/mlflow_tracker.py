"""MLflow as memevo's tracker: a parent run per evolution with its generations and candidates nested under it
(``mlflow_runs``), an ablation's run with each evolution nested under it (``ablation_mlflow``), and ``mlflow ui``
on the store (``mlflow_ui``). MLflow itself loads only when a run or an ablation opens its observer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from memevo.evolve.observers.mlflow_ui import MlflowUI
from memevo.evolve.observers.tracker import Tracker
from memevo.evolve.tracking.stores import (
    MLFLOW_IDS_FILE,
    check_artifact_location,
    check_tracking_uri,
    default_tracking_uri,
)

if TYPE_CHECKING:
    from memevo.evolve.ablation.events import AblationContext, AblationObserver
    from memevo.evolve.events import Observer, RunContext



class MlflowTracker:
    def ui(self) -> MlflowUI:
        return MlflowUI()

    def check_store(self, store: str | None, experiment: str, run_dir: Path, *, source: str | None,
                    store_field: str, experiment_field: str) -> None:
        if store:
            check_tracking_uri(store, source=source, field=store_field)
        check_artifact_location(store or default_tracking_uri(run_dir), experiment, source=source,
                                field=experiment_field)

    def open_store(self, store: str) -> None:
        from memevo.evolve.databases import uri_scheme
        from memevo.evolve.tracking.stores import open_tracking_store

        if uri_scheme(store) not in ("http", "https"):  # a server made its store: nothing to create, MLflow not loaded
            open_tracking_store(store)

    def make_observer(self, context: RunContext) -> Observer:
        from memevo.evolve.observers.mlflow_runs import MlflowObserver

        return MlflowObserver(context)

    def make_ablation_observer(self, context: AblationContext) -> AblationObserver:
        from memevo.evolve.observers.ablation_mlflow import AblationMlflowObserver

        return AblationMlflowObserver(context)

    def run_ids(self, run_dir: Path) -> tuple[str, dict[str, str]] | None:
        path = run_dir / MLFLOW_IDS_FILE
        if not path.exists():
            return None
        ids = json.loads(path.read_text(encoding="utf-8"))
        runs = {key.split("/", 1)[1]: entry["id"] for key, entry in ids.items()
                if key.startswith("gen") and "/" in key and isinstance(entry, dict)}
        return ids["parent"]["id"], runs


def make_tracker() -> Tracker:
    return MlflowTracker()
