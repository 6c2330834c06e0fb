"""SIGTERM and SIGINT while ``run_resumable`` runs an event loop (``environments/resume.py``): it cancels the work, whose
clean-ups still run on the loop, and stops the command with the resume line once the loop has closed."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable, Coroutine
from typing import Any

import typer
from typer.testing import CliRunner

from memevo.core.errors import Interrupted
from memevo.environments.resume import RECANCEL_S, resumable, run_resumable

RESUME_LINE = "interrupted by SIGTERM; finished work is saved, resume with: memevo run c --resume"


def _invoke(work: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    """``memevo run c`` running ``work`` through ``run_resumable`` under ``resumable``."""
    app = typer.Typer()

    @app.command("run")
    def run(ctx: typer.Context, config: str) -> None:
        with resumable(ctx):
            run_resumable(work())

    return CliRunner().invoke(app, ["c"])


def _signal_from_the_loop() -> None:
    """SIGTERM handled in one of the loop's own frames (a callback), as a real signal can be."""
    asyncio.get_running_loop().call_soon(os.kill, os.getpid(), signal.SIGTERM)


def test_sigterm_reaches_the_work_as_a_cancellation_whose_clean_up_runs_on_the_loop() -> None:
    before = signal.getsignal(signal.SIGTERM)
    seen: list[object] = []

    async def sibling() -> None:  # a task the work started, e.g. an HTTP request sending bytes
        os.kill(os.getpid(), signal.SIGTERM)
        seen.append("the sibling went on")  # nothing is raised into the frame that happens to run
        await asyncio.sleep(30)

    async def work() -> None:
        started = asyncio.ensure_future(sibling())
        try:
            await asyncio.sleep(30)
        except BaseException as stop:
            seen.append(type(stop))
            raise
        finally:
            started.cancel()
            await asyncio.sleep(0)  # an ``async with``'s exit: it needs the running loop
            seen.append(signal.getsignal(signal.SIGTERM))  # a second SIGTERM would end the process

    result = _invoke(work)
    assert isinstance(result.exception, Interrupted) and result.exception.exit_code == 143
    assert str(result.exception) == RESUME_LINE
    assert seen == ["the sibling went on", asyncio.CancelledError, signal.SIG_DFL]
    assert signal.getsignal(signal.SIGTERM) == before


def test_work_that_finishes_in_spite_of_sigterm_still_stops_with_the_resume_line() -> None:
    async def work() -> str:
        _signal_from_the_loop()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            pass  # swallowed: the run would go on to the end
        return "finished"

    result = _invoke(work)
    assert isinstance(result.exception, Interrupted) and str(result.exception) == RESUME_LINE


def test_without_sigterm_the_value_comes_back_and_the_handler_of_resumable_is_set_again() -> None:
    handlers: list[object] = []
    app = typer.Typer()

    async def work() -> int:
        handlers.append(signal.getsignal(signal.SIGTERM))
        return 7

    @app.command("run")
    def run(ctx: typer.Context, config: str) -> None:
        with resumable(ctx):
            outside = signal.getsignal(signal.SIGTERM)
            handlers.extend([run_resumable(work()), signal.getsignal(signal.SIGTERM) is outside])

    result = CliRunner().invoke(app, ["c"])
    assert result.exception is None
    assert handlers[1:] == [7, True] and callable(handlers[0])


def test_outside_resumable_it_is_asyncio_run() -> None:
    before = signal.getsignal(signal.SIGTERM)

    async def work() -> object:
        return signal.getsignal(signal.SIGTERM)

    assert run_resumable(work()) == before


def test_a_lost_cancellation_is_repeated_until_the_work_stops() -> None:
    """A library that loses one cancellation (Python 3.11's ``wait_for`` when its call ends at that moment) must not
    let a signalled run go on for good: the cancellation comes again."""
    lost: list[int] = []

    async def work() -> None:
        _signal_from_the_loop()
        for _ in range(3):
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                lost.append(1)
                if len(lost) == 2:
                    raise

    started = time.monotonic()
    result = _invoke(work)
    assert isinstance(result.exception, Interrupted) and str(result.exception) == RESUME_LINE
    assert len(lost) == 2 and time.monotonic() - started < 10 * RECANCEL_S


def test_sigint_cancels_the_work_and_stops_with_its_own_resume_line() -> None:
    before = signal.getsignal(signal.SIGINT)

    async def work() -> None:
        asyncio.get_running_loop().call_soon(os.kill, os.getpid(), signal.SIGINT)
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            pass  # lost once: the cancellation comes again
        await asyncio.sleep(30)

    result = _invoke(work)
    assert isinstance(result.exception, Interrupted) and result.exception.exit_code == 130
    assert str(result.exception) == RESUME_LINE.replace("SIGTERM", "SIGINT")
    assert signal.getsignal(signal.SIGINT) == before
