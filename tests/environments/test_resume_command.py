"""The resume command is the running command as typed, with ``--resume`` (``environments/resume.py``), and
``resumable`` turns a signal, an endpoint failure, a full disk (however wrapped) or a damaged run file into one line
that holds it."""

from __future__ import annotations

import asyncio
import errno
import os
import signal
from enum import Enum
from pathlib import Path
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from memevo.agents.llm.protocol import LLMError
from memevo.core.errors import DamagedFileError, Interrupted, RunFailedError, UserInputError
from memevo.environments.resume import Terminated, resumable


class Kind(str, Enum):
    llm = "llm"
    template = "template"


def _app(failure: BaseException | None, seen: list[str]) -> typer.Typer:
    app = typer.Typer()

    @app.command("run")
    def run(
        ctx: typer.Context,
        config: Annotated[Path, typer.Argument()],
        out: Annotated[Path, typer.Option("--out")] = Path("runs/x"),
        resume: Annotated[bool, typer.Option("--resume")] = False,
        kind: Annotated[Kind, typer.Option("--kind")] = Kind.llm,
        constrained: Annotated[bool | None, typer.Option("--constrained/--free")] = None,
        no_cache: Annotated[bool, typer.Option("--no-cache")] = False,
        width: Annotated[int | None, typer.Option("--width")] = None,
        tag: Annotated[list[str] | None, typer.Option("--tag")] = None,
    ) -> None:
        with resumable(ctx) as command:
            seen.append(command)
            if failure is not None:
                raise failure

    return app


@pytest.mark.parametrize(("args", "expected"), [
    (["c.yaml"], "memevo run c.yaml --resume"),
    (["my config.yaml", "--out", "o", "--kind", "template", "--free", "--no-cache", "--width", "3", "--resume"],
     "memevo run 'my config.yaml' --out o --kind template --free --no-cache --width 3 --resume"),
    (["c.yaml", "--constrained", "--kind", "llm"], "memevo run c.yaml --constrained --resume"),  # defaults left out
    (["c.yaml", "--tag", "a b", "--tag", "c"], "memevo run c.yaml --tag 'a b' --tag c --resume"),
])
def test_the_resume_command_is_the_command_as_given_with_resume(args: list[str], expected: str) -> None:
    seen: list[str] = []
    result = CliRunner().invoke(_app(None, seen), args)
    assert result.exit_code == 0, result.output
    assert seen == [expected]


@pytest.mark.parametrize(("failure", "raised", "line"), [
    (LLMError("m failed after 6 attempt(s): HTTP 429: slow down"), RunFailedError,
     "m failed after 6 attempt(s): HTTP 429: slow down; finished work is saved, resume with: memevo run c --resume"),
    (OSError(errno.ENOSPC, "No space left on device", "/runs/x/a.json"), RunFailedError,
     "the disk is full (writing /runs/x/a.json): No space left on device; finished work is saved: free space, then "
     "resume with: memevo run c --resume"),
    (ExceptionGroup("users", [RuntimeError("(sqlite3.OperationalError) database or disk is full\n[SQL: INSERT]")]),
     RunFailedError, "the disk is full: database or disk is full; finished work is saved: free space, then resume "
     "with: memevo run c --resume"),
    (OSError(errno.EACCES, "Permission denied", "/runs/x"), RunFailedError,
     "[Errno 13] Permission denied: '/runs/x'; finished work is saved: fix that, then resume with: memevo run c "
     "--resume"),
    (DamagedFileError("damaged: cut short", source="/runs/x/plan.json", remedy="restore it from a backup"),
     DamagedFileError, "/runs/x/plan.json: damaged: cut short; restore it from a backup; resume with: memevo run c "
     "--resume"),
    (KeyboardInterrupt(), Interrupted, "interrupted by SIGINT; finished work is saved, resume with: memevo run c --resume"),
    (UserInputError("bad", field="x"), UserInputError, "field 'x': bad"),  # a resume would repeat it: no hint
])
def test_a_failure_a_resume_fixes_carries_the_command(failure: BaseException, raised: type[Exception], line: str) -> None:
    result = CliRunner().invoke(_app(failure, []), ["c"])
    assert type(result.exception) is raised and str(result.exception) == line


def _cancelled_while_handling(stop: KeyboardInterrupt) -> BaseException:
    try:
        raise stop
    except KeyboardInterrupt:
        try:
            raise asyncio.CancelledError()  # a task's clean-up cancelled while the signal's exception passed through
        except asyncio.CancelledError as cancelled:
            return cancelled


def test_a_cancellation_raised_while_handling_sigterm_is_still_the_interruption() -> None:
    result = CliRunner().invoke(_app(_cancelled_while_handling(Terminated()), []), ["c"])
    assert isinstance(result.exception, Interrupted) and result.exception.exit_code == 143
    assert str(result.exception) == "interrupted by SIGTERM; finished work is saved, resume with: memevo run c --resume"


def test_a_cancellation_with_no_signal_behind_it_is_not_turned_into_one() -> None:
    with pytest.raises(asyncio.CancelledError):  # not an Exception: the runner passes it on as it came
        CliRunner().invoke(_app(asyncio.CancelledError(), []), ["c"])


def test_sigterm_during_the_work_is_an_interruption_with_exit_143_and_the_handler_is_restored() -> None:
    before = signal.getsignal(signal.SIGTERM)
    app = typer.Typer()

    @app.command("run")
    def run(ctx: typer.Context, config: str) -> None:
        with resumable(ctx):
            os.kill(os.getpid(), signal.SIGTERM)
            signal.pause()  # never reached: the handler raises first

    result = CliRunner().invoke(app, ["c"])
    assert isinstance(result.exception, Interrupted) and result.exception.exit_code == 143
    assert str(result.exception) == "interrupted by SIGTERM; finished work is saved, resume with: memevo run c --resume"
    assert signal.getsignal(signal.SIGTERM) == before
