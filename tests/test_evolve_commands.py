"""``memevo evolve`` / ``memevo ui`` wiring: bad input is a UserInputError, ui finds the run's store."""

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from memevo.agents.errors import UserInputError
from memevo.evolve import commands


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
