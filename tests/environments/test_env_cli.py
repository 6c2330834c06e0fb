"""``memevo env`` commands through typer's test runner: exit codes, listings, byte-identical synth."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from memevo.core.errors import UserInputError
from memevo.environments.cli import app

FIXTURE = Path(__file__).parents[1] / "fixtures" / "amemgym_small.json"
runner = CliRunner()


def test_validate_clean_file_exits_zero() -> None:
    result = runner.invoke(app, ["validate", str(FIXTURE)])
    assert result.exit_code == 0, result.output
    assert "2 items: 0 errors, 0 warnings" in result.output


def test_validate_lists_violations_and_exits_two(tmp_path: Path) -> None:
    rows = json.loads(FIXTURE.read_text(encoding="utf-8"))
    rows[1]["qas"][0]["answer_choices"] = rows[1]["qas"][0]["answer_choices"][1:]
    bad = tmp_path / "data.json"
    bad.write_text(json.dumps(rows), encoding="utf-8")
    result = runner.invoke(app, ["validate", str(bad)])
    assert result.exit_code == 2
    assert f"ERROR [gold] item {rows[1]['id']}, period 0, question 0:" in result.output
    assert "WARNING [variants]" in result.output


def test_unreadable_file_raises_user_error(tmp_path: Path) -> None:
    bad = tmp_path / "data.json"
    bad.write_text("[{", encoding="utf-8")
    result = runner.invoke(app, ["validate", str(bad)])
    assert isinstance(result.exception, UserInputError)
    assert str(bad) in str(result.exception)


def test_stats_table_and_json() -> None:
    table = runner.invoke(app, ["stats", str(FIXTURE)])
    assert table.exit_code == 0 and "random_baseline" in table.output
    figures = json.loads(runner.invoke(app, ["stats", str(FIXTURE), "--json", "--rounds-update", "3"]).output)
    assert figures["users"] == 2 and figures["rounds"] == 5 + 6 * 3


def test_synth_is_byte_identical_and_valid(tmp_path: Path) -> None:
    args = ["synth", "--users", "2", "--periods", "2", "--questions", "3", "--seed", "5", "--filler-sentences", "2"]
    first = runner.invoke(app, [*args, "--out", str(tmp_path / "a" / "data.json")])
    second = runner.invoke(app, [*args, "--out", str(tmp_path / "b.json")])
    assert first.exit_code == 0 and second.exit_code == 0, first.output
    assert (tmp_path / "a" / "data.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert runner.invoke(app, ["validate", str(tmp_path / "b.json")]).exit_code == 0


def test_synth_bad_flags_are_user_errors(tmp_path: Path) -> None:
    result = runner.invoke(app, ["synth", "--out", str(tmp_path / "x.json"), "--start-date", "01/10/2020"])
    assert isinstance(result.exception, UserInputError) and result.exception.field == "start_date"
    result = runner.invoke(app, ["synth", "--out", str(tmp_path / "x.json"), "--questions", "40"])
    assert isinstance(result.exception, UserInputError) and result.exception.field == "questions"
    assert not (tmp_path / "x.json").exists()


def test_validate_reads_a_dataset_directory(tmp_path: Path) -> None:
    shutil.copy(FIXTURE, tmp_path / "data.json")
    assert runner.invoke(app, ["validate", str(tmp_path)]).exit_code == 0


def test_an_option_the_environment_does_not_take_is_refused_naming_its_flag() -> None:
    for extra in (["--env-option", "dialog_field=dialog_mem0"], ["--dialog-field", "dialog_mem0"]):
        result = CliRunner().invoke(app, ["stats", str(FIXTURE), *extra])
        assert isinstance(result.exception, UserInputError) and result.exception.field == "--dialog-field"
        assert "applies to --environment memorybench only" in str(result.exception)
