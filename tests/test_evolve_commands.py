"""``memevo evolve`` / ``memevo ui`` wiring: bad input is a UserInputError, ui finds the run's store."""

import shlex
from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner

from memevo.agents.errors import UserInputError
from memevo.agents.llm import hub as hub_module
from memevo.environments.data.io import save_items
from memevo.evolve import commands
from tests.doubles.category_backend import CategoryBackend, CategoryHub, category_world

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")


def app() -> typer.Typer:
    application = typer.Typer()
    commands.register_evolve_commands(application)
    return application


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
    return result.output


def test_resume_starts_a_new_run_and_reruns_a_finished_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "not yet"
    first = run_evolve(tmp_path, monkeypatch, run, "--resume")
    assert (run / "result.json").exists()
    again = run_evolve(tmp_path, monkeypatch, run, "--resume")
    def summary(output: str) -> list[str]:
        return [line for line in output.splitlines() if " INFO " not in line]  # MLflow's own log lines

    assert summary(again) == summary(first) and "spend: " in again


def test_split_without_test_users_is_a_user_error(tmp_path: Path) -> None:
    config = tmp_path / "no-test.yaml"
    config.write_text(yaml.safe_dump({**QUICK, "split": {"train": 2, "val": 2, "test": 0}}))
    result = CliRunner().invoke(app(), ["evolve", str(config), "--run-dir", str(tmp_path / "run")])
    assert isinstance(result.exception, UserInputError) and result.exception.field == "split.test"
    assert not (tmp_path / "run").exists()


def test_evolve_prints_summary_and_the_ui_command_of_its_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "my run"
    output = run_evolve(tmp_path, monkeypatch, run)
    assert "seed: test accuracy" in output and "best: test accuracy" in output
    ui_line = next(line for line in output.splitlines() if line.startswith("MLflow UI: "))
    argv = shlex.split(ui_line.removeprefix("MLflow UI: "))
    assert argv == ["memevo", "ui", "--run-dir", str(run)]

    seen = {}
    monkeypatch.setattr(commands.subprocess, "run", lambda command, check: seen.setdefault("cmd", command))
    assert CliRunner().invoke(app(), argv[1:]).exit_code == 0
    store = seen["cmd"][seen["cmd"].index("--backend-store-uri") + 1]
    assert store == f"sqlite:///{(run / 'mlflow.db').resolve()}" and (run / "mlflow.db").exists()


def test_untracked_evolve_prints_no_ui_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    output = run_evolve(tmp_path, monkeypatch, tmp_path / "run", tracking={"enabled": False}, budget={"generations": 0})
    assert "spend:" in output and "MLflow UI" not in output


def test_ui_uses_the_store_of_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text('{"tracking": {"uri": null}}')
    seen = {}
    monkeypatch.setattr(commands.subprocess, "run", lambda command, check: seen.setdefault("cmd", command))
    result = CliRunner().invoke(app(), ["ui", "--run-dir", str(run), "--port", "5111"])
    assert result.exit_code == 0, result.output
    assert "http://127.0.0.1:5111" in result.output
    command = seen["cmd"]
    assert command[command.index("--backend-store-uri") + 1] == f"sqlite:///{(run / 'mlflow.db').resolve()}"
    assert command[command.index("--host") + 1] == "127.0.0.1"


def test_ui_without_a_run_is_a_user_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app(), ["ui", "--run-dir", str(tmp_path)])
    assert isinstance(result.exception, UserInputError)
