"""Every help page reads in an 80-column terminal: full option names, flags without a value, an example."""

from __future__ import annotations

import re

import pytest
from typer.core import TyperGroup
from typer.testing import CliRunner

from memevo.evolve.cli.help_pages import PAGES
from memevo.evolve.cli.main import COMMANDS, app, load_command


def _command_paths() -> list[str]:
    paths = []
    for name in COMMANDS:
        command = load_command(name)
        paths.append(name)
        if isinstance(command, TyperGroup):
            paths += [f"{name} {sub}" for sub in command.commands]
    return paths


PATHS = _command_paths()


def _help(args: list[str]) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    return result.output


def test_every_command_has_a_page_and_every_page_a_command() -> None:
    assert sorted(PATHS) == sorted(PAGES)


@pytest.mark.parametrize("path", ["", *PATHS])
def test_help_at_80_columns_shows_whole_names_flags_and_an_example(path: str) -> None:
    args = path.split()
    output = _help(args)
    assert "…" not in output and "<bool>" not in output, output
    assert all(len(line) <= 80 for line in output.splitlines()), output
    assert re.search(rf"\n  Example:\n    memevo {path}", output), output
    if args:
        command = load_command(args[0])
        command = command.commands[args[1]] if len(args) > 1 else command  # type: ignore[attr-defined]
        for param in command.params:
            for name in [*param.opts, *param.secondary_opts]:
                if name.startswith("--"):
                    assert f"{name} " in output or f"{name}\n" in output, (name, output)


def test_the_command_list_shows_each_summary_whole() -> None:
    output = _help([])
    for name in COMMANDS:
        assert f"{name}  " in output and PAGES[name].summary in output, output


@pytest.mark.parametrize("path", PATHS)
def test_an_unknown_flag_still_exits_2(path: str) -> None:
    result = CliRunner().invoke(app, [*path.split(), "--no-such-flag"], env={"COLUMNS": "80"})
    assert result.exit_code == 2 and "No such option: --no-such-flag" in result.output, result.output
