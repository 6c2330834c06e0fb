"""The exact command that resumes the run in progress, and the two moments a user needs it.

``resumable()`` goes around a command's work once its run folder holds a run (so ``--resume`` finds one):

- SIGINT (Ctrl-C) and SIGTERM stop the run as an exception, so finished work is closed and saved as on any
  error, and the command line prints ``interrupted by SIGTERM; ... resume with: memevo evolve ... --resume``
  (exit 130 or 143). SIGTERM is turned into the same exception as SIGINT while the work runs; a second
  SIGTERM ends the process at once. Work that runs an event loop does so through ``run_resumable``: there, as
  ``asyncio.Runner`` does for SIGINT, either signal cancels the main task (until it stops), so its ``async with``
  clean-ups run on the loop, and the exception is raised once the loop has closed (raised in whatever frame runs,
  it could land in asyncio's own shutdown and leave the loop's clean-ups to the garbage collector).
- A failure a resume fixes (an endpoint still failing after its retries, a run that stopped part-way, a full
  disk, however deep in a library it surfaced: ``full_disk``) gets the same command appended, and so does a damaged
  run file (after its remedy); other bad input (``UserInputError``) does not, since a resume repeats it.

The command is rebuilt from the parsed options of the running command (its ``typer.Context``): its arguments,
every option given a value other than its default, and ``--resume``.
"""

from __future__ import annotations

import asyncio
import shlex
import signal
import threading
from collections.abc import Coroutine, Iterator
from contextlib import AbstractContextManager, contextmanager
from enum import Enum
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar

from memevo.core.errors import DamagedFileError, Interrupted, MemevoError, RunFailedError, UserInputError
from memevo.core.full_disk import full_disk
from memevo.environments.stop_switch import run_switched

if TYPE_CHECKING:  # the evolution engine runs through run_resumable without the command line's packages
    import typer

RESUME_FLAG = "--resume"
T = TypeVar("T")


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like SIGINT's ``KeyboardInterrupt`` so everything that stops on Ctrl-C stops on it too."""


def resume_command(context: typer.Context) -> str:
    """``memevo <command> ... --resume`` with the options the running command (``context``) was given."""
    words = ["memevo", context.info_name or context.command.name or ""]
    for param in context.command.params:
        value = context.params.get(param.name or "")
        if param.param_type_name == "argument":
            words.append(_text(value))
        elif param.opts[0] != RESUME_FLAG and not _is_default(param, value):
            words.extend(_option_words(param, value))
    return shlex.join([*words, RESUME_FLAG])


def _text(value: Any) -> str:
    return str(value.value if isinstance(value, Enum) else value)


def _is_default(param: Any, value: Any) -> bool:
    default = param.default
    return value is None or value == default or (isinstance(value, Enum) and value.value == default)


def _option_words(param: Any, value: Any) -> list[str]:
    """An option as typed: ``--name value``, a flag alone, or the chosen side of an on/off pair."""
    if param.is_flag:
        if param.secondary_opts:  # --constrained-answers/--free-answers
            return [param.opts[0] if value else param.secondary_opts[0]]
        return [param.opts[0]] if value else []
    if isinstance(value, (list, tuple)):  # an option given several times
        return [word for item in value for word in (param.opts[0], _text(item))]
    return [param.opts[0], _text(value)]


def _failed(error: Exception, command: str) -> RunFailedError | None:
    """What a failure during the run becomes: one line with the resume command when a resume fixes it; None for
    anything else (a bug, shown with its traceback)."""
    full = full_disk(error)
    if full is not None:
        return RunFailedError(f"{full}; finished work is saved: free space, then resume with: {command}")
    if isinstance(error, MemevoError):
        return RunFailedError(f"{error}; finished work is saved, resume with: {command}")
    if isinstance(error, OSError):  # a folder made read-only meanwhile: nothing finished is lost
        return RunFailedError(f"{error}; finished work is saved: fix that, then resume with: {command}")
    return None


def _interrupted(stop: KeyboardInterrupt, command: str) -> Interrupted:
    name, number = ("SIGTERM", signal.SIGTERM) if isinstance(stop, Terminated) else ("SIGINT", signal.SIGINT)
    return Interrupted(f"interrupted by {name}; finished work is saved, resume with: {command}", signal_number=number)


def _signal_behind(error: BaseException) -> KeyboardInterrupt | None:
    """The SIGINT/SIGTERM an error was raised while handling (e.g. an HTTP library's cancel scope that could not
    exit cleanly when the signal's exception passed through it), if any."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return cause
        seen.add(id(cause))
        cause = cause.__context__
    return None


def _raise_terminated(signal_number: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    raise Terminated()


RECANCEL_S = 1.0
"""How often a signalled run's main task is cancelled again while it runs on."""


class _CancelOnSignal:
    """The SIGINT and SIGTERM handler while an event loop runs the work: it cancels the main task, again every
    ``RECANCEL_S`` while the task runs on (a cancellation can be lost, e.g. by Python 3.11's ``wait_for`` when the
    call it waits for ends at that moment, and the run would then go on for good), and notes the signal."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.task: asyncio.Task[Any] | None = None
        self.received: int | None = None

    def __call__(self, signal_number: int, frame: FrameType | None) -> None:
        # a second signal ends the work at once: SIGTERM the process, SIGINT as Python's KeyboardInterrupt
        signal.signal(signal_number, signal.SIG_DFL if signal_number == signal.SIGTERM else signal.default_int_handler)
        self.received = signal_number
        self.loop.call_soon_threadsafe(self._cancel)  # also wakes the loop if it waits for I/O

    def _cancel(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
            self.loop.call_later(RECANCEL_S, self._cancel)

    def stop(self) -> KeyboardInterrupt:
        """What the command raises once the loop has closed."""
        return Terminated() if self.received == signal.SIGTERM else KeyboardInterrupt()

    async def main(self, coroutine: Coroutine[Any, Any, T]) -> T:
        self.task = asyncio.current_task()
        if self.received is not None:  # the signal came before the task started
            self._cancel()
        return await coroutine


def run_resumable(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coroutine)``, except that under ``resumable()`` SIGINT and SIGTERM cancel the coroutine and raise
    ``KeyboardInterrupt`` or ``Terminated`` once the loop has closed (module docstring)."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) is not \
            _raise_terminated:  # not the main thread (the Python API's worker: its caller stops it), or no resumable()
        return run_switched(coroutine)
    runner = asyncio.Runner()
    handler = _CancelOnSignal(runner.get_loop())
    previous_sigint = signal.getsignal(signal.SIGINT)
    if previous_sigint is signal.default_int_handler:  # not where SIGINT is ignored (a job started with &)
        signal.signal(signal.SIGINT, handler)  # asyncio.Runner then leaves SIGINT to it
    signal.signal(signal.SIGTERM, handler)
    try:
        with runner:  # the loop (and its left-over tasks) closes with the handler still set
            result = runner.run(handler.main(coroutine))
    except BaseException:  # the cancellation, or whatever the clean-ups raised on their way out
        if handler.received is not None:
            raise handler.stop()  # the error it interrupted stays its __context__
        raise
    finally:
        signal.signal(signal.SIGINT, previous_sigint)
        if handler.received != signal.SIGTERM:
            signal.signal(signal.SIGTERM, _raise_terminated)
    if handler.received is not None:  # the coroutine finished in spite of it, or it came while the loop closed
        raise handler.stop()
    return result


def resumable(context: typer.Context) -> AbstractContextManager[str]:
    """Around a run's work (see the module docstring) in the command of ``context``; yields the resume command."""
    return resumable_as(resume_command(context))


@contextmanager
def resumable_as(command: str) -> Iterator[str]:
    """``resumable`` with the words that resume the run given (a Python caller's are not a command line)."""
    main_thread = threading.current_thread() is threading.main_thread()  # only it may set signal handlers
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if main_thread else None
    try:
        yield command
    except KeyboardInterrupt as stop:
        raise _interrupted(stop, command) from None
    except DamagedFileError as error:
        raise DamagedFileError(error.reason, source=error.source or "", remedy=f"{error.remedy}; resume with: {command}"
                               ) from None
    except UserInputError:
        raise
    except BaseException as error:  # not only Exceptions: asyncio's CancelledError can carry the signal too
        signalled = _signal_behind(error)
        if signalled is not None:  # the signal landed inside a library's clean-up, which then failed on its own
            raise _interrupted(signalled, command) from None
        failed = _failed(error, command) if isinstance(error, Exception) else None
        if failed is None:
            raise
        raise failed from error
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
