"""TEST DOUBLE: runs the ``memevo`` command line in a forked child, with a ``kill -9`` planted at one call of
any function.

Forking the test process skips the interpreter start-up and the imports (mlflow, dspy, optuna), which cost
most of a small run's time on a loaded machine, so a kill harness can afford many processes. For kill
points that no LLM request marks (between Optuna's ask and the plan write, inside MLflow logging) a kill
point names a function and a call::

    <module>:<attribute path>|<call number>|<before or after>[|<file that must exist>]

e.g. ``memevo.evolve.tuner:Tuner.ask|3|after`` or ``mlflow.tracking:MlflowClient.log_batch|1|after|ablation.md``.
The child sends itself SIGKILL at that call (before the function runs, or after it returned), counting only
calls made while the file (relative to the child's working folder) exists. The child's stdout and stderr go
to a file; its exit code is what ``memevo`` would have exited with.
"""

from __future__ import annotations

import functools
import importlib
import os
import signal
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


def _child(argv: Sequence[str], cwd: Path, env: dict[str, str], kill_at: str | None, output: Path) -> int:
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
    from memevo.evolve.cli import main

    sys.argv = ["memevo", *argv]
    try:
        main()
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else int(done.code is not None)
    return 0


class ForkedMemevo:
    """``memevo argv...`` in a forked child; ``send_signal``/``wait`` as the killing endpoint uses them."""

    def __init__(self, argv: Sequence[str], *, cwd: Path, env: dict[str, str], kill_at: str | None,
                 output: Path) -> None:
        self.output = output
        pid = os.fork()
        if pid == 0:  # the child never returns into the test process
            code = 1
            try:
                code = _child(argv, cwd, env, kill_at, output)
            except BaseException:  # noqa: BLE001 - reported in the output file, exit 1
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        self.pid = pid

    def send_signal(self, sig: int) -> None:
        os.kill(self.pid, sig)

    def wait(self) -> None:
        """Until the child has ended (without reaping it: ``finish`` does)."""
        os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)

    def finish(self) -> int:
        """Reap the child: its exit code, or minus the signal that killed it."""
        _, status = os.waitpid(self.pid, 0)
        return os.waitstatus_to_exitcode(status)

    def text(self) -> str:
        return self.output.read_text(encoding="utf-8", errors="replace")
