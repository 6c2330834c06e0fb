"""The SQL stores a run writes to, whoever owns them (Optuna's study, a tracker's store, the workers' claims):
names and URLs checked before the run folder is claimed, and a damaged SQLite file turned into one line.

A bad URL used to surface as a traceback from SQLAlchemy, sometimes after many paid calls. Each check raises
``UserInputError`` naming the config file, the field and the fix: a database URL must parse, its driver package
must be installed (a ``postgresql://`` URL without ``psycopg`` names the package to install), and an SQLite file
must lie in an existing, writable folder and not be a folder or another kind of file.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote

from memevo.core.errors import UserInputError

PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
SQL_SCHEMES = ("sqlite", "postgresql", "postgres", "mysql", "mariadb", "mssql", "oracle")
DRIVER_PACKAGES = {"psycopg": "psycopg[binary]", "psycopg2": "psycopg2-binary", "MySQLdb": "mysqlclient",
                   "pymysql": "PyMySQL", "pyodbc": "pyodbc", "pg8000": "pg8000", "oracledb": "oracledb",
                   "mariadb": "mariadb", "asyncpg": "asyncpg", "aiosqlite": "aiosqlite"}
"""The pip package that provides a database driver module, where its name differs."""
SQLITE_HEADER = b"SQLite format 3\x00"
def check_name(name: str, *, source: str | None, field: str = "name") -> None:
    """Refuse a run name that is empty or not a plain name."""
    what = "it names the MLflow experiment, the Optuna study, registered prompts and an ablation's default folder"
    if not name:
        raise UserInputError(f"is empty; {what}: give one (letters, digits, '.', '_', '-')", source=source,
                             field=field)
    if not PLAIN_NAME.fullmatch(name):
        raise UserInputError(f"{name!r} is not a plain name; {what}: use letters, digits, '.', '_' and '-' only "
                             "(at most 100, starting with a letter or digit)", source=source, field=field)


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


def check_reachable(url: str, *, source: str | None, field: str) -> None:
    """Connect once to a database server (an SQLite file needs no server), so a store nobody can reach stops the
    run before its first LLM call instead of after many."""
    from sqlalchemy import create_engine
    from sqlalchemy.exc import DBAPIError

    if url.startswith("sqlite"):
        return
    engine = create_engine(url, connect_args={"connect_timeout": 10} if url.startswith("postgres") else {})
    try:
        with engine.connect():
            pass
    except DBAPIError as error:
        reason = str(error.orig or error).strip().splitlines()[0]
        raise UserInputError(f"{shown_url(url)} cannot be reached ({reason}): start the database or correct the "
                             "URL; nothing was run", source=source, field=field) from None
    finally:
        engine.dispose()


def check_server(url: str, *, source: str | None, field: str, timeout_s: float = 10.0) -> None:
    """Ask a tracking server over HTTP for anything (any answer, even an error status, says it is there), so a server
    nobody can reach stops the run before its first LLM call."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url.rstrip("/") + "/health", timeout=timeout_s):
            pass
    except urllib.error.HTTPError:
        pass  # it answered
    except (OSError, ValueError) as error:
        reason = getattr(error, "reason", None) or error
        raise UserInputError(f"{url} cannot be reached ({reason}): start the tracking server or correct the URL; "
                             "nothing was run", source=source, field=field) from None


def shown_url(url: str) -> str:
    """``url`` without its password, for messages."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


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
        problem = folder_problem(path.parent, create=False)
    if problem is not None:
        raise UserInputError(f"{url!r}: {problem}", source=source, field=field)


def folder_problem(folder: Path, *, create: bool = True) -> str | None:
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


def uri_scheme(uri: str) -> str:
    match = re.match(r"([A-Za-z][A-Za-z0-9+.-]*)://", uri) or re.match(r"(file|databricks[a-z-]*|uc):", uri)
    return match.group(1).lower() if match else ""


def is_database(scheme: str) -> bool:
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
