"""A test double of a tracker's UI (``recording_tracker``): ``memevo ui`` starts the ``tests.doubles.health_server`` double as its server,
with the store as the file the double records its environment in, and announces the double's own pages."""

from __future__ import annotations

import sys
from pathlib import Path


class RecordingTrackerUI:
    name = "Recorded"
    health_path = "/health"
    environment = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "recorded"}

    def default_store(self, run_dir: Path) -> str:
        return str(run_dir / "recorded-store.json")

    def served_at(self, store: str) -> str | None:
        return store if store.startswith("served:") else None

    def notes(self, store: str) -> list[str]:
        return [f"a note on {Path(store).name}"]

    def pages(self, store: str, experiment: str | None) -> list[tuple[str, str]]:
        return [("home", f"#/home/{experiment}"), ("second", "#/second")]

    def server_command(self, store: str, *, port: int, workers: int) -> list[str]:
        return [sys.executable, "-m", "tests.doubles.health_server", str(port), "0.2", store]
