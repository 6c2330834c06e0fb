"""MLflow's UI on a run's store: ``mlflow ui`` on the store, the pages of the run's experiment, and what a moved
run folder needs before its artifacts show.

Only a local SQLite store that exists is looked into: opening a missing one would create it. A run folder moved or
copied with its store is pointed at its own artifacts (``tracking.stores``) before the server starts.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from memevo.evolve.databases import sqlite_file
from memevo.evolve.tracking.payloads import RUNS_VIEWS, VIEW_TAG_PREFIX
from memevo.evolve.tracking.stores import default_tracking_uri, missing_artifacts, relocate_artifacts

if TYPE_CHECKING:
    from mlflow import MlflowClient

UI_ENVIRONMENT = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
"""The job runner serves MLflow's GenAI jobs (judges, trace rollups); a run store needs none of them."""


class MlflowUI:
    name = "MLflow"
    health_path = "/health"
    environment = UI_ENVIRONMENT

    def default_store(self, run_dir: Path) -> str:
        return default_tracking_uri(run_dir)

    def served_at(self, store: str) -> str | None:
        """A tracking server (many workers) serves the UI itself."""
        return store if store.startswith(("http://", "https://")) else None

    def notes(self, store: str) -> list[str]:
        """Where a moved run folder's artifacts are now read from, and which experiments' artifact folders are
        missing."""
        database = sqlite_file(store)
        if database is None:
            return []
        notes = []
        moved = relocate_artifacts(database)
        if moved:
            notes.append(f"the run folder was moved or copied: its store now reads the artifacts beside it ({moved})")
        notes += [f"artifacts missing for {what} does not exist, so its runs show none; restore that folder"
                  for what in missing_artifacts(database)]
        return notes

    def pages(self, store: str, experiment: str | None) -> list[tuple[str, str]]:
        """The experiment's runs in the "Model training" view (MLflow's default GenAI view opens on traces, which an
        evolution does not write), in each of memevo's views the experiment has (nested runs, then every
        candidate), and its prompts."""
        view = "?workflowType=machine_learning"
        database = sqlite_file(store)
        if experiment is None or database is None or not database.is_file():
            return [("experiments", f"#/experiments{view}")]
        from mlflow import MlflowClient  # seconds to import: only when there is an experiment to look into

        client = MlflowClient(tracking_uri=store)
        found = client.get_experiment_by_name(experiment)
        if found is None:
            return [("experiments", f"#/experiments{view}")]
        runs = f"#/experiments/{found.experiment_id}/runs{view}"
        shared = [(RUNS_VIEWS[key], f"{runs}&viewStateShareKey={key}") for key in RUNS_VIEWS
                  if f"{VIEW_TAG_PREFIX}{key}" in found.tags]
        return (shared or [("runs", runs)]) + prompt_pages(client, experiment)

    def server_command(self, store: str, *, port: int, workers: int) -> list[str]:
        return [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", store, "--host", "127.0.0.1", "--port",
                str(port), "--workers", str(workers)]


def prompt_pages(client: MlflowClient, experiment: str) -> list[tuple[str, str]]:
    """The registered prompts of the run, each opened on its first version (the seed's): MLflow's *Compare* then
    sets it against the newest (the best), old on the left and new on the right, so an added line reads as added.
    Opened on the newest, as by default, Compare sets it against the one before, and every change reads backwards.
    A prompt with one version (no candidate changed it) has nothing to compare, and its link says so."""
    prompts = client.search_prompts(filter_string=f"name LIKE '{experiment}-%'")
    return [(f"prompt {prompt.name} ({_compare_hint(client, prompt.name)})", f"#/prompts/{prompt.name}?promptVersion=1")
            for prompt in prompts]


def _compare_hint(client: MlflowClient, name: str) -> str:
    versions = client.search_prompt_versions(name)
    return "press Compare: seed -> best" if len(versions) > 1 else "one version: the seed's, never changed"
