"""``memevo evolve`` / ``memevo ui`` wiring: bad input is a UserInputError, ui finds the run's store."""

import json
import re
import shlex
import socket
import sys
from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner

from memevo.agents.llm import hub as hub_module
from memevo.core.errors import RunFailedError, UserInputError
from memevo.environments.amemgym.data.io import save_items
from memevo.evolve.cli import main as cli
from memevo.evolve.cli import ui_server
from memevo.evolve.observers.tracker_ui import TrackerUI
from tests.doubles.category_backend import CategoryBackend, CategoryHub, category_world

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")


def app() -> typer.Typer:
    """The memevo command line itself (its root loads ``evolve`` and ``ui`` from ``evolve.commands``)."""
    return cli.app


def test_both_commands_are_registered() -> None:
    result = CliRunner().invoke(app(), ["--help"])
    assert "evolve" in result.output and "ui" in result.output


def test_bad_config_raises_user_input_error(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("seed: {policy: {kind: awi}}\ndata: {path: d.json}\nbudget: {candidates: 0}\n")
    result = CliRunner().invoke(app(), ["evolve", str(config), "--run-dir", str(tmp_path / "run")])
    assert isinstance(result.exception, UserInputError)
    assert result.exception.field == "budget.candidates"


class _CategoryHubContext(CategoryHub):
    """TEST DOUBLE for ``LLMHub(use_cache=..., concurrency=...)`` as ``evolve_command`` opens it: a context manager."""

    def __init__(self, use_cache: bool = True, concurrency: int | None = None) -> None:
        super().__init__(CategoryBackend(category_world(6, 2)))

    def __enter__(self) -> "_CategoryHubContext":
        return self

    def __exit__(self, *exc: object) -> None:
        return None


QUICK = {
    "seed": {"policy": {"kind": "awi", "update_every": 2, "short_term": 0, "prompts": {"memory_types": "- commute"}}},
    "data": {"path": "data.json"},
    "split": {"train": 2, "val": 2, "test": 2},
    "budget": {"generations": 1, "candidates": 1},
    "episode": {"rounds_init": 1, "rounds_update": 1},
    "feedback": {"mode": "complete"},
    "optuna": {"n_startup_trials": 1},
}


def run_evolve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Path, *flags: str, **sections: object) -> str:
    """``memevo evolve`` on a tiny category world through the double hub; returns what it printed."""
    save_items(category_world(6, 2), tmp_path / "data.json")
    config = tmp_path / "quick.yaml"
    config.write_text(yaml.safe_dump({**QUICK, **sections}))
    monkeypatch.setattr(hub_module, "LLMHub", _CategoryHubContext)
    result = CliRunner().invoke(app(), ["evolve", str(config), "--run-dir", str(run), *flags])
    assert result.exit_code == 0, result.output
    return result.stdout  # progress lines and library warnings go to stderr


def test_resume_starts_a_new_run_and_reruns_a_finished_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "not yet"
    first = run_evolve(tmp_path, monkeypatch, run, "--resume")
    assert (run / "result.json").exists()
    again = run_evolve(tmp_path, monkeypatch, run, "--resume")
    assert again == first and "spend: " in again


def test_split_without_test_users_is_a_user_error(tmp_path: Path) -> None:
    config = tmp_path / "no-test.yaml"
    config.write_text(yaml.safe_dump({**QUICK, "split": {"train": 2, "val": 2, "test": 0}}))
    result = CliRunner().invoke(app(), ["evolve", str(config), "--run-dir", str(tmp_path / "run")])
    assert isinstance(result.exception, UserInputError) and result.exception.field == "split.test"
    assert not (tmp_path / "run").exists()


def test_evolve_prints_summary_and_the_ui_command_of_its_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "my run"
    output = run_evolve(tmp_path, monkeypatch, run)
    assert re.search(r"objective: accuracy .*; seed \w{8}, best \w{8}", output)
    accuracy = re.search(r"accuracy: seed [\d.]+ \[([-\d.]+), ([-\d.]+)\] -> best [\d.]+ \[", output)
    assert accuracy and 0 <= float(accuracy[1]) <= float(accuracy[2]) <= 1  # an accuracy interval stays in [0, 1]
    assert "  memory score: " in output and "  references: random " in output and "unpriced" in output
    assert "no candidate beat the seed" not in output
    ui_line = next(line for line in output.splitlines() if line.startswith("MLflow UI: "))
    argv = shlex.split(ui_line.removeprefix("MLflow UI: "))
    assert argv == ["memevo", "ui", "--run-dir", str(run)]

    seen = _fake_mlflow(monkeypatch, tmp_path)
    ui = CliRunner().invoke(app(), [*argv[1:], "--port", str(_free_port())])
    assert ui.exit_code == 0 and re.search(r"/#/experiments/\d+/runs\?workflowType=machine_learning&viewStateShareKey=memevo-runs ", ui.output)
    store = seen["cmd"][seen["cmd"].index("--backend-store-uri") + 1]
    assert store == f"sqlite:///{(run / 'mlflow.db').resolve()}" and (run / "mlflow.db").exists()


def test_untracked_evolve_prints_no_ui_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    output = run_evolve(tmp_path, monkeypatch, tmp_path / "run", tracking={"enabled": False}, budget={"generations": 0})
    assert "spend:" in output and "MLflow UI" not in output


def test_ui_uses_the_store_of_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text('{"tracking": {"uri": null}}')
    seen = _fake_mlflow(monkeypatch, tmp_path)
    port = _free_port()
    result = CliRunner().invoke(app(), ["ui", "--run-dir", str(run), "--port", str(port)])
    assert result.exit_code == 0, result.output
    assert f"http://127.0.0.1:{port}" in result.output
    command = seen["cmd"]
    assert command[command.index("--backend-store-uri") + 1] == f"sqlite:///{(run / 'mlflow.db').resolve()}"
    assert command[command.index("--host") + 1] == "127.0.0.1"
    assert command[command.index("--workers") + 1] == "1"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _fake_mlflow(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, delay_s: float = 0.5) -> dict[str, object]:
    """Starts the ``tests.doubles.health_server`` double instead of ``mlflow ui``: records the command memevo would
    have run, and (after the double ran) the environment it got."""
    seen: dict[str, object] = {}
    record = tmp_path / "server.json"

    def command(ui: TrackerUI, uri: str, *, port: int, workers: int) -> list[str]:
        seen["cmd"] = real(ui, uri, port=port, workers=workers)
        return [sys.executable, "-m", "tests.doubles.health_server", str(port), str(delay_s), str(record)]

    real = ui_server.server_command
    monkeypatch.setattr(ui_server, "server_command", command)
    seen["record"] = record
    return seen


def test_ui_announces_its_address_only_once_the_server_answers(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "config.json").write_text('{"tracking": {"uri": null}}')
    seen = _fake_mlflow(monkeypatch, tmp_path, delay_s=1.5)
    result = CliRunner().invoke(app(), ["ui", "--run-dir", str(tmp_path), "--port", str(_free_port())])
    assert result.exit_code == 0, result.output
    assert json.loads(Path(str(seen["record"])).read_text())["job_execution"] == "false"
    lines = result.output.splitlines()
    assert lines[0].startswith("starting the MLflow UI") and lines[-1].startswith("MLflow UI: http://127.0.0.1:")
    dead = _fake_mlflow(monkeypatch, tmp_path, delay_s=-1)
    failed = CliRunner().invoke(app(), ["ui", "--run-dir", str(tmp_path), "--port", str(_free_port())])
    assert isinstance(failed.exception, RunFailedError) and "exited with code 3 before it served" in str(failed.exception)
    assert "MLflow UI: http" not in failed.output and dead["cmd"]


def test_ui_on_a_busy_port_fails_before_starting_mlflow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "config.json").write_text('{"tracking": {"uri": null}}')
    seen = _fake_mlflow(monkeypatch, tmp_path)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        result = CliRunner().invoke(app(), ["ui", "--run-dir", str(tmp_path), "--port", str(busy.getsockname()[1])])
    assert isinstance(result.exception, RunFailedError) and "in use" in str(result.exception)
    assert "cmd" not in seen


def test_ui_opens_the_store_of_an_ablation_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    manifest = {"name": "abl", "arms": ["a"], "seeds": [0], "baseline": "a", "ci_method": "t", "confidence": 0.95,
                "config": {}, "tracking_uri": f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"}
    (tmp_path / "ablation.json").write_text(json.dumps(manifest))
    seen = _fake_mlflow(monkeypatch, tmp_path)
    result = CliRunner().invoke(app(), ["ui", "--run-dir", str(tmp_path), "--port", str(_free_port())])
    assert result.exit_code == 0, result.output
    assert seen["cmd"][seen["cmd"].index("--backend-store-uri") + 1] == f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    assert not (tmp_path / "store").exists()  # looking for the experiment's page created no store


def test_ui_without_a_run_is_a_user_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app(), ["ui", "--run-dir", str(tmp_path)])
    assert isinstance(result.exception, UserInputError)


def test_a_run_that_kept_the_seed_says_so_plainly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    output = run_evolve(tmp_path, monkeypatch, tmp_path / "run", feedback={"mode": "none"})
    assert "no candidate beat the seed on the validation users: the best is the seed" in output
