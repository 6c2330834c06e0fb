"""TEST DOUBLE: runs the ``memevo`` command line in a child forked from a clean fork server, with a ``kill -9``
planted at one call of any function.

The children come from ``multiprocessing``'s fork server, which imported the heavy modules (mlflow, dspy,
optuna) once and runs no threads, so a child starts in milliseconds and inherits no lock held by some other
thread of the test process. For kill points that no LLM request marks (between Optuna's ask and the plan
write, inside MLflow logging) a kill point names a function and a call::

    <module>:<attribute path>|<call number>|<before or after>[|<file that must exist>]

e.g. ``memevo.evolve.tuner:Tuner.ask|3|after`` or ``mlflow.tracking:MlflowClient.log_batch|1|after|ablation.md``.
The child sends itself SIGKILL at that call (before the function runs, or after it returned), counting only
calls made while the file (relative to the child's working folder) exists. The child's stdout and stderr go
to a file; its exit code is what ``memevo`` would have exited with.
"""

from __future__ import annotations

import functools
import importlib
import multiprocessing
import multiprocessing.connection
import os
import signal
import subprocess
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def kill_point(target: str, number: int, when: str = "before", after_file: str | None = None) -> str:
    """A kill at the ``number``-th call of ``target`` (``module:attribute.path``)."""
    assert when in ("before", "after")
    return "|".join([target, str(number), when, *([after_file] if after_file else [])])


def plant(spec: str) -> None:
    """Replace the function ``spec`` names by one that kills this process at the chosen call."""
    target, number, when, *file = spec.split("|")
    module_name, path = target.split(":")
    owner: Any = importlib.import_module(module_name)
    *parents, name = path.split(".")
    for parent in parents:
        owner = getattr(owner, parent)
    original: Callable[..., Any] = getattr(owner, name)
    calls = [0]

    def due() -> bool:
        if file and not Path(file[0]).exists():
            return False
        calls[0] += 1
        return calls[0] == int(number)

    @functools.wraps(original)
    def killing(*args: Any, **kwargs: Any) -> Any:
        fire = due()
        if fire and when == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        result = original(*args, **kwargs)
        if fire:
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    setattr(owner, name, killing)


def _child(argv: Sequence[str], cwd: Path, env: dict[str, str], kill_at: str | None, output: Path) -> None:
    """The child's body: ``memevo argv...`` with its output in ``output``; exits with memevo's exit code."""
    code = 1
    try:
        fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        sys.stdout = open(1, "w", closefd=False, buffering=1)  # noqa: SIM115 - lives as long as the child
        sys.stderr = open(2, "w", closefd=False, buffering=1)  # noqa: SIM115
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        if kill_at:
            plant(kill_at)
        from memevo.evolve.cli.main import main

        sys.argv = ["memevo", *argv]
        try:
            main()
            code = 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else int(done.code is not None)
    except BaseException:  # noqa: BLE001 - reported in the output file, exit 1
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def start_fork_server(preload: Sequence[str]) -> None:
    """Have the fork server import ``preload`` once (only before it first starts; later calls change nothing)."""
    CONTEXT.set_forkserver_preload([__name__, *preload])


CONTEXT = multiprocessing.get_context("forkserver")


class ForkedMemevo:
    """``memevo argv...`` in a forked child; ``send_signal``/``wait`` as the killing endpoint uses them."""

    def __init__(self, argv: Sequence[str], *, cwd: Path, env: dict[str, str], kill_at: str | None,
                 output: Path) -> None:
        self.output = output
        self.process = CONTEXT.Process(target=_child, args=(list(argv), cwd, env, kill_at, output), daemon=True)
        self.process.start()

    def send_signal(self, sig: int) -> None:
        assert self.process.pid is not None
        os.kill(self.process.pid, sig)

    def wait(self, timeout: float | None = None) -> None:
        """Until the child has ended (without collecting its status: ``finish`` does); ``TimeoutExpired`` after
        ``timeout`` seconds, as ``Popen.wait`` raises it."""
        if not multiprocessing.connection.wait([self.process.sentinel], timeout):
            raise subprocess.TimeoutExpired(str(self.process.name), timeout or 0.0)

    def kill(self) -> None:
        self.process.kill()

    def finish(self, timeout: float = 300) -> int:
        """The child's exit code, or minus the signal that killed it."""
        self.process.join(timeout)
        assert self.process.exitcode is not None, f"the child did not end within {timeout} s"
        return self.process.exitcode

    def text(self) -> str:
        return self.output.read_text(encoding="utf-8", errors="replace")
