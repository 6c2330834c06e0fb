"""A new local MLflow store opened by several processes at once is created once: every process opens it, none
dies on "table already exists" (``evolve/tracking/stores.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

OPENER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from memevo.evolve.tracking.stores import open_tracking_store
    go = Path(sys.argv[2])
    while not go.exists():
        time.sleep(0.001)
    client = open_tracking_store(sys.argv[1])
    client.get_experiment_by_name("shared") or client.search_experiments()
    print("opened", flush=True)
""")


def test_processes_creating_one_new_store_at_once_all_open_it(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'shared' / 'mlflow.db'}"
    (tmp_path / "shared").mkdir()
    go = tmp_path / "go"
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "1"}
    openers = [subprocess.Popen([sys.executable, "-c", OPENER, uri, str(go)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env) for _ in range(3)]
    time.sleep(3.0)  # every opener has imported MLflow and waits for the go
    go.touch()
    results = [opener.communicate(timeout=120) for opener in openers]
    for opener, (out, err) in zip(openers, results, strict=True):
        assert opener.returncode == 0 and out.strip() == "opened", err[-2000:]
    assert sorted(path.name for path in (tmp_path / "shared").iterdir()) == ["mlflow.db"]  # no lock file left


def test_two_evolutions_starting_at_once_on_one_new_shared_store_both_finish(tmp_path: Path) -> None:
    import sqlite3

    import yaml

    from memevo.environments.amemgym.data.io import save_items
    from tests.doubles.category_backend import CategoryBackend, category_world
    from tests.doubles.fault_server import FaultServer

    world = category_world(n_users=3, n_periods=1)
    save_items(world, tmp_path / "data.json")
    store = tmp_path / "shared" / "mlflow.db"
    store.parent.mkdir()
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "1", "OPENAI_API_KEY": "test",
           "MEMEVO_CACHE_DIR": str(tmp_path / "cache")}
    with FaultServer(CategoryBackend(world).http_reply) as server:
        llm = {"model": "category-double", "base_url": server.url, "max_retries": 0}
        (tmp_path / "evolve.yaml").write_text(yaml.safe_dump({
            "name": "shared", "data": {"path": "data.json"}, "seed": {"policy": {"kind": "awi", "llm": llm}},
            "split": {"train": 1, "val": 1, "test": 1}, "budget": {"generations": 0}, "upper_bound": False,
            "episode": {"rounds_init": 1, "rounds_update": 1}, "llm": {"proposer": llm},
            "tracking": {"uri": f"sqlite:///{store}"}}), encoding="utf-8")
        runs = [subprocess.Popen([sys.executable, "-m", "memevo.evolve.cli", "evolve", "evolve.yaml", "--run-dir",
                                  f"run-{number}"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for number in range(2)]
        results = [run.communicate(timeout=600) for run in runs]
    for run, (_, err) in zip(runs, results, strict=True):
        assert run.returncode == 0 and "Traceback" not in err, err[-3000:]
    with sqlite3.connect(store) as db:
        experiments = db.execute("SELECT name FROM experiments WHERE lifecycle_stage = 'active'").fetchall()
        parents = db.execute("SELECT COUNT(*) FROM runs WHERE name = 'shared'").fetchone()[0]
    assert ("shared",) in experiments and len([e for e in experiments if e == ("shared",)]) == 1
    assert parents == 2  # one parent run per evolution, in the one experiment


def test_a_dataset_another_evolution_added_first_is_linked_not_lost(tmp_path: Path, monkeypatch) -> None:
    """The race behind a shared store's unique-key error, made to happen: between this evolution's look for its
    dataset and its insert, another evolution adds the same one. The parent run still gets its input."""
    from mlflow.data.meta_dataset import MetaDataset
    from mlflow.data.sources import LocalArtifactDatasetSource
    from mlflow.entities import DatasetInput
    from mlflow.exceptions import MlflowException
    from sqlalchemy.exc import IntegrityError

    from memevo.evolve.tracking.store import Tracker

    uri = f"sqlite:///{tmp_path / 'shared.db'}"
    first, second = (Tracker(run_dir=tmp_path / name, uri=uri, experiment="shared-split") for name in ("a", "b"))
    dataset = MetaDataset(source=LocalArtifactDatasetSource("data.json"), name="users", digest="d1")._to_mlflow_entity()
    inputs = [DatasetInput(dataset)]
    for tracker in (first, second):
        (tracker.run_dir / "config.json").parent.mkdir(parents=True, exist_ok=True)
        (tracker.run_dir / "config.json").write_text("{}")
    real = second.client.log_inputs

    def lose_the_race(run_id: str, datasets: list) -> None:
        first.start("a", {}, {}, inputs[0])  # the other evolution inserts the dataset row first
        monkeypatch.setattr(second.client, "log_inputs", real)
        raise MlflowException("UNIQUE constraint failed") from IntegrityError("INSERT", {}, Exception("unique"))

    monkeypatch.setattr(second.client, "log_inputs", lose_the_race)
    second.start("b", {}, {}, inputs[0])
    for tracker in (first, second):
        run = tracker.client.get_run(tracker.parent_id)
        assert [d.dataset.digest for d in run.inputs.dataset_inputs] == ["d1"]


def test_a_prompt_another_evolution_created_first_gets_this_evolution_s_version(tmp_path: Path, monkeypatch) -> None:
    """The race behind a shared store's "Prompt already exists": between this evolution's look for the prompt and its
    create, another evolution creates it. Both candidates still get their version."""
    import mlflow
    from mlflow.exceptions import MlflowException
    from mlflow.protos.databricks_pb2 import RESOURCE_ALREADY_EXISTS

    from memevo.evolve.tracking.store import Tracker

    uri = f"sqlite:///{tmp_path / 'shared.db'}"
    first, second = (Tracker(run_dir=tmp_path / name, uri=uri, experiment="shared-prompts") for name in ("a", "b"))
    real = mlflow.genai.register_prompt

    def lose_the_race(**_: object) -> None:
        monkeypatch.setattr(mlflow.genai, "register_prompt", real)
        first.register_prompts("shared", "cand-a", {"memory_types": "a"}, best=False, tags={"candidate_id": "cand-a"},
                               run_id=None)
        raise MlflowException("Prompt (name=shared-memory_types) already exists.", RESOURCE_ALREADY_EXISTS)

    monkeypatch.setattr(mlflow.genai, "register_prompt", lose_the_race)
    second.register_prompts("shared", "cand-b", {"memory_types": "b"}, best=False, tags={"candidate_id": "cand-b"},
                            run_id=None)
    versions = {version.tags["candidate_id"]: version.template
                for version in second.client.search_prompt_versions("shared-memory_types")}
    assert versions == {"cand-a": "a", "cand-b": "b"}


@pytest.mark.parametrize("uri", ["sqlite:///mlflow.db", "sqlite:////tmp/a b/m.db", "sqlite:////tmp/a%20b/m.db",
                                 "sqlite:///runs/x.db?timeout=30", "sqlite:///:memory:", "sqlite:///",
                                 "postgresql://u@h/db"])
def test_the_sqlite_file_is_read_as_sqlalchemy_reads_it(uri: str) -> None:
    from sqlalchemy.engine import make_url

    from memevo.evolve.databases import sqlite_file

    database = make_url(uri).database if uri.startswith("sqlite") else None
    expected = Path(database) if database and database != ":memory:" else None
    assert sqlite_file(uri) == expected


def test_a_new_store_is_created_without_mlflow_s_set_up_lines(tmp_path: Path) -> None:
    """The run's terminal shows memevo's lines, not MLflow's INFO lines about creating and updating its tables."""
    opener = "import sys; from memevo.evolve.tracking.stores import open_tracking_store; open_tracking_store(sys.argv[1])"
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "1"}
    done = subprocess.run([sys.executable, "-c", opener, f"sqlite:///{tmp_path / 'mlflow.db'}"], capture_output=True,
                          text=True, env=env, check=False, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "mlflow.db").is_file()
    assert "database tables" not in done.stderr + done.stdout, done.stderr


def test_workers_opening_their_trackers_at_once_note_one_tracking_id(tmp_path: Path, monkeypatch) -> None:
    """Two workers of one run folder open their trackers at once: the second looked for ``mlflow_ids.json`` before
    the first noted its tracking id. It takes the first one's, so their runs have one parent."""
    from memevo.evolve.tracking import store

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    first = store.Tracker(run_dir=tmp_path / "run", uri=uri, experiment="workers")
    real, looks = store.read_ids, iter([None])  # its first look: before the first worker's file was there
    monkeypatch.setattr(store, "read_ids", lambda path: next(looks, real(path)))
    second = store.Tracker(run_dir=tmp_path / "run", uri=uri, experiment="workers")
    assert second.tracking_id == first.tracking_id
    assert store.read_ids(tmp_path / "run" / "mlflow_ids.json") == {"tracking_id": first.tracking_id}
    assert [path.name for path in (tmp_path / "run").iterdir()] == ["mlflow_ids.json"]  # no draft left
