"""A worker run's identity: one id, recorded in the run folder and in the workers' store, that names its claims and
its Optuna study, so two runs of one config on one store never share either.

The store keys the id by the config's name and the folder's path as the command names it (``--run-dir
runs/sweep`` on every machine, wherever each one runs it from). The first worker of a run draws the id, records
it in the store (one conditional INSERT: two workers starting at once agree on one) and then in the folder. A
worker whose folder lacks the id the store holds for that path waits a few seconds for the first worker's file; if
it never appears the folder is not the one the first worker writes (a folder each machine keeps for itself), and
the worker stops with one line before any request.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

from memevo.agents.shared_database import create_table, shared_engine
from memevo.core.atomic_files import write_json_atomic
from memevo.core.errors import UserInputError
from memevo.evolve.databases import shown_url

IDENTITY_FILE = "workers_run.json"
TABLE = "memevo_worker_runs"
SHARE_WAIT_S = 15.0
"""How long a worker waits for the first worker's identity file to appear in the folder (a network folder's
caches may show it late)."""


def read_identity(folder: Path) -> str | None:
    """The run id recorded in ``folder`` (None: none yet)."""
    path = folder / IDENTITY_FILE
    try:
        return str(json.loads(path.read_text(encoding="utf-8"))["run"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise UserInputError(f"cannot be read ({error}): it names this run in the workers' store; restore it or "
                             "start the run in another --run-dir", source=str(path), field="run") from None


def stored_identity(store: str, name: str, folder: Path, proposal: str) -> str:
    """The id ``store`` holds for the run ``name`` in ``folder``, ``proposal`` when it held none (now recorded)."""
    from sqlalchemy import text
    from sqlalchemy.exc import IntegrityError

    engine = shared_engine(store)
    try:
        create_table(engine, f"{TABLE} (name TEXT NOT NULL, folder TEXT NOT NULL, run TEXT NOT NULL, "
                     "PRIMARY KEY (name, folder))")
        key = {"name": name, "folder": os.path.normpath(folder), "run": proposal}
        try:
            with engine.begin() as db:
                db.execute(text(f"INSERT INTO {TABLE} (name, folder, run) SELECT CAST(:name AS TEXT), "
                                f"CAST(:folder AS TEXT), CAST(:run AS TEXT) WHERE NOT EXISTS (SELECT 1 FROM {TABLE} "
                                "WHERE name = :name AND folder = :folder)"), key)
        except IntegrityError:  # another worker inserted it at the same moment (PostgreSQL): its id is read below
            pass
        with engine.connect() as db:
            return str(db.execute(text(f"SELECT run FROM {TABLE} WHERE name = :name AND folder = :folder"),
                                  key).scalar_one())
    finally:
        engine.dispose()


def run_identity(store: str, name: str, folder: Path, *, share_wait_s: float = SHARE_WAIT_S) -> str:
    """This run's id (see the module docstring): drawn, read from ``folder``, or read from ``store`` and checked
    against ``folder``; a folder that does not hold the store's run is refused with one line."""
    recorded = read_identity(folder)
    proposal = recorded or uuid.uuid4().hex[:12]
    stored = stored_identity(store, name, folder, proposal)
    if recorded is None and stored == proposal:  # this worker drew the id: the folder's copy is written once, here
        folder.mkdir(parents=True, exist_ok=True)
        write_json_atomic(folder / IDENTITY_FILE, {"run": stored})
        return stored
    deadline = time.monotonic() + share_wait_s
    while recorded is None and time.monotonic() < deadline:  # the worker that drew it is writing the folder's copy
        time.sleep(0.5)
        recorded = read_identity(folder)
    if recorded != stored:
        found = "holds no worker run" if recorded is None else f"holds worker run {recorded}"
        raise UserInputError(
            f"{found}, but the workers' store {shown_url(store)} records run {stored} of {name!r} in a folder at this path: "
            "every machine must mount the same shared run folder at the same path (or start a new run in another "
            "--run-dir)", source=str(folder), field="--run-dir")
    return stored

