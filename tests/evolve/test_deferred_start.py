"""Start-up work deferred until the first request is in flight: when it runs, where, and what an evolution's first
request finds loaded."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from mlflow import MlflowClient

from memevo.agents.llm.accounting import Accounting
from memevo.environments.amemgym.data.io import save_items
from memevo.evolve.deferred import DeferredStart
from tests.doubles.category_backend import CategoryBackend, category_world
from tests.doubles.fault_server import FaultServer


def _recorder(ran: list[tuple[str, str]], name: str) -> Callable[[], str]:
    def work() -> str:
        ran.append((name, threading.current_thread().name))
        return name

    return work


def test_deferred_work_waits_for_the_first_request_then_runs_in_order_in_one_thread() -> None:
    accounting, ran = Accounting(), list[tuple[str, str]]()
    start = DeferredStart(thread_name="deferred-test")
    later = start.defer(_recorder(ran, "later"))
    sooner = start.defer(_recorder(ran, "sooner"), first=True)
    start.watch(accounting)
    accounting.record_retry("agent")  # any count starts it: here, before any request, to show none is needed
    assert (sooner.result(), later.result()) == ("sooner", "later")
    assert ran == [("sooner", "deferred-test"), ("later", "deferred-test")]


def test_nothing_runs_before_a_count_and_a_piece_asked_for_runs_at_once_in_the_caller_once() -> None:
    accounting, ran = Accounting(), list[tuple[str, str]]()
    start = DeferredStart(thread_name="deferred-test")
    piece = start.defer(_recorder(ran, "tracker"))
    start.watch(accounting)
    assert ran == []
    assert piece.result() == "tracker"
    accounting.book("agent")  # starts the thread: the piece is taken, not run again
    assert piece.result() == "tracker"
    for thread in threading.enumerate():
        if thread.name == "deferred-test":
            thread.join()
    assert ran == [("tracker", threading.current_thread().name)]


def test_what_the_work_raised_is_raised_to_whoever_asks() -> None:
    def broken() -> None:
        raise ValueError("store damaged")

    start = DeferredStart()
    piece = start.defer(broken)
    start.start()
    with pytest.raises(ValueError, match="store damaged"):
        piece.result()


def test_a_run_that_stopped_watching_is_not_started_by_the_next_runs_requests() -> None:
    accounting, ran = Accounting(), list[tuple[str, str]]()
    start = DeferredStart()
    start.defer(_recorder(ran, "tracker"))
    start.watch(accounting)
    start.stop_watching()
    accounting.book("agent")
    assert [thread for thread in threading.enumerate() if thread.name == start.thread_name] == []
    assert ran == []


FIRST_REQUEST = """
import sys
from memevo.agents.llm import accounting

loaded: list[str] = []
book = accounting.Accounting.book

def first_book(self, role):
    if not loaded:
        loaded.extend(sys.modules)
    book(self, role)

accounting.Accounting.book = first_book
from memevo.evolve.cli.main import main

sys.argv = ["memevo", "evolve", {config!r}, "--run-dir", {run_dir!r}, "--no-cache"]
try:
    main()
finally:
    print("\\n".join(loaded))
"""


def test_the_evolve_commands_first_request_waits_for_no_heavy_import_and_the_run_is_still_tracked(
        tmp_path: Path) -> None:
    """MLflow's store, Optuna's study, DSPy and scipy.stats load once the first request is in flight (or later)."""
    save_items(category_world(6, 2), tmp_path / "data.json")
    backend = CategoryBackend(category_world(6, 2), proposer_mode="mixed")
    with FaultServer(backend.http_reply, latency_s=0.01) as server:
        llm = {"model": "category-double", "base_url": server.url, "max_retries": 0}
        config = {
            "name": "first-request", "components": ["memory_types"], "data": {"path": str(tmp_path / "data.json")},
            "seed": {"policy": {"kind": "awi", "update_every": 2, "llm": llm,
                                "prompts": {"memory_types": "- commute (how the user gets to work)"}}},
            "split": {"train": 2, "val": 2, "test": 2}, "budget": {"generations": 1, "candidates": 1},
            "episode": {"max_periods": 1}, "llm": {"proposer": llm}, "tracking": {"enabled": True},
            "upper_bound": False, "objective": "accuracy"}
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        code = FIRST_REQUEST.format(config=str(tmp_path / "config.yaml"), run_dir=str(tmp_path / "run"))
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                              env={**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"})
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = {name.split(".")[0] for name in done.stdout.splitlines()}
    assert "memevo" in loaded and not loaded & {"mlflow", "dspy", "optuna", "scipy", "matplotlib", "pandas"}
    assert "MLflow UI: memevo ui" in done.stdout
    client = MlflowClient(f"sqlite:///{tmp_path / 'run' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("first-request")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    assert {run.data.tags.get("memevo.role") for run in runs} >= {"evolution", "candidate"}
