"""A worker run's identity: one id per run folder on a store, a second run its own, a folder not shared refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from memevo.core.errors import UserInputError
from memevo.evolve.databases import check_reachable
from memevo.evolve.workers.identity import IDENTITY_FILE, read_identity, run_identity
from tests.doubles.worker_evolution import write_evolution


def test_a_run_keeps_its_id_and_a_second_folder_gets_its_own(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'claims.db'}"
    first = run_identity(store, "sweep", tmp_path / "one")
    assert read_identity(tmp_path / "one") == first
    assert run_identity(store, "sweep", tmp_path / "one") == first  # another worker of the run, or a resume
    assert run_identity(store, "sweep", tmp_path / "two") != first  # a second run of the config: its own claims


def test_a_folder_without_the_stores_run_is_refused_with_one_line(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'claims.db'}"
    folder = tmp_path / "runs" / "sweep"
    run = run_identity(store, "sweep", folder)
    (folder / IDENTITY_FILE).unlink()  # the same path on a machine that does not mount the first one's folder
    with pytest.raises(UserInputError) as refused:
        run_identity(store, "sweep", folder, share_wait_s=0.2)
    message = str(refused.value)
    assert "\n" not in message and str(folder) in message and "claims.db" in message and run in message


def test_an_unreachable_store_is_one_line_without_its_password() -> None:
    pytest.importorskip("psycopg")
    with pytest.raises(UserInputError) as refused:
        check_reachable("postgresql+psycopg://someone:secret@127.0.0.1:9/memevo", source="command line",
                        field="--store")
    message = str(refused.value)
    assert "--store" in message and "cannot be reached" in message and "secret" not in message


def _evolve(tmp_path: Path, run_dir: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    path = write_evolution(tmp_path, "http://127.0.0.1:9/v1", f"sqlite:///{tmp_path / 'mlflow.db'}", "guarded")
    return subprocess.run([sys.executable, "-m", "memevo.evolve.cli", "evolve", str(path), "--run-dir", str(run_dir),
                           *flags], capture_output=True, text=True, timeout=120, cwd=tmp_path)


@pytest.mark.parametrize(("marker", "kind"), [("ablation.json", "ablation"), ("eval.json", "eval")])
def test_workers_refuse_a_folder_of_another_kind_and_write_nothing(tmp_path: Path, marker: str, kind: str) -> None:
    folder = tmp_path / "other"
    folder.mkdir()
    (folder / "run_kind.json").write_text(f'{{"kind": "{kind}"}}', encoding="utf-8")
    before = sorted(path.name for path in folder.iterdir())
    done = _evolve(tmp_path, folder, "--workers", "2")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"a{'n' if kind[0] in 'ae' else ''} {kind} run" in lines[0], done.stderr
    assert sorted(path.name for path in folder.iterdir()) == before


def test_an_unreachable_store_stops_the_command_with_exit_2(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    done = _evolve(tmp_path, tmp_path / "run", "--store", "postgresql+psycopg://someone@127.0.0.1:9/memevo")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--store" in lines[0] and "cannot be reached" in lines[0], done.stderr
    assert not (tmp_path / "run").exists()


def test_an_sqlite_store_with_a_new_run_folder_starts(tmp_path: Path) -> None:
    """Used to end in FileNotFoundError: the tracker's store was opened in a folder not made yet."""
    path = write_evolution(tmp_path, "http://127.0.0.1:9/v1", "", "new")
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    del config["tracking"]["uri"]  # the tracker's default store: a file in the run folder
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "memevo.evolve.cli", "evolve", str(path), "--run-dir", "runs/new",
                           "--store", f"sqlite:///{tmp_path / 'x.db'}"], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert "FileNotFoundError" not in done.stderr and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert (tmp_path / "runs" / "new" / IDENTITY_FILE).exists()


@pytest.mark.parametrize("uri", ["postgresql+psycopg://someone@127.0.0.1:9/mlflow", "http://127.0.0.1:9"],
                         ids=["database", "server"])
def test_an_unreachable_tracking_store_stops_one_process_before_any_request(tmp_path: Path, uri: str) -> None:
    if uri.startswith("postgresql"):
        pytest.importorskip("psycopg")
    path = write_evolution(tmp_path, "http://127.0.0.1:9/v1", uri, "tracked")
    done = subprocess.run([sys.executable, "-m", "memevo.evolve.cli", "evolve", str(path), "--run-dir", "run"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "tracking.uri" in lines[0] and "cannot be reached" in lines[0], done.stderr
    assert not (tmp_path / "run").exists()
