"""Every store and name a run writes to, checked before the run folder is claimed and before any LLM call.

A bad one used to surface as a traceback from MLflow or Optuna, sometimes after many paid calls and in a state
a resume could not mend. Each check raises ``UserInputError`` naming the config file, the field and the fix:

- ``name``: it names the MLflow experiment, the Optuna study, registered prompts and an ablation's default
  folder, so it must be a plain name (letters, digits, ``.``, ``_``, ``-``);
- ``tracking.uri`` and ``optuna.storage``: a database URL must parse, its driver package must be installed
  (a ``postgresql://`` URL without ``psycopg`` names the package to install), and an SQLite file must lie in
  an existing, writable folder and not be a folder or another kind of file; a tracking folder (a path or
  ``file:`` URI) must be a folder that can be created and written;
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
import re
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from memevo.core.errors import UserInputError

if TYPE_CHECKING:
    from mlflow import MlflowClient

log = logging.getLogger("memevo.evolve")

PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
SQL_SCHEMES = ("sqlite", "postgresql", "postgres", "mysql", "mariadb", "mssql", "oracle")
REMOTE_SCHEMES = ("http", "https", "databricks", "databricks-uc", "uc")
"""Tracking servers: checked by MLflow when the run opens them (no request is sent before that)."""
DRIVER_PACKAGES = {"psycopg": "psycopg[binary]", "psycopg2": "psycopg2-binary", "MySQLdb": "mysqlclient",
                   "pymysql": "PyMySQL", "pyodbc": "pyodbc", "pg8000": "pg8000", "oracledb": "oracledb",
                   "mariadb": "mariadb", "asyncpg": "asyncpg", "aiosqlite": "aiosqlite"}
"""The pip package that provides a database driver module, where its name differs."""
SQLITE_HEADER = b"SQLite format 3\x00"
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


def check_name(name: str, *, source: str | None, field: str = "name") -> None:
    """Refuse a run name that is empty or not a plain name."""
    what = "it names the MLflow experiment, the Optuna study, registered prompts and an ablation's default folder"
    if not name:
        raise UserInputError(f"is empty; {what}: give one (letters, digits, '.', '_', '-')", source=source,
                             field=field)
    if not PLAIN_NAME.fullmatch(name):
        raise UserInputError(f"{name!r} is not a plain name; {what}: use letters, digits, '.', '_' and '-' only "
                             "(at most 100, starting with a letter or digit)", source=source, field=field)


def check_tracking_uri(uri: str, *, source: str | None, field: str = "tracking.uri") -> None:
    """A tracking URI: a database URL (see ``check_database_url``), a tracking server, or a local folder."""
    scheme = _scheme(uri)
    if scheme in REMOTE_SCHEMES:
        return
    if _is_database(scheme):
        check_database_url(uri, source=source, field=field)
        return
    if scheme not in ("", "file"):
        raise UserInputError(f"{uri!r}: unknown kind of store '{scheme}'; use sqlite:///path/mlflow.db, a "
                             "database URL, an http(s):// tracking server or a folder", source=source, field=field)
    folder = Path(unquote(urlparse(uri).path) if scheme == "file" else uri).expanduser()
    problem = _folder_problem(folder)
    if problem is not None:
        raise UserInputError(f"{uri!r}: {problem}", source=source, field=field)


def check_database_url(url: str, *, source: str | None, field: str) -> None:
    """An SQLAlchemy URL MLflow or Optuna can open: it parses, its driver is installed, an SQLite file can be
    created or is a database."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    try:
        parsed = make_url(url)
        dialect = parsed.get_dialect()
    except (ArgumentError, NoSuchModuleError, ValueError) as error:
        raise UserInputError(f"{url!r} is not a database URL SQLAlchemy knows ({error})", source=source,
                             field=field) from None
    try:
        dialect.import_dbapi()
    except ImportError as error:
        module = (error.name or str(error)).split(".")[0]
        package = DRIVER_PACKAGES.get(module, module)
        raise UserInputError(f"a {parsed.get_backend_name()} URL needs the driver module '{module}', which is not "
                             f"installed: pip install '{package}' (or name another driver, e.g. "
                             f"{parsed.get_backend_name()}+<driver>://...)", source=source, field=field) from None
    if parsed.get_backend_name() == "sqlite":
        _check_sqlite_file(url, parsed.database, source=source, field=field)


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
    if not location or _scheme(location) not in ("", "file"):
        return
    folder = Path(unquote(urlparse(location).path) if location.startswith("file:") else location)
    problem = _folder_problem(folder)
    if problem is not None:
        raise UserInputError(f"experiment {experiment!r} in {database} keeps its artifacts in {folder}, and {problem}; "
                             "restore that folder or name a new experiment", source=source, field=field)


def _check_sqlite_file(url: str, database: str | None, *, source: str | None, field: str) -> None:
    if not database or database == ":memory:" or database.startswith("file::memory:"):
        raise UserInputError(f"{url!r} is an in-memory database, lost when the process ends (a resume needs it): "
                             "give a file, sqlite:///path/to/store.db", source=source, field=field)
    path = Path(database).expanduser()
    problem = None
    if path.is_dir():
        problem = "is a folder, not a database file; add a file name (sqlite:///folder/store.db)"
    elif path.exists():
        with path.open("rb") as file:
            header = file.read(len(SQLITE_HEADER))
        if header and header != SQLITE_HEADER:
            problem = f"{path} exists and is not an SQLite database; name another file"
    else:
        problem = _folder_problem(path.parent, create=False)
    if problem is not None:
        raise UserInputError(f"{url!r}: {problem}", source=source, field=field)


def _folder_problem(folder: Path, *, create: bool = True) -> str | None:
    """Why ``folder`` cannot hold a store's files (None when it can); ``create``: it may be made."""
    if folder.exists():
        if not folder.is_dir():
            return f"{folder} is a file, not a folder"
        return None if os.access(folder, os.W_OK | os.X_OK) else f"{folder} is not writable"
    if not create:
        return f"the folder {folder} does not exist; create it or name a file in an existing folder"
    existing = folder
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        return f"{folder} lies under {existing}, which is a file"
    return None if os.access(existing, os.W_OK | os.X_OK) else f"{existing} is not writable"


def _scheme(uri: str) -> str:
    match = re.match(r"([A-Za-z][A-Za-z0-9+.-]*)://", uri) or re.match(r"(file|databricks[a-z-]*|uc):", uri)
    return match.group(1).lower() if match else ""


def _is_database(scheme: str) -> bool:
    return scheme.split("+")[0] in SQL_SCHEMES


def sqlite_file(uri: str) -> Path | None:
    """The file of an ``sqlite:///`` URI, None for any other store."""
    if not uri.startswith("sqlite:///"):
        return None
    # read as SQLAlchemy reads it (the path after the third slash, up to any query), without importing
    # SQLAlchemy's engine on the way to an evolution's first request
    database = unquote(uri[len("sqlite:///"):].split("?", 1)[0])
    return Path(database) if database and database != ":memory:" else None


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


@contextmanager
def damaged_database(database: Path, fix: str) -> Iterator[None]:
    """Turn the error of opening a damaged SQLite file (truncated, overwritten: SQLite's own ``DatabaseError``, not
    a locked or missing table) into one line naming the file and ``fix``; any other error passes through."""
    try:
        yield
    except Exception as error:
        cause: BaseException | None = error
        while cause is not None and type(cause) is not sqlite3.DatabaseError:
            cause = getattr(cause, "orig", None) or cause.__cause__ or cause.__context__
        if cause is None or not database.exists():
            raise
        reason = str(cause).splitlines()[0]
        raise UserInputError(f"is damaged ({reason}): {fix}", source=str(database)) from None


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
