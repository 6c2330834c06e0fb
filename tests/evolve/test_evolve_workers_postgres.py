"""Evolve workers on a real PostgreSQL and a real MLflow server, against the fault-injecting test endpoint.

Two workers share the run folder, the claim store and the Optuna study in PostgreSQL; one is killed while it
runs a candidate of the first generation. The survivor takes that candidate over after the grace period, and
the run must end as one process on SQLite ends: the same result, the same trials (numbers, parameters, values,
reports, states) and the same MLflow runs, each once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memevo.evolve.workers.identity import read_identity
from memevo.evolve.workers.services import MlflowServer, PostgresCluster, postgres_bin
from tests.doubles.category_backend import CategoryBackend
from tests.doubles.fault_server import FaultServer
from tests.doubles.worker_evolution import candidate_runs, outcome, trials, world, write_evolution

pytestmark = [
    pytest.mark.skipif(postgres_bin() is None, reason="PostgreSQL server binaries (initdb, pg_ctl) are not "
                       "installed: run .ci/services.sh"),
    pytest.mark.timeout(900),
]
psycopg = pytest.importorskip("psycopg", reason="the psycopg driver is not installed: pip install 'psycopg[binary]'")

ROOT = Path(__file__).resolve().parents[2]


def _env(folder: Path) -> dict[str, str]:
    return {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "1", "OPENAI_API_KEY": "test",
            "MEMEVO_CACHE_DIR": str(folder / "cache"), "PYTHONPATH": str(ROOT)}


def _without_parent(runs: list[str], name: str) -> list[str]:
    assert runs.count(name) == 1  # the evolution's parent run, once
    return [run for run in runs if run != name]


def _held(cluster: PostgresCluster, worker: str) -> str | None:
    """A candidate of generation 1 the worker holds now, if any."""
    with psycopg.connect(cluster.url().replace("postgresql+psycopg", "postgresql")) as db:
        try:
            row = db.execute("SELECT unit FROM memevo_work_units WHERE worker = %s AND state = 'running' AND unit "
                             "LIKE 'gen-001/%%' AND unit NOT IN ('gen-001/plan', 'gen-001/outcome')",
                             (worker,)).fetchone()
        except psycopg.errors.UndefinedTable:  # no worker has opened the claim store yet
            return None
    return None if row is None else str(row[0])


def test_two_workers_on_postgres_one_killed_mid_candidate_equal_one_process(tmp_path: Path) -> None:
    backend = CategoryBackend(world())
    alone, shared = tmp_path / "alone", tmp_path / "shared"
    with FaultServer(backend.http_reply, latency_s=0.02) as server:
        write_evolution(alone, server.url, f"sqlite:///{alone / 'mlflow.db'}", "sweep-alone")
        single = subprocess.run([sys.executable, "-m", "memevo.evolve.cli", "evolve", "evolve.yaml", "--run-dir",
                                 "run"], cwd=alone, env=_env(alone), capture_output=True, text=True, timeout=600)
        assert single.returncode == 0, single.stderr[-3000:]
        with PostgresCluster() as cluster, MlflowServer(cluster.url("mlflow"), tmp_path / "artifacts") as mlflow:
            write_evolution(shared, server.url, mlflow.url, "sweep-shared")
            command = [sys.executable, "-m", "tests.doubles.evolve_worker_process", str(shared / "evolve.yaml"),
                       str(shared / "run"), cluster.url(), "{name}", "3"]
            doomed, survivor = (subprocess.Popen([part.format(name=name) for part in command], cwd=shared,
                                                 env=_env(shared), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                                 text=True) for name in ("doomed", "survivor"))
            deadline, killed = time.monotonic() + 300, None
            while killed is None and doomed.poll() is None and time.monotonic() < deadline:
                killed = _held(cluster, "doomed")
                time.sleep(0.05)
            assert killed is not None and doomed.poll() is None, doomed.communicate()[0][-3000:]
            time.sleep(0.3)  # a few of its episodes' calls made and stored
            doomed.send_signal(signal.SIGKILL)  # no clean-up: its candidate stays claimed until its heartbeat is stale
            doomed.wait()
            output, _ = survivor.communicate(timeout=600)
            assert survivor.returncode == 0, output[-3000:]
            assert outcome(shared / "run") == outcome(alone / "run")
            assert trials(cluster.url(), f"sweep-shared-{read_identity(shared / 'run')}") == trials(f"sqlite:///{alone / 'run' / 'optuna.db'}",
                                                                   "sweep-alone")
            runs = _without_parent(candidate_runs(mlflow.url, "sweep-shared"), "sweep-shared")
            assert runs == _without_parent(candidate_runs(f"sqlite:///{alone / 'mlflow.db'}", "sweep-alone"),
                                           "sweep-alone")
            assert len(runs) == len(set(runs))  # each generation and candidate logged once
            with psycopg.connect(cluster.url().replace("postgresql+psycopg", "postgresql")) as db:
                claims = dict(db.execute("SELECT unit, claims FROM memevo_work_units").fetchall())
    assert claims.pop(killed) == 2 and set(claims.values()) == {1}  # taken over once, nothing else done twice


def _evolve(machine: Path, run_dir: str, store: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "memevo.evolve.cli", "evolve", "evolve.yaml", "--run-dir", run_dir,
                             "--store", store], cwd=machine, env=_env(machine), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_a_machine_with_its_own_folder_is_refused_and_a_second_run_keeps_its_own_study(tmp_path: Path) -> None:
    backend = CategoryBackend(world())
    first, second = tmp_path / "machine-1", tmp_path / "machine-2"  # each runs from its own folder: nothing shared
    with FaultServer(backend.http_reply, latency_s=0.02) as server, PostgresCluster() as cluster:
        for machine in (first, second):
            write_evolution(machine, server.url, f"sqlite:///{machine / 'mlflow.db'}", "sweep")
        running = _evolve(first, "runs/sweep", cluster.url())
        deadline = time.monotonic() + 120
        while read_identity(first / "runs" / "sweep") is None and time.monotonic() < deadline:
            time.sleep(0.1)
        refused = _evolve(second, "runs/sweep", cluster.url())
        _, errors = refused.communicate(timeout=120)
        assert refused.returncode == 2
        lines = errors.strip().splitlines()
        assert len(lines) == 1 and "runs/sweep" in lines[0] and "shared run folder" in lines[0], errors
        assert not (second / "runs").exists()
        output, errors = running.communicate(timeout=600)
        assert running.returncode == 0, errors[-3000:]
        one = read_identity(first / "runs" / "sweep")
        study = trials(cluster.url(), f"sweep-{one}")
        again = _evolve(first, "runs/again", cluster.url())  # the same config, a second run on the same store
        _, errors = again.communicate(timeout=600)
        assert again.returncode == 0, errors[-3000:]
        other = read_identity(first / "runs" / "again")
        assert other != one
        assert trials(cluster.url(), f"sweep-{one}") == study  # the first run's study untouched
        assert trials(cluster.url(), f"sweep-{other}") == study  # and the second's its own, the same
        assert all(state != "RUNNING" for _, state, *_ in study)
        assert outcome(first / "runs" / "again") == outcome(first / "runs" / "sweep")
