"""Ablation workers on a real PostgreSQL and a real MLflow server, against the fault-injecting test endpoint.

The services are started by the project's own ``memevo.evolve.workers.services`` (``.ci/services.sh`` installs
PostgreSQL's server; the psycopg driver comes with the test extras). Two workers must give the same scores as one
process, with each evolution's MLflow run logged once under the ablation's run; a worker killed mid-unit must see
that unit finished once by the other. Two sweep workers on one Optuna study must end with the trials one process
ends with, also when one of them is killed mid-trial.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memevo.evolve.workers.services import MlflowServer, PostgresCluster, postgres_bin
from tests.doubles.category_backend import CategoryBackend
from tests.doubles.fault_server import FaultServer
from tests.doubles.worker_ablation import evolution_runs, scores, world, write_ablation

pytestmark = [
    pytest.mark.skipif(postgres_bin() is None, reason="PostgreSQL server binaries (initdb, pg_ctl) are not "
                       "installed: run .ci/services.sh"),
    pytest.mark.timeout(900),
]
psycopg = pytest.importorskip("psycopg", reason="the psycopg driver is not installed: pip install 'psycopg[binary]'")


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory):
    with PostgresCluster() as cluster, \
            MlflowServer(cluster.url("mlflow"), tmp_path_factory.mktemp("mlflow") / "artifacts") as server:
        yield cluster, server


def _env(folder: Path) -> dict[str, str]:
    return {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "1", "OPENAI_API_KEY": "test",
            "MEMEVO_CACHE_DIR": str(folder / "cache")}


def ablate(folder: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memevo.evolve.cli", "ablate", "ablation.yaml", *args],
                          cwd=folder, env={**_env(folder), **(env or {})}, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory):
    """One process, its own SQLite store: the scores every many-worker run must reproduce."""
    folder = tmp_path_factory.mktemp("single")
    backend = CategoryBackend(world())
    with FaultServer(backend.http_reply) as server:
        write_ablation(folder, server.url, f"sqlite:///{folder / 'mlflow.db'}", "single")
        done = ablate(folder, "--run-dir", "run")
    assert done.returncode == 0, done.stderr[-3000:]
    return scores(folder / "run")


def test_two_workers_on_postgres_equal_one_process(tmp_path: Path, services, reference) -> None:
    cluster, mlflow_server = services
    backend = CategoryBackend(world())
    with FaultServer(backend.http_reply) as server:
        write_ablation(tmp_path, server.url, mlflow_server.url, "two-workers")
        limit = {"MEMEVO_REQUESTS_PER_MINUTE": "6000", "MEMEVO_RATE_STORE": cluster.url()}  # one bucket for both
        done = ablate(tmp_path, "--run-dir", "run", "--workers", "2", "--store", cluster.url(), env=limit)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert scores(tmp_path / "run") == reference
    status, names = evolution_runs(mlflow_server.url, "two-workers")
    assert status == "FINISHED" and len(names) == 4 and len(set(names)) == 4  # each (arm, seed) once
    with psycopg.connect(cluster.url().replace("postgresql+psycopg", "postgresql")) as db:
        claims = db.execute("SELECT unit, claims, state FROM memevo_work_units WHERE job LIKE "
                            "'ablation/two-workers/%'").fetchall()
        buckets = [row[0] for row in db.execute("SELECT name FROM memevo_rate_buckets")]
    assert len(claims) == 6 and all(count == 1 and state == "done" for _, count, state in claims)
    assert server.url in buckets  # the workers' gateways took from the shared bucket in PostgreSQL
    ui = subprocess.run([sys.executable, "-m", "memevo.evolve.cli", "ui", "--run-dir", "run"], cwd=tmp_path,
                        env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert ui.returncode == 0 and f"MLflow UI: {mlflow_server.url}" in ui.stdout, ui.stderr


def test_a_worker_killed_mid_unit_has_its_unit_finished_once_by_another(tmp_path: Path, services, reference) -> None:
    cluster, mlflow_server = services
    backend = CategoryBackend(world())
    command = [sys.executable, "-m", "tests.doubles.ablation_worker_process", str(tmp_path / "ablation.yaml"),
               str(tmp_path / "run"), cluster.url(), "{name}", "3"]
    root = Path(__file__).resolve().parents[2]
    env = {**_env(tmp_path), "PYTHONPATH": str(root)}
    with FaultServer(backend.http_reply, latency_s=0.05) as server:
        write_ablation(tmp_path, server.url, mlflow_server.url, "killed-worker")
        doomed = subprocess.Popen([part.format(name="doomed") for part in command], env=env, cwd=tmp_path,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 300
        while len(server.requests) < 20 and doomed.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert doomed.poll() is None, doomed.communicate()[0][-3000:]
        doomed.send_signal(signal.SIGKILL)  # no clean-up: its unit stays claimed until its heartbeat goes stale
        doomed.wait()
        heir = subprocess.run([part.format(name="heir") for part in command], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=600)
    assert heir.returncode == 0, heir.stderr[-3000:]
    assert scores(tmp_path / "run") == reference
    status, names = evolution_runs(mlflow_server.url, "killed-worker")
    assert status == "FINISHED" and len(names) == 4 and len(set(names)) == 4
    with psycopg.connect(cluster.url().replace("postgresql+psycopg", "postgresql")) as db:
        claims = dict(db.execute("SELECT unit, claims FROM memevo_work_units WHERE unit LIKE '%seed-%' AND job LIKE "
                                 "'ablation/killed-worker/%'").fetchall())
    assert sorted(claims.values()) == [1, 1, 1, 2]  # the killed worker's unit, claimed again by the heir


def _sweep_worker(study: str, claims: str, folder: Path, name: str, step_s: float) -> list[str]:
    return [sys.executable, "-m", "tests.doubles.sweep_worker_process", study, claims, str(folder), name, "3",
            str(step_s)]


def _trials(study: str) -> list[tuple[int, str, dict[str, int], float | None, dict[int, float]]]:
    import optuna

    loaded = optuna.load_study(study_name="toy-sweep", storage=study)
    return [(trial.number, trial.state.name, trial.params, trial.value, trial.intermediate_values)
            for trial in loaded.get_trials(deepcopy=False)]


def test_sweep_workers_share_one_postgres_study_and_take_a_killed_workers_trial_over(tmp_path: Path,
                                                                                      services) -> None:
    cluster, _ = services
    root = Path(__file__).resolve().parents[2]
    env = {**_env(tmp_path), "PYTHONPATH": str(root)}
    alone = tmp_path / "alone"
    alone.mkdir()
    single = subprocess.run(_sweep_worker(f"sqlite:///{alone / 'optuna.db'}", f"sqlite:///{alone / 'claims.db'}",
                                          alone, "alone", 0.0), env=env, capture_output=True, text=True, timeout=300)
    assert single.returncode == 0, single.stderr[-3000:]
    reference = _trials(f"sqlite:///{alone / 'optuna.db'}")
    assert "PRUNED" in {state for _, state, *_ in reference}  # the pruner's decisions are compared too

    shared = tmp_path / "shared"
    shared.mkdir()
    study = cluster.url()
    doomed = subprocess.Popen(_sweep_worker(study, cluster.url(), shared, "doomed", 0.3), env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    survivor = subprocess.Popen(_sweep_worker(study, cluster.url(), shared, "survivor", 0.3), env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert doomed.stdout is not None
    for line in doomed.stdout:  # a trial of the second generation, after its first user
        if line.startswith("[doomed] claimed gen-1/trial-"):
            killed_unit = line.split()[-1]
            break
    else:
        raise AssertionError("the doomed worker claimed no trial of the second generation")
    time.sleep(0.5)
    doomed.send_signal(signal.SIGKILL)  # mid-trial: its claim stays until its heartbeat goes stale
    doomed.wait()
    output, _ = survivor.communicate(timeout=300)
    assert survivor.returncode == 0, output[-3000:]
    assert f"[survivor] claimed {killed_unit}" in output
    assert _trials(study) == reference  # same trial numbers, parameters, values, reports and pruning
    with psycopg.connect(cluster.url().replace("postgresql+psycopg", "postgresql")) as db:
        claims = dict(db.execute("SELECT unit, claims FROM memevo_work_units WHERE job = 'sweep/toy'").fetchall())
    assert claims.pop(killed_unit) == 2 and set(claims.values()) == {1}  # taken over once, nothing else doubled
