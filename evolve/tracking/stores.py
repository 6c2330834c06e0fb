"""MLflow's stores, checked before the run folder is claimed and before any LLM call, and opened once.

A bad one used to surface as a traceback from MLflow, sometimes after many paid calls and in a state a resume could
not mend. Each check raises ``UserInputError`` naming the config file, the field and the fix (database URLs and
names are checked as every store's are, ``memevo.evolve.databases``):

- ``tracking.uri``: a database URL, a tracking server, or a tracking folder (a path or ``file:`` URI), which must
  be a folder that can be created and written;
- artifact locations: an experiment that already exists in a local SQLite store keeps the artifact folder it
  was made with; a run folder moved or copied with its store is pointed at its own artifacts again
  (``relocate_artifacts``), and a folder deleted or made read-only since is refused.

``open_tracking_store`` creates a new local MLflow store while holding a lock on its folder, so two processes
starting on one new shared store do not both create its tables (one of them used to die on "table already
exists"); ``experiment_id`` finds or creates an experiment the same way, so two runs of one name do not both
create it.
"""

from __future__ import annotations

import fcntl
import logging
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from memevo.core.errors import UserInputError
from memevo.evolve.databases import (
    check_database_url,
    damaged_database,
    folder_problem,
    is_database,
    sqlite_file,
    uri_scheme,
)

if TYPE_CHECKING:
    from mlflow import MlflowClient

log = logging.getLogger("memevo.evolve")

MLFLOW_IDS_FILE = "mlflow_ids.json"
"""Where a run folder keeps its MLflow run ids (read back by the ablation to find each arm's runs)."""
REMOTE_SCHEMES = ("http", "https", "databricks", "databricks-uc", "uc")
"""Tracking servers: checked by MLflow when the run opens them (no request is sent before that)."""
MLFLOW_SETUP_LOGGER = "mlflow.store.db.utils"
"""MLflow's "Creating initial MLflow database tables..." and "Updating database tables" at INFO: its set-up told in its
own format between the run's lines, which say nothing of it. Its warnings and errors still show."""


def default_tracking_uri(run_dir: Path) -> str:
    return f"sqlite:///{(run_dir / 'mlflow.db').resolve()}"


def git_commit(cwd: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5, check=False
        )
    except OSError:
        return None
    return (out.stdout.strip() or None) if out.returncode == 0 else None


def check_tracking_uri(uri: str, *, source: str | None, field: str = "tracking.uri") -> None:
    """A tracking URI: a database URL (see ``check_database_url``), a tracking server, or a local folder."""
    scheme = uri_scheme(uri)
    if scheme in REMOTE_SCHEMES:
        return
    if is_database(scheme):
        check_database_url(uri, source=source, field=field)
        return
    if scheme not in ("", "file"):
        raise UserInputError(f"{uri!r}: unknown kind of store '{scheme}'; use sqlite:///path/mlflow.db, a "
                             "database URL, an http(s):// tracking server or a folder", source=source, field=field)
    folder = Path(unquote(urlparse(uri).path) if scheme == "file" else uri).expanduser()
    problem = folder_problem(folder)
    if problem is not None:
        raise UserInputError(f"{uri!r}: {problem}", source=source, field=field)


def check_artifact_location(uri: str, experiment: str, *, source: str | None, field: str) -> None:
    """The artifact folder of ``experiment`` in the local SQLite store ``uri``, if both exist, must be writable
    (read straight from the database: nothing is created or migrated; a store moved or copied with its run folder
    is first pointed at the artifacts beside it, ``relocate_artifacts``)."""
    database = sqlite_file(uri)
    if database is None or not database.is_file():
        return
    moved = relocate_artifacts(database)
    if moved:
        log.warning("%s: the run folder was moved or copied; artifact locations now point into it (%s)", database,
                    moved)
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
            row = db.execute("SELECT artifact_location FROM experiments WHERE name = ? AND lifecycle_stage = "
                             "'active'", (experiment,)).fetchone()
    except sqlite3.Error:
        return  # no MLflow tables yet, or not a database: MLflow creates or reports it
    location = row[0] if row else None
    if not location or uri_scheme(location) not in ("", "file"):
        return
    folder = Path(unquote(urlparse(location).path) if location.startswith("file:") else location)
    problem = folder_problem(folder)
    if problem is not None:
        raise UserInputError(f"experiment {experiment!r} in {database} keeps its artifacts in {folder}, and {problem}; "
                             "restore that folder or name a new experiment", source=source, field=field)


@contextmanager
def _locked_folder(folder: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``folder`` itself (no lock file is left behind)."""
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # drops the lock


def open_tracking_store(uri: str) -> MlflowClient:
    """An ``MlflowClient`` on ``uri`` whose store exists: a new local SQLite store is created under a lock on its
    folder, so concurrent first opens create its tables once, and beside it then moved into place, so a process
    killed while creating it (the store opens beside a run's first requests) leaves no half-made store."""
    from mlflow import MlflowClient

    logging.getLogger(MLFLOW_SETUP_LOGGER).setLevel(logging.WARNING)
    database = sqlite_file(uri)
    if database is None:
        return MlflowClient(tracking_uri=uri)
    with _locked_folder(database.parent), damaged_database(database, RESTORE_MLFLOW):
        if not database.exists():
            creating = database.with_name(f"{database.name}.creating")
            creating.unlink(missing_ok=True)
            MlflowClient(tracking_uri=f"sqlite:///{creating}").search_experiments(max_results=1)
            os.replace(creating, database)
        client = MlflowClient(tracking_uri=uri)
        client.search_experiments(max_results=1)  # creates (or upgrades) the tables, once
    return client


RESTORE_MLFLOW = ("restore it from a copy, or delete it and resume (MLflow then holds the generations still to "
                  "run; the run folder keeps every result)")
"""What to do with a damaged MLflow store: its runs only mirror the run folder's records."""


def experiment_id(client: MlflowClient, uri: str, name: str, *, artifact_location: str | None,
                  tags: dict[str, Any] | None = None) -> str:
    """The id of experiment ``name``, created if it does not exist yet; a local store is locked meanwhile, and
    an experiment another process created first (a remote store) is found instead."""
    from mlflow.exceptions import MlflowException

    database = sqlite_file(uri)
    with _locked_folder(database.parent) if database is not None else nullcontext():
        found = client.get_experiment_by_name(name)
        if found is not None:
            return str(found.experiment_id)
        try:
            return str(client.create_experiment(name, artifact_location=artifact_location, tags=tags))
        except MlflowException as error:
            created = client.get_experiment_by_name(name) if error.error_code == "RESOURCE_ALREADY_EXISTS" else None
            if created is None:
                raise
            return str(created.experiment_id)


ARTIFACT_COLUMNS = (("experiments", "artifact_location"), ("runs", "artifact_uri"), ("logged_models", "artifact_location"))
"""Where an MLflow SQLite store keeps absolute artifact locations."""


def relocate_artifacts(database: Path) -> str | None:
    """Point the artifact locations of a run folder's own store at the folder it lies in now.

    MLflow stores absolute ``file://`` locations; a run folder moved or copied keeps them pointing at the old place
    (gone, or the original's files). A location outside the database's folder whose tail (``…/mlartifacts`` and
    below) exists inside it is rewritten to that copy, in one transaction: the repair is safe because it only
    points at files that are there. Returns what was done (None when nothing needed doing)."""
    if not database.is_file():
        return None
    here = database.parent.resolve()
    with sqlite3.connect(database) as db:
        try:
            locations = [row[0] for row in db.execute("SELECT artifact_location FROM experiments") if row[0]]
        except sqlite3.Error:
            return None
        moves = {old: here for location in locations if (old := _moved_root(location, here)) is not None}
        if not moves:
            return None
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        for old, new in moves.items():
            for table, column in ARTIFACT_COLUMNS:
                if table in tables:
                    db.execute(f"UPDATE {table} SET {column} = ? || substr({column}, ?) WHERE {column} LIKE ?",
                               (new.as_uri(), len(old.as_uri()) + 1, old.as_uri() + "/%"))
    return ", ".join(f"{old} -> {new}" for old, new in moves.items())


def _moved_root(location: str, here: Path) -> Path | None:
    """The folder a store's artifacts were made under, when ``location`` lies outside ``here`` and its tail exists
    inside ``here`` (None otherwise)."""
    if not location.startswith("file://"):
        return None
    path = Path(unquote(urlparse(location).path))
    if path.is_relative_to(here):
        return None
    for cut in range(1, len(path.parts)):
        if (here / Path(*path.parts[cut:])).exists():
            return Path(*path.parts[:cut])
    return None


def missing_artifacts(database: Path) -> list[str]:
    """The experiments of a local store whose artifact folder does not exist (their runs show no artifacts)."""
    if not database.is_file():
        return []
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        try:
            rows = db.execute("SELECT name, artifact_location FROM experiments WHERE lifecycle_stage = 'active'").fetchall()
        except sqlite3.Error:
            return []
    return [f"experiment {name!r}: {Path(unquote(urlparse(location).path))}" for name, location in rows
            if location and location.startswith("file://") and not Path(unquote(urlparse(location).path)).exists()]
