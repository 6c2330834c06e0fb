"""A tracker's own UI: what ``memevo ui`` starts on the store a run logged to, and the pages it points a person to.

``memevo ui`` (``memevo.evolve.cli``) finds the run's store, checks the port, runs the server in its own process
group and announces the pages once the server answers; everything that depends on the tracker comes from its
``TrackerUI``, which the tracker makes (``Tracker.ui``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol


class TrackerUI(Protocol):
    @property
    def name(self) -> str:
        """How the person knows the tracker ("MLflow": "the MLflow UI", "the MLflow server")."""

    @property
    def health_path(self) -> str:
        """The route that answers once the server is ready to serve pages."""

    @property
    def environment(self) -> Mapping[str, str]:
        """Set for the server's process on top of memevo's own environment."""

    def default_store(self, run_dir: Path) -> str:
        """The store a run in ``run_dir`` logs to when its config names none."""

    def served_at(self, store: str) -> str | None:
        """The UI's address when the store is a server that serves its UI itself (nothing to start), else None."""

    def notes(self, store: str) -> list[str]:
        """What a person should know before looking (a moved run folder, missing files), one line each."""

    def pages(self, store: str, experiment: str | None) -> list[tuple[str, str]]:
        """(what it shows, path under the server's address) of the run's pages; the first is announced first."""

    def server_command(self, store: str, *, port: int, workers: int) -> list[str]:
        """The command that serves the UI on 127.0.0.1:``port`` until it is stopped."""

