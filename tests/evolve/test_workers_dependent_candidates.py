"""The strategies whose candidates depend on each other on two worker processes: the sequential race (the default;
each round's plays are the units) and one candidate at a time (validation first, ``first_accepted``). The run ends as
one process's ends (records, trials, MLflow runs and their metrics, candidate costs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.doubles.category_backend import CategoryBackend
from tests.doubles.fault_server import FaultServer
from tests.doubles.worker_evolution import outcome, trials, world, write_evolution

pytestmark = pytest.mark.timeout(900)
ROOT = Path(__file__).resolve().parents[2]


def _env(folder: Path) -> dict[str, str]:
    return {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "1", "OPENAI_API_KEY": "test",
            "MEMEVO_CACHE_DIR": str(folder / "cache"), "PYTHONPATH": str(ROOT)}


def _racing(folder: Path, url: str, strategy: dict[str, Any], max_calls: int | None, *,
            width: int | None = None) -> None:
    path = write_evolution(folder, url, f"sqlite:///{folder / 'mlflow.db'}", "race")
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    config["strategy"] = strategy  # the default acceptance: sequential
    config["budget"]["max_calls"] = max_calls
    config["episode"]["candidate_concurrency"] = width
    path.write_text(yaml.safe_dump(config), encoding="utf-8")


def _records(run_dir: Path) -> dict[str, Any]:
    """Every generation's race record and every candidate's evaluation summaries and cost."""
    found = {}
    for path in sorted([*run_dir.glob("generations/*/race*.json"), *run_dir.glob("evals/*/*.json")]):
        record = json.loads(path.read_text(encoding="utf-8"))
        if path.name == "cost.json":
            record.pop("wall_s")  # time waited, not a count
        found[str(path.relative_to(run_dir))] = record
    return found


def _mlflow(folder: Path) -> dict[str, dict[str, float]]:
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{folder / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("race")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    named = {run.info.run_name: {key: value for key, value in run.data.metrics.items()
                                 if "seconds" not in key and key != "spend/cancelled_calls"}
             for run in runs}  # times, and the requests in flight when a pruned play stopped, depend on timing
    assert len(named) == len(runs)  # each generation and candidate logged once
    return named


def _claims(run_dir: Path) -> dict[str, int]:
    """How many times each unit was claimed."""
    import sqlite3

    with sqlite3.connect(run_dir.parent / "workers.db") as db:
        return dict(db.execute("SELECT unit, claims FROM memevo_work_units").fetchall())


def _two_workers(shared: Path, command: list[str]) -> None:
    workers = [subprocess.Popen([*command, "--store", f"sqlite:///{shared / 'workers.db'}"], cwd=shared,
                                env=_env(shared), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for _ in range(2)]
    for worker in workers:
        _, errors = worker.communicate(timeout=600)
        assert worker.returncode == 0, errors[-3000:]


@pytest.mark.parametrize(("strategy", "max_calls"), [
    ({"race_users": 1}, None), ({"race_users": 1, "first_accepted": False}, None),
    ({"race_users": 1, "first_accepted": False}, 220),  # a call budget that ends the run
    ({"acceptance": "mean", "order": "validation_first", "first_accepted": True}, None),
], ids=["race-first-accepted", "race-all-together", "race-budget", "one-at-a-time"])
def test_two_workers_run_as_one_process(tmp_path: Path, strategy: dict[str, Any], max_calls: int | None) -> None:
    backend = CategoryBackend(world())
    alone, shared = tmp_path / "alone", tmp_path / "shared"
    command = [sys.executable, "-m", "memevo.evolve.cli", "evolve", "evolve.yaml", "--run-dir", "run", "--no-cache"]
    with FaultServer(backend.http_reply, latency_s=0.02) as server:
        _racing(alone, server.url, strategy, max_calls)
        done = subprocess.run(command, cwd=alone, env=_env(alone), capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        _racing(shared, server.url, strategy, max_calls)  # two workers started together, as on two machines
        _two_workers(shared, command)
    assert outcome(shared / "run") == outcome(alone / "run")
    if max_calls is not None:
        assert "call budget" in json.dumps(outcome(alone / "run"))
    records = _records(shared / "run")
    if "acceptance" not in strategy:
        assert any(len(record["rounds"]) > 1 for name, race in records.items() if name.endswith("race.json")
                   for record in race)  # a race went past its first round
    assert records == _records(alone / "run")
    claims = _claims(shared / "run")
    assert set(claims.values()) == {1}  # every unit once (which worker did it depends on timing)
    assert any(("/settle" if "acceptance" in strategy else "/race-") in unit for unit in claims)
    assert {unit.split("/")[-2] for unit in claims if unit.startswith(("gen-000/", "finish/"))} == {
        "gen-000", "train", "val", "test"}, sorted(claims)  # the seed's first users and the end's test users are units too
    assert trials(f"sqlite:///{shared / 'run' / 'optuna.db'}", "race") == trials(
        f"sqlite:///{alone / 'run' / 'optuna.db'}", "race")
    assert _mlflow(shared) == _mlflow(alone)


def test_a_budget_spent_mid_generation_starts_the_candidates_one_process_starts(tmp_path: Path) -> None:
    """One process starts a generation's candidates at once, all judged at the spend its plan left; workers holding
    one candidate each start the third after the first two spent the budget, unless they judge it there too."""
    strategy = {"acceptance": "mean", "order": "train_first", "minibatch": None}
    backend = CategoryBackend(world())
    alone, shared = tmp_path / "alone", tmp_path / "shared"
    command = [sys.executable, "-m", "memevo.evolve.cli", "evolve", "evolve.yaml", "--run-dir", "run", "--no-cache"]
    with FaultServer(backend.http_reply, latency_s=0.02) as server:
        _racing(alone, server.url, strategy, 250)  # generation 1's plan ends near 210 calls, a candidate costs ~170
        done = subprocess.run(command, cwd=alone, env=_env(alone), capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        _racing(shared, server.url, strategy, 250, width=1)
        _two_workers(shared, command)
    decided = outcome(alone / "run")
    assert len(decided["history"][1]["train"]) == 3 and "call budget" in decided["stop_reason"]
    assert outcome(shared / "run") == decided
    assert _records(shared / "run") == _records(alone / "run")
    assert _mlflow(shared) == _mlflow(alone)
